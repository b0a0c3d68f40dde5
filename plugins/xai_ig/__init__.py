"""Integrated gradients and the gradient family: the first-party ``ig`` explainer plugin.

Registers four methods of :func:`xai_core.explain`, all computed by the model runner's
own backward pass on its backend:

- ``ig``: :class:`IntegratedGradients`, with five quadrature rules, seven kinds of
  baseline (expected gradients among them), a per-row convergence delta and adaptive steps;
- ``saliency``: :class:`Saliency`, the gradient;
- ``gradient_x_input``: :class:`GradientXInput`;
- ``smoothgrad``: :class:`SmoothGrad`, any of the above averaged over noisy copies.
"""

from __future__ import annotations

from xai_core import hookimpl
from xai_ig._integration import RULES, integration_nodes
from xai_ig.gradients import GradientXInput, Saliency
from xai_ig.ig import IntegratedGradients
from xai_ig.smoothgrad import SmoothGrad

__all__ = [
    "RULES",
    "GradientXInput",
    "IntegratedGradients",
    "Saliency",
    "SmoothGrad",
    "integration_nodes",
    "xai_register_explainers",
]


@hookimpl
def xai_register_explainers():
    """The gradient-based explainers: ig, saliency, gradient_x_input, smoothgrad."""
    return [IntegratedGradients, Saliency, GradientXInput, SmoothGrad]
