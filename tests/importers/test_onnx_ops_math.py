"""ONNX math, normalisation, softmax and reduction operators: onnxruntime's values, torch's gradients."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper

import xai_core as xai
from xai_core.errors import CapabilityError, ModelFormatError
from xai_core.importers.onnx_registry import find_converter, operator_table
from xai_core.nn import Record

from .conftest import one_node_model, ort_run

RNG = np.random.default_rng(31)
SHAPE = (3, 5, 4)  # per sample: channels, height, width (odd and even, not square)


def w(*shape, scale=0.5, positive=False):
    v = RNG.standard_normal(shape) * scale
    return (np.abs(v) + 0.5 if positive else v).astype(np.float32)


def model(op, attrs=None, inits=None, shape=SHAPE, inputs=None, nodes=(), opset=17, outputs=None):
    """One ``op`` node reading the input ``x`` (and the constants ``inits``), at ``opset``."""
    return one_node_model(op, attrs, inits, shape, inputs, nodes, opset, outputs)


@dataclass
class Case:
    """A model, the per-sample input shape, the same function in torch, the input's domain."""

    data: bytes
    torch_fn: Any
    shape: tuple[int, ...] = SHAPE
    positive: bool = False

    def inputs(self, n=5):
        x = RNG.standard_normal((n, *self.shape)) * 1.5
        return (np.abs(x) + 0.1 if self.positive else x).astype(np.float32)


def i64(*v):
    return np.array(v, np.int64)


T = torch.as_tensor
SLOPE_C, SLOPE_W, SLOPE_1 = w(3, 1, 1), w(4), w(1)
LN_S, LN_B = w(4, scale=1) + 1, w(4)
LN2_S, LN2_B = w(5, 4, scale=1) + 1, w(5, 4)
LN3_S, LN3_B = w(8, scale=1) + 1, w(8)
BASE = w(4, positive=True)
DIVISOR = np.array([0.7, -1.3, 2.1, -0.45], np.float32)
SUMMAND = w(5, 1)
SELU = (1.6732632423543772, 1.0507009873554805)

