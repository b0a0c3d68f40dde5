"""The systolic TPU backend: bf16 numerics, exact cycle counts, presets, stepping mode, gradients."""

import json

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import xai_core as xai
from xai_core.backends.cpu import CPUBackend
from xai_core.backends.systolic import gemm_cost, round_bf16
from xai_core.cli.main import main
from xai_core.testing import check_backend

U32 = 2.0**-24  # unit roundoff of fp32


def _fp32_bound(a, b):
    k = a.shape[1]
    return k * U32 / (1 - k * U32) * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))


@pytest.mark.parametrize(
    "settings_",
    [
        {},
        {"preset": "v1"},
        {"preset": "v2"},
        {"preset": "v3", "dataflow": "os"},
        {"preset": "v4", "dataflow": "is"},
        {"array": (7, 3), "double_buffered": True},
        {"array": (16, 16), "mode": "step"},
        {"array": (8, 32), "mode": "step", "dataflow": "os", "preset": "v1"},
    ],
    ids=["default", "v1", "v2", "v3-os", "v4-is", "7x3-db", "16x16-step", "v1-os-step"],
)
def test_tpu_keeps_backend_contract(settings_):
    """check_backend passes for presets, dataflows, odd arrays and the stepping mode."""
    check_backend(xai.get_backend("tpu", **settings_))


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 40),
    st.integers(1, 300),
    st.integers(1, 40),
    st.sampled_from(["ws", "os", "is"]),
    st.integers(0, 2**32 - 1),
)
def test_matmul_is_fp32_sum_of_bf16_products(m, k, n, dataflow, seed):
    """The product equals float64 matmul of the bf16-rounded operands within fp32 accumulation error."""
    rng = np.random.default_rng(seed)
    scale = np.exp(rng.uniform(-20, 20))
    a = (rng.normal(size=(m, k)) * scale).astype(np.float32)
    b = rng.standard_cauchy(size=(k, n)).astype(np.float32)
    out = xai.get_backend("tpu", dataflow=dataflow).matmul(a, b)
    a16, b16 = round_bf16(a), round_bf16(b)
    exact = a16.astype(np.float64) @ b16.astype(np.float64)
    assert out.dtype == np.float32
    assert np.all(np.abs(out - exact) <= _fp32_bound(a16, b16))


@settings(max_examples=30, deadline=None)
@given(hnp.arrays(np.uint32, st.integers(1, 200), elements=st.integers(0, 2**32 - 1)))
def test_bf16_rounding_is_ml_dtypes_round_to_nearest_even(bits):
    """Operand rounding is ml_dtypes' bfloat16, bit for bit (NaN-ness only for NaN)."""
    x = bits.view(np.float32)
    ours = round_bf16(x)
    ref = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    nan = np.isnan(ref)
    np.testing.assert_array_equal(np.isnan(ours), nan)
    np.testing.assert_array_equal(ours[~nan].view(np.uint32), ref[~nan].view(np.uint32))


def test_bf16_ties_round_to_even():
    """Halfway cases go to the even neighbour, not up and not by truncation."""
    ties = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 3 * 2**-8)], dtype=np.float32)
    np.testing.assert_array_equal(round_bf16(ties), [1.0, 1 + 2**-6, -(1 + 2**-6)])
    out = xai.get_backend("tpu").matmul(ties[:2, None], np.ones((1, 1), np.float32))
    np.testing.assert_array_equal(out[:, 0], [1.0, 1 + 2**-6])


