"""The systolic-array cost model agrees with SCALE-Sim and with the cycle-stepping simulator."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xai_core as xai
from xai_core.backends.systolic import DATAFLOWS, gemm_cost, round_bf16, simulate

# SCALE-Sim 3.0.0 (the PyPI release), run on GEMM topologies "M, N, K" with 4 MiB SRAMs
# per operand and estimated interface bandwidth (no stalls): its compute report (total
# cycles, overall utilisation, mapping efficiency, compute utilisation, in percent, to
# 10 decimals) and detailed access report (SRAM reads of ifmap and filter, SRAM writes of
# ofmap, then the same three at DRAM).
# fmt: off
SCALESIM = [
    ("ws", 10, 7, 5, 2, 2, 167, 52.3952095808, 72.9166666667, 48.6111111111, 210, 35, 200, 70, 35, 200),
    ("ws", 10, 7, 5, 3, 8, 65, 22.4358974359, 48.6111111111, 16.7624521073, 70, 35, 150, 70, 35, 150),
    ("ws", 10, 7, 5, 16, 4, 87, 6.2859195402, 27.34375, 5.8178191489, 140, 35, 50, 70, 35, 50),
    ("ws", 3, 2, 9, 2, 2, 34, 39.7058823529, 90.0, 33.75, 30, 18, 27, 6, 18, 27),
    ("ws", 3, 2, 9, 3, 8, 29, 7.7586206897, 37.5, 5.1136363636, 12, 18, 27, 6, 18, 27),
    ("ws", 3, 2, 9, 16, 4, 110, 0.7670454545, 9.375, 0.703125, 18, 18, 27, 6, 18, 27),
    ("ws", 17, 33, 9, 2, 2, 1784, 70.7539237668, 87.3529411765, 67.5, 2805, 297, 2601, 561, 297, 2601),
    ("ws", 17, 33, 9, 3, 8, 637, 33.0259026688, 56.25, 26.5625, 1122, 297, 1683, 561, 297, 1683),
    ("ws", 17, 33, 9, 16, 4, 458, 17.2250272926, 51.5625, 16.2326388889, 1683, 297, 459, 561, 297, 459),
    ("ws", 5, 40, 3, 2, 2, 359, 41.782729805, 75.0, 37.5, 400, 120, 300, 200, 120, 300),
    ("ws", 5, 40, 3, 3, 8, 237, 10.5485232068, 35.7142857143, 7.4404761905, 200, 120, 210, 200, 120, 210),
    ("ws", 5, 40, 3, 16, 4, 116, 8.0818965517, 62.5, 7.4404761905, 200, 120, 45, 200, 120, 45),
    ("ws", 64, 9, 32, 2, 2, 5439, 84.72145615, 90.0, 83.4782608696, 9216, 288, 10240, 576, 288, 10240),
    ("ws", 64, 9, 32, 3, 8, 911, 84.3029637761, 100.0, 77.1084337349, 2304, 288, 6144, 576, 288, 6144),
    ("ws", 64, 9, 32, 16, 4, 783, 36.7816091954, 56.25, 35.6435643564, 4608, 288, 2048, 576, 288, 2048),
    ("ws", 7, 130, 20, 2, 2, 7149, 63.645265072, 100.0, 58.3333333333, 9100, 2600, 9100, 910, 2600, 9100),
    ("ws", 7, 130, 20, 3, 8, 2507, 30.2486371493, 82.0707070707, 22.095959596, 2730, 2600, 6160, 910, 2600, 6160),
    ("ws", 7, 130, 20, 16, 4, 1844, 15.421637744, 90.2777777778, 14.3623737374, 4550, 2600, 1260, 910, 2600, 1260),
    ("os", 10, 7, 5, 2, 2, 134, 65.2985074627, 83.3333333333, 64.8148148148, 210, 175, 110, 70, 35, 50),
    ("os", 10, 7, 5, 3, 8, 63, 23.1481481481, 52.0833333333, 22.7864583333, 70, 140, 94, 70, 35, 50),
    ("os", 10, 7, 5, 16, 4, 49, 11.1607142857, 39.0625, 10.9375, 140, 35, 90, 70, 35, 50),
    ("os", 3, 2, 9, 2, 2, 39, 34.6153846154, 67.5, 33.75, 30, 36, 67, 6, 18, 27),
    ("os", 3, 2, 9, 3, 8, 21, 10.7142857143, 56.25, 10.2272727273, 12, 18, 49, 6, 18, 27),
    ("os", 3, 2, 9, 16, 4, 59, 1.4300847458, 14.0625, 1.40625, 18, 18, 87, 6, 18, 27),
    ("os", 17, 33, 9, 2, 2, 1574, 80.1937738247, 85.0, 80.1428571429, 2805, 2673, 333, 561, 297, 153),
    ("os", 17, 33, 9, 3, 8, 503, 41.824055666, 53.125, 41.7410714286, 1122, 1782, 285, 561, 297, 153),
    ("os", 17, 33, 9, 16, 4, 305, 25.8657786885, 39.84375, 25.78125, 1683, 594, 273, 561, 297, 153),
    ("os", 5, 40, 3, 2, 2, 251, 59.7609561753, 62.5, 59.5238095238, 400, 360, 39, 200, 120, 15),
    ("os", 5, 40, 3, 3, 8, 97, 25.7731958763, 31.25, 25.5102040816, 200, 240, 37, 200, 120, 15),
    ("os", 5, 40, 3, 16, 4, 57, 16.4473684211, 23.4375, 16.1637931034, 200, 120, 35, 200, 120, 15),
    ("os", 64, 9, 32, 2, 2, 5631, 81.8327117741, 100.0, 81.8181818182, 9216, 9216, 4096, 576, 288, 2048),
    ("os", 64, 9, 32, 3, 8, 1583, 48.5154769425, 96.9696969697, 48.4848484848, 2304, 6336, 3016, 576, 288, 2048),
    ("os", 64, 9, 32, 16, 4, 863, 33.3719582851, 100.0, 33.3333333333, 4608, 1152, 2688, 576, 288, 2048),
    ("os", 7, 130, 20, 2, 2, 5279, 86.1905663952, 87.5, 86.1742424242, 9100, 10400, 300, 910, 2600, 140),
    ("os", 7, 130, 20, 3, 8, 1250, 60.6666666667, 64.8148148148, 60.618172129, 2730, 7800, 239, 910, 2600, 140),
    ("os", 7, 130, 20, 16, 4, 739, 38.4810554804, 43.75, 38.4290540541, 4550, 2600, 240, 910, 2600, 140),
    ("is", 10, 7, 5, 2, 2, 179, 48.8826815642, 87.5, 43.75, 70, 175, 200, 70, 35, 200),
    ("is", 10, 7, 5, 3, 8, 101, 14.4389438944, 48.6111111111, 10.1273148148, 70, 70, 150, 70, 35, 150),
    ("is", 10, 7, 5, 16, 4, 116, 4.7144396552, 36.4583333333, 4.3402777778, 70, 105, 50, 70, 35, 50),
    ("is", 3, 2, 9, 2, 2, 25, 54.0, 75.0, 48.2142857143, 6, 36, 27, 6, 18, 27),
    ("is", 3, 2, 9, 3, 8, 20, 11.25, 25.0, 8.0357142857, 6, 18, 27, 6, 18, 27),
    ("is", 3, 2, 9, 16, 4, 42, 2.0089285714, 9.375, 1.8342391304, 6, 18, 27, 6, 18, 27),
    ("is", 17, 33, 9, 2, 2, 1988, 63.4934607646, 91.6666666667, 58.9285714286, 561, 2673, 2601, 561, 297, 2601),
    ("is", 17, 33, 9, 3, 8, 692, 30.4010115607, 70.8333333333, 22.7678571429, 561, 891, 1683, 561, 297, 1683),
    ("is", 17, 33, 9, 16, 4, 644, 12.2500970497, 58.4375, 11.433423913, 561, 1485, 459, 561, 297, 459),
    ("is", 5, 40, 3, 2, 2, 419, 35.799522673, 83.3333333333, 31.25, 200, 360, 300, 200, 120, 300),
    ("is", 5, 40, 3, 3, 8, 209, 11.961722488, 59.5238095238, 8.1168831169, 200, 120, 210, 200, 120, 210),
    ("is", 5, 40, 3, 16, 4, 221, 4.242081448, 52.0833333333, 3.90625, 200, 240, 45, 200, 120, 45),
    ("is", 64, 9, 32, 2, 2, 5759, 80.0138913006, 90.0, 77.8378378378, 576, 9216, 10240, 576, 288, 10240),
    ("is", 64, 9, 32, 3, 8, 1055, 72.7962085308, 100.0, 62.7450980392, 576, 2304, 6144, 576, 288, 6144),
    ("is", 64, 9, 32, 16, 4, 1055, 27.2985781991, 56.25, 26.0869565217, 576, 4608, 2048, 576, 288, 2048),
    ("is", 7, 130, 20, 2, 2, 6239, 72.9283539029, 87.5, 70.0, 910, 10400, 9100, 910, 2600, 9100),
    ("is", 7, 130, 20, 3, 8, 1407, 53.8971807629, 86.1742424242, 44.1919191919, 910, 2600, 6160, 910, 2600, 6160),
    ("is", 7, 130, 20, 16, 4, 971, 29.2868177137, 78.9930555556, 27.7168615984, 910, 5200, 1260, 910, 2600, 1260),
]
# fmt: on
KEYS = (
    "total_cycles",
    "overall_util",
    "mapping_efficiency",
    "compute_util",
    "ifmap_sram_reads",
    "filter_sram_reads",
    "ofmap_sram_writes",
    "ifmap_dram_reads",
    "filter_dram_reads",
    "ofmap_dram_writes",
)  # fmt: skip


@pytest.mark.parametrize("row", SCALESIM, ids=lambda r: "{}-{}x{}x{}-{}x{}".format(*r[:6]))
def test_closed_form_reproduces_scalesim_reports(row):
    """Every number of SCALE-Sim's compute and access reports comes out of the closed form."""
    df, m, k, n, rows, cols, *expected = row
    report = gemm_cost(m, k, n, array=(rows, cols), dataflow=df).scalesim_report()
    for key, want in zip(KEYS, expected):
        assert report[key] == pytest.approx(want, rel=0, abs=1e-8), key


