"""batched_matmul: the cpu's stacked product against the protocol's loop over matmul."""

import numpy as np
import pytest

import xai_core as xai
from xai_core.backends.base import Backend
from xai_core.backends.cpu import CPUBackend


def _stacks(rng, groups=5, m=37, k=9, n=3):
    a = rng.normal(size=(groups, m, k)).astype(np.float32)
    b = rng.normal(size=(groups, k, n)).astype(np.float32)
    return a, b


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cpu_batched_matmul_equals_the_loop_default_in_values_and_counters(dtype):
    """The cpu's one stacked product gives the default's values and exactly its counters."""
    rng = np.random.default_rng(0)
    a, b = _stacks(rng)
    fast, loop = CPUBackend(dtype), CPUBackend(dtype)
    got = fast.batched_matmul(a, b)
    want = Backend.batched_matmul(loop, a, b)
    assert got.shape == (5, 37, 3) and got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(want, np.einsum("gmk,gkn->gmn", a, b), rtol=1e-5, atol=1e-5)
    assert fast.counters == pytest.approx(loop.counters, rel=1e-12)  # est_seconds: one sum vs five
    assert fast.counters["matmuls"] == 5 and fast.counters["macs"] == 5 * 37 * 9 * 3


def test_batched_matmul_of_a_strided_view_equals_the_copy():
    """A non-contiguous stack (a grouped column matrix's view) gives the contiguous result."""
    rng = np.random.default_rng(1)
    cols = np.asfortranarray(rng.normal(size=(50, 4 * 6)).astype(np.float32))
    view = cols.T.reshape(4, 6, 50).transpose(0, 2, 1)
    w = rng.normal(size=(4, 6, 2)).astype(np.float32)
    got = CPUBackend().batched_matmul(view, w)
    want = CPUBackend().batched_matmul(np.ascontiguousarray(view), w)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["gpu", "tpu"])
def test_other_backends_run_each_product_through_their_own_matmul(name):
    """gpu and tpu keep the default: the stack's values and counters are those of a loop."""
    rng = np.random.default_rng(2)
    a, b = _stacks(rng, groups=3, m=20, k=16, n=8)
    stacked, looped = xai.get_backend(name), xai.get_backend(name)
    got = stacked.batched_matmul(a, b)
    want = np.stack([looped.matmul(x, y) for x, y in zip(a, b)])
    np.testing.assert_array_equal(got, want)
    assert stacked.counters == looped.counters


def test_a_cpu_subclass_with_its_own_matmul_sees_every_product():
    """A subclass overriding matmul (a bf16 cpu, say) gets the loop, one call per group."""
    calls = []

    class Recording(CPUBackend):
        def matmul(self, a, b):
            calls.append(a.shape)
            return super().matmul(a, b)

    a, b = _stacks(np.random.default_rng(3), groups=4)
    Recording().batched_matmul(a, b)
    assert calls == [(37, 9)] * 4


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [((2, 3, 4), (3, 4, 5)), ((2, 3, 4), (2, 5, 6)), ((3, 4), (4, 5)), ((0, 3, 4), (0, 4, 5))],
)
def test_batched_matmul_refuses_stacks_that_do_not_match(a_shape, b_shape):
    """Mismatched groups, inner sizes, 2-D operands or an empty stack: a ShapeError naming a and b."""
    for backend in (CPUBackend(), xai.get_backend("tpu")):
        with pytest.raises(xai.errors.ShapeError, match="batched_matmul"):
            backend.batched_matmul(np.zeros(a_shape), np.zeros(b_shape))


def test_check_backend_catches_a_batched_matmul_that_miscounts():
    """xai_core.testing.check_backend refuses a backend whose stacked product counts one matmul."""
    from xai_core.testing import check_backend

    class OneCount(CPUBackend):
        def batched_matmul(self, a, b):
            out = np.matmul(a, b)
            self._add(matmuls=1, macs=a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2])
            return out

    check_backend(CPUBackend())
    with pytest.raises(xai.errors.ContractError, match="one matmul per"):
        check_backend(OneCount())
