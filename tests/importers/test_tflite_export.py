"""xai.quantize and to_tflite: the converter's scheme, LiteRT's integers, the project's own format."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import xai_core as xai
from xai_core import nn
from xai_core.testing import litert_reference_outputs

litert = pytest.importorskip(
    "ai_edge_litert.interpreter", reason="the tflite extra is not installed"
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tflite"


def separable(layout: str) -> nn.Graph:
    """Depthwise-separable residual blocks, batch norm, HardSwish, padding, mean and concatenation."""
    shape = (3, 12, 12) if layout == "NCHW" else (12, 12, 3)
    g = nn.Graph(input_shape=shape, input_name="image", layout=layout, seed=3)
    h = g.add(nn.Conv2D(8, 3, stride=2, padding="same", layout=layout), "image", name="stem")
    h = g.add(nn.BatchNormalization(axis=0 if layout == "NCHW" else -1), h, name="bn")
    h = g.add(nn.ReLU6(), h, name="stem_relu")
    for k in range(2):
        z = g.add(nn.DepthwiseConv2D(3, padding="same", layout=layout), h, name=f"dw{k}")
        z = g.add(nn.ReLU6(), z, name=f"dw{k}_relu")
        z = g.add(nn.Conv2D(8, 1, layout=layout), z, name=f"pw{k}")
        h = g.add(nn.Add(), [h, z], name=f"res{k}")
    a = g.add(nn.GlobalAveragePooling2D(layout=layout), g.add(nn.HardSwish(), h), name="gap_a")
    p = g.add(nn.ZeroPadding2D((1, 0, 0, 1), layout=layout), h, name="pad")
    p = g.add(nn.DepthwiseConv2D(2, stride=2, layout=layout), p, name="dw_s2")
    b = g.add(nn.GlobalAveragePooling2D(layout=layout), p, name="gap_b")
    g.add(nn.Concatenate(axis=0), [a, b], name="concat")
    g.add(nn.Dense(4), name="logits")
    g.add(nn.Softmax(), name="probs")
    rng = np.random.default_rng(0)
    g.set_params("bn", gamma=rng.uniform(0.5, 1.5, 8), beta=rng.normal(0, 0.1, 8))
    g.set_params("bn", mean=rng.normal(0, 0.1, 8), variance=rng.uniform(0.5, 1.5, 8))
    return g


def shuffle() -> nn.Graph:
    """ShuffleNet's channel shuffle: Reshape to (groups, c / groups, h, w), Transpose, Reshape."""
    g = nn.Graph(input_shape=(3, 8, 8), input_name="image", seed=4)
    g.add(nn.Conv2D(8, 3, padding=1), "image", name="c1")
    g.add(nn.ReLU(), name="r1")
    g.add(nn.Reshape((2, 4, 8, 8)), name="split")
    g.add(nn.Transpose((1, 0, 2, 3)), name="shuffle")
    g.add(nn.Reshape((8, 8, 8)), name="join")
    g.add(nn.Conv2D(4, 3, stride=2), name="c2")
    g.add(nn.GlobalAveragePooling2D(), name="gap")
    g.add(nn.Dense(3), name="logits")
    return g


NETWORKS = {
    "mlp": lambda: nn.mlp(20, (16, 12), 3),
    "cnn-gray": lambda: nn.cnn((1, 12, 12), 5, channels=(4, 6)),
    "cnn-rgb": lambda: nn.cnn((3, 12, 12), 5, channels=(4, 6)),
    "separable-nchw": lambda: separable("NCHW"),
    "separable-nhwc": lambda: separable("NHWC"),
    "channel-shuffle": shuffle,
    "leaky-relu": lambda: nn.Sequential(
        [
            nn.Reshape((1, 8, 8)),
            nn.Conv2D(4, 3, padding=1),
            nn.LeakyReLU(0.1),
            nn.MaxPool2D(2),
            nn.Flatten(),
            nn.Dense(6),
            nn.LeakyReLU(0.3),
            nn.Dense(3),
            nn.Softmax(),
        ],
        input_shape=(64,),
        seed=2,
    ),  # fmt: skip
}


@pytest.mark.parametrize("name", list(NETWORKS))
def test_written_int8_model_runs_in_litert_like_the_edge_tpu_backend(name, tmp_path):
    """A quantised network written by to_tflite gives LiteRT's integers on 1,000 inputs, equal to edgetpu's."""
    net = NETWORKS[name]()
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, (1000, *net.input_shape)).astype(np.float32)
    q = xai.quantize(net, X[:200])
    path = xai.to_tflite(q, tmp_path / f"{name}.tflite")
    Q = q.quantize_input(X)
    expected = litert_reference_outputs(path, Q)
    edgetpu = xai.ModelRunner(q, "edgetpu")
    ours = q.run(Q, edgetpu.backend)[q.graph.outputs[0]]
    np.testing.assert_array_equal(ours.reshape(expected.shape), expected)
    np.testing.assert_allclose(q.predict(X[:50]), net.predict(X[:50]), atol=0.05)


