"""A searched counterfactual: the smallest sparse edit of one example that flips the model's prediction.

The search is batched throughout: each step builds many candidate rows and evaluates them
in one call of the model.

1. **Sample.** Sparse random edits (``1 .. max_features`` mutable features, values taken
   from examples with another prediction or drawn uniformly within the allowed ranges),
   plus the nearest such examples projected onto the constraints (immutable features
   restored, values clipped to the ranges, only the ``max_features`` largest changes kept).
2. **Refine** every flipping candidate, round after round until nothing improves:
   *prune* (revert the changed feature whose reversal keeps the flip and lowers the
   distance most) and *line search* (move the whole edit toward the original example on a
   coarse then a fine grid, keeping the closest point that still flips).
3. **Select** the closest candidates, preferring different sets of changed features when
   several are asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from xai_core import Cost
from xai_core.progress import show_progress

__all__ = ["SearchProblem", "refine_count", "search", "search_cost"]

_LINE_POINTS = 16
_PRUNE_FEATURES = 32
_TINY = 1e-12


@dataclass
class SearchProblem:
    """What the search needs; every array is float64 over the flattened features."""

    x: np.ndarray  # (d,) the example
    evaluate: Callable[[np.ndarray], np.ndarray]  # (m, d) -> (m,) bool: flips the prediction
    distance: Callable[[np.ndarray, np.ndarray], np.ndarray]  # (x, C) -> (m,)
    contributions: Callable[[np.ndarray, np.ndarray], np.ndarray]  # (x, C) -> (m, d)
    mutable: np.ndarray  # (d,) bool
    categorical: np.ndarray  # (d,) bool
    category_codes: dict[int, np.ndarray]  # allowed codes per categorical feature
    lo: np.ndarray  # (d,)
    hi: np.ndarray  # (d,)
    donors: np.ndarray  # (k, d) examples with another prediction, nearest first
    max_features: int


def _project(p: SearchProblem, C: np.ndarray) -> np.ndarray:
    """Restore immutable features, clip numeric ones to the ranges, keep the largest changes."""
    C = np.where(p.mutable, C, p.x)
    numeric = ~p.categorical
    C[:, numeric] = np.clip(C[:, numeric], p.lo[numeric], p.hi[numeric])
    changed = C != p.x
    too_many = changed.sum(axis=1) > p.max_features
    if too_many.any():
        contrib = np.where(changed[too_many], p.contributions(p.x, C[too_many]), -np.inf)
        order = np.argsort(-contrib, axis=1, kind="stable")
        keep = np.zeros_like(contrib, dtype=bool)
        np.put_along_axis(keep, order[:, : p.max_features], True, axis=1)
        C[too_many] = np.where(keep & changed[too_many], C[too_many], p.x)
    return C


def _sample(p: SearchProblem, m: int, rng: np.random.Generator) -> np.ndarray:
    """``m`` sparse random edits of ``x``."""
    d = p.x.size
    mutable = np.flatnonzero(p.mutable)
    k_max = min(p.max_features, mutable.size)
    k = rng.integers(1, k_max + 1, size=m)
    ranks = np.argsort(rng.random((m, mutable.size)), axis=1).argsort(axis=1)
    pick = np.zeros((m, d), dtype=bool)
    pick[:, mutable] = ranks < k[:, None]
    uniform = p.lo + rng.random((m, d)) * (p.hi - p.lo)
    for j, codes in p.category_codes.items():
        uniform[:, j] = codes[rng.integers(0, codes.size, size=m)]
    if len(p.donors):
        donor = p.donors[rng.integers(0, len(p.donors), size=m)]
        values = np.where(rng.random((m, d)) < 0.7, donor, uniform)
    else:
        values = uniform
    return np.where(pick, values, p.x)


def _line_search(
    p: SearchProblem, C: np.ndarray, dist: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Move each flipping ``C`` toward ``x``: closest flipping point on a coarse, then a fine grid."""
    numeric = ~p.categorical
    direction = np.where(numeric, C - p.x, 0.0)
    jump = np.where(numeric, p.x, C)  # categorical features keep the candidate's value
    lo_t = np.zeros(len(C))
    hi_t = np.ones(len(C))
    for _ in range(2):
        ts = lo_t[:, None] + (hi_t - lo_t)[:, None] * np.linspace(0, 1, _LINE_POINTS + 1)[1:]
        points = (jump[:, None, :] + ts[:, :, None] * direction[:, None, :]).reshape(-1, p.x.size)
        flips = p.evaluate(points).reshape(len(C), _LINE_POINTS)
        d = p.distance(p.x, points).reshape(len(C), _LINE_POINTS)
        d = np.where(flips, d, np.inf)
        best = np.argmin(d, axis=1)
        rows = np.arange(len(C))
        improved = d[rows, best] < dist - _TINY
        step = (hi_t - lo_t) / _LINE_POINTS
        t_best = ts[rows, best]
        C = np.where(improved[:, None], points.reshape(len(C), _LINE_POINTS, -1)[rows, best], C)
        dist = np.where(improved, d[rows, best], dist)
        hi_t = np.where(improved, t_best, hi_t)
        lo_t = np.maximum(hi_t - step, 0.0)
    return C, dist