def test_counters_follow_the_closed_form():
    """Cycles, folds, traffic, utilisation and time per GEMM are those of gemm_cost."""
    tpu = xai.get_backend("tpu", preset="v3", array=(128, 128), dataflow="ws")
    rng = np.random.default_rng(0)
    tpu.matmul(rng.normal(size=(128, 784)), rng.normal(size=(784, 256)))
    tpu.matmul(rng.normal(size=(30, 10)), rng.normal(size=(10, 300)))
    c1 = gemm_cost(128, 784, 256, array=(128, 128), arrays=4)
    c2 = gemm_cost(30, 10, 300, array=(128, 128), arrays=4)
    got = tpu.counters
    assert got["matmuls"] == 2 and got["macs"] == c1.macs + c2.macs
    assert got["cycles"] == c1.cycles + c2.cycles == 4 * 510 + 1 * 412
    assert got["array_cycles"] == c1.array_cycles + c2.array_cycles
    assert (
        got["scalesim_total_cycles"]
        == c1.folds * c1.fold_cycles - 1 + c2.folds * c2.fold_cycles - 1
    )
    assert got["folds"] == c1.folds + c2.folds == 17
    assert got["est_seconds"] == pytest.approx(got["cycles"] / 940e6)
    assert got["utilization"] == pytest.approx(
        (c1.macs + c2.macs) / (got["cycles"] * 128 * 128 * 4)
    )
    eff = (c1.mapping_efficiency * c1.folds + c2.mapping_efficiency * c2.folds) / 17
    assert got["mapping_efficiency"] == pytest.approx(eff)
    assert got["sram_reads_a"] == c1.sram_reads_a + c2.sram_reads_a
    assert got["offchip_bytes_read"] == 2 * (128 * 784 + 784 * 256 + 30 * 10 + 10 * 300)
    tpu.reset_counters()
    assert all(v == 0 for v in tpu.counters.values())


@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
def test_step_mode_equals_closed_mode(dataflow):
    """The stepping backend counts the same cycles and computes the same values as the closed form."""
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(9, 21)), rng.normal(size=(21, 6))
    closed = xai.get_backend("tpu", array=(4, 3), dataflow=dataflow, mxus=2)
    step = xai.get_backend("tpu", array=(4, 3), dataflow=dataflow, mxus=2, mode="step")
    c_out, s_out = closed.matmul(a, b), step.matmul(a, b)
    assert closed.counters == step.counters
    a16, b16 = round_bf16(a), round_bf16(b)
    assert np.all(np.abs(c_out - s_out) <= 2 * _fp32_bound(a16, b16))


def test_int8_preset_is_exact_and_refuses_floats():
    """v1 multiplies int8 exactly, is inference-only and sends float users to xai.quantize."""
    v1 = xai.get_backend("tpu", preset="v1")
    assert v1.requires_quantized and not v1.supports_gradients
    rng = np.random.default_rng(2)
    a = rng.integers(-128, 128, size=(50, 3000), dtype=np.int8)
    b = rng.integers(-128, 128, size=(3000, 20), dtype=np.int8)
    out = v1.matmul(a, b)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, a.astype(np.int64) @ b.astype(np.int64))
    with pytest.raises(xai.CapabilityError, match=r"xai\.quantize"):
        v1.matmul(a.astype(np.float32), b)
    assert v1.counters["cycles"] == gemm_cost(50, 3000, 20, array=(256, 256)).cycles


