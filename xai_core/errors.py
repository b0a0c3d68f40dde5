"""Errors and warnings raised by xai-core.

Every error subclasses :class:`XaiError` *and* the builtin a caller would expect, so both
``except xai.ShapeError`` and ``except ValueError`` work.
"""

from __future__ import annotations

from typing import Any

__all__ = [
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


class UnknownNameError(XaiError, LookupError):
    """A name (explainer, backend, layer, feature, option) is not known; the message lists the known ones."""

    def __init__(self, kind: str, name: object, known: list[str] | tuple[str, ...]) -> None:
        self.kind = kind
        self.name = name
        self.known = sorted(str(k) for k in known)
        listing = ", ".join(self.known) if self.known else "(none)"
        super().__init__(f"Unknown {kind} {name!r}. Available: {listing}.")

    def __str__(self) -> str:  # LookupError would otherwise quote the message
        return self.args[0]


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
