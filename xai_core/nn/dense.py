"""The fully connected layer."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from xai_core.errors import ShapeError
from xai_core.nn import _util
from xai_core.nn._util import glorot
from xai_core.nn.layer import Layer
from xai_core.nn.rules import LRP_RULES, as_rule, lrp_ratio, lrp_weights, times_input
from xai_core.validation import check_int

__all__ = ["Dense"]


def _add_bias(y: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``y + b`` over the last axis, in place when ``y`` is a fresh writable product."""
    return np.add(y, b, out=y) if y.flags.writeable and y.flags.owndata else y + b


class Dense(Layer):
    """Fully connected layer: ``y = x @ weight + bias``.

    Parameters
    ----------
    units : int
        Output width.
    use_bias : bool, default=True
        Without a bias, ``y = x @ weight`` (an ONNX ``MatMul`` by a constant).
    name : str, optional

    Attributes
    ----------
    weight : ndarray of shape (n_in, units)
        ``y[i, j] = sum_k x[i, k] * weight[k, j] + bias[j]`` (scikit-learn's ``coefs_`` layout).
    bias : ndarray of shape (units,)

    Notes
    -----
    Input per sample is flat, of shape (n_in,); put :class:`Flatten` before a Dense layer
    that follows a convolution. Weights are initialised Glorot-uniform, biases zero.
    Forward: one ``backend.matmul`` of (n, n_in) @ (n_in, units). Backward: (n_in, n) @ (n,
    units) for the weight gradient, (n, units) @ (units, n_in) for the input gradient.
    """

    kind: ClassVar[str] = "dense"
    backward_rules: ClassVar[tuple[str, ...]] = LRP_RULES
    regularized: ClassVar[tuple[str, ...]] = ("weight",)

    def __init__(self, units: int, use_bias: bool = True, name: str | None = None) -> None:
        super().__init__(name)
        self.units = check_int(units, "units")
        self.use_bias = bool(use_bias)

    weight = _util.parameter("weight")
    bias = _util.parameter("bias", optional=True)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 1:
            raise ShapeError(
                f"Dense layer {self.name!r} needs flat input of shape (n_features,) per sample; "
                f"got {input_shape}. Put Flatten() before it."
            )
        return (self.units,)

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shapes of the parameters for the input shape set by ``build``."""
        shapes = {"weight": (self.input_shape[0], self.units)}
        return {**shapes, "bias": (self.units,)} if self.use_bias else shapes

    def build(self, input_shape, rng, dtype):
        out = super().build(input_shape, rng, dtype)
        n_in = self.input_shape[0]
        self.params = {"weight": glorot(rng, (n_in, self.units), n_in, self.units, dtype)}
        if self.use_bias:
            self.params["bias"] = np.zeros(self.units, dtype=dtype)
        return out

    def apply(self, x, backend, record):
        y = backend.matmul(x, self.weight)
        if self.use_bias:
            y = backend.elementwise(_add_bias, y, self.bias)
        if record is not None:
            record["x"] = x
        return y

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        grads = {}
        if param_grads:
            x = self._need(record, self)["x"]
            grads["weight"] = backend.matmul(x.T, grad)
            if self.use_bias:
                grads["bias"] = backend.reduce(np.sum, grad, axis=0)
        return (backend.matmul(grad, self.weight.T) if input_grad else None), grads

    def vjp_rule(self, grad, backend, record, rule):
        """LRP's backward pass (:mod:`xai_core.nn.rules`): the relevance at the input.

        ``x * (W' @ (grad / (z + epsilon * sign(z))))`` with ``z = x W' + b``: ``W' = W``
        (``"lrp_epsilon"``, Captum's ``EpsilonRule``), its positive part
        (``"lrp_alpha1_beta0"``, Captum's ``Alpha1_Beta0_Rule``, bias kept) or
        ``W + gamma W+`` (``"lrp_gamma"``, Captum's ``GammaRule``): :func:`lrp_weights`. Shape
        (n_samples, n_in).
        """
        rule = as_rule(rule)
        x = self._need(record, self)["x"]
        w = lrp_weights(self.weight, rule)
        z = backend.matmul(x, w)
        if self.use_bias:
            z = backend.elementwise(_add_bias, z, self.bias)
        s = lrp_ratio(grad, z, rule.epsilon, backend)
        return times_input(x, backend.matmul(s, w.T), backend)

    def get_config(self):
        return {"units": self.units} if self.use_bias else {"units": self.units, "use_bias": False}

    def macs_per_sample(self):
        return self.input_shape[0] * self.units if self.input_shape else 0

    def _describe(self):
        n_in = self.input_shape[0] if self.input_shape else "?"
        return f"Dense({n_in} -> {self.units}{'' if self.use_bias else ', no bias'})"
