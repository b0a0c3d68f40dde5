"""A minimal PNG encoder (zlib + struct), so report images need no imaging library."""

from __future__ import annotations

import base64
import struct
import zlib

import numpy as np

from xai_core.errors import ShapeError

__all__ = ["encode_png", "png_data_uri"]

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPES = {1: 0, 3: 2, 4: 6}  # channels -> PNG colour type (grey, RGB, RGBA)


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def encode_png(pixels: np.ndarray) -> bytes:
    """Encode an 8-bit image as a PNG file.

    Parameters
    ----------
    pixels : array-like of uint8, shape (height, width) or (height, width, channels)
        Grey (1 channel), RGB (3) or RGBA (4) pixels.

    Returns
    -------
    bytes
        A complete PNG file (8 bits per channel, filter type 0 on every row).
    """
    pixels = np.asarray(pixels)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    if pixels.ndim != 3 or pixels.shape[2] not in _COLOR_TYPES or 0 in pixels.shape[:2]:
        raise ShapeError(
            "pixels must have shape (height, width) or (height, width, channels) with "
            f"channels 1, 3 or 4 and a non-empty image; got shape {pixels.shape}."
        )
    pixels = np.ascontiguousarray(pixels, dtype=np.uint8)
    height, width, channels = pixels.shape
    rows = pixels.reshape(height, width * channels)
    raw = np.concatenate([np.zeros((height, 1), np.uint8), rows], axis=1).tobytes()
    ihdr = struct.pack(">IIBBBBB", width, height, 8, _COLOR_TYPES[channels], 0, 0, 0)
    return (
        _SIGNATURE
        + _chunk(b"IHDR", ihdr)
        + _chunk(b"IDAT", zlib.compress(raw, 9))
        + _chunk(b"IEND", b"")
    )


def png_data_uri(pixels: np.ndarray) -> str:
    """``pixels`` (see :func:`encode_png`) as a ``data:image/png;base64,...`` URI."""
    return "data:image/png;base64," + base64.b64encode(encode_png(pixels)).decode("ascii")
