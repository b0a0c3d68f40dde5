"""lime's local surrogate: a weighted ridge regression on the neighbourhood.

``lime.lime_base.LimeBase.explain_instance_with_data`` weights each perturbed sample by
the kernel of its distance to the row, selects features, then fits ``Ridge(alpha=1)`` on
them with those weights and reports the fit's weighted R² and its prediction at the row.

Two ways to run it, giving the same numbers up to rounding:

* ``"lime"``: ``LimeBase.explain_instance_with_data`` itself, one row at a time.
* ``"batched"``: the same regressions solved in closed form for many rows at once. The
  weighted, centred Gram matrix of every row comes from one batched matrix product, so
  feature selection ``"highest_weights"`` (a ``Ridge(alpha=0.01)`` on all features, then
  the features with the largest ``|coef * x_row|``, ties to the lower index as in lime's
  stable sort) and the final ``Ridge(alpha=1)`` cost a few small solves per row.
  ``"forward_selection"`` and ``"lasso_path"`` (and ``"auto"`` when it resolves to
  forward selection, for at most 6 features) always run through ``LimeBase``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from lime.lime_base import LimeBase

__all__ = ["FEATURE_SELECTIONS", "SurrogateFit", "exponential_kernel", "fit_surrogates"]

FEATURE_SELECTIONS = ("auto", "forward_selection", "highest_weights", "lasso_path", "none")
_BATCHED = ("highest_weights", "none")


def exponential_kernel(width: float) -> Callable[[np.ndarray], np.ndarray]:
    """lime's kernel: ``sqrt(exp(-d**2 / width**2))`` of a distance ``d``."""

    def kernel(d: np.ndarray) -> np.ndarray:
        return np.sqrt(np.exp(-(d**2) / width**2))

    return kernel


@dataclass(frozen=True)
class SurrogateFit:
    """Surrogates of ``n_rows`` rows.

    Attributes
    ----------
    coef : ndarray of float64 of shape (n_rows, n_features)
        Weight of each interpretable feature; 0 for features not selected.
    intercept, score, local_pred : ndarray of float64 of shape (n_rows,)
        The surrogate's intercept, weighted R² on the neighbourhood, and prediction at
        the row itself.
    n_selected : int
        Features the surrogate uses per row.
    """

    coef: np.ndarray
    intercept: np.ndarray
    score: np.ndarray
    local_pred: np.ndarray
    n_selected: int


def resolve_selection(feature_selection: str, n_features: int) -> str:
    """lime's ``"auto"``: forward selection for at most 6 features, else highest weights."""
    if feature_selection == "auto":
        return "forward_selection" if n_features <= 6 else "highest_weights"
    return feature_selection


def fit_surrogates(
    interpretable: np.ndarray,
    labels: np.ndarray,
    distances: np.ndarray,
    *,
    kernel_width: float,
    n_features: int,
    feature_selection: str = "auto",
    solver: str = "batched",
    random_state: np.random.RandomState | None = None,
) -> SurrogateFit:
    """Fit lime's surrogate on the neighbourhood of every row.

    Parameters
    ----------
    interpretable : ndarray of float64 of shape (n_rows, n_samples, n_features)
        The surrogate's inputs; sample 0 of each row is the row itself.
    labels : ndarray of float64 of shape (n_rows, n_samples)
        The model's explained output on each sample.
    distances : ndarray of float64 of shape (n_rows, n_samples)
        Distance of each sample to its row, turned into weights by lime's kernel.
    kernel_width : float
        Width of the exponential kernel.
    n_features : int
        Most features per surrogate (lime's ``num_features``).
    feature_selection : str, default="auto"
        One of :data:`FEATURE_SELECTIONS`.
    solver : {"batched", "lime"}, default="batched"
        See the module docstring.
    random_state : numpy.random.RandomState, optional
        Given to ``LimeBase`` (its ridge regressions accept one).

    Returns
    -------
    SurrogateFit
    """
    n_rows, _, width = interpretable.shape
    method = resolve_selection(feature_selection, n_features)
    if solver == "batched" and method in _BATCHED:
        weights = exponential_kernel(kernel_width)(distances)
        return _fit_batched(interpretable, labels, weights, n_features, method)
    base = LimeBase(exponential_kernel(kernel_width), random_state=random_state)
    coef = np.zeros((n_rows, width))
    intercept, score, local_pred = np.zeros(n_rows), np.zeros(n_rows), np.zeros(n_rows)
    n_selected = 0
    for r in range(n_rows):
        b0, pairs, s, pred = base.explain_instance_with_data(
            interpretable[r],
            labels[r][:, None],
            distances[r],
            0,
            n_features,
            feature_selection=feature_selection,
        )
        for j, w in pairs:
            coef[r, j] = w
        intercept[r], score[r], local_pred[r] = b0, s, np.ravel(pred)[0]
        n_selected = max(n_selected, len(pairs))
    return SurrogateFit(coef, intercept, score, local_pred, n_selected)


