"""The compiled requantisation equals gemmlowp's arithmetic step for step, on every rounding case."""

import numpy as np
import pytest

from xai_core.int8.fixedpoint import (
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)
from xai_core.int8.numerics import quantize_multiplier
from xai_core.kernels.requant import multiply_by_quantized_multiplier_rows, requantize_rows


def gemmlowp(x, q, shift):
    """TFLite's ``MultiplyByQuantizedMultiplier`` from gemmlowp's three primitives."""
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    high = saturating_rounding_doubling_high_mul(
        np.clip(np.asarray(x, np.int64) << left, -(2**31), 2**31 - 1), q
    )
    return rounding_divide_by_pot(high, right)


def cases(seed):
    rng = np.random.default_rng(seed)
    real = np.exp(rng.uniform(np.log(1e-6), np.log(4.0), size=16))
    q, shift = quantize_multiplier(real)
    x = rng.integers(-(2**31), 2**31, size=(300, 16), dtype=np.int64)
    x[:100] //= 2**16  # small sums too, where the rounding ties show
    x[100:110] = -(2**31)
    x[110:120] = 2**31 - 1
    ties = (np.int64(1) << np.maximum(-np.asarray(shift), 1)) // 2  # exact halves after the shift
    x[120:130] = ties * np.where(np.arange(16) % 2, 1, -1)
    return x, np.asarray(q), np.asarray(shift)


@pytest.mark.parametrize("seed", range(4))
def test_per_channel_equals_gemmlowp(seed):
    x, q, shift = cases(seed)
    np.testing.assert_array_equal(
        multiply_by_quantized_multiplier_rows(x, q, shift), gemmlowp(x, q, shift)
    )


@pytest.mark.parametrize("seed", range(2))
def test_one_multiplier_and_the_int8_store(seed):
    x, q, shift = cases(seed)
    got = multiply_by_quantized_multiplier_rows(x[:, :3], q[5], shift[5])
    np.testing.assert_array_equal(got, gemmlowp(x[:, :3], q[5], shift[5]))
    out = requantize_rows(x, q, shift, -3, -128, 127)
    assert out.dtype == np.int8
    np.testing.assert_array_equal(out, np.clip(gemmlowp(x, q, shift) - 3, -128, 127))


def test_other_broadcasts_are_left_to_the_caller():
    """Parameters that vary along another axis than the last: None (the numpy form runs)."""
    x = np.zeros((4, 3), np.int64)
    assert multiply_by_quantized_multiplier_rows(x, np.ones((4, 1), np.int64), 0) is None
    assert multiply_by_quantized_multiplier_rows(x, np.ones(5, np.int64), 0) is None
