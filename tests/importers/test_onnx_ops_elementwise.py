"""More ONNX elementwise operators, comparisons, extremes, arg-extremes and composite
reductions: onnxruntime's values, torch's gradients, other backends, save and load."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

import xai_core as xai
from xai_core.errors import CapabilityError
from xai_core.nn import Record

RNG = np.random.default_rng(37)
SHAPE = (3, 5, 4)


def model(op, attrs=None, inits=None, inputs=None, opset=18, out=TensorProto.FLOAT) -> bytes:
    """One ``op`` node reading ``x`` (batch, *SHAPE) and the constants ``inits``."""
    inits = inits or {}
    node = helper.make_node(
        op, inputs or ["x", *inits], ["y"], name=f"the_{op.lower()}", **(attrs or {})
    )
    graph = helper.make_graph(
        [node],
        f"{op}_alone",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", *SHAPE])],
        [helper.make_tensor_value_info("y", out, None)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


@dataclass
class Case:
    """A model, the same function in torch, and the domain of the inputs drawn."""

    data: bytes
    torch_fn: Any
    domain: str = "normal"  # "unit": (-0.9, 0.9); "above1": > 1.1; "positive": > 0.1

    def inputs(self, n=4) -> np.ndarray:
        x = RNG.standard_normal((n, *SHAPE)) * 1.5
        if self.domain == "unit":
            x = np.tanh(x) * 0.9
        elif self.domain == "above1":
            x = np.abs(x) + 1.1
        elif self.domain == "positive":
            x = np.abs(x) + 0.1
        elif self.domain == "ties":  # whole and half numbers: Round, Floor, Ceil, Sign at 0
            x = np.round(x * 2) / 2
        return x.astype(np.float32)


def flat(fn):
    """A piecewise-constant torch function made differentiable (gradient 0), as a float."""
    return lambda x: fn(x).to(x.dtype) + 0 * x.sum()


C = RNG.standard_normal((5, 1)).astype(np.float32)  # broadcasts against (3, 5, 4)
I64 = TensorProto.INT64
BOOL = TensorProto.BOOL


def _argmax_last(x, dim, largest=True):
    v = x if largest else -x
    n = x.shape[dim]
    return n - 1 - torch.argmax(torch.flip(v, [dim]), dim, keepdim=True)


CASES = {
    "Tan": Case(model("Tan"), torch.tan, "unit"),
    "Asin": Case(model("Asin"), torch.asin, "unit"),
    "Acos": Case(model("Acos"), torch.acos, "unit"),
    "Atan": Case(model("Atan"), torch.atan),
    "Sinh": Case(model("Sinh"), torch.sinh),
    "Cosh": Case(model("Cosh"), torch.cosh),
    "Asinh": Case(model("Asinh"), torch.asinh),
    "Acosh": Case(model("Acosh"), torch.acosh, "above1"),
    "Atanh": Case(model("Atanh"), torch.atanh, "unit"),
    "Floor": Case(model("Floor"), torch.floor, "ties"),
    "Ceil": Case(model("Ceil"), torch.ceil, "ties"),
    "Round": Case(model("Round"), torch.round, "ties"),
    "Sign": Case(model("Sign"), torch.sign, "ties"),
    "IsNaN": Case(model("IsNaN", out=BOOL), flat(torch.isnan)),
    "IsInf": Case(model("IsInf", {"detect_negative": 0}, out=BOOL), flat(torch.isposinf)),
    "ThresholdedRelu": Case(
        model("ThresholdedRelu", {"alpha": 0.5}), lambda x: torch.where(x > 0.5, x, 0 * x)
    ),
    "Shrink": Case(
        model("Shrink", {"bias": 0.25, "lambd": 0.75}),
        lambda x: torch.where(x > 0.75, x - 0.25, torch.where(x < -0.75, x + 0.25, 0 * x)),
    ),
    "Shrink_soft": Case(model("Shrink", {"bias": 0.5}), lambda x: F.softshrink(x, 0.5)),
    "Swish": Case(model("Swish", {"alpha": 1.5}, opset=24), lambda x: x * torch.sigmoid(1.5 * x)),
    "Greater": Case(model("Greater", inits={"c": C}, out=BOOL), flat(lambda x: x > T(C))),
    "GreaterOrEqual": Case(
        model("GreaterOrEqual", inits={"c": C}, out=BOOL), flat(lambda x: x >= T(C))
    ),
    "Less_const_first": Case(
        model("Less", inputs=["c", "x"], inits={"c": C}, out=BOOL), flat(lambda x: T(C) < x)
    ),
    "LessOrEqual": Case(model("LessOrEqual", inits={"c": C}, out=BOOL), flat(lambda x: x <= T(C))),
    "Max": Case(model("Max", inits={"c": C}), lambda x: torch.maximum(x, T(C))),
    "Max_ties": Case(model("Max", inputs=["x", "x"]), lambda x: torch.maximum(x, x)),
    "Min": Case(model("Min", inputs=["c", "x"], inits={"c": C}), lambda x: torch.minimum(T(C), x)),
    "Max_one": Case(model("Max", inputs=["x"]), lambda x: x),
    "Mean": Case(model("Mean", inits={"c": C}), lambda x: (x + T(C)) / 2),
    "Mean_three": Case(
        model("Mean", inputs=["x", "c", "x"], inits={"c": C}), lambda x: (2 * x + T(C)) / 3
    ),
    "ArgMax": Case(
        model("ArgMax", {"axis": 2}, out=I64), flat(lambda x: torch.argmax(x, 2, keepdim=True))
    ),
    "ArgMin_flat_last": Case(
        model("ArgMin", {"axis": -1, "keepdims": 0, "select_last_index": 1}, out=I64),
        flat(lambda x: _argmax_last(x, 3, largest=False)[..., 0]),
    ),
    "Hardmax": Case(
        model("Hardmax", opset=13), flat(lambda x: F.one_hot(torch.argmax(x, -1), x.shape[-1]))
    ),
    "Hardmax_opset11": Case(
        model("Hardmax", {"axis": 2}, opset=11),
        flat(lambda x: F.one_hot(torch.argmax(x.reshape(len(x), 3, -1), -1), 20).reshape(x.shape)),
    ),
    "ReduceL1": Case(
        model("ReduceL1", inits={"a": np.array([1, 3])}), lambda x: x.abs().sum((1, 3), True)
    ),
    "ReduceSumSquare": Case(
        model("ReduceSumSquare", {"axes": [2], "keepdims": 0}, opset=13),
        lambda x: (x * x).sum(2),
    ),
    "ReduceLogSum": Case(
        model("ReduceLogSum", inits={"a": np.array([-1])}),
        lambda x: torch.log(x.sum(-1, True)),
        "positive",
    ),
    "ReduceLogSumExp": Case(
        model("ReduceLogSumExp", {"keepdims": 0}, inits={"a": np.array([1, 2])}),
        lambda x: torch.logsumexp(x, (1, 2)),
    ),
    "ReduceLogSumExp_keep": Case(
        model("ReduceLogSumExp", {"axes": [3]}, opset=13),
        lambda x: torch.logsumexp(x, 3, True),
    ),
}
IDS = sorted(CASES)
NO_ORT = {"Swish"}  # onnxruntime has no kernel for the opset-24 operator yet


def T(v):
    return torch.as_tensor(v, dtype=torch.float64)


def _ids(cases):
    return pytest.mark.parametrize("case", cases, ids=cases)


def _ort(data: bytes, X: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    (out,) = sess.run(None, {"x": X})
    return np.asarray(out, dtype=np.float32)


@_ids([c for c in IDS if c not in NO_ORT])
def test_operator_matches_onnxruntime(case):
    """Outputs equal onnxruntime's (0/1 and indices as floats) within 1e-5 relative."""
    c = CASES[case]
    X = c.inputs()
    want = _ort(c.data, X).reshape(len(X), -1)
    got = xai.from_onnx(c.data).predict(X)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@_ids(IDS)
