"""xai-core: explanations you can run on simulated hardware, and check.

The public facade. Plugin authors write ``from xai_core import hookimpl, Explainer``.
Importing it is cheap: errors, hook markers and records are imported here, every other
name on first use (``_EXPORTS`` lists where each lives; add a new public name there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xai_core import _moved, errors
from xai_core.errors import (
    CapabilityError,
    ChunkError,
    DataError,
    DuplicateNameError,
    ModelFormatError,
    ModelOutputError,
    PluginError,
    ResourceError,
    ShapeError,
    UnknownNameError,
    ValidationError,
    XaiError,
    XaiWarning,
)
from xai_core.lazy import lazy_exports
from xai_core.plugin.hookspecs import hookimpl, hookspec
from xai_core.plugin.records import CliCommand, ReportSection, Tool

if TYPE_CHECKING:  # what the names below resolve to, for readers and type checkers
    from xai_core import nn, text
    from xai_core.attribution.cost import (
        Cost,
        get_resource_limits,
        resource_limits,
        set_resource_limits,
    )
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
    from xai_core.compare.quality import complexity, sensitivity_max, sparseness
    from xai_core.compare.randomisation import Randomisation, model_parameter_randomisation
    from xai_core.compare.road import ROAD, road
    from xai_core.importers import (
        from_keras,
        from_onnx,
        from_teachable_machine,
        from_tflite,
        from_torch,
        import_model,
        to_teachable_machine,
        to_tflite,
    )
    from xai_core.int8.quantize import quantize
    from xai_core.model.base import BlackBoxModel, Model, as_model
    from xai_core.model.runner import ModelRunner, get_backend
    from xai_core.nn import from_sklearn, load_model
    from xai_core.plugin.manager import get_plugin_manager, get_registry
    from xai_core.report import Report

#: Module -> the public names it defines. Importing ``xai_core`` imports none of these modules
#: (nor numpy, scipy, pandas, Jinja2 ...); the first use of a name imports its module.
_EXPORTS: dict[str, list[str]] = {
    "attribution.cost": ["Cost", "get_resource_limits", "resource_limits", "set_resource_limits"],
    "attribution.explainer": ["Explainer", "explain", "list_explainers"],
    "attribution.explanation": ["Explanation"],
    "backends.base": ["Backend"],
    "compare.agreement": [
        "BackendComparison",
        "MethodComparison",
        "compare_backends",
        "compare_methods",
    ],
    "compare.faithfulness": ["Faithfulness", "faithfulness"],
    "compare.quality": ["complexity", "sensitivity_max", "sparseness"],
    "compare.randomisation": ["Randomisation", "model_parameter_randomisation"],
    "compare.road": ["ROAD", "road"],
    "importers.direct": ["import_model"],
    "importers.keras_import": ["from_keras"],
    "importers.onnx_import": ["from_onnx"],
    "importers.teachable": ["from_teachable_machine", "to_teachable_machine"],
    "importers.tflite": ["from_tflite", "to_tflite"],
    "importers.torch_import": ["from_torch"],
    "int8.quantize": ["quantize"],
    "model.base": ["BlackBoxModel", "Model", "as_model"],
    "model.runner": ["ModelRunner", "get_backend"],
    "nn": ["from_sklearn", "load_model"],
    "plugin.manager": ["get_plugin_manager", "get_registry"],
    "report": ["Report"],
}

#: Sub-packages reachable as attributes (``xai.nn``, ``xai.testing``) without importing them first.
_SUBMODULES = (
    "nn",
    "testing",
    "backends",
    "model",
    "attribution",
    "compare",
    "report",
    "importers",
    "text",
)

_lazy_getattr, __dir__, _ = lazy_exports(__name__, _EXPORTS, submodules=_SUBMODULES)


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (PEP 562), then keep the name here."""
    if name != "__version__":
        return _lazy_getattr(name)
    from importlib.metadata import PackageNotFoundError, version

    try:
        globals()[name] = version("xai-core")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        globals()[name] = "0.0.0"
    return globals()[name]


_moved.install()


def tool(name: str):
    """The tool a plugin registered as ``name`` (see :func:`xai_core.plugin.hookspecs.xai_register_tools`)."""
    from xai_core.plugin.manager import get_registry

    return get_registry().tool(name)


