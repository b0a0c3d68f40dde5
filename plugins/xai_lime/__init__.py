"""LIME attributions through the lime library: the first-party ``lime`` explainer plugin.

``xai.explain(model, X, method="lime", training_data=X_train)`` explains table rows;
``xai.explain(model, images, method="lime")`` explains images by superpixels. See
:class:`LimeExplainer` for the options and docs/explainers/lime.md for the method.
"""

from __future__ import annotations

import lazy_loader

from xai_core import hookimpl

# The lime library (and scikit-learn under it) is imported when the explainer is first
# needed, not when the plugin loads: ``xai --help`` loads every plugin.
__getattr__, _, __all__ = lazy_loader.attach(
    __name__, submod_attrs={"explainer": ["LimeExplainer"]}
)
__all__ += ["xai_register_explainers"]


def __dir__() -> list[str]:
    # The hooks must be listed: pluggy finds them through dir().
    return sorted({*globals(), *__all__})


@hookimpl
def xai_register_explainers():
    from xai_lime.explainer import LimeExplainer

    return [LimeExplainer]
