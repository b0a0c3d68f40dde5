"""Comparisons, elementwise extremes and arg-extremes of samples.

:class:`Compare` (``a > b``, ``a >= b``, ``a < b``, ``a <= b``, ``a == b``, and the
logical ``and``, ``or``, ``xor`` of nonzero values, as 1 and 0, broadcasting; derivative 0), :class:`Maximum` and :class:`Minimum` of two or more inputs
(the gradient goes to the input that is the extreme, shared equally among ties, as
PyTorch's ``torch.maximum``), :class:`ArgExtreme` (the index of the largest or smallest
element along a per-sample axis, as a float; derivative 0) and :class:`Hardmax` (1 at
that index, 0 elsewhere).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from xai_core.errors import ValidationError
from xai_core.nn.layer import Layer
from xai_core.nn.merge import _Elementwise
from xai_core.nn.reduce import _per_sample_axis

__all__ = ["Compare", "Maximum", "Minimum", "ArgExtreme", "Hardmax"]

#: The comparisons :class:`Compare` makes, by name.
COMPARISONS = {
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "equal": np.equal,
    "and": np.logical_and,
    "or": np.logical_or,
    "xor": np.logical_xor,
}


class Compare(_Elementwise):
    """``op(a, b)`` elementwise as 1.0 where it holds and 0.0 elsewhere, broadcasting.

    Parameters
    ----------
    op : {"greater", "greater_equal", "less", "less_equal", "equal", "and", "or", "xor"}
        The logical ones take a nonzero value as true (ONNX's ``And``, ``Or``, ``Xor`` of
        booleans held as 1 and 0).
    name : str, optional

    Notes
    -----
    The output is piecewise constant: its gradient with respect to both inputs is 0.
    """

    kind: ClassVar[str] = "compare"
    arity: ClassVar[int] = 2

    def __init__(self, op: str, name: str | None = None) -> None:
        super().__init__(name)
        if op not in COMPARISONS:
            raise ValidationError(f"op must be one of {', '.join(COMPARISONS)}; got {op!r}.")
        self.op = op

    def apply(self, x, backend, record):
        a, b = self._prepare(x, record)
        fn = COMPARISONS[self.op]
        return backend.elementwise(lambda u, v: fn(u, v).astype(u.dtype), a, b)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        record = self._need(record, self)
        if not input_grad:
            return None, {}
        zero = np.zeros_like(grad)
        return self._back([zero, zero], record, backend), {}

    def get_config(self):
        return {"op": self.op}


def _share(g, x, y, ties):
    return np.where(x == y, g / ties, 0).astype(g.dtype)


class _Extreme(_Elementwise):
    """The elementwise largest (or smallest) of two or more inputs."""

    pick: ClassVar = np.maximum

    def apply(self, x, backend, record):
        xs = self._prepare(x, record)
        y = xs[0]
        for v in xs[1:]:
            y = backend.elementwise(type(self).pick, y, v)
        if record is not None:
            record["xs"], record["y"] = xs, y
        return np.broadcast_to(y, (max(v.shape[0] for v in xs), *self.output_shape)).copy()

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        record = self._need(record, self)
        if not input_grad:
            return None, {}
        xs, y = record["xs"], record["y"]
        ties = sum(backend.elementwise(lambda v, w: (v == w).astype(grad.dtype), v, y) for v in xs)
        parts = [backend.elementwise(_share, grad, v, y, ties, ops=3) for v in xs]
        return self._back(parts, record, backend), {}


class Maximum(_Extreme):
    """Elementwise largest of two or more inputs, broadcasting (ONNX ``Max``)."""

    kind: ClassVar[str] = "maximum"
    pick: ClassVar = np.maximum


class Minimum(_Extreme):
    """Elementwise smallest of two or more inputs, broadcasting (ONNX ``Min``)."""

    kind: ClassVar[str] = "minimum"
    pick: ClassVar = np.minimum


class ArgExtreme(Layer):
    """Index of the largest (or smallest) element along one per-sample axis, as a float.

    Parameters
    ----------
    largest : bool
        ``True``: ONNX ``ArgMax``; ``False``: ``ArgMin``.
    axis : int
        Per-sample axis (negative from the end).
    keepdims : bool, default=True
    select_last_index : bool, default=False
        Among ties, the last index instead of the first.
    name : str, optional

    Notes
    -----
    Piecewise constant: the gradient is 0.
    """

    kind: ClassVar[str] = "arg_extreme"

    def __init__(
        self,
        largest: bool,
        axis: int,
        keepdims: bool = True,
        select_last_index: bool = False,
        name: str | None = None,
    ) -> None:
        super().__init__(name)
        self.largest = bool(largest)
        self.axis = _per_sample_axis(axis, "axis")
        self.keepdims = bool(keepdims)
        self.select_last_index = bool(select_last_index)

    def _ax(self, rank: int) -> int:
        if not -rank <= self.axis < rank:
            raise ValidationError(
                f"{type(self).__name__} {self.name!r}: axis {self.axis} is out of range for "
                f"samples with {rank} axes."
            )
        return self.axis % rank

    def compute_output_shape(self, input_shape):
        ax = self._ax(len(input_shape))
        if self.keepdims:
            return tuple(1 if i == ax else d for i, d in enumerate(input_shape))
        return tuple(d for i, d in enumerate(input_shape) if i != ax)

    def apply(self, x, backend, record):
        ax = self._ax(len(self.input_shape)) + 1
        v = -x if not self.largest else x
        if self.select_last_index:
            n = x.shape[ax]
            idx = n - 1 - np.argmax(np.flip(v, axis=ax), axis=ax)
        else:
            idx = np.argmax(v, axis=ax)
        return idx.astype(x.dtype).reshape(x.shape[0], *self.output_shape)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        if not input_grad:
            return None, {}
        return np.zeros((grad.shape[0], *self.input_shape), dtype=grad.dtype), {}

    def get_config(self):
        return {
            "largest": self.largest,
            "axis": self.axis,
            "keepdims": self.keepdims,
            "select_last_index": self.select_last_index,
        }


class Hardmax(Layer):
    """1 at the first largest element along one per-sample axis, 0 elsewhere (ONNX ``Hardmax``).

    Parameters
    ----------
    axis : int, default=-1
    name : str, optional

    Notes
    -----
    Piecewise constant: the gradient is 0.
    """

    kind: ClassVar[str] = "hardmax"

    def __init__(self, axis: int = -1, name: str | None = None) -> None:
        super().__init__(name)
        self.axis = _per_sample_axis(axis, "axis")

    def compute_output_shape(self, input_shape):
        if not -len(input_shape) <= self.axis < len(input_shape):
            raise ValidationError(
                f"Hardmax {self.name!r}: axis {self.axis} is out of range for {input_shape}."
            )
        return tuple(input_shape)

    def apply(self, x, backend, record):
        ax = self.axis % len(self.input_shape) + 1
        idx = np.expand_dims(np.argmax(x, axis=ax), ax)
        out = np.zeros_like(x)
        np.put_along_axis(out, idx, 1, axis=ax)
        return out

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        if not input_grad:
            return None, {}
        return np.zeros_like(grad), {}

    def get_config(self):
        return {"axis": self.axis}
