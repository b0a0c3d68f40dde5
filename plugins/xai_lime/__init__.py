"""LIME attributions through the lime library: the first-party ``lime`` explainer plugin.

``xai.explain(model, X, method="lime", background=X_train)`` explains table rows;
``xai.explain(model, images, method="lime")`` explains images by superpixels;
``xai.explain(model, texts, method="lime", tokenizer=tok)`` explains texts by words or
tokens removed, as lime's ``LimeTextExplainer`` (:mod:`xai_lime.text`). See
:class:`LimeExplainer` for the options and docs/explainers/lime.md for the method.
"""

from __future__ import annotations

import xai_core
from xai_core import hookimpl

# The lime library (and scikit-learn under it) is imported when the explainer is first needed.
__getattr__, __dir__, __all__ = xai_core.lazy_exports(
    __name__, {"explainer": ["LimeExplainer"]}, eager=["xai_register_explainers"]
)


@hookimpl
def xai_register_explainers():
    from xai_lime.explainer import LimeExplainer

    return [LimeExplainer]