CASES = {
    "HardSigmoid": Case(model("HardSigmoid"), lambda x: torch.clamp(0.2 * x + 0.5, 0, 1)),
    "HardSigmoid_torch": Case(
        model("HardSigmoid", {"alpha": 1 / 6, "beta": 0.5}), lambda x: F.hardsigmoid(x)
    ),
    "Erf": Case(model("Erf"), torch.erf),
    "Gelu": Case(model("Gelu", opset=20), F.gelu),
    "Gelu_tanh": Case(
        model("Gelu", {"approximate": "tanh"}, opset=20), lambda x: F.gelu(x, approximate="tanh")
    ),
    "Sqrt": Case(model("Sqrt"), torch.sqrt, positive=True),
    "Pow_square": Case(model("Pow", inits={"p": np.float32(2)}), lambda x: x**2),
    "Pow_cube": Case(model("Pow", inits={"p": np.array([3.0], np.float32)}), lambda x: x**3),
    "Mod_fmod": Case(  # C's fmod by a constant of either sign: the dividend's sign
        model("Mod", {"fmod": 1}, inits={"d": DIVISOR}),
        lambda x: torch.fmod(x, T(DIVISOR, dtype=x.dtype)),
    ),
    "Mod_computed_divisor": Case(  # the gradient reaches the divisor: -trunc(x / y)
        model(
            "Mod",
            {"fmod": 1},
            inputs=["x", "d"],
            inits={"half": np.float32(0.5)},
            nodes=[
                helper.make_node("Abs", ["x"], ["a"]),
                helper.make_node("Add", ["a", "half"], ["d"]),
            ],
        ),
        lambda x: torch.fmod(x, x.abs() + 0.5),
    ),
    "Pow_by_array": Case(  # a broadcast exponent of several values, halves among them
        model("Pow", inits={"p": np.array([1.0, 2.0, 0.5, 3.0], np.float32)}),
        lambda x: x ** torch.tensor([1.0, 2.0, 0.5, 3.0], dtype=x.dtype),
        positive=True,
    ),
    "Pow_half": Case(model("Pow", inits={"p": np.float32(0.5)}), lambda x: x**0.5, positive=True),
    "Pow_negative": Case(
        model("Pow", inits={"p": np.float32(-1.5)}), lambda x: x**-1.5, positive=True
    ),
    "Pow_base": Case(
        model("Pow", inputs=["b", "x"], inits={"b": BASE}), lambda x: T(BASE, dtype=x.dtype) ** x
    ),
    "Pow_both_computed": Case(  # zero bases included: torch's gradients are 0 there
        model(
            "Pow",
            inputs=["a", "b"],
            inits={"one": np.float32(1)},
            nodes=[
                helper.make_node("Relu", ["x"], ["a"]),
                helper.make_node("Abs", ["x"], ["m"]),
                helper.make_node("Add", ["m", "one"], ["b"]),
            ],
        ),
        lambda x: torch.relu(x) ** (x.abs() + 1),
    ),
    "Pow_folded": Case(
        model(
            "Mul",
            inputs=["x", "bp"],
            inits={"b": BASE, "e": np.float32(1.5)},
            nodes=[helper.make_node("Pow", ["b", "e"], ["bp"])],
        ),
        lambda x: x * T(BASE.astype(np.float64) ** 1.5),
    ),
    "Sqrt_folded": Case(
        model(
            "Div",
            inputs=["x", "r"],
            inits={"v": np.float32(4.0)},
            nodes=[helper.make_node("Sqrt", ["v"], ["r"])],
        ),
        lambda x: x / 2.0,
    ),
    "Exp": Case(model("Exp"), torch.exp),
    "Exp_divisor": Case(
        model("Div", inputs=["x", "e"], nodes=[helper.make_node("Exp", ["x"], ["e"])]),
        lambda x: x / torch.exp(x),
    ),
    "Log": Case(model("Log"), torch.log, positive=True),
    "Neg": Case(model("Neg"), torch.neg),
    "Abs": Case(model("Abs"), torch.abs),
    "Reciprocal": Case(model("Reciprocal"), torch.reciprocal, positive=True),
    "Softplus": Case(model("Softplus"), F.softplus),
    "Softsign": Case(model("Softsign"), F.softsign),
    "Mish": Case(model("Mish", opset=18), F.mish),
    "Celu": Case(model("Celu", {"alpha": 0.5}), lambda x: F.celu(x, 0.5)),
    "Sum": Case(
        model("Sum", inputs=["x", "x", "c"], inits={"c": SUMMAND}),
        lambda x: x + x + T(SUMMAND, dtype=x.dtype),
    ),
    "Sum_one": Case(model("Sum"), lambda x: x),
    "Elu": Case(model("Elu", {"alpha": 0.7}), lambda x: F.elu(x, 0.7)),
    "Selu": Case(model("Selu"), lambda x: SELU[1] * F.elu(x, SELU[0])),
    "Selu_attrs": Case(model("Selu", {"alpha": 1.2, "gamma": 0.9}), lambda x: 0.9 * F.elu(x, 1.2)),
    "Sin": Case(model("Sin"), torch.sin),
    "Cos": Case(model("Cos"), torch.cos),
    "PRelu_channel": Case(
        model("PRelu", inits={"s": SLOPE_C}),
        lambda x: torch.where(x >= 0, x, T(SLOPE_C, dtype=x.dtype) * x),
    ),
    "PRelu_last_axis": Case(
        model("PRelu", inits={"s": SLOPE_W}),
        lambda x: torch.where(x >= 0, x, T(SLOPE_W, dtype=x.dtype) * x),
    ),
    "PRelu_one": Case(
        model("PRelu", inits={"s": SLOPE_1}, shape=(6,)),
        lambda x: torch.where(x >= 0, x, T(SLOPE_1, dtype=x.dtype) * x),
        shape=(6,),
    ),
    "LayerNormalization": Case(
        model("LayerNormalization", {"epsilon": 1e-3}, {"s": LN_S, "b": LN_B}),
        lambda x: F.layer_norm(x, (4,), T(LN_S, dtype=x.dtype), T(LN_B, dtype=x.dtype), 1e-3),
    ),
    "LayerNormalization_two_axes": Case(
        model("LayerNormalization", {"axis": -2}, {"s": LN2_S, "b": LN2_B}),
        lambda x: F.layer_norm(x, (5, 4), T(LN2_S, dtype=x.dtype), T(LN2_B, dtype=x.dtype)),
    ),
    "LayerNormalization_no_bias": Case(
        model("LayerNormalization", {"axis": 2}, {"s": LN2_S}),
        lambda x: F.layer_norm(x, (5, 4), T(LN2_S, dtype=x.dtype)),
    ),
    "LayerNormalization_tokens": Case(
        model("LayerNormalization", {}, {"s": LN3_S, "b": LN3_B}, shape=(6, 8)),
        lambda x: F.layer_norm(x, (8,), T(LN3_S, dtype=x.dtype), T(LN3_B, dtype=x.dtype)),
        shape=(6, 8),
    ),
    "Softmax_last": Case(model("Softmax"), lambda x: torch.softmax(x, -1)),
    "Softmax_axis1": Case(model("Softmax", {"axis": 1}), lambda x: torch.softmax(x, 1)),
    "Softmax_axis2": Case(model("Softmax", {"axis": -2}), lambda x: torch.softmax(x, 2)),
    "Softmax_opset11": Case(
        model("Softmax", opset=11),
        lambda x: torch.softmax(x.reshape(len(x), -1), -1).reshape(x.shape),
    ),
    "Softmax_opset11_axis2": Case(
        model("Softmax", {"axis": 2}, opset=11),
        lambda x: torch.softmax(x.reshape(len(x), 3, -1), -1).reshape(x.shape),
    ),
    "LogSoftmax_last": Case(model("LogSoftmax"), lambda x: torch.log_softmax(x, -1)),
    "LogSoftmax_axis1": Case(model("LogSoftmax", {"axis": 1}), lambda x: torch.log_softmax(x, 1)),
    "LogSoftmax_opset11": Case(
        model("LogSoftmax", {"axis": 1}, opset=11),
        lambda x: torch.log_softmax(x.reshape(len(x), -1), -1).reshape(x.shape),
    ),
    "ReduceMax": Case(
        model("ReduceMax", {"keepdims": 0}, {"a": i64(-1)}, opset=18),
        lambda x: torch.amax(x, -1),
    ),
    "ReduceMax_opset13": Case(
        model("ReduceMax", {"axes": [1, 3]}, opset=13), lambda x: torch.amax(x, (1, 3), True)
    ),
    "ReduceMin": Case(
        model("ReduceMin", {}, {"a": i64(2)}, opset=18), lambda x: torch.amin(x, 2, True)
    ),
    "ReduceSum": Case(
        model("ReduceSum", {"keepdims": 0}, {"a": i64(1, 2)}), lambda x: x.sum((1, 2))
    ),
    "ReduceSum_opset11": Case(
        model("ReduceSum", {"axes": [-1]}, opset=11), lambda x: x.sum(-1, keepdim=True)
    ),
    "ReduceSum_noop": Case(model("ReduceSum", {"noop_with_empty_axes": 1}), lambda x: x),
    "ReduceL2": Case(
        model("ReduceL2", {}, {"a": i64(3)}, opset=18),
        lambda x: torch.sqrt((x * x).sum(3, keepdim=True)),
    ),
    "ReduceL2_opset13": Case(
        model("ReduceL2", {"axes": [1], "keepdims": 0}, opset=13),
        lambda x: torch.sqrt((x * x).sum(1)),
    ),
    "ReduceMean": Case(
        model("ReduceMean", {"keepdims": 0}, {"a": i64(-1)}, opset=18), lambda x: x.mean(-1)
    ),
    "ReduceMean_opset13": Case(
        model("ReduceMean", {"axes": [1]}, opset=13), lambda x: x.mean(1, keepdim=True)
    ),
    "ReduceMean_hw": Case(
        model("ReduceMean", {"axes": [2, 3], "keepdims": 0}, opset=13), lambda x: x.mean((2, 3))
    ),
    "ReduceMean_hw_input": Case(
        model("ReduceMean", {}, {"a": i64(-2, -1)}, opset=18), lambda x: x.mean((2, 3), True)
    ),
}
IDS = sorted(CASES)
GRAD_IDS = [c for c in IDS if CASES[c].torch_fn is not None]


