"""Reading and writing files safely.

Writing: a temporary file beside the target, then a rename. Regular files (and new paths) are replaced atomically: a reader sees the old file or the
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

Reading what a model or data file brings (:func:`read_regular_file`,
:func:`open_regular_file`, :class:`ZipArchive`): only regular files are opened (a FIFO
named ``x.png`` would block a reader forever, a device never ends), and every size is
checked before a byte is read: a file's real size against the reader's limit, a zip
member's declared size against its limit and the archive's total, so a small archive
cannot inflate to gigabytes. A zip member that is encrypted, duplicated, fails its CRC or
cannot be inflated is one error naming the archive and the member.
"""

from __future__ import annotations

import io
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, BinaryIO

from xai_core.errors import DataError, ModelFormatError, ValidationError

__all__ = [
    "MAX_ZIP_MEMBERS",
    "ZipArchive",
    "atomic_write",
    "atomic_write_text",
    "check_writable",
    "open_regular_file",
    "read_regular_file",
    "writes_in_place",
]

#: Most members a zip archive may list (its whole directory is read when it is opened).
MAX_ZIP_MEMBERS = 10_000
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS |= getattr(os, "O_BINARY", 0)


def _zip_errors() -> tuple[type[BaseException], ...]:
    """What zipfile and the decompressors raise on a damaged archive or member."""
    import lzma
    import struct
    import zipfile
    import zlib

    return (
        zipfile.BadZipFile,
        zlib.error,
        lzma.LZMAError,
        struct.error,
        EOFError,
        OSError,
        RuntimeError,
        NotImplementedError,
        OverflowError,
        ValueError,
        KeyError,
    )


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


# -- reading --------------------------------------------------------------------------------
def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular_file(
    path: str | os.PathLike[str],
    *,
    what: str | None = None,
    error: Callable[[str], Exception] = DataError,
) -> BinaryIO:
    """Open ``path`` for binary reading if it is a regular file (links followed).

    The file is opened without blocking and examined before anything is read, so a FIFO,
    a device or a folder is refused at once instead of blocking the reader or never
    ending.

    Parameters
    ----------
    path : str or path-like
    what : str, optional
        How messages name the file (default the path itself).
    error : exception class, default=DataError
        The error raised (``ModelFormatError`` for model files).

    Returns
    -------
    binary file
        Open at its start; the caller closes it.

    Raises
    ------
    error
        If the file does not exist, cannot be opened or is not a regular file.
    """
    name = what or str(path)
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        raise error(f"{name}: the file does not exist.") from None
    except OSError as exc:
        raise error(f"{name}: the file cannot be opened: {exc.strerror or exc}.") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{name} is {_kind(mode)}, not a regular file; only files are read.")
        if _READ_FLAGS & getattr(os, "O_NONBLOCK", 0) and hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_file(
    path: str | os.PathLike[str],
    *,
    max_bytes: int,
    what: str | None = None,
    error: Callable[[str], Exception] = DataError,
) -> bytes:
    """The bytes of the regular file ``path``, its size checked against ``max_bytes`` first.

    Parameters
    ----------
    path : str or path-like
    max_bytes : int
        The largest file read; a larger one is refused before any byte is read.
    what : str, optional
        How messages name the file (default the path itself).
    error : exception class, default=DataError

    Returns
    -------
    bytes

    Raises
    ------
    error
        As :func:`open_regular_file`, or the file is larger than ``max_bytes`` (also when it
        grows while being read).
    """
    from xai_core.attribution.cost import format_bytes

    name = what or str(path)
    with open_regular_file(path, what=name, error=error) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > max_bytes:
            raise error(
                f"{name} is {format_bytes(size)} ({size:,} bytes); at most "
                f"{format_bytes(max_bytes)} are read from such a file."
            )
        data = fh.read(size + 1)  # (read(n) sets aside n bytes first)
        if len(data) > size:
            data += fh.read(max_bytes + 1 - len(data))
    if len(data) > max_bytes:
        raise error(f"{name} grew past {format_bytes(max_bytes)} while it was read.")
    return data