class _ToolEntry:
    """A facade name for a registered tool: calls it, and shows its signature and docstring.

    ``xai.what_if(...)`` is ``xai.tool("what_if")(...)``. The tool is looked up when it is
    called or inspected (``inspect.signature``, ``help()``, ``?`` in a notebook), never at
    import; when no plugin registers it, the signature is ``(*args, **kwargs)`` and the
    docstring the one line below.
    """

    def __init__(self, name: str, summary: str) -> None:
        self.__name__ = self.__qualname__ = name
        self._summary = summary

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return tool(self.__name__)(*args, **kwargs)

    def __get__(self, instance: Any, owner: Any = None) -> _ToolEntry:
        """Stays itself as a class attribute; it also makes pydoc document it as a function."""
        return self

    def _function(self) -> Any:
        """The registered tool's function, or None when no plugin registers it."""
        try:
            entry = tool(self.__name__)
        except XaiError:
            return None
        return getattr(entry, "function", entry)

    @property
    def __signature__(self) -> Any:
        import inspect

        function = self._function()
        try:
            if function is not None:
                return inspect.signature(function)
        except (TypeError, ValueError):  # a callable without a signature
            pass
        return inspect.signature(self.__call__)  # (*args, **kwargs)

    @property
    def __doc__(self) -> str:  # type: ignore[override]
        function = self._function()
        doc = getattr(function, "__doc__", None)
        return doc if isinstance(doc, str) and doc.strip() else self._summary

    def __repr__(self) -> str:
        return f"<xai_core tool {self.__name__!r}>"


what_if = _ToolEntry(
    "what_if",
    "Edit datapoints, find counterfactuals, probe the model: the ``what_if`` tool's entry point.",
)
project = _ToolEntry(
    "project",
    "Project embeddings (PCA, t-SNE, UMAP), search and export them: the ``project`` tool's entry point.",
)
playground_view = _ToolEntry(
    "playground_view",
    "A 2-D network's decision surface, neuron surfaces, links and losses: the ``playground_view`` tool.",
)
playground_app = _ToolEntry(
    "playground_app",
    "The Playground in a notebook (play, pause, step, reset and its knobs): the ``playground_app`` tool.",
)
teachable_trainer = _ToolEntry(
    "teachable_trainer",
    "Teachable Machine's loop: train on class folders, score per class, preview, export .tflite: "
    "the ``teachable_trainer`` tool.",
)

permutation_importance = _ToolEntry(
    "permutation_importance",
    "The drop in a score when each feature is shuffled: the ``permutation_importance`` tool.",
)
ale = _ToolEntry(
    "ale",
    "Accumulated local effects of numeric features over quantile bins: the ``ale`` tool.",
)


def list_backends() -> list[str]:
    """Names of the registered backends, sorted."""
    from xai_core.plugin.manager import get_registry

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
    "ROAD",
    "Randomisation",
    "complexity",
    "model_parameter_randomisation",
    "road",
    "sensitivity_max",
    "sparseness",
    "BlackBoxModel",
    "CapabilityError",
    "ChunkError",
    "CliCommand",
    "Cost",
    "DataError",
    "DuplicateNameError",
    "Explainer",
    "Explanation",
    "Model",
    "ModelFormatError",
    "ModelOutputError",
    "ModelRunner",
    "PluginError",
    "Report",
    "ReportSection",
    "ResourceError",
    "ShapeError",
    "Tool",
    "UnknownNameError",
    "ValidationError",
    "XaiError",
    "XaiWarning",
    "ale",
    "as_model",
    "errors",
    "explain",
    "from_keras",
    "from_onnx",
    "from_sklearn",
    "from_teachable_machine",
    "from_tflite",
    "from_torch",
    "import_model",
    "to_teachable_machine",
    "to_tflite",
    "get_backend",
    "get_plugin_manager",
    "get_registry",
    "get_resource_limits",
    "hookimpl",
    "hookspec",
    "lazy_exports",
    "list_backends",
    "list_explainers",
    "playground_app",
    "permutation_importance",
    "playground_view",
    "project",
    "resource_limits",
    "set_resource_limits",
    "teachable_trainer",
    "tool",
    "what_if",
    "load_model",
    "nn",
    "quantize",
    "text",
]
