"""The compiled bfloat16 rounding equals ml_dtypes' cast bit for bit."""

import ml_dtypes
import numpy as np
import pytest

from xai_core.kernels.bf16 import round_bf16


def reference(x):
    return np.asarray(x, dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


def patterns():
    """Every exponent and sign with the low halves that decide the rounding, random bits,
    infinities, NaNs with payloads, the largest finites and subnormals."""
    high = np.arange(2**16, dtype=np.uint32) << 16  # every bf16 value's bits
    lows = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)
    edges = (high[:, None] | lows[None, :]).ravel()
    rng = np.random.default_rng(0)
    random = rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([edges, random])


def test_every_class_of_value_rounds_as_ml_dtypes():
    bits = patterns()
    with np.errstate(invalid="ignore"):
        expected = reference(bits.view(np.float32)).view(np.uint32)
    got = round_bf16(bits.view(np.float32)).view(np.uint32)
    np.testing.assert_array_equal(got, expected)


def test_ties_go_to_even_and_overflow_to_infinity():
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8, np.finfo(np.float32).max, -0.0], np.float32)
    np.testing.assert_array_equal(round_bf16(x), [1.0, 1 + 4 * 2**-8, np.inf, -0.0])
    assert np.signbit(round_bf16(x)[3])


@pytest.mark.parametrize(
    "x",
    [
        np.linspace(-3, 3, 24, dtype=np.float64).reshape(2, 3, 4),
        np.linspace(-3, 3, 48, dtype=np.float32).reshape(6, 8)[:, ::2],
        np.asfortranarray(np.linspace(-3, 3, 48, dtype=np.float32).reshape(6, 8)),
        np.float32(1.7),
        np.empty((0, 5), np.float32),
    ],
    ids=["float64", "strided", "fortran", "scalar", "empty"],
)
def test_any_array_keeps_its_shape(x):
    got = round_bf16(x)
    assert got.dtype == np.float32 and got.shape == np.shape(x)
    np.testing.assert_array_equal(got, reference(x))
