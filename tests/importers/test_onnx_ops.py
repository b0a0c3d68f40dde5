"""Each supported ONNX operator alone: the imported network's output equals onnxruntime's."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

import xai_core as xai

from .conftest import one_node_model, ort_run

RNG = np.random.default_rng(0)
IMAGE = (3, 7, 8)  # channels, height, width: odd and even sizes, not square


def w(*shape, scale=0.5):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def single(op, attrs=None, inits=None, shape=IMAGE, extra_inputs=(), inputs=None, nodes=()):
    """A model of one ``op`` node reading the input ``x`` (and ``inits``), opset 17; and its shape."""
    inputs = inputs or ["x", *(inits or {}), *extra_inputs]
    return one_node_model(op, attrs, inits, shape, inputs, nodes), shape


def const_node(name, value):
    return helper.make_node(
        "Constant", [], [name], value=numpy_helper.from_array(np.asarray(value))
    )


CASES = {
    "Gemm": single(
        "Gemm", {"transB": 1, "alpha": 0.5, "beta": 2.0}, {"B": w(5, 6), "C": w(5)}, shape=(6,)
    ),
    "Gemm_noT": single("Gemm", {}, {"B": w(6, 5), "C": w(1, 5)}, shape=(6,)),
    "MatMul": single("MatMul", {}, {"B": w(6, 4)}, shape=(6,)),
    "Conv": single("Conv", {"pads": [1, 1, 1, 1]}, {"W": w(4, 3, 3, 3), "B": w(4)}),
    "Conv_strided_asym": single(
        "Conv", {"strides": [2, 2], "pads": [0, 1, 2, 0]}, {"W": w(4, 3, 3, 2)}
    ),
    "Conv_dilated": single(
        "Conv", {"dilations": [2, 2], "pads": [2, 2, 2, 2]}, {"W": w(2, 3, 3, 3)}
    ),
    "Conv_same_upper": single(
        "Conv", {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, {"W": w(4, 3, 3, 3)}
    ),
    "Conv_groups": single(
        "Conv", {"group": 3, "pads": [1, 1, 1, 1]}, {"W": w(6, 1, 3, 3), "B": w(6)}
    ),
    "BatchNormalization": single(
        "BatchNormalization",
        {"epsilon": 1e-3},
        {"s": w(3) + 1, "b": w(3), "m": w(3), "v": np.abs(w(3)) + 0.5},
    ),
    "Relu": single("Relu"),
    "Clip_relu6": single("Clip", inits={"lo": np.float32(0), "hi": np.float32(6)}),
    "Clip": single("Clip", inits={"lo": np.float32(-0.3), "hi": np.float32(0.4)}),
    "LeakyRelu": single("LeakyRelu", {"alpha": 0.2}),
    "HardSwish": single("HardSwish"),
    "Sigmoid": single("Sigmoid"),
    "Tanh": single("Tanh"),
    "Softmax": single("Softmax", {"axis": -1}, shape=(9,)),
    "MaxPool": single("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "AveragePool": single(
        "AveragePool", {"kernel_shape": [2, 3], "strides": [2, 1], "pads": [0, 1, 1, 1]}
    ),
    "AveragePool_include_pad": single(
        "AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}
    ),
    "GlobalAveragePool": single("GlobalAveragePool"),
    "Add": single("Add", inputs=["x", "x"]),
    "Add_const": single("Add", inits={"c": w(3, 1, 1)}),
    "Mul_const": single("Mul", inits={"c": w(1, 3, 1, 8)}),
    "Sub_const_first": single("Sub", inputs=["c", "x"], inits={"c": w(8)}),
    "Div": single("Div", inits={"c": np.float32(2.5)}),
    "Concat": single("Concat", {"axis": 1}, inputs=["x", "x"]),
    "Flatten": single("Flatten", {"axis": 1}),
    "Reshape": single("Reshape", inits={"s": np.array([-1, 7, 24], np.int64)}),
    "Transpose": single("Transpose", {"perm": [0, 2, 3, 1]}),
    "Pad": single("Pad", inits={"p": np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)}),
    "Identity": single("Identity"),
    "Unsqueeze": single("Unsqueeze", inits={"a": np.array([1, -1], np.int64)}),
    "Squeeze": single("Squeeze", inits={"a": np.array([-2], np.int64)}, shape=(3, 1, 8)),
    "Squeeze_all_ones": single("Squeeze", shape=(1, 4, 1)),
    "Dropout": single("Dropout"),
    "Constant": single("Add", inputs=["x", "k"], nodes=[const_node("k", w(3, 7, 8))]),
    "Gather": single("Gather", {"axis": 2}, {"i": np.array([6, 0, -1], np.int64)}),
    "Unsqueeze_at_2": single("Unsqueeze", inits={"a": np.array([2], np.int64)}),
    "Squeeze_axis_1": single("Squeeze", inits={"a": np.array([1], np.int64)}, shape=(1, 5)),
    "Cast": single("Cast", {"to": 1}),
    "ConvTranspose": single(
        "ConvTranspose", {"strides": [2, 2], "pads": [1, 1, 1, 1]}, {"W": w(3, 2, 3, 3)}
    ),
}


@pytest.mark.parametrize("case", sorted(CASES), ids=sorted(CASES))
def test_operator_alone_matches_onnxruntime(case):
    """Outputs equal onnxruntime's to 1e-5 on random inputs, fp32 on cpu."""
    data, shape = CASES[case]
    X = RNG.standard_normal((6, *shape)).astype(np.float32)
    net = xai.from_onnx(data)
    want = ort_run(data, X).reshape(len(X), -1)
    got = net.predict(X)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def test_every_listed_operator_is_tested():
    """The operators this module's converters run and these cases cover the same operators.

    (Each converter module has its own file of cases, which checks its operators.)
    """
    from xai_core.importers.onnx_registry import operator_table

    tested = {c.split("_")[0] for c in CASES} | {"Constant"}
    run_ops = {
        row["op"]
        for row in operator_table()
        if row["module"] == "xai_core.importers.onnx_ops" and not row["kind"].startswith("folded")
    }
    assert run_ops and run_ops <= tested


