"""The ``cpu`` backend's convolution epilogue: bias, residual and activation in one pass.

A matrix product leaves a convolution's sums in a (pixels, filters) or (filters, pixels)
matrix; :func:`bias_clamp` adds the bias (and the residual of an ``Add`` that follows) and
clamps each element to ``(lo, hi)`` (ReLU: ``(0, inf)``, ReLU6: ``(0, 6)``) in place, in
one compiled pass over that memory instead of a bias pass and an activation or addition
pass. A NaN stays NaN (it compares false with both bounds), as ``np.clip`` keeps it.
Compiled by numba on first use and cached on disk.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["bias_clamp"]


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _per_column(out, bias, residual, bounds):  # pragma: no cover - compiled
    """``out (m, f)`` <- clamp(out + bias[None, :] (+ residual))."""
    lo, hi = bounds[0], bounds[1]
    for r in range(out.shape[0]):
        row = out[r]
        for k in range(out.shape[1]):
            v = row[k] + bias[k]
            if residual is not None:
                v = v + residual[r, k]
            v = lo if v < lo else v
            row[k] = hi if v > hi else v


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _per_row(out, bias, residual, bounds):  # pragma: no cover - compiled
    """``out (f, m)`` <- clamp(out + bias[:, None] (+ residual))."""
    lo, hi = bounds[0], bounds[1]
    for r in range(out.shape[0]):
        row, b = out[r], bias[r]
        for k in range(out.shape[1]):
            v = row[k] + b
            if residual is not None:
                v = v + residual[r, k]
            v = lo if v < lo else v
            row[k] = hi if v > hi else v


def bias_clamp(out: np.ndarray, bias, bounds, *, axis: int = 1, residual=None) -> np.ndarray:
    """``out`` with the bias (and a residual) added and clamped to ``bounds``, in place.

    Parameters
    ----------
    out : ndarray of shape (m, f) (``axis=1``) or (f, m) (``axis=0``), C-contiguous
    bias : ndarray of shape (f,) or None
        None adds nothing.
    bounds : tuple of (float, float) or None
        ``(lo, hi)`` (``-inf`` / ``inf`` leave a side open); None clamps nothing.
    axis : {0, 1}, default=1
        The axis of ``out`` the bias runs along.
    residual : ndarray of the shape of ``out``, optional
        Added after the bias (``(out + bias) + residual``, the order of a convolution
        followed by an ``Add``), before the clamp.

    Returns
    -------
    ndarray
        ``out`` itself.
    """
    if bounds is None:
        if bias is None and residual is None:
            return out
        # still compiled: numpy's broadcast add over rows of a few filters runs several
        # times slower (every value is within these bounds, NaN stays NaN)
        bounds = (-np.inf, np.inf)
    shift = np.zeros(out.shape[axis], out.dtype) if bias is None else bias.astype(out.dtype)
    clamp = np.array(bounds, out.dtype)
    (_per_column if axis == 1 else _per_row)(out, shift, residual, clamp)
    return out