def test_operator_gradients_match_torch_autograd(case):
    """Values and the backward pass of a random seed equal torch's (float64)."""
    c = CASES[case]
    net = xai.from_onnx(c.data)
    X = c.inputs().astype(np.float64)
    backend = xai.get_backend("cpu", dtype="float64")
    record = Record()
    out = net.forward(X, backend, record=record)
    seed = RNG.standard_normal(out.shape)
    gX, _ = net.vjp(seed, backend, record, param_grads=False)
    xt = torch.tensor(X, requires_grad=True)
    yt = c.torch_fn(xt)
    np.testing.assert_allclose(out.reshape(yt.shape), yt.detach().numpy(), rtol=1e-6, atol=1e-9)
    (want,) = torch.autograd.grad(yt, xt, torch.tensor(seed.reshape(yt.shape)))
    np.testing.assert_allclose(gX, want.numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("backend", ["gpu", "tpu"], ids=["gpu", "tpu"])
@_ids(["Tan", "Round", "Shrink", "Greater", "Max", "Mean", "ArgMax", "ReduceLogSumExp"])
def test_operator_runs_on_other_backends(case, backend):
    """On gpu and tpu the outputs and gradients are within bf16 tolerance of cpu's."""
    c = CASES[case]
    net = xai.from_onnx(c.data)
    X = c.inputs()
    runner = xai.ModelRunner(net, backend=backend)
    np.testing.assert_allclose(runner.predict(X), net.predict(X), rtol=2e-2, atol=2e-2)
    target = np.arange(len(X)) % net.n_outputs
    np.testing.assert_allclose(
        runner.gradient(X, target), net.gradient(X, target), rtol=2e-2, atol=2e-2
    )


@_ids(IDS)
def test_operator_saves_and_loads(case, tmp_path):
    """The imported network saves as weights + JSON and loads to the same outputs."""
    c = CASES[case]
    net = xai.from_onnx(c.data)
    path = tmp_path / "m.npz"
    net.save(path)
    X = c.inputs()
    np.testing.assert_array_equal(xai.load_model(path).predict(X), net.predict(X))


def test_constants_fold():
    """Every input constant: the operators fold at import (no layer for them)."""
    k = np.array([[0.5, -2.0, 3.0]], np.float32)
    node_floor = helper.make_node("Floor", ["k"], ["f"])
    node_max = helper.make_node("Max", ["f", "k"], ["m"])
    node_add = helper.make_node("Add", ["x", "m"], ["y"])
    graph = helper.make_graph(
        [node_floor, node_max, node_add],
        "folded",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(k, "k")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    net = xai.from_onnx(m.SerializeToString())
    assert [type(n.layer).__name__ for n in net.nodes] == ["Constant", "Add"]
    X = RNG.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(net.predict(X), X + np.maximum(np.floor(k), k))


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (model("ArgMax", {"axis": 0}, out=I64), "the batch axis cannot be touched"),
        (model("ReduceL1", {"keepdims": 1}), "would mix the batch's samples"),
        (model("Hardmax", {"axis": -4}, opset=13), "the batch axis cannot be touched"),
    ],
    ids=["argmax_batch_axis", "reduce_every_axis", "hardmax_batch_axis"],
)
def test_refusals_name_the_limit(data, words):
    """An axis that is the batch's is refused up front, naming the node."""
    with pytest.raises(CapabilityError, match=words):
        xai.from_onnx(data)


