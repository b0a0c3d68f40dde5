"""ONNX's 1-D Conv, MaxPool, AveragePool, GlobalAveragePool, LSTM and GRU against onnxruntime."""

import numpy as np
import pytest

import xai_core as xai

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tests.importers.conftest import ort_run  # noqa: E402


def model(nodes, inits, shape, opset=17) -> bytes:
    """A model of ``nodes`` reading ``x`` of per-sample ``shape`` (batch dynamic), output ``y``."""
    graph = helper.make_graph(
        nodes,
        "sequence",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", *shape])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.asarray(v, dtype=np.float32), k) for k, v in inits.items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def reference_run(data: bytes, X: np.ndarray) -> np.ndarray:
    """onnx's reference evaluator (onnxruntime runs no batch-first, layout=1, recurrence)."""
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(onnx.load_from_string(data)).run(None, {"x": X})[0]


def check(data: bytes, X: np.ndarray, atol=2e-5, oracle=ort_run) -> None:
    """The imported network's output (its samples' shape kept) equals the oracle's."""
    net = xai.from_onnx(data)
    want = oracle(data, X)
    got = net.forward(X, xai.get_backend("cpu"))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=atol)


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"pads": [1, 2], "strides": [2]},
        {"dilations": [2], "pads": [2, 1]},
        {"auto_pad": "SAME_UPPER", "kernel_shape": [3]},
        {"auto_pad": "SAME_LOWER", "strides": [3]},
        {"group": 2, "pads": [1, 1]},
        {"auto_pad": "VALID", "dilations": [3]},
    ],
    ids=[
        "plain",
        "pads-strides",
        "dilated",
        "same-upper",
        "same-lower-strided",
        "grouped",
        "valid",
    ],
)
def test_conv_1d_equals_onnxruntime(attrs):
    """A Conv with a 1-D kernel imports as Conv1D and equals onnxruntime."""
    rng = np.random.default_rng(0)
    c, group = 4, attrs.get("group", 1)
    w = rng.normal(size=(6, c // group, 3))
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)
    data = model([node], {"w": w, "b": rng.normal(size=6)}, (c, 11))
    check(data, rng.normal(size=(3, c, 11)).astype(np.float32))


@pytest.mark.parametrize(
    ("op", "attrs"),
    [
        ("MaxPool", {"kernel_shape": [2]}),
        ("MaxPool", {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
        ("MaxPool", {"kernel_shape": [3], "strides": [2], "ceil_mode": 1}),
        ("AveragePool", {"kernel_shape": [3], "strides": [2], "pads": [1, 0]}),
        ("AveragePool", {"kernel_shape": [3], "pads": [1, 1], "count_include_pad": 1}),
        ("AveragePool", {"kernel_shape": [4], "strides": [3], "ceil_mode": 1}),
        ("AveragePool", {"kernel_shape": [3], "auto_pad": "SAME_UPPER", "strides": [2]}),
    ],
    ids=["max", "max-padded", "max-ceil", "avg-padded", "avg-include-pad", "avg-ceil", "avg-same"],
)
def test_pool_1d_equals_onnxruntime(op, attrs):
    """MaxPool and AveragePool with 1-D kernels import as MaxPool1D / AvgPool1D."""
    rng = np.random.default_rng(1)
    data = model([helper.make_node(op, ["x"], ["y"], **attrs)], {}, (3, 12))
    check(data, rng.normal(size=(2, 3, 12)).astype(np.float32))


def test_global_average_pool_of_a_series_equals_onnxruntime():
    """GlobalAveragePool of (channels, steps) samples is GlobalAveragePooling1D (kept axis)."""
    rng = np.random.default_rng(2)
    data = model([helper.make_node("GlobalAveragePool", ["x"], ["y"])], {}, (3, 7))
    check(data, rng.normal(size=(2, 3, 7)).astype(np.float32))


def rnn_inits(op, d, h, features, rng):
    gates = 4 if op == "LSTM" else 3
    inits = {
        "W": rng.normal(size=(d, gates * h, features)) * 0.5,
        "R": rng.normal(size=(d, gates * h, h)) * 0.5,
        "B": rng.normal(size=(d, 2 * gates * h)) * 0.5,
    }
    return inits


OUTPUTS = {"Y": 0, "Y_h": 1, "Y_c": 2}


@pytest.mark.parametrize(
    ("op", "direction", "output", "extra"),
    [
        ("LSTM", "forward", "Y", {}),
        ("LSTM", "reverse", "Y_h", {}),
        ("LSTM", "bidirectional", "Y", {}),
        ("LSTM", "bidirectional", "Y_c", {}),
        ("GRU", "forward", "Y", {}),
        ("GRU", "bidirectional", "Y_h", {"linear_before_reset": 1}),
        ("GRU", "reverse", "Y", {"linear_before_reset": 1}),
    ],
    ids=lambda v: str(v) if not isinstance(v, dict) else ("lbr" if v else "-"),
)
def test_batch_first_recurrent_equals_the_onnx_reference(op, direction, output, extra):
    """layout=1 LSTM and GRU, each output, each direction, equal onnx's reference evaluator."""
    rng = np.random.default_rng(3)
    t, features, h = 5, 3, 4
    d = 2 if direction == "bidirectional" else 1
    inits = rnn_inits(op, d, h, features, rng)
    outs = ["", "", ""][: 3 if op == "LSTM" else 2]
    outs[OUTPUTS[output]] = "y"
    node = helper.make_node(
        op, ["x", "W", "R", "B"], outs, hidden_size=h, direction=direction, layout=1, **extra
    )
    data = model([node], inits, (t, features))
    check(data, rng.normal(size=(3, t, features)).astype(np.float32), oracle=reference_run)


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_time_major_recurrent_after_a_transpose_equals_onnxruntime(op):
    """layout=0 on a transposed batch-first input (PyTorch's export) reads and writes views."""
    rng = np.random.default_rng(4)
    t, features, h, d = 6, 3, 4, 2
    inits = rnn_inits(op, d, h, features, rng)
    h0 = rng.normal(size=(d, 1, h))
    inits["h0"] = h0
    ins = ["xt", "W", "R", "B", "", "h0"]
    nodes = [
        helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
        helper.make_node(op, ins, ["ys", "yh"], hidden_size=h, direction="bidirectional"),
        helper.make_node("Transpose", ["ys"], ["yb"], perm=[2, 0, 1, 3]),  # (N, T, D, H)
        helper.make_node("Transpose", ["yh"], ["hb"], perm=[1, 0, 2]),  # (N, D, H)
        helper.make_node("Reshape", ["yb", "s1"], ["y1"]),
        helper.make_node("Reshape", ["hb", "s2"], ["y2"]),
        helper.make_node("Concat", ["y1", "y2"], ["y"], axis=1),
    ]
    inits["s1"] = np.array([0, t * d * h])
    inits["s2"] = np.array([0, d * h])
    graph_inits = {k: v for k, v in inits.items() if k not in ("s1", "s2")}
    data = model(nodes, graph_inits, (t, features))
    m = onnx.load_from_string(data)
    m.graph.initializer.extend(
        [numpy_helper.from_array(np.asarray(inits[k], dtype=np.int64), k) for k in ("s1", "s2")]
    )
    data = m.SerializeToString()
    X = rng.normal(size=(2, t, features)).astype(np.float32)
    # ONNX's h0 has a batch axis of 1 here; onnxruntime broadcasts nothing, so give it N
    m.graph.initializer[[i.name for i in m.graph.initializer].index("h0")].CopyFrom(
        numpy_helper.from_array(np.repeat(h0, 2, 1).astype(np.float32), "h0")
    )
    check(m.SerializeToString(), X)


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_lstm_peepholes_equal_onnxruntime(direction):
    """An LSTM with peepholes P (time major, after PyTorch's transpose) equals onnxruntime."""
    rng = np.random.default_rng(6)
    t, features, h = 5, 3, 4
    d = 2 if direction == "bidirectional" else 1
    inits = rnn_inits("LSTM", d, h, features, rng)
    inits["P"] = rng.normal(size=(d, 3 * h))
    nodes = [
        helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
        helper.make_node(
            "LSTM",
            ["xt", "W", "R", "B", "", "", "", "P"],
            ["ys"],
            hidden_size=h,
            direction=direction,
        ),
        helper.make_node("Transpose", ["ys"], ["y"], perm=[2, 0, 1, 3]),  # (N, T, D, H)
    ]
    data = model(nodes, inits, (t, features))
    assert [layer.peepholes for layer in xai.from_onnx(data) if layer.kind == "lstm"] == [True]
    check(data, rng.normal(size=(3, t, features)).astype(np.float32))


@pytest.mark.parametrize(
    ("attrs", "words"),
    [
        ({"activations": ["Relu", "Tanh", "Tanh"]}, "activations"),
        ({"clip": 3.0}, "clip"),
        ({"input_forget": 1}, "input_forget"),
        ({"activation_alpha": [0.5]}, "activation_alpha"),
        ({"layout": 0}, "across samples"),
    ],
    ids=["activations", "clip", "input-forget", "alpha", "time-major-input"],
)
def test_unsupported_lstm_attributes_are_refused_naming_them(attrs, words):
    """Non-default activations, clip, input_forget and a time-major graph input are refused."""
    rng = np.random.default_rng(5)
    attrs = {"layout": 1, **attrs}
    node = helper.make_node("LSTM", ["x", "W", "R", "B"], ["y"], hidden_size=2, **attrs)
    data = model([node], rnn_inits("LSTM", 1, 2, 3, rng), (4, 3))
    with pytest.raises(xai.CapabilityError, match=words):
        xai.from_onnx(data)


def test_shorter_sequence_lens_are_refused():
    """sequence_lens shorter than the steps are refused, naming them."""
    rng = np.random.default_rng(6)
    inits = rnn_inits("GRU", 1, 2, 3, rng)
    node = helper.make_node("GRU", ["x", "W", "R", "B", "lens"], ["y"], hidden_size=2, layout=1)
    data = model([node], inits, (4, 3))
    m = onnx.load_from_string(data)
    m.graph.initializer.append(numpy_helper.from_array(np.array([4, 3], dtype=np.int32), "lens"))
    with pytest.raises(xai.CapabilityError, match="sequence_lens"):
        xai.from_onnx(m.SerializeToString())


def test_only_the_outputs_read_are_built():
    """An LSTM whose Y_h and Y_c nothing reads becomes one native LSTM node."""
    rng = np.random.default_rng(7)
    node = helper.make_node(
        "LSTM", ["x", "W", "R", "B"], ["y", "unread_h", "unread_c"], hidden_size=2, layout=1
    )
    net = xai.from_onnx(model([node], rnn_inits("LSTM", 1, 2, 3, rng), (4, 3)))
    assert [type(layer).__name__ for layer in net.layers].count("LSTM") == 1


def test_a_batch_sized_constant_read_by_another_operator_is_refused():
    """ConstantOfShape of (batch, ...) is only read as an LSTM's or GRU's initial state."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("ConstantOfShape", ["shape"], ["zeros"]),
        helper.make_node("Add", ["x", "zeros"], ["y"]),
    ]
    with pytest.raises(xai.CapabilityError, match="initial state"):
        xai.from_onnx(model(nodes, {}, (4, 3)))
