"""TFLite's integer arithmetic, vectorised: multipliers from float32 scales, and gemmlowp's fixed point.

TFLite stores scales as float32 and derives each fixed-point multiplier in double from those
float32 values (``double(s_in) * double(s_w) / double(s_out)``), then writes it as a 31-bit
mantissa and a shift (:func:`xai_core.int8.numerics.quantize_multiplier`). The elementwise
kernels (softmax, hard-swish) use gemmlowp's fixed-point numbers, reproduced here on int64
arrays so every step is exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core.int8.numerics import multiply_by_quantized_multiplier, quantize_multiplier
from xai_core.kernels.requant import requantize_rows

__all__ = [
    "INT16_MAX",
    "INT16_MIN",
    "INT32_MAX",
    "INT32_MIN",
    "inv_sqrt_multiplier",
    "multiplier_from_scales",
    "requantize",
    "rounding_divide_by_pot",
    "saturating_left_shift",
    "saturating_rounding_doubling_high_mul",
]

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT16_MIN, INT16_MAX = -(2**15), 2**15 - 1


def multiplier_from_scales(numerator: Any, denominator: Any) -> tuple[np.ndarray, np.ndarray]:
    """Fixed-point ``(q, shift)`` of ``numerator / denominator``, computed as TFLite does.

    Parameters
    ----------
    numerator, denominator : array-like of float
        Products of float32 scales already formed in float64 (or float32 where TFLite
        multiplies them in float first); broadcast together.
    """
    real = np.asarray(numerator, dtype=np.float64) / np.asarray(denominator, dtype=np.float64)
    return quantize_multiplier(real)


def requantize(
    acc: np.ndarray, q: Any, shift: Any, zero_point: int, lo: int, hi: int
) -> np.ndarray:
    """``clamp(MultiplyByQuantizedMultiplier(acc) + zero_point, lo, hi)`` as int8."""
    acc = np.asarray(acc)
    if acc.dtype.kind in "iu" and -128 <= lo <= hi <= 127:  # one compiled pass, same integers
        done = requantize_rows(acc, q, shift, int(zero_point), int(lo), int(hi))
        if done is not None:
            return done
    out = multiply_by_quantized_multiplier(acc, q, shift) + int(zero_point)
    return np.clip(out, lo, hi).astype(np.int8)


def saturating_rounding_doubling_high_mul(a: Any, b: Any, bits: int = 32) -> np.ndarray:
    """gemmlowp's ``SaturatingRoundingDoublingHighMul`` for ``bits``-bit operands (32 or 16)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    overflow = (a == lo) & (b == lo)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << (bits - 2), 1 - (1 << (bits - 2)))
    total = ab + nudge
    high = np.where(total >= 0, total >> (bits - 1), -((-total) >> (bits - 1)))
    return np.where(overflow, hi, high)


def rounding_divide_by_pot(x: Any, exponent: Any) -> np.ndarray:
    """gemmlowp's ``RoundingDivideByPOT``: ``x / 2**exponent`` rounded to nearest, ties away from 0."""
    x = np.asarray(x, dtype=np.int64)
    exponent = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def saturating_left_shift(x: Any, shift: int, bits: int = 32) -> np.ndarray:
    """``x * 2**shift`` saturated to the signed ``bits``-bit range."""
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return np.clip(np.asarray(x, dtype=np.int64) << shift, lo, hi)


def _wrap32(v: int) -> int:
    """``v`` as a C int32 holds it (two's complement wrap)."""
    return (v + 2**31) % 2**32 - 2**31


def _srdhm(a: int, b: int) -> int:
    """``SaturatingRoundingDoublingHighMul`` of two int32 Python integers."""
    return int(saturating_rounding_doubling_high_mul(a, b))


def _saturating_shift(x: int, exponent: int) -> int:
    """gemmlowp's ``SaturatingRoundingMultiplyByPOT`` with a positive exponent."""
    return int(saturating_left_shift(x, exponent))


def inv_sqrt_multiplier(value: int) -> tuple[int, int]:
    """TFLite's ``GetInvSqrtQuantizedMultiplierExp(value, kReverseShift)``: ``1 / sqrt(value)``
    as a 31-bit multiplier and a (left) shift, by five Newton-Raphson steps in gemmlowp's
    fixed point with three integer bits.

    Parameters
    ----------
    value : int
        ``>= 0``; 0 and 1 give ``(INT32_MAX, 0)``, as TFLite handles them.

    Returns
    -------
    (int, int)
        The multiplier and the shift, for
        :func:`~xai_core.int8.numerics.multiply_by_quantized_multiplier`.
    """
    if value <= 1:
        return INT32_MAX, 0
    shift = 11
    while value >= 1 << 29:
        value //= 4
        shift += 1
    pairs = ((32 - value.bit_length()) - 1) // 2 - 1  # CountLeadingZeros(value) - 1, in pairs
    shift -= pairs
    value <<= 2 * pairs
    half_input = int(rounding_divide_by_pot(value >> 1, 1))  # F3: input / 2, rounded
    half_three = (1 << 28) + (1 << 27)  # 1.5 in F3
    x = 1 << 28  # 1 in F3
    for _ in range(5):
        x3 = _saturating_shift(_srdhm(_srdhm(x, x), x), 6)  # Rescale<3>(x * x * x)
        x = _saturating_shift(_wrap32(_srdhm(half_three, x) - _srdhm(half_input, x3)), 3)
    x = _srdhm(x, 1518500250)  # times sqrt(2) / 2 in F0
    if shift < 0:
        x = _wrap32(x << -shift)
        shift = 0
    return x, -shift
