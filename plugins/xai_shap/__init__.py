"""SHAP attributions through the shap library: the first-party ``shap`` explainer plugin.

Registers :class:`ShapExplainer` as the ``shap`` method of :func:`xai_core.explain`:
shap's Exact, Permutation, Tree and Linear explainers, and a vectorised Kernel SHAP, on
any model the core runs (native networks on any backend, estimators, functions), with
image patches or feature groups as players; shap's Partition explainer, vectorised, with
its Image masker (blur, constants, inpainting) and feature clusterings of tables
(:mod:`xai_shap.partition`); and on texts, shap's Partition explainer with its Text
masker (:mod:`xai_shap.text`).
"""

from __future__ import annotations

import xai_core
from xai_core import hookimpl

# shap, and the modules that use it, are imported when the explainer is first needed.
__getattr__, __dir__, __all__ = xai_core.lazy_exports(
    __name__,
    {"explainer": ["ShapExplainer"], "kernel": ["shapley_kernel_design", "solve_constrained_wls"]},
    eager=["xai_register_explainers"],
)


@hookimpl
def xai_register_explainers():
    from xai_shap.explainer import ShapExplainer

    return [ShapExplainer]
