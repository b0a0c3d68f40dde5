"""ONNX models of several inputs and outputs import as one graph: onnxruntime's values,
torch's gradients with respect to each input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

import xai_core as xai
from tests.importers.conftest import input_gradient
from xai_core.errors import CapabilityError

RNG = np.random.default_rng(41)
W = RNG.standard_normal((4, 3)).astype(np.float32)


def _model() -> bytes:
    """y = relu(a @ W) + b; z = max(a, b) * b: two inputs (n, 4) and (n, 3)/(n, 4), two outputs."""
    nodes = [
        helper.make_node("MatMul", ["a", "W"], ["h"], name="mm"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Add", ["r", "c"], ["y"], name="add"),
        helper.make_node("Max", ["a", "b"], ["m"], name="max"),
        helper.make_node("Mul", ["m", "b"], ["z"], name="mul"),
    ]
    graph = helper.make_graph(
        nodes,
        "two_in_two_out",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, ["n", 4]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, ["n", 4]),
            helper.make_tensor_value_info("c", TensorProto.FLOAT, ["n", 3]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, None),
        ],
        [numpy_helper.from_array(W, "W")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def _feeds(n=5):
    return {
        "a": RNG.standard_normal((n, 4)).astype(np.float32),
        "b": RNG.standard_normal((n, 4)).astype(np.float32),
        "c": RNG.standard_normal((n, 3)).astype(np.float32),
    }


def test_inputs_and_outputs_are_the_files_and_values_match_onnxruntime():
    """Every input and output of the file, in order; each output equals onnxruntime's."""
    import onnxruntime as ort

    data = _model()
    net = xai.from_onnx(data)
    assert net.inputs == ("a", "b", "c")
    assert len(net.outputs) == 2
    feeds = _feeds()
    got = net.predict_outputs(feeds)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    for name, w in zip(net.outputs, want, strict=True):
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-6)


def test_gradients_with_respect_to_every_input_match_torch():
    """The backward pass from both outputs gives torch's gradient for each input (float64)."""
    net = xai.from_onnx(_model(), dtype="float64")
    feeds = {k: v.astype(np.float64) for k, v in _feeds().items()}
    ts = {k: torch.tensor(v, requires_grad=True) for k, v in feeds.items()}
    y = torch.relu(ts["a"] @ torch.tensor(W, dtype=torch.float64)) + ts["c"]
    z = torch.maximum(ts["a"], ts["b"]) * ts["b"]
    backend = xai.get_backend("cpu", dtype="float64")
    for which, out, reads in ((0, y, ("a", "c")), (1, z, ("a", "b"))):
        one = net.with_output(which)
        seed = RNG.standard_normal(out.shape)
        grads = torch.autograd.grad(out, [ts[k] for k in reads], torch.tensor(seed))
        for name, want in zip(reads, grads, strict=True):  # the other inputs fixed per row
            got = input_gradient(one, feeds, name, seed, backend)
            np.testing.assert_allclose(got, want.numpy(), rtol=1e-6, atol=1e-9)


def test_inputs_of_different_batch_sizes_are_refused():
    """Fixed first axes that differ cannot be one batch."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["y"])],
        "g",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 4]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [3, 4]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(CapabilityError, match="different batch sizes"):
        xai.from_onnx(m)
