"""Local response normalisation across channels (AlexNet's, GoogLeNet's; ONNX ``LRN``).

``y = x / (bias + alpha / size * S) ** beta``, where ``S`` at channel ``c`` is the sum of
``x**2`` over the channels ``c - floor((size - 1) / 2)`` to ``c + ceil((size - 1) / 2)``
(zero outside), per sample and position. The channel axis is the first per-sample axis
(NCHW). Forward and backward run on the backend's elementwise operations; the window sum
is ``size`` shifted adds, with no cumulative-sum cancellation.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from xai_core.errors import ShapeError
from xai_core.nn.layer import Layer
from xai_core.validation import check_int, check_number

__all__ = ["LocalResponseNormalization"]


def _window_sum(v: np.ndarray, before: int, after: int) -> np.ndarray:
    """``out[:, c] = sum(v[:, c - before : c + after + 1])`` along axis 1, zero outside."""
    out = v.copy()
    n = v.shape[1]
    for d in range(1, before + 1):  # channels before c
        if d < n:
            out[:, d:] += v[:, :-d]
    for d in range(1, after + 1):  # channels after c
        if d < n:
            out[:, :-d] += v[:, d:]
    return out


class LocalResponseNormalization(Layer):
    """Normalise each value by the squares of its neighbouring channels (ONNX ``LRN``).

    Parameters
    ----------
    size : int
        Channels in the window (ONNX's ``size``; the window is ``floor((size - 1) / 2)``
        channels before and ``ceil((size - 1) / 2)`` after).
    alpha : float, default=1e-4
    beta : float, default=0.75
    bias : float, default=1.0
    name : str, optional

    Notes
    -----
    Input of shape (n_samples, channels, *spatial); the output has the same shape.
    """

    kind: ClassVar[str] = "lrn"

    def __init__(
        self,
        size: int,
        alpha: float = 1e-4,
        beta: float = 0.75,
        bias: float = 1.0,
        name: str | None = None,
    ) -> None:
        super().__init__(name)
        self.size = check_int(size, "size", minimum=1)
        self.alpha = check_number(alpha, "alpha")
        self.beta = check_number(beta, "beta")
        self.bias = check_number(bias, "bias")

    @property
    def _before_after(self) -> tuple[int, int]:
        return (self.size - 1) // 2, self.size // 2

    def compute_output_shape(self, input_shape):
        if len(input_shape) < 1:
            raise ShapeError(
                f"LocalResponseNormalization {self.name!r} needs samples with a channel axis; "
                f"got samples of shape {tuple(input_shape)}."
            )
        return input_shape

    def _scale(self, x, backend):
        """``bias + alpha / size * S`` for the batch ``x``."""
        before, after = self._before_after
        square = backend.elementwise(np.multiply, x, x)
        sums = backend.elementwise(lambda v: _window_sum(v, before, after), square, ops=self.size)
        k, a = self.bias, self.alpha / self.size
        return backend.elementwise(lambda s: k + a * s, sums, ops=2)

    def apply(self, x, backend, record):
        s = self._scale(x, backend)
        if record is not None:
            record["x"], record["s"] = x, s
        b = self.beta
        return backend.elementwise(lambda x_, s_: x_ * s_ ** (-b), x, s, ops=4)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        record = self._need(record, self)
        if not input_grad:
            return None, {}
        x, s = record["x"], record["s"]
        b, a = self.beta, self.alpha / self.size
        before, after = self._before_after
        # d y_c / d x_j = [c = j] s_c^-b - 2 a b x_c s_c^(-b-1) x_j for j in c's window, so
        # the second term is the transposed window (after, before) of g x s^(-b-1)
        inner = backend.elementwise(lambda g, x_, s_: g * x_ * s_ ** (-b - 1), grad, x, s, ops=5)
        spread = backend.elementwise(lambda v: _window_sum(v, after, before), inner, ops=self.size)
        gx = backend.elementwise(
            lambda g, x_, s_, w: g * s_ ** (-b) - 2 * a * b * x_ * w, grad, x, s, spread, ops=8
        )
        return gx, {}

    def get_config(self):
        return {"size": self.size, "alpha": self.alpha, "beta": self.beta, "bias": self.bias}
