"""Integrated gradients and the gradient family: the first-party ``ig`` explainer plugin.

Registers four methods of :func:`xai_core.explain`, all computed by the model runner's
own backward pass on its backend:

- ``ig``: :class:`IntegratedGradients`, with five quadrature rules, seven kinds of
  baseline (expected gradients among them), a per-row convergence delta and adaptive steps;
- ``saliency``: :class:`Saliency`, the gradient;
- ``gradient_x_input``: :class:`GradientXInput` (also ``input_x_gradient``, Captum's name);
- ``smoothgrad``: :class:`SmoothGrad`, any of the above averaged over noisy copies;
- the CNN family (:mod:`xai_ig.cam`): ``gradcam``, ``guided_backprop``, ``deconvolution``,
  ``guided_gradcam``;
- layer and neuron attribution (:mod:`xai_ig.layer`): ``layer_ig``, ``layer_conductance``,
  ``internal_influence``, ``neuron_conductance``;
- the reference family (:mod:`xai_ig.reference`): ``deeplift``, ``deeplift_shap``,
  ``gradient_shap``, ``lrp``.
"""

from __future__ import annotations

import xai_core
from xai_core import hookimpl

# The methods' modules are imported when they are first needed.
__getattr__, __dir__, __all__ = xai_core.lazy_exports(
    __name__,
    {
        "_integration": ["RULES", "integration_nodes"],
        "cam": ["Deconvolution", "GradCam", "GuidedBackprop", "GuidedGradCam"],
        "layer": [
            "InternalInfluence",
            "LayerConductance",
            "LayerIntegratedGradients",
            "NeuronConductance",
        ],
        "gradients": ["GradientXInput", "InputXGradient", "Saliency"],
        "reference": ["DeepLift", "DeepLiftShap", "GradientShap", "LRP", "gradient_shap_draws"],
        "ig": ["IntegratedGradients"],
        "smoothgrad": ["SmoothGrad"],
    },
    eager=["xai_register_explainers"],
)


@hookimpl
def xai_register_explainers():
    from xai_ig.cam import Deconvolution, GradCam, GuidedBackprop, GuidedGradCam
    from xai_ig.gradients import GradientXInput, InputXGradient, Saliency
    from xai_ig.ig import IntegratedGradients
    from xai_ig.layer import (
        InternalInfluence,
        LayerConductance,
        LayerIntegratedGradients,
        NeuronConductance,
    )
    from xai_ig.reference import LRP, DeepLift, DeepLiftShap, GradientShap
    from xai_ig.smoothgrad import SmoothGrad

    return [
        IntegratedGradients,
        Saliency,
        GradientXInput,
        SmoothGrad,
        GradCam,
        GuidedBackprop,
        Deconvolution,
        GuidedGradCam,
        LayerIntegratedGradients,
        LayerConductance,
        InternalInfluence,
        NeuronConductance,
        InputXGradient,
        DeepLift,
        DeepLiftShap,
        GradientShap,
        LRP,
    ]
