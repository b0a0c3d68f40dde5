"""Activation layers: ReLU, Tanh, Sigmoid, Linear, Softmax.

Each applies its function and its derivative through ``backend.elementwise`` (and
``backend.reduce`` for the softmax sums), so they run in the backend's numerics.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.special import expit

from xai_core.nn.layer import Layer

__all__ = ["Activation", "ReLU", "Tanh", "Sigmoid", "Linear", "Softmax", "ACTIVATIONS"]


class Activation(Layer):
    """A layer without parameters that keeps the shape of its input."""


def _relu(x):
    return np.maximum(x, 0)


def _relu_grad(g, x):
    return g * (x > 0)


class ReLU(Activation):
    """``max(x, 0)``; the derivative at 0 is taken as 0."""

    kind: ClassVar[str] = "relu"

    def forward(self, x, backend, *, cache=True):
        self._x = x if cache else None
        return backend.elementwise(_relu, x)

    def backward(self, grad, backend, *, param_grads=True, input_grad=True):
        x = self._need_cache("_x")
        return backend.elementwise(_relu_grad, grad, x, ops=2) if input_grad else None

    def clear_cache(self):
        self._x = None


def _tanh_grad(g, y):
    return g * (1 - y * y)


class Tanh(Activation):
    """Hyperbolic tangent, the TensorFlow Playground's default activation."""

    kind: ClassVar[str] = "tanh"

    def forward(self, x, backend, *, cache=True):
        y = backend.elementwise(np.tanh, x, ops=4)
        self._y = y if cache else None
        return y

    def backward(self, grad, backend, *, param_grads=True, input_grad=True):
        y = self._need_cache("_y")
        return backend.elementwise(_tanh_grad, grad, y, ops=3) if input_grad else None

    def clear_cache(self):
        self._y = None


def _sigmoid_grad(g, y):
    return g * y * (1 - y)


class Sigmoid(Activation):
    """Logistic function ``1 / (1 + exp(-x))`` (scikit-learn's "logistic"), overflow-free."""

    kind: ClassVar[str] = "sigmoid"

    def forward(self, x, backend, *, cache=True):
        y = backend.elementwise(expit, x, ops=4)
        self._y = y if cache else None
        return y

    def backward(self, grad, backend, *, param_grads=True, input_grad=True):
        y = self._need_cache("_y")
        return backend.elementwise(_sigmoid_grad, grad, y, ops=3) if input_grad else None

    def clear_cache(self):
        self._y = None


class Linear(Activation):
    """The identity (the Playground's "linear", scikit-learn's "identity"). No arithmetic."""

    kind: ClassVar[str] = "linear"

    def forward(self, x, backend, *, cache=True):
        return x

    def backward(self, grad, backend, *, param_grads=True, input_grad=True):
        return grad if input_grad else None


def _exp_shifted(x, m):
    return np.exp(x - m[..., None])


def _divide_rows(e, s):
    return e / s[..., None]


def _softmax_grad(g, y, dot):
    return y * (g - dot[..., None])


class Softmax(Activation):
    """Softmax over the last axis: ``exp(x - max) / sum(exp(x - max))``.

    Training with :meth:`~xai_core.nn.Sequential.fit` fuses a final Softmax with the
    cross-entropy loss for stability; :meth:`backward` here is the full Jacobian-vector
    product, used for gradients of a probability.
    """

    kind: ClassVar[str] = "softmax"

    def forward(self, x, backend, *, cache=True):
        y = softmax(x, backend)
        self._y = y if cache else None
        return y

    def backward(self, grad, backend, *, param_grads=True, input_grad=True):
        y = self._need_cache("_y")
        if not input_grad:
            return None
        dot = backend.reduce(np.sum, backend.elementwise(np.multiply, grad, y), axis=-1)
        return backend.elementwise(_softmax_grad, grad, y, dot, ops=2)

    def clear_cache(self):
        self._y = None


def softmax(x: np.ndarray, backend) -> np.ndarray:
    """Softmax of ``x`` over its last axis, computed on ``backend``.

    Parameters
    ----------
    x : ndarray of shape (n_samples, n_outputs)
    backend : Backend

    Returns
    -------
    ndarray of shape (n_samples, n_outputs), rows summing to 1.
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