@pytest.mark.parametrize("df", DATAFLOWS)
def test_cycle_formula_per_fold(df):
    """Cycles are folds times the per-fold formula of each dataflow; SCALE-Sim's total is one less."""
    m, k, n, r, c = 37, 51, 23, 8, 5
    per_fold = {"ws": 2 * r + c + m - 2, "os": k + r + c - 2, "is": 2 * r + c + n - 2}[df]
    spatial = {"ws": (k, n), "os": (m, n), "is": (k, m)}[df]
    folds = math.ceil(spatial[0] / r) * math.ceil(spatial[1] / c)
    cost = gemm_cost(m, k, n, array=(r, c), dataflow=df)
    assert (cost.folds, cost.fold_cycles) == (folds, per_fold)
    assert cost.cycles == cost.array_cycles == folds * per_fold
    assert cost.scalesim_total_cycles == folds * per_fold - 1
    assert cost.utilization == pytest.approx(m * k * n / (folds * per_fold * r * c))


def _brute_force_counts(m, k, n, rows, cols, df):
    """Walk every fold as SCALE-Sim does and count PEs mapped and elements moved."""
    sr, sc = {"ws": (k, n), "os": (m, n), "is": (k, m)}[df]
    mapped, reads_a, reads_b, writes_c, folds = 0.0, 0, 0, 0, 0
    for c0 in range(0, sc, cols):
        for r0 in range(0, sr, rows):
            used_r, used_c = min(rows, sr - r0), min(cols, sc - c0)
            mapped += used_r * used_c / (rows * cols)
            folds += 1
            if df == "ws":
                reads_a, reads_b, writes_c = (
                    reads_a + m * used_r,
                    reads_b + used_r * used_c,
                    writes_c + m * used_c,
                )
            elif df == "os":
                reads_a, reads_b, writes_c = (
                    reads_a + k * used_r,
                    reads_b + k * used_c,
                    writes_c + used_r * used_c,
                )
            else:
                reads_a, reads_b, writes_c = (
                    reads_a + used_r * used_c,
                    reads_b + n * used_r,
                    writes_c + n * used_c,
                )
    return mapped / folds, reads_a, reads_b, writes_c


