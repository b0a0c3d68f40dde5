"""Faults while saving: a full disk or an interrupt never leaves a file half-written.

``WRITERS`` has one row per public function that saves a file: how to call it on a path
and which files it writes there. Each is run under each fault of ``FAULTS`` (a disk that
fills up midway, simulated by a file object that fails after some bytes; an interrupt
midway) and, as root, on a real 64 KiB tmpfs. Afterwards the old files must be intact and
no temporary file may remain. Add a row when a new writer appears.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

import xai_core as xai
from xai_datasets import write_idx

RNG = np.random.default_rng(0)
BIG = 70 * 1024  # every writer below writes more than the 64 KiB tmpfs holds


def _explanation() -> xai.Explanation:
    return xai.Explanation(
        values=RNG.normal(size=(300, 40)), base_values=np.zeros(300), target=np.zeros(300, int)
    )


def _projection():
    return xai.project(RNG.normal(size=(1500, 4)), labels=[f"r{i}" for i in range(1500)])


def _net():
    return xai.nn.Sequential(
        [xai.nn.Dense(128), xai.nn.ReLU(), xai.nn.Dense(3)], input_shape=(256,), seed=0
    )


def _report_save(path: Path) -> None:
    r = xai.Report("faults")
    r.add(_explanation(), "values")
    r.save(path)


def _tensorboard(path: Path) -> None:
    _projection().export_tensorboard(path.parent, include_images=False)


#: name -> (save(path), file names written in path's folder).
WRITERS: dict[str, tuple[Callable[[Path], object], tuple[str, ...]]] = {
    "Report.save": (_report_save, ("out.html",)),
    "Explanation.save": (lambda p: _explanation().save(p), ("out.json",)),
    "Sequential.save": (lambda p: _net().save(p), ("out.npz",)),
    "write_idx": (lambda p: write_idx(p, RNG.integers(0, 255, BIG, dtype=np.uint8)), ("out.idx",)),
    "Projection.save_html": (lambda p: _projection().save_html(p), ("out.html",)),
    "Projection.to_csv": (lambda p: _projection().to_csv(p), ("out.csv",)),
    "Projection.save_neighbors.csv": (lambda p: _projection().save_neighbors(p), ("out.csv",)),
    "Projection.save_neighbors.json": (lambda p: _projection().save_neighbors(p), ("out.json",)),
    "Projection.export_tensorboard": (
        _tensorboard,
        ("tensors.tsv", "metadata.tsv", "projector_config.pbtxt"),
    ),
}


class _Failing:
    """A binary file that raises ``error`` once more than ``limit`` bytes were written."""

    def __init__(self, fh, limit: int, error: BaseException) -> None:
        self._fh, self._left, self._error = fh, limit, error

    def write(self, data) -> int:
        data = memoryview(data).cast("B")
        if len(data) > self._left:
            self._fh.write(data[: self._left])  # a partial write, then the failure
            self._fh.flush()
            self._left = 0
            raise self._error
        self._left -= len(data)
        return self._fh.write(data)

    def __getattr__(self, name: str):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self._fh.close()


FAULTS: dict[str, Callable[[], BaseException]] = {
    "disk-full-midway": lambda: OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)),
    "interrupted-midway": KeyboardInterrupt,
}


def _prepare(folder: Path, names: tuple[str, ...]) -> dict[str, bytes]:
    old = {}
    for name in names:
        old[name] = f"old {name}\n".encode()
        (folder / name).write_bytes(old[name])
    return old


def _check_untouched(folder: Path, old: dict[str, bytes]) -> None:
    assert sorted(p.name for p in folder.iterdir()) == sorted(old)  # no temporary left
    for name, content in old.items():
        assert (folder / name).read_bytes() == content


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("writer", list(WRITERS))
def test_fault_midway_leaves_old_files_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: str, fault: str
) -> None:
    """A write that fails after 1 KiB leaves every old file as it was and no temporary."""
    save, names = WRITERS[writer]
    old = _prepare(tmp_path, names)
    real_fdopen = os.fdopen

    def failing_fdopen(fd: int, mode: str = "r", *args, **kwargs):
        fh = real_fdopen(fd, mode, *args, **kwargs)
        return _Failing(fh, 1024, FAULTS[fault]()) if "w" in mode else fh

    monkeypatch.setattr(os, "fdopen", failing_fdopen)
    with pytest.raises(type(FAULTS[fault]())):
        save(tmp_path / names[0])
    monkeypatch.undo()
    _check_untouched(tmp_path, old)


@pytest.fixture
def small_tmpfs(tmp_path: Path, as_root: None) -> Iterator[Path]:
    """A 64 KiB tmpfs mounted in tmp_path (root only; skipped where mounting is not allowed)."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


@pytest.mark.parametrize("writer", list(WRITERS))
def test_full_tmpfs_leaves_old_files_whole(tmp_path: Path, small_tmpfs: Path, writer: str) -> None:
    """On a real 64 KiB file system, a save that does not fit fails and leaves the old files."""
    save, names = WRITERS[writer]
    roomy = tmp_path / "roomy"
    roomy.mkdir()
    save(roomy / names[0])
    assert sum(p.stat().st_size for p in roomy.iterdir()) > 64 * 1024  # it cannot fit
    old = _prepare(small_tmpfs, names)
    with pytest.raises(OSError) as info:
        save(small_tmpfs / names[0])
    assert info.value.errno == errno.ENOSPC
    _check_untouched(small_tmpfs, old)
