"""SHAP attributions through the shap library: the first-party ``shap`` explainer plugin.

Registers :class:`ShapExplainer` as the ``shap`` method of :func:`xai_core.explain`:
shap's Exact, Permutation, Tree and Linear explainers, and a vectorised Kernel SHAP, on
any model the core runs (native networks on any backend, estimators, functions), with
image patches or feature groups as players.
"""

from __future__ import annotations

from xai_core import hookimpl
from xai_shap.explainer import ShapExplainer
from xai_shap.kernel import shapley_kernel_design, solve_constrained_wls

__all__ = [
    "ShapExplainer",
    "shapley_kernel_design",
    "solve_constrained_wls",
    "xai_register_explainers",
]


@hookimpl
def xai_register_explainers():
    """The ``shap`` explainer."""
    return [ShapExplainer]
