"""Layer normalisation: each sample normalised over its trailing axes (the transformer block's).

``y = gamma * (x - mean) / sqrt(var + epsilon) + beta``, the mean and the (biased) variance
taken over the axes from ``axis`` to the last, per sample and per leading position (per
token of a sequence). The forward pass and the exact backward pass run on the backend's
reductions and elementwise operations.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from xai_core.errors import ShapeError, ValidationError
from xai_core.nn.layer import Layer
from xai_core.validation import check_number

__all__ = ["LayerNormalization"]


def _centre(x, mean):
    return x - mean


def _square(x):
    return x * x


def _inv_std(var, eps):
    return 1 / np.sqrt(var + eps)


def _affine(xc, inv, gamma, beta):
    return xc * inv * gamma + beta


def _normalised(xc, inv):
    return xc * inv


def _input_grad(gh, mean_gh, xhat, mean_ghx, inv):
    return inv * (gh - mean_gh - xhat * mean_ghx)


class LayerNormalization(Layer):
    """Normalise each sample over its per-sample axes ``axis`` to the last (ONNX ``LayerNormalization``).

    Parameters
    ----------
    axis : int, default=-1
        The first normalised per-sample axis (the batch axis is never counted): ``-1``
        normalises the last axis (the features of each token, PyTorch's ``LayerNorm(d)``),
        ``-2`` the last two, ``0`` the whole sample.
    epsilon : float, default=1e-5
        Added to the variance (ONNX's and PyTorch's default).
    name : str, optional

    Attributes
    ----------
    gamma, beta : ndarray of shape ``input_shape[axis:]``
        Trainable scale and offset (initialised 1 and 0).
    """

    kind: ClassVar[str] = "layer_norm"

    def __init__(self, axis: int = -1, epsilon: float = 1e-5, name: str | None = None) -> None:
        super().__init__(name)
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise ValidationError(f"axis must be an integer; got {axis!r}.")
        self.axis = int(axis)
        self.epsilon = check_number(epsilon, "epsilon")
        if self.epsilon < 0:
            raise ValidationError(f"epsilon must be >= 0; got {epsilon}.")

    gamma = property(lambda self: self.params["gamma"], lambda self, v: self._set_param("gamma", v))
    beta = property(lambda self: self.params["beta"], lambda self, v: self._set_param("beta", v))

    def compute_output_shape(self, input_shape):
        if not -len(input_shape) <= self.axis < len(input_shape):
            raise ShapeError(
                f"LayerNormalization {self.name!r}: axis {self.axis} is out of range for samples "
                f"of shape {tuple(input_shape)}."
            )
        return input_shape

    @property
    def first_axis(self) -> int:
        """The first normalised per-sample axis, non-negative."""
        return self.axis % len(self.input_shape)

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shapes of ``gamma`` and ``beta``: the normalised axes of a sample."""
        shape = tuple(self.input_shape[self.first_axis :])
        return {"gamma": shape, "beta": shape}

    def build(self, input_shape, rng, dtype):
        out = super().build(input_shape, rng, dtype)
        shape = self.param_shapes()["gamma"]
        self.params = {"gamma": np.ones(shape, dtype=dtype), "beta": np.zeros(shape, dtype=dtype)}
        return out

    def _axes(self) -> tuple[int, ...]:
        """The normalised axes of a batch (the batch axis is 0)."""
        return tuple(range(self.first_axis + 1, len(self.input_shape) + 1))

    def _kept(self, v: np.ndarray, x: np.ndarray) -> np.ndarray:
        """A reduction ``v`` with size-1 normalised axes, to broadcast against ``x``."""
        return v.reshape(x.shape[: self.first_axis + 1] + (1,) * len(self._axes()))

    def apply(self, x, backend, record):
        axes = self._axes()
        mean = self._kept(backend.reduce(np.mean, x, axis=axes), x)
        xc = backend.elementwise(_centre, x, mean)
        var = self._kept(backend.reduce(np.mean, backend.elementwise(_square, xc), axis=axes), x)
        inv = backend.elementwise(_inv_std, var, np.asarray(self.epsilon), ops=3)
        if record is not None:
            record["xc"], record["inv"] = xc, inv
        return backend.elementwise(_affine, xc, inv, self.gamma[None], self.beta[None], ops=3)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        record = self._need(record, self)
        xc, inv = record["xc"], record["inv"]
        axes = self._axes()
        xhat = backend.elementwise(_normalised, xc, inv)
        grads = {}
        if param_grads:
            outer = tuple(range(self.first_axis + 1))
            grads["gamma"] = backend.reduce(
                np.sum, backend.elementwise(np.multiply, grad, xhat), axis=outer
            )
            grads["beta"] = backend.reduce(np.sum, grad, axis=outer)
        gx = None
        if input_grad:
            gh = backend.elementwise(np.multiply, grad, self.gamma[None])
            mean_gh = self._kept(backend.reduce(np.mean, gh, axis=axes), gh)
            ghx = backend.elementwise(np.multiply, gh, xhat)
            mean_ghx = self._kept(backend.reduce(np.mean, ghx, axis=axes), gh)
            gx = backend.elementwise(_input_grad, gh, mean_gh, xhat, mean_ghx, inv, ops=5)
        return gx, grads

    def get_config(self):
        return {"axis": self.axis, "epsilon": self.epsilon}
