"""Integrated gradients through an affine first layer: two products per row, one backward.

Along the straight path ``x(a) = b + a (x - b)`` the pre-activation of a network's first
linear layer (Dense or Conv2D, after nothing but Reshape or Flatten) is affine in ``a``::

    z(a) = W x(a) + c = z_b + a (z_x - z_b),    z_x = W x + c,  z_b = W b + c

so the first layer needs one product for the rows and one for the baselines instead of
one per path point. And since the layer is linear, the input gradient summed over the
steps is ``sum_s w_s W^T g_s = W^T (sum_s w_s g_s)``, with ``g_s`` the gradient at the
layer's output: it is reduced there, and one backward product per path brings it to the
input. The rest of the network runs on every path point as in the general path.

This is exact in real arithmetic and equals the general path to floating-point rounding.
A convolution's backward product needs a forward record over as many rows as the
gradient: with several baselines per row, or paths split over several blocks, one more
product per path builds it (still one per path, not one per path point).
It is taken only on the reference ``cpu`` backend, whose numerics are the plain fp32
(fp64) products this computes and whose counters then count the products made; backends
that simulate other hardware (bf16 or int8 operands, systolic arrays) keep the general
path, so their numerics and counters stay what that hardware would do.
"""

from __future__ import annotations

import numpy as np

from xai_core import ModelRunner
from xai_core.backends.cpu import CPUBackend
from xai_core.nn import Conv2D, Dense, Flatten, Reshape, Sequential

__all__ = ["first_linear_layer", "affine_path_integral"]


def first_linear_layer(runner: ModelRunner) -> int | None:
    """Index of the first layer of ``runner``'s network when the affine fast path applies.

    Returns
    -------
    int or None
        The index of the first :class:`~xai_core.nn.Dense` or :class:`~xai_core.nn.Conv2D`
        layer, when the model is a float :class:`~xai_core.nn.Sequential` on the ``cpu``
        backend and only Reshape or Flatten layers come before it; otherwise None.
    """
    model = runner.model
    if type(runner.backend) is not CPUBackend or type(model) is not Sequential:
        return None
    if model.is_quantized or not model.built:
        return None
    for i, layer in enumerate(model.layers):
        if type(layer) in (Dense, Conv2D):
            return i if i + 1 < len(model.layers) else None
        if type(layer) not in (Reshape, Flatten):
            return None
    return None


def _prefix(
    net: Sequential, X: np.ndarray, stop: int, backend: CPUBackend, record: dict | None = None
) -> np.ndarray:
    """Layers ``[0, stop]`` on ``X``: the first linear layer's output (its ``record`` filled when given)."""
    out = X
    for layer in net.layers[:stop]:
        out = layer.apply(out, backend, None)
    return net.layers[stop].apply(out, backend, record)


def _input_gradient(
    layer: Dense | Conv2D, grad: np.ndarray, backend: CPUBackend, record: dict
) -> np.ndarray:
    """``W^T grad``: one backward product through the first linear layer.

    The layer is linear, so its input gradient needs no activations from the forward pass:
    ``record`` only has to come from a forward pass over as many rows as ``grad``.
    """
    return layer.vjp(grad, backend, record, param_grads=False)[0]


def affine_path_integral(
    runner: ModelRunner,
    first: int,
    X: np.ndarray,
    target: np.ndarray,
    baselines: np.ndarray,
    alphas: np.ndarray,
    weights: np.ndarray,
    *,
    chunk: int,
    bar: object,
) -> np.ndarray:
    """Integrated gradients of every row, averaged over its baselines, by the affine first layer.

    The same quantity as :func:`xai_ig._batching.path_integral` (see there for the
    arguments); ``first`` is :func:`first_linear_layer`'s index and ``bar`` a progress bar
    updated once per chunk. The quadrature weights seed the backward pass, so the sum
    over a path's steps is a plain sum in the layer's output space.

    Returns
    -------
    ndarray of float64 of shape (n_samples, *input_shape)
    """
    net: Sequential = runner.model  # type: ignore[assignment]
    backend = runner.backend
    dtype = backend.dtype
    n, shape = len(X), X.shape[1:]
    n_features = int(np.prod(shape, dtype=np.int64))
    per_row, k = baselines.shape[0], baselines.shape[1]
    steps = len(alphas)
    layer = net.layers[first]
    rest = net.layers[first + 1 :]
    X_d = np.asarray(X, dtype=dtype)
    flat_b = np.asarray(baselines, dtype=dtype).reshape(per_row * k, *shape)
    x_record: dict = {}
    z_x = _prefix(net, X_d, first, backend, x_record)
    z_b = _prefix(net, flat_b, first, backend)
    z_shape = z_x.shape[1:]
    z_features = int(np.prod(z_shape, dtype=np.int64))
    z_x = z_x.reshape(n, z_features)
    z_b = z_b.reshape(per_row * k, z_features)
    a = np.asarray(alphas, dtype=dtype)
    w = (np.asarray(weights, dtype=np.float64) / k).astype(dtype)
    flat_x = np.asarray(X, dtype=np.float64).reshape(n, n_features)
    flat_b64 = np.asarray(baselines, dtype=np.float64).reshape(per_row * k, n_features)
    total = np.zeros((n, n_features), dtype=np.float64)
    n_out = net.n_outputs
    paths_per_block = max(1, chunk // steps)
    steps_per_block = min(chunk, steps)
    for p0 in range(0, n * k, paths_per_block):
        path = np.arange(p0, min(p0 + paths_per_block, n * k))
        row = path // k
        base = path % k if per_row == 1 else path
        zb, dz = z_b[base], z_x[row] - z_b[base]
        G = np.zeros((len(path), z_features), dtype=np.float64)
        for s0 in range(0, steps, steps_per_block):
            s1 = min(s0 + steps_per_block, steps)
            m = len(path) * (s1 - s0)
            out = np.multiply(dz[:, None, :], a[None, s0:s1, None])
            out += zb[:, None, :]
            out = out.reshape(m, *z_shape)
            records: list[dict] = [{} for _ in rest]
            for later, record in zip(rest, records):
                out = later.apply(out, backend, record)
            seed = np.zeros((m, n_out), dtype=out.dtype)
            seed[np.arange(m), np.repeat(target[row], s1 - s0)] = np.tile(w[s0:s1], len(path))
            grad = seed.reshape(out.shape)
            for later, record in zip(reversed(rest), reversed(records)):
                grad = later.vjp(grad, backend, record, param_grads=False)[0]
            G += grad.reshape(len(path), s1 - s0, z_features).sum(axis=1)
            bar.update(1)
        if type(layer) is Dense:  # its input gradient reads nothing from the forward pass
            record = {}
        elif len(path) == n:  # one block of one path per row: the rows' own forward pass
            record = x_record
        else:  # a convolution's record over as many rows (one more product per path)
            record = {}
            layer.apply(np.zeros((len(path), *layer.input_shape), dtype=dtype), backend, record)
        g_in = _input_gradient(layer, G.astype(dtype).reshape(len(path), *z_shape), backend, record)
        acc = np.asarray(g_in, dtype=np.float64).reshape(len(path), n_features)
        acc *= flat_x[row] - flat_b64[base]
        if k == 1:
            total[row] += acc
        else:
            rows, starts = np.unique(row, return_index=True)
            total[rows] += np.add.reduceat(acc, starts, axis=0)
    return total.reshape(X.shape)