def _prune(p: SearchProblem, C: np.ndarray, dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Revert, in each candidate, the one changed feature whose reversal helps most and keeps the flip."""
    changed = C != p.x
    contrib = np.where(changed, p.contributions(p.x, C), -np.inf)
    width = int(min(_PRUNE_FEATURES, changed.sum(axis=1).max(initial=0)))
    if width == 0:
        return C, dist
    order = np.argsort(-contrib, axis=1, kind="stable")[:, :width]  # (m, width)
    valid = np.take_along_axis(changed, order, axis=1)
    variants = np.repeat(C[:, None, :], width, axis=1)  # (m, width, d)
    rows = np.arange(len(C))[:, None]
    variants[rows, np.arange(width)[None, :], order] = p.x[order]
    flat = variants.reshape(-1, p.x.size)
    flips = p.evaluate(flat).reshape(len(C), width) & valid
    d = np.where(flips, p.distance(p.x, flat).reshape(len(C), width), np.inf)
    best = np.argmin(d, axis=1)
    r = np.arange(len(C))
    improved = d[r, best] < dist - _TINY
    C = np.where(improved[:, None], variants[r, best], C)
    dist = np.where(improved, d[r, best], dist)
    return C, dist


def search(
    p: SearchProblem,
    *,
    n: int,
    n_samples: int,
    n_refine: int,
    max_rounds: int,
    rng: np.random.Generator,
    progress: bool,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Run the search.

    Returns
    -------
    C : ndarray of shape (n_found, n_features)
        Counterfactuals, closest first (``n_found <= n``; 0 when nothing flips).
    distances : ndarray of shape (n_found,)
    evaluations : int
        Rows passed to the model.
    """
    evaluations = 0

    def evaluate(rows: np.ndarray) -> np.ndarray:
        nonlocal evaluations
        evaluations += len(rows)
        return p.evaluate(rows)

    q = SearchProblem(**{**p.__dict__, "evaluate": evaluate})
    found = np.zeros((0, p.x.size))
    for _attempt in range(3):
        C = _sample(q, n_samples, rng)
        if len(q.donors):
            C = np.concatenate([_project(q, q.donors.copy()), C])
        C = _project(q, C)
        found = C[evaluate(C)]
        if len(found):
            break
        n_samples *= 2
    if not len(found):
        return found, np.zeros(0), evaluations
    dist = q.distance(q.x, found)
    keep = np.argsort(dist, kind="stable")[:n_refine]
    C, dist = found[keep], dist[keep]
    shown = show_progress(progress, max_rounds)
    bar = tqdm(total=max_rounds, desc="counterfactual", disable=not shown, leave=False)
    for _ in range(max_rounds):
        before = dist.copy()
        C, dist = _prune(q, C, dist)
        C, dist = _line_search(q, C, dist)
        bar.update(1)
        if np.all(dist >= before - _TINY):
            break
    bar.close()
    C, dist = _select(q, C, dist, n)
    return C, dist, evaluations


def _select(
    p: SearchProblem, C: np.ndarray, dist: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """The ``n`` closest candidates, distinct sets of changed features first."""
    order = np.argsort(dist, kind="stable")
    C, dist = C[order], dist[order]
    _, first = np.unique(C, axis=0, return_index=True)
    first = np.sort(first)
    C, dist = C[first], dist[first]
    keys = [frozenset(np.flatnonzero(row != p.x).tolist()) for row in C]
    chosen: list[int] = []
    seen: set[frozenset[int]] = set()
    for i, key in enumerate(keys):
        if len(chosen) < n and key not in seen:
            chosen.append(i)
            seen.add(key)
    for i in range(len(C)):
        if len(chosen) >= n:
            break
        if i not in chosen:
            chosen.append(i)
    chosen.sort(key=lambda i: dist[i])
    return C[chosen], dist[chosen]


#: Sampling attempts at most (each doubles the samples of the one before).
_ATTEMPTS = 3


def refine_count(n: int) -> int:
    """Candidates kept for refinement when ``n`` counterfactuals are asked for."""
    return max(32, 8 * n)


def search_cost(
    d: int, n_outputs: int, *, n: int, n_samples: int, n_donors: int, max_rounds: int
) -> Cost:
    """What :func:`search` can cost at most, for ``d`` features and ``n_outputs`` outputs.

    Model rows: the sampling attempts (``n_samples``, twice, four times that, with the
    donors each time) and every refinement round (per kept candidate, one variant per
    pruned feature and two line searches of ``_LINE_POINTS``). Peak memory: the largest
    sample (``4 * n_samples`` rows of about nine float64 arrays of width ``d``) or the
    pruning variants of the kept candidates.
    """
    largest = n_samples * 2 ** (_ATTEMPTS - 1)
    sampled = n_samples * (2**_ATTEMPTS - 1) + _ATTEMPTS * n_donors
    kept = refine_count(n)
    per_round = kept * (min(_PRUNE_FEATURES, d) + 2 * _LINE_POINTS)
    peak = max(
        (largest + n_donors) * (9 * 8 * d + 8 * n_outputs),
        kept * (min(_PRUNE_FEATURES, d) + _LINE_POINTS) * (2 * 8 * d + 8 * n_outputs),
    )
    detail = (
        f"up to {largest:,} sampled edits of {d} features, then {max_rounds} rounds "
        f"refining {kept:,} candidates"
    )
    return Cost(sampled + max_rounds * per_round, peak, detail, "lower n_samples, n or max_rounds")
