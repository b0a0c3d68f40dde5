"""Row-wise agreement between two attributions of the same rows.

Every function takes two arrays of shape (n_samples, *input_shape), compares each row of
one with the same row of the other, and returns an array of shape (n_samples,). All are
vectorised over rows.

Conventions: attributions are compared as they are returned (signed contributions to the
explained output). Cosine similarity and Spearman rank correlation are scale-free, so two
methods that agree up to a positive factor agree perfectly; top-k overlap ranks features by
absolute attribution, ties broken by feature index, so identical inputs always overlap fully.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core.errors import ShapeError
from xai_core.validation import check_positive_int

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "agreement",
    "cosine_similarity",
    "max_abs_difference",
    "max_rel_difference",
    "spearman",
    "top_k_overlap",
]


def _pair(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim < 2:
        raise ShapeError(
            f"attributions must both have shape (n_samples, *input_shape); got {a.shape} and {b.shape}."
        )
    return a.reshape(len(a), -1), b.reshape(len(b), -1)


def cosine_similarity(a: Any, b: Any) -> np.ndarray:
    """Cosine of the angle between each row of ``a`` and ``b``: 1 when both are zero, 0 when one is."""
    a, b = _pair(a, b)
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    both_zero, one_zero = (na == 0) & (nb == 0), (na == 0) ^ (nb == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.einsum("ij,ij->i", a, b) / (na * nb)
    cos = np.where(both_zero, 1.0, np.where(one_zero, 0.0, cos))
    return np.clip(cos, -1.0, 1.0)


def _top_k_mask(a: np.ndarray, k: int) -> np.ndarray:
    order = np.argsort(-np.abs(a), axis=1, kind="stable")[:, :k]
    mask = np.zeros(a.shape, dtype=bool)
    np.put_along_axis(mask, order, True, axis=1)
    return mask


def top_k_overlap(a: Any, b: Any, k: int = 10) -> np.ndarray:
    """Share of the ``k`` features with the largest |attribution| that both rows have in common, in [0, 1]."""
    a, b = _pair(a, b)
    k = min(check_positive_int(k, "k"), a.shape[1])
    return (_top_k_mask(a, k) & _top_k_mask(b, k)).sum(axis=1) / k


def spearman(a: Any, b: Any) -> np.ndarray:
    """Spearman rank correlation of each row pair (average ranks for ties); 1 when both rows are constant."""
    from scipy.stats import rankdata  # imported when first needed: scipy.stats is slow to import

    a, b = _pair(a, b)
    ra = rankdata(a, axis=1) - (a.shape[1] + 1) / 2
    rb = rankdata(b, axis=1) - (b.shape[1] + 1) / 2
    sa, sb = np.linalg.norm(ra, axis=1), np.linalg.norm(rb, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.einsum("ij,ij->i", ra, rb) / (sa * sb)
    return np.where((sa == 0) & (sb == 0), 1.0, np.where((sa == 0) | (sb == 0), 0.0, rho))


def max_abs_difference(a: Any, b: Any) -> np.ndarray:
    """Largest |a - b| over each row's features."""
    a, b = _pair(a, b)
    return np.abs(a - b).max(axis=1)


def max_rel_difference(a: Any, b: Any) -> np.ndarray:
    """Largest |a - b| over each row, relative to the largest |a| of that row (``a`` is the reference)."""
    a, b = _pair(a, b)
    scale = np.abs(a).max(axis=1)
    diff = np.abs(a - b).max(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(scale > 0, diff / scale, np.where(diff > 0, np.inf, 0.0))


def agreement(reference: Any, other: Any, k: int = 10) -> pd.DataFrame:
    """All agreement figures of ``other`` against ``reference``, one row per sample.

    Parameters
    ----------
    reference, other : array-like of shape (n_samples, *input_shape)
        Attributions of the same rows; ``reference`` scales the relative difference.
    k : int, default=10
        Features compared by :func:`top_k_overlap`.

    Returns
    -------
    pandas.DataFrame of shape (n_samples, 5)
        Columns ``cosine``, ``top_k_overlap``, ``spearman``, ``max_abs_diff``, ``max_rel_diff``.
    """
    import pandas as pd

    return pd.DataFrame(
        {
            "cosine": cosine_similarity(reference, other),
            "top_k_overlap": top_k_overlap(reference, other, k),
            "spearman": spearman(reference, other),
            "max_abs_diff": max_abs_difference(reference, other),
            "max_rel_diff": max_rel_difference(reference, other),
        }
    )
