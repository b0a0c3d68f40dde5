"""Perturbation methods: the first-party ``perturb`` explainer plugin.

Registers three methods of :func:`xai_core.explain` that need only the model's
predictions, so they run on every backend (the int8 Edge TPU included) and on black boxes:

- ``occlusion``: :class:`Occlusion`, sliding windows set to a baseline (Captum's
  ``Occlusion``);
- ``feature_ablation``: :class:`FeatureAblation`, each feature or group of features set
  to a baseline (Captum's ``FeatureAblation``, with ``feature_mask``);
- ``feature_permutation``: :class:`FeaturePermutation`, each feature or group shuffled
  across the rows (Captum's ``FeaturePermutation``).
"""

from __future__ import annotations

import xai_core
from xai_core import hookimpl

__getattr__, __dir__, __all__ = xai_core.lazy_exports(
    __name__,
    {
        "ablation": ["FeatureAblation", "Occlusion"],
        "permutation": ["FeaturePermutation"],
    },
    eager=["xai_register_explainers"],
)


@hookimpl
def xai_register_explainers():
    from xai_perturb.ablation import FeatureAblation, Occlusion
    from xai_perturb.permutation import FeaturePermutation

    return [Occlusion, FeatureAblation, FeaturePermutation]
