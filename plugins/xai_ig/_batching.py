"""Gradients of many points in few large backward passes, in chunks of bounded size.

Every gradient the plugin needs (the path points of integrated gradients for all rows,
baselines and steps; the noisy copies of SmoothGrad; plain saliency) is one flat list of
points. It is walked in chunks of ``internal_batch_size`` points, each chunk one call of
``runner.gradient`` with the per-point targets, and reduced to one attribution per row
as it goes, so memory stays bounded however many steps or samples are asked.
"""

from __future__ import annotations

import math

import numpy as np

from xai_core import ModelRunner
from xai_core.progress import Bar, progress_bar
from xai_core.validation import check_int
from xai_ig._affine import AffinePath, first_linear_layer
from xai_ig._integration import add_to_rows

__all__ = [
    "MAX_CHUNK_ELEMENTS",
    "block_count",
    "PROGRESS_MIN_CHUNKS",
    "chunk_points",
    "gradient_rows",
    "path_integral",
    "batch_bar",
]

#: Input elements in one chunk by default (32 MiB of float64 per temporary).
MAX_CHUNK_ELEMENTS = 1 << 22
#: With ``progress=None`` a bar is shown from this many chunks on.
PROGRESS_MIN_CHUNKS = 10


def chunk_points(runner: ModelRunner, internal_batch_size: int | None, n_features: int) -> int:
    """Points per backward pass: ``internal_batch_size``, or by default the runner's batch size
    capped so one chunk holds at most :data:`MAX_CHUNK_ELEMENTS` input elements."""
    size = check_int(internal_batch_size, "internal_batch_size", allow_none=True)
    if size is not None:
        return size
    return max(1, min(runner.batch_size, MAX_CHUNK_ELEMENTS // max(1, n_features)))


def batch_bar(n_chunks: int, progress: bool | None, desc: str) -> Bar:
    """A bar over ``n_chunks``, shown when ``progress`` is True, or None and the chunks are many
    (inside ``explain()`` it drives the bar over rows, :mod:`xai_core.progress`)."""
    return progress_bar(
        n_chunks,
        progress=progress,
        desc=desc,
        unit="batch",
        long=n_chunks >= PROGRESS_MIN_CHUNKS,
    )


def block_count(n_paths: int, steps: int, chunk: int) -> int:
    """Backward passes :func:`path_integral` makes for ``n_paths`` paths of ``steps`` points."""
    paths_per_block = max(1, chunk // steps)
    steps_per_block = min(chunk, steps)
    return math.ceil(n_paths / paths_per_block) * math.ceil(steps / steps_per_block)


def gradient_rows(
    runner: ModelRunner,
    X: np.ndarray,
    target: np.ndarray,
    *,
    chunk: int,
    progress: bool | None,
    desc: str,
) -> np.ndarray:
    """The gradient of ``output[target]`` at each row, one backward pass per chunk of rows.

    Parameters
    ----------
    X : ndarray of shape (n_samples, *input_shape)
    target : ndarray of int64 of shape (n_samples,)

    Returns
    -------
    ndarray of float64 of shape (n_samples, *input_shape)
    """
    n = len(X)
    out = np.empty(X.shape, dtype=np.float64)
    n_chunks = math.ceil(n / chunk)
    with batch_bar(n_chunks, progress, desc) as bar:
        for start in range(0, n, chunk):
            stop = min(start + chunk, n)
            out[start:stop] = runner.gradient_validated(X[start:stop], target[start:stop])
            bar.update(1)
    return out


def path_integral(
    runner: ModelRunner,
    X: np.ndarray,
    target: np.ndarray,
    baselines: np.ndarray,
    alphas: np.ndarray,
    weights: np.ndarray,
    *,
    chunk: int,
    progress: bool | None,
    desc: str,
    affine: bool = True,
) -> np.ndarray:
    """Integrated gradients of every row, averaged over its baselines.

    ``sum_k (x - b_k) * sum_s weights[s] * grad f_target(b_k + alphas[s] * (x - b_k)) / k``.
    The ``n * k`` paths are walked in blocks: ``chunk // steps`` whole paths per backward
    pass, or, when ``chunk < steps``, one path in pieces of ``chunk`` steps. The weighted
    sum over the steps of a block is formed in the gradients' dtype (as the backend
    computed them) and accumulated over blocks and baselines in float64.

    On the ``cpu`` backend a network whose first linear layer comes before any
    nonlinearity takes :class:`xai_ig._affine.AffinePath`: the same integral,
    with that layer's products done once per row instead of once per path point.

    Parameters
    ----------
    X : ndarray of shape (n_samples, *input_shape)
        In the runner's float dtype; the path points are formed in it.
    target : ndarray of int64 of shape (n_samples,)
    baselines : ndarray of shape (1 or n_samples, n_baselines, *input_shape)
        Shared by every row (first axis 1) or one set per row.
    alphas, weights : ndarray of float64 of shape (steps,)
        Quadrature nodes in [0, 1] and weights.
    affine : bool, default=True
        Take the affine first-layer path where it applies; False forces the general one.

    Returns
    -------
    ndarray of float64 of shape (n_samples, *input_shape)
    """
    n, shape = len(X), X.shape[1:]
    per_row, k = baselines.shape[0], baselines.shape[1]
    steps = len(alphas)
    paths_per_block = max(1, chunk // steps)
    steps_per_block = min(chunk, steps)
    path_blocks = range(0, n * k, paths_per_block)
    step_blocks = range(0, steps, steps_per_block)
    linear = first_linear_layer(runner) if affine else None
    if linear is not None:
        with batch_bar(len(path_blocks) * len(step_blocks), progress, desc) as bar:
            path = AffinePath(runner, linear, X, baselines)
            return path.integral(np.arange(n), target, alphas, weights, chunk=chunk, bar=bar)
    n_features = int(np.prod(shape, dtype=np.int64))
    dtype = np.result_type(X.dtype, np.float32)
    flat_x = np.asarray(X, dtype=np.float64).reshape(n, n_features)
    flat_b = np.asarray(baselines, dtype=np.float64).reshape(per_row, k, n_features)
    scaled = np.asarray(weights, dtype=np.float64) / k
    total = np.zeros((n, n_features), dtype=np.float64)
    with batch_bar(len(path_blocks) * len(step_blocks), progress, desc) as bar:
        for first in path_blocks:
            path = np.arange(first, min(first + paths_per_block, n * k))
            row, which = path // k, path % k
            base = flat_b[row if per_row > 1 else 0, which]
            diff = flat_x[row] - base
            base_t, diff_t = base.astype(dtype), diff.astype(dtype)
            acc = np.zeros((len(path), n_features), dtype=np.float64)
            for s0 in step_blocks:
                s1 = min(s0 + steps_per_block, steps)
                points = np.multiply(alphas[s0:s1].astype(dtype)[None, :, None], diff_t[:, None, :])
                points += base_t[:, None, :]
                grads = runner.gradient_validated(
                    points.reshape(-1, *shape), np.repeat(target[row], s1 - s0)
                )
                grads = np.asarray(grads).reshape(len(path), s1 - s0, n_features)
                acc += np.einsum("psf,s->pf", grads, scaled[s0:s1].astype(grads.dtype))
                bar.update(1)
            acc *= diff
            add_to_rows(total, row, acc, k)
    return total.reshape(X.shape)
