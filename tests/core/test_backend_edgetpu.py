"""The Edge TPU backend: int8 only, exact int32 GEMMs, inference only, the 4 TOPS preset."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import xai_core as xai
from xai_core.backends.systolic import gemm_cost
from xai_core.cli.main import main
from xai_core.testing import LinearModel, check_backend


@pytest.mark.parametrize(
    "settings_",
    [
        {},
        {"dataflow": "os"},
        {"dataflow": "is", "array": (32, 8)},
        {"array": (16, 16), "mode": "step"},
    ],
    ids=["default", "os", "is-32x8", "step"],
)
def test_edgetpu_keeps_backend_contract(settings_):
    """check_backend passes (with int8 operands and exact results) in every dataflow and mode."""
    check_backend(xai.get_backend("edgetpu", **settings_))


int8_matrices = st.integers(1, 60).flatmap(
    lambda k: st.tuples(
        hnp.arrays(np.int8, st.tuples(st.integers(1, 30), st.just(k))),
        hnp.arrays(np.int8, st.tuples(st.just(k), st.integers(1, 30))),
    )
)


@settings(max_examples=80, deadline=None)
@given(int8_matrices)
def test_int8_gemm_is_exact(pair):
    """Any int8 GEMM equals int64 numpy exactly, as int32."""
    a, b = pair
    out = xai.get_backend("edgetpu").matmul(a, b)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, a.astype(np.int64) @ b.astype(np.int64))


def test_int8_gemm_is_exact_at_the_extremes():
    """-128 * -128 summed over a long K (the largest int8 products) stays exact."""
    k = 100_000
    a = np.full((2, k), -128, dtype=np.int8)
    b = np.full((k, 3), -128, dtype=np.int8)
    b[:, 1] = 127
    out = xai.get_backend("edgetpu").matmul(a, b)
    np.testing.assert_array_equal(out, [[k * 16384, -k * 16256, k * 16384]] * 2)


def test_floats_are_refused_with_a_pointer_to_quantize():
    """Float operands raise CapabilityError telling the user to call xai.quantize."""
    edge = xai.get_backend("edgetpu")
    with pytest.raises(xai.CapabilityError, match=r"int8 operands only.*xai\.quantize"):
        edge.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.int8))
    with pytest.raises(xai.UnknownNameError, match="Available: int8"):
        xai.get_backend("edgetpu", numerics="bf16")


def test_runner_refuses_an_unquantised_network():
    """A native float model on the Edge TPU is refused before any work, naming xai.quantize."""
    with pytest.raises(xai.CapabilityError, match=r"xai\.quantize"):
        xai.ModelRunner(LinearModel(np.ones((4, 2))), backend="edgetpu")


def test_counters_are_those_of_a_64x64_array_at_480_mhz():
    """Cycles follow the closed form on 64 x 64; bytes are int8 in, int32 out."""
    edge = xai.get_backend("edgetpu")
    a = np.ones((100, 200), np.int8)
    b = np.ones((200, 70), np.int8)
    edge.matmul(a, b)
    cost = gemm_cost(100, 200, 70, array=(64, 64))
    c = edge.counters
    assert c["cycles"] == cost.cycles and c["folds"] == cost.folds == 8
    assert c["est_seconds"] == pytest.approx(cost.cycles / 480e6)
    assert c["bytes_read"] == 100 * 200 + 200 * 70
    assert c["bytes_written"] == 4 * cost.offchip_writes_c


def test_describe_shows_the_preset_and_inference_only(capsys):
    """The coral preset peaks at about 4 TOPS (2 TOPS/W); `xai backends` says inference only."""
    edge = xai.get_backend("edgetpu")
    info = edge.describe()
    assert info["presets"] == ["coral"] and info["preset"] == "coral"
    assert info["peak_tops"] == pytest.approx(4.0, rel=0.02) and info["tops_per_watt"] == 2.0
    assert not info["gradients"] and "int8" in info["numerics"]
    with pytest.raises(xai.UnknownNameError, match="Available: coral"):
        xai.get_backend("edgetpu", preset="v3")
    assert main(["backends"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("edgetpu"))
    assert "inference only" in line and "presets: coral" in line


def test_only_straight_through_gradients_run_on_the_edge_tpu():
    """The backend has no gradients of its own: a float network's are refused, a quantised
    model's straight-through gradients (int8 forward, float backward on the host) are given."""
    from xai_core import nn

    net = nn.Sequential([nn.Dense(5), nn.ReLU(), nn.Dense(2)], input_shape=(4,), seed=0)
    X = np.random.default_rng(0).normal(size=(20, 4))
    assert not xai.get_backend("edgetpu").supports_gradients
    runner = xai.ModelRunner(xai.quantize(net, X, progress=False), backend="edgetpu")
    assert {"gradient", "straight_through"} <= runner.capabilities
    assert runner.gradient(X, 0).shape == X.shape
    assert runner.counters["host_macs"] > 0  # the backward's products, on the host
    with pytest.raises(xai.CapabilityError, match="int8-quantised"):  # the float net, on v1
        net.gradient(X, 0, backend=xai.get_backend("tpu", preset="v1"))
