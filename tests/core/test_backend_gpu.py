"""The GPU backend: tiled-GEMM counters, tile-order fp32 accumulation, fp16 and tf32 operands."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import xai_core as xai
from xai_core.backends.gpu import round_tf32
from xai_core.testing import check_backend

U32 = 2.0**-24


@pytest.mark.parametrize("preset", ["p100", "v100", "a100"])
@pytest.mark.parametrize("precision", ["fp32", "tf32", "fp16"])
def test_gpu_keeps_backend_contract(preset, precision):
    """check_backend passes for every preset and operand precision."""
    check_backend(xai.get_backend("gpu", preset=preset, precision=precision))


def _tf32_reference(x):
    """Round to 11 significant bits in float64 arithmetic, with float32's subnormal step."""
    x64 = x.astype(np.float64)
    _, e = np.frexp(x64)
    ulp = np.ldexp(1.0, np.maximum(e, -125) - 11)
    with np.errstate(over="ignore", invalid="ignore"):
        return (np.round(x64 / ulp) * ulp).astype(np.float32)  # np.round: ties to even


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.uint32, st.integers(1, 300), elements=st.integers(0, 2**32 - 1)))
def test_tf32_rounding_matches_a_float64_reference(bits):
    """Bit-level tf32 rounding equals ties-to-even rounding to 11 significant bits (NaN stays NaN)."""
    x = bits.view(np.float32)
    ours = round_tf32(x)
    nan = np.isnan(x)
    assert np.isnan(ours[nan]).all()
    ref = _tf32_reference(x[~nan])
    np.testing.assert_array_equal(ours[~nan].view(np.uint32), ref.view(np.uint32))


def test_tf32_rounding_edge_cases():
    """Ties go to even, the largest float rounds to infinity, subnormals round at step 2**-136."""
    x = np.array(
        [1 + 2**-11, 1 + 3 * 2**-11, np.finfo(np.float32).max, -np.inf, 2**-140, 3 * 2**-137],
        dtype=np.float32,
    )
    out = round_tf32(x)
    np.testing.assert_array_equal(out, [1.0, 1 + 2**-9, np.inf, -np.inf, 0.0, 2**-135])


@pytest.mark.parametrize("precision", ["fp16", "tf32"])
def test_reduced_precision_operands_with_fp32_sums(precision):
    """fp16 and tf32 matmuls equal the float64 product of rounded operands within fp32 summation error."""
    rng = np.random.default_rng(4)
    a = rng.normal(size=(37, 300)).astype(np.float32)
    b = rng.normal(size=(300, 19)).astype(np.float32)
    out = xai.get_backend("gpu", precision=precision).matmul(a, b)
    if precision == "fp16":
        ra, rb = a.astype(np.float16).astype(np.float64), b.astype(np.float16).astype(np.float64)
    else:
        ra, rb = _tf32_reference(a).astype(np.float64), _tf32_reference(b).astype(np.float64)
    exact = ra @ rb
    k = a.shape[1]
    bound = k * U32 / (1 - k * U32) * (np.abs(ra) @ np.abs(rb))
    assert np.all(np.abs(out - exact) <= bound)
    assert not np.array_equal(out, a @ b)  # the rounding happened


def test_accumulation_follows_k_tiles():
    """Partials of each BK-long tile are summed in fp32: 2**24 + eight ones survives BK=8, not BK=1."""
    a = np.array([[2.0**24] + [0.0] * 7 + [1.0] * 8], dtype=np.float32)
    b = np.ones((16, 1), dtype=np.float32)
    tiled = xai.get_backend("gpu", tile=(128, 128, 8)).matmul(a, b)
    per_element = xai.get_backend("gpu", tile=(128, 128, 1)).matmul(a, b)
    assert tiled[0, 0] == 2.0**24 + 8
    assert per_element[0, 0] == 2.0**24  # each +1 is lost to round-to-even, in order


