"""Straight paths from baselines to rows, planned once: the fast path of the gradient methods.

Integrated gradients and its family need, for rows ``x`` and baselines ``b``, the outputs at
the paths' ends and weighted sums of the gradient at points ``b + a (x - b)`` along them.
:meth:`ModelRunner.straight_paths <xai_core.ModelRunner.straight_paths>` plans them once
per explanation and returns a :class:`StraightPaths`: :meth:`~StraightPaths.outputs` and
:meth:`~StraightPaths.predicted` at the ends, :meth:`~StraightPaths.integral` along the
paths. Any explainer calls it the same way; what it runs depends on the model and backend:

- **The general plan** (:class:`StraightPaths`): the path points of a block go through
  the runner's ``gradient_validated`` in one backward pass, on any model with gradients
  and any backend, in the backend's numerics.
- **An affine first layer** (:class:`AffinePaths`). Along the straight path the
  pre-activation of a network's first linear layer (Dense or Conv2D, after nothing but
  Reshape or Flatten; in a graph network, the one node that reads the input, and nothing
  else reads it) is affine in ``a``::

      z(a) = W x(a) + c = z_b + a (z_x - z_b),    z_x = W x + c,  z_b = W b + c

  so the first layer needs one product for the rows and one for the baselines instead of
  one per path point; and the outputs at the path's ends, ``f(x)`` and ``f(b)``
  (completeness's two terms), come from the same ``z_x`` and ``z_b`` through the later
  layers. Since the layer is linear, the input gradient summed over the steps is
  ``sum_s w_s W^T g_s = W^T (sum_s w_s g_s)``, with ``g_s`` the gradient at the layer's
  output: it is reduced there, and one backward product per path brings it to the input.
  The later layers run on every path point, fused when they are Dense layers and
  elementwise activations (:class:`~xai_core.nn.fused.FusedTail`); in a graph network
  (a ResNet's stem convolution, say) the rest of the graph runs fed with the layer's
  values at the path points, and its backward walk stops at them.

  This is exact in real arithmetic and equals the general plan to floating-point
  rounding. A convolution's backward product needs a forward record over as many rows as
  the gradient: with several baselines per row, or paths split over several blocks, one
  more product per path builds it (still one per path, not one per path point). It is
  taken on backends whose :attr:`~xai_core.Backend.exact_operands` is true (``cpu``,
  ``gpu`` at fp32): backends that round operands (bf16 or int8 on a systolic array) keep
  the general plan, so their numerics stay what that hardware would do. Every product is
  the backend's, counted by it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core.model.runner import predicted_class
from xai_core.nn.dense import Dense
from xai_core.nn.executor import Record, ancestors, plan, run_backward_values, run_forward
from xai_core.nn.fused import FusedTail, fusable
from xai_core.nn.sequential import Sequential
from xai_core.nn.shape import Flatten, Reshape

if TYPE_CHECKING:
    from xai_core.model.runner import ModelRunner

__all__ = [
    "AffinePaths",
    "StraightPaths",
    "add_to_rows",
    "block_count",
    "first_linear_layer",
    "first_linear_node",
    "plan_paths",
]


def add_to_rows(total: np.ndarray, rows: np.ndarray, acc: np.ndarray, paths_per_row: int) -> None:
    """``total[rows] += acc``, the ``paths_per_row`` consecutive paths of a row summed first.

    Parameters
    ----------
    total : ndarray of shape (n_rows, n_features)
    rows : ndarray of int of shape (n_paths,)
        The row of each path, ascending; a row's paths are consecutive.
    acc : ndarray of shape (n_paths, n_features)
        Each path's integral.
    paths_per_row : int
        Paths per row (baselines); with 1, ``rows`` holds each row once.
    """
    if paths_per_row == 1:
        total[rows] += acc
    else:
        first, starts = np.unique(rows, return_index=True)
        total[first] += np.add.reduceat(acc, starts, axis=0)


def block_count(n_paths: int, steps: int, chunk: int) -> int:
    """Backward passes :meth:`StraightPaths.integral` makes for ``n_paths`` paths of ``steps`` points."""
    paths_per_block = max(1, chunk // steps)
    steps_per_block = min(chunk, steps)
    return math.ceil(n_paths / paths_per_block) * math.ceil(steps / steps_per_block)


def first_linear_layer(runner: ModelRunner) -> int | None:
    """Index of the first layer of ``runner``'s network when the affine plan applies.

    Returns
    -------
    int or None
        The index of the first :class:`~xai_core.nn.Dense` or :class:`~xai_core.nn.Conv2D`
        layer, when the model is a float :class:`~xai_core.nn.Sequential`, the backend's
        :attr:`~xai_core.Backend.exact_operands` is true and only Reshape or Flatten
        layers come before it; otherwise None.
    """
    from xai_core.nn.conv import Conv2D

    model = runner.model
    if type(model) is not Sequential or not runner.backend.exact_operands:
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


def first_linear_node(runner: ModelRunner) -> str | None:
    """Name of the first linear node of a graph network when the affine plan applies.

    Returns
    -------
    str or None
        The name of the :class:`~xai_core.nn.Dense` or :class:`~xai_core.nn.Conv2D` node
        that the network's one input reaches through nothing but Reshape or Flatten nodes,
        each the only reader of the value before it, and from which the output is computed
        without reading anything else (no input a view fixed), when the model is a float network
        other than a :class:`~xai_core.nn.Sequential` (:func:`first_linear_layer` plans
        those), the backend's :attr:`~xai_core.Backend.exact_operands` is true and the
        node is not the output; otherwise None.
    """
    from xai_core.nn.conv import Conv2D
    from xai_core.nn.network import Network

    model = runner.model
    if not isinstance(model, Network) or type(model) is Sequential:
        return None
    if not runner.backend.exact_operands or model.is_quantized or not model.built:
        return None
    if len(model.inputs) != 1:
        return None
    value = model.input_name
    while True:
        readers = [node for node in model.nodes if value in node.inputs]
        if len(readers) != 1 or len(readers[0].inputs) != 1:
            return None
        node = readers[0]
        if type(node.layer) in (Dense, Conv2D):
            if node.name == model.output or not _reads_only(model.nodes, model.output, node.name):
                return None
            return node.name
        if type(node.layer) not in (Reshape, Flatten):
            return None
        value = node.name


def _reads_only(nodes: list, output: str, value: str) -> bool:
    """Whether the nodes ``output`` depends on past ``value`` read nothing but ``value``
    and each other (no other input, and no input a view fixed)."""
    how = plan(nodes, output, (value,))
    made = {nodes[i].name for i in how.order}
    return {name for i in how.order for name in nodes[i].inputs} - made == {value}


def plan_paths(
    runner: ModelRunner, X: np.ndarray, baselines: np.ndarray, *, fast: bool = True
) -> StraightPaths:
    """The plan :meth:`ModelRunner.straight_paths` returns (see there)."""
    if not fast:
        return StraightPaths(runner, X, baselines)
    first = first_linear_layer(runner)
    if first is None:
        first = first_linear_node(runner)
    if first is None:
        return StraightPaths(runner, X, baselines)
    return AffinePaths(runner, first, X, baselines)


def _no_bar() -> Any:
    return type("NoBar", (), {"update": lambda self, n=1: None})()


class StraightPaths:
    """Straight paths from baselines to rows, walked through the runner's gradients.

    Parameters
    ----------
    runner : ModelRunner
        A model with gradients, on a backend with gradients.
    X : ndarray of shape (n_samples, *input_shape)
        The rows, checked (finite, the model's input shape).
    baselines : ndarray of shape (1 or n_samples, n_baselines, *input_shape)
        Shared by every row (first axis 1) or one set per row; checked like ``X``.

    Notes
    -----
    The outputs at the ends come from ``runner.predict_validated`` and the gradients from
    ``runner.gradient_validated``, so the runner's own checks apply to both (the runner
    :func:`xai_core.explain` hands a method raises on NaN naming the rows).
    """

    #: Whether the plan computes the paths' first layer once (:class:`AffinePaths`).
    affine = False

    def __init__(self, runner: ModelRunner, X: np.ndarray, baselines: np.ndarray) -> None:
        self.runner = runner
        self.X, self.baselines = X, baselines
        self.n, self.shape = len(X), X.shape[1:]
        self.n_features = math.prod(self.shape)
        self.per_row, self.k = baselines.shape[0], baselines.shape[1]
        self._at_x: np.ndarray | None = None

    def _outputs_at_x(self) -> np.ndarray:
        if self._at_x is None:
            self._at_x = np.asarray(self.runner.predict_validated(self.X), dtype=np.float64)
        return self._at_x

    def predicted(self) -> np.ndarray:
        """The predicted output of each row (the largest; 0 for one output), int64 of shape (n_samples,)."""
        return predicted_class(self._outputs_at_x())

    def outputs(self, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``f(x)[target]`` per row and ``f(b)[target]`` averaged over each row's baselines.

        Parameters
        ----------
        target : ndarray of int64 of shape (n_samples,)

        Returns
        -------
        f_x, f_b : ndarray of float64 of shape (n_samples,)
        """
        f_x = self._outputs_at_x()[np.arange(self.n), target]
        flat = self.baselines.reshape(self.per_row * self.k, *self.shape)
        preds = np.asarray(self.runner.predict_validated(flat), dtype=np.float64)
        return f_x, _baseline_mean(preds.reshape(self.per_row, self.k, -1), target)

    def integral(
        self,
        which: np.ndarray | None,
        target: np.ndarray,
        alphas: np.ndarray,
        weights: np.ndarray,
        *,
        chunk: int,
        bar: Any = None,
        ends: bool = False,
    ) -> np.ndarray:
        """The path integral of the gradient of the rows ``which``, averaged over their baselines.

        ``sum_k (x - b_k) * sum_s weights[s] * grad f_target(b_k + alphas[s] * (x - b_k)) / k``.
        The paths are walked in blocks: ``chunk // steps`` whole paths per backward pass,
        or, when ``chunk < steps``, one path in pieces of ``chunk`` steps
        (:func:`block_count` blocks in all).

        Parameters
        ----------
        which : ndarray of int of shape (m,), or None
            The rows (None: all, in order).
        target : ndarray of int64 of shape (m,)
            The output explained of each of those rows.
        alphas, weights : ndarray of float64 of shape (steps,)
            Quadrature nodes in [0, 1] and weights.
        chunk : int
            Path points per backward pass.
        bar : progress bar, optional
            Updated once per block.
        ends : bool, default=False
            A hint that :meth:`outputs` will be asked next: a plan may compute the outputs
            at the ends with the first block's products (the affine plan does).

        Returns
        -------
        ndarray of float64 of shape (m, *input_shape)
            A new array. The weighted sum over the steps of a block is formed in the
            gradients' dtype (as the backend computed them) and accumulated over blocks
            and baselines in float64.
        """
        bar = _no_bar() if bar is None else bar
        rows_all = np.arange(self.n) if which is None else np.asarray(which)
        X = self.X[rows_all]
        baselines = self.baselines[rows_all] if self.per_row > 1 else self.baselines
        n, shape, n_features, per_row, k = len(X), self.shape, self.n_features, self.per_row, self.k
        steps = len(alphas)
        paths_per_block = max(1, chunk // steps)
        steps_per_block = min(chunk, steps)
        dtype = np.result_type(X.dtype, np.float32)
        flat_x = np.asarray(X, dtype=np.float64).reshape(n, n_features)
        flat_b = np.asarray(baselines, dtype=np.float64).reshape(per_row, k, n_features)
        scaled = np.asarray(weights, dtype=np.float64) / k
        total = np.zeros((n, n_features), dtype=np.float64)
        for first in range(0, n * k, paths_per_block):
            path = np.arange(first, min(first + paths_per_block, n * k))
            row, base_of = path // k, path % k
            base = flat_b[row if per_row > 1 else 0, base_of]
            diff = flat_x[row] - base
            base_t, diff_t = base.astype(dtype), diff.astype(dtype)
            acc = np.zeros((len(path), n_features), dtype=np.float64)
            for s0 in range(0, steps, steps_per_block):
                s1 = min(s0 + steps_per_block, steps)
                points = np.multiply(alphas[s0:s1].astype(dtype)[None, :, None], diff_t[:, None, :])
                points += base_t[:, None, :]
                grads = self.runner.gradient_validated(
                    points.reshape(-1, *shape), np.repeat(target[row], s1 - s0)
                )
                grads = np.asarray(grads).reshape(len(path), s1 - s0, n_features)
                acc += np.einsum("psf,s->pf", grads, scaled[s0:s1].astype(grads.dtype))
                bar.update(1)
            acc *= diff
            add_to_rows(total, row, acc, k)
        return total.reshape(n, *shape)


def _baseline_mean(at_b: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``at_b[.., target]`` of shape (1 or n, k, n_outputs), averaged over the k baselines: (n,)."""
    per_row, k = at_b.shape[:2]
    if per_row == 1 and k == 1:
        return at_b[0, 0, target]
    if per_row == 1:
        return at_b[0][:, target].mean(axis=0)
    return np.take_along_axis(at_b, target[:, None, None], axis=2)[..., 0].mean(axis=1)


def _prefix(
    layers: list, X: np.ndarray, stop: int, backend: Any, record: dict | None = None
) -> np.ndarray:
    """Layers ``[0, stop]`` on ``X``: the first linear layer's output (its ``record`` filled when given).

    A Dense layer is computed here as its own ``apply`` computes it on a backend with
    :attr:`~xai_core.Backend.exact_operands` (``X @ weight + bias`` in the backend's
    dtype) and counted the same, without the general layer machinery.
    """
    out = X
    for layer in layers[:stop]:
        out = layer.apply(out, backend, None)
    layer = layers[stop]
    if type(layer) is not Dense:
        return layer.apply(out, backend, record)
    out = backend.matmul_into(np.asarray(out, dtype=backend.dtype), layer.weight)
    if layer.use_bias:
        out += np.asarray(layer.bias, dtype=out.dtype)  # cast first, as the backend casts it
        backend.count_elementwise(out.size + layer.bias.size, out.size, out.size)
    return out


def _input_gradient(layer: Any, grad: np.ndarray, backend: Any, record: dict) -> np.ndarray:
    """``W^T grad``: one backward product through the first linear layer.

    The layer is linear, so its input gradient needs no activations from the forward pass:
    ``record`` only has to come from a forward pass over as many rows as ``grad``.
    """
    if type(layer) is Dense:  # as Dense.vjp computes it, counted the same
        return backend.matmul_into(grad, layer.weight.T)
    return layer.vjp(grad, backend, record, param_grads=False)[0]


def _sum_steps(ones: np.ndarray, grad: np.ndarray, n_paths: int) -> np.ndarray:
    """The sum of each path's steps of ``grad`` (path after path), as one product with ``ones``.

    Summed in the memory order of ``grad`` (an NCHW-shaped view of channels-last memory
    stays so until the sum, a path's worth of values, is laid out in its shape's order).

    Returns
    -------
    ndarray of shape (n_paths, prod of grad's per-point shape), C order of that shape
    """
    steps = len(grad) // n_paths
    last = grad.transpose(0, 2, 3, 1) if grad.ndim == 4 else grad
    if grad.flags.c_contiguous or not last.flags.c_contiguous:
        return np.matmul(ones, grad.reshape(n_paths, steps, -1))[:, 0]
    summed = np.matmul(ones, last.reshape(n_paths, steps, -1))[:, 0]
    return summed.reshape(n_paths, *last.shape[1:]).transpose(0, 3, 1, 2).reshape(n_paths, -1)


class AffinePaths(StraightPaths):
    """Straight paths whose network starts with a linear layer: that layer computed once.

    Parameters
    ----------
    runner : ModelRunner
        Its model a float network, its backend with
        :attr:`~xai_core.Backend.exact_operands`.
    first : int or str
        :func:`first_linear_layer`'s index in a :class:`~xai_core.nn.Sequential`, or
        :func:`first_linear_node`'s node name in another network.
    X : ndarray of shape (n_samples, *input_shape)
    baselines : ndarray of shape (1 or n_samples, n_baselines, *input_shape)
    fuse : bool, default=True
        Run a tail of Dense layers and elementwise activations through
        :class:`~xai_core.nn.fused.FusedTail`; False runs every later layer's own passes.

    Notes
    -----
    ``z_x`` (n_samples, *z_shape) and ``z_b`` (1 or n_samples times n_baselines, *z_shape)
    are the layer's outputs; :meth:`outputs` and :meth:`integral` reuse them (also across
    the rounds of ``steps="auto"``). The outputs at the ends and the gradients do not pass
    through the runner's ``predict`` and ``gradient``: the outputs are checked with
    ``runner.check_finite`` before the first backward pass, as the runner checks its own.
    """

    affine = True

    def __init__(
        self,
        runner: ModelRunner,
        first: int | str,
        X: np.ndarray,
        baselines: np.ndarray,
        *,
        fuse: bool = True,
    ) -> None:
        super().__init__(runner, X, baselines)
        self.net = runner.model
        self.backend = runner.backend
        self.dtype = self.backend.dtype
        # a graph network: the first linear node's name, and the plan of the rest of the
        # graph fed with its values
        self.node: str | None = None
        self._how = None
        if isinstance(first, str):
            self.node = first
            nodes = self.net.nodes
            self._how = plan(nodes, self.net.output, (first,))
            head = [nodes[i].layer for i in ancestors(nodes, first)]  # the chain to it
            first, self.rest = len(head) - 1, []
        else:
            head = self.net.layers
            self.rest = head[first + 1 :]
        self.layer = head[first]
        self.x_record: dict = {}
        X_d = np.asarray(X, dtype=self.dtype)
        flat_b = np.asarray(baselines, dtype=self.dtype).reshape(self.per_row * self.k, *self.shape)
        z_x = _prefix(head, X_d, first, self.backend, self.x_record)
        z_b = _prefix(head, flat_b, first, self.backend)
        self.z_shape = z_x.shape[1:]
        self.z_features = math.prod(self.z_shape)
        self.z_x = z_x.reshape(self.n, self.z_features)
        self.z_b = z_b.reshape(self.per_row * self.k, self.z_features)
        self.tail = (
            FusedTail(self.rest, self.backend)
            if fuse and self.node is None and fusable(self.rest, self.z_shape)
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
        stacked. A NaN or an infinity among them goes to ``runner.check_finite`` (in
        :meth:`integral`, before the first block's backward pass), which raises
        :class:`~xai_core.errors.ModelOutputError` naming the rows or the baselines when
        the runner checks its outputs.

        Returns
        -------
        ndarray of float64 of shape (n_samples + n_baselines in all, n_outputs)
        """
        out = self._end_outputs
        if out is None:
            out = np.concatenate([self.z_x, self.z_b]).reshape(-1, *self.z_shape)
            if self.tail is not None:
                out = self.tail.outputs(out)
            elif self.node is not None:
                out = run_forward(self.net.nodes, {self.node: out}, self.backend, self._how)
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
                self.runner.check_finite(out[: self.n])
                self.runner.check_finite(out[self.n :], of="the baselines")
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
        return f_x, _baseline_mean(out[self.n :].reshape(self.per_row, self.k, -1), target)

    def integral(
        self,
        which: np.ndarray | None,
        target: np.ndarray,
        alphas: np.ndarray,
        weights: np.ndarray,
        *,
        chunk: int,
        bar: Any = None,
        ends: bool = False,
    ) -> np.ndarray:
        """The quantity of :meth:`StraightPaths.integral`, the first layer's products reused.

        With ``ends`` (and the fused tail), the network's outputs at the rows and the
        baselines, which :meth:`outputs` reads, go forward with the first block (the same
        products, one pass fewer). The quadrature weights seed the backward pass, so the
        sum over a path's steps is a plain sum in the layer's output space.

        Returns
        -------
        ndarray of float64 of shape (len(which), *input_shape)
            A new array. When each row is one path whose steps fit one block, its value is
            one product in the backend's dtype (nothing summed), written as float64; else
            the sums over blocks and baselines are accumulated in float64.
        """
        walk = _Walk(self, which, target, alphas, weights, chunk, ends)
        bar = _no_bar() if bar is None else bar
        for p0 in range(0, walk.n * self.k, walk.paths_per_block):
            self._path_block(walk, p0, min(p0 + walk.paths_per_block, walk.n * self.k), bar)
        if walk.at_once:  # one backward product through the Dense first layer for every path
            # into the path points' memory, done with and still in cache, when it is large enough
            n, size = walk.n, walk.n * self.n_features
            points = walk.points
            into = points[:size].reshape(n, self.n_features) if points.size >= size else None
            g_in = self.backend.matmul_into(walk.G_all, self.layer.weight.T, into)
            row = slice(None) if walk.in_order else walk.which
            diff = self._difference(row, walk.which, walk.zero_base, walk.shared)
            np.multiply(np.asarray(g_in, dtype=self.dtype), diff, out=walk.values)
        return walk.result

    def _path_block(self, walk: _Walk, p0: int, p1: int, bar: Any) -> None:
        """Paths ``p0:p1``: their steps' gradients at the first layer's output, then its input."""
        k, z_features = self.k, self.z_features
        n_paths = p1 - p0
        path = np.arange(p0, p1)
        local = path // k
        row = slice(p0, p1) if walk.in_order else walk.which[local]
        part = walk.both_ends[:n_paths]
        if walk.shared:
            part[:, 0] = self.z_b[0]
            np.subtract(self.z_x[row], self.z_b[0], out=part[:, 1])
            base = None
        else:
            base = path % k if self.per_row == 1 else walk.which[local] * k + path % k
            part[:, 0] = self.z_b[base]
            np.subtract(self.z_x[row], part[:, 0], out=part[:, 1])
        G = None if walk.whole else np.zeros((n_paths, z_features), dtype=np.float64)
        steps, steps_per_block = walk.steps, walk.steps_per_block
        for s0 in range(0, steps, steps_per_block):
            s1 = min(s0 + steps_per_block, steps)
            grad = self._step_block(walk, part, local, p0, s0, s1)
            # the sum over the block's steps of each path, as one product with ones
            ones = walk.all_ones[:, : s1 - s0]
            if walk.at_once:
                steps_of = grad.reshape(n_paths, s1 - s0, z_features)
                np.matmul(ones, steps_of, out=walk.G_all[p0:p1].reshape(n_paths, 1, z_features))
            elif walk.whole:
                G = _sum_steps(ones, grad, n_paths)
            else:
                G += _sum_steps(ones, grad, n_paths)
            bar.update(1)
        if not walk.at_once:
            self._to_input(walk, G, p0, p1, local, row, base)

    def _step_block(
        self, walk: _Walk, part: np.ndarray, local: np.ndarray, p0: int, s0: int, s1: int
    ) -> np.ndarray:
        """The weighted gradients at the first layer's output of steps ``s0:s1`` of the paths ``part``."""
        z_features, z_shape, n_paths = self.z_features, self.z_shape, len(part)
        m = n_paths * (s1 - s0)
        # for every step at once: a product with K = 2, [1, a_s] times [z_b; z_x - z_b]
        points = walk.points
        out = points[: m * z_features].reshape(n_paths, s1 - s0, z_features)
        np.matmul(walk.nodes[None, s0:s1], part, out=out)
        out = out.reshape(m, *z_shape)
        point_target = walk.target[local].repeat(s1 - s0)
        # the weights of the block's points: the steps' weights, path after path
        point_weight = walk.weights_of[:m] if walk.whole else walk.w[s0:s1]
        if self.tail is None:
            return self._layers_gradient(out, point_target, point_weight)
        extra = walk.n_ends if p0 == 0 and s0 == 0 else 0
        if extra:
            end_rows = points[m * z_features : (m + extra) * z_features]
            end_rows = end_rows.reshape(extra, z_features)
            end_rows[: self.n] = self.z_x
            end_rows[self.n :] = self.z_b
            out = points[: (m + extra) * z_features].reshape(m + extra, *z_shape)
        grad, _ = self.tail.input_gradient(
            out, point_target, point_weight, extra, check=self._checked
        )
        return grad

    def _to_input(
        self,
        walk: _Walk,
        G: np.ndarray,
        p0: int,
        p1: int,
        local: np.ndarray,
        row: slice | np.ndarray,
        base: np.ndarray | None,
    ) -> None:
        """The paths' summed gradients ``G`` through the first layer, times ``x - b``, into the rows."""
        layer, backend, dtype, n_paths = self.layer, self.backend, self.dtype, p1 - p0
        if type(layer) is Dense:  # its input gradient reads nothing from the forward pass
            record = {}
        elif walk.all_rows and n_paths == self.n:  # one block of every row's single path
            record = self.x_record
        else:  # a convolution's record over as many rows (one more product per path)
            record = {}
            layer.apply(np.zeros((n_paths, *layer.input_shape), dtype=dtype), backend, record)
        g_in = _input_gradient(
            layer, G.astype(dtype, copy=False).reshape(n_paths, *self.z_shape), backend, record
        )
        acc = np.asarray(g_in, dtype=dtype).reshape(n_paths, self.n_features)
        diff = self._difference(row, base, walk.zero_base, walk.shared)
        if walk.single:
            np.multiply(acc, diff, out=walk.values[p0:p1])
            return
        acc *= diff
        add_to_rows(walk.values, local, acc, self.k)

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

        Returns ``weight * d out[target] / d z`` per point, of the shape of ``z``. In a
        graph network, the rest of the graph fed with ``z`` at the first linear node, and
        the backward walk from the output stopping there.
        """
        backend, out = self.backend, z
        if self.node is not None:
            nodes, record = self.net.nodes, Record()
            out = run_forward(nodes, {self.node: z}, backend, self._how, record)
            seed = np.zeros((len(out), self.net.n_outputs), dtype=out.dtype)
            seed[np.arange(len(out)), target] = weight
            seed = seed.reshape(out.shape)
            at = (self.node,)
            return run_backward_values(nodes, seed, backend, record, at, contiguous=False)[at[0]]
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


class _Walk:
    """What one call of :meth:`AffinePaths.integral` sets up: blocks, buffers and the result.

    The path points of a block are made in one kept array, ``z(a) = z_b + a (z_x - z_b)``,
    with the path's ends after the first block's points when they go forward with it.
    """

    def __init__(
        self,
        plan: AffinePaths,
        which: np.ndarray | None,
        target: np.ndarray,
        alphas: np.ndarray,
        weights: np.ndarray,
        chunk: int,
        ends: bool,
    ) -> None:
        dtype, k, per_row = plan.dtype, plan.k, plan.per_row
        in_order = which is None
        self.which = np.arange(plan.n) if in_order else which
        self.target = target
        n = self.n = len(self.which)
        z_features = plan.z_features
        steps = self.steps = len(alphas)
        self.nodes = np.empty((steps, 2), dtype=dtype)  # (steps, 2): [1, a_s]
        self.nodes[:, 0] = 1
        self.nodes[:, 1] = alphas
        self.w = (np.asarray(weights, dtype=np.float64) / k).astype(dtype)
        self.paths_per_block = max(1, chunk // steps)
        self.steps_per_block = min(chunk, steps)
        self.whole = self.steps_per_block == steps  # every path's steps in one block
        self.single = self.whole and k == 1  # and each row one path: its value is one product
        # a Dense first layer then takes one backward product for all the paths
        self.at_once = self.single and type(plan.layer) is Dense and plan.z_shape == (z_features,)
        self.G_all = np.empty((n, z_features), dtype=dtype) if self.at_once else None
        # float64, written by the last product of each row's value (its one rounding, to
        # the backend's dtype, already made) or summed in float64 over blocks and baselines
        self.result = (np.empty if self.single else np.zeros)((n, *plan.shape), dtype=np.float64)
        self.values = self.result.reshape(n, plan.n_features)
        self.all_rows = n == plan.n and k == 1
        self.in_order = in_order and k == 1
        self.shared = per_row == 1 and k == 1  # one baseline for every row
        self.zero_base = self.shared and not plan.flat_b.any()
        fold = ends and plan.tail is not None and plan._end_outputs is None
        self.n_ends = plan.n + len(plan.z_b) if fold else 0
        size = (self.paths_per_block * self.steps_per_block + self.n_ends) * z_features
        self.points = np.empty(size, dtype=dtype)
        self.all_ones = np.empty((1, self.steps_per_block), dtype=dtype)
        self.all_ones.fill(1)
        self.weights_of = None  # a block is then part of one path (paths_per_block is 1)
        if self.whole:
            weights_of = np.empty((self.paths_per_block, steps), dtype=dtype)
            weights_of[:] = self.w
            self.weights_of = weights_of.reshape(-1)
        # [z_b; z_x - z_b] of each path of a block
        self.both_ends = np.empty((self.paths_per_block, 2, z_features), dtype=dtype)
