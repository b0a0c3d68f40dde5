"""TFLite's fixed-point requantisation in one compiled pass per element.

``MultiplyByQuantizedMultiplier(x, q, shift)`` (gemmlowp's ``SaturatingRoundingDoublingHighMul``
by the 31-bit multiplier ``q`` after a left shift, then ``RoundingDivideByPOT`` for a right
shift) is what every int8 operator applies to its int32 sums. Written with numpy it is a
dozen passes over int64 arrays; here it is one loop over the elements, with the multiplier
and shift of each element's channel (the last axis), and optionally the zero point added and
the result clamped and stored as int8 in the same pass. The arithmetic is the integer
arithmetic of the numpy form step for step (the tests compare the two on every rounding
case), so results stay bit-identical to LiteRT's reference kernels. Compiled by numba on
first use and cached on disk.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["multiply_by_quantized_multiplier_rows", "requantize_rows"]

_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1


@njit(cache=True, nogil=True, boundscheck=False)
def _scaled(v, q, s):  # pragma: no cover - compiled
    """One element: ``MultiplyByQuantizedMultiplier(v, q, s)`` in int64."""
    if s > 0:
        v = v << s
        if v < _INT32_MIN:
            v = _INT32_MIN
        elif v > _INT32_MAX:
            v = _INT32_MAX
    ab = v * q
    t = ab + (1 << 30) if ab >= 0 else ab + 1 - (1 << 30)
    high = t >> 31 if t >= 0 else -((-t) >> 31)  # truncating division by 2**31
    right = -s if s < 0 else 0
    mask = (np.int64(1) << right) - 1
    remainder = high & mask
    threshold = (mask >> 1) + (1 if high < 0 else 0)
    return (high >> right) + (1 if remainder > threshold else 0)


@njit(cache=True, nogil=True, boundscheck=False)
def _mbqm(x, q, shift, out):  # pragma: no cover - compiled
    per = q.shape[0] > 1
    for r in range(x.shape[0]):
        for c in range(x.shape[1]):
            k = c if per else 0
            out[r, c] = _scaled(np.int64(x[r, c]), q[k], shift[k])


@njit(cache=True, nogil=True, boundscheck=False)
def _requant(x, q, shift, zero_point, lo, hi, out):  # pragma: no cover - compiled
    per = q.shape[0] > 1
    for r in range(x.shape[0]):
        for c in range(x.shape[1]):
            k = c if per else 0
            v = _scaled(np.int64(x[r, c]), q[k], shift[k]) + zero_point
            v = lo if v < lo else v
            out[r, c] = hi if v > hi else v


def _rows(x: np.ndarray, q: np.ndarray, shift: np.ndarray):
    """``x`` as (rows, channels) and ``q``, ``shift`` as int64 vectors, or None when the
    parameters do not vary along the last axis only (then the caller's numpy form runs)."""
    q = np.asarray(q, dtype=np.int64).reshape(-1) if np.ndim(q) <= 1 else None
    shift = np.asarray(shift, dtype=np.int64).reshape(-1) if np.ndim(shift) <= 1 else None
    if q is None or shift is None or x.ndim == 0:
        return None
    c = x.shape[-1]
    if q.size not in (1, c) or shift.size not in (1, c):
        return None
    if q.size != shift.size:
        q, shift = np.broadcast_to(q, (c,)).copy(), np.broadcast_to(shift, (c,)).copy()
    width = c if q.size > 1 else 1
    flat = np.ascontiguousarray(x).reshape(-1, width if width > 1 else x.size or 1)
    return flat, q, shift


def multiply_by_quantized_multiplier_rows(x: np.ndarray, q, shift) -> np.ndarray | None:
    """``MultiplyByQuantizedMultiplier`` of an integer array, per channel of its last axis.

    Parameters
    ----------
    x : ndarray of int (int32-range values), any shape
    q, shift : int or ndarray of int of shape (channels,)

    Returns
    -------
    ndarray of int64 of ``x``'s shape, or None when ``q`` or ``shift`` broadcast otherwise.
    """
    parts = _rows(x, q, shift)
    if parts is None:
        return None
    flat, q, shift = parts
    out = np.empty(flat.shape, dtype=np.int64)
    _mbqm(flat, q, shift, out)
    return out.reshape(x.shape)


def requantize_rows(
    x: np.ndarray, q, shift, zero_point: int, lo: int, hi: int
) -> np.ndarray | None:
    """``clamp(MultiplyByQuantizedMultiplier(x) + zero_point, lo, hi)`` as int8, one pass.

    Returns None when ``q`` or ``shift`` do not vary along the last axis only.
    """
    parts = _rows(x, q, shift)
    if parts is None:
        return None
    flat, q, shift = parts
    out = np.empty(flat.shape, dtype=np.int8)
    _requant(flat, q, shift, np.int64(zero_point), np.int64(lo), np.int64(hi), out)
    return out.reshape(x.shape)
