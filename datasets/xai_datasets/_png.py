"""A minimal PNG encoder (zlib + struct), so thumbnails need no imaging library."""

from __future__ import annotations

import base64
import struct
import zlib

import numpy as np

__all__ = ["encode_png", "png_data_uri"]

_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data))
        + kind
        + data
        + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def encode_png(pixels: np.ndarray) -> bytes:
    """Encode an 8-bit image as PNG.

    Parameters
    ----------
    pixels : numpy.ndarray of uint8
        Shape ``(height, width)`` for grayscale or ``(height, width, 3)`` for RGB.

    Returns
    -------
    bytes
        A complete PNG file (filter type 0 on every row).
    """
    pixels = np.ascontiguousarray(pixels, dtype=np.uint8)
    if pixels.ndim == 2:
        color_type, channels = 0, 1
    elif pixels.ndim == 3 and pixels.shape[2] in (1, 3):
        color_type, channels = (0, 1) if pixels.shape[2] == 1 else (2, 3)
    else:
        raise ValueError(
            f"pixels must have shape (height, width) or (height, width, 3); got {pixels.shape}"
        )
    height, width = pixels.shape[:2]
    rows = pixels.reshape(height, width * channels)
    raw = np.concatenate([np.zeros((height, 1), np.uint8), rows], axis=1).tobytes()
    ihdr = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (
        _SIGNATURE
        + _chunk(b"IHDR", ihdr)
        + _chunk(b"IDAT", zlib.compress(raw, 9))
        + _chunk(b"IEND", b"")
    )


def png_data_uri(pixels: np.ndarray) -> str:
    """Return ``pixels`` (see :func:`encode_png`) as a ``data:image/png;base64,...`` URI."""
    return "data:image/png;base64," + base64.b64encode(encode_png(pixels)).decode("ascii")
