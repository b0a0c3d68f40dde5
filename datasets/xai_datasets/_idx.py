"""IDX files, the format of the MNIST distribution: read and write, gzipped or raw.

An IDX file is a 4-byte magic number (two zero bytes, a type code, the number of
dimensions), one big-endian ``uint32`` per dimension, then the values in C order,
big-endian. The readers here check every field and refuse a file whose payload does not
match its header, so a truncated download can never turn into a silently short array.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import math
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

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


#: Deflate expands at most 1032-fold (zlib's technical notes), so a gzip file of ``n``
#: bytes holds at most about ``1032 * n`` bytes; a header announcing more is refused
#: before anything is allocated.
MAX_DEFLATE_RATIO = 1032
#: numpy arrays hold at most this many dimensions.
MAX_NDIM = 64
_CHUNK = 2**20


def inflate(raw: bytes, label: str) -> bytes:
    """Decompress a whole gzip file, every member, refusing trailing garbage.

    Parameters
    ----------
    raw : bytes
        The gzip file's bytes.
    label : str
        The file's name, used in error messages.

    Returns
    -------
    bytes
        The uncompressed content of all members.

    Raises
    ------
    DataError
        If the gzip stream is truncated or corrupt (bad deflate data or CRC), or bytes
        that are not a gzip member follow one (zero padding is allowed, as gzip allows it).
    """
    with _gzip_errors(label):
        return gzip.decompress(raw)


@contextlib.contextmanager
def _gzip_errors(label: str) -> Iterator[None]:
    """Turn the gzip module's errors into a DataError naming the file."""
    try:
        yield
    except EOFError as exc:
        raise DataError(
            f"{label}: gzip stream: the file is truncated (it ends inside a gzip member); "
            "delete it and fetch it again"
        ) from exc
    except (OSError, zlib.error) as exc:
        why = (
            "unexpected bytes after a gzip member"
            if "Not a gzipped" in str(exc)
            else ("the file is truncated or corrupt")
        )
        raise DataError(
            f"{label}: gzip stream: {why} ({exc}); delete it and fetch it again"
        ) from exc


