"""The background data a SHAP game averages over when a feature is switched off.

Interventional Shapley values: the value of a coalition ``S`` for row ``x`` is the
mean over background rows ``b`` of ``f(x_S, b_rest)``. The background is given rows,
a k-means summary of given rows (``n_background`` centres), or, when nothing is given, a
summary of the explained rows themselves, with an :class:`xai_core.XaiWarning` saying
so. Every background row counts equally (shap's maskers integrate uniformly).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from xai_core import ValidationError, XaiWarning
from xai_core.validation import check_array

__all__ = ["DEFAULT_N_BACKGROUND", "kmeans_summary", "resolve_background"]

#: Rows of the default background when none is given.
DEFAULT_N_BACKGROUND = 10


def kmeans_summary(rows: np.ndarray, k: int, seed: int) -> np.ndarray:
    """``k`` k-means centres of ``rows`` (seeded), of shape (k, *sample_shape).

    Parameters
    ----------
    rows : ndarray of shape (n_rows, *sample_shape)
    k : int
        Centres wanted; ``rows`` itself is returned when it has at most ``k`` rows.
    seed : int
        ``random_state`` of scikit-learn's ``KMeans``.
    """
    if len(rows) <= k:
        return rows
    from sklearn.cluster import KMeans

    flat = rows.reshape(len(rows), -1).astype(np.float64)
    km = KMeans(n_clusters=k, n_init=3, random_state=seed).fit(flat)
    return km.cluster_centers_.reshape((k, *rows.shape[1:])).astype(rows.dtype)


def _check_columns(background: Any, feature_names: Sequence[str] | None) -> None:
    if feature_names is None or not hasattr(background, "columns"):
        return
    got = [str(c) for c in background.columns]
    want = [str(c) for c in feature_names]
    if got != want:
        extra = sorted(set(got) - set(want))
        missing = sorted(set(want) - set(got))
        detail = (
            f"missing {missing}, unexpected {extra}" if (extra or missing) else "in another order"
        )
        raise ValidationError(
            f"background must have the model's columns {want}; got columns {got} ({detail})."
        )


def _summary(rows: np.ndarray, k: int, seed: int) -> tuple[np.ndarray, str]:
    """``k`` k-means centres of ``rows``, or, when rows have missing values (which no
    centre can average), ``k`` of the rows drawn without replacement (seeded)."""
    if np.isnan(rows).any():
        pick = np.sort(np.random.default_rng(seed).choice(len(rows), size=k, replace=False))
        return rows[pick], f"{k} rows drawn (seeded) from the {len(rows)} {{}} rows"
    return kmeans_summary(
        rows, k, seed
    ), f"k-means summary of the {len(rows)} {{}} rows into {k} centres"


def resolve_background(
    background: Any,
    n_background: int | None,
    X: np.ndarray,
    seed: int,
    feature_names: Sequence[str] | None = None,
    *,
    allow_nan: bool = False,
) -> tuple[np.ndarray, str]:
    """The background rows and a one-line description of how they were chosen.

    Parameters
    ----------
    background : array-like of shape (n_rows, *input_shape) or None
        Reference rows (training data, a sample of it, or a summary).
    n_background : int or None
        Summarise the background (or, by default, ``X``) into this many k-means centres.
    X : ndarray of shape (n_samples, *input_shape)
        The validated rows to explain; their shape and dtype are the background's.
    seed : int
        Seed of the k-means summary.
    feature_names : sequence of str, optional
        The model's columns; a DataFrame background must have the same.
    allow_nan : bool, default=False
        The model handles missing values: the background may have them, and is then
        summarised by a seeded sample of its rows instead of k-means centres.

    Returns
    -------
    background : ndarray of shape (n_background, *input_shape), X's dtype
    description : str
    """
    if background is not None:
        _check_columns(background, feature_names)
        bg = check_array(
            background,
            "background",
            feature_shape=X.shape[1:],
            dtype=X.dtype,
            accept_flat=True,
            rows="n_rows",
            allow_nan=allow_nan,
        )
        if allow_nan and np.isinf(bg).any():
            raise ValidationError("background contains infinity; a missing value is NaN.")
        if n_background is not None and len(bg) > n_background:
            summary, how = _summary(bg, n_background, seed)
            return summary, how.format("background")
        return bg, f"{len(bg)} background rows"
    k = DEFAULT_N_BACKGROUND if n_background is None else n_background
    if len(X) > k:
        bg, how = _summary(X, k, seed)
        desc = how.format("explained")
    else:
        bg = X
        desc = f"the {len(X)} explained row{'s' if len(X) != 1 else ''} themselves"
    note = " With a single row every attribution is 0." if len(X) == 1 else ""
    warnings.warn(
        f"No background given: using {desc} as the SHAP background.{note} Pass background= "
        "(training rows, or a sample of them) for a reference that does not depend on the "
        "rows being explained.",
        XaiWarning,
        stacklevel=5,
    )
    return bg, desc
