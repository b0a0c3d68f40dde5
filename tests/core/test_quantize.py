"""int8 post-training quantisation: TFLite's scheme, exact integer arithmetic, accuracy on MNIST."""

import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xai_core as xai
from xai_core import nn
from xai_core.int8.numerics import multiply_by_quantized_multiplier, quantize_multiplier

DATA = (Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "mnist-sample").resolve()


# -- fixed-point requantisation -----------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.floats(1e-9, 64.0))
def test_multiplier_is_a_31_bit_mantissa_and_a_shift(m):
    """quantize_multiplier writes m as q * 2**(shift - 31), q in [2**30, 2**31), to 2**-31."""
    q, shift = quantize_multiplier([m])
    q, shift = int(q[0]), int(shift[0])
    assert 2**30 <= q < 2**31
    assert abs(Fraction(q) * Fraction(2) ** (shift - 31) - Fraction(m)) <= Fraction(m) * 2**-31


def _tflite_reference(x: int, q: int, shift: int) -> int:
    """TFLite's MultiplyByQuantizedMultiplier in Python integers (unbounded, no numpy)."""
    x = max(min(x * 2 ** max(shift, 0), 2**31 - 1), -(2**31))
    right = max(-shift, 0)
    ab = x * q
    nudge = 2**30 if ab >= 0 else 1 - 2**30
    high = int(Fraction(ab + nudge, 2**31))  # int() truncates toward zero, as C++ division
    remainder = high & (2**right - 1)
    threshold = ((2**right - 1) >> 1) + (1 if high < 0 else 0)
    return (high >> right) + (1 if remainder > threshold else 0)


@settings(max_examples=300, deadline=None)
@given(st.integers(-(2**31), 2**31 - 1), st.floats(1e-7, 8.0))
def test_fixed_point_requantisation(x, m):
    """The vectorised int64 version equals TFLite's integer formula and is within 1 of exact rounding."""
    q, shift = quantize_multiplier([m])
    got = int(multiply_by_quantized_multiplier(np.array([x]), q, shift)[0])
    assert got == _tflite_reference(x, int(q[0]), int(shift[0]))
    exact = Fraction(x) * int(q[0]) * Fraction(2) ** (int(shift[0]) - 31)
    if abs(x) * 2 ** max(int(shift[0]), 0) < 2**31:  # TFLite saturates a left shift past int32
        assert abs(got - exact) <= 1


def test_requantisation_broadcasts_per_channel():
    """One multiplier per output channel applies along the last axis."""
    q, shift = quantize_multiplier([0.5, 0.25, 3.0])
    acc = np.array([[1000, 1000, 1000], [-3, -3, -3]])
    out = multiply_by_quantized_multiplier(acc, q, shift)
    np.testing.assert_array_equal(out, [[500, 250, 3000], [-1, -1, -9]])


# -- the quantised layers -----------------------------------------------------------------