def _keras_cnn(cal) -> nn.Graph:
    """The fixture CNN rebuilt from the Keras weights the converter saw."""
    w = [cal[f"cnn/weight_{k}"] for k in range(6)]
    g = nn.Graph(input_shape=(12, 12, 1), input_name="image", layout="NHWC")
    g.add(nn.Conv2D(4, 3, padding="same", layout="NHWC"), "image", name="c1")
    g.add(nn.ReLU(), name="r1")
    g.add(nn.MaxPool2D(2, layout="NHWC"), name="p1")
    g.add(nn.Conv2D(6, 3, layout="NHWC"), name="c2")
    g.add(nn.ReLU(), name="r2")
    g.add(nn.AvgPool2D(2, layout="NHWC"), name="p2")
    g.add(nn.Flatten(), name="f")
    g.add(nn.Dense(5), name="d")
    g.add(nn.Softmax(), name="s")
    g.set_params("c1", weight=w[0].transpose(3, 2, 0, 1), bias=w[1])
    g.set_params("c2", weight=w[2].transpose(3, 2, 0, 1), bias=w[3])
    g.set_params("d", weight=w[4], bias=w[5])
    return g


def _keras_mlp(cal) -> nn.Sequential:
    """The fixture MLP rebuilt from the Keras weights the converter saw."""
    w = [cal[f"mlp/weight_{k}"] for k in range(8)]
    net = nn.Sequential(
        [
            nn.Dense(16),
            nn.ReLU(),
            nn.Dense(12),
            nn.Tanh(),
            nn.Dense(8),
            nn.Sigmoid(),
            nn.Dense(3),
            nn.Softmax(),
        ],
        input_shape=(20,),
    )
    for k, layer in enumerate(layer for layer in net.layers if isinstance(layer, nn.Dense)):
        layer.weight, layer.bias = w[2 * k], w[2 * k + 1]
    return net


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_quantize_agrees_with_tensorflows_converter(name):
    """Same network, same calibration rows: the converter's int8 weights, biases and zero points, scales within 1 ulp."""
    cal = np.load(FIXTURES / "calibration.npz")
    net = _keras_mlp(cal) if name == "mlp" else _keras_cnn(cal)
    rows = cal[f"{name}/calibration"]
    ours = xai.quantize(net, rows)
    theirs = xai.from_tflite(FIXTURES / f"{name}_int8.tflite")
    assert ours.operators == theirs.operators
    gemm = ("CONV_2D", "FULLY_CONNECTED")
    for a, b in zip(*([op for op in m.graph.operators if op.op in gemm] for m in (ours, theirs))):
        ta, tb = ours.graph.tensors, theirs.graph.tensors
        for k in (1, 2):  # weights, biases
            np.testing.assert_array_equal(ta[a.inputs[k]].data, tb[b.inputs[k]].data)
        out_a, out_b = ta[a.outputs[0]], tb[b.outputs[0]]
        assert out_a.zero_point[0] == out_b.zero_point[0]
        assert abs(int(out_a.scale.view(np.int32)[0]) - int(out_b.scale.view(np.int32)[0])) <= 1
    Q = theirs.quantize_input(rows)
    np.testing.assert_array_equal(
        ours.run(Q)[ours.graph.outputs[0]], theirs.run(Q)[theirs.graph.outputs[0]]
    )


def test_quantised_model_saves_and_loads_in_the_project_format(tmp_path):
    """A quantised graph network saved as npz + JSON loads back with the same integers and node names."""
    net = separable("NCHW")
    X = np.random.default_rng(2).uniform(0, 1, (40, *net.input_shape)).astype(np.float32)
    q = xai.quantize(net, X)
    q.save(tmp_path / "q.npz")
    back = xai.load_model(tmp_path / "q.npz")
    assert back.is_quantized and back.operators == q.operators
    np.testing.assert_array_equal(back.predict(X), q.predict(X))
    np.testing.assert_array_equal(back.activations(X, "res1"), q.activations(X, "res1"))
    assert q.activations(X, "res1").shape == (40, *net.shape_of("res1"))
    with pytest.raises(xai.UnknownNameError):
        back.activations(X, "nope")


