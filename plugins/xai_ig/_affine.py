"""Integrated gradients through an affine first layer: two products per row, one backward.

Along the straight path ``x(a) = b + a (x - b)`` the pre-activation of a network's first
linear layer (Dense or Conv2D, after nothing but Reshape or Flatten) is affine in ``a``::

    z(a) = W x(a) + c = z_b + a (z_x - z_b),    z_x = W x + c,  z_b = W b + c

so the first layer needs one product for the rows and one for the baselines instead of
one per path point; and the outputs at the path's ends, ``f(x)`` and ``f(b)``
(completeness's two terms), come from the same ``z_x`` and ``z_b`` through the later
layers, with no second pass through the first. And since the layer is linear, the input gradient summed over the
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

import math

import numpy as np

from xai_core import ModelRunner
from xai_core.attribution.explainer import predicted_class
from xai_core.attribution.guard import check_outputs
from xai_core.backends.cpu import CPUBackend
from xai_core.nn import Conv2D, Dense, Flatten, Reshape, Sequential
from xai_ig._fused import FusedTail, counted_matmul, fusable
from xai_ig._integration import add_to_rows

__all__ = ["AffinePath", "first_linear_layer"]


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
    layers = model.layers
    for i, layer in enumerate(layers):
        if type(layer) in (Dense, Conv2D):
            return i if i + 1 < len(layers) else None
        if type(layer) not in (Reshape, Flatten):
            return None
    return None


def _prefix(
    layers: list, X: np.ndarray, stop: int, backend: CPUBackend, record: dict | None = None
) -> np.ndarray:
    """Layers ``[0, stop]`` on ``X``: the first linear layer's output (its ``record`` filled when given).

    A Dense layer is computed here as its own ``apply`` computes it on the cpu backend
    (``X @ weight + bias`` in the backend's dtype) and counted the same, without the
    general layer machinery.
    """
    out = X
    for layer in layers[:stop]:
        out = layer.apply(out, backend, None)
    layer = layers[stop]
    if type(layer) is not Dense:
        return layer.apply(out, backend, record)
    out = counted_matmul(backend, np.asarray(out, dtype=backend.dtype), layer.weight)
    if layer.use_bias:
        out += np.asarray(layer.bias, dtype=out.dtype)  # cast first, as the backend casts it
        backend._count_vector(out.size + layer.bias.size, out.size, out.size)
    return out


def _input_gradient(
    layer: Dense | Conv2D, grad: np.ndarray, backend: CPUBackend, record: dict
) -> np.ndarray:
    """``W^T grad``: one backward product through the first linear layer.

    The layer is linear, so its input gradient needs no activations from the forward pass:
    ``record`` only has to come from a forward pass over as many rows as ``grad``.
    """
    if type(layer) is Dense:  # as Dense.vjp computes it, counted the same
        return counted_matmul(backend, grad, layer.weight.T)
    return layer.vjp(grad, backend, record, param_grads=False)[0]


class AffinePath:
    """The first linear layer of a network at the rows and their baselines, computed once.

    Parameters
    ----------
    runner : ModelRunner
        On the ``cpu`` backend, its model a :class:`~xai_core.nn.Sequential`.
    first : int
        :func:`first_linear_layer`'s index.
    X : ndarray of shape (n_samples, *input_shape)
    baselines : ndarray of shape (1 or n_samples, n_baselines, *input_shape)
    fuse : bool, default=True
        Run a tail of Dense layers and elementwise activations through
        :class:`~xai_ig._fused.FusedTail`; False runs every later layer's own passes.
    method : str, default="ig"
        The method asking, for the messages of :meth:`outputs`' checks.
    rows : ndarray of int64 of shape (n_samples,), optional
        The rows' index in the caller's data, for those messages.

    Notes
    -----
    ``z_x`` (n_samples, *z_shape) and ``z_b`` (1 or n_samples times n_baselines, *z_shape)
    are the layer's outputs; :meth:`outputs` and :meth:`integral` reuse them (also across
    the rounds of ``steps="auto"``).
    """

    def __init__(
        self,
        runner: ModelRunner,
        first: int,
        X: np.ndarray,
        baselines: np.ndarray,
        *,
        fuse: bool = True,
        method: str = "ig",
        rows: np.ndarray | None = None,
    ) -> None:
        self.method, self.rows = method, rows
        self.net: Sequential = runner.model  # type: ignore[assignment]
        self.backend = runner.backend
        self.dtype = self.backend.dtype
        layers = self.net.layers
        self.layer = layers[first]
        self.rest = layers[first + 1 :]
        self.n, self.shape = len(X), X.shape[1:]
        self.n_features = math.prod(self.shape)
        self.per_row, self.k = baselines.shape[0], baselines.shape[1]
        self.x_record: dict = {}
        X_d = np.asarray(X, dtype=self.dtype)
        flat_b = np.asarray(baselines, dtype=self.dtype).reshape(self.per_row * self.k, *self.shape)
        z_x = _prefix(layers, X_d, first, self.backend, self.x_record)
        z_b = _prefix(layers, flat_b, first, self.backend)
        self.z_shape = z_x.shape[1:]
        self.z_features = math.prod(self.z_shape)
        self.z_x = z_x.reshape(self.n, self.z_features)
        self.z_b = z_b.reshape(self.per_row * self.k, self.z_features)
        self.tail = (
            FusedTail(self.rest, self.backend)
            if fuse and fusable(self.rest, self.z_shape)
            else None
        )
        # x - b, by which the input gradients are multiplied, in the backend's dtype
        self.flat_x = X_d.reshape(self.n, self.n_features)
        self.flat_b = flat_b.reshape(self.per_row * self.k, self.n_features)
        self._end_outputs: np.ndarray | None = None
        self._ends_checked = False

    def _ends(self) -> np.ndarray:
        """The network's outputs at the rows and then at the baselines, checked finite.

        Computed once: by the first block of :meth:`integral` (``ends=True``, with the
        fused tail), or here by one pass of the later layers over ``z_x`` and ``z_b``
        stacked. They are checked as the core checks every output a method receives
        (:func:`xai_core.attribution.guard.check_outputs`): a NaN or an infinity raises
        :class:`~xai_core.errors.ModelOutputError` naming the rows or the baselines (in
        :meth:`integral`, before the first block's backward pass).

        Returns
        -------
        ndarray of float64 of shape (n_samples + n_baselines in all, n_outputs)
        """
        out = self._end_outputs
        if out is None:
            out = np.concatenate([self.z_x, self.z_b]).reshape(-1, *self.z_shape)
            if self.tail is not None:
                out = self.tail.outputs(out)
            else:
                for later in self.rest:
                    out = later.apply(out, self.backend, None)
            out = np.asarray(out, dtype=np.float64).reshape(len(out), -1)
            self._end_outputs = out
        return self._checked(out)

    def _checked(self, out: np.ndarray) -> np.ndarray:
        """``out`` (the outputs at the ends) kept, once checked finite."""
        self._end_outputs = out
        if not self._ends_checked:
            if not np.logical_and.reduce(np.isfinite(out), axis=None):
                method = self.method
                label = f"method {method!r}"
                check_outputs(out[: self.n], method, rows=self.rows, label=label)
                check_outputs(out[self.n :], method, of="the baselines", label=label)
            self._ends_checked = True
        return out

    def predicted(self) -> np.ndarray:
        """The predicted output of each row (the largest; 0 for one output), int64 of shape (n_samples,)."""
        return predicted_class(self._ends()[: self.n])

    def outputs(self, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``f(x)[target]`` per row and ``f(b)[target]`` averaged over each row's baselines.

        From the network's outputs at the path's ends (:meth:`_ends`, checked finite),
        made without the first layer's products again.

        Returns
        -------
        f_x, f_b : ndarray of float64 of shape (n_samples,)
        """
        out = self._ends()
        f_x = out[np.arange(self.n), target]
        at_b = out[self.n :].reshape(self.per_row, self.k, -1)
        if self.per_row == 1 and self.k == 1:
            f_b = at_b[0, 0, target]
        elif self.per_row == 1:
            f_b = at_b[0][:, target].mean(axis=0)
        else:
            f_b = np.take_along_axis(at_b, target[:, None, None], axis=2)[..., 0].mean(axis=1)
        return f_x, f_b

    def integral(
        self,
        which: np.ndarray | None,
        target: np.ndarray,
        alphas: np.ndarray,
        weights: np.ndarray,
        *,
        chunk: int,
        bar: object,
        ends: bool = False,
    ) -> np.ndarray:
        """Integrated gradients of the rows ``which``, averaged over their baselines.

        The quantity of :func:`xai_ig._batching.path_integral` for ``X[which]`` (see there;
        ``None``: all rows, in order); ``target`` holds the targets of those rows and
        ``bar`` is updated once per chunk. With ``ends`` (and the fused tail), the network's
        outputs at the rows and the baselines, which :meth:`outputs` reads, go forward
        with the first block (the same products, one pass fewer).
        The quadrature weights seed the backward pass, so the sum over a path's steps is a
        plain sum in the layer's output space.

        Returns
        -------
        ndarray of float64 of shape (len(which), *input_shape)
            A new array. When each row is one path whose steps fit one block, its value is
            one product in the backend's dtype (nothing summed), written as float64; else
            the sums over blocks and baselines are accumulated in float64.
        """
        backend, dtype, k, per_row = self.backend, self.dtype, self.k, self.per_row
        in_order = which is None
        if in_order:
            which = np.arange(self.n)
        n, z_shape, z_features = len(which), self.z_shape, self.z_features
        layer = self.layer
        steps = len(alphas)
        nodes = np.empty((steps, 2), dtype=dtype)  # (steps, 2): [1, a_s]
        nodes[:, 0] = 1
        nodes[:, 1] = alphas
        w = (np.asarray(weights, dtype=np.float64) / k).astype(dtype)
        paths_per_block = max(1, chunk // steps)
        steps_per_block = min(chunk, steps)
        whole = steps_per_block == steps  # every path's steps in one block
        single = whole and k == 1  # and each row one path: its value is one product
        # a Dense first layer then takes one backward product for all the paths
        at_once = single and type(layer) is Dense and z_shape == (z_features,)
        G_all = np.empty((n, z_features), dtype=dtype) if at_once else None
        # float64, written by the last product of each row's value (its one rounding, to
        # the backend's dtype, already made) or summed in float64 over blocks and baselines
        result = (np.empty if single else np.zeros)((n, *self.shape), dtype=np.float64)
        values = result.reshape(n, self.n_features)
        all_rows = n == self.n and k == 1
        in_order = in_order and k == 1
        shared = per_row == 1 and k == 1  # one baseline for every row
        zero_base = shared and not self.flat_b.any()
        # the path points of a block, made in one kept array: z(a) = z_b + a (z_x - z_b)
        # with the path's ends after the first block's points
        fold = ends and self.tail is not None and self._end_outputs is None
        n_ends = self.n + len(self.z_b) if fold else 0
        points = np.empty((paths_per_block * steps_per_block + n_ends) * z_features, dtype=dtype)
        all_ones = np.empty((1, steps_per_block), dtype=dtype)
        all_ones.fill(1)
        weights_of = None  # a block is then part of one path (paths_per_block is 1)
        if whole:
            weights_of = np.empty((paths_per_block, steps), dtype=dtype)
            weights_of[:] = w
            weights_of = weights_of.reshape(-1)
        both_ends = np.empty((paths_per_block, 2, z_features), dtype=dtype)  # [z_b; z_x - z_b]
        for p0 in range(0, n * k, paths_per_block):
            p1 = min(p0 + paths_per_block, n * k)
            n_paths = p1 - p0
            path = np.arange(p0, p1)
            local = path // k
            row = slice(p0, p1) if in_order else which[local]
            part = both_ends[:n_paths]
            if shared:
                part[:, 0] = self.z_b[0]
                np.subtract(self.z_x[row], self.z_b[0], out=part[:, 1])
                base = None
            else:
                base = path % k if per_row == 1 else which[local] * k + path % k
                part[:, 0] = self.z_b[base]
                np.subtract(self.z_x[row], part[:, 0], out=part[:, 1])
            G = None if whole else np.zeros((n_paths, z_features), dtype=np.float64)
            for s0 in range(0, steps, steps_per_block):
                s1 = min(s0 + steps_per_block, steps)
                m = n_paths * (s1 - s0)
                # for every step at once: a product with K = 2, [1, a_s] times [z_b; z_x - z_b]
                out = points[: m * z_features].reshape(n_paths, s1 - s0, z_features)
                np.matmul(nodes[None, s0:s1], part, out=out)
                out = out.reshape(m, *z_shape)
                point_target = target[local].repeat(s1 - s0)
                # the weights of the block's points: the steps' weights, path after path
                point_weight = weights_of[:m] if whole else w[s0:s1]
                if self.tail is not None:
                    extra = n_ends if p0 == 0 and s0 == 0 else 0
                    if extra:
                        end_rows = points[m * z_features : (m + extra) * z_features]
                        end_rows = end_rows.reshape(extra, z_features)
                        end_rows[: self.n] = self.z_x
                        end_rows[self.n :] = self.z_b
                        out = points[: (m + extra) * z_features].reshape(m + extra, *z_shape)
                    grad, _ = self.tail.input_gradient(
                        out, point_target, point_weight, extra, check=self._checked
                    )
                else:
                    grad = self._layers_gradient(out, point_target, point_weight)
                # the sum over the block's steps of each path, as one product with ones
                ones = all_ones[:, : s1 - s0]
                steps_of = grad.reshape(n_paths, s1 - s0, z_features)
                if at_once:
                    np.matmul(ones, steps_of, out=G_all[p0:p1].reshape(n_paths, 1, z_features))
                elif whole:
                    G = np.matmul(ones, steps_of)[:, 0]
                else:
                    G += np.matmul(ones, steps_of)[:, 0]
                bar.update(1)
            if at_once:
                continue
            if type(layer) is Dense:  # its input gradient reads nothing from the forward pass
                record = {}
            elif all_rows and n_paths == self.n:  # one block of every row's single path
                record = self.x_record
            else:  # a convolution's record over as many rows (one more product per path)
                record = {}
                layer.apply(np.zeros((n_paths, *layer.input_shape), dtype=dtype), backend, record)
            g_in = _input_gradient(
                layer, G.astype(dtype, copy=False).reshape(n_paths, *z_shape), backend, record
            )
            acc = np.asarray(g_in, dtype=dtype).reshape(n_paths, self.n_features)
            diff = self._difference(row, base, zero_base, shared)
            if single:
                np.multiply(acc, diff, out=values[p0:p1])
                continue
            acc *= diff
            add_to_rows(values, local, acc, k)
        if at_once:  # one backward product through the Dense first layer for every path
            # into the path points' memory, done with and still in cache, when it is large enough
            size = n * self.n_features
            into = points[:size].reshape(n, self.n_features) if points.size >= size else None
            g_in = counted_matmul(backend, G_all, layer.weight.T, into)
            row = slice(None) if in_order else which
            diff = self._difference(row, which, zero_base, shared)  # k = 1: baseline r of row r
            np.multiply(np.asarray(g_in, dtype=dtype), diff, out=values)
        return result

    def _difference(
        self, row: slice | np.ndarray, base: np.ndarray | None, zero_base: bool, shared: bool
    ) -> np.ndarray:
        """``x - b`` of the rows ``row`` and their baselines ``base`` (x itself from a zero
        baseline), by which the input gradients are multiplied."""
        if zero_base:
            return self.flat_x[row]
        if shared:
            return self.flat_x[row] - self.flat_b[0]
        return self.flat_x[row] - self.flat_b[base]

    def _layers_gradient(self, z: np.ndarray, target: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """The later layers' own forward and backward passes at points ``z`` (m, *z_shape).

        Returns ``weight * d out[target] / d z`` per point, of the shape of ``z``.
        """
        backend, out = self.backend, z
        records: list[dict] = [{} for _ in self.rest]
        for later, record in zip(self.rest, records):
            out = later.apply(out, backend, record)
        m = len(out)
        seed = np.zeros((m, self.net.n_outputs), dtype=out.dtype)
        seed[np.arange(m), target] = weight
        grad = seed.reshape(out.shape)
        for later, record in zip(reversed(self.rest), reversed(records)):
            grad = later.vjp(grad, backend, record, param_grads=False)[0]
        return grad
