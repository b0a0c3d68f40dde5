"""The ONNX operators ``from_onnx`` converts: one converter per (operator, opset range).

A converter is a function ``(builder, node) -> None`` that adds the native layers an ONNX
node computes (or folds it, when it works on constants and shapes only). It is registered
for the operator's name and the range of opset versions whose semantics it implements,
as onnx2torch keys its converters::

    @converter("HardSigmoid", since=6, limits="alpha and beta attributes")
    def hard_sigmoid(b: Builder, node: IRNode) -> None:
        ...

:func:`find_converter` looks a node up by the operator and the model's opset for the
default domain; the supported-operator table in ``docs/operators.md`` is generated from
this registry (:func:`operator_table`), so it cannot drift from the code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xai_core.errors import DuplicateNameError

__all__ = ["Converter", "converter", "find_converter", "operator_table", "register"]


@dataclass(frozen=True)
class Converter:
    """One registered converter.

    Attributes
    ----------
    op : str
        The ONNX operator (``"Conv"``).
    since, until : int, int or None
        The opset versions it implements, ``since <= opset <= until`` (None: no end).
    fn : callable
        ``fn(builder, node)``.
    folds : bool
        Whether it works on constants and shapes only (folded while importing, never run).
        A node of any other converter whose inputs are all constants is folded too, by
        :mod:`xai_core.importers.onnx_fold`; such a converter sees run-time inputs.
    limits : str
        What it does not support (attributes, cases), for the docs.
    """

    op: str
    since: int
    until: int | None
    fn: Callable[..., None]
    folds: bool = False
    limits: str = ""

    def covers(self, opset: int) -> bool:
        """Whether ``opset`` is in this converter's range."""
        return self.since <= opset and (self.until is None or opset <= self.until)

    @property
    def versions(self) -> str:
        """The range as text: ``"13+"``, ``"1-12"``."""
        return f"{self.since}+" if self.until is None else f"{self.since}-{self.until}"


_REGISTRY: dict[str, list[Converter]] = {}


def register(
    op: str,
    fn: Callable[..., None],
    *,
    since: int = 1,
    until: int | None = None,
    folds: bool = False,
    limits: str = "",
) -> Callable[..., None]:
    """Register ``fn`` as the converter of ``op`` for opsets ``since`` to ``until``.

    Raises
    ------
    DuplicateNameError
        When another converter of ``op`` already covers one of those opsets.
    """
    new = Converter(op, since, until, fn, folds, limits)
    for old in _REGISTRY.get(op, []):
        if old.covers(since) or new.covers(old.since):
            raise DuplicateNameError(
                "ONNX operator converter",
                op,
                f"{old.fn.__module__}.{old.fn.__qualname__} (opsets {old.versions})",
                f"{fn.__module__}.{fn.__qualname__} (opsets {new.versions})",
            )
    _REGISTRY.setdefault(op, []).append(new)
    _REGISTRY[op].sort(key=lambda c: c.since)
    return fn


def converter(
    op: str,
    *,
    since: int = 1,
    until: int | None = None,
    folds: bool = False,
    limits: str = "",
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Decorator form of :func:`register`."""

    def decorate(fn: Callable[..., None]) -> Callable[..., None]:
        return register(op, fn, since=since, until=until, folds=folds, limits=limits)

    return decorate


def _load() -> None:
    """Import the modules that register the built-in converters."""
    from xai_core.importers import (  # noqa: F401 - each registers its converters on import
        onnx_ops,
        onnx_ops_attention,
        onnx_ops_einsum,
        onnx_ops_elementwise,
        onnx_ops_math,
        onnx_ops_norm,
        onnx_ops_recurrent,
        onnx_ops_resize,
        onnx_ops_sdpa,
        onnx_ops_shape,
        onnx_ops_tensor,
    )


def find_converter(op: str, opset: int | None) -> Converter | None:
    """The converter of ``op`` at ``opset`` (None: the newest), or None when there is none."""
    _load()
    candidates = _REGISTRY.get(op, [])
    if opset is None:
        return candidates[-1] if candidates else None
    return next((c for c in candidates if c.covers(opset)), None)


def supported_ops(opset: int | None = None) -> list[str]:
    """The operators with a converter (at ``opset``, or at any opset), sorted."""
    _load()
    return sorted(
        op
        for op, convs in _REGISTRY.items()
        if opset is None or any(c.covers(opset) for c in convs)
    )


def operator_table() -> list[dict[str, Any]]:
    """One row per converter, sorted by operator: op, opsets, kind, limits, module."""
    _load()
    return [
        {
            "op": c.op,
            "opsets": c.versions,
            "kind": "folded (constants and shapes)" if c.folds else "runs on the backend",
            "limits": c.limits,
            "module": c.fn.__module__,
        }
        for op in sorted(_REGISTRY)
        for c in _REGISTRY[op]
    ]
