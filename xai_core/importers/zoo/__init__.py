"""The model zoo: real architectures from other libraries, each checked end to end.

A :class:`ZooModel` names an architecture and how to build it (random weights, eval mode);
:func:`catalogue` lists every registered one. :func:`~xai_core.importers.zoo.checks.check_model`
runs the stages (import, forward against the source, IG, ``tpu``, ``edgetpu`` after
``xai.quantize``, ``to_tflite`` in LiteRT) and ``python -m xai_core.importers.zoo`` prints
the coverage table.

Each source of models is one module listed in :data:`SOURCES`; importing it registers its
models with :func:`register`. A source whose library is missing fails with a
:class:`~xai_core.errors.CapabilityError` naming the extra that installs it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xai_core.errors import UnknownNameError, ValidationError

__all__ = ["SOURCES", "ZooModel", "catalogue", "families", "register"]

#: Each family and the module that registers its models (imported on first use). A new
#: source of models (transformers, keras.applications) adds one line here.
SOURCES: dict[str, str] = {
    "torchvision": "xai_core.importers.zoo.torchvision_models",
    "timm": "xai_core.importers.zoo.timm_models",
    "transformers": "xai_core.importers.zoo.transformers_models",
}


@dataclass(frozen=True)
class ZooModel:
    """One architecture of the zoo.

    Attributes
    ----------
    family : str
        The library's family (``"torchvision"``, ``"timm"``, ...), for ``--family``.
    name : str
        The architecture (``"resnet18"``); unique within its family.
    source : str
        The framework ``build()`` returns a model of: ``"torch"`` or ``"keras"``.
    build : callable
        ``build()`` returns the framework's model with random weights, in eval mode.
    input_shape : tuple of int
        One sample's shape (``(3, 64, 64)``: NCHW for torch, NHWC for keras).
    slow : bool
        Whether checking it takes long (many parameters or a large input).
    """

    family: str
    name: str
    source: str
    build: Callable[[], Any]
    input_shape: tuple[int, ...]
    slow: bool = False

    @property
    def key(self) -> str:
        """``family/name``."""
        return f"{self.family}/{self.name}"


_REGISTRY: dict[str, ZooModel] = {}
_LOADED: set[str] = set()


def register(
    family: str,
    name: str,
    source: str,
    build: Callable[[], Any],
    input_shape: tuple[int, ...],
    *,
    slow: bool = False,
) -> ZooModel:
    """Add one architecture to the zoo and return its entry.

    Raises
    ------
    ValidationError
        An unknown ``source`` or an empty ``input_shape``.
        Also when ``family/name`` is registered already.
    """
    if source not in ("torch", "keras"):
        raise ValidationError(f"source must be 'torch' or 'keras'; got {source!r}.")
    shape = tuple(int(d) for d in input_shape)
    if not shape or any(d <= 0 for d in shape):
        raise ValidationError(f"input_shape must be positive sizes; got {input_shape!r}.")
    entry = ZooModel(family, name, source, build, shape, bool(slow))
    if entry.key in _REGISTRY:
        raise ValidationError(f"zoo model {entry.key!r} is registered already.")
    _REGISTRY[entry.key] = entry
    return entry


def _load(module: str) -> None:
    if module not in _LOADED:
        importlib.import_module(module)
        _LOADED.add(module)


def catalogue(family: str | None = None, *, slow: bool = True) -> list[ZooModel]:
    """Every registered architecture, in registration order.

    Parameters
    ----------
    family : str, optional
        Only this family's (a key of :data:`SOURCES`); only its module is imported.
    slow : bool, default=True
        ``False`` leaves out the entries marked slow.

    Raises
    ------
    CapabilityError
        A source whose library is not installed (naming the extra).
    UnknownNameError
        An unknown ``family``.
    """
    if family is not None and family not in SOURCES:
        raise UnknownNameError("zoo family", family, list(SOURCES))
    for name, module in SOURCES.items():
        if family is None or name == family:
            _load(module)
    entries = [e for e in _REGISTRY.values() if family is None or e.family == family]
    return [e for e in entries if slow or not e.slow]


def families() -> list[str]:
    """The families the zoo has a source module for, sorted."""
    return sorted(SOURCES)