def _ids(cases):
    return pytest.mark.parametrize("case", cases, ids=cases)


@_ids(IDS)
def test_operator_matches_onnxruntime(case):
    """Outputs equal onnxruntime's within 1e-5 relative, fp32 on cpu."""
    c = CASES[case]
    X = c.inputs()
    want = ort_run(c.data, X).reshape(len(X), -1)
    got = xai.from_onnx(c.data).predict(X)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@_ids(GRAD_IDS)
def test_operator_gradients_match_torch_autograd(case):
    """The backward pass of a random seed equals torch's vector-Jacobian product (float64)."""
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
    np.testing.assert_allclose(out.reshape(yt.shape), yt.detach().numpy(), rtol=1e-5, atol=1e-7)
    (want,) = torch.autograd.grad(yt, xt, torch.tensor(seed.reshape(yt.shape)))
    np.testing.assert_allclose(gX, want.numpy(), rtol=1e-5, atol=1e-7)


@_ids(["PRelu_channel", "PRelu_last_axis", "LayerNormalization", "LayerNormalization_two_axes"])
def test_parameter_gradients_match_torch_autograd(case):
    """PRelu's slope and LayerNorm's scale and bias get torch's gradients."""
    c = CASES[case]
    net = xai.from_onnx(c.data)
    layer = net.nodes[-1].layer
    X = c.inputs().astype(np.float64)
    record = Record()
    out = net.forward(X, xai.get_backend("cpu", dtype="float64"), record=record)
    seed = RNG.standard_normal(out.shape)
    _, grads = net.vjp(seed, xai.get_backend("cpu", dtype="float64"), record)
    xt = torch.tensor(X)
    ps = {
        k: torch.tensor(v.astype(np.float64), requires_grad=True) for k, v in layer.params.items()
    }
    if "slope" in ps:
        yt = torch.where(xt >= 0, xt, ps["slope"] * xt)
    else:
        shape = tuple(ps["gamma"].shape)
        eps = layer.epsilon
        yt = F.layer_norm(xt, shape, ps["gamma"], ps["beta"], eps)
    want = torch.autograd.grad(yt, list(ps.values()), torch.tensor(seed.reshape(yt.shape)))
    for key, g in zip(ps, want):
        np.testing.assert_allclose(grads[net.nodes[-1].name][key], g.numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("backend", ["gpu", "tpu"], ids=["gpu", "tpu"])
@_ids(IDS)
def test_operator_runs_and_counts_on_other_backends(case, backend):
    """On gpu and tpu the outputs and gradients are within bf16 tolerance of cpu's, and the
    work is counted."""
    c = CASES[case]
    net = xai.from_onnx(c.data)
    X = c.inputs()
    runner = xai.ModelRunner(net, backend=backend)
    np.testing.assert_allclose(runner.predict(X), net.predict(X), rtol=2e-2, atol=2e-2)
    if case not in ("ReduceSum_noop", "Sum_one"):  # identities: no arithmetic
        assert runner.counters["elementwise_ops"] > 0
    target = np.arange(len(X)) % net.n_outputs
    got = runner.gradient(X, target)
    np.testing.assert_allclose(got, net.gradient(X, target), rtol=2e-2, atol=2e-2)


@_ids(IDS)
def test_operator_saves_and_loads(case, tmp_path):
    """The imported network saves as weights + JSON and loads to the same outputs."""
    c = CASES[case]
    net = xai.from_onnx(c.data)
    path = tmp_path / "m.npz"
    net.save(path)
    X = c.inputs()
    np.testing.assert_array_equal(xai.load_model(path).predict(X), net.predict(X))


def test_layer_kinds_chosen():
    """Constants fold, ReduceMean over NCHW height and width stays GlobalAveragePooling2D,
    a last-axis Softmax is the plain nn.Softmax, another axis is transposed there and back."""

    def kinds(case):
        return [type(n.layer).__name__ for n in xai.from_onnx(CASES[case].data).nodes]

    assert kinds("Pow_folded") == ["Constant", "Multiply"]
    assert kinds("Sqrt_folded") == ["Constant", "Divide"]
    assert kinds("ReduceMean_hw") == ["GlobalAveragePooling2D"]
    assert kinds("ReduceMean_hw_input") == ["GlobalAveragePooling2D"]
    assert kinds("ReduceMean") == ["Reduce"]
    assert kinds("Softmax_last") == ["Softmax"]
    assert kinds("Softmax_axis1") == ["Transpose", "Softmax", "Transpose"]
    assert kinds("Softmax_opset11") == ["Reshape", "Softmax", "Reshape"]
    assert kinds("LogSoftmax_axis1") == ["LogSoftmax"]
    assert kinds("Pow_base") == ["Constant", "Exponentiate"]


REFUSALS = {
    "gelu_unknown_approximation": (
        model("Gelu", {"approximate": "fast"}, opset=20),
        "approximate must be 'none' or 'tanh'; got 'fast'",
    ),
    "pow_exponent_tensor": (
        model("Pow", inits={"p": np.arange(20, dtype=np.float32).reshape(5, 4)}),
        "the exponent holds 20 distinct values; at most 8",
    ),
    "reduce_no_axes": (model("ReduceSum"), "would mix the batch's samples"),
    "reduce_batch_axis": (
        model("ReduceMax", {}, {"a": i64(0, 1)}, opset=18),
        "axis 0 of a rank-4 tensor: the batch axis cannot be touched",
    ),
    "reduce_repeated_axes": (
        model("ReduceMean", {"axes": [1, -3]}, opset=13),
        r"axes \[1, -3\] name one axis twice",
    ),
    "reduce_computed_axes": (
        model("ReduceSum", inputs=["x", "x"]),
        "input 'x' must be a constant here",
    ),
    "softmax_batch_axis": (
        model("Softmax", {"axis": 0}),
        "axis 0 of a rank-4 tensor: the batch axis cannot be touched",
    ),
    "layer_norm_batch_axis": (
        model("LayerNormalization", {"axis": 0}, {"s": np.ones((3, 5, 4), np.float32)}),
        "the batch axis cannot be touched",
    ),
    "layer_norm_scale_shape": (
        model("LayerNormalization", {}, {"s": w(3)}),
        r"input 1 of shape \(3,\) does not broadcast to \(4,\)",
    ),
    "prelu_batch_slope": (
        model("PRelu", inits={"s": w(2, 3, 1, 1)}),
        r"a slope of shape \(2, 3, 1, 1\) varies along the batch axis",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSALS), ids=sorted(REFUSALS))
def test_unsupported_forms_are_refused_clearly(case):
    """Each form the converters cannot run is refused naming the node and the reason."""
    data, message = REFUSALS[case]
    with pytest.raises(CapabilityError, match=message) as info:
        xai.from_onnx(data)
    assert "node 'the_" in str(info.value)


def test_opset_ranges_follow_the_spec():
    """Gelu from 20, LayerNormalization from 17; reductions switch to an axes input at the
    opset the spec moved them (13 for ReduceSum, 18 for the others); Softmax at 13."""
    assert find_converter("Gelu", 19) is None and find_converter("Gelu", 20) is not None
    assert find_converter("LayerNormalization", 16) is None
    for op, moved in [("ReduceSum", 13), ("ReduceMean", 18), ("ReduceMax", 18), ("ReduceL2", 18)]:
        assert find_converter(op, moved - 1) is not find_converter(op, moved)
        assert find_converter(op, moved - 1).until == moved - 1
    assert find_converter("Softmax", 12).until == 12 and find_converter("Softmax", 13).since == 13


def test_every_operator_of_the_module_is_tested():
    """Every operator this module registers has a case here (LRN its own file, test_onnx_lrn.py)."""
    ops = {r["op"] for r in operator_table() if r["module"].endswith("onnx_ops_math")}
    tested = {c.split("_")[0] for c in CASES} | {"LRN"}
    assert ops and ops <= tested


def _saved(case, tmp_path):
    path = tmp_path / "m.npz"
    xai.from_onnx(CASES[case].data).save(path)
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return path, arrays, json.loads(arrays["architecture"].tobytes())


def _config(arch, key, value):
    arch["layers"][-1]["config"][key] = value
    return arch


#: case -> (model case, change to the architecture, message expected)
TAMPERED = {
    "prelu_slope_not_broadcasting": (
        "PRelu_channel",
        lambda a: _config(a, "slope_shape", [5, 1, 1]),
        r"slope of shape \(5, 1, 1\) does not broadcast",
    ),
    "prelu_slope_shape_text": (
        "PRelu_channel",
        lambda a: _config(a, "slope_shape", "abc"),
        "slope_shape must be a tuple of ints",
    ),
    "layer_norm_axis_other_than_file": (
        "LayerNormalization",
        lambda a: _config(a, "axis", -2),
        r"layer_\d+\.gamma is float32 of shape \(4,\); expected floats of shape \(5, 4\)",
    ),
    "layer_norm_negative_epsilon": (
        "LayerNormalization",
        lambda a: _config(a, "epsilon", -1.0),
        "epsilon must be >= 0",
    ),
    "reduce_unknown_kind": (
        "ReduceMax",
        lambda a: _config(a, "kind", "median"),
        "kind must be one of max, min, sum, mean, l2; got 'median'",
    ),
    "reduce_axis_out_of_range": (
        "ReduceMax",
        lambda a: _config(a, "axes", [7]),
        r"axes \[7\] are out of range or repeated for samples with 3 axes",
    ),
    "gelu_unknown_approximation": (
        "Gelu",
        lambda a: _config(a, "approximate", "fast"),
        "approximate must be 'none' or 'tanh'",
    ),
    "power_exponent_text": (
        "Pow_cube",
        lambda a: _config(a, "exponent", "three"),
        "exponent",
    ),
}


@pytest.mark.parametrize("case", sorted(TAMPERED), ids=sorted(TAMPERED))
def test_tampered_saved_layers_are_refused(case, tmp_path):
    """A saved network whose new layers' configs were edited is refused naming the file and the problem."""
    source, change, message = TAMPERED[case]
    path, arrays, arch = _saved(source, tmp_path)
    arrays["architecture"] = np.frombuffer(json.dumps(change(arch)).encode(), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(ModelFormatError, match=message) as info:
        xai.load_model(path)
    assert "m.npz" in str(info.value)


def _float64_pass_equals_torch(net, X, torch_fn):
    """``net``'s float64 forward pass and input gradient (for a random output gradient)
    equal ``torch_fn``'s and torch autograd's to 1e-9."""
    backend = xai.get_backend("cpu", dtype="float64")
    record = Record()
    X64 = X.astype(np.float64)
    out = net.forward(X64, backend, record=record)
    seed = RNG.standard_normal(out.shape)
    gX, _ = net.vjp(seed, backend, record, param_grads=False)
    xt = torch.tensor(X64, requires_grad=True)
    yt = torch_fn(xt)
    np.testing.assert_allclose(out.reshape(yt.shape), yt.detach().numpy(), rtol=1e-9, atol=1e-12)
    (g,) = torch.autograd.grad(yt, xt, torch.tensor(seed.reshape(yt.shape)))
    np.testing.assert_allclose(gX, g.numpy(), rtol=1e-9, atol=1e-12)


def test_floor_mod_of_floats_matches_the_reference_and_torch():
    """Mod with fmod=0 on floats (the divisor's sign; onnxruntime has no kernel before opset
    28) equals onnx's reference, and its gradient torch's ``remainder``."""
    from onnx.reference import ReferenceEvaluator

    data = model("Mod", {"fmod": 0}, inits={"d": DIVISOR})
    net = xai.from_onnx(data)
    X = Case(data, None).inputs()
    (want,) = ReferenceEvaluator(data).run(None, {"x": X})
    np.testing.assert_allclose(net.predict(X), want.reshape(len(X), -1), rtol=1e-5, atol=1e-6)
    _float64_pass_equals_torch(net, X, lambda x: torch.remainder(x, T(DIVISOR, dtype=x.dtype)))


def test_floor_mod_by_a_computed_divisor_matches_the_reference_and_torch():
    """Mod (fmod=0) of two computed floats: the value is the reference's, and the gradient
    reaches the divisor as torch's ``remainder`` sends it (``-floor(x / y)``)."""
    from onnx.reference import ReferenceEvaluator

    data = model(
        "Mod",
        {"fmod": 0},
        inputs=["x", "d"],
        inits={"half": np.float32(0.5)},
        nodes=[
            helper.make_node("Abs", ["x"], ["a"]),
            helper.make_node("Add", ["a", "half"], ["d"]),
        ],
    )
    net = xai.from_onnx(data)
    X = Case(data, None).inputs(40)
    (want,) = ReferenceEvaluator(data).run(None, {"x": X})
    np.testing.assert_allclose(net.predict(X), want.reshape(len(X), -1), rtol=1e-5, atol=1e-6)
    X64 = torch.tensor(X, dtype=torch.float64)
    assert (torch.floor(X64 / (X64.abs() + 0.5)) != torch.trunc(X64 / (X64.abs() + 0.5))).any()
    _float64_pass_equals_torch(net, X, lambda x: torch.remainder(x, x.abs() + 0.5))


def test_a_network_runs_non_finite_inputs_only_when_asked():
    """``predict`` and ``predict_outputs`` refuse NaN and infinity by default; with
    ``allow_nan`` the network runs them with IEEE arithmetic, as onnxruntime does."""
    nodes = [
        helper.make_node("IsNaN", ["x"], ["nan"]),
        helper.make_node("IsInf", ["x"], ["inf"]),
        helper.make_node("Cast", ["nan"], ["n"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["inf"], ["i"], to=TensorProto.FLOAT),
    ]
    data = model("Add", inputs=["n", "i"], nodes=nodes, shape=(4,))
    net = xai.from_onnx(data)
    X = np.array([[np.nan, -3.0, 3.0, np.inf], [1.0, -np.inf, 0.0, np.nan]], np.float32)
    for run in (net.predict, lambda X: net.predict_outputs({net.input_name: X})):
        with pytest.raises(xai.ValidationError, match="NaN or infinite"):
            run(X)
    (y,) = net.predict_outputs({net.input_name: X}, allow_nan=True).values()
    np.testing.assert_array_equal(y, ort_run(data, X))
    np.testing.assert_array_equal(y, [[1, 0, 0, 1], [0, 1, 0, 1]])
