"""Hostile save targets: links, FIFOs, devices, folders and sockets, for every writer.

``TARGETS`` says how to make each kind of path and what saving to it must do: write the
bytes where ``open(path, "w")`` would (following a link, into a FIFO or a device) without
replacing the node, or refuse with a ValidationError naming the path. ``SAVERS`` is one
row per public writer; add rows as writers appear.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import xai_core as xai
from xai_core.errors import ValidationError
from xai_datasets import write_idx


def _report(p: Path) -> object:
    return xai.Report("t").save(p)


def _explanation(p: Path) -> object:
    return xai.Explanation(values=[[1.0, 2.0]], base_values=[0.0], target=[0]).save(p)


def _projection_csv(p: Path) -> object:
    return xai.project(np.random.default_rng(0).normal(size=(12, 3))).to_csv(p)


SAVERS: dict[str, Callable[[Path], object]] = {
    "Report.save": _report,
    "Explanation.save": _explanation,
    "write_idx": lambda p: write_idx(p, np.arange(5, dtype=np.uint8)),
    "Sequential.save": lambda p: xai.nn.Sequential([xai.nn.Dense(2)], input_shape=(3,)).save(p),
    "Projection.to_csv": _projection_csv,
}


def _symlink(tmp: Path) -> Path:
    (tmp / "real").write_bytes(b"old")
    (tmp / "out").symlink_to(tmp / "real")
    return tmp / "out"


def _dangling(tmp: Path) -> Path:
    (tmp / "out").symlink_to(tmp / "later")
    return tmp / "out"


def _fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "out")
    return tmp / "out"


def _device(tmp: Path) -> Path:
    if os.getuid() != 0:
        pytest.skip("mknod needs root")
    os.mknod(tmp / "out", 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a copy of /dev/null
    return tmp / "out"


def _folder(tmp: Path) -> Path:
    (tmp / "out").mkdir()
    return tmp / "out"


def _socket(tmp: Path) -> Path:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp / "out"))
    sock.close()
    return tmp / "out"


#: name -> (make the path in tmp, None if it must be written, else words of the refusal).
TARGETS: dict[str, tuple[Callable[[Path], Path], str | None]] = {
    "symlink": (_symlink, None),
    "dangling-symlink": (_dangling, None),
    "fifo": (_fifo, None),
    "device-node": (_device, None),
    "directory": (_folder, "directory"),
    "missing-folder": (lambda tmp: tmp / "no" / "out", "does not exist"),
    "socket": (_socket, "socket"),
}


def _kinds(tmp: Path) -> dict[str, int]:
    return {p.name: stat.S_IFMT(p.lstat().st_mode) for p in tmp.iterdir()}


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("saver", list(SAVERS))
def test_hostile_target(tmp_path: Path, saver: str, target: str) -> None:
    """The node stays what it was and gets the bytes, or the save is refused naming the path."""
    make, refusal = TARGETS[target]
    if (saver, target) == ("write_idx", "missing-folder"):
        refusal = None  # write_idx creates missing folders, as documented
    path = make(tmp_path)
    before = _kinds(tmp_path)
    if refusal is not None:
        with pytest.raises(ValidationError, match=refusal) as info:
            SAVERS[saver](path)
        assert str(path) in str(info.value)
        assert _kinds(tmp_path) == before
        return
    got: list[bytes] = []
    reader = None
    if target == "fifo":
        reader = threading.Thread(target=lambda: got.append(path.read_bytes()), daemon=True)
        reader.start()
    SAVERS[saver](path)
    if reader is not None:
        reader.join(timeout=10)
        assert got and len(got[0]) > 0
    after = _kinds(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before  # nothing replaced
    assert set(after) - set(before) <= {"later", "no"}  # no temporary left
    if target in ("symlink", "dangling-symlink"):
        real = tmp_path / ("real" if target == "symlink" else "later")
        assert real.stat().st_size > 3 and real.read_bytes() != b"old"
