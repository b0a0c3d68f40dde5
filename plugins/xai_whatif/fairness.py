"""Slices of the data, performance per slice and the What-If Tool's threshold strategies.

The strategies choose, on a grid of thresholds, one threshold per slice (predict positive
when the score is at or above it) minimising the total cost ``cost_ratio * FP + FN``:

- ``single``: one threshold for every slice;
- ``group``: each slice its own best threshold;
- ``demographic_parity``: equal positive rates across slices;
- ``equal_opportunity``: equal true-positive rates across slices;
- ``equal_accuracy``: equal accuracy across slices.

A grid cannot make rates exactly equal. The constrained strategies pick a common value
``r`` of the metric (one that some slice reaches exactly) and give every slice a threshold
at which its metric is the nearest value it can reach on the grid just below or just above
``r``: equal within the grid's resolution. With ``tolerance``, every slice's metric must be
within ``tolerance / 2`` of ``r`` instead. Among all ``r`` the cheapest choice wins.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from xai_core import UnknownNameError, ValidationError, XaiWarning
from xai_core.report import isolate

__all__ = ["STRATEGIES", "counts_on_grid", "choose_thresholds", "slice_ids"]

STRATEGIES = {
    "single": None,
    "group": None,
    "demographic_parity": "positive_rate",
    "equal_opportunity": "tpr",
    "equal_accuracy": "accuracy",
}


def slice_ids(table: Any, features: list[int], bins: int) -> tuple[np.ndarray, list[str]]:
    """Slice of each row (codes into the returned labels) for one or two features.

    Categorical features and features of at most 10 distinct values slice by value; others
    by ``bins`` quantile bins, labelled ``[low, high)`` (the last bin closed). A name or
    category holding right-to-left text is a directional isolate in the labels
    (:func:`xai_core.report.isolate`), so it cannot reorder the rest of a label.
    """
    codes = np.zeros(table.n_samples, dtype=np.int64)
    names: list[list[str]] = []
    for j in features:
        col = table.X[:, j]
        name = table.feature_names[j]
        values = np.unique(col)
        if j in table.categories or values.size <= 10:
            c = np.searchsorted(values, col)
            labels = [f"{isolate(name)} = {isolate(table.label(j, v))}" for v in values]
        else:
            edges = np.unique(np.quantile(col, np.linspace(0, 1, bins + 1)))
            c = np.clip(np.searchsorted(edges, col, side="right") - 1, 0, len(edges) - 2)
            labels = [
                f"{isolate(name)} in [{edges[i]:.4g}, {edges[i + 1]:.4g}{']' if i == len(edges) - 2 else ')'}"
                for i in range(len(edges) - 1)
            ]
        codes = codes * len(labels) + c
        names.append(labels)
    if len(names) == 1:
        combined = names[0]
    else:
        combined = [f"{a}, {b}" for a in names[0] for b in names[1]]
    present = np.unique(codes)
    remap = np.full(len(combined), -1)
    remap[present] = np.arange(present.size)
    return remap[codes], [combined[i] for i in present]


def counts_on_grid(score: np.ndarray, y: np.ndarray, grid: np.ndarray) -> dict[str, np.ndarray]:
    """tp, fp, tn, fn of one slice at every threshold, each of shape (n_thresholds,)."""
    pos = np.sort(score[y == 1])
    neg = np.sort(score[y != 1])
    tp = pos.size - np.searchsorted(pos, grid, side="left")
    fp = neg.size - np.searchsorted(neg, grid, side="left")
    return {"tp": tp, "fp": fp, "fn": pos.size - tp, "tn": neg.size - fp}


def metrics(c: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Rates from counts (NaN where undefined)."""
    tp, fp, fn, tn = (c[k].astype(np.float64) for k in ("tp", "fp", "fn", "tn"))
    n = tp + fp + fn + tn
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "positive_rate": (tp + fp) / n,
            "tpr": tp / (tp + fn),
            "fpr": fp / (fp + tn),
            "fnr": fn / (tp + fn),
            "accuracy": (tp + tn) / n,
            "precision": tp / (tp + fp),
        }


#: Largest spread of the equalised metric across slices that counts as meeting the
#: constraint when no ``tolerance`` is given (0.05: five percentage points).
DEFAULT_GAP = 0.05


def choose_thresholds(
    score: np.ndarray,
    y: np.ndarray,
    slices: np.ndarray,
    n_slices: int,
    strategy: str,
    grid: np.ndarray,
    cost_ratio: float,
    tolerance: float | None,
) -> tuple[np.ndarray, float]:
    """Grid index of each slice's threshold, and the common value of the equalised metric.

    Returns
    -------
    index : ndarray of int of shape (n_slices,)
    target : float
        The common value ``r`` (NaN for ``single`` and ``group``).
    """
    if strategy not in STRATEGIES:
        raise UnknownNameError("threshold strategy", strategy, list(STRATEGIES))
    counts = [counts_on_grid(score[slices == s], y[slices == s], grid) for s in range(n_slices)]
    cost = np.stack([cost_ratio * c["fp"] + c["fn"] for c in counts]).astype(np.float64)
    if strategy == "single":
        return np.full(n_slices, int(np.argmin(cost.sum(axis=0)))), float("nan")
    if strategy == "group":
        return np.argmin(cost, axis=1), float("nan")
    name = STRATEGIES[strategy]
    metric = np.stack([metrics(c)[name] for c in counts])  # (S, T)
    usable = np.isfinite(metric).all(axis=1)
    if not usable.all():
        warnings.warn(
            f"{int((~usable).sum())} slice(s) have no examples for {name} (no positives); "
            "they keep their own best threshold and are left out of the constraint.",
            XaiWarning,
            stacklevel=3,
        )
    if tolerance is not None and not (np.isfinite(tolerance) and tolerance >= 0):
        raise ValidationError(f"tolerance must be a number >= 0; got {tolerance!r}.")
    index = np.argmin(cost, axis=1)
    if not usable.any():
        return index, float("nan")
    m, k = metric[usable], cost[usable]
    targets = np.unique(m)[:, None, None]  # (R, 1, 1): common values tried
    if tolerance is None:
        # Each slice takes a threshold whose metric is the nearest it can reach below or above
        # the common value: equal within the grid's resolution.
        below = np.where(m[None] <= targets, m[None], -np.inf).max(axis=2, keepdims=True)
        above = np.where(m[None] >= targets, m[None], np.inf).min(axis=2, keepdims=True)
        near = (m[None] == below) | (m[None] == above)  # (R, S, T)
    else:
        near = np.abs(m[None] - targets) <= tolerance / 2 + 1e-12
    masked = np.where(near, k[None], np.inf)
    best_t = np.argmin(masked, axis=2)  # (R, S)
    best_cost = np.take_along_axis(masked, best_t[:, :, None], axis=2)[..., 0].sum(axis=1)
    if not np.isfinite(best_cost).any():
        raise ValidationError(
            f"no common {name} within tolerance {tolerance:g} exists on this grid; pass a larger "
            "tolerance or a finer grid."
        )
    r = int(np.argmin(best_cost))
    index[usable] = best_t[r]
    return index, float(targets[r, 0, 0])
