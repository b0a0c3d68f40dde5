"""Optional dependencies: import one on first use, or say which extra installs it.

>>> onnx = require("onnx", extra="import", need="reading ONNX files")
"""

from __future__ import annotations

import importlib
from types import ModuleType

from xai_core.errors import CapabilityError

__all__ = ["require"]


def require(module: str, *, extra: str, need: str) -> ModuleType:
    """``module`` imported, or a :class:`CapabilityError` naming what needs it and the extra.

    Parameters
    ----------
    module : str
        The module to import (``"onnx"``, ``"matplotlib"``, ``"ai_edge_litert.interpreter"``).
    extra : str
        The ``xai-core`` extra that installs it (``pip install 'xai-core[<extra>]'``).
    need : str
        What needs it, for the message (``"plots"``, ``"reading .tflite files"``).
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - CI installs every extra
        raise CapabilityError(
            f"{need} needs the {module.split('.')[0]!r} package: pip install 'xai-core[{extra}]'."
        ) from exc
