"""The one reader of model-side JSON, and the schema check every reader of it uses.

Every JSON document that comes with a model or a saved state (Keras ``config.json`` and
``metadata.json``, an ``.h5`` file's ``model_config``, TF.js ``model.json``, Teachable
Machine's ``metadata.json``, the what-if editor's state, a saved explanation) is parsed by
:func:`read_json` (a file) or :func:`parse_json` (bytes or text already in memory), which
refuse, each with one error naming the document:

- a file that is not a regular file, or larger than ``max_bytes`` (its real size checked
  before it is read);
- text that is not UTF-8 (the offset and the byte are named);
- nesting deeper than ``max_depth`` (counted before parsing, so 100,000 nested brackets
  give this error, not a ``RecursionError``);
- an object with the same key twice (the parser would keep the last silently);
- anything that is not JSON (the line and column are named).

What the document must hold is then checked by :func:`check` against a small schema
(:class:`Int`, :class:`Num`, :class:`Str`, :class:`Bool`, :class:`List`, :class:`Obj`,
:class:`Either`, ``None`` for null, :data:`ANYTHING`); a mismatch is one error naming the
document, the path inside it and what was expected against what arrived::

    check(doc, Obj(required={"units": Int(lo=1)}), "model.keras/config.json", "config")
    # ModelFormatError: model.keras/config.json: config.units: expected an integer >= 1;
    # got 'abc' (a string).

The error class is the caller's: :class:`~xai_core.errors.ModelFormatError` for model
files (the default), :class:`~xai_core.errors.ValidationError` for arguments.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.errors import ModelFormatError

__all__ = [
    "ANYTHING",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "Bool",
    "Either",
    "Int",
    "List",
    "Num",
    "Obj",
    "Str",
    "check",
    "check_unique",
    "decode_utf8",
    "describe",
    "json_depth",
    "join_path",
    "parse_json",
    "read_json",
]

#: Largest JSON document read, in bytes (a Keras configuration is rarely over a few MB).
MAX_JSON_BYTES = 64 * 2**20
#: Deepest nesting of arrays and objects accepted (Keras nests a few dozen levels).
MAX_JSON_DEPTH = 256

ErrorClass = Callable[[str], Exception]

# A JSON string, or what is left of one that never ends (so the scan stays linear).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = np.zeros(256, dtype=np.int8)
_STEP[[ord("["), ord("{")]] = 1
_STEP[[ord("]"), ord("}")]] = -1


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in the JSON text ``data`` (UTF-8).

    Brackets inside strings do not count. Linear in the length of ``data``, without
    parsing it; on text that is not JSON the count is still a bound on what a parser
    would recurse into before failing.
    """
    if data.count(b"[") + data.count(b"{") == 0:
        return 0
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    steps = _STEP[np.frombuffer(brackets, dtype=np.uint8)]
    return int(np.cumsum(steps, dtype=np.int64).max(initial=0))


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


def decode_utf8(
    data: bytes | bytearray | memoryview, where: str, *, error: ErrorClass = ModelFormatError
) -> str:
    """``data`` decoded as UTF-8, or ``error`` naming the document, the offset and the byte.

    Used for every text file that comes with a model (JSON, ``labels.txt``): Latin-1 or
    binary content is one clear error, not a ``UnicodeDecodeError``.
    """
    raw = bytes(data)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"{where} is not UTF-8 text: byte 0x{raw[exc.start]:02x} at offset {exc.start} "
            f"({exc.reason}); such files must be UTF-8."
        ) from None


