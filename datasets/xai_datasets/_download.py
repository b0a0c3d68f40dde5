"""Fetching files into the cache: checksums first, atomic writes, retries with backoff.

A file reaches its final name only after its SHA-256 matched, through a temporary file in
the same folder and ``os.replace``; an interrupted or corrupt download leaves nothing
behind. Only the standard library's ``urllib`` is used, so proxy settings from the
environment (``https_proxy``, ``no_proxy``) apply.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from xai_core.errors import DataError, ValidationError

__all__ = [
    "default_cache_dir",
    "fetch",
    "parse_sha256sums",
    "check_sha256_format",
    "RETRIES",
    "BACKOFF",
    "TIMEOUT",
    "DEADLINE",
]

#: Attempts per file before giving up (network errors, dropped connections, HTTP 5xx).
RETRIES = 3
#: Seconds to wait before the second attempt; doubled before each further one.
BACKOFF = 1.0
#: Socket timeout in seconds for connecting and for each read.
TIMEOUT = 60.0
#: Seconds one download may take in all (every attempt and wait included); past it the
#: download is abandoned, however steadily the server trickles bytes.
DEADLINE = 900.0
#: Refuse to download more than this many bytes for one file.
MAX_BYTES = 512 * 2**20

_sleep = time.sleep  # tests replace it to record the backoff
_RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
_CHUNK = 2**20


def default_cache_dir() -> Path:
    """The folder downloads go to: ``$XAI_DATA_HOME``, else the user cache folder.

    Returns
    -------
    pathlib.Path
        ``$XAI_DATA_HOME`` if set; otherwise ``$XDG_CACHE_HOME/xai-core`` (default
        ``~/.cache/xai-core``) on Linux, ``~/Library/Caches/xai-core`` on macOS and
        ``%LOCALAPPDATA%\\xai-core\\Cache`` on Windows.
    """
    env = os.environ.get("XAI_DATA_HOME")
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "xai-core" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "xai-core"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "xai-core"


def parse_sha256sums(text: str, label: str) -> dict[str, str]:
    """Parse the output of ``sha256sum``: ``<64 hex digits> [*]<file name>`` per line.

    Parameters
    ----------
    text : str
        The content of a ``SHA256SUMS`` file.
    label : str
        The file's name, used in error messages.

    Returns
    -------
    dict of str to str
        File name -> lower-case hex digest.
    """
    sums: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        digest, _, name = line.partition(" ")
        name = name.strip().lstrip("*")
        if len(digest) != 64 or not name or any(c not in "0123456789abcdefABCDEF" for c in digest):
            raise DataError(
                f"{label}: line {lineno}: expected '<64 hex digits>  <file name>'; got {line!r}"
            )
        sums[name] = digest.lower()
    return sums


def check_sha256_format(digest: object, label: str) -> str:
    """``digest`` in lower case if it is 64 hex digits, else a :class:`ValidationError`.

    Parameters
    ----------
    digest : object
        The SHA-256 a caller gave.
    label : str
        What it is the checksum of, used in the message.

    Returns
    -------
    str
    """
    if (
        not isinstance(digest, str)
        or len(digest) != 64
        or any(c not in "0123456789abcdefABCDEF" for c in digest)
    ):
        raise ValidationError(f"sha256 for {label} must be 64 hexadecimal digits; got {digest!r}")
    return digest.lower()


def check_sha256(data: bytes, expected: str, label: str) -> None:
    """Raise :class:`DataError` naming ``label`` unless ``sha256(data) == expected``."""
    got = hashlib.sha256(data).hexdigest()
    if got != expected.lower():
        raise DataError(
            f"{label}: SHA-256 checksum: expected {expected.lower()}, got {got} "
            f"({len(data)} bytes); the file is corrupt, truncated or not the expected file"
        )


class _Retry(Exception):
    """A transient failure: worth another attempt."""


def _validate_url(url: str) -> None:
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("http", "https", "file"):
        raise ValidationError(f"base_url must be an http, https or file URL; got {url!r}")


class _Deadline(DataError):
    """The overall deadline passed: never retried."""


def _attempt(url: str, dest: Path, sha256: str, timeout: float, end: float) -> None:
    request = urllib.request.Request(url, headers={"User-Agent": "xai-datasets"})
    left = end - time.monotonic()
    if left <= 0:
        raise _Deadline(f"{url}: download: the deadline passed before the attempt")
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    try:
        digest = hashlib.sha256()
        received = 0
        with os.fdopen(fd, "wb") as out:
            try:
                with urllib.request.urlopen(request, timeout=min(timeout, left)) as resp:
                    length = resp.headers.get("Content-Length")
                    expected = int(length) if length and length.isdigit() else None
                    # read1 returns what one receive brings, so the deadline is checked
                    # between receives even when the server trickles bytes.
                    read = getattr(resp, "read1", resp.read)
                    while chunk := read(_CHUNK):
                        if time.monotonic() > end:
                            raise _Deadline(
                                f"{url}: download: deadline passed after {received} bytes; "
                                "the server is too slow"
                            )
                        received += len(chunk)
                        if received > MAX_BYTES:
                            raise DataError(
                                f"{url}: download: more than {MAX_BYTES} bytes; refusing it"
                            )
                        digest.update(chunk)
                        out.write(chunk)
            except urllib.error.HTTPError as exc:
                if exc.code in _RETRY_STATUS:
                    raise _Retry(f"HTTP {exc.code} {exc.reason}") from exc
                raise DataError(f"{url}: download: HTTP {exc.code} {exc.reason}") from exc
            except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
                raise _Retry(f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}") from exc
            if expected is not None and received != expected:
                raise _Retry(
                    f"connection closed after {received} of {expected} bytes (Content-Length)"
                )
            out.flush()
            os.fsync(out.fileno())
        got = digest.hexdigest()
        if got != sha256:
            raise DataError(
                f"{url}: SHA-256 checksum: expected {sha256}, got {got} ({received} bytes). "
                "Nothing was saved; the server sent a corrupt or different file"
            )
        os.chmod(tmp, 0o644)  # mkstemp creates 0o600
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def fetch(
    url: str,
    dest: str | os.PathLike[str],
    sha256: str,
    *,
    retries: int | None = None,
    backoff: float | None = None,
    timeout: float | None = None,
    deadline: float | None = None,
) -> Path:
    """Download ``url`` to ``dest`` unless ``dest`` already holds the file.

    Parameters
    ----------
    url : str
        An http, https or file URL.
    dest : str or path-like
        The final file. It appears only once complete and verified.
    sha256 : str
        The expected SHA-256 (hex). A mismatch is never retried: a mirror serving a
        corrupt file would serve it again.
    retries, backoff, timeout : optional
        Attempts, first wait in seconds (doubling) and socket timeout; default to the
        module's ``RETRIES``, ``BACKOFF`` and ``TIMEOUT``.
    deadline : float, optional
        Seconds the whole download may take, every attempt and wait included; default
        the module's ``DEADLINE`` (15 minutes). Checked between receives, so it ends a
        server that trickles bytes; a deadline error is not retried.

    Returns
    -------
    pathlib.Path
        ``dest``.

    Raises
    ------
    DataError
        On an HTTP error (404 ...), a checksum mismatch, a passed deadline, or when every
        attempt failed; the message names the URL and the last cause.
    ValidationError
        Before any download, if the URL is not http, https or file, ``sha256`` is not 64
        hex digits, or ``deadline`` or ``timeout`` is not a positive number.
    """
    _validate_url(url)
    dest = Path(dest)
    sha256 = check_sha256_format(sha256, dest.name)
    retries = RETRIES if retries is None else max(1, int(retries))
    backoff = BACKOFF if backoff is None else float(backoff)
    timeout = positive_seconds("timeout", TIMEOUT if timeout is None else timeout)
    deadline = positive_seconds("deadline", DEADLINE if deadline is None else deadline)
    if dest.is_file():
        return dest
    end = time.monotonic() + deadline
    dest.parent.mkdir(parents=True, exist_ok=True)
    last: _Retry | None = None
    tried = 0
    for attempt in range(retries):
        if attempt:
            wait = backoff * 2 ** (attempt - 1)
            if time.monotonic() + wait > end:
                break
            _sleep(wait)
        tried += 1
        try:
            _attempt(url, dest, sha256, timeout, end)
            return dest
        except _Retry as exc:
            last = exc
        except _Deadline as exc:
            raise DataError(
                f"{exc} (deadline={deadline:g} s for the whole download). Pass a larger "
                "deadline=, set base_url= to a faster mirror, or pass path= to a folder "
                "that holds the files"
            ) from None
    raise DataError(
        f"{url}: download failed after {tried} attempts; last error: {last}. "
        "Check the connection or proxy settings, set base_url= to a mirror, "
        "or pass path= to a folder that holds the files"
    ) from last


def positive_seconds(name: str, value: object) -> float:
    """``value`` as a float if it is a positive finite number, else a ValidationError."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not (0 < number < float("inf")):
        raise ValidationError(f"{name} must be a positive number of seconds; got {value!r}")
    return number


def fetch_all(
    base_url: str,
    names: list[str],
    folder: Path,
    sums: Mapping[str, str],
    *,
    deadline: float | None = None,
) -> list[Path]:
    """Fetch ``base_url + name`` into ``folder`` for each name; see :func:`fetch`.

    ``deadline`` (default ``DEADLINE``) bounds all the files together.
    """
    base = base_url if base_url.endswith("/") else base_url + "/"
    _validate_url(base)
    total = positive_seconds("deadline", DEADLINE if deadline is None else deadline)
    end = time.monotonic() + total
    out = []
    for n in names:
        left = end - time.monotonic()
        if left <= 0:
            raise DataError(f"{base}: download: the {total:g} s deadline passed before {n}")
        out.append(fetch(urllib.parse.urljoin(base, n), folder / n, sums[n], deadline=left))
    return out