def test_many_rows_sum_their_tiles_in_the_same_order():
    """A GEMM taller than one block of running sums equals the per-tile sums over all rows."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((17000, 37)).astype(np.float32)
    b = rng.standard_normal((37, 64)).astype(np.float32)
    expected = a[:, :8] @ b[:8]
    for k0 in range(8, 37, 8):
        expected += a[:, k0 : k0 + 8] @ b[k0 : k0 + 8]
    np.testing.assert_array_equal(xai.get_backend("gpu").matmul(a, b), expected)


def _walk_tiles(m, k, n, bm, bn, bk):
    """Count global loads by walking every block and K-step of the tiled GEMM."""
    loads = 0
    for r0 in range(0, m, bm):
        for c0 in range(0, n, bn):
            for k0 in range(0, k, bk):
                kk = min(bk, k - k0)
                loads += min(bm, m - r0) * kk + kk * min(bn, n - c0)
    return loads


@pytest.mark.parametrize("shape", [(1, 1, 1), (130, 70, 129), (300, 17, 5), (4096, 9, 32)], ids=str)
def test_tiled_gemm_counters(shape):
    """Blocks, waves and global traffic are those of the tiled GEMM, checked by walking the tiles."""
    m, k, n = shape
    gpu = xai.get_backend("gpu", preset="v100")
    gpu.matmul(np.ones((m, k), np.float32), np.ones((k, n), np.float32))
    c = gpu.counters
    blocks = -(-m // 128) * -(-n // 128)
    assert c["thread_blocks"] == blocks
    assert c["waves"] == -(-blocks // (80 * gpu.blocks_per_sm))
    reads = m * k * -(-n // 128) + k * n * -(-m // 128)
    assert reads == _walk_tiles(m, k, n, 128, 128, 8)
    assert c["global_bytes_read"] == 4 * reads and c["global_bytes_written"] == 4 * m * n
    assert c["smem_bytes_written"] == c["global_bytes_read"]
    assert c["est_seconds"] == pytest.approx(max(c["compute_seconds"], c["memory_seconds"]))
    assert c["cycles"] == pytest.approx(c["est_seconds"] * 1530e6)


def test_occupancy_is_limited_by_the_scarcest_resource():
    """128x128x8 blocks of 256 threads at 128 registers: two per SM (registers), occupancy 1/4."""
    gpu = xai.get_backend("gpu", preset="v100")
    assert gpu.blocks_per_sm == 2 and gpu.occupancy == 0.25
    lean = xai.get_backend("gpu", preset="v100", regs_per_thread=32)
    assert lean.blocks_per_sm == 6  # now shared memory: 96 KiB / 16 KiB per block
    with pytest.raises(xai.ValidationError, match="does not fit"):
        xai.get_backend("gpu", preset="p100", tile=(256, 256, 32))


def test_roofline_separates_memory_and_compute_bound_gemms():
    """An outer product (K=1) is memory-bound; a large square GEMM is compute-bound."""
    gpu = xai.get_backend("gpu", preset="p100")
    gpu.matmul(np.ones((2048, 1), np.float32), np.ones((1, 2048), np.float32))
    c = gpu.counters
    assert c["memory_seconds"] > c["compute_seconds"]
    assert c["memory_seconds"] == pytest.approx((2048 * 16 * 2 + 2048 * 2048) * 4 / 732e9)
    gpu.reset_counters()
    gpu.matmul(np.ones((1024, 1024), np.float32), np.ones((1024, 1024), np.float32))
    c = gpu.counters
    assert c["compute_seconds"] > c["memory_seconds"]
    assert c["compute_seconds"] == pytest.approx(-(-64 // 56) * 2 * 128 * 128 * 1024 * 56 / 10.6e12)


def test_fp16_halves_traffic_and_uses_tensor_cores():
    """fp16 operands move half the bytes and run at the V100's tensor-core rate."""
    a, b = np.ones((300, 512), np.float32), np.ones((512, 200), np.float32)
    fp32, fp16 = xai.get_backend("gpu"), xai.get_backend("gpu", precision="fp16")
    fp32.matmul(a, b)
    fp16.matmul(a, b)
    assert fp16.counters["global_bytes_read"] * 2 == fp32.counters["global_bytes_read"]
    assert fp16.peak_flops == 125e12 and "tensor cores" in fp16.describe()["numerics"]
    assert "emulated" in xai.get_backend("gpu", precision="tf32").describe()["numerics"]


@pytest.mark.parametrize(
    ("settings_", "error", "match"),
    [
        ({"preset": "h100"}, xai.UnknownNameError, "a100, p100, v100"),
        ({"precision": "fp64"}, xai.UnknownNameError, "fp16, fp32, tf32"),
        ({"tile": (128, 128)}, xai.ValidationError, "tile must be"),
        ({"threads_per_block": 300}, xai.ValidationError, "must divide"),
    ],
    ids=["preset", "precision", "tile", "threads"],
)
def test_bad_settings_are_rejected(settings_, error, match):
    """Each bad setting raises a clear error naming it."""
    with pytest.raises(error, match=match):
        xai.get_backend("gpu", **settings_)


def test_elementwise_is_a_roofline_too():
    """Elementwise work is counted as memory traffic and CUDA-core operations."""
    gpu = xai.get_backend("gpu", preset="v100")
    out = gpu.elementwise(np.maximum, np.arange(-5.0, 5.0), 0.0)
    np.testing.assert_array_equal(out, np.maximum(np.arange(-5.0, 5.0), 0))
    c = gpu.counters
    assert c["elementwise_ops"] == 10 and c["global_bytes_read"] == 4 * 11
    assert c["est_seconds"] == pytest.approx(max(10 / 5120 / 1530e6, 4 * 21 / 900e9))