def _read_exact(stream: IO[bytes], n: int) -> bytes:
    """Up to ``n`` bytes of ``stream`` (fewer only at its end)."""
    parts, got = [], 0
    while got < n:
        part = stream.read(n - got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _header(stream: IO[bytes], label: str) -> tuple[np.dtype, tuple[int, ...], int]:
    """Read and check an IDX header from ``stream``: dtype, dimensions, header length."""
    head = _read_exact(stream, 4)
    if len(head) < 4:
        raise DataError(
            f"{label}: IDX magic number: the file holds {len(head)} bytes; "
            "an IDX file starts with 4"
        )
    _check_magic(head, label)
    ndim = head[3]
    header_len = 4 + 4 * ndim
    raw_dims = _read_exact(stream, 4 * ndim)
    if len(raw_dims) < 4 * ndim:
        raise DataError(
            f"{label}: IDX dimensions: the header declares {ndim} dimensions "
            f"({header_len} header bytes) but the file holds only {4 + len(raw_dims)} bytes"
        )
    dims = struct.unpack(f">{ndim}I", raw_dims)
    return _CODE_TO_DTYPE[head[2]], dims, header_len


def _check_magic(head: bytes, label: str) -> None:
    """Check the 4 magic bytes: two zeros, a known type code, 1 to MAX_NDIM dimensions."""
    if head[0] != 0 or head[1] != 0:
        raise DataError(
            f"{label}: IDX magic number: expected two zero bytes, a type code and a "
            f"dimension count (e.g. 0x00000803); got 0x{head.hex()}. Is this an IDX file?"
        )
    code, ndim = head[2], head[3]
    if code not in _CODE_TO_DTYPE:
        raise DataError(
            f"{label}: IDX dtype: unknown type code 0x{code:02X}; known: {_KNOWN_CODES}"
        )
    if ndim == 0:
        raise DataError(f"{label}: IDX dimensions: the header declares 0 dimensions")
    if ndim > MAX_NDIM:
        raise DataError(
            f"{label}: IDX dimensions: the header declares {ndim} dimensions; "
            f"arrays hold at most {MAX_NDIM}"
        )


def read_idx_stream(stream: IO[bytes], label: str, *, limit: int, compressed: bool) -> np.ndarray:
    """Decode an IDX file from a binary stream, checking the header before the payload.

    Parameters
    ----------
    stream : binary file
        The uncompressed IDX content (a :class:`gzip.GzipFile` for gzipped files).
    label : str
        The file's name, used in error messages.
    limit : int
        The file's size on disk. The payload the header announces must fit in it (raw)
        or in ``MAX_DEFLATE_RATIO`` times it (gzip), else the file is refused as truncated
        before anything is allocated.
    compressed : bool
        Whether ``limit`` is the size of a gzip file.

    Returns
    -------
    numpy.ndarray
        A writable array in native byte order, shaped by the file's dimensions.

    Raises
    ------
    DataError
        If a header field is wrong, or the payload is shorter or longer than the header says.
    """
    dtype, dims, header_len = _header(stream, label)
    count = math.prod(dims)
    expected = count * dtype.itemsize
    room = limit * MAX_DEFLATE_RATIO + 1024 if compressed else limit - header_len
    if expected > room:
        where = (
            f"{limit} compressed bytes can hold at most {room}"
            if compressed
            else (f"the file holds {max(room, 0)}")
        )
        raise DataError(
            f"{label}: IDX payload: truncated; dimensions {dims} of {dtype.name} need "
            f"{expected} bytes after the header, {where}"
        )
    out = np.empty(expected, dtype=np.uint8)
    view = memoryview(out)
    got = 0
    while got < expected:
        n = stream.readinto(view[got : got + _CHUNK])
        if not n:
            raise DataError(
                f"{label}: IDX payload: truncated; dimensions {dims} of {dtype.name} need "
                f"{expected} bytes after the header, the file holds {got}"
            )
        got += n
    extra = stream.read(1)
    if extra:
        raise DataError(
            f"{label}: IDX payload: unexpected trailing bytes after the {expected} bytes "
            f"that dimensions {dims} of {dtype.name} need"
        )
    arr = out.view(dtype).reshape(dims)
    if dtype.itemsize > 1:
        arr = arr.astype(dtype.newbyteorder("="))
    return arr


def parse_idx(raw: bytes, label: str) -> np.ndarray:
    """Decode the bytes of an IDX file, gzipped or raw.

    Gzip is detected from the magic bytes; the header is inflated and checked first, the
    payload is then inflated into an array of the size it announces (see
    :func:`read_idx_stream`). Gzip files of several members (``cat a.gz b.gz``) are read
    whole; bytes after the last member other than zero padding are refused.

    Parameters
    ----------
    raw : bytes
        The file's bytes.
    label : str
        The file's name, used in error messages.

    Returns
    -------
    numpy.ndarray
        See :func:`decode_idx`; read-only for one-byte types of raw input.

    Raises
    ------
    DataError
        As :func:`inflate` and :func:`decode_idx`.
    """
    if raw[:2] != _GZIP_MAGIC:
        return decode_idx(raw, label)
    with _gzip_errors(label), gzip.GzipFile(fileobj=io.BytesIO(raw), mode="rb") as stream:
        return read_idx_stream(stream, label, limit=len(raw), compressed=True)


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
    _check_magic(head, label)
    dtype, ndim = _CODE_TO_DTYPE[head[2]], head[3]
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
    label = str(path)
    try:
        fh = path.open("rb")
    except FileNotFoundError as exc:
        raise DataError(f"{path}: no such file") from exc
    except IsADirectoryError as exc:
        raise DataError(f"{path}: is a directory; expected an IDX file") from exc
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if fh.read(2) != _GZIP_MAGIC:
            fh.seek(0)
            return read_idx_stream(fh, label, limit=size, compressed=False)
        fh.seek(0)
        with _gzip_errors(label), gzip.GzipFile(fileobj=fh, mode="rb") as stream:
            return read_idx_stream(stream, label, limit=size, compressed=True)


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
        ``float64`` (either byte order), with 1 to 64 dimensions, each below 2**32.
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
    if not 1 <= arr.ndim <= MAX_NDIM:
        raise ValidationError(
            f"array must have 1 to {MAX_NDIM} dimensions to be stored in IDX; got shape {arr.shape}"
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
