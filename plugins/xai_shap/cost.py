"""What a SHAP request will cost, from shapes and options alone (no model call).

Counted per algorithm, ``n`` rows, ``M`` players (features or groups), ``B`` background
rows, ``K`` outputs:

- ``exact``: ``n * 2**M * B`` model rows; shap's Exact holds every coalition's mask and
  output for a row at once, ``2**M * (M + 16 K + 8)`` bytes;
- ``permutation``: ``n * max_evals * B`` model rows; one permutation's masked rows at a time;
- ``kernel``: ``n * max_evals * B`` model rows; the coalition design of a chunk of rows
  (at least one), ``max_evals * (8 M + 8 (K + 2))`` bytes per row of the chunk;
- ``partition``: ``n * max_evals * B`` model rows (``B = 1`` on images); the masks and
  masked outputs of a chunk of rows, ``max_evals * (M + 8 K) + 24 M k`` bytes per row of it
  (``k`` explained outputs: 1, or ``K`` with ``all_classes``);
- ``tree`` and ``linear`` (shap's own solvers): no estimate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core import Cost, ModelRunner, ValidationError
from xai_shap import algorithms as alg
from xai_shap.background import DEFAULT_N_BACKGROUND
from xai_shap.kernel import MAX_DESIGN_ELEMENTS

__all__ = ["shap_cost"]


def _n_background(explainer: Any, n_rows: int) -> int:
    """Rows the background will have, without summarising it."""
    given = explainer.background
    wanted = explainer.n_background
    if given is None:
        k = DEFAULT_N_BACKGROUND if wanted is None else int(wanted)
        return min(k, n_rows)
    count = len(given) if hasattr(given, "__len__") else int(np.shape(given)[0])
    return count if wanted is None else min(count, int(wanted))


def shap_cost(explainer: Any, runner: ModelRunner, X: np.ndarray) -> Cost | None:
    """The :class:`xai_core.Cost` of ``explainer`` (a ShapExplainer) on ``X``; ``None`` for tree and linear.

    Checks the algorithm's own rules (exact's cap, kernel's least budget) leave to the
    explainer: a request they reject gets no estimate here.
    """
    n = len(X)
    bg = _n_background(explainer, n)
    if explainer.algorithm == "partition":
        return _partition_cost(explainer, runner, X, bg)
    groups = explainer.players(runner, X)
    m = groups.n_groups
    k = runner.n_outputs or 1
    max_evals = None if explainer.max_evals == "auto" else int(explainer.max_evals)
    algorithm = explainer.algorithm
    if algorithm == "auto":
        algorithm = "exact" if m <= alg.AUTO_EXACT_MAX_FEATURES else "permutation"
    try:
        if algorithm == "exact":
            per_row = alg.check_exact(m, max_evals)
            peak = per_row * (m + 16 * k + 8)
            detail = f"{n} rows x 2**{m} coalitions x {bg} background rows"
            advice = "lower max_evals or group the features (groups=, patch_size=)"
        elif algorithm == "permutation":
            per_row = alg.check_permutation(m, max_evals)
            peak = (2 * m + 1) * bg * (int(np.prod(X.shape[1:])) * 8 + 8 * k)
            detail = f"{n} rows x {per_row:,} evaluations x {bg} background rows"
            advice = "lower max_evals or the background (n_background=)"
        elif algorithm == "kernel":
            per_row = alg.check_kernel(m, max_evals)
            chunk = max(1, MAX_DESIGN_ELEMENTS // (4 * max(per_row, 1) * max(m, 1)))
            peak = min(chunk, n) * per_row * (8 * m + 8 * (k + 2))
            detail = f"{n} rows x {per_row:,} coalitions x {bg} background rows"
            advice = "lower max_evals (nsamples=) or the background (n_background=)"
        else:
            return None
    except ValidationError:
        return None
    return Cost(n * (per_row * bg + 1) + bg, int(peak), detail, advice)


def _partition_cost(explainer: Any, runner: ModelRunner, X: np.ndarray, bg: int) -> Cost | None:
    from xai_shap.partition import MAX_BANK_ELEMENTS, check_partition, row_bytes
    from xai_shap.partition_run import partition_layout

    try:
        per_row = check_partition(
            None if explainer.max_evals == "auto" else int(explainer.max_evals)
        )
        image = partition_layout(explainer, runner, X) is not None
    except ValidationError:
        return None
    n, m = len(X), int(np.prod(X.shape[1:]))
    bg = 1 if image else bg
    k = runner.n_outputs or 1
    one_row = row_bytes(per_row, m, k, k if explainer.all_classes else 1)
    chunk = max(1, MAX_BANK_ELEMENTS // one_row)
    peak = min(chunk, n) * one_row
    detail = f"{n} rows x {per_row:,} evaluations x {bg} background row{'s' if bg != 1 else ''}"
    return Cost(n * (per_row * bg + 1), int(peak), detail, "lower max_evals or the background")
