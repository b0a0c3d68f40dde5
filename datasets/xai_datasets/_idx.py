"""IDX files, the format of the MNIST distribution: read and write, gzipped or raw.

An IDX file is a 4-byte magic number (two zero bytes, a type code, the number of
dimensions), one big-endian ``uint32`` per dimension, then the values in C order,
big-endian. The readers here check every field and refuse a file whose payload does not
match its header, so a truncated download can never turn into a silently short array.
"""

from __future__ import annotations

import gzip
import math
import os
import struct
import zlib
from pathlib import Path

import numpy as np

from xai_core.errors import DataError, ValidationError
from xai_core.files import atomic_write

__all__ = ["read_idx", "write_idx", "parse_idx", "decode_idx", "inflate"]

#: IDX type code -> numpy dtype (big-endian, as stored in the file).
_CODE_TO_DTYPE: dict[int, np.dtype] = {
    0x08: np.dtype("u1"),
    0x09: np.dtype("i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_KIND_TO_CODE: dict[tuple[str, int], int] = {
    (dt.kind, dt.itemsize): code for code, dt in _CODE_TO_DTYPE.items()
}
_KNOWN_CODES = ", ".join(f"0x{c:02X} ({dt.name})" for c, dt in _CODE_TO_DTYPE.items())
_GZIP_MAGIC = b"\x1f\x8b"


def inflate(raw: bytes, label: str) -> bytes:
    """Decompress a gzip file in one call (the first member only; see :func:`parse_idx`).

    Parameters
    ----------
    raw : bytes
        The gzip file's bytes.
    label : str
        The file's name, used in error messages.

    Returns
    -------
    bytes
        The uncompressed content of the first gzip member.

    Raises
    ------
    DataError
        If the gzip stream is truncated or corrupt (bad deflate data or CRC).
    """
    # The gzip trailer holds the uncompressed size (mod 2**32): one allocation, no regrowth.
    size_hint = int.from_bytes(raw[-4:], "little") if len(raw) >= 18 else 0
    try:
        return zlib.decompress(raw, 31, max(size_hint, 64))
    except zlib.error as exc:
        raise DataError(
            f"{label}: gzip stream: the file is truncated or corrupt ({exc}); "
            "delete it and fetch it again"
        ) from exc


def _idx_length(buf: bytes) -> int | None:
    """The total length an IDX header announces, or None if the header is unreadable."""
    if len(buf) < 4 or buf[0] or buf[1] or buf[2] not in _CODE_TO_DTYPE:
        return None
    ndim = buf[3]
    if len(buf) < 4 + 4 * ndim:
        return None
    dims = struct.unpack(f">{ndim}I", buf[4 : 4 + 4 * ndim])
    return 4 + 4 * ndim + math.prod(dims) * _CODE_TO_DTYPE[buf[2]].itemsize


def parse_idx(raw: bytes, label: str) -> np.ndarray:
    """Decode the bytes of an IDX file, gzipped or raw, without copying one-byte payloads.

    Parameters
    ----------
    raw : bytes
        The file's bytes; gzip is detected from its magic bytes.
    label : str
        The file's name, used in error messages.

    Returns
    -------
    numpy.ndarray
        See :func:`decode_idx`; read-only for one-byte types.

    Raises
    ------
    DataError
        As :func:`inflate` and :func:`decode_idx`.
    """
    if raw[:2] != _GZIP_MAGIC:
        return decode_idx(raw, label)
    out = inflate(raw, label)
    want = _idx_length(out)
    if want is not None and want != len(out):
        # zlib stops after the first gzip member; a multi-member file needs gzip's loop.
        try:
            out = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise DataError(f"{label}: gzip stream: the file is corrupt ({exc})") from exc
    return decode_idx(out, label)


def decode_idx(buf: bytes | bytearray | memoryview, label: str) -> np.ndarray:
    """Decode the bytes of an uncompressed IDX file without copying the payload.

    Parameters
    ----------
    buf : bytes-like
        The uncompressed IDX content.
    label : str
        The file's name, used in error messages.

    Returns
    -------
    numpy.ndarray
        An array of shape given by the file's dimensions, in native byte order. For
        one-byte types it is a view on ``buf`` (read-only when ``buf`` is ``bytes``).

    Raises
    ------
    DataError
        If the magic number, type code, dimensions or payload size is wrong. The message
        names the file and the bad field.
    """
    n = len(buf)
    if n < 4:
        raise DataError(
            f"{label}: IDX magic number: the file holds {n} bytes; an IDX file starts with 4"
        )
    head = bytes(buf[:4])
    if head[0] != 0 or head[1] != 0:
        raise DataError(
            f"{label}: IDX magic number: expected two zero bytes, a type code and a "
            f"dimension count (e.g. 0x00000803); got 0x{head.hex()}. Is this an IDX file?"
        )
    code, ndim = head[2], head[3]
    dtype = _CODE_TO_DTYPE.get(code)
    if dtype is None:
        raise DataError(
            f"{label}: IDX dtype: unknown type code 0x{code:02X}; known: {_KNOWN_CODES}"
        )
    if ndim == 0:
        raise DataError(f"{label}: IDX dimensions: the header declares 0 dimensions")
    header_len = 4 + 4 * ndim
    if n < header_len:
        raise DataError(
            f"{label}: IDX dimensions: the header declares {ndim} dimensions "
            f"({header_len} header bytes) but the file holds only {n} bytes"
        )
    dims = struct.unpack(f">{ndim}I", bytes(buf[4:header_len]))
    count = math.prod(dims)
    expected = count * dtype.itemsize
    payload = n - header_len
    if payload < expected:
        raise DataError(
            f"{label}: IDX payload: truncated; dimensions {dims} of {dtype.name} need "
            f"{expected} bytes after the header, the file holds {payload}"
        )
    if payload > expected:
        raise DataError(
            f"{label}: IDX payload: {payload - expected} unexpected trailing bytes after the "
            f"{expected} bytes that dimensions {dims} of {dtype.name} need"
        )
    arr = np.frombuffer(buf, dtype=dtype, count=count, offset=header_len).reshape(dims)
    if dtype.itemsize > 1:
        arr = arr.astype(dtype.newbyteorder("="))
    return arr


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """Read an IDX file, gzipped or raw.

    Gzip is detected from the content (its magic bytes), not from the file name.

    Parameters
    ----------
    path : str or path-like
        The file to read, e.g. ``"train-images-idx3-ubyte.gz"``.

    Returns
    -------
    numpy.ndarray
        A writable array in native byte order with the file's dtype (``uint8``,
        ``int8``, ``int16``, ``int32``, ``float32`` or ``float64``) and dimensions, e.g.
        shape ``(n_images, 28, 28)`` for MNIST images and ``(n_images,)`` for labels.

    Raises
    ------
    DataError
        If the file is missing, the gzip stream is corrupt or truncated, or a header field
        (magic number, dtype, dimensions) or the payload size is wrong. The message names
        the file and the field.

    Examples
    --------
    >>> images = read_idx("train-images-idx3-ubyte.gz")  # doctest: +SKIP
    >>> images.shape, images.dtype  # doctest: +SKIP
    ((60000, 28, 28), dtype('uint8'))
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise DataError(f"{path}: no such file") from exc
    arr = parse_idx(raw, str(path))
    return arr if arr.flags.writeable else arr.copy()


def write_idx(
    path: str | os.PathLike[str], array: np.ndarray, *, compress: bool | None = None
) -> Path:
    """Write an array as an IDX file, atomically.

    Parameters
    ----------
    path : str or path-like
        The file to write. It is replaced atomically: a reader never sees half a file.
    array : array_like
        Values of dtype ``uint8``, ``int8``, ``int16``, ``int32``, ``float32`` or
        ``float64`` (either byte order), with 1 to 255 dimensions, each below 2**32.
    compress : bool, optional
        Gzip the file. By default, gzip when ``path`` ends in ``.gz``. The gzip header
        carries no time stamp or name, so the same array always gives the same bytes.

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    ValidationError
        If the dtype or shape cannot be stored in IDX.
    """
    arr = np.asarray(array)
    code = _KIND_TO_CODE.get((arr.dtype.kind, arr.dtype.itemsize))
    if code is None:
        raise ValidationError(
            f"array must have an IDX dtype ({_KNOWN_CODES}); got dtype {arr.dtype}. "
            "Cast it first, e.g. array.astype(np.int32)"
        )
    if not 1 <= arr.ndim <= 255:
        raise ValidationError(
            f"array must have 1 to 255 dimensions to be stored in IDX; got shape {arr.shape}"
        )
    if any(d >= 2**32 for d in arr.shape):
        raise ValidationError(
            f"array dimensions must each be below 2**32 to be stored in IDX; got {arr.shape}"
        )
    path = Path(path)
    if compress is None:
        compress = path.suffix == ".gz"
    header = bytes([0, 0, code, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape)
    payload = np.ascontiguousarray(arr, dtype=_CODE_TO_DTYPE[code]).tobytes()
    data = header + payload
    if compress:
        data = gzip.compress(data, compresslevel=9, mtime=0)
    atomic_write_bytes(path, data)
    return path


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda fh: fh.write(data))
