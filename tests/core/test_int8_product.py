"""Exact int8 products through float32 BLAS equal integer matrix products."""

import numpy as np
import pytest

from xai_core.kernels.int8_product import EXACT_K, exact_int8_product


@pytest.mark.parametrize("k", [1, EXACT_K, EXACT_K + 1, 3 * EXACT_K + 5])
def test_the_largest_sums_are_exact(k):
    """-128 * -128 in every term: the slice sums reach 2**24 exactly, and more across slices."""
    a = np.full((3, k), -128, np.int8)
    b = np.full((k, 2), -128, np.int8)
    a[1, ::2] = 127  # mixed signs: partial sums rise and fall
    a[2], b[:, 1] = 127, 127  # odd terms of 16129: beyond 2**24, float32 would round them
    got = exact_int8_product(a, b)
    np.testing.assert_array_equal(got, a.astype(np.int64) @ b.astype(np.int64))
    assert got.dtype == np.float64


def test_random_products_are_exact():
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, size=(257, 2100), dtype=np.int8)
    b = rng.integers(-128, 128, size=(2100, 33), dtype=np.int8)
    np.testing.assert_array_equal(exact_int8_product(a, b), a.astype(np.int64) @ b.astype(np.int64))
