"""Layers with several inputs: Add, Subtract, Multiply, Divide, Remainder, Exponentiate,
Concatenate.

Operands broadcast **per sample**, numpy-style (trailing axes aligned): a ``Constant``
of per-sample shape ``(c, 1, 1)`` scales the channels of NCHW samples ``(c, h, w)``, a
scalar constant applies everywhere. Every arithmetic operation, forward and backward,
is one ``backend.elementwise``; summing a gradient over broadcast axes is a
``backend.reduce``.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from xai_core.errors import ShapeError, ValidationError
from xai_core.nn.layer import Layer

__all__ = ["Add", "Subtract", "Multiply", "Divide", "Remainder", "Exponentiate", "Concatenate"]


def _aligned(x: np.ndarray, rank: int) -> np.ndarray:
    """``x`` of shape (batch, *s) as (batch, 1, ..., 1, *s) with ``rank`` per-sample axes."""
    extra = rank - (x.ndim - 1)
    return x.reshape(x.shape[0], *([1] * extra), *x.shape[1:]) if extra else x


def _unbroadcast(g: np.ndarray, x_shape: tuple[int, ...], backend) -> np.ndarray:
    """Sum ``g`` over the axes an operand of full shape ``x_shape`` was broadcast along."""
    rank = g.ndim - 1
    aligned = (x_shape[0], *([1] * (rank - (len(x_shape) - 1))), *x_shape[1:])
    axes = tuple(i for i, (a, b) in enumerate(zip(aligned, g.shape)) if a == 1 and b != 1)
    if axes:
        g = backend.reduce(np.sum, g, axis=axes).reshape(
            [d for i, d in enumerate(g.shape) if i not in axes]
        )
        g = g.reshape([1 if i in axes else d for i, d in enumerate(aligned)])
    return g.reshape(x_shape)


class _Elementwise(Layer):
    """Shared shapes and recording of the broadcasting layers."""

    n_inputs: ClassVar[int | None] = None
    arity: ClassVar[int | None] = None

    def compute_output_shape(self, input_shape):
        n = len(input_shape)
        if (self.arity is not None and n != self.arity) or n < 2:
            need = self.arity if self.arity is not None else "2 or more"
            raise ValidationError(
                f"{type(self).__name__} {self.name!r} takes {need} inputs; got {n} "
                f"(of shapes {list(input_shape)})."
            )
        try:
            return tuple(np.broadcast_shapes(*input_shape))
        except ValueError:
            raise ShapeError(
                f"{type(self).__name__} {self.name!r}: the input shapes {input_shape} do not "
                "broadcast (trailing axes must be equal or 1)."
            ) from None

    def _prepare(self, xs, record):
        rank = len(self.output_shape)
        xs = [_aligned(x, rank) for x in xs]
        if record is not None:
            record["shapes"] = [x.shape for x in xs]
        return xs

    def _back(self, parts, record, backend):
        return [
            None if p is None else _unbroadcast(p, s, backend)
            for p, s in zip(parts, record["shapes"])
        ]

    @staticmethod
    def _wanted(needs, n: int) -> list[bool]:
        """Which inputs' gradients to compute: all, unless the walk says (a constant's not)."""
        return [True] * n if needs is None else [bool(w) for w in needs]


def _sum(*xs):
    out = xs[0] + xs[1]
    for x in xs[2:]:
        out = out + x
    return out


def _product(*xs):
    out = xs[0] * xs[1]
    for x in xs[2:]:
        out = out * x
    return out


class Add(_Elementwise):
    """Sum of two or more inputs (residual connections; ONNX ``Add``; a bias as a Constant)."""

    kind: ClassVar[str] = "add"
    takes_input_needs: ClassVar[bool] = True

    def apply(self, x, backend, record):
        xs = self._prepare(x, record)
        if record is not None:
            record["ok"] = True
        return backend.elementwise(_sum, *xs, ops=len(xs) - 1)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True, needs=None):
        record = self._need(record, self)
        if not input_grad:
            return None, {}
        wanted = self._wanted(needs, len(record["shapes"]))
        return self._back([grad if w else None for w in wanted], record, backend), {}


class Subtract(_Elementwise):
    """``a - b`` (ONNX ``Sub``)."""

    kind: ClassVar[str] = "subtract"
    takes_input_needs: ClassVar[bool] = True
    arity: ClassVar[int] = 2

    def apply(self, x, backend, record):
        a, b = self._prepare(x, record)
        return backend.elementwise(np.subtract, a, b)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True, needs=None):
        record = self._need(record, self)
        if not input_grad:
            return None, {}
        want_a, want_b = self._wanted(needs, 2)
        parts = [grad if want_a else None]
        parts.append(backend.elementwise(np.negative, grad) if want_b else None)
        return self._back(parts, record, backend), {}


class Multiply(_Elementwise):
    """Product of two or more inputs (ONNX ``Mul``; squeeze-and-excitation gates)."""

    kind: ClassVar[str] = "multiply"
    takes_input_needs: ClassVar[bool] = True

    def apply(self, x, backend, record):
        xs = self._prepare(x, record)
        if record is not None:
            record["xs"] = xs
        return backend.elementwise(_product, *xs, ops=len(xs) - 1)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True, needs=None):
        xs = self._need(record, self)["xs"]
        if not input_grad:
            return None, {}
        parts = [
            backend.elementwise(
                _product, grad, *(x for j, x in enumerate(xs) if j != i), ops=len(xs) - 1
            )
            if wanted
            else None
            for i, wanted in enumerate(self._wanted(needs, len(xs)))
        ]
        return self._back(parts, record, backend), {}


def _divide_b_grad(g, a, b):
    return -g * a / (b * b)


class Divide(_Elementwise):
    """``a / b`` (ONNX ``Div``, usually by a Constant)."""

    kind: ClassVar[str] = "divide"
    takes_input_needs: ClassVar[bool] = True
    arity: ClassVar[int] = 2

    def apply(self, x, backend, record):
        a, b = self._prepare(x, record)
        if record is not None:
            record["ab"] = (a, b)
        return backend.elementwise(np.divide, a, b)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True, needs=None):
        a, b = self._need(record, self)["ab"]
        if not input_grad:
            return None, {}
        want_a, want_b = self._wanted(needs, 2)
        parts = [
            backend.elementwise(np.divide, grad, b) if want_a else None,
            backend.elementwise(_divide_b_grad, grad, a, b, ops=4) if want_b else None,
        ]
        return self._back(parts, record, backend), {}


def _quotient_grad(g, a, b, fmod):
    q = np.trunc(a / b) if fmod else np.floor(a / b)
    return -g * q


class Remainder(_Elementwise):
    """``a mod b`` (ONNX ``Mod``): the divisor's sign (Python's ``%``, ``torch.remainder``)
    or, with ``fmod``, the dividend's (C's ``fmod``, ``torch.fmod``).

    Parameters
    ----------
    fmod : bool, default=False
    name : str, optional

    Notes
    -----
    The value is numpy's ``np.mod`` or ``np.fmod``, infinities and signed zeros included
    (``-3 mod inf`` is ``inf``, ``3 mod -inf`` is ``-inf``). The gradient is 1 for ``a`` and
    ``-floor(a / b)`` (``-trunc(a / b)`` with ``fmod``) for ``b``, as torch's.
    """

    kind: ClassVar[str] = "remainder"
    takes_input_needs: ClassVar[bool] = True
    arity: ClassVar[int] = 2

    def __init__(self, fmod: bool = False, name: str | None = None) -> None:
        super().__init__(name)
        self.fmod = bool(fmod)

    def apply(self, x, backend, record):
        a, b = self._prepare(x, record)
        if record is not None:
            record["ab"] = (a, b)
        return backend.elementwise(np.fmod if self.fmod else np.mod, a, b, ops=3)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True, needs=None):
        a, b = self._need(record, self)["ab"]
        if not input_grad:
            return None, {}
        want_a, want_b = self._wanted(needs, 2)
        fmod = self.fmod
        parts = [
            grad if want_a else None,
            backend.elementwise(lambda g, u, v: _quotient_grad(g, u, v, fmod), grad, a, b, ops=3)
            if want_b
            else None,
        ]
        return self._back(parts, record, backend), {}

    def get_config(self):
        return {"fmod": self.fmod}


def _power(a, b):
    with np.errstate(all="ignore"):  # NaN for a negative base and a fractional exponent
        return np.power(a, b)


def _base_grad(g, a, b):
    with np.errstate(all="ignore"):
        return np.where(b == 0, 0.0, g * b * np.power(a, b - 1))


def _exponent_grad(g, a, b, y):
    with np.errstate(all="ignore"):
        return np.where((a == 0) & (b >= 0), 0.0, g * y * np.log(a))


class Exponentiate(_Elementwise):
    """``a ** b`` of two computed tensors (ONNX ``Pow``, ``torch.pow``); :class:`Power`
    raises to a constant exponent.

    Notes
    -----
    The value is numpy's ``np.power``: a negative base with a fractional exponent is NaN, as
    in onnxruntime. The gradients are torch's: ``b * a ** (b - 1)`` for ``a`` (0 where
    ``b == 0``) and ``a ** b * log(a)`` for ``b`` (0 where ``a == 0`` and ``b >= 0``).
    """

    kind: ClassVar[str] = "exponentiate"
    takes_input_needs: ClassVar[bool] = True
    arity: ClassVar[int] = 2

    def apply(self, x, backend, record):
        a, b = self._prepare(x, record)
        y = backend.elementwise(_power, a, b, ops=3)
        if record is not None:
            record["aby"] = (a, b, y)
        return y

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True, needs=None):
        a, b, y = self._need(record, self)["aby"]
        if not input_grad:
            return None, {}
        want_a, want_b = self._wanted(needs, 2)
        parts = [
            backend.elementwise(_base_grad, grad, a, b, ops=5) if want_a else None,
            backend.elementwise(_exponent_grad, grad, a, b, y, ops=5) if want_b else None,
        ]
        return self._back(parts, record, backend), {}


class Concatenate(Layer):
    """Join two or more inputs along a per-sample axis (ONNX ``Concat``).

    Parameters
    ----------
    axis : int, default=0
        Per-sample axis: 0 is the channels of NCHW samples, -1 those of NHWC samples.
    name : str, optional
    """

    kind: ClassVar[str] = "concatenate"
    n_inputs: ClassVar[int | None] = None

    def __init__(self, axis: int = 0, name: str | None = None) -> None:
        super().__init__(name)
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise ValidationError(f"axis must be an integer; got {axis!r}.")
        self.axis = int(axis)

    def compute_output_shape(self, input_shape):
        rank = len(input_shape[0])
        if not -rank <= self.axis < rank or any(len(s) != rank for s in input_shape):
            raise ShapeError(
                f"Concatenate(axis={self.axis}) needs inputs with the same number of axes "
                f"(more than the axis); got {input_shape}."
            )
        ax = self.axis % rank
        for s in input_shape:
            if [d for i, d in enumerate(s) if i != ax] != [
                d for i, d in enumerate(input_shape[0]) if i != ax
            ]:
                raise ShapeError(
                    f"Concatenate(axis={self.axis}): shapes {input_shape} differ off the axis."
                )
        out = list(input_shape[0])
        out[ax] = sum(s[ax] for s in input_shape)
        return tuple(out)

    def apply(self, x, backend, record):
        n = max(v.shape[0] for v in x)
        xs = [v if v.shape[0] == n else np.broadcast_to(v, (n, *v.shape[1:])) for v in x]
        ax = self.axis % len(self.output_shape) + 1
        if record is not None:
            record["sizes"] = [v.shape[ax] for v in x]
            record["batches"] = [v.shape[0] for v in x]
        return np.concatenate(xs, axis=ax)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        record = self._need(record, self)
        if not input_grad:
            return None, {}
        ax = self.axis % len(self.output_shape) + 1
        cuts = np.cumsum(record["sizes"])[:-1]
        parts = np.split(grad, cuts, axis=ax)
        parts = [
            p if b == p.shape[0] else backend.reduce(np.sum, p, axis=0)[None]
            for p, b in zip(parts, record["batches"])
        ]
        return parts, {}

    def get_config(self):
        return {"axis": self.axis}
