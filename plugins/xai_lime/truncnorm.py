"""The truncated standard normal's quantile function, vectorised over its bounds.

lime draws the continuous value of a perturbed sample inside its quartile bin from a
normal with the bin's mean and standard deviation, truncated to the bin, with one
``scipy.stats.truncnorm.rvs`` call per feature per explained row. ``truncnorm`` with
array-valued bounds costs about a microsecond per draw, so drawing a whole block through
it at once is no faster. The inverse CDF here is exact (it agrees with
``scipy.stats.truncnorm.ppf``); its normal tail probabilities depend on the bounds only,
so a sampler computes them once per bin (:func:`normal_tails`) and each draw costs one
``ndtri``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri

__all__ = ["normal_tails", "truncnorm_ppf", "truncnorm_ppf_from_tails"]


def normal_tails(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(Phi(a), Phi(b), Phi(-a), Phi(-b))`` for bounds in standard units.

    Parameters
    ----------
    a, b : ndarray of float64 of the same shape
        Lower and upper bounds, ``a <= b``; infinities allowed.

    Returns
    -------
    tuple of four ndarray of float64 of the shape of ``a``
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return ndtr(a), ndtr(b), ndtr(-a), ndtr(-b)


def truncnorm_ppf_from_tails(
    u: np.ndarray, fa: np.ndarray, fb: np.ndarray, sa: np.ndarray, sb: np.ndarray
) -> np.ndarray:
    """Quantile ``u`` of the standard normal truncated to ``[a, b]``, from its tails.

    Parameters
    ----------
    u : ndarray of float64 of shape (...)
        Probabilities in [0, 1].
    fa, fb, sa, sb : ndarray of float64, broadcastable to the shape of ``u``
        ``Phi(a)``, ``Phi(b)``, ``Phi(-a)``, ``Phi(-b)`` (see :func:`normal_tails`).

    Returns
    -------
    ndarray of float64
        Not clipped: where both bounds lie beyond about 37 standard deviations on the
        same side (``Phi`` underflows) the result may be infinite; clip it to the bounds.

    Notes
    -----
    The quantile is ``ndtri(Phi(a) + u * (Phi(b) - Phi(a)))``. Where that probability is
    above one half the same point is computed from the upper tail, ``-ndtri(Phi(-b) +
    (1 - u) * (Phi(-a) - Phi(-b)))``, so neither tail loses precision near 1.
    """
    p = fa + u * (fb - fa)
    upper = p > 0.5
    t = np.where(upper, sb + (1.0 - u) * (sa - sb), p)
    s = ndtri(np.maximum(t, 0.0))
    np.negative(s, out=s, where=upper)
    return s


def truncnorm_ppf(u: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Quantile ``u`` of the standard normal truncated to ``[a, b]``.

    Parameters
    ----------
    u : ndarray of float64 of shape (...)
        Probabilities in [0, 1] (uniform draws give truncated-normal draws).
    a, b : ndarray of float64, broadcastable to the shape of ``u``
        Lower and upper bounds in standard units, ``a <= b``; infinities allowed.

    Returns
    -------
    ndarray of float64 of the broadcast shape, within ``[a, b]``
    """
    u, a, b = np.broadcast_arrays(
        np.asarray(u, np.float64), np.asarray(a, np.float64), np.asarray(b, np.float64)
    )
    return np.clip(truncnorm_ppf_from_tails(u, *normal_tails(a, b)), a, b)