@pytest.mark.parametrize("df", DATAFLOWS)
@pytest.mark.parametrize("shape", [(1, 1, 1), (9, 14, 6), (130, 70, 129), (5, 300, 2)], ids=str)
@pytest.mark.parametrize("array", [(2, 2), (8, 3), (4, 16)], ids=str)
def test_closed_form_counts_match_a_fold_by_fold_walk(df, shape, array):
    """Mapping efficiency and per-operand SRAM traffic equal a brute-force walk over the folds."""
    cost = gemm_cost(*shape, array=array, dataflow=df)
    eff, ra, rb, wc = _brute_force_counts(*shape, *array, df)
    assert cost.mapping_efficiency == pytest.approx(eff)
    assert (cost.sram_reads_a, cost.sram_reads_b, cost.sram_writes_c) == (ra, rb, wc)


# -- the cycle-stepping simulator equals the closed form ---------------------------------

SHAPES = [(1, 1, 1), (3, 5, 7), (6, 4, 8), (11, 9, 2), (2, 13, 10)]
ARRAYS = [(2, 2), (3, 2), (2, 5), (4, 4)]


@pytest.mark.parametrize("df", DATAFLOWS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("array", ARRAYS, ids=str)
def test_stepping_equals_closed_form_int8(df, shape, array):
    """Cycle by cycle, int8 operands give the exact product and the closed form's cycles per fold."""
    rng = np.random.default_rng(sum(shape) + 7 * array[0] + array[1])
    m, k, n = shape
    a = rng.integers(-128, 128, size=(m, k), dtype=np.int8)
    b = rng.integers(-128, 128, size=(k, n), dtype=np.int8)
    out, folds = simulate(a, b, array=array, dataflow=df, accumulate=np.int64)
    cost = gemm_cost(m, k, n, array=array, dataflow=df)
    np.testing.assert_array_equal(out, a.astype(np.int64) @ b.astype(np.int64))
    assert folds == [cost.fold_cycles] * cost.folds
    assert sum(folds) == cost.array_cycles


def _fp32_bound(a, b):
    """Bound on |fp32 sum - exact sum| of K exact products: gamma_K * sum |a_i b_i|."""
    k = a.shape[1]
    u = 2.0**-24
    return k * u / (1 - k * u) * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))


