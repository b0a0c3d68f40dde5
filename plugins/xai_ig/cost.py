"""What a gradient request will cost, from shapes and options alone (no model call).

Integrated gradients on ``n`` rows of ``d`` input elements with ``k`` baselines per row and
``s`` steps (with ``steps="auto"``, every doubling up to ``max_steps``) evaluates the
model's gradient at ``n * k * s`` path points, plus ``n`` outputs at the rows and one per
baseline. Its working memory is the baselines (``k`` per row when they are drawn per row,
float64, held about three times over while drawn and predicted), one chunk of path points
and their gradients, and the quadrature's nodes and weights. SmoothGrad is its base
method's cost on ``n * n_samples`` noisy copies; saliency and gradient x input evaluate
``2 n`` rows.

:data:`MAX_STEPS` caps ``steps`` and ``max_steps``: past that many Gauss-Legendre nodes the
quadrature error (exponentially small on smooth paths, about ``1/steps**2`` across ReLU
kinks) is far below the rounding of float32 gradients, while the points to evaluate grow
in proportion.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from xai_core import Cost, ModelRunner
from xai_core.attribution.cost import format_bytes

__all__ = ["MAX_STEPS", "gradient_cost", "ig_cost", "smoothgrad_cost", "steps_note"]

#: The most quadrature nodes per path (``steps``, ``max_steps``).
MAX_STEPS = 10**6
#: Input elements of one chunk of path points (the batching's default cap).
CHUNK_ELEMENTS = 1 << 22


def steps_note(steps: int) -> str:
    """Why ``steps`` over :data:`MAX_STEPS` is refused, with what it would cost."""
    return (
        f"{steps:,} steps would evaluate {steps:,} gradients per row and baseline and hold "
        f"{format_bytes(16 * steps)} of nodes and weights, while past {MAX_STEPS:,} nodes the "
        "quadrature error is far below the rounding of float32 gradients. Use fewer steps, "
        "or steps='auto' with a tolerance."
    )


def _auto_steps(max_steps: int, start: int = 8) -> int:
    """Steps walked, at most, by ``steps="auto"``: 8, 16, ... up to ``max_steps``."""
    steps, total = min(start, max_steps), 0
    while True:
        total += steps
        if steps >= max_steps:
            return total
        steps = min(2 * steps, max_steps)


def _baselines(explainer: Any, n: int, x_ndim: int) -> tuple[int, int]:
    """(rows of baselines: 1 or n, baselines per row), from the options alone."""
    spec = explainer.baseline
    if isinstance(spec, str):
        if spec == "uniform":
            return n, int(explainer.n_baselines or 1)
        if spec == "data":
            if explainer.n_baselines is not None:
                return n, int(explainer.n_baselines)
            background = explainer.background
            return 1, len(background) if hasattr(background, "__len__") else 1
        return 1, 1
    shape = np.shape(spec)
    if len(shape) == x_ndim + 1:  # (1 or n, k, *input_shape)
        return min(shape[0], n), shape[1]
    return (n if len(shape) == x_ndim and shape[0] == n else 1), 1


def ig_cost(explainer: Any, runner: ModelRunner, X: np.ndarray) -> Cost:
    """The :class:`xai_core.Cost` of ``explainer`` (IntegratedGradients) on ``X``."""
    n = len(X)
    d = math.prod(X.shape[1:])
    k_out = runner.n_outputs or 1
    per_row, k = _baselines(explainer, n, X.ndim)
    if explainer.steps == "auto":
        steps = _auto_steps(int(explainer.max_steps))
        widest = int(explainer.max_steps)
    else:
        steps = widest = int(explainer.steps)
    chunk = explainer.internal_batch_size or max(
        1, min(runner.batch_size, CHUNK_ELEMENTS // max(1, d))
    )
    peak = (
        3 * per_row * k * (8 * d + 8 * k_out)  # baselines drawn, cast, predicted
        + 3 * min(chunk, n * k * widest) * 8 * d  # one chunk of points and gradients
        + 16 * widest  # nodes and weights
    )
    detail = f"{n} rows x {k:,} baselines x {steps:,} steps"
    advice = "lower steps, n_baselines or internal_batch_size"
    return Cost(n * k * steps + n + per_row * k, int(peak), detail, advice)


def smoothgrad_cost(explainer: Any, base: Any, runner: ModelRunner, X: np.ndarray) -> Cost:
    """The :class:`xai_core.Cost` of ``explainer`` (SmoothGrad) over its ``base`` method."""
    n, m = len(X), int(explainer.n_samples)
    d = math.prod(X.shape[1:])
    group = min(n, max(1, CHUNK_ELEMENTS // (m * d)))
    copies = np.broadcast_to(X[:1], (group * m, *X.shape[1:]))  # no memory: shapes only
    inner = base.estimate_cost(runner, copies)
    per_group_rows = inner.model_rows if inner is not None else 2 * group * m
    per_group_bytes = inner.peak_bytes if inner is not None else 0
    groups = -(-n // group)
    peak = per_group_bytes + 5 * group * m * d * 8  # the draws, noise, copies, values
    detail = f"{n} rows x {m:,} noisy copies through {base.name!r}"
    return Cost(groups * per_group_rows, int(peak), detail, "lower n_samples (nt_samples=)")


def gradient_cost(runner: ModelRunner, X: np.ndarray) -> Cost:
    """Saliency and gradient x input: ``n`` outputs and ``n`` gradients."""
    n = len(X)
    d = math.prod(X.shape[1:])
    return Cost(2 * n, 3 * n * d * 8, f"{n} rows")
