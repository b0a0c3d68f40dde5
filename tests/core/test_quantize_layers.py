"""xai.quantize of the layers beyond convolutions: each as the TFLite operator the converter emits, or refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import xai_core as xai
from xai_core import nn
from xai_core.testing import litert_reference_outputs

litert = pytest.importorskip(
    "ai_edge_litert.interpreter", reason="the tflite extra is not installed"
)

#: Largest |int8 - float| of the layer's own output over that output's range, on the
#: calibration rows (measured: 0.4% to 1.0%, about one int8 step of the convolution before
#: the layer; a wrong layout, axis or table gives errors of the order of the range itself).
TOLERANCE = 0.03


def _after_conv(layer, head: bool = True) -> nn.Graph:
    """An NCHW convolution, then the layer (node ``x``), then a dense head."""
    g = nn.Graph(input_shape=(4, 6, 6), input_name="image", seed=0)
    g.add(nn.Conv2D(6, 3, padding="same"), "image", name="c")
    g.add(layer, name="x")
    if isinstance(layer, nn.PRelu):  # slopes that differ per channel, as trained ones do
        slope = np.random.default_rng(1).uniform(0.05, 0.5, layer.slope_shape)
        g.set_params("x", slope=slope.astype(np.float32))
    if head:
        g.add(nn.Flatten(), name="f")
        g.add(nn.Dense(3), name="d")
    return g


# layer, the operators it becomes, whether the Edge TPU runs them
CASES = {
    "leaky-relu": (lambda: nn.LeakyReLU(0.1), ["LEAKY_RELU"], False),
    "prelu-per-channel": (lambda: nn.PRelu((6, 1, 1)), ["PRELU"], True),
    "prelu-one-slope": (lambda: nn.PRelu(()), ["PRELU"], True),
    "gelu": (lambda: nn.Gelu(), ["GELU"], False),
    "gelu-tanh": (lambda: nn.Gelu("tanh"), ["GELU"], False),
    "hard-sigmoid": (lambda: nn.HardSigmoid(1 / 6, 0.5), ["MUL", "ADD"], True),
    "hard-swish": (lambda: nn.HardSwish(), ["HARD_SWISH"], False),
    "softmax-of-width": (lambda: nn.Softmax(), ["TRANSPOSE", "SOFTMAX", "TRANSPOSE"], False),
    "max-of-channels": (lambda: nn.Reduce("max", (0,), keepdims=True), ["REDUCE_MAX"], True),
    "min-of-pixels": (lambda: nn.Reduce("min", (1, 2), keepdims=False), ["REDUCE_MIN"], True),
    "mean-of-channels": (lambda: nn.Reduce("mean", (0,), keepdims=False), ["MEAN"], False),
    "mean-of-rows": (
        lambda: nn.Reduce("mean", (1,), keepdims=False),
        ["TRANSPOSE", "MEAN"],
        True,
    ),
    "mean-of-pixels": (lambda: nn.Reduce("mean", (1, 2), keepdims=True), ["MEAN"], True),
    "slice-of-channels": (lambda: nn.Slice(0, 1, 5, 2), ["STRIDED_SLICE"], False),  # stride 2: host
    "slice-of-columns": (lambda: nn.Slice(2, -4, 6), ["STRIDED_SLICE"], True),
    "transpose": (
        lambda: nn.Transpose((0, 2, 1)),
        ["TRANSPOSE", "TRANSPOSE", "TRANSPOSE"],
        True,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_layer_quantises_to_the_converters_operator_bit_identical_with_litert(name, tmp_path):
    """The layer's TFLite operators; LiteRT's integers on 200 inputs, and the file's read back; near float; Edge TPU placement."""
    make, ops, on_edgetpu = CASES[name]
    g = _after_conv(make())
    X = np.random.default_rng(0).uniform(-1, 1, (200, *g.input_shape)).astype(np.float32)
    q = xai.quantize(g, X, progress=False)
    conv = q.operators.index("CONV_2D")
    assert q.operators[conv + 1 : conv + 1 + len(ops)] == ops

    path = xai.to_tflite(q, tmp_path / f"{name}.tflite")
    Q = q.quantize_input(X)
    ours = q.run(Q)[q.graph.outputs[0]]
    np.testing.assert_array_equal(ours.reshape(-1), litert_reference_outputs(path, Q).reshape(-1))
    back = xai.from_tflite(path)  # the file read back runs the same integers
    np.testing.assert_array_equal(back.run(Q)[back.graph.outputs[0]], ours)

    expected = g.activations(X, "x")
    error = np.abs(q.activations(X, "x") - expected).max() / np.ptp(expected)
    assert error < TOLERANCE, f"{name}: {error:.1%} of the output's range"

    placement = q.placement()
    mapped = [p.device == "edgetpu" for p in placement[conv + 1 : conv + 1 + len(ops)]]
    assert all(mapped) == on_edgetpu  # not mapped: one of its operators stays on the host
    runner = xai.ModelRunner(q, backend="edgetpu")
    np.testing.assert_array_equal(runner.predict(X[:10]), q.predict(X[:10]))
    assert runner.counters["host_operators"] == sum(p.device == "host" for p in placement)


