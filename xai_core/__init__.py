"""xai-core: explanations you can run on simulated hardware, and check.

The public facade. Plugin authors write ``from xai_core import hookimpl, Explainer``.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("xai-core")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

from xai_core import _moved, errors, importers, nn
from xai_core.attribution.explainer import Explainer, explain, list_explainers
from xai_core.attribution.explanation import Explanation
from xai_core.backends.base import Backend
from xai_core.compare.agreement import (
    BackendComparison,
    MethodComparison,
    compare_backends,
    compare_methods,
)
from xai_core.compare.faithfulness import Faithfulness, faithfulness
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
from xai_core.importers import (
    from_keras,
    from_onnx,
    from_teachable_machine,
    from_tflite,
    from_torch,
    to_teachable_machine,
    to_tflite,
)
from xai_core.model.base import BlackBoxModel, Model, as_model
from xai_core.model.runner import ModelRunner, get_backend
from xai_core.nn import from_sklearn, load_model
from xai_core.nn.quantize import quantize
from xai_core.plugin.hookspecs import hookimpl, hookspec
from xai_core.plugin.manager import get_plugin_manager, get_registry
from xai_core.plugin.records import CliCommand, ReportSection, Tool
from xai_core.report import Report

_moved.install()


def tool(name: str):
    """The tool a plugin registered as ``name`` (see :func:`xai_core.plugin.hookspecs.xai_register_tools`)."""
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
    "from_keras",
    "from_onnx",
    "from_sklearn",
    "from_teachable_machine",
    "from_tflite",
    "from_torch",
    "to_teachable_machine",
    "to_tflite",
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
    "importers",
    "nn",
    "quantize",
]
