"""xai-core: explanations you can run on simulated hardware, and check.

The public facade. Plugin authors write ``from xai_core import hookimpl, Explainer``.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("xai-core")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

from xai_core import errors
from xai_core.backends.base import Backend
from xai_core.errors import (
    CapabilityError,
    DataError,
    DuplicateNameError,
    ModelFormatError,
    PluginError,
    ShapeError,
    UnknownNameError,
    ValidationError,
    XaiError,
    XaiWarning,
)
from xai_core.explainer import Explainer, explain, list_explainers
from xai_core.explanation import Explanation
from xai_core.extension import CliCommand, ReportSection
from xai_core.hookspecs import hookimpl, hookspec
from xai_core.model import BlackBoxModel, Model, as_model
from xai_core.plugins import get_plugin_manager, get_registry
from xai_core.runner import ModelRunner, get_backend


def list_backends() -> list[str]:
    """Names of the registered backends, sorted."""
    return sorted(get_registry().backends)


__all__ = [
    "__version__",
    "Backend",
    "BlackBoxModel",
    "CapabilityError",
    "CliCommand",
    "DataError",
    "DuplicateNameError",
    "Explainer",
    "Explanation",
    "Model",
    "ModelFormatError",
    "ModelRunner",
    "PluginError",
    "ReportSection",
    "ShapeError",
    "UnknownNameError",
    "ValidationError",
    "XaiError",
    "XaiWarning",
    "as_model",
    "errors",
    "explain",
    "get_backend",
    "get_plugin_manager",
    "get_registry",
    "hookimpl",
    "hookspec",
    "list_backends",
    "list_explainers",
]
