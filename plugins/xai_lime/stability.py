"""How much LIME's weights move when only the random neighbourhood changes.

Two explanations of the same row under different seeds are compared by the overlap of
their top-k features (Jaccard index of the sets of the k largest ``|weight|``) and by the
Spearman rank correlation of all their weights. Both are averaged over every pair of runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
from scipy.stats import rankdata

__all__ = ["top_k_jaccard", "spearman", "pairwise_stability"]


def _top_k(w: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest ``|w|`` along the last axis (ties: lower index first)."""
    return np.argsort(-np.abs(w), axis=-1, kind="stable")[..., :k]


def top_k_jaccard(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """Jaccard index of the top-``k`` feature sets of two weight vectors per row.

    Parameters
    ----------
    a, b : ndarray of shape (n_rows, n_features)
    k : int
        Set size, at most ``n_features``.

    Returns
    -------
    ndarray of float64 of shape (n_rows,), in [0, 1]
    """
    ta = np.zeros(a.shape, dtype=bool)
    tb = np.zeros(b.shape, dtype=bool)
    np.put_along_axis(ta, _top_k(a, k), True, axis=-1)
    np.put_along_axis(tb, _top_k(b, k), True, axis=-1)
    inter = (ta & tb).sum(axis=-1)
    union = (ta | tb).sum(axis=-1)
    return inter / np.maximum(union, 1)


def spearman(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman rank correlation of two weight vectors per row (average ranks for ties).

    Parameters
    ----------
    a, b : ndarray of shape (n_rows, n_features)

    Returns
    -------
    ndarray of float64 of shape (n_rows,), in [-1, 1]; NaN where a row is constant.
    """
    ra = rankdata(a, axis=-1)
    rb = rankdata(b, axis=-1)
    ra -= ra.mean(axis=-1, keepdims=True)
    rb -= rb.mean(axis=-1, keepdims=True)
    den = np.sqrt((ra * ra).sum(axis=-1) * (rb * rb).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (ra * rb).sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)


def pairwise_stability(runs: Sequence[np.ndarray], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean top-``k`` Jaccard index and mean Spearman correlation over all pairs of runs.

    Parameters
    ----------
    runs : sequence of ndarray of shape (n_rows, n_features)
        The weights of the same rows under different seeds; at least two.
    k : int
        Top-k set size (clipped to ``n_features``).

    Returns
    -------
    jaccard, spearman : ndarray of float64 of shape (n_rows,)
        Spearman is NaN for a row whose weights are constant in every pair.
    """
    k = max(1, min(int(k), runs[0].shape[-1]))
    pairs = list(combinations(range(len(runs)), 2))
    jac = np.mean([top_k_jaccard(runs[i], runs[j], k) for i, j in pairs], axis=0)
    rho = np.stack([spearman(runs[i], runs[j]) for i, j in pairs])
    # mean over the pairs that have a correlation
    counts = (~np.isnan(rho)).sum(axis=0)
    sums = np.nansum(rho, axis=0)
    rho_mean = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return jac, rho_mean