def _conv_net(seed=0):
    return nn.Sequential(
        [
            nn.Reshape((2, 7, 7)),
            nn.Conv2D(4, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.MaxPool2D(2, padding=1),
            nn.Conv2D(3, 2, padding=1),
            nn.AvgPool2D(2),
            nn.Flatten(),
            nn.Dense(6),
            nn.Tanh(),
            nn.Dense(5),
            nn.Sigmoid(),
            nn.Dense(3),
            nn.Softmax(),
        ],
        input_shape=(98,),
        seed=seed,
    )


def _data(n=64, seed=1):
    return np.random.default_rng(seed).normal(size=(n, 98)).astype(np.float32)


def _gemm_ops(qnet):
    return [op for op in qnet.graph.operators if op.op in ("CONV_2D", "FULLY_CONNECTED")]


def test_weights_are_per_channel_symmetric():
    """Each output channel uses the full [-127, 127] range and dequantises within half a step."""
    net = _conv_net()
    qnet = xai.quantize(net, _data(), progress=False)
    sources = [layer for layer in net.layers if isinstance(layer, (nn.Conv2D, nn.Dense))]
    ops = _gemm_ops(qnet)
    assert len(ops) == len(sources) == 5
    for op, layer in zip(ops, sources):
        t = qnet.graph.tensors[op.inputs[1]]
        q, scale = t.data.reshape(len(t.data), -1), t.scale.astype(np.float64)[:, None]
        w = layer.weight.transpose(0, 2, 3, 1) if isinstance(layer, nn.Conv2D) else layer.weight.T
        assert q.dtype == np.int8 and t.quantized_dimension == 0
        np.testing.assert_array_equal(np.abs(q).max(axis=1), 127)
        err = np.abs(q * scale - w.reshape(len(q), -1))
        assert np.all(err <= scale / 2 + 1e-6 * scale)


def test_activation_parameters_cover_the_calibration_range():
    """Input and every tensor are asymmetric int8 whose range holds the calibration range and 0."""
    X = _data()
    qnet = xai.quantize(_conv_net(), X, progress=False)
    t = qnet.input_tensor
    scale, zp = float(t.scale[0]), int(t.zero_point[0])
    lo, hi = min(X.min(), 0), max(X.max(), 0)
    assert scale == pytest.approx((hi - lo) / 255, rel=1e-6)
    assert scale * (-128 - zp) == pytest.approx(lo, abs=scale / 2)
    for info in qnet.layers:
        assert -128 <= info["output_zero_point"] <= 127 and info["output_scale"] > 0
    kinds = [info["kind"] for info in qnet.layers]
    # the max pool pads a ReLU's output, whose zero point is -128 already: PAD, not PADV2
    assert kinds == ["reshape", "transpose", "conv_2d", "pad", "max_pool_2d", "pad", "conv_2d",
                     "average_pool_2d", "transpose", "reshape", "fully_connected", "tanh",
                     "fully_connected", "logistic", "fully_connected", "softmax"]  # fmt: skip
    assert qnet.layers[2]["fused_activation"] == 1 and qnet.layers[6]["fused_activation"] == 0
    assert (qnet.layers[11]["output_scale"], qnet.layers[11]["output_zero_point"]) == (1 / 128, 0)
    assert (qnet.layers[13]["output_scale"], qnet.layers[13]["output_zero_point"]) == (
        1 / 256,
        -128,
    )


def test_quantised_outputs_track_the_float_network():
    """Dequantised activations stay within a few quantisation steps of the float network's."""
    net = _conv_net()
    X = _data(200)
    qnet = xai.quantize(net, X, progress=False)
    scales = {info["name"]: info["output_scale"] for info in qnet.layers}
    for layer, steps in [("relu_1", 4), ("conv2d_2", 6), ("tanh_1", 8)]:
        ref = net.activations(X, layer)
        got = qnet.activations(X, layer)
        scale = scales[layer]
        assert got.shape == ref.shape
        assert np.median(np.abs(got - ref)) <= scale
        assert np.max(np.abs(got - ref)) <= steps * scale
    probs = qnet.predict(X)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=3 / 256)
    assert np.mean(probs.argmax(1) == net.predict(X).argmax(1)) >= 0.9


@pytest.mark.parametrize(
    "backend",
    [
        "edgetpu",
        {"name": "edgetpu", "array": (5, 3), "mode": "step", "dataflow": "os"},
        {"name": "tpu", "preset": "v1"},
        "tpu",
        {"name": "tpu", "array": (4, 4), "mode": "step", "dataflow": "is"},
        "gpu",
        {"name": "gpu", "precision": "fp16"},
    ],
    ids=["edgetpu", "edgetpu-step", "tpu-v1", "tpu-bf16", "tpu-bf16-step", "gpu", "gpu-fp16"],
)
def test_integer_results_are_identical_on_every_backend(backend):
    """Every backend, int8 or float, closed or stepping, gives the cpu reference's outputs bit for bit."""
    net = _conv_net()
    X = _data(24)
    qnet = xai.quantize(net, X, progress=False)
    ref = xai.ModelRunner(qnet, backend="cpu").predict(X)
    if isinstance(backend, dict):
        settings_ = dict(backend)
        backend = xai.get_backend(settings_.pop("name"), **settings_)
    runner = xai.ModelRunner(qnet, backend=backend)
    np.testing.assert_array_equal(runner.predict(X), ref)
    assert runner.counters["macs"] > 0