def test_hard_sigmoid_output_is_exactly_zero_to_one():
    """HardSigmoid's ADD writes [0, 1] at scale 1/255: its saturation is the clip, 0 and 1 exact."""
    g = _after_conv(nn.HardSigmoid(1.0, 0.5), head=False)
    X = np.random.default_rng(1).uniform(-3, 3, (100, *g.input_shape)).astype(np.float32)
    q = xai.quantize(g, X, progress=False)
    y = q.activations(X, "x")
    assert y.min() == 0.0 and y.max() == 1.0
    # against the float function of the int8 convolution's output: MUL's and ADD's rounding
    c = q.activations(X, "c").astype(np.float64)
    np.testing.assert_allclose(y, np.clip(c + 0.5, 0, 1), atol=3 / 255)


def test_every_layer_that_cannot_be_quantised_is_named_at_once():
    """One refusal lists each unquantisable layer with its reason, before calibration runs."""
    g = nn.Graph(input_shape=(8,), input_name="x", seed=0)
    g.add(nn.Dense(8), "x", name="d1")
    g.add(nn.Softplus(), name="ln")
    g.add(nn.Sqrt(), name="root")
    g.add(nn.Clip(-1.0, 2.0), name="clip")
    g.add(nn.Reduce("l2", (0,)), name="norm")
    with pytest.raises(xai.CapabilityError) as info:
        xai.quantize(g, np.ones((4, 8), np.float32))
    message = str(info.value)
    assert message.startswith("4 layers cannot be quantised")
    for part in (
        "'ln' (Softplus: no int8 conversion)",
        "'root' (Sqrt: no int8 conversion)",
        "'clip' (Clip: Clip(-1.0, 2.0); only Clip(0, 6), ReLU6, quantises)",
        "'norm' (Reduce: a 'l2' reduction; max, min and mean quantise)",
    ):
        assert part in message
    assert "Quantisable layers:" in message and "BatchNormalization" in message


def _mixed() -> nn.Graph:
    g = nn.Graph(input_shape=(4, 6, 6), input_name="image", seed=0)
    g.add(nn.Conv2D(6, 3, padding="same"), "image", name="c")
    g.add(nn.HardSigmoid(1 / 6, 0.5), name="hs")
    g.add(nn.Slice(0, 0, 4), name="s")
    g.add(nn.Gelu(), name="ge")
    g.add(nn.Reduce("max", (1,), keepdims=False), name="m")
    g.add(nn.Flatten(), name="f")
    g.add(nn.PRelu(), name="p")
    g.add(nn.Dense(3), name="d")
    return g


def test_float_networks_with_the_new_layers_are_written_for_litert(tmp_path):
    """Unquantised, the same operators in float32 (HardSigmoid clipped by RELU_0_TO_1): LiteRT and xai agree."""
    g = _mixed()
    X = np.random.default_rng(5).uniform(-4, 4, (20, *g.input_shape)).astype(np.float32)
    path = xai.to_tflite(g, tmp_path / "float.tflite")
    back = xai.from_tflite(path)
    assert "RELU_0_TO_1" in back.operators and not back.is_quantized
    expected = g.predict(X)
    np.testing.assert_allclose(
        litert_reference_outputs(path, X).reshape(expected.shape), expected, atol=1e-5
    )
    np.testing.assert_allclose(back.predict(X), expected, atol=1e-5)


def test_quantised_new_operators_save_and_load_in_the_project_format(tmp_path):
    """HardSigmoid, STRIDED_SLICE, GELU, REDUCE_MAX and PRELU survive save and load with the same integers."""
    g = _mixed()
    X = np.random.default_rng(6).uniform(-4, 4, (40, *g.input_shape)).astype(np.float32)
    q = xai.quantize(g, X, progress=False)
    for op in ("MUL", "STRIDED_SLICE", "GELU", "REDUCE_MAX", "PRELU"):
        assert op in q.operators
    q.save(tmp_path / "q.npz")
    back = xai.load_model(tmp_path / "q.npz")
    assert back.operators == q.operators
    np.testing.assert_array_equal(back.predict(X), q.predict(X))
