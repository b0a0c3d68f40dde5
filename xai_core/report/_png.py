"""PNG images for reports: pixels from numbers, encoded by Pillow, embedded as data URIs."""

from __future__ import annotations

import base64
import io
from typing import Any

import numpy as np

from xai_core.errors import ShapeError

__all__ = ["encode_png", "png_data_uri", "to_pixels"]

_CHANNELS = (1, 2, 3, 4)  # grey, grey + alpha, RGB, RGBA


def to_pixels(values: Any, low: float = 0.0, high: float = 1.0) -> np.ndarray:
    """Numbers as 8-bit pixels: ``low`` is 0, ``high`` is 255, rounded to nearest.

    Parameters
    ----------
    values : array-like of shape (...)
        Intensities; NaN is drawn as ``low``, values outside ``[low, high]`` are clipped.
    low, high : float, default=0.0, 1.0
        The range drawn from black to white; an empty range draws everything black.

    Returns
    -------
    numpy.ndarray of uint8, shape (...)
    """
    v = np.nan_to_num(np.asarray(values, dtype=np.float64), nan=low, posinf=high, neginf=low)
    span = float(high) - float(low)
    scaled = (v - low) / span if span > 0 else np.zeros_like(v)
    return np.rint(np.clip(scaled, 0.0, 1.0) * 255.0).astype(np.uint8)


def encode_png(pixels: Any) -> bytes:
    """Encode an 8-bit image as a PNG file (Pillow; deterministic, no metadata chunks).

    Parameters
    ----------
    pixels : array-like of uint8, shape (height, width) or (height, width, channels)
        Grey (1 channel), grey and alpha (2), RGB (3) or RGBA (4) pixels; see
        :func:`to_pixels` for floats.

    Returns
    -------
    bytes
        A complete PNG file, 8 bits per channel.

    Raises
    ------
    ShapeError
        ``pixels`` is not a non-empty image of 1 to 4 channels.
    """
    from PIL import Image

    arr = np.asarray(pixels)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if (
        arr.ndim not in (2, 3)
        or (arr.ndim == 3 and arr.shape[2] not in _CHANNELS)
        or 0 in arr.shape
    ):
        raise ShapeError(
            "pixels must have shape (height, width) or (height, width, channels) with 1 to 4 "
            f"channels and a non-empty image; got shape {arr.shape}."
        )
    image = Image.fromarray(np.ascontiguousarray(arr, dtype=np.uint8))
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=9)
    return out.getvalue()


def png_data_uri(pixels: Any) -> str:
    """``pixels`` (see :func:`encode_png`) as a ``data:image/png;base64,...`` URI."""
    return "data:image/png;base64," + base64.b64encode(encode_png(pixels)).decode("ascii")
