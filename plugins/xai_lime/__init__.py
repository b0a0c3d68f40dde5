"""LIME attributions through the lime library: the first-party ``lime`` explainer plugin.

``xai.explain(model, X, method="lime", background=X_train)`` explains table rows;
``xai.explain(model, images, method="lime")`` explains images by superpixels. See
:class:`LimeExplainer` for the options and docs/explainers/lime.md for the method.
"""

from __future__ import annotations

from xai_core import hookimpl
from xai_lime.explainer import LimeExplainer

__all__ = ["LimeExplainer", "xai_register_explainers"]


@hookimpl
def xai_register_explainers():
    """Register :class:`LimeExplainer` as ``method="lime"``."""
    return [LimeExplainer]
