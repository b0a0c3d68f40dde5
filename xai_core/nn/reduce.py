"""Reductions over per-sample axes (ONNX ``ReduceMax``, ``ReduceSum``, ``ReduceMean``,
``ReduceL2``, ``ReduceMin``) and the log-softmax on any axis.

Every reduction is one ``backend.reduce``; the backward passes spread the gradient back
with ``backend.elementwise``.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from xai_core.errors import ShapeError, ValidationError
from xai_core.nn.layer import Layer

__all__ = ["Reduce", "LogSoftmax", "REDUCTIONS"]

#: The reductions :class:`Reduce` computes.
REDUCTIONS = ("max", "min", "sum", "mean", "l2")


def _spread_mean(g, n):
    return g / n


def _square(x):
    return x * x


def _arg_share(g, x, y, ties):
    return np.where(x == y, g / ties, 0).astype(g.dtype)


def _l2_grad(g, x, y):
    return np.where(y > 0, g * x / np.where(y > 0, y, 1), 0).astype(g.dtype)


def _per_sample_axis(axis: object, what: str) -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise ValidationError(f"{what} must be an integer; got {axis!r}.")
    return int(axis)


class Reduce(Layer):
    """Reduce each sample over some of its axes.

    Parameters
    ----------
    kind : {"max", "min", "sum", "mean", "l2"}
        ``"l2"`` is ``sqrt(sum(x ** 2))``.
    axes : tuple of int
        Per-sample axes (the batch axis is never reduced); negative ones count from the end.
    keepdims : bool, default=True
        Keep the reduced axes as size 1 (ONNX's default).
    name : str, optional

    Notes
    -----
    The gradient of ``max`` and ``min`` is shared equally among tied elements (PyTorch's
    ``amax``); that of ``l2`` is 0 where the norm is 0.
    """

    kind: ClassVar[str] = "reduce"

    def __init__(
        self, kind: str, axes: tuple[int, ...], keepdims: bool = True, name: str | None = None
    ) -> None:
        super().__init__(name)
        if kind not in REDUCTIONS:
            raise ValidationError(f"kind must be one of {', '.join(REDUCTIONS)}; got {kind!r}.")
        self.reduction = kind
        try:
            self.axes = tuple(_per_sample_axis(a, "each axis") for a in axes)
        except TypeError:
            raise ValidationError(f"axes must be a tuple of ints; got {axes!r}.") from None
        if not self.axes:
            raise ValidationError("axes must name at least one per-sample axis.")
        self.keepdims = bool(keepdims)

    def _resolved(self, rank: int) -> tuple[int, ...]:
        out = sorted({a % rank for a in self.axes} if rank else set())
        if any(not -rank <= a < rank for a in self.axes) or len(out) != len(self.axes):
            raise ShapeError(
                f"Reduce {self.name!r}: axes {list(self.axes)} are out of range or repeated for "
                f"samples with {rank} axes."
            )
        return tuple(out)

    def compute_output_shape(self, input_shape):
        axes = self._resolved(len(input_shape))
        if self.keepdims:
            return tuple(1 if i in axes else d for i, d in enumerate(input_shape))
        return tuple(d for i, d in enumerate(input_shape) if i not in axes)

    def _batch_axes(self) -> tuple[int, ...]:
        return tuple(a + 1 for a in self._resolved(len(self.input_shape)))

    def _kept(self, n: int) -> tuple[int, ...]:
        axes = self._resolved(len(self.input_shape))
        return (n, *(1 if i in axes else d for i, d in enumerate(self.input_shape)))

    def apply(self, x, backend, record):
        axes = self._batch_axes()
        if self.reduction == "l2":
            y = backend.elementwise(np.sqrt, backend.reduce(np.sum, _sq(x, backend), axis=axes))
        else:
            fn = {"max": np.max, "min": np.min, "sum": np.sum, "mean": np.mean}[self.reduction]
            y = backend.reduce(fn, x, axis=axes)
        if record is not None:
            record["x"], record["y"] = x, y
        return y.reshape(x.shape[0], *self.output_shape)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        record = self._need(record, self)
        if not input_grad:
            return None, {}
        x = record["x"]
        kept = self._kept(x.shape[0])
        g = grad.reshape(kept)
        if self.reduction == "sum":
            gx = g
        elif self.reduction == "mean":
            n = int(np.prod([self.input_shape[a - 1] for a in self._batch_axes()]))
            gx = backend.elementwise(_spread_mean, g, np.asarray(n))
        elif self.reduction == "l2":
            gx = backend.elementwise(_l2_grad, g, x, record["y"].reshape(kept), ops=3)
        else:
            y = record["y"].reshape(kept)
            ties = backend.reduce(
                np.sum, backend.elementwise(np.equal, x, y), axis=self._batch_axes()
            )
            gx = backend.elementwise(_arg_share, g, x, y, ties.reshape(kept), ops=3)
        return np.broadcast_to(gx, x.shape).copy(), {}

    def get_config(self):
        return {"kind": self.reduction, "axes": list(self.axes), "keepdims": self.keepdims}


def _sq(x, backend):
    return backend.elementwise(_square, x)


def _log_softmax(x, m, s):
    return x - m - np.log(s)


def _exp_shifted(x, m):
    return np.exp(x - m)


def _log_softmax_grad(g, y, total):
    return g - np.exp(y) * total


class LogSoftmax(Layer):
    """``x - max - log(sum(exp(x - max)))`` over one per-sample axis (ONNX ``LogSoftmax``).

    Parameters
    ----------
    axis : int, default=-1
        The per-sample axis (the batch axis is never counted).
    name : str, optional
    """

    kind: ClassVar[str] = "log_softmax"

    def __init__(self, axis: int = -1, name: str | None = None) -> None:
        super().__init__(name)
        self.axis = _per_sample_axis(axis, "axis")

    def compute_output_shape(self, input_shape):
        if not -len(input_shape) <= self.axis < len(input_shape):
            raise ShapeError(
                f"LogSoftmax {self.name!r}: axis {self.axis} is out of range for samples of "
                f"shape {tuple(input_shape)}."
            )
        return input_shape

    def _batch_axis(self) -> int:
        return self.axis % len(self.input_shape) + 1

    def apply(self, x, backend, record):
        ax = self._batch_axis()
        m = np.expand_dims(backend.reduce(np.max, x, axis=ax), ax)
        e = backend.elementwise(_exp_shifted, x, m, ops=5)
        s = np.expand_dims(backend.reduce(np.sum, e, axis=ax), ax)
        y = backend.elementwise(_log_softmax, x, m, s, ops=6)
        if record is not None:
            record["y"] = y
        return y

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        y = self._need(record, self)["y"]
        if not input_grad:
            return None, {}
        ax = self._batch_axis()
        total = np.expand_dims(backend.reduce(np.sum, grad, axis=ax), ax)
        return backend.elementwise(_log_softmax_grad, grad, y, total, ops=6), {}

    def get_config(self):
        return {"axis": self.axis}
