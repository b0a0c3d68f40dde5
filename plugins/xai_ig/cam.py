"""The CNN family, as Captum computes it: Grad-CAM, guided backpropagation, deconvolution
and guided Grad-CAM.

Grad-CAM reads one hidden layer's activations and gradients from one recorded pass per
chunk (:meth:`xai_core.ModelRunner.layer_gradient_validated`); guided backpropagation and
deconvolution are gradients with ReLU's backward rule replaced
(``relu_rule="guided"`` / ``"deconvnet"`` of :meth:`xai_core.ModelRunner.gradient_validated`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from xai_core import Cost, Explainer, Explanation, ModelRunner
from xai_core.attribution.options import Bool, Choice, Int, TypeOf
from xai_ig._layers import (
    INTERPOLATE_MODES,
    default_layer,
    interpolate,
    layer_rows,
    path_chunk,
)
from xai_ig.cost import gradient_cost

__all__ = ["GradCam", "GuidedBackprop", "Deconvolution", "GuidedGradCam"]

#: The ``layer`` option: a node by name or index, as ``net.summary()`` lists them.
LAYER = TypeOf((str, int, np.integer), "a layer name or index (as net.summary() lists them)")


class _CnnMethod(Explainer):
    """Shared options and checks of the family."""

    requires: ClassVar[frozenset[str]] = frozenset({"predict", "gradient", "activations"})
    constraints: ClassVar[dict] = {"internal_batch_size": Int(1, allow_none=True)}
    internal_batch_size: int | None
    progress: bool | None

    def estimate_cost(self, runner: ModelRunner, X: np.ndarray) -> Cost | None:
        """``n`` outputs and ``n`` gradients; the ``layer`` is checked here, before any model call."""
        self._value(runner)
        return gradient_cost(runner, X)

    def _value(self, runner: ModelRunner) -> str | None:
        """The layer's value by name (None for the methods without a layer)."""
        if not hasattr(self, "layer"):
            runner.layer_value(0)  # refuses models without layers up front
            return None
        layer = default_layer(runner) if self.layer is None else self.layer
        return runner.layer_value(layer, bool(self.attribute_to_layer_input))

    def _cam(
        self, runner: ModelRunner, X: np.ndarray, target: np.ndarray, relu: bool
    ) -> tuple[np.ndarray, np.ndarray, str]:
        """Captum's ``LayerGradCam`` map of shape (n_samples, 1, *layer spatial shape), the
        outputs of shape (n_samples,) and the layer's value name."""
        value = self._value(runner)
        chunk = path_chunk(runner, self.internal_batch_size, X)
        acts, grads, output = layer_rows(
            runner, X, target, value, chunk=chunk, progress=self.progress, desc=self.name
        )
        weights = grads.mean(axis=tuple(range(2, grads.ndim)), keepdims=True)
        cam = (weights * acts).sum(axis=1, keepdims=True)
        if relu:
            cam = np.maximum(cam, 0)
        return cam, output, value

    def _upsampled(self, cam: np.ndarray, X: np.ndarray) -> np.ndarray:
        """``cam`` upsampled to the input's spatial axes (those after its first, Captum's
        ``inputs.shape[2:]``) and repeated over its channels: shape (n_samples, *input_shape)."""
        up = interpolate(cam, X.shape[2:], self.interpolate_mode)
        if up.ndim < X.ndim:  # a dense layer's map: one number per row
            up = up.reshape(up.shape + (1,) * (X.ndim - up.ndim))
        return np.broadcast_to(up, X.shape)

    def _relu_gradient(
        self, runner: ModelRunner, X: np.ndarray, target: np.ndarray, rule: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """The input gradient under ReLU rule ``rule`` (n_samples, *input_shape) and the
        outputs ``f(x)[target]`` (n_samples,), from one pass per chunk."""
        chunk = path_chunk(runner, self.internal_batch_size, X)
        _, grads, output = layer_rows(
            runner,
            X,
            target,
            runner.model.input_name,
            chunk=chunk,
            progress=self.progress,
            desc=self.name,
            relu_rule=rule,
        )
        return grads, output


_LAYER_DOC = """\
layer : str or int, optional
    The node whose output is attributed to (Captum's ``layer``): a name or an index
    (negative from the end) as ``net.summary()`` lists them. Default: the network's
    last convolution.
attribute_to_layer_input : bool, default=False
    Use the layer's input instead of its output (Captum's option)."""

_CHUNK_DOC = """\
internal_batch_size : int, optional
    Rows per backward pass. Default: the runner's ``batch_size``, capped at 4M input
    elements per chunk.
progress : bool, optional
    Show a progress bar over chunks; by default only when there are 10 or more."""


class GradCam(_CnnMethod):
    """Grad-CAM (Selvaraju et al., 2017), Captum's ``LayerGradCam`` upsampled to the input.

    For the layer's activations ``A`` of shape (channels, *spatial) and the gradient of
    ``f = output[target]`` with respect to them, the map is
    ``sum_c mean_spatial(df/dA_c) * A_c``, of shape (1, *spatial) (``relu_attributions``
    keeps its positive part), then upsampled to the input's spatial shape as Captum's
    ``LayerAttribution.interpolate`` does (``F.interpolate``).

    Parameters
    ----------
    {layer}
    relu_attributions : bool, default=False
        Keep only the map's positive part (Captum's option; the paper's Grad-CAM).
    interpolate_mode : {{"nearest", "linear", "bilinear", "trilinear"}}, default="nearest"
        How the map is upsampled (torch's modes, ``align_corners=False``).
    {chunk}

    Notes
    -----
    ``values`` has shape (n_samples, *input_shape): the upsampled map, the same in every
    channel of the input (the input's first axis is read as its channels, its others as
    spatial, as Captum reads ``inputs.shape[2:]``; a dense layer's map, one number per
    row, fills the input). ``meta["layer_attribution"]`` is the map at the layer's
    resolution, of shape (n_samples, 1, *layer spatial shape), exactly Captum's
    ``LayerGradCam.attribute``; ``meta["layer"]`` the node's name. ``base_values`` is
    ``f(x)``, also in ``meta["output"]`` (Grad-CAM is not additive).

    Examples
    --------
    >>> e = xai.explain(net, X, method="gradcam", layer="/3/Conv", relu_attributions=True)
    >>> e.meta["layer_attribution"].shape      # (n, 1, h, w)
    """

    name: ClassVar[str] = "gradcam"
    constraints: ClassVar[dict] = {
        **_CnnMethod.constraints,
        "layer": LAYER,
        "attribute_to_layer_input": Bool(),
        "relu_attributions": Bool(),
        "interpolate_mode": Choice(INTERPOLATE_MODES),
    }

    def __init__(
        self,
        layer: str | int | None = None,
        attribute_to_layer_input: bool = False,
        relu_attributions: bool = False,
        interpolate_mode: str = "nearest",
        internal_batch_size: int | None = None,
        progress: bool | None = None,
    ) -> None:
        self.layer = layer
        self.attribute_to_layer_input = attribute_to_layer_input
        self.relu_attributions = relu_attributions
        self.interpolate_mode = interpolate_mode
        self.internal_batch_size = internal_batch_size
        self.progress = progress

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """Grad-CAM of ``output[target]`` for ``X`` of shape (n_samples, *input_shape)."""
        cam, output, value = self._cam(runner, X, target, bool(self.relu_attributions))
        values = self._upsampled(cam, X)
        meta = {
            "output": output,
            "layer": value,
            "layer_attribution": cam,
            "relu_attributions": bool(self.relu_attributions),
            "interpolate_mode": self.interpolate_mode,
        }
        return Explanation(values=values, base_values=output, target=target, data=X, meta=meta)


class _ReluRuleMethod(_CnnMethod):
    """Guided backpropagation and deconvolution: one modified backward pass per chunk."""

    rule: ClassVar[str] = "gradient"

    def __init__(
        self, internal_batch_size: int | None = None, progress: bool | None = None
    ) -> None:
        self.internal_batch_size = internal_batch_size
        self.progress = progress

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """Attributions of ``output[target]`` for ``X`` of shape (n_samples, *input_shape)."""
        self._value(runner)
        values, output = self._relu_gradient(runner, X, target, self.rule)
        meta = {"output": output, "relu_rule": self.rule}
        return Explanation(values=values, base_values=output, target=target, data=X, meta=meta)


class GuidedBackprop(_ReluRuleMethod):
    """Guided backpropagation (Springenberg et al., 2015), Captum's ``GuidedBackprop``.

    The gradient of ``output[target]`` with respect to the input, with each ReLU layer's
    backward pass keeping only the positive part of what it passes back:
    ``max(g * (x > 0), 0)``.

    Parameters
    ----------
    {chunk}

    Notes
    -----
    ``values`` has shape (n_samples, *input_shape). As in Captum, only ReLU layers change
    rule (an imported ``Relu`` operator is one; ReLU6, clips and leaky ReLUs keep their
    derivative). ``base_values`` is ``f(x)``, also in ``meta["output"]``.
    """

    name: ClassVar[str] = "guided_backprop"
    rule: ClassVar[str] = "guided"


class Deconvolution(_ReluRuleMethod):
    """Deconvolution (Zeiler and Fergus, 2014), Captum's ``Deconvolution``.

    The gradient of ``output[target]`` with respect to the input, with each ReLU layer's
    backward pass replaced by the positive part of the gradient coming back,
    ``max(g, 0)``, whatever the layer's input.

    Parameters
    ----------
    {chunk}

    Notes
    -----
    ``values`` has shape (n_samples, *input_shape); only ReLU layers change rule, as in
    Captum. ``base_values`` is ``f(x)``, also in ``meta["output"]``.
    """

    name: ClassVar[str] = "deconvolution"
    rule: ClassVar[str] = "deconvnet"


class GuidedGradCam(_CnnMethod):
    """Guided Grad-CAM (Selvaraju et al., 2017), Captum's ``GuidedGradCam``.

    Guided backpropagation times the Grad-CAM map (with ``relu_attributions``) upsampled
    to the input.

    Parameters
    ----------
    {layer}
    interpolate_mode : {{"nearest", "linear", "bilinear", "trilinear"}}, default="nearest"
        How the map is upsampled (torch's modes, ``align_corners=False``).
    {chunk}

    Notes
    -----
    ``values`` has shape (n_samples, *input_shape); ``meta["layer_attribution"]`` is the
    Grad-CAM map at the layer's resolution, ``meta["layer"]`` the node's name.
    ``base_values`` is ``f(x)``, also in ``meta["output"]``.
    """

    name: ClassVar[str] = "guided_gradcam"
    constraints: ClassVar[dict] = {
        **_CnnMethod.constraints,
        "layer": LAYER,
        "attribute_to_layer_input": Bool(),
        "interpolate_mode": Choice(INTERPOLATE_MODES),
    }

    def __init__(
        self,
        layer: str | int | None = None,
        attribute_to_layer_input: bool = False,
        interpolate_mode: str = "nearest",
        internal_batch_size: int | None = None,
        progress: bool | None = None,
    ) -> None:
        self.layer = layer
        self.attribute_to_layer_input = attribute_to_layer_input
        self.interpolate_mode = interpolate_mode
        self.internal_batch_size = internal_batch_size
        self.progress = progress

    def estimate_cost(self, runner: ModelRunner, X: np.ndarray) -> Cost | None:
        """Two gradients per row (Grad-CAM's and guided backpropagation's)."""
        self._value(runner)
        cost = gradient_cost(runner, X)
        return Cost(2 * cost.model_rows, cost.peak_bytes, cost.detail)

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """Guided Grad-CAM of ``output[target]`` for ``X`` of shape (n_samples, *input_shape)."""
        cam, output, value = self._cam(runner, X, target, True)
        guided, _ = self._relu_gradient(runner, X, target, "guided")
        values = guided * self._upsampled(cam, X)
        meta = {
            "output": output,
            "layer": value,
            "layer_attribution": cam,
            "interpolate_mode": self.interpolate_mode,
        }
        return Explanation(values=values, base_values=output, target=target, data=X, meta=meta)


def _fill(cls: type, **parts: Any) -> None:
    cls.__doc__ = cls.__doc__.format(layer=_indent(_LAYER_DOC), chunk=_indent(_CHUNK_DOC), **parts)


def _indent(text: str) -> str:
    return text.replace("\n", "\n    ")


for _cls in (GradCam, GuidedBackprop, Deconvolution, GuidedGradCam):
    _fill(_cls)
