"""Batch normalisation at inference: a per-channel affine map from running statistics."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from xai_core.errors import ShapeError, ValidationError
from xai_core.nn.layer import Layer
from xai_core.validation import check_number

__all__ = ["BatchNormalization"]


def _scale(gamma, variance, eps):
    return gamma / np.sqrt(variance + eps)


def _shift(beta, mean, scale):
    return beta - mean * scale


def _affine(x, s, t):
    return x * s + t


def _normalised(x, mean, inv):
    return (x - mean) * inv


class BatchNormalization(Layer):
    """``y = gamma * (x - mean) / sqrt(variance + epsilon) + beta`` per channel (inference).

    Parameters
    ----------
    epsilon : float, default=1e-5
        ONNX's and PyTorch's default (Keras's is 1e-3).
    axis : int, default=0
        Per-sample channel axis: 0 for NCHW images and flat samples, -1 for NHWC images.
    name : str, optional

    Attributes
    ----------
    gamma, beta : ndarray of shape (channels,)
        Trainable scale and offset (initialised 1 and 0).
    buffers : dict
        ``mean`` and ``variance``, of shape (channels,): the running statistics
        (initialised 0 and 1).

    Notes
    -----
    :meth:`~xai_core.nn.Graph.fold_batch_norm` merges it into a Conv2D, DepthwiseConv2D
    or Dense layer right before it.
    """

    kind: ClassVar[str] = "batch_norm"

    def __init__(self, epsilon: float = 1e-5, axis: int = 0, name: str | None = None) -> None:
        super().__init__(name)
        self.epsilon = check_number(epsilon, "epsilon")
        if self.epsilon < 0:
            raise ValidationError(f"epsilon must be >= 0; got {epsilon}.")
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise ValidationError(f"axis must be an integer; got {axis!r}.")
        self.axis = int(axis)

    gamma = property(lambda self: self.params["gamma"], lambda self, v: self._set_param("gamma", v))
    beta = property(lambda self: self.params["beta"], lambda self, v: self._set_param("beta", v))

    def compute_output_shape(self, input_shape):
        if not -len(input_shape) <= self.axis < len(input_shape):
            raise ShapeError(
                f"BatchNormalization {self.name!r}: axis {self.axis} is out of range for samples "
                f"of shape {input_shape}."
            )
        return input_shape

    @property
    def channel_axis(self) -> int:
        """The per-sample channel axis, non-negative."""
        return self.axis % len(self.input_shape)

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shapes of the parameters and buffers for the input shape set by ``build``."""
        c = (self.input_shape[self.channel_axis],)
        return {"gamma": c, "beta": c, "mean": c, "variance": c}

    def build(self, input_shape, rng, dtype):
        out = super().build(input_shape, rng, dtype)
        c = self.input_shape[self.channel_axis]
        self.params = {"gamma": np.ones(c, dtype=dtype), "beta": np.zeros(c, dtype=dtype)}
        self.buffers = {"mean": np.zeros(c, dtype=dtype), "variance": np.ones(c, dtype=dtype)}
        return out

    def _shape(self) -> tuple[int, ...]:
        shape = [1] * (len(self.input_shape) + 1)
        shape[self.channel_axis + 1] = -1
        return tuple(shape)

    def scale_shift(self, backend) -> tuple[np.ndarray, np.ndarray]:
        """Per-channel ``(scale, shift)`` with ``y = x * scale + shift``, computed on ``backend``."""
        eps = np.asarray(self.epsilon)
        scale = backend.elementwise(_scale, self.gamma, self.buffers["variance"], eps, ops=3)
        shift = backend.elementwise(_shift, self.beta, self.buffers["mean"], scale, ops=2)
        return scale, shift

    def apply(self, x, backend, record):
        scale, shift = self.scale_shift(backend)
        shape = self._shape()
        if record is not None:
            record["x"], record["scale"] = x, scale
        return backend.elementwise(_affine, x, scale.reshape(shape), shift.reshape(shape), ops=2)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        record = self._need(record, self)
        shape = self._shape()
        scale = record["scale"].reshape(shape)
        grads = {}
        if param_grads:
            axes = tuple(i for i in range(grad.ndim) if i != self.channel_axis + 1)
            inv = backend.elementwise(
                _scale, np.ones_like(self.gamma), self.buffers["variance"], np.asarray(self.epsilon)
            )
            xhat = backend.elementwise(
                _normalised, record["x"], self.buffers["mean"].reshape(shape), inv.reshape(shape)
            )
            grads["gamma"] = backend.reduce(
                np.sum, backend.elementwise(np.multiply, grad, xhat), axis=axes
            )
            grads["beta"] = backend.reduce(np.sum, grad, axis=axes)
        gx = backend.elementwise(np.multiply, grad, scale) if input_grad else None
        return gx, grads

    def get_config(self):
        return {"epsilon": self.epsilon, "axis": self.axis}