def _fit_batched(
    X: np.ndarray, y: np.ndarray, w: np.ndarray, n_features: int, method: str
) -> SurrogateFit:
    """Weighted ridge fits of every row, as scikit-learn's ``Ridge`` computes them.

    The products over samples (weighted Gram matrix, right-hand side, residuals) are one
    BLAS call per row, whose temporaries stay small; the small systems (features x
    features) of all rows are solved together.
    """
    n_rows, _, width = X.shape
    sw = w.sum(axis=1)
    gram = np.empty((n_rows, width, width))
    rhs = np.empty((n_rows, width))
    x_sum = np.empty((n_rows, width))
    root = np.sqrt(w)
    for r in range(n_rows):
        Xs = X[r] * root[r][:, None]
        gram[r] = Xs.T @ Xs  # a symmetric rank-k update: half the products of Xw.T @ X
        x_sum[r] = w[r] @ X[r]
        rhs[r] = (y[r] * w[r]) @ X[r]
    x_mean = x_sum / sw[:, None]
    y_mean = np.einsum("rn,rn->r", w, y) / sw
    # centring: the Gram of the centred data is the raw weighted Gram less sw * mean mean^T
    gram -= sw[:, None, None] * x_mean[:, :, None] * x_mean[:, None, :]
    rhs -= (sw * y_mean)[:, None] * x_mean
    eye = np.eye(width)

    if method == "highest_weights":
        first = np.linalg.solve(gram + 0.01 * eye, rhs[..., None])[..., 0]
        order = np.argsort(-np.abs(first * X[:, 0, :]), axis=1, kind="stable")
        selected = order[:, : min(n_features, width)]
    else:  # "none": every feature
        selected = np.broadcast_to(np.arange(width), (n_rows, width))
    k = selected.shape[1]
    rows = np.arange(n_rows)[:, None, None]
    sub = gram[rows, selected[:, :, None], selected[:, None, :]] + np.eye(k)
    sub_rhs = np.take_along_axis(rhs, selected, axis=1)
    beta = np.linalg.solve(sub, sub_rhs[..., None])[..., 0]
    coef = np.zeros((n_rows, width))
    np.put_along_axis(coef, selected, beta, axis=1)
    intercept = y_mean - np.einsum("rf,rf->r", x_mean, coef)
    num, den, local_pred = np.empty(n_rows), np.empty(n_rows), np.empty(n_rows)
    for r in range(n_rows):
        resid = y[r] - (X[r] @ coef[r] + intercept[r])
        yc = y[r] - y_mean[r]
        num[r] = (w[r] * resid) @ resid
        den[r] = (w[r] * yc) @ yc
        local_pred[r] = y[r, 0] - resid[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(den > 0, 1.0 - num / np.where(den > 0, den, 1.0), 0.0)
    score = np.where((den == 0) & (num == 0), 1.0, score)  # scikit-learn's r2 convention
    return SurrogateFit(coef, intercept, score, local_pred, k)
