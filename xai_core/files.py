"""Writing files atomically: a temporary file beside the target, then a rename."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

__all__ = ["atomic_write"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], None]) -> Path:
    """Write ``path`` with ``write(file)`` so that readers see the old file or the whole new one.

    The new file gets the permissions an ordinary ``open(path, "w")`` would (0o666 less the
    umask), not ``mkstemp``'s 0o600. On any error the temporary file is removed.

    Parameters
    ----------
    path : str or path-like
        The file to write.
    write : callable
        Called with the temporary file opened for binary writing.

    Returns
    -------
    pathlib.Path
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