def test_shape_arithmetic_is_folded():
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape (x.view(x.size(0), -1)) imports as one Reshape."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        const_node("zero", np.array(0, np.int64)),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        const_node("ax", np.array([0], np.int64)),
        helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
        const_node("rest", np.array([-1], np.int64)),
        helper.make_node("Concat", ["n1", "rest"], ["shape"], axis=0),
    ]
    data, shape = single("Reshape", inputs=["x", "shape"], nodes=nodes)
    X = RNG.standard_normal((4, *shape)).astype(np.float32)
    net = xai.from_onnx(data)
    assert [type(n.layer).__name__ for n in net.nodes] == ["Reshape"]
    np.testing.assert_allclose(net.predict(X), ort_run(data, X), atol=1e-6)


def test_nhwc_input_transposed_first_is_recorded_as_nhwc():
    """A TensorFlow-style model (NHWC input, Transpose to NCHW, Conv) imports as an NHWC network."""
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2])]
    data, shape = single(
        "Conv", inputs=["t", "W"], inits={"W": w(2, 3, 3, 3)}, shape=(7, 8, 3), nodes=nodes
    )
    net = xai.from_onnx(data)
    assert net.layout == "NHWC" and net.image_shape == (7, 8, 3)
    X = RNG.standard_normal((3, *shape)).astype(np.float32)
    np.testing.assert_allclose(net.predict(X), ort_run(data, X).reshape(3, -1), atol=1e-5)


def test_constants_reshaped_and_transposed_are_folded():
    """A weight reshaped and transposed in the graph folds into one constant operand."""
    nodes = [
        helper.make_node("Reshape", ["c", "s"], ["c2"]),
        helper.make_node("Transpose", ["c2"], ["c3"], perm=[1, 0]),
    ]
    inits = {"c": w(4, 6), "s": np.array([6, 4], np.int64)}
    data, shape = single("MatMul", inputs=["x", "c3"], inits=inits, shape=(4,), nodes=nodes)
    net = xai.from_onnx(data)
    assert [type(n.layer).__name__ for n in net.nodes] == ["Dense"]
    X = RNG.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(net.predict(X), ort_run(data, X), atol=1e-5)
