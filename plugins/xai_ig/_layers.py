"""What the layer and CAM methods share: the ``layer=`` option, batched layer gradients,
the straight path's points and Captum's upsampling of a layer map to the input.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from xai_core import ModelRunner
from xai_core.errors import ShapeError, ValidationError
from xai_core.nn import Conv2D
from xai_ig._batching import batch_bar, chunk_points
from xai_ig._integration import integration_nodes

__all__ = [
    "INTERPOLATE_MODES",
    "captum_nodes",
    "default_layer",
    "interpolate",
    "layer_rows",
    "path_rows",
    "make_baseline",
    "unit_names",
]

#: Upsampling modes of :func:`interpolate` (torch's ``F.interpolate``'s, align_corners=False).
INTERPOLATE_MODES = ("nearest", "linear", "bilinear", "trilinear")


def default_layer(runner: ModelRunner) -> str:
    """The last convolution of the network (Grad-CAM's usual layer), by node name.

    Raises
    ------
    ValidationError
        The network has no convolution: ``layer=`` must name one of its nodes.
    """
    runner.layer_value(0)  # refuses models without layers
    nodes = runner.model.nodes
    for node in reversed(nodes):
        if isinstance(node.layer, Conv2D):
            return node.name
    raise ValidationError(
        "the network has no convolution to default to: give layer= one of "
        f"{[node.name for node in nodes]} (a name or an index, as net.summary() lists them)."
    )


def captum_nodes(rule: str, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """The nodes and step sizes of Captum's ``approximation_parameters(rule)`` for ``steps``.

    Those of :func:`~xai_ig._integration.integration_nodes` but for ``riemann_trapezoid``,
    whose step sizes in Captum are ``1 / steps`` (halved at both ends, so they sum to
    ``(steps - 1) / steps``) where the trapezoid rule's are ``1 / (steps - 1)``: the layer
    methods use Captum's, to give its values.

    Returns
    -------
    alphas, weights : ndarray of float64 of shape (steps,)
    """
    alphas, weights = integration_nodes(rule, steps)
    if rule == "riemann_trapezoid":
        weights = weights * ((steps - 1) / steps)
    return alphas, weights


def layer_rows(
    runner: ModelRunner,
    X: np.ndarray,
    target: np.ndarray,
    value: str,
    *,
    chunk: int,
    progress: bool | None,
    desc: str,
    relu_rule: str = "gradient",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Activations and gradients at ``value``, and ``f(x)[target]``, for every row, in chunks.

    Returns
    -------
    activations, gradient : ndarray of float64 of shape (n_samples, *value shape)
    output : ndarray of float64 of shape (n_samples,)
    """
    n = len(X)
    acts, grads, outs = [], [], []
    with batch_bar(math.ceil(n / chunk), progress, desc) as bar:
        for start in range(0, n, chunk):
            s = slice(start, min(start + chunk, n))
            lg = runner.layer_gradient_validated(X[s], target[s], value, relu_rule=relu_rule)
            acts.append(np.asarray(lg.activations, np.float64))
            grads.append(np.asarray(lg.gradient, np.float64))
            outs.append(np.asarray(lg.output, np.float64))
            bar.update(1)
    return np.concatenate(acts), np.concatenate(grads), np.concatenate(outs)


def make_baseline(baseline: Any, X: np.ndarray, dtype: Any) -> np.ndarray:
    """Captum's ``baselines`` for one input: a number, or one array of the input's shape.

    Parameters
    ----------
    baseline : None, "zeros", float or array-like of shape input_shape or (1, *input_shape)
    X : ndarray of shape (n_samples, *input_shape)

    Returns
    -------
    ndarray of shape (1, *input_shape)
    """
    shape = X.shape[1:]
    if baseline is None or (isinstance(baseline, str) and baseline == "zeros"):
        return np.zeros((1, *shape), dtype)
    if isinstance(baseline, str):
        raise ValidationError(
            f"baseline must be 'zeros', a number or an array of shape {shape}; got {baseline!r}."
        )
    b = np.asarray(baseline, dtype=np.float64)
    if b.ndim == 0:
        return np.full((1, *shape), float(b), dtype)
    if b.shape == shape:
        b = b[None]
    if b.shape != (1, *shape):
        raise ShapeError(
            f"baseline must be a number or an array of shape {shape} or (1, *{shape}); got "
            f"shape {b.shape}."
        )
    if not np.isfinite(b).all():
        raise ValidationError("baseline must be finite.")
    return b.astype(dtype)


def path_rows(
    runner: ModelRunner,
    X: np.ndarray,
    n_points: int,
    chunk: int,
    run: Callable[[slice, int], None],
    *,
    progress: bool | None,
    desc: str,
) -> None:
    """Walk the rows in chunks whose ``n_points`` path points each fit ``chunk`` points
    (at least one row per pass): ``run(rows, n_rows)`` for each."""
    n = len(X)
    rows = max(1, chunk // max(1, n_points))
    with batch_bar(math.ceil(n / rows), progress, desc) as bar:
        for start in range(0, n, rows):
            s = slice(start, min(start + rows, n))
            run(s, s.stop - s.start)
            bar.update(1)


def path_chunk(runner: ModelRunner, internal_batch_size: int | None, X: np.ndarray) -> int:
    """Path points per backward pass (:func:`~xai_ig._batching.chunk_points`)."""
    return chunk_points(runner, internal_batch_size, int(np.prod(X.shape[1:], dtype=np.int64)))


def unit_names(value: str, shape: tuple[int, ...]) -> tuple[str, ...]:
    """One name per unit of a layer: ``"name[i,j,k]"``, in C order."""
    return tuple(f"{value}[{','.join(map(str, i))}]" for i in np.ndindex(*shape))


def _axis_nearest(size_in: int, size_out: int) -> np.ndarray:
    """Source index of each output index, as torch's ``nearest`` (float32 scale)."""
    dst = np.arange(size_out)
    if size_out == size_in:
        return dst
    if size_out == 2 * size_in:
        return dst >> 1
    scale = np.float32(size_in) / np.float32(size_out)
    return np.minimum(np.floor(dst.astype(np.float32) * scale).astype(np.int64), size_in - 1)


def _axis_linear(size_in: int, size_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Neighbours and weight of each output index, as torch's linear modes with
    ``align_corners=False`` (half-pixel centres, clamped at 0)."""
    scale = size_in / size_out
    src = np.maximum((np.arange(size_out) + 0.5) * scale - 0.5, 0.0)
    lo = np.minimum(np.floor(src).astype(np.int64), size_in - 1)
    hi = np.minimum(lo + 1, size_in - 1)
    return lo, hi, src - lo


def interpolate(a: np.ndarray, size: tuple[int, ...], mode: str = "nearest") -> np.ndarray:
    """Captum's ``LayerAttribution.interpolate``: ``F.interpolate(a, size, mode=mode)``.

    Parameters
    ----------
    a : ndarray of shape (n_samples, channels, *spatial)
    size : tuple of int
        The output's spatial shape, of ``len(spatial)`` axes. A map without spatial axes
        (a dense layer's) is returned as it is, for the caller to broadcast.
    mode : {"nearest", "linear", "bilinear", "trilinear"}, default="nearest"
        Nearest neighbour, or separable linear interpolation with ``align_corners=False``
        (the linear mode's name says the number of spatial axes, as in torch).

    Returns
    -------
    ndarray of shape (n_samples, channels, *size)
    """
    if mode not in INTERPOLATE_MODES:
        raise ValidationError(
            f"interpolate_mode must be one of {list(INTERPOLATE_MODES)}; got {mode!r}."
        )
    spatial = a.shape[2:]
    if not spatial:
        return a
    if len(spatial) != len(size):
        raise ShapeError(
            f"the layer map has spatial shape {spatial} and the input {tuple(size)}: they must "
            "have the same number of axes to upsample one to the other."
        )
    if mode != "nearest":
        wanted = {"linear": 1, "bilinear": 2, "trilinear": 3}[mode]
        if wanted != len(spatial):
            raise ShapeError(
                f"interpolate_mode {mode!r} upsamples {wanted} spatial axes; the layer map has "
                f"{len(spatial)}."
            )
    out = a
    for axis, (s_in, s_out) in enumerate(zip(spatial, size), start=2):
        if mode == "nearest":
            out = np.take(out, _axis_nearest(s_in, s_out), axis=axis)
        else:
            lo, hi, w = _axis_linear(s_in, s_out)
            shape = [1] * out.ndim
            shape[axis] = s_out
            w = w.reshape(shape)
            out = np.take(out, lo, axis=axis) * (1 - w) + np.take(out, hi, axis=axis) * w
    return out