def test_edgetpu_counts_each_integer_gemm_on_its_array():
    """On the Edge TPU the GEMMs of a quantised MLP cost their closed-form cycles on a 64x64 array."""
    from xai_core.backends.systolic import gemm_cost

    net = nn.Sequential([nn.Dense(40), nn.ReLU(), nn.Dense(7)], input_shape=(300,), seed=2)
    X = np.random.default_rng(0).normal(size=(50, 300))
    runner = xai.ModelRunner(xai.quantize(net, X, progress=False), backend="edgetpu")
    runner.predict(X)
    costs = [gemm_cost(50, 300, 40, array=(64, 64)), gemm_cost(50, 40, 7, array=(64, 64))]
    c = runner.counters
    assert c["matmuls"] == 2 and c["macs"] == 50 * 300 * 40 + 50 * 40 * 7
    assert c["matmul_cycles"] == sum(cost.cycles for cost in costs)
    assert c["elementwise_ops"] > 0  # requantisation ran on the vector unit


def test_float_backends_multiply_integers_in_exact_slices():
    """A K above 1024 is split so fp32 partial sums stay exact; the result is still exact."""
    net = nn.Sequential([nn.Dense(3)], input_shape=(2500,), seed=0)
    X = np.random.default_rng(3).normal(size=(5, 2500))
    qnet = xai.quantize(net, X, progress=False)
    cpu = xai.ModelRunner(qnet, backend="cpu")
    np.testing.assert_array_equal(cpu.predict(X), xai.ModelRunner(qnet, "edgetpu").predict(X))
    assert cpu.counters["matmuls"] == 3  # 1024 + 1024 + 452


# -- the runner and bad input --------------------------------------------------------------


def test_edgetpu_refuses_float_networks_and_has_straight_through_gradients():
    """An unquantised network on edgetpu points to xai.quantize; a quantised one has straight-through gradients."""
    net = _conv_net()
    with pytest.raises(xai.CapabilityError, match=r"xai\.quantize"):
        xai.ModelRunner(net, backend="edgetpu")
    runner = xai.ModelRunner(xai.quantize(net, _data(), progress=False), backend="edgetpu")
    assert runner.capabilities == frozenset(
        {"predict", "activations", "gradient", "straight_through"}
    )
    assert runner.gradient(_data(2), 0).shape == (2, 98)


def test_quantize_rejects_what_it_cannot_quantise():
    """Black boxes, unbuilt networks, unknown layers and bad calibration data raise clear errors."""
    with pytest.raises(xai.CapabilityError, match="native network"):
        xai.quantize(xai.as_model(lambda X: X), _data())
    with pytest.raises(xai.ValidationError, match="no weights"):
        xai.quantize(nn.Sequential([nn.Dense(2)]), _data())

    class Odd(nn.Layer):
        kind = "odd"

        def forward(self, x, backend, *, cache=True):
            return x

    with pytest.raises(xai.CapabilityError, match=r"cannot be quantised: 'odd_1' \(Odd: no int8"):
        xai.quantize(nn.Sequential([Odd(), nn.Dense(2)], input_shape=(98,)), _data())
    with pytest.raises(xai.ShapeError, match=r"calibration_X must have shape \(n_samples, 98\)"):
        xai.quantize(_conv_net(), np.zeros((4, 97)))
    bad = _data()
    bad[3, 5] = np.nan
    with pytest.raises(xai.ValidationError, match="NaN"):
        xai.quantize(_conv_net(), bad)


class _MyDense(nn.Dense):
    """A user's dense layer: the base class's arithmetic, its own class."""


class _MyConv(nn.Conv2D):
    """A user's convolution."""


class _MyDepthwise(nn.DepthwiseConv2D):
    """A user's depthwise convolution."""


def _subclassed_net(dense, conv, depthwise, seed=0):
    return nn.Sequential(
        [
            nn.Reshape((2, 7, 7)),
            conv(4, 3, stride=2, padding=1),
            nn.ReLU(),
            depthwise(3, padding=1),
            nn.ReLU6(),
            nn.Flatten(),
            dense(6),
            nn.ReLU(),
            dense(3),
            nn.Softmax(),
        ],
        input_shape=(98,),
        seed=seed,
    )