class ZipArchive:
    """A zip archive opened for bounded reading; use it as a context manager.

    Opening reads the archive's directory and refuses, before any member is inflated: more
    than :data:`MAX_ZIP_MEMBERS` members, a name listed twice, an encrypted member, and
    declared (inflated) sizes adding up to more than ``max_total``. :meth:`read` checks
    the member's declared size against its own limit before inflating it; zipfile stops
    at the declared size and checks the CRC, so no member yields more than it declares.

    Parameters
    ----------
    path : str or path-like
        A regular file.
    max_total : int
        The most bytes all members together may declare.
    what : str, optional
        How messages name the archive (default its file name).
    kind : str, default="a zip archive"
        What the file should be, for the message when it is not a zip file
        (``"a .keras archive"``).
    error : exception class, default=ModelFormatError

    Attributes
    ----------
    names : list of str
        The members that are files (folders left out), in the archive's order.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_total: int,
        what: str | None = None,
        kind: str = "a zip archive",
        error: Callable[[str], Exception] = ModelFormatError,
    ) -> None:
        import zipfile

        from xai_core.attribution.cost import format_bytes

        self.where = what or Path(path).name
        self.error = error
        fh = open_regular_file(path, what=self.where, error=error)
        try:
            self._zip = zipfile.ZipFile(fh)
        except _zip_errors() as exc:
            fh.close()
            raise error(f"{self.where} is not {kind} (not a readable zip file: {exc}).") from None
        self._fh = fh
        try:
            infos = self._zip.infolist()
            if len(infos) > MAX_ZIP_MEMBERS:
                raise error(
                    f"{self.where} lists {len(infos):,} members; at most {MAX_ZIP_MEMBERS:,} "
                    "are read."
                )
            self._infos: dict[str, Any] = {}
            for info in infos:
                if not info.filename:
                    raise error(f"{self.where} lists a member with an empty name.")
                if info.is_dir():
                    continue
                if info.filename in self._infos:
                    raise error(f"{self.where} lists the member {info.filename!r} twice.")
                if info.flag_bits & 0x1:
                    raise error(
                        f"{self.where}: member {info.filename!r} is encrypted; only "
                        "unencrypted archives can be read."
                    )
                self._infos[info.filename] = info
            total = sum(i.file_size for i in self._infos.values())
            if total > max_total:
                raise error(
                    f"{self.where}: the zip declares {total:,} bytes inflated "
                    f"({format_bytes(total)}); at most {format_bytes(max_total)} are read."
                )
        except BaseException:
            self.close()
            raise
        self.names = list(self._infos)

    def size(self, name: str) -> int:
        """The inflated size member ``name`` declares."""
        return self._infos[name].file_size

    def read(self, name: str, *, max_bytes: int) -> bytes:
        """The inflated bytes of member ``name``, its declared size checked first.

        Raises
        ------
        error
            The member is missing, declares more than ``max_bytes``, or is damaged (a bad
            CRC, a broken stream, an unsupported compression method).
        """
        from xai_core.attribution.cost import format_bytes

        info = self._infos.get(name)
        if info is None:
            raise self.error(f"{self.where} has no member {name!r}.")
        if info.file_size > max_bytes:
            raise self.error(
                f"{self.where}: member {name!r} declares {info.file_size:,} bytes inflated "
                f"({format_bytes(info.file_size)}); at most {format_bytes(max_bytes)} are read "
                "for it."
            )
        try:
            with self._zip.open(info) as fh:
                data = fh.read(info.file_size + 1)
        except _zip_errors() as exc:
            raise self.error(f"{self.where}: member {name!r} cannot be read: {exc}") from None
        if len(data) != info.file_size:
            raise self.error(
                f"{self.where}: member {name!r} holds {len(data):,} bytes but declares "
                f"{info.file_size:,}."
            )
        return data

    def close(self) -> None:
        """Close the archive and its file."""
        self._zip.close()
        self._fh.close()

    def __enter__(self) -> ZipArchive:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
