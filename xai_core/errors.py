"""Errors and warnings raised by xai-core.

Every error subclasses :class:`XaiError` *and* the builtin a caller would expect, so both
``except xai.ShapeError`` and ``except ValueError`` work.
"""

from __future__ import annotations

import difflib
from typing import Any

__all__ = [
    "closest_names",
    "XaiError",
    "ValidationError",
    "ShapeError",
    "UnknownNameError",
    "CapabilityError",
    "PluginError",
    "DuplicateNameError",
    "ModelFormatError",
    "DataError",
    "ContractError",
    "ChunkError",
    "ModelOutputError",
    "ResourceError",
    "XaiWarning",
]


class XaiError(Exception):
    """Base class of every error raised by xai-core."""


class ValidationError(XaiError, ValueError):
    """An argument has the right type but a value that cannot be used (NaN, empty, out of range)."""


class ShapeError(ValidationError):
    """An array argument has the wrong number of dimensions or the wrong size along one."""


#: An unknown name's message lists every known name up to this many; past it, the closest few.
LIST_ALL_NAMES = 25

#: How many of the closest known names a long list is cut to.
CLOSEST_NAMES = 5


def closest_names(
    name: object, known: list[str] | tuple[str, ...], n: int = CLOSEST_NAMES
) -> list[str]:
    """Up to ``n`` of ``known`` closest to ``name`` (difflib's ratio, ignoring case), best first."""
    by_lower: dict[str, str] = {}
    for k in known:
        by_lower.setdefault(str(k).lower(), str(k))
    close = difflib.get_close_matches(str(name).lower(), list(by_lower), n=n, cutoff=0.6)
    return [by_lower[c] for c in close]


class UnknownNameError(XaiError, LookupError):
    """A name (explainer, backend, layer, feature, option) is not known; the message lists the known ones.

    Up to :data:`LIST_ALL_NAMES` known names are listed in full, sorted ("Available: a,
    b, c."). A longer list (a CSV's 785 columns, an image's pixels) is cut to the
    :data:`CLOSEST_NAMES` closest to ``name`` by difflib's ratio, ignoring case, or, when
    none is close, to the first few in the given order; the message says how many there are.

    Attributes
    ----------
    kind : str
    name : object
        The unknown name.
    known : list of str
        Every known name, sorted.
    closest : list of str
        The known names closest to ``name``, best first (possibly empty).
    """

    def __init__(self, kind: str, name: object, known: list[str] | tuple[str, ...]) -> None:
        self.kind = kind
        self.name = name
        given = [str(k) for k in known]
        self._given = given
        self.known = sorted(given)
        self.closest = closest_names(name, given)
        if len(given) <= LIST_ALL_NAMES:
            listing = ", ".join(self.known) if self.known else "(none)"
            message = f"Unknown {kind} {name!r}. Available: {listing}."
        elif self.closest:
            message = (
                f"Unknown {kind} {name!r}. Closest of the {len(given)} known: "
                f"{', '.join(self.closest)}."
            )
        else:
            first = ", ".join(given[:CLOSEST_NAMES])
            message = (
                f"Unknown {kind} {name!r}. None of the {len(given)} known is close; "
                f"the first {CLOSEST_NAMES}: {first}, ..."
            )
        super().__init__(message)

    def __str__(self) -> str:  # LookupError would otherwise quote the message
        return self.args[0]

    def __reduce__(self) -> tuple[Any, ...]:  # travels back from process workers whole
        return (type(self), (self.kind, self.name, self._given))


class CapabilityError(XaiError, TypeError):
    """A model or backend lacks what the operation needs (gradients on a black box, floats on an int8 device)."""


class PluginError(XaiError, RuntimeError):
    """A plugin failed to load or misbehaved; carries the plugin's name."""

    def __init__(self, plugin: str, message: str) -> None:
        self.plugin = plugin
        super().__init__(f"plugin {plugin!r}: {message}")


class DuplicateNameError(PluginError):
    """Two plugins register the same name; both are named."""

    def __init__(self, kind: str, name: str, first: str, second: str) -> None:
        self.kind = kind
        self.name = name
        self.first = first
        self.second = second
        XaiError.__init__(
            self,
            f"Duplicate {kind} name {name!r}: registered by plugin {first!r} and by plugin {second!r}.",
        )
        self.plugin = second


class ModelFormatError(XaiError, ValueError):
    """A saved model file is corrupt, not a model, or from a newer format version."""


class DataError(XaiError, ValueError):
    """A data file is missing, truncated, corrupt or fails its checksum; the message names the file and field."""


class ContractError(XaiError, AssertionError):
    """A plugin's explainer or backend breaks the contract checked by :mod:`xai_core.testing`."""


class ChunkError(XaiError, RuntimeError):
    """A chunk of rows failed twice (a raised exception, or a worker that died).

    Attributes
    ----------
    start, stop : int
        The failed rows, ``X[start:stop]``.
    """

    def __init__(self, start: int, stop: int, cause: BaseException) -> None:
        self.start = start
        self.stop = stop
        super().__init__(
            f"rows {start}..{stop - 1} (X[{start}:{stop}]) could not be explained: the chunk "
            f"failed, was retried once and failed again with {type(cause).__name__}: {cause}"
        )


class ModelOutputError(XaiError, ValueError):
    """A model returned NaN or infinite outputs (or gradients) where a method needs numbers.

    Attributes
    ----------
    method : str
        The method (or tool) that asked for the outputs.
    rows : ndarray of int64
        The offending rows: of the caller's data when the model fails on the explained rows
        themselves, else of the batch the model was given.
    n_rows : int
        How many rows the model was given in that call.
    """

    def __init__(self, method: str, rows: Any, n_rows: int, message: str) -> None:
        self.method = method
        self.rows = rows
        self.n_rows = n_rows
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:  # travels back from process workers whole
        return (type(self), (self.method, self.rows, self.n_rows, self.args[0]))


class ResourceError(ValidationError):
    """A request whose estimated work or memory is over the limits, refused before any work.

    The limits are :func:`xai_core.set_resource_limits`'s (by default half the available
    memory and 10**9 model rows); the message gives the estimate and how to change them.

    Attributes
    ----------
    estimate : object
        The :class:`xai_core.attribution.cost.Cost` that was refused.
    """

    def __init__(self, message: str, estimate: Any = None) -> None:
        self.estimate = estimate
        super().__init__(message)


class XaiWarning(UserWarning):
    """A warning from xai-core: a default was chosen for you, or a value looks suspicious."""
