"""Dense layers and elementwise activations at many points: forward and backward, fused.

A gradient method asks, per block of points, for the layers forward and the gradient of
one weighted output back to their input: for a whole multilayer perceptron (saliency,
SmoothGrad) or for what follows an affine first layer (integrated gradients along straight
paths, :mod:`xai_core.model.paths`). For the common run of Dense layers and
elementwise activations, ending in a softmax or not, :class:`FusedTail` does that with
each activation applied in place on the product that feeds it, the derivative taken from
the activation's output (``relu'(x) = [y > 0]``, ``tanh' = 1 - y**2``, ``sigmoid' = y (1 -
y)``), and the softmax's vector-Jacobian product for a one-hot seed in closed form, ``w
p_t (e_t - p)``. It computes the same quantities as the layers' own ``apply`` and ``vjp``
to floating-point rounding, in the backend's dtype; every matrix product goes through the
backend (:meth:`~xai_core.Backend.matmul_into`: computed and counted by it) and the
elementwise work it does in numpy is counted through
:meth:`~xai_core.Backend.count_elementwise`, in one sum per pass. It runs on backends whose
:attr:`~xai_core.Backend.exact_operands` is true: their elementwise work is numpy's in their
dtype, so doing it here in place changes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.special import expit

from xai_core.backends.base import Backend
from xai_core.nn.activations import Linear, ReLU, Sigmoid, Softmax, Tanh
from xai_core.nn.dense import Dense
from xai_core.nn.layer import Layer

__all__ = ["FusedTail", "fusable"]

#: Layers the fused tail computes (a Softmax only as the last).
_KINDS = (Dense, ReLU, Tanh, Sigmoid, Linear)


def fusable(layers: Sequence[Layer], z_shape: tuple[int, ...]) -> bool:
    """Whether :class:`FusedTail` computes ``layers`` on flat inputs of shape ``z_shape``."""
    if len(z_shape) != 1 or not layers:
        return False
    body = layers[:-1] if type(layers[-1]) is Softmax else layers
    return all(type(layer) in _KINDS for layer in body)


class FusedTail:
    """Dense layers and elementwise activations (optionally a final softmax), forward and back.

    Parameters
    ----------
    layers : sequence of Layer
        Accepted by :func:`fusable`.
    backend : Backend
        With :attr:`~xai_core.Backend.exact_operands`.

    Notes
    -----
    The products and activations of :meth:`input_gradient` are written into arrays kept
    from one call to the next (one explanation walks its blocks of path points through
    the same memory); each product is the backend's, written into them.
    """

    def __init__(self, layers: Sequence[Layer], backend: Backend) -> None:
        self.backend = backend
        self.softmax = type(layers[-1]) is Softmax
        self.body = [
            layer
            for layer in (layers[:-1] if self.softmax else layers)
            if type(layer) is not Linear
        ]
        dtype = backend.dtype
        self._weights = {
            id(layer): (
                np.asarray(layer.weight, dtype=dtype),
                np.ascontiguousarray(np.asarray(layer.weight, dtype=dtype).T),
                np.asarray(layer.bias, dtype=dtype) if layer.use_bias else None,
            )
            for layer in self.body
            if type(layer) is Dense
        }
        self._buffers: dict[tuple[str, int], np.ndarray] = {}
        self._reuse = True
        self._pending = [0, 0, 0]

    def _count(self, n_in: int, n_out: int, ops: int) -> None:
        """Note elementwise work (elements read, written, operations), counted once per pass."""
        self._pending[0] += n_in
        self._pending[1] += n_out
        self._pending[2] += ops

    def _buffer(
        self, key: tuple[str, int], shape: tuple[int, ...], dtype: Any = None
    ) -> np.ndarray:
        """An array of ``shape``: a view of the one kept under ``key`` (grown when too small)."""
        dtype = self.backend.dtype if dtype is None else np.dtype(dtype)
        if not self._reuse:
            return np.empty(shape, dtype=dtype)
        size = math.prod(shape)
        buf = self._buffers.get(key)
        if buf is None or buf.size < size or buf.dtype != dtype:
            buf = self._buffers[key] = np.empty(size, dtype=dtype)
        return buf[:size].reshape(shape)

    def _product(
        self, a: np.ndarray, b: np.ndarray, key: tuple[str, int], out: np.ndarray | None = None
    ) -> np.ndarray:
        """``a @ b`` on the backend, into ``out`` or a kept array."""
        if out is None:
            out = self._buffer(key, (a.shape[0], b.shape[1]))
        return self.backend.matmul_into(a, b, out)

    def _forward(
        self, z: np.ndarray
    ) -> tuple[np.ndarray, list[np.ndarray], dict[int, np.ndarray], bool]:
        """The body on points ``z`` (m, features), overwritten.

        Returns its output; what the backward pass needs (per activation, popped last
        first); the input of each Dense layer (by index in the body) whose memory the
        backward pass may overwrite (``z`` itself, or a ReLU's output, whose mask is kept
        apart; not a Tanh's or Sigmoid's output, which their derivatives read); and
        whether the output is transposed.
        """
        saved: list[np.ndarray] = []
        free: dict[int, np.ndarray] = {}
        out = z
        # with a softmax after a last Dense layer, its output is made transposed, (classes,
        # m): the softmax's reductions and updates then run along contiguous rows of m
        last = len(self.body) - 1
        transposed = self.softmax and last >= 0 and type(self.body[last]) is Dense
        for i, layer in enumerate(self.body):
            kind = type(layer)
            if kind is Dense:
                if not any(kept is out for kept in saved):  # no activation's output kept
                    free[i] = out
                w, wt, b = self._weights[id(layer)]
                if transposed and i == last:
                    out = self._product(wt, out.T, ("forward", i))  # (out @ w).T, the same products
                    if b is not None:
                        out += b[:, None]
                else:
                    out = self._product(out, w, ("forward", i))
                    if b is not None:
                        out += b
                if b is not None:
                    self._count(out.size + b.size, out.size, out.size)
                continue
            if kind is ReLU:
                # out * [out > 0], the mask kept for the backward pass (faster than
                # np.maximum here; equal to it for every finite value)
                mask = np.greater(out, 0, out=self._buffer(("mask", i), out.shape, np.bool_))
                out *= mask
                self._count(out.size, out.size, out.size * layer.ops)
                saved.append(mask)
                continue
            if kind is Tanh:
                np.tanh(out, out=out)
                self._count(out.size, out.size, out.size * 4)
            else:  # Sigmoid
                expit(out, out=out)
                self._count(out.size, out.size, out.size * 4)
            saved.append(out)
        return out, saved, free, transposed

    def _softmax(self, pt: np.ndarray) -> None:
        """The softmax over the classes of ``pt`` (classes, m), in place."""
        m = pt.shape[1]
        pt -= np.maximum.reduce(pt, axis=0)
        self._count(pt.size, m, pt.size)  # the row maxima
        self._count(pt.size + m, pt.size, pt.size)  # less the maxima
        np.exp(pt, out=pt)
        self._count(pt.size, pt.size, 4 * pt.size)
        pt /= np.add.reduce(pt, axis=0)
        self._count(pt.size, m, pt.size)  # the row sums
        self._count(pt.size + m, pt.size, pt.size)  # divided by them

    def outputs(self, z: np.ndarray) -> np.ndarray:
        """The network's outputs at points ``z`` (m, z_features) (not overwritten), shape (m, n_outputs)."""
        self._pending = [0, 0, 0]
        self._reuse = False
        try:
            out, _, _, transposed = self._forward(np.array(z, dtype=self.backend.dtype))
            if self.softmax:
                pt = out if transposed else np.ascontiguousarray(out.T)
                self._softmax(pt)
                out = pt.T
        finally:
            self._reuse = True
        self.backend.count_elementwise(*self._pending)
        return out

    def input_gradient(
        self,
        z: np.ndarray,
        target: np.ndarray,
        weight: np.ndarray,
        extra: int = 0,
        check: Callable[[np.ndarray], object] | None = None,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """``weight * d out[target] / d z`` per point, for points ``z`` of shape (m + extra, z_features).

        Parameters
        ----------
        z : ndarray of the backend's dtype, shape (m + extra, z_features)
            The first layer's outputs at the path points; overwritten.
        target : ndarray of int of shape (m,)
            The output explained at each of the first ``m`` points.
        weight : ndarray of the backend's dtype, shape (m,)
            The quadrature weight of each point (the backward pass's seed).
        extra : int, default=0
            Points after the first ``m`` that only go forward: their outputs are returned
            (the path's ends, computed in the same products as the first block).
        check : callable, optional
            Called with those outputs before the backward pass (it may raise).

        Returns
        -------
        grad : ndarray of the backend's dtype, shape (m, z_features)
            Valid until the next call (its memory is reused).
        outputs : ndarray of float64 of shape (extra, n_outputs), or None without ``extra``
        """
        self._pending = [0, 0, 0]
        out, saved, free, transposed = self._forward(z)
        m = len(target)
        ends = None
        if self.softmax:
            # p = softmax(out); the seed weight * e_target gives weight * p_t * (e_t - p),
            # computed on pt = p.T (classes, m): every reduction over the classes is an
            # elementwise pass over contiguous rows, far faster than along a short last axis
            pt = out if transposed else np.ascontiguousarray(out.T)
            self._softmax(pt)
            flat = pt.reshape(
                -1
            )  # pt is contiguous: (target, point) is target * (m + extra) + point
            if extra:
                ends = np.array(pt[:, m:].T, dtype=np.float64)
                pt = pt[:, :m]
            at = target * (m + extra) + np.arange(m)
            scaled = flat[at]
            scaled *= weight
            pt *= -scaled
            flat[at] += scaled
            self._count(pt.size + m, pt.size, pt.size + m)
            grad = pt.T
        else:
            if extra:
                ends = np.array(out[m:].reshape(extra, -1), dtype=np.float64)
            grad = np.zeros((m, *out.shape[1:]), dtype=out.dtype)
            grad[np.arange(m), target] = weight
        if ends is not None and check is not None:
            check(ends)
        for i in range(len(self.body) - 1, -1, -1):
            layer = self.body[i]
            kind = type(layer)
            if kind is Dense:
                # into the memory of the layer's input where the forward pass is done with it
                into = free.get(i)
                grad = self._product(
                    grad,
                    self._weights[id(layer)][1],
                    ("backward", i),
                    into if into is None else into[:m],
                )
                continue
            y = saved.pop()[:m]
            if kind is ReLU:  # y is the forward pass's mask [x > 0]
                grad *= y
                self._count(2 * grad.size, grad.size, 2 * grad.size)
            elif kind is Tanh:
                np.multiply(y, y, out=y)
                np.subtract(1, y, out=y)
                grad *= y
                self._count(2 * grad.size, grad.size, 3 * grad.size)
            else:  # Sigmoid
                grad *= y * (1 - y)
                self._count(2 * grad.size, grad.size, 3 * grad.size)
        self.backend.count_elementwise(*self._pending)
        return grad, ends


def network_gradient(
    model: Any, backend: Backend
) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
    """The gradient of a whole multilayer perceptron through :class:`FusedTail`, or None.

    For a float :class:`~xai_core.nn.Sequential` that is, after Reshape or Flatten layers
    only, a run of layers :func:`fusable` accepts on flat inputs, on a backend with
    :attr:`~xai_core.Backend.exact_operands` and gradients: the function ``(X, target) ->
    d output[target] / d X`` for one batch, equal to the network's own
    :meth:`~xai_core.nn.Network.gradient` to the rounding of the backend's dtype, with the
    same products counted. A new :class:`FusedTail` is made per call, so the network may
    change between calls and many threads may call at once.

    Returns
    -------
    callable or None
        Taking X of shape (m, *input_shape) and target int64 of shape (m,), returning an
        ndarray of the backend's dtype of shape (m, *input_shape).
    """
    from xai_core.nn.sequential import Sequential
    from xai_core.nn.shape import Flatten, Reshape

    if type(model) is not Sequential or not backend.supports_gradients:
        return None
    if not backend.exact_operands or model.is_quantized or not model.built:
        return None
    layers = list(model.layers)
    start = 0
    while start < len(layers) and type(layers[start]) in (Reshape, Flatten):
        start += 1
    body = layers[start:]
    flat = layers[start - 1].output_shape if start else model.input_shape
    if not body or type(body[0]) is not Dense or not fusable(body, tuple(flat)):
        return None

    def gradient(X: np.ndarray, target: np.ndarray) -> np.ndarray:
        m = len(X)
        z = np.array(X, dtype=backend.dtype).reshape(m, -1)  # a copy: the pass overwrites it
        seed = np.ones(m, dtype=backend.dtype)
        grad, _ = FusedTail(body, backend).input_gradient(z, np.asarray(target), seed)
        return grad.reshape(X.shape)

    return gradient