def test_a_tampered_quantised_file_is_refused(tmp_path):
    """A saved int8 tensor whose shape differs from the declared one is a ModelFormatError."""
    import json

    q = xai.quantize(nn.mlp(6, (4,), 2), np.random.default_rng(0).uniform(size=(10, 6)))
    q.save(tmp_path / "q.npz")
    with np.load(tmp_path / "q.npz") as f:
        arrays = {k: f[k] for k in f.files}
    arch = json.loads(arrays["architecture"].tobytes())
    first = next(k for k in arrays if k.startswith("tensor_"))
    arrays[first] = np.zeros((99,), arrays[first].dtype)
    arrays["architecture"] = np.frombuffer(json.dumps(arch).encode(), np.uint8)
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(xai.ModelFormatError, match="declared"):
        xai.load_model(tmp_path / "bad.npz")


def test_non_finite_weights_are_refused_before_quantising():
    """A network with a NaN weight cannot be quantised."""
    net = nn.mlp(6, (4,), 2)
    net.layers[0].weight[0, 0] = np.nan
    with pytest.raises(xai.ValidationError, match="non-finite"):
        xai.quantize(net, np.zeros((4, 6)))


def test_to_tflite_quantises_a_float_network_with_calibration_rows(tmp_path):
    """to_tflite(net, calibration_X=...) quantises first and writes a file LiteRT loads."""
    net = nn.mlp(6, (4,), 2)
    X = np.random.default_rng(4).uniform(size=(30, 6)).astype(np.float32)
    path = xai.to_tflite(net, tmp_path / "m.tflite", calibration_X=X)
    q = xai.quantize(net, X)
    np.testing.assert_array_equal(
        litert_reference_outputs(path, q.quantize_input(X)),
        q.run(q.quantize_input(X))[q.graph.outputs[0]],
    )


def test_teachable_machine_round_trip(tmp_path):
    """Export in Teachable Machine's layout, load it back, and predict like the quantised network."""
    net = nn.cnn((1, 12, 12), 3, channels=(4, 4), output_names=["a", "b", "c"])
    X = np.random.default_rng(5).uniform(size=(20, 144)).astype(np.float32)  # cnn takes flat rows
    folder = xai.to_teachable_machine(net, tmp_path / "tm", ["a", "b", "c"], calibration_X=X)
    assert (folder / "labels.txt").read_text() == "0 a\n1 b\n2 c\n"
    back = xai.from_teachable_machine(folder)
    q = xai.quantize(net, X)
    assert back.output_names == ("a", "b", "c")
    np.testing.assert_array_equal(back.predict(X), q.predict(X))


@pytest.mark.parametrize("name", list(NETWORKS))
def test_float_network_written_as_float_tflite_predicts_alike_in_litert(name, tmp_path):
    """Without calibration rows to_tflite writes a float32 model; LiteRT and from_tflite match the network."""
    net = NETWORKS[name]()
    X = np.random.default_rng(6).uniform(0, 1, (30, *net.input_shape)).astype(np.float32)
    path = xai.to_tflite(net, tmp_path / f"{name}_float.tflite")
    model = xai.from_tflite(path)
    assert not model.is_quantized
    if name == "leaky-relu":  # TFLite's own operator, in float as in int8
        assert model.operators.count("LEAKY_RELU") == 2, model.operators
    np.testing.assert_allclose(
        litert_reference_outputs(path, X).reshape(30, -1), net.predict(X), atol=1e-6
    )
    np.testing.assert_allclose(model.predict(X), net.predict(X), atol=1e-6)


def test_compare_backends_explains_the_deployed_int8_file_on_the_edge_tpu(tmp_path):
    """quantized= makes edgetpu run the given int8 .tflite; the float .tflite runs on every backend."""
    net = nn.cnn((1, 12, 12), 5, channels=(4, 6))
    X = np.random.default_rng(7).uniform(0, 1, (20, 144)).astype(np.float32)
    f = xai.from_tflite(xai.to_tflite(net, tmp_path / "f.tflite"))
    q = xai.from_tflite(xai.to_tflite(net, tmp_path / "q.tflite", calibration_X=X))
    c = xai.compare_backends(
        f, X[:3], method="shap", backends=["cpu", "tpu", "edgetpu"], quantized=q,
        background=X[:5], max_evals=600, seed=0,
    )  # fmt: skip
    assert list(c.summary.index) == ["cpu", "tpu", "edgetpu"] and not c.skipped
    direct = xai.explain(q, X[:3], method="shap", backend="edgetpu", target=c.explanations["cpu"].target,
                         background=X[:5], max_evals=600, seed=0)  # fmt: skip
    np.testing.assert_array_equal(c.explanations["edgetpu"].values, direct.values)
    assert (
        c.summary.loc["cpu", "mean_cosine"] == 1.0 > c.summary.loc["edgetpu", "mean_cosine"] > 0.5
    )
    with pytest.raises(xai.ValidationError, match="int8"):
        xai.compare_backends(f, X[:3], method="shap", quantized=f, background=X[:5])
