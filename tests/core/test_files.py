"""The one safe writer: atomic for regular files, write-through for links, devices and FIFOs."""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from xai_core.errors import ValidationError
from xai_core.files import atomic_write, check_writable


def _put(data: bytes):
    return lambda fh: fh.write(data)


@pytest.fixture
def umask_022():
    """Run with umask 0o022, restored afterwards."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_new_file_gets_open_permissions_and_no_temp(tmp_path: Path, umask_022) -> None:
    """A new file is 0o666 less the umask, like open(path, "w"); nothing else is left."""
    path = atomic_write(tmp_path / "a.bin", _put(b"abc"))
    assert path.read_bytes() == b"abc"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["a.bin"]


def test_umask_is_never_changed_while_other_threads_create_files(
    tmp_path: Path, umask_022, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files that other threads create during concurrent saves are never world-writable.

    ``os.umask`` is made slow, so any code that sets the umask to 0 and back opens a window
    wide enough for the creating thread to fall into.
    """
    real_umask = os.umask

    def slow_umask(mask: int) -> int:
        old = real_umask(mask)
        time.sleep(0.002)
        return old

    monkeypatch.setattr(os, "umask", slow_umask)
    stop = threading.Event()
    loose: list[str] = []

    def create() -> None:
        i = 0
        while not stop.is_set():
            p = tmp_path / "other" / f"f{i}"
            with open(p, "w"):
                pass
            if stat.S_IMODE(p.stat().st_mode) & 0o002:
                loose.append(p.name)
            i += 1

    def save(k: int) -> None:
        for i in range(40):
            atomic_write(tmp_path / "saved" / f"w{k}-{i}", _put(b"x" * 100))

    (tmp_path / "other").mkdir()
    (tmp_path / "saved").mkdir()
    creator = threading.Thread(target=create)
    writers = [threading.Thread(target=save, args=(k,)) for k in range(4)]
    creator.start()
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    creator.join()
    assert loose == []
    modes = {stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "saved").iterdir()}
    assert modes == {0o644}
    assert len(list((tmp_path / "saved").iterdir())) == 160


def test_symlink_stays_a_link_and_its_target_is_replaced(tmp_path: Path) -> None:
    """Saving to a symbolic link writes the file it points to; the link remains."""
    target = tmp_path / "real.html"
    target.write_bytes(b"old")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    atomic_write(link, _put(b"new"))
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.html", "real.html"]


def test_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    """A link to a file that does not exist yet gets that file, as open() would."""
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "later.txt")
    atomic_write(link, _put(b"made"))
    assert link.is_symlink() and (tmp_path / "later.txt").read_bytes() == b"made"


def test_fifo_is_written_through(tmp_path: Path) -> None:
    """A FIFO is opened and written in place, so a reader on the other end gets the bytes."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    try:
        atomic_write(fifo, _put(b"through the pipe"))
    finally:
        reader.join(timeout=5)
        if reader.is_alive():  # on failure: release the reader still waiting for a writer
            with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb"):
                pass
    assert got == [b"through the pipe"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="mknod needs root")
def test_device_node_is_written_through_not_replaced(tmp_path: Path) -> None:
    """As root, saving to a character device (a copy of /dev/null) keeps the device node."""
    node = tmp_path / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    atomic_write(node, _put(b"discarded"))
    st = node.lstat()
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    assert [p.name for p in tmp_path.iterdir()] == ["null"]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.mkdir(), "directory"),
        (lambda p: None, "does not exist"),
    ],
    ids=["directory", "missing-folder"],
)
def test_unwritable_paths_are_refused_before_writing(tmp_path: Path, make, message: str) -> None:
    """A directory, or a path in a missing folder, is refused naming the path; write never runs."""
    path = tmp_path / "out"
    make(path)
    target = path / "x.html" if message == "does not exist" else path
    calls: list[int] = []
    with pytest.raises(ValidationError, match=message) as info:
        atomic_write(target, lambda fh: calls.append(1))
    assert str(target) in str(info.value) and calls == []
    assert not list(tmp_path.rglob("*.tmp"))


def test_check_writable_names_the_argument(tmp_path: Path) -> None:
    """check_writable names the argument, for command-line messages."""
    with pytest.raises(ValidationError, match="--out"):
        check_writable(tmp_path / "no" / "r.html", "--out")
    assert check_writable(tmp_path / "r.html") == tmp_path / "r.html"


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
@pytest.mark.parametrize("prefix", ["/proc/self/fd/", "/dev/fd/"])
def test_descriptor_names_are_written_in_place(tmp_path: Path, prefix: str) -> None:
    """/dev/stdout-style names write into the open file (a shell redirection keeps working)."""
    real = tmp_path / "redirected.txt"
    with open(real, "wb") as fh:
        inode = os.fstat(fh.fileno()).st_ino
        atomic_write(f"{prefix}{fh.fileno()}", _put(b"through the descriptor"))
    assert real.stat().st_ino == inode
    assert real.read_bytes() == b"through the descriptor"
    assert [p.name for p in tmp_path.iterdir()] == ["redirected.txt"]
