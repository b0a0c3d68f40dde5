"""Modules that moved when the core was grouped by concern; the old paths work until 0.3.

``import xai_core.runner`` still gives the module now at ``xai_core.model.runner`` (the same
module object), with a :class:`DeprecationWarning` naming the new path and the version that
removes the old one (:data:`REMOVAL_VERSION`). One finder serves every old name.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings

#: The release in which the old paths stop working.
REMOVAL_VERSION = "0.3"

#: Old module path -> new module path.
MOVED: dict[str, str] = {
    "xai_core.hookspecs": "xai_core.plugin.hookspecs",
    "xai_core.extension": "xai_core.plugin.records",
    "xai_core.plugins": "xai_core.plugin.manager",
    "xai_core.runner": "xai_core.model.runner",
    "xai_core.explainer": "xai_core.attribution.explainer",
    "xai_core.explanation": "xai_core.attribution.explanation",
    "xai_core.parallel": "xai_core.attribution.parallel",
    "xai_core.agreement": "xai_core.compare.agreement",
    "xai_core.metrics": "xai_core.compare.metrics",
    "xai_core.report.analysis": "xai_core.compare.sections",
    "xai_core.cli_commands": "xai_core.cli.commands",
    # the convolution kernels, below both the layers and the backends
    "xai_core.nn.conv_ops": "xai_core.kernels.conv_ops",
    "xai_core.nn.conv_taps": "xai_core.kernels.conv_taps",
    "xai_core.nn.conv_forward": "xai_core.kernels.conv_forward",
    "xai_core.nn.depthwise_kernel": "xai_core.kernels.depthwise",
    "xai_core.nn.epilogue": "xai_core.kernels.epilogue",
    "xai_core.nn.scratch": "xai_core.kernels.scratch",
    # the one int8 package: graph, runtime, kernels, quantisation
    "xai_core.nn.quantize": "xai_core.int8.quantize",
    "xai_core.nn.quantized": "xai_core.int8.quantized",
    "xai_core.nn.int8_graph": "xai_core.int8.convert",
    "xai_core.importers.tflite.model": "xai_core.int8.model",
    "xai_core.importers.tflite.kernels_int8": "xai_core.int8.kernels_int8",
    "xai_core.importers.tflite.kernels_float": "xai_core.int8.kernels_float",
    "xai_core.importers.tflite.fixedpoint": "xai_core.int8.fixedpoint",
    "xai_core.importers.tflite.softmax": "xai_core.int8.softmax",
    "xai_core.importers.tflite.edgetpu_map": "xai_core.int8.edgetpu_map",
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old module path and hands back the module at its new path."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        new = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new}; import it from there (or from xai_core). "
            f"The old path goes in xai-core {REMOVAL_VERSION}.",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new)
        spec.loader_state = module.__spec__  # the import system sets __spec__ to this spec
        return module

    def exec_module(self, module):
        """The module is already executed at its new path: it only gets its own spec back."""
        alias = module.__spec__
        if alias is not None and alias.loader is self:
            module.__spec__ = alias.loader_state


def install() -> None:
    """Put the finder on :data:`sys.meta_path` once."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.append(_Alias())
