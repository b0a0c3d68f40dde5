"""Layers on whole tensors: MatMul of two activations, Expand, Where and Slice.

Operands broadcast **per sample**, numpy-style, as in :mod:`xai_core.nn.merge`. Every
matrix product, forward and backward, goes through ``backend.batched_matmul`` (one GEMM
per broadcast matrix pair, counted like any other); selections are one
``backend.elementwise``; summing a gradient over broadcast axes is a ``backend.reduce``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from xai_core.errors import ShapeError, ValidationError
from xai_core.nn.layer import Layer
from xai_core.nn.merge import _aligned, _unbroadcast

__all__ = ["MatMul", "Expand", "Where", "Slice"]


def _ints(value: Any, what: str) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in value)
    except (TypeError, ValueError):
        raise ValidationError(f"{what} must be a sequence of ints; got {value!r}.") from None


def _matmul_shape(a: tuple[int, ...], b: tuple[int, ...], who: str) -> tuple[int, ...]:
    """Per-sample shape of ``np.matmul`` of samples of shapes ``a`` and ``b`` (both >= 2-D)."""
    if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
        raise ShapeError(
            f"MatMul {who}: samples of shapes {a} and {b} do not multiply (each needs at "
            "least 2 axes and the last axis of the first must equal the next-to-last of "
            "the second)."
        )
    try:
        lead = np.broadcast_shapes(a[:-2], b[:-2])
    except ValueError:
        raise ShapeError(
            f"MatMul {who}: the leading axes of {a} and {b} do not broadcast."
        ) from None
    return (*lead, a[-2], b[-1])


class MatMul(Layer):
    """``np.matmul`` of two inputs over their last two axes, broadcasting the rest.

    Attention's ``Q @ K^T`` and ``softmax(...) @ V`` (ONNX ``MatMul`` of two activations).
    Each sample of each input has at least two axes; an input of batch 1 (a ``Constant``)
    broadcasts over the batch.

    Parameters
    ----------
    name : str, optional

    Notes
    -----
    The forward pass is one ``backend.batched_matmul`` of shape (G, M, K) @ (G, K, N),
    G the number of broadcast matrix pairs; the backward pass two more (``dY @ B^T`` and
    ``A^T @ dY``), each summed back over the axes its input was broadcast along, and only
    for the inputs whose gradient the walk needs. When the second input is one matrix for
    all (a weight, ``tokens @ W``), each product is instead one ``backend.matmul`` of all
    the rows: (G * M, K) @ (K, N) forward, and the weight's gradient (K, G * M) @ (G * M, N)
    with the sum over the matrices inside it; the multiply-adds are the same.
    """

    kind: ClassVar[str] = "matmul"
    n_inputs: ClassVar[int | None] = 2
    takes_input_needs: ClassVar[bool] = True

    def compute_output_shape(self, input_shape):
        a, b = input_shape
        return _matmul_shape(tuple(a), tuple(b), repr(self.name))

    def _lead(self, a: np.ndarray, b: np.ndarray) -> tuple[int, ...]:
        return np.broadcast_shapes(a.shape[:-2], b.shape[:-2])

    @staticmethod
    def _shared_right(a: np.ndarray, b: np.ndarray) -> bool:
        """Whether ``b`` is one matrix for every matrix of ``a`` (a weight: ``x @ W``)."""
        return all(d == 1 for d in b.shape[:-2]) and a.ndim >= b.ndim

    def _product(self, a, b, backend) -> np.ndarray:
        lead = self._lead(a, b)
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
        if self._shared_right(a, b) and a.shape[:-2] == lead:
            # x @ W (a linear layer on tokens): one GEMM of all rows, not one per matrix of x
            rows = np.ascontiguousarray(a).reshape(-1, k)
            return backend.matmul(rows, b.reshape(k, n)).reshape(*lead, m, n)
        # contiguous stacks: numpy's matmul leaves BLAS for a slow loop on a stride-0 axis
        a3 = np.ascontiguousarray(np.broadcast_to(a, (*lead, m, k))).reshape(-1, m, k)
        b3 = np.ascontiguousarray(np.broadcast_to(b, (*lead, k, n))).reshape(-1, k, n)
        return backend.batched_matmul(a3, b3).reshape(*lead, m, n)

    def apply(self, x, backend, record):
        rank = len(self.output_shape)
        a, b = (_aligned(np.asarray(v), rank) for v in x)
        if record is not None:
            record["a"], record["b"] = a, b
        return self._product(a, b, backend)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True, needs=None):
        record = self._need(record, self)
        if not input_grad:
            return None, {}
        a, b = record["a"], record["b"]
        need_a, need_b = (True, True) if needs is None else needs
        ga = gb = None
        if need_a:
            ga = _unbroadcast(
                self._product(grad, np.swapaxes(b, -1, -2), backend), a.shape, backend
            )
        if need_b and self._shared_right(a, b) and a.shape[:-2] == grad.shape[:-2]:
            # the weight's gradient summed over every matrix of x: one GEMM over all rows
            rows = np.ascontiguousarray(a).reshape(-1, a.shape[-1])
            g = np.ascontiguousarray(grad).reshape(-1, grad.shape[-1])
            gb = backend.matmul(rows.T, g).reshape(b.shape)
        elif need_b:
            gb = _unbroadcast(
                self._product(np.swapaxes(a, -1, -2), grad, backend), b.shape, backend
            )
        return [ga, gb], {}

    def macs_per_sample(self) -> int:
        a, _ = self.input_shape
        return int(np.prod(self.output_shape)) * int(a[-1])


class Expand(Layer):
    """Broadcast each sample to a shape (ONNX ``Expand``): a copy, no arithmetic.

    Parameters
    ----------
    shape : tuple of int
        Per-sample target shape; numpy's two-way broadcasting of the sample against it
        gives the output (a 1 in ``shape`` keeps the sample's size).
    name : str, optional

    Notes
    -----
    The gradient sums over the broadcast axes (one ``backend.reduce``).
    """

    kind: ClassVar[str] = "expand"

    def __init__(self, shape: tuple[int, ...], name: str | None = None) -> None:
        super().__init__(name)
        self.shape = _ints(shape, "shape")
        if any(d < 1 for d in self.shape):
            raise ValidationError(f"shape must hold positive ints; got {self.shape}.")

    def compute_output_shape(self, input_shape):
        try:
            return tuple(np.broadcast_shapes(tuple(input_shape), self.shape))
        except ValueError:
            raise ShapeError(
                f"Expand {self.name!r}: samples of shape {tuple(input_shape)} do not broadcast "
                f"to {self.shape}."
            ) from None

    def apply(self, x, backend, record):
        x = _aligned(np.asarray(x), len(self.output_shape))
        if record is not None:
            record["shape"] = x.shape
        return np.broadcast_to(x, (x.shape[0], *self.output_shape)).copy()

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        record = self._need(record, self)
        if not input_grad:
            return None, {}
        g = _unbroadcast(grad, record["shape"], backend)
        return g.reshape(grad.shape[0], *self.input_shape), {}

    def get_config(self):
        return {"shape": list(self.shape)}


def _select(c, a, b):
    return np.where(c != 0, a, b)


def _keep(g, c):
    return np.where(c != 0, g, 0)


def _drop(g, c):
    return np.where(c != 0, 0, g)


class Where(Layer):
    """``where(condition, a, b)`` of three inputs, broadcasting (ONNX ``Where``).

    The condition is an input like the others (a ``Constant`` of 0 and 1 where ONNX has a
    fixed boolean tensor); a non-zero entry picks ``a``.

    Parameters
    ----------
    name : str, optional

    Notes
    -----
    Forward and backward are ``backend.elementwise`` selections; the gradient goes to
    ``a`` where the condition holds and to ``b`` elsewhere; the condition gets none (zeros).
    """

    kind: ClassVar[str] = "where"
    n_inputs: ClassVar[int | None] = 3

    def compute_output_shape(self, input_shape):
        try:
            return tuple(np.broadcast_shapes(*(tuple(s) for s in input_shape)))
        except ValueError:
            raise ShapeError(
                f"Where {self.name!r}: the input shapes {input_shape} do not broadcast."
            ) from None

    def apply(self, x, backend, record):
        rank = len(self.output_shape)
        c, a, b = (_aligned(np.asarray(v), rank) for v in x)
        if record is not None:
            record["c"], record["shapes"] = c, [a.shape, b.shape]
        return backend.elementwise(_select, c, a, b)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        record = self._need(record, self)
        if not input_grad:
            return None, {}
        c = record["c"]
        sa, sb = record["shapes"]
        ga = _unbroadcast(backend.elementwise(_keep, grad, c), sa, backend)
        gb = _unbroadcast(backend.elementwise(_drop, grad, c), sb, backend)
        gc = np.zeros((c.shape[0], *self.input_shape[0]), dtype=grad.dtype)
        return [gc, ga, gb], {}


class Slice(Layer):
    """``x[..., start:stop:step, ...]`` of each sample along one axis (ONNX ``Split``, ``Slice``).

    Parameters
    ----------
    axis : int
        Per-sample axis (0 is the first axis after the batch).
    start, stop : int
        Python slice bounds (negative counts from the end); ``step`` is positive.
    step : int, default=1
    name : str, optional

    Notes
    -----
    No arithmetic: the gradient is the output gradient placed back in a zero tensor.
    """

    kind: ClassVar[str] = "slice"

    def __init__(
        self, axis: int, start: int, stop: int, step: int = 1, name: str | None = None
    ) -> None:
        super().__init__(name)
        self.axis, self.start, self.stop, self.step = _ints((axis, start, stop, step), "slice")
        if self.step < 1:
            raise ValidationError(f"step must be a positive int; got {self.step}.")

    def _index(self, rank: int) -> tuple[slice, ...]:
        index = [slice(None)] * (rank + 1)
        index[self.axis + 1] = slice(self.start, self.stop, self.step)
        return tuple(index)

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        if not 0 <= self.axis < len(shape):
            raise ShapeError(f"Slice {self.name!r}: axis {self.axis} of samples of shape {shape}.")
        size = len(range(*slice(self.start, self.stop, self.step).indices(shape[self.axis])))
        if size == 0:
            raise ShapeError(
                f"Slice {self.name!r}: [{self.start}:{self.stop}:{self.step}] of axis "
                f"{self.axis} (size {shape[self.axis]}) is empty."
            )
        return (*shape[: self.axis], size, *shape[self.axis + 1 :])

    def apply(self, x, backend, record):
        return np.ascontiguousarray(x[self._index(len(self.input_shape))])

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        if not input_grad:
            return None, {}
        gx = np.zeros((grad.shape[0], *self.input_shape), dtype=grad.dtype)
        gx[self._index(len(self.input_shape))] = grad
        return gx, {}

    def get_config(self):
        return {"axis": self.axis, "start": self.start, "stop": self.stop, "step": self.step}
