"""xai-core: explanations you can run on simulated hardware, and check.

The public facade. Plugin authors write ``from xai_core import hookimpl, Explainer``.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("xai-core")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

from xai_core import errors, nn
from xai_core.agreement import (
    BackendComparison,
    MethodComparison,
    compare_backends,
    compare_methods,
)
from xai_core.backends.base import Backend
from xai_core.errors import (
    CapabilityError,
    ChunkError,
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
from xai_core.extension import CliCommand, ReportSection, Tool
from xai_core.faithfulness import Faithfulness, faithfulness
from xai_core.hookspecs import hookimpl, hookspec
from xai_core.model import BlackBoxModel, Model, as_model
from xai_core.nn import from_sklearn, load_model
from xai_core.plugins import get_plugin_manager, get_registry
from xai_core.quantize import quantize
from xai_core.report import Report
from xai_core.runner import ModelRunner, get_backend


def tool(name: str):
    """The tool a plugin registered as ``name`` (see :func:`xai_core.hookspecs.xai_register_tools`)."""
    return get_registry().tool(name)


def what_if(*args, **kwargs):
    """Edit datapoints, find counterfactuals, probe the model: the ``what_if`` tool's entry point."""
    return tool("what_if")(*args, **kwargs)


def project(*args, **kwargs):
    """Project embeddings (PCA, t-SNE, UMAP), search and export them: the ``project`` tool's entry point."""
    return tool("project")(*args, **kwargs)


def list_backends() -> list[str]:
    """Names of the registered backends, sorted."""
    return sorted(get_registry().backends)


__all__ = [
    "__version__",
    "Backend",
    "BackendComparison",
    "Faithfulness",
    "MethodComparison",
    "compare_backends",
    "compare_methods",
    "faithfulness",
    "BlackBoxModel",
    "CapabilityError",
    "ChunkError",
    "CliCommand",
    "DataError",
    "DuplicateNameError",
    "Explainer",
    "Explanation",
    "Model",
    "ModelFormatError",
    "ModelRunner",
    "PluginError",
    "Report",
    "ReportSection",
    "ShapeError",
    "Tool",
    "UnknownNameError",
    "ValidationError",
    "XaiError",
    "XaiWarning",
    "as_model",
    "errors",
    "explain",
    "from_sklearn",
    "get_backend",
    "get_plugin_manager",
    "get_registry",
    "hookimpl",
    "hookspec",
    "list_backends",
    "list_explainers",
    "project",
    "tool",
    "what_if",
    "load_model",
    "nn",
    "quantize",
]