def test_elementwise_runs_on_the_vector_unit_in_fp32():
    """Elementwise work is fp32 and costs ceil(ops / lanes) vector cycles."""
    tpu = xai.get_backend("tpu", preset="v2")
    x = np.linspace(-1, 1, 5000)
    out = tpu.elementwise(np.tanh, x, ops=4)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, np.tanh(x), rtol=1e-6)
    assert tpu.counters["vector_cycles"] == tpu.counters["cycles"] == -(-20000 // 2048)


def test_double_buffering_is_closed_form_only():
    """double_buffered cuts cycles in closed mode and is refused in stepping mode."""
    a, b = np.ones((64, 300)), np.ones((300, 40))
    plain, db = (
        xai.get_backend("tpu", array=(16, 16)),
        xai.get_backend("tpu", array=(16, 16), double_buffered=True),
    )
    plain.matmul(a, b)
    db.matmul(a, b)
    folds = plain.counters["folds"]
    assert plain.counters["cycles"] - db.counters["cycles"] == 16 * (folds - 1)
    assert plain.counters["scalesim_total_cycles"] == db.counters["scalesim_total_cycles"]
    with pytest.raises(xai.ValidationError, match="closed form only"):
        xai.get_backend("tpu", mode="step", double_buffered=True)


@pytest.mark.parametrize(
    ("settings_", "error", "match"),
    [
        ({"preset": "v9"}, xai.UnknownNameError, "v1, v2, v3, v4"),
        ({"dataflow": "rs"}, xai.UnknownNameError, "is, os, ws"),
        ({"mode": "fast"}, xai.UnknownNameError, "closed, step"),
        ({"numerics": "fp8"}, xai.UnknownNameError, "bf16, int8"),
        ({"array": (1, 128)}, xai.ValidationError, "array must be"),
        ({"clock_mhz": -1}, xai.ValidationError, "clock_mhz"),
        ({"mxus": 0}, xai.ValidationError, "mxus"),
    ],
    ids=["preset", "dataflow", "mode", "numerics", "array", "clock", "mxus"],
)
def test_bad_settings_are_rejected(settings_, error, match):
    """Each bad setting raises a clear error naming it and, for names, the known choices."""
    with pytest.raises(error, match=match):
        xai.get_backend("tpu", **settings_)


def test_bad_operands_are_rejected():
    """Non-matching or empty operands raise ShapeError naming both shapes."""
    tpu = xai.get_backend("tpu")
    with pytest.raises(xai.ShapeError, match=r"\(3, 4\) and \(3, 4\)"):
        tpu.matmul(np.ones((3, 4)), np.ones((3, 4)))
    with pytest.raises(xai.ShapeError):
        tpu.matmul(np.ones((0, 4)), np.ones((4, 2)))


def test_describe_and_cli_list_presets_and_numerics(capsys):
    """describe() and `xai backends` show the TPU's presets and bf16 numerics."""
    info = xai.get_backend("tpu", preset="v4").describe()
    assert info["presets"] == ["v1", "v2", "v3", "v4"] and "bf16" in info["numerics"]
    assert info["peak_tops"] == pytest.approx(275, rel=0.01)
    assert xai.get_backend("tpu", preset="v3").peak_ops() / 1e12 == pytest.approx(123, rel=0.01)
    assert xai.get_backend("tpu", preset="v1").peak_ops() / 1e12 == pytest.approx(92, rel=0.01)
    assert main(["backends", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["tpu"]["presets"] == ["v1", "v2", "v3", "v4"]
    assert "fp32 accumulation" in rows["tpu"]["numerics"]


def _small_net():
    from xai_core import nn

    return nn.Sequential(
        [
            nn.Reshape((1, 6, 6)),
            nn.Conv2D(3, 3, padding=1),
            nn.ReLU(),
            nn.AvgPool2D(2),
            nn.Flatten(),
            nn.Dense(8),
            nn.Tanh(),
            nn.Dense(4),
            nn.Softmax(),
        ],
        input_shape=(36,),
        seed=3,
    )


class _Bf16CPU(CPUBackend):
    """A CPU that rounds matmul operands to bf16 and sums exactly: bf16 numerics, another path."""

    def matmul(self, a, b):
        super().matmul(a, b)  # count
        a16, b16 = round_bf16(a).astype(np.float64), round_bf16(b).astype(np.float64)
        return (a16 @ b16).astype(np.float32)


@pytest.mark.parametrize("name", ["tpu", "gpu"])
def test_gradients_run_on_the_backend(name):
    """runner.gradient runs the backward matmuls on the backend, close to the cpu's gradient."""
    net = _small_net()
    X = np.random.default_rng(0).normal(size=(16, 36)).astype(np.float32)
    ref = xai.ModelRunner(net, backend="cpu").gradient(X, 2)
    runner = xai.ModelRunner(net, backend=name)
    runner.predict(X)
    forward = runner.counters["matmuls"]
    runner.reset_counters()
    grad = runner.gradient(X, 2)
    assert runner.counters["matmuls"] > forward  # backward products ran here too
    if name == "tpu":  # the reference: the same network on a CPU that rounds operands to bf16
        ref = xai.ModelRunner(net, backend=_Bf16CPU()).gradient(X, 2)
        assert np.linalg.norm(grad - xai.ModelRunner(net).gradient(X, 2)) > 1e-4 * np.linalg.norm(
            ref
        )
    np.testing.assert_allclose(grad, ref, rtol=1e-4, atol=1e-5 * np.abs(ref).max())


@pytest.mark.parametrize(
    "settings, match",
    [
        ({"double_buffered": "false"}, "double_buffered"),
        ({"clock_mhz": float("inf")}, "finite"),
        ({"clock_mhz": float("nan")}, "finite"),
    ],
    ids=["string-bool", "inf-clock", "nan-clock"],
)
def test_settings_that_would_be_silently_wrong_are_refused(settings, match):
    """A string for a bool and a non-finite clock are errors, not True and zero time."""
    with pytest.raises(xai.ValidationError, match=match):
        xai.get_backend("tpu", **settings)


def test_an_int8_gemm_whose_sums_overflow_int32_is_refused():
    """A 2**20-long dot of -128s is 2**34: refused, not wrapped to 0."""
    from xai_core.backends.tpu import int8_gemm

    a = np.full((1, 2**20), -128, np.int8)
    with pytest.raises(xai.CapabilityError, match="int32"):
        int8_gemm(a, a.T.copy())
    assert int8_gemm(a[:, :1000], a[:, :1000].T.copy())[0, 0] == 1000 * 2**14


@pytest.mark.parametrize("groups", [1, 2])
def test_convolution_rounds_once_with_the_values_and_counts_of_the_column_matrix(
    groups, monkeypatch
):
    """The tpu's convolution rounds its input and weight to bf16 before im2col: the values
    equal the products of the bf16-rounded column matrix (ml_dtypes' rounding) summed in
    fp32, and every counter equals the base class's im2col convolution's, on an input that
    is a channels-last view (as a previous convolution returns it); a failure inside leaves
    the products rounding again."""
    from xai_core.backends import tpu as tpu_module
    from xai_core.backends.base import Backend
    from xai_core.kernels.conv_ops import ConvGeometry

    rng = np.random.default_rng(7)
    x = rng.normal(size=(2, 6, 7, 4)).astype(np.float32).transpose(0, 3, 1, 2)  # NCHW view
    w = rng.normal(size=(6, 4 // groups, 3, 3)).astype(np.float32)
    bias = rng.normal(size=6).astype(np.float32)
    geom = ConvGeometry((3, 3), (1, 2), (1, 1, 0, 1), (1, 1), groups)
    fast, base = xai.get_backend("tpu"), xai.get_backend("tpu")
    y = fast.conv2d(x, w, bias, geom)
    want = Backend.conv2d(base, x, w, bias, geom)  # rounds the column matrix in each product
    np.testing.assert_array_equal(y, want)
    assert fast.counters == base.counters
    x16 = x.astype(ml_dtypes.bfloat16).astype(np.float64)
    w16 = w.astype(ml_dtypes.bfloat16).astype(np.float64)
    t = torch_conv(x16, w16, bias, geom)
    np.testing.assert_allclose(y, t, rtol=1e-5, atol=1e-5)
    from xai_core.kernels import conv_ops

    def broken(*args, **kwargs):
        assert tpu_module._ROUNDED.on
        raise RuntimeError("inside the convolution")

    monkeypatch.setattr(conv_ops, "conv2d_im2col", broken)
    with pytest.raises(RuntimeError, match="inside"):
        fast.conv2d(x, w, bias, geom)
    assert not tpu_module._ROUNDED.on


def torch_conv(x, w, bias, geom):
    """The same convolution in float64 by torch, the oracle of the products' sums."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    top, bottom, left, right = geom.pads
    xt = F.pad(torch.tensor(x), (left, right, top, bottom))
    y = F.conv2d(xt, torch.tensor(w), torch.tensor(bias, dtype=torch.float64), geom.strides,
                 dilation=geom.dilation, groups=geom.groups)  # fmt: skip
    return y.numpy()
