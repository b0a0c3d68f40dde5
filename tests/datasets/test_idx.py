"""IDX reader and writer: round trips, exact header bytes, and every corruption caught."""

from __future__ import annotations

import gzip
import os
import struct
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from xai_core.errors import DataError, ValidationError
from xai_datasets import read_idx, write_idx

IDX_DTYPES = ["u1", "i1", ">i2", "<i2", ">i4", "<i4", ">f4", "<f4", ">f8", "<f8"]


@settings(max_examples=60, deadline=None)
@given(
    arr=st.sampled_from(IDX_DTYPES).flatmap(
        lambda dt: arrays(np.dtype(dt), array_shapes(min_dims=1, max_dims=4, max_side=6))
    ),
    gz=st.booleans(),
)
def test_roundtrip_any_dtype_and_shape(arr: np.ndarray, gz: bool) -> None:
    """write_idx then read_idx returns the same values, shape and (native) dtype."""
    with tempfile.TemporaryDirectory() as tmp:
        path = write_idx(Path(tmp) / ("a.idx.gz" if gz else "a.idx"), arr)
        out = read_idx(path)
    assert out.shape == arr.shape
    assert out.dtype == arr.dtype.newbyteorder("=")
    assert out.flags.writeable
    np.testing.assert_array_equal(out, arr)


def test_header_bytes_are_big_endian(tmp_path: Path) -> None:
    """The header is 0x0000, type code, ndim, then big-endian uint32 dimensions."""
    arr = np.arange(6, dtype=np.int32).reshape(2, 3)
    raw = write_idx(tmp_path / "a.idx", arr).read_bytes()
    assert raw[:12] == bytes([0, 0, 0x0C, 2]) + struct.pack(">II", 2, 3)
    assert raw[12:] == arr.astype(">i4").tobytes()


def test_gzip_output_is_deterministic_and_detected_by_content(tmp_path: Path) -> None:
    """Gzip bytes carry no time stamp; gzip is recognised without a .gz suffix."""
    arr = np.arange(256, dtype=np.uint8).reshape(16, 16)
    a = write_idx(tmp_path / "a", arr, compress=True).read_bytes()
    b = write_idx(tmp_path / "b", arr, compress=True).read_bytes()
    assert a == b and a[:2] == b"\x1f\x8b"
    np.testing.assert_array_equal(read_idx(tmp_path / "a"), arr)


def test_multi_member_gzip_is_read_whole(tmp_path: Path) -> None:
    """A gzip file made of several members (cat a.gz b.gz) decodes completely."""
    arr = np.arange(1000, dtype=np.uint8).reshape(10, 100)
    raw = write_idx(tmp_path / "a.idx", arr).read_bytes()
    path = tmp_path / "multi.gz"
    path.write_bytes(gzip.compress(raw[:500]) + gzip.compress(raw[500:]))
    np.testing.assert_array_equal(read_idx(path), arr)


def _idx(code: int, dims: tuple[int, ...], payload: bytes) -> bytes:
    return bytes([0, 0, code, len(dims)]) + struct.pack(f">{len(dims)}I", *dims) + payload


GOOD = _idx(0x08, (2, 3), bytes(6))
CORRUPT = {
    "empty": (b"", "magic number"),
    "bad-magic": (b"\x01\x02" + GOOD[2:], "magic number"),
    "unknown-dtype": (bytes([0, 0, 0x0A, 2]) + GOOD[4:], "dtype"),
    "zero-dims": (bytes([0, 0, 0x08, 0]), "dimensions"),
    "header-cut-in-dims": (GOOD[:9], "dimensions"),
    "payload-truncated": (GOOD[:-1], "payload"),
    "payload-trailing-bytes": (GOOD + b"\x00", "payload"),
    "int32-payload-short": (_idx(0x0C, (3,), bytes(11)), "payload"),
    "gzip-truncated": (gzip.compress(GOOD + bytes(5000))[:-30], "gzip stream"),
    "gzip-bad-crc": (
        (lambda g: g[:-8] + bytes([g[-8] ^ 1]) + g[-7:])(gzip.compress(GOOD)),
        "gzip stream",
    ),
    "gzip-of-truncated-idx": (gzip.compress(GOOD[:-2]), "payload"),
}


@pytest.mark.parametrize("case", list(CORRUPT), ids=list(CORRUPT))
def test_corrupt_file_is_an_error_naming_file_and_field(tmp_path: Path, case: str) -> None:
    """A corrupt or truncated file raises DataError naming the file and the bad field."""
    content, field = CORRUPT[case]
    path = tmp_path / f"{case}.idx"
    path.write_bytes(content)
    with pytest.raises(DataError) as info:
        read_idx(path)
    assert str(path) in str(info.value)
    assert field in str(info.value)
    assert isinstance(info.value, ValueError)


def test_missing_file_is_a_data_error(tmp_path: Path) -> None:
    """A missing file raises DataError naming it."""
    with pytest.raises(DataError, match="no such file"):
        read_idx(tmp_path / "absent.idx")


@pytest.mark.parametrize(
    "arr",
    [np.zeros(3, np.int64), np.zeros(3, bool), np.zeros(3, np.complex64), np.array(5, np.uint8)],
    ids=["int64", "bool", "complex", "zero-dim"],
)
def test_write_rejects_what_idx_cannot_store(tmp_path: Path, arr: np.ndarray) -> None:
    """write_idx refuses dtypes and shapes IDX has no code for, and writes nothing."""
    with pytest.raises(ValidationError, match="array must"):
        write_idx(tmp_path / "a.idx", arr)
    assert list(tmp_path.iterdir()) == []


def test_failed_write_keeps_old_file_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the final rename fails, the previous file is intact and no temporary remains."""
    path = write_idx(tmp_path / "a.idx", np.ones(4, np.uint8))
    before = path.read_bytes()

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_idx(path, np.zeros(8, np.uint8))
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["a.idx"]


@pytest.mark.parametrize(
    ("folder", "n"), [("mnist-sample", 8000), ("fashion-mnist", 10000)], ids=["mnist", "fashion"]
)
def test_reads_the_shared_distribution_files(shared_data: Path, folder: str, n: int) -> None:
    """The shared gzipped IDX files decode to uint8 images and matching labels."""
    prefix = "train" if folder == "mnist-sample" else "t10k"
    images = read_idx(shared_data / folder / f"{prefix}-images-idx3-ubyte.gz")
    labels = read_idx(shared_data / folder / f"{prefix}-labels-idx1-ubyte.gz")
    assert images.shape == (n, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (n,) and labels.max() == 9