def parse_json(
    data: bytes | bytearray | memoryview | str,
    where: str,
    *,
    max_bytes: int = MAX_JSON_BYTES,
    max_depth: int = MAX_JSON_DEPTH,
    error: ErrorClass = ModelFormatError,
) -> Any:
    """Parse a JSON document already in memory, within the size and depth limits.

    Parameters
    ----------
    data : bytes or str
        The document: UTF-8 bytes (a leading byte-order mark is allowed), or text.
    where : str
        How messages name the document (``"model.keras/config.json"``).
    max_bytes : int, default=MAX_JSON_BYTES
    max_depth : int, default=MAX_JSON_DEPTH
    error : exception class, default=ModelFormatError

    Returns
    -------
    object
        The parsed value (dicts, lists, str, int, float, bool, None).

    Raises
    ------
    error
        Too large, not UTF-8, nested too deeply, a key twice in one object, or not JSON.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if len(raw) > max_bytes:
        raise error(f"{where} holds {len(raw):,} bytes of JSON; at most {max_bytes:,} are read.")
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    text = decode_utf8(raw, where, error=error)
    depth = json_depth(raw)
    if depth > max_depth:
        raise error(
            f"{where} nests arrays and objects {depth:,} deep; at most {max_depth} levels are read."
        )
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise error(f"{where} is ambiguous: an object has the key {exc.args[0]!r} twice.") from None
    except RecursionError:
        raise error(f"{where} nests arrays and objects too deeply to be read.") from None
    except ValueError as exc:  # JSONDecodeError, or an integer of over 4300 digits
        raise error(f"{where} is not valid JSON: {exc}.") from None


def read_json(
    path: str | os.PathLike[str],
    *,
    what: str | None = None,
    max_bytes: int = MAX_JSON_BYTES,
    max_depth: int = MAX_JSON_DEPTH,
    error: ErrorClass = ModelFormatError,
) -> Any:
    """Read and parse the JSON file ``path`` within the size and depth limits.

    The file must be a regular file (a FIFO or a device is refused without blocking);
    its size is checked against ``max_bytes`` before it is read.

    Parameters
    ----------
    path : str or path-like
    what : str, optional
        How messages name the file (default its name).
    max_bytes, max_depth, error
        As :func:`parse_json`.

    Returns
    -------
    object
    """
    from xai_core.files import read_regular_file

    where = what or Path(path).name
    raw = read_regular_file(path, max_bytes=max_bytes, what=where, error=error)
    return parse_json(raw, where, max_bytes=max_bytes, max_depth=max_depth, error=error)


# -- schema -----------------------------------------------------------------------------
def describe(value: Any) -> str:
    """A short description of a JSON value for messages: ``'abc' (a string)``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true (a boolean)" if value else "false (a boolean)"
    if isinstance(value, int):
        if abs(value) < 10**30:
            return f"{value} (an integer)"
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    if isinstance(value, float):
        return f"{value!r} (a number)"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"{shown!r} (a string)"
    if isinstance(value, Mapping):
        keys = ", ".join(str(k) for k in list(value)[:6])
        more = ", ..." if len(value) > 6 else ""
        return f"an object with keys {keys}{more}" if value else "an empty object"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    return f"a {type(value).__name__}"


