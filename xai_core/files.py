"""Writing files safely: a temporary file beside the target, then a rename.

Regular files (and new paths) are replaced atomically: a reader sees the old file or the
whole new one, never half of it, and a failed or interrupted write leaves the old file and
no temporary behind. What is not a regular file is written the way ``open(path, "wb")``
would write it, never replaced:

- a symbolic link is followed, and the file it points to is replaced atomically (the link
  stays a link; a dangling link gets its target created);
- a character or block device (``/dev/null``), a FIFO, and a descriptor's name
  (``/dev/stdout``, ``/proc/self/fd/1``, even when it is redirected to a file) are opened
  and written in place;
- a directory, a socket or a path whose folder does not exist is refused with a
  :class:`~xai_core.errors.ValidationError` naming the path, before anything is written.
"""

from __future__ import annotations

import io
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import IO

from xai_core.errors import ValidationError

__all__ = ["atomic_write", "atomic_write_text", "check_writable", "writes_in_place"]

_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
_TEMP_FLAGS |= getattr(os, "O_BINARY", 0)
_PLACE_FLAGS = os.O_WRONLY | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def check_writable(path: str | os.PathLike[str], argument: str = "path") -> Path:
    """Check that :func:`atomic_write` can write ``path``, before any work is done.

    Parameters
    ----------
    path : str or path-like
        The file to be written.
    argument : str
        The argument's name, used in the message (e.g. ``"--out"``).

    Returns
    -------
    pathlib.Path
        Where the bytes will go: ``path`` itself, or for a symbolic link to a regular file
        (or to nothing yet) the file it points to.

    Raises
    ------
    ValidationError
        If ``path`` is a directory or a socket, or its folder does not exist or is not a
        folder; the message names ``argument`` and the path.
    """
    return _resolve(Path(path), argument)[0]


def writes_in_place(path: str | os.PathLike[str]) -> bool:
    """Whether :func:`atomic_write` writes ``path`` in place: a device, a FIFO, ``/dev/stdout``.

    A command that saves to such a path should print its own messages elsewhere (stderr).
    """
    return _resolve(Path(path), "path")[1]


def _resolve(path: Path, argument: str) -> tuple[Path, bool]:
    """The path to write and whether to write it in place (a device or FIFO)."""
    try:
        st = os.stat(path)  # follows links, /proc/self/fd/N and /dev/stdout included
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise ValidationError(f"{argument} {str(path)!r} cannot be examined: {exc}") from exc
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise ValidationError(
                f"{argument} must be a file path; got the directory {str(path)!r}"
            )
        if _in_place(st.st_mode) or (stat.S_ISREG(st.st_mode) and _is_descriptor(path)):
            return path, True  # opened through any link, as open() would
        if not stat.S_ISREG(st.st_mode):
            raise ValidationError(
                f"{argument} must be a file, a device or a FIFO; {str(path)!r} is a socket or "
                "another kind of file that cannot be written"
            )
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if st is None:
        folder = target.parent
        if not folder.is_dir():
            what = "is not a folder" if folder.exists() else "does not exist"
            raise ValidationError(
                f"{argument} {str(path)!r}: the folder {str(folder)!r} {what}; create it first"
            )
    return target, False


def _is_descriptor(path: Path) -> bool:
    """``/dev/stdout``, ``/dev/fd/1``, ``/proc/self/fd/1``: another open file, not a name.

    Replacing the file such a link names would leave the descriptor (a shell redirection)
    pointing at the old, unlinked file, so these are written in place.
    """
    p = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on links followed
        if not os.path.islink(p):
            return False
        if os.path.realpath(os.path.dirname(p)).startswith("/proc/"):
            return True  # a magic link: /proc/<pid>/fd/N, reached also as /dev/fd/N
        p = os.path.normpath(os.path.join(os.path.dirname(p), os.readlink(p)))
    return False


def _in_place(mode: int) -> bool:
    """Files written through rather than replaced: devices and FIFOs."""
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode)


class _Stream(io.RawIOBase):
    """A write-only, unseekable view of a file descriptor (closed with it)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        return os.write(self._fd, data)

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], None]) -> Path:
    """Write ``path`` with ``write(file)`` so that readers see the old file or the whole new one.

    A regular file is written to a temporary file in the same folder, flushed to disk and
    renamed over the target; on any error (a full disk, an interrupt) the temporary file
    is removed and the old file is left as it was. The new file gets the permissions an
    ordinary ``open(path, "w")`` would (0o666 less the umask, applied by the kernel; the
    process umask is never changed). A symbolic link is followed and its target replaced;
    devices and FIFOs are written in place (see the module's docstring).

    Parameters
    ----------
    path : str or path-like
        The file to write.
    write : callable
        Called with a file opened for binary writing.

    Returns
    -------
    pathlib.Path
        ``path`` as given.

    Raises
    ------
    ValidationError
        As :func:`check_writable`, before ``write`` is called.
    """
    given = Path(path)
    target, in_place = _resolve(given, "path")
    if in_place:
        # Not seekable, even where the device says it is (/dev/null's tell() stays 0):
        # writers such as zipfile then stream instead of seeking back.
        with io.BufferedWriter(_Stream(os.open(target, _PLACE_FLAGS))) as fh:
            write(fh)
        return given
    tmp = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, _TEMP_FLAGS, 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return given


def atomic_write_text(
    path: str | os.PathLike[str],
    text: str | Callable[[IO[str]], None],
    *,
    encoding: str = "utf-8",
    newline: str = "\n",
) -> Path:
    """:func:`atomic_write` for text: a string, or a function writing to a text file.

    Parameters
    ----------
    path : str or path-like
        The file to write.
    text : str or callable
        The whole text, or a function called with a text file (e.g. for :mod:`csv`).
    encoding : str, default="utf-8"
    newline : str, default="\\n"
        How ``"\\n"`` is written (``""`` writes line ends untranslated, as :mod:`csv` wants).

    Returns
    -------
    pathlib.Path
        ``path`` as given.
    """

    def write(fh: IO[bytes]) -> None:
        wrapper = io.TextIOWrapper(fh, encoding=encoding, newline=newline)  # type: ignore[arg-type]
        try:
            if isinstance(text, str):
                wrapper.write(text)
            else:
                text(wrapper)
            wrapper.flush()
        finally:
            wrapper.detach()

    return atomic_write(path, write)