@pytest.mark.parametrize("df", DATAFLOWS)
@pytest.mark.parametrize("shape", [(7, 19, 5), (4, 33, 9)], ids=str)
@pytest.mark.parametrize("array", [(2, 2), (4, 3)], ids=str)
def test_stepping_equals_closed_form_bf16(df, shape, array):
    """bf16 operands: stepping and the closed-form matmul agree within fp32 accumulation error."""
    rng = np.random.default_rng(3)
    m, k, n = shape
    a = round_bf16(rng.normal(size=(m, k)))
    b = round_bf16(rng.normal(size=(k, n)))
    out, folds = simulate(a, b, array=array, dataflow=df)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    closed = a @ b
    bound = _fp32_bound(a, b)
    assert out.dtype == np.float32
    assert np.all(np.abs(out - exact) <= bound)
    assert np.all(np.abs(out - closed) <= 2 * bound)
    assert sum(folds) == gemm_cost(m, k, n, array=array, dataflow=df).array_cycles


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(DATAFLOWS),
    st.integers(1, 9),
    st.integers(1, 9),
    st.integers(1, 9),
    st.integers(2, 5),
    st.integers(2, 5),
    st.integers(0, 2**32 - 1),
)
def test_stepping_equals_closed_form_property(df, m, k, n, rows, cols, seed):
    """For any small GEMM and array, stepping gives the exact integer product and the closed form's cycles."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, size=(m, k))
    b = rng.integers(-128, 128, size=(k, n))
    out, folds = simulate(a, b, array=(rows, cols), dataflow=df, accumulate=np.int64)
    np.testing.assert_array_equal(out, a @ b)
    assert sum(folds) == gemm_cost(m, k, n, array=(rows, cols), dataflow=df).array_cycles


def test_stepping_refuses_big_runs_before_working():
    """A GEMM too big to step raises at once, pointing to the closed form."""
    a = np.zeros((4096, 4096), dtype=np.float32)
    with pytest.raises(xai.ValidationError, match="mode='closed'"):
        simulate(a, a, array=(128, 128))


# -- options and validation --------------------------------------------------------------


@pytest.mark.parametrize("df", DATAFLOWS)
def test_double_buffering_hides_each_later_weight_load(df):
    """Double buffering saves `rows` cycles per fold after the first (ws, is); os is unchanged."""
    plain = gemm_cost(40, 50, 60, array=(8, 8), dataflow=df)
    overlapped = gemm_cost(40, 50, 60, array=(8, 8), dataflow=df, double_buffered=True)
    saved = 0 if df == "os" else 8 * (plain.folds - 1)
    assert plain.cycles - overlapped.cycles == saved
    assert overlapped.scalesim_total_cycles == plain.scalesim_total_cycles


def test_folds_are_shared_round_robin_by_several_arrays():
    """With A arrays the chip takes ceil(folds / A) folds' time; one array's count is unchanged."""
    one = gemm_cost(128, 784, 256, array=(128, 128))
    four = gemm_cost(128, 784, 256, array=(128, 128), arrays=4)
    assert one.folds == 14
    assert four.cycles == math.ceil(14 / 4) * one.fold_cycles
    assert four.array_cycles == one.cycles == 14 * one.fold_cycles


@pytest.mark.parametrize("array", [(1, 4), (4,), (2.5, 4), "big", (True, 4)], ids=str)
def test_bad_array_shapes_are_rejected(array):
    """An array must be two integers >= 2; the message names the argument."""
    with pytest.raises(xai.ValidationError, match="array must be"):
        gemm_cost(2, 2, 2, array=array)


def test_unknown_dataflow_lists_the_known_ones():
    """An unknown dataflow raises UnknownNameError listing is, os, ws."""
    with pytest.raises(xai.UnknownNameError, match="is, os, ws"):
        gemm_cost(2, 2, 2, dataflow="rs")


def test_empty_gemm_is_rejected():
    """Sizes must be positive."""
    with pytest.raises(xai.ValidationError, match="k must be a positive integer"):
        gemm_cost(2, 0, 2)
    with pytest.raises(xai.ShapeError, match=r"\(M, K\) and \(K, N\)"):
        simulate(np.zeros((2, 3)), np.zeros((2, 3)))
