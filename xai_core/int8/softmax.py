"""TFLite's reference int8 softmax: gemmlowp's fixed-point exp and reciprocal, on int64 arrays.

The input of ``exp`` is a Q5.26 number (``input_diff * beta * scale``, rescaled), the sum of
exponentials a Q12.19 number, and the reciprocal a Q0.31 number from three Newton-Raphson
steps; the output is ``exp * reciprocal`` shifted to int8 at scale 1/256, zero point -128.
int32 wrap-around is reproduced where gemmlowp's additions can overflow.
"""

from __future__ import annotations

import numpy as np

from xai_core.int8.fixedpoint import (
    INT32_MAX,
    INT32_MIN,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)
from xai_core.int8.numerics import multiply_by_quantized_multiplier, quantize_multiplier

__all__ = ["softmax_int8"]

SCALED_DIFF_INTEGER_BITS = 5
ACCUMULATION_INTEGER_BITS = 12


def _wrap(x: np.ndarray) -> np.ndarray:
    """int32 two's-complement wrap-around of an int64 array."""
    return ((x + 2**31) & (2**32 - 1)) - 2**31


def _mul(a, b):
    return saturating_rounding_doubling_high_mul(a, b)


def _mul_pot(x, exponent: int):
    """``SaturatingRoundingMultiplyByPOT<exponent>``."""
    if exponent > 0:
        return np.clip(np.asarray(x, np.int64) << exponent, INT32_MIN, INT32_MAX)
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    return np.asarray(x, np.int64)


def _exp_on_interval(a: np.ndarray) -> np.ndarray:
    """exp(a) for a Q0.31 ``a`` in [-1/4, 0)."""
    constant_term = 1895147668  # exp(-1/8)
    one_third = 715827883
    x = _wrap(a + (1 << 28))
    x2 = _mul(x, x)
    x3 = _mul(x2, x)
    x4 = _mul(x2, x2)
    x4_over_4 = _mul_pot(x4, -2)
    poly = _mul_pot(_wrap(_mul(_wrap(x4_over_4 + x3), one_third) + x2), -1)
    return _wrap(constant_term + _mul(constant_term, _wrap(x + poly)))


def exp_on_negative_values(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp's ``exp_on_negative_values`` of a Q``integer_bits``.(31-``integer_bits``) input."""
    a = np.asarray(a, np.int64)
    fractional_bits = 31 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    mask = one_quarter - 1
    a_mod = _wrap((a & mask) - one_quarter)
    result = _exp_on_interval(_mul_pot(a_mod, integer_bits))  # Rescale<0>
    remainder = _wrap(a_mod - a)
    barrel = {
        -2: 1672461947,
        -1: 1302514674,
        0: 790015084,
        1: 290630308,
        2: 39332535,
        3: 720401,
        4: 242,
    }
    for exponent, multiplier in barrel.items():
        if integer_bits > exponent:
            bit = 1 << (fractional_bits + exponent)
            result = np.where(remainder & bit, _mul(result, multiplier), result)
    if integer_bits > 5:
        clamp = -(1 << (36 - integer_bits))
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, INT32_MAX, result)


def one_over_one_plus_x_for_x_in_0_1(a: np.ndarray) -> np.ndarray:
    """1 / (1 + a) for a Q0.31 ``a`` in [0, 1), by Newton-Raphson as gemmlowp does."""
    a = np.asarray(a, np.int64)
    total = a + INT32_MAX  # RoundingHalfSum(a, One): (sum + sign) / 2, truncating
    t = total + np.where(total >= 0, 1, -1)
    half_denominator = np.where(t >= 0, t // 2, -((-t) // 2))
    c48_17, cm32_17 = 1515870810, -1010580540  # Q2.29
    one_q2 = 1 << 29
    x = _wrap(c48_17 + _mul(half_denominator, cm32_17))
    for _ in range(3):
        hd_x = _mul(half_denominator, x)
        one_minus = _wrap(one_q2 - hd_x)
        x = _wrap(x + _mul_pot(_mul(x, one_minus), 2))  # Rescale<2> of a Q4 product
    return _mul_pot(x, 1)  # Rescale<0>(ExactMulByPot<-1>(x)): Q1 -> Q0


def _reciprocal(x: np.ndarray, integer_digits: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's ``GetReciprocal``: a Q0.31 scale and the bits over unit, per element."""
    x = np.asarray(x, np.int64)
    ux = x & 0xFFFFFFFF
    headroom_plus_one = 32 - np.floor(np.log2(np.maximum(ux, 1))).astype(np.int64) - 1
    headroom_plus_one = np.where(ux == 0, 32, headroom_plus_one)
    # fix floating log2 at exact powers of two and near them
    too_big = (ux << headroom_plus_one) >= (1 << 32)
    headroom_plus_one = headroom_plus_one - too_big
    too_small = (ux << (headroom_plus_one + 1)) < (1 << 32)
    headroom_plus_one = headroom_plus_one + (too_small & (ux != 0))
    bits_over_unit = integer_digits - headroom_plus_one
    shifted = ((ux << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31)
    shifted = _wrap(shifted)
    return one_over_one_plus_x_for_x_in_0_1(shifted), bits_over_unit


def _softmax_params(beta: float, input_scale: float) -> tuple[int, int, int]:
    """``PreprocessSoftmaxScaling`` and ``CalculateInputRadius``: multiplier, shift, diff_min."""
    max_real = float((1 << 31) - 1)
    real = min(beta * input_scale * (1 << (31 - SCALED_DIFF_INTEGER_BITS)), max_real)
    q, left_shift = (int(v) for v in quantize_multiplier(real))
    radius = (
        1.0
        * ((1 << SCALED_DIFF_INTEGER_BITS) - 1)
        * (1 << (31 - SCALED_DIFF_INTEGER_BITS))
        / (1 << left_shift)
    )
    return q, left_shift, -int(np.floor(radius))


def softmax_int8(q: np.ndarray, beta: float, input_scale: float) -> np.ndarray:
    """int8 softmax over the last axis (output scale 1/256, zero point -128)."""
    multiplier, left_shift, diff_min = _softmax_params(float(beta), float(np.float64(input_scale)))
    x = q.astype(np.int64)
    diff = x - x.max(axis=-1, keepdims=True)
    keep = diff >= diff_min
    rescaled = multiply_by_quantized_multiplier(diff, multiplier, left_shift)
    exps = exp_on_negative_values(rescaled, SCALED_DIFF_INTEGER_BITS)
    exps = np.where(keep, exps, 0)
    terms = _mul_pot(exps, -ACCUMULATION_INTEGER_BITS)  # Rescale<12>
    sums = _wrap(terms.sum(axis=-1, keepdims=True))
    scale, bits_over_unit = _reciprocal(sums, ACCUMULATION_INTEGER_BITS)
    exponent = bits_over_unit + 31 - 8
    out = rounding_divide_by_pot(_mul(scale, exps), exponent) - 128
    out = np.where(keep, out, -128)
    return np.clip(out, -128, 127).astype(np.int8)