@pytest.mark.parametrize("op", ["And", "Or", "Xor", "Not"])
def test_logic_of_computed_booleans_matches_onnxruntime_and_has_no_gradient(op, tmp_path):
    """And, Or, Xor and Not of comparisons of the input (booleans computed at run time, held
    as 1 and 0) equal onnxruntime's; the gradient is 0 (torch's logic has none); the network
    saves and loads."""
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["p"]),
        helper.make_node("Less", ["x", "c"], ["q"]),
        helper.make_node(op, ["p"] if op == "Not" else ["p", "q"], ["r"]),
        helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes,
        f"{op}_of_comparisons",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", *SHAPE])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.zeros(1, np.float32), "zero"),
            numpy_helper.from_array(C, "c"),
        ],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    data = m.SerializeToString()
    net = xai.from_onnx(data)
    X = Case(data, None).inputs()
    want = _ort(data, X).reshape(len(X), -1)
    np.testing.assert_array_equal(net.predict(X), want)
    assert 0 < want.mean() < 1  # both truth values occur
    backend = xai.get_backend("cpu", dtype="float64")
    record = Record()
    out = net.forward(X.astype(np.float64), backend, record=record)
    gX, _ = net.vjp(RNG.standard_normal(out.shape), backend, record, param_grads=False)
    np.testing.assert_array_equal(gX, 0)
    net.save(tmp_path / "m.npz")
    np.testing.assert_array_equal(xai.load_model(tmp_path / "m.npz").predict(X), want)