def test_subclasses_of_dense_and_conv_layers_quantise_as_their_base_classes():
    """A user's subclasses of Dense, Conv2D and DepthwiseConv2D give the base network's int8 graph and outputs."""
    X = _data()
    base = _subclassed_net(nn.Dense, nn.Conv2D, nn.DepthwiseConv2D)
    mine = _subclassed_net(_MyDense, _MyConv, _MyDepthwise)
    mine.set_weights(base.get_weights())
    q_base = xai.quantize(base, X, progress=False)
    q_mine = xai.quantize(mine, X, progress=False)
    assert q_mine.layers == q_base.layers
    gemms = ("conv_2d", "depthwise_conv_2d", "fully_connected")
    fused = [(i["kind"], i["fused_activation"]) for i in q_mine.layers if i["kind"] in gemms]
    assert fused == [  # the ReLU and ReLU6 fused into the subclasses' operators too
        ("conv_2d", 1),
        ("depthwise_conv_2d", 3),
        ("fully_connected", 1),
        ("fully_connected", 0),
    ]
    for a, b in zip(q_mine.graph.tensors, q_base.graph.tensors):
        assert a.name == b.name and a.shape == b.shape and a.dtype == b.dtype
        if a.data is not None:
            np.testing.assert_array_equal(a.data, b.data)
    for backend in ("cpu", "edgetpu"):
        got = xai.ModelRunner(q_mine, backend=backend).predict(X)
        np.testing.assert_array_equal(got, xai.ModelRunner(q_base, backend=backend).predict(X))


def test_a_registered_converter_quantises_a_new_layer_kind(monkeypatch):
    """add_converter registers a user's layer class; its subclasses find the converter too."""
    from xai_core.int8 import convert

    class Twice(nn.Layer):
        kind = "twice"

        def forward(self, x, backend, *, cache=True):
            return x

    class Thrice(Twice):
        kind = "thrice"

    monkeypatch.setattr(convert, "CONVERTERS", dict(convert.CONVERTERS))
    convert.add_converter(Twice, passes_through=True)(lambda b, c: c.x)
    net = nn.Sequential([Thrice(), nn.Dense(2)], input_shape=(98,), seed=0)
    qnet = xai.quantize(net, _data(), progress=False)
    assert [info["kind"] for info in qnet.layers] == ["fully_connected"]
    assert convert.converter_for(Thrice()) is convert.CONVERTERS[Twice]


# -- MNIST -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_quantised_mnist_mlp_keeps_its_accuracy(record_property):
    """An fp32 MLP trained on the MNIST sample keeps its test accuracy within 1 point on the Edge TPU."""
    if not DATA.is_dir():
        pytest.skip(f"the MNIST sample is not at {DATA}")
    from sklearn.neural_network import MLPClassifier

    from xai_datasets import load_mnist

    train, test = load_mnist("train", path=DATA), load_mnist("test", path=DATA)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # not converged after 12 epochs; accurate enough
        clf = MLPClassifier(hidden_layer_sizes=(64,), max_iter=12, random_state=0)
        clf.fit(train.X, train.y)
    net = xai.from_sklearn(clf)
    qnet = xai.quantize(net, train.X[:1000], progress=False)

    def accuracy(model, backend):
        return float(np.mean(xai.ModelRunner(model, backend).predict(test.X).argmax(1) == test.y))

    fp32, int8, bf16 = accuracy(net, "cpu"), accuracy(qnet, "edgetpu"), accuracy(net, "tpu")
    for key, value in (("fp32", fp32), ("int8_edgetpu", int8), ("bf16_tpu", bf16)):
        record_property(f"accuracy_{key}", value)
    print(
        f"MNIST sample test accuracy: fp32 {fp32:.4f}, edgetpu int8 {int8:.4f}, tpu bf16 {bf16:.4f}"
    )
    assert fp32 > 0.88
    assert abs(int8 - fp32) <= 0.01
    assert abs(bf16 - fp32) <= 0.01