def join_path(path: str, key: str | int) -> str:
    """``path`` followed by an index (``layers[3]``) or a key (``config.units``)."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{key!r}]"


class _Spec:
    """A schema node: what one JSON value must be."""

    kinds: frozenset[str] = frozenset()

    def describe(self) -> str:  # pragma: no cover - every spec overrides it
        raise NotImplementedError

    def check(self, value: Any, where: str, path: str, error: ErrorClass) -> None:
        if not self.accepts(value):
            raise _mismatch(self, value, where, path, error)

    def accepts(self, value: Any) -> bool:  # pragma: no cover
        raise NotImplementedError


def _mismatch(spec: Any, value: Any, where: str, path: str, error: ErrorClass) -> Exception:
    at = f"{path}: " if path else ""
    return error(f"{where}: {at}expected {_words(spec)}; got {describe(value)}.")


def _words(spec: Any) -> str:
    return "null" if spec is None else spec.describe()


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "list"
    return "other"


def _range(lo: Any, hi: Any) -> str:
    if lo is not None and hi is not None:
        return f" in {lo}..{hi}"
    if lo is not None:
        return f" >= {lo}"
    if hi is not None:
        return f" <= {hi}"
    return ""


@dataclass(frozen=True)
class Int(_Spec):
    """An integer (not a boolean, not 3.0), optionally within ``lo`` .. ``hi``."""

    lo: int | None = None
    hi: int | None = None
    kinds = frozenset({"number"})

    def describe(self) -> str:
        return "an integer" + _range(self.lo, self.hi)

    def accepts(self, value: Any) -> bool:
        return (
            isinstance(value, int)
            and not isinstance(value, bool)
            and (self.lo is None or value >= self.lo)
            and (self.hi is None or value <= self.hi)
        )


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


@dataclass(frozen=True)
class Num(_Spec):
    """A finite number (an integer or a float that fits a float64), within ``lo`` .. ``hi``."""

    lo: float | None = None
    hi: float | None = None
    kinds = frozenset({"number"})

    def describe(self) -> str:
        return "a finite number" + _range(self.lo, self.hi)

    def accepts(self, value: Any) -> bool:
        return (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and _finite(value)
            and (self.lo is None or value >= self.lo)
            and (self.hi is None or value <= self.hi)
        )


@dataclass(frozen=True)
class Str(_Spec):
    """A string, optionally one of ``choices``."""

    choices: tuple[str, ...] | None = None
    kinds = frozenset({"string"})

    def describe(self) -> str:
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        return "a string"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and (self.choices is None or value in self.choices)


@dataclass(frozen=True)
class Bool(_Spec):
    """``true`` or ``false``."""

    kinds = frozenset({"bool"})

    def describe(self) -> str:
        return "true or false"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, bool)


@dataclass(frozen=True)
class _Anything(_Spec):
    kinds = frozenset({"null", "bool", "number", "string", "object", "list"})

    def describe(self) -> str:
        return "any value"

    def accepts(self, value: Any) -> bool:
        return True


#: Any JSON value.
ANYTHING = _Anything()


@dataclass(frozen=True)
class List(_Spec):
    """A list whose items all match ``item`` (any value when ``None``), of bounded length."""

    item: Any = ANYTHING
    min_len: int = 0
    max_len: int | None = None
    kinds = frozenset({"list"})

    def describe(self) -> str:
        if self.max_len is not None and self.max_len == self.min_len:
            count = f"{self.min_len} "
        elif self.max_len is not None:
            count = f"{self.min_len} to {self.max_len} "
        elif self.min_len:
            count = f"at least {self.min_len} "
        else:
            count = ""
        return f"a list of {count}items, each {_words(self.item)}"

    def check(self, value: Any, where: str, path: str, error: ErrorClass) -> None:
        if not isinstance(value, (list, tuple)):
            raise _mismatch(self, value, where, path, error)
        if len(value) < self.min_len or (self.max_len is not None and len(value) > self.max_len):
            raise _mismatch(self, value, where, path, error)
        if self.item is not ANYTHING:
            for i, v in enumerate(value):
                check(v, self.item, where, join_path(path, i), error=error)


@dataclass(frozen=True)
class Obj(_Spec):
    """An object with ``required`` and ``optional`` keys; other keys are allowed.

    ``values`` (when given) is what the value of every key not listed must be (a mapping
    of names to numbers, say).
    """

    required: Mapping[str, Any] = field(default_factory=dict)
    optional: Mapping[str, Any] = field(default_factory=dict)
    values: Any = ANYTHING
    kinds = frozenset({"object"})

    def describe(self) -> str:
        if self.required:
            return "an object with " + ", ".join(repr(k) for k in self.required)
        return "an object"

    def check(self, value: Any, where: str, path: str, error: ErrorClass) -> None:
        if not isinstance(value, Mapping):
            raise _mismatch(self, value, where, path, error)
        for key, spec in self.required.items():
            if key not in value:
                at = f"{path}: " if path else ""
                raise error(f"{where}: {at}missing the key {key!r} ({_words(spec)}).")
            check(value[key], spec, where, join_path(path, key), error=error)
        for key, spec in self.optional.items():
            if key in value:
                check(value[key], spec, where, join_path(path, key), error=error)
        if self.values is not ANYTHING:
            for key, v in value.items():
                if key not in self.required and key not in self.optional:
                    check(v, self.values, where, join_path(path, str(key)), error=error)


@dataclass(frozen=True)
class Either(_Spec):
    """One of several schemas (``None`` among them for null)."""

    options: tuple[Any, ...] = ()

    def __init__(self, *options: Any) -> None:
        object.__setattr__(self, "options", options)

    @property
    def kinds(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset().union(*({"null"} if o is None else o.kinds for o in self.options))

    def describe(self) -> str:
        words = [_words(o) for o in self.options]
        return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else words[0]

    def check(self, value: Any, where: str, path: str, error: ErrorClass) -> None:
        kind = _kind(value)
        same = [
            o
            for o in self.options
            if (o is None and kind == "null") or (o is not None and kind in o.kinds)
        ]
        if not same:
            raise _mismatch(self, value, where, path, error)
        first: Exception | None = None
        for option in same:
            try:
                check(value, option, where, path, error=error)
                return
            except Exception as exc:  # noqa: BLE001 - the caller's error class
                if not isinstance(exc, _error_type(error)):
                    raise
                first = first or exc
        if len(same) == 1 and first is not None:
            raise first  # the one candidate's own (deeper) message
        raise _mismatch(self, value, where, path, error)


def _error_type(error: ErrorClass) -> type[BaseException]:
    return error if isinstance(error, type) else Exception


def check(
    value: Any,
    spec: Any,
    where: str,
    path: str = "",
    *,
    error: ErrorClass = ModelFormatError,
) -> Any:
    """Check ``value`` against ``spec``; return it unchanged.

    Parameters
    ----------
    value : object
        A parsed JSON value (or part of one).
    spec : schema
        :class:`Int`, :class:`Num`, :class:`Str`, :class:`Bool`, :class:`List`,
        :class:`Obj`, :class:`Either`, :data:`ANYTHING`, or ``None`` (null).
    where : str
        The document, for the message (``"model.json"``).
    path : str, optional
        Where ``value`` sits in the document (``"modelTopology.config.layers[3]"``).
    error : exception class, default=ModelFormatError

    Returns
    -------
    object
        ``value``.

    Raises
    ------
    error
        ``"<where>: <path>: expected <what>; got <what arrived>."`` at the first mismatch,
        or ``"... missing the key 'units' (...)"``.
    """
    if spec is None:
        if value is not None:
            raise _mismatch(None, value, where, path, error)
        return value
    spec.check(value, where, path, error)
    return value


def check_unique(
    names: Sequence[Any], what: str, where: str, path: str, *, error: ErrorClass = ModelFormatError
) -> None:
    """Raise ``error`` naming the first value of ``names`` that appears twice."""
    seen: dict[Any, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise error(
                f"{where}: {path}: {what} {name!r} appears twice "
                f"({join_path(path, seen[name])} and {join_path(path, i)})."
            )
        seen[name] = i
