"""Hostile IDX files: each is decoded exactly or refused with a DataError, within bounded memory."""

from __future__ import annotations

import gzip
import struct
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pytest

from xai_core.errors import DataError
from xai_datasets import read_idx
from xai_datasets._idx import parse_idx

ARR = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)


def _idx(code: int, dims: tuple[int, ...], payload: bytes) -> bytes:
    return bytes([0, 0, code, len(dims)]) + struct.pack(f">{len(dims)}I", *dims) + payload


GOOD = _idx(0x08, ARR.shape, ARR.tobytes())


def _zeros_gzip(head: bytes, mib: int) -> bytes:
    """A gzip member holding ``head`` then ``mib`` MiB of zeros (about 1 KiB per MiB)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(2**20)
    return c.compress(head) + b"".join(c.compress(zeros) for _ in range(mib)) + c.flush()


#: name -> (file content, None for "decodes to ARR" or the words the DataError must hold).
CASES: dict[str, tuple[bytes, str | None]] = {
    "two-member-first-shorter-than-header": (
        gzip.compress(GOOD[:2]) + gzip.compress(GOOD[2:]),
        None,
    ),
    "three-members-split-in-dims": (
        gzip.compress(GOOD[:5]) + gzip.compress(GOOD[5:9]) + gzip.compress(GOOD[9:]),
        None,
    ),
    "zero-padding-after-member": (gzip.compress(GOOD) + bytes(512), None),
    "trailing-garbage-after-member": (gzip.compress(GOOD) + b"garbage!", "gzip stream"),
    "trailing-member-with-more-payload": (gzip.compress(GOOD) + gzip.compress(b"x"), "trailing"),
    "255-dimensions": (_idx(0x08, (1,) * 255, b"\x00"), "255 dimensions"),
    "65-dimensions-gzip": (gzip.compress(_idx(0x08, (1,) * 65, b"\x00")), "65 dimensions"),
    "declares-2**64-bytes-raw": (_idx(0x08, (2**32 - 1, 2**32 - 1), b"\x00" * 8), "payload"),
    "declares-2**64-bytes-gzip": (gzip.compress(_idx(0x08, (2**32 - 1,) * 2, bytes(8))), "payload"),
    "declares-float64-petabytes": (gzip.compress(_idx(0x0E, (2**32 - 1,) * 3, b"")), "payload"),
    "header-then-64-MiB-of-zeros": (_zeros_gzip(_idx(0x08, (1,), b"\x07"), 64), "trailing"),
    "64-MiB-of-zeros-no-header": (_zeros_gzip(b"", 64), "IDX dtype"),
    "gzip-magic-only": (b"\x1f\x8b", "gzip stream"),
}


@pytest.mark.parametrize("entry", ["read_idx", "parse_idx"])
@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_hostile_idx(tmp_path: Path, case: str, entry: str) -> None:
    """Each case decodes to the array or raises DataError naming the file and the field."""
    content, words = CASES[case]
    path = tmp_path / f"{case}.gz"
    path.write_bytes(content)
    tracemalloc.start()
    try:
        if words is None:
            got = read_idx(path) if entry == "read_idx" else parse_idx(content, str(path))
            np.testing.assert_array_equal(got, ARR)
        else:
            with pytest.raises(DataError) as info:
                read_idx(path) if entry == "read_idx" else parse_idx(content, str(path))
            assert str(path) in str(info.value) and words in str(info.value)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20 + 4 * len(content)  # never the inflated size


def test_directory_is_a_data_error(tmp_path: Path) -> None:
    """A directory where a file is expected is a DataError naming it, not IsADirectoryError."""
    with pytest.raises(DataError, match="directory") as info:
        read_idx(tmp_path)
    assert str(tmp_path) in str(info.value)
