"""Activation layers: ReLU, ReLU6, Clip, LeakyReLU, HardSwish, Tanh, Sigmoid, Linear, Softmax.

Each applies its function and its derivative through ``backend.elementwise`` (and
``backend.reduce`` for the softmax sums), so they run in the backend's numerics.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from scipy.special import expit

from xai_core.errors import ValidationError
from xai_core.nn.layer import Layer
from xai_core.nn.rules import LRP_RULES, as_rule, rescale_multipliers
from xai_core.validation import check_number

__all__ = [
    "Activation",
    "UnaryFunction",
    "ReLU",
    "ReLU6",
    "Clip",
    "LeakyReLU",
    "HardSwish",
    "Tanh",
    "Sigmoid",
    "Linear",
    "Softmax",
    "ACTIVATIONS",
    "softmax",
]


class Activation(Layer):
    """A layer without parameters that keeps the shape of its input."""

    def clamp_bounds(self) -> tuple[float, float] | None:
        """``(lo, hi)`` if this activation is ``min(max(x, lo), hi)`` (a convolution may
        fuse it into its epilogue), else None."""
        return None


class UnaryFunction(Activation):
    """A parameter-free function applied to every element; its derivative from the input.

    Subclasses define :meth:`fn` (``y = f(x)``), :meth:`dfn` (``g * f'(x)``) and the
    operation counts :attr:`ops`, :attr:`grad_ops` for the backend's cycle estimate; the
    forward and backward passes are one ``backend.elementwise`` call each.
    """

    ops: ClassVar[int] = 1
    grad_ops: ClassVar[int] = 2

    def fn(self, x: np.ndarray) -> np.ndarray:
        """``f(x)``, elementwise, in the dtype of ``x``."""
        raise NotImplementedError

    def dfn(self, g: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``g * f'(x)``, elementwise."""
        raise NotImplementedError

    def apply(self, x, backend, record):
        if record is not None:
            record["x"] = x
        return backend.elementwise(self.fn, x, ops=self.ops)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        x = self._need(record, self)["x"]
        gx = backend.elementwise(self.dfn, grad, x, ops=self.grad_ops) if input_grad else None
        return gx, {}


class Rescaled:
    """An elementwise nonlinearity with DeepLift's rescale rule (:mod:`xai_core.nn.rules`).

    The layer classes Captum's ``DeepLift`` gives the rule (ReLU, LeakyReLU, Sigmoid,
    Tanh, ELU, Softplus) list ``"rescale"`` in ``backward_rules``; those its ``LRP``
    passes relevance through unchanged (ReLU, Tanh) list the LRP rules too.
    """

    backward_rules: ClassVar[tuple[str, ...]] = ("rescale",)

    def vjp_rule(self, grad, backend, record, rule):
        """The backward pass under ``rule`` (:class:`~xai_core.nn.rules.BackwardRule` or its name).

        Parameters
        ----------
        grad : ndarray of shape (n_samples, *output_shape)
        backend : Backend
        record : dict
            This layer's record of the forward pass (for ``"rescale"``: ``m`` rows
            followed by their ``m`` baselines).
        rule : str or BackwardRule

        Returns
        -------
        ndarray of shape (n_samples, *input_shape)
        """
        rule = as_rule(rule)
        if rule.name in LRP_RULES:
            return grad
        gx, _ = self.vjp(grad, backend, record, param_grads=False)
        if rule.name != "rescale":
            return gx
        record = self._need(record, self)
        x = record["x"]
        y = record["y"] if "y" in record else self.apply(x, backend, None)
        return rescale_multipliers(grad, x, y, gx, rule.epsilon, backend)


class ReLU(Rescaled, UnaryFunction):
    """``max(x, 0)``; the derivative at 0 is taken as 0."""

    kind: ClassVar[str] = "relu"
    backward_rules: ClassVar[tuple[str, ...]] = ("guided", "deconvnet", "rescale", *LRP_RULES)

    def fn(self, x):
        return np.maximum(x, 0)

    def dfn(self, g, x):
        return g * (x > 0)

    def clamp_bounds(self):
        return (0.0, np.inf)

    def vjp_rule(self, grad, backend, record, rule: str):
        """The backward pass under a modified rule (:data:`xai_core.nn.executor.RELU_RULES`).

        Parameters
        ----------
        grad : ndarray of shape (n_samples, *output_shape)
        backend : Backend
        record : dict
            This layer's record of the forward pass.
        rule : str or BackwardRule
            ``"gradient"``: :meth:`vjp`; ``"guided"``: ``max(grad * (x > 0), 0)``
            (guided backpropagation); ``"deconvnet"``: ``max(grad, 0)`` (deconvolution);
            ``"rescale"`` and the LRP rules: :meth:`Rescaled.vjp_rule`.

        Returns
        -------
        ndarray of shape (n_samples, *input_shape)
        """
        rule = as_rule(rule)
        if rule.name == "deconvnet":
            return backend.elementwise(_positive, grad)
        if rule.name != "guided":
            return super().vjp_rule(grad, backend, record, rule)
        gx, _ = self.vjp(grad, backend, record, param_grads=False)
        return backend.elementwise(_positive, gx)


def _positive(g):
    return np.maximum(g, 0)


class Clip(UnaryFunction):
    """``min(max(x, min_value), max_value)`` (ONNX ``Clip``); the derivative is 1 strictly inside.

    Parameters
    ----------
    min_value, max_value : float, optional
        Bounds; ``None`` leaves that side open.
    name : str, optional
    """

    kind: ClassVar[str] = "clip"
    ops: ClassVar[int] = 2
    grad_ops: ClassVar[int] = 3

    def __init__(
        self,
        min_value: float | None = None,
        max_value: float | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(name)
        self.min_value = None if min_value is None else check_number(min_value, "min_value")
        self.max_value = None if max_value is None else check_number(max_value, "max_value")
        if (
            self.min_value is not None
            and self.max_value is not None
            and self.min_value > self.max_value
        ):
            raise ValidationError(
                f"min_value must be <= max_value; got {self.min_value} and {self.max_value}."
            )

    def _bounds(self):
        lo = -np.inf if self.min_value is None else self.min_value
        hi = np.inf if self.max_value is None else self.max_value
        return lo, hi

    def fn(self, x):
        lo, hi = self._bounds()
        return np.clip(x, lo, hi)

    def dfn(self, g, x):
        lo, hi = self._bounds()
        return g * ((x > lo) & (x < hi))

    def clamp_bounds(self):
        return self._bounds()

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value}


class ReLU6(Clip):
    """``min(max(x, 0), 6)``, MobileNet's activation."""

    kind: ClassVar[str] = "relu6"

    def __init__(self, name: str | None = None) -> None:
        super().__init__(0.0, 6.0, name=name)

    def get_config(self):
        return {}


class LeakyReLU(Rescaled, UnaryFunction):
    """``x`` for ``x > 0``, else ``alpha * x``.

    Parameters
    ----------
    alpha : float, default=0.01
        Slope for negative inputs (ONNX's and PyTorch's default; Keras's is 0.3 / 0.2).
    name : str, optional
    """

    kind: ClassVar[str] = "leaky_relu"
    backward_rules: ClassVar[tuple[str, ...]] = ("rescale",)
    ops: ClassVar[int] = 2
    grad_ops: ClassVar[int] = 2

    def __init__(self, alpha: float = 0.01, name: str | None = None) -> None:
        super().__init__(name)
        self.alpha = check_number(alpha, "alpha")

    def fn(self, x):
        return np.where(x > 0, x, x * x.dtype.type(self.alpha))

    def dfn(self, g, x):
        return np.where(x > 0, g, g * g.dtype.type(self.alpha))

    def get_config(self):
        return {"alpha": self.alpha}


class HardSwish(UnaryFunction):
    """``x * min(max(x + 3, 0), 6) / 6`` (MobileNetV3; ONNX ``HardSwish``)."""

    kind: ClassVar[str] = "hard_swish"
    ops: ClassVar[int] = 4
    grad_ops: ClassVar[int] = 4

    def fn(self, x):
        return x * (np.clip(x + 3, 0, 6) / 6)

    def dfn(self, g, x):
        d = np.where(x <= -3, 0, np.where(x >= 3, 1, (2 * x + 3) / 6))
        return g * d.astype(g.dtype)


class _OfOutput(Activation):
    """An activation whose derivative is computed from its output ``y``."""

    def apply(self, x, backend, record):
        y = self.function(x, backend)
        if record is not None:
            record["x"], record["y"] = x, y
        return y

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        y = self._need(record, self)["y"]
        return (self.derivative(grad, y, backend) if input_grad else None), {}


def _tanh_grad(g, y):
    return g * (1 - y * y)


class Tanh(Rescaled, _OfOutput):
    """Hyperbolic tangent, the TensorFlow Playground's default activation."""

    kind: ClassVar[str] = "tanh"
    backward_rules: ClassVar[tuple[str, ...]] = ("rescale", *LRP_RULES)

    def function(self, x, backend):
        return backend.elementwise(np.tanh, x, ops=4)

    def derivative(self, g, y, backend):
        return backend.elementwise(_tanh_grad, g, y, ops=3)


def _sigmoid_grad(g, y):
    return g * y * (1 - y)


class Sigmoid(Rescaled, _OfOutput):
    """Logistic function ``1 / (1 + exp(-x))`` (scikit-learn's "logistic"), overflow-free."""

    kind: ClassVar[str] = "sigmoid"
    backward_rules: ClassVar[tuple[str, ...]] = ("rescale",)

    def function(self, x, backend):
        return backend.elementwise(expit, x, ops=4)

    def derivative(self, g, y, backend):
        return backend.elementwise(_sigmoid_grad, g, y, ops=3)


class Linear(Activation):
    """The identity (the Playground's "linear", scikit-learn's "identity"). No arithmetic."""

    kind: ClassVar[str] = "linear"

    def apply(self, x, backend, record):
        return x

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        return (grad if input_grad else None), {}


def _exp_shifted(x, m):
    return np.exp(x - m[..., None])


def _divide_rows(e, s):
    return e / s[..., None]


def _softmax_grad(g, y, dot):
    return y * (g - dot[..., None])


class Softmax(_OfOutput):
    """Softmax over the last axis: ``exp(x - max) / sum(exp(x - max))``.

    Training with :meth:`~xai_core.nn.Sequential.fit` fuses a final Softmax with the
    cross-entropy loss for stability; the backward pass here is the full Jacobian-vector
    product, used for gradients of a probability.
    """

    kind: ClassVar[str] = "softmax"

    def function(self, x, backend):
        return softmax(x, backend)

    def derivative(self, g, y, backend):
        dot = backend.reduce(np.sum, backend.elementwise(np.multiply, g, y), axis=-1)
        return backend.elementwise(_softmax_grad, g, y, dot, ops=2)


def softmax(x: np.ndarray, backend: Any) -> np.ndarray:
    """Softmax of ``x`` over its last axis, computed on ``backend``.

    Parameters
    ----------
    x : ndarray of shape (n_samples, ..., n_outputs)
    backend : Backend

    Returns
    -------
    ndarray of the shape of ``x``, summing to 1 over the last axis.
    """
    m = backend.reduce(np.max, x, axis=-1)
    e = backend.elementwise(_exp_shifted, x, m, ops=5)
    return backend.elementwise(_divide_rows, e, backend.reduce(np.sum, e, axis=-1))


#: Activation layers by their lower-case name (the Playground's names and scikit-learn's).
ACTIVATIONS: dict[str, type[Activation]] = {
    "relu": ReLU,
    "tanh": Tanh,
    "sigmoid": Sigmoid,
    "logistic": Sigmoid,
    "linear": Linear,
    "identity": Linear,
    "softmax": Softmax,
}
