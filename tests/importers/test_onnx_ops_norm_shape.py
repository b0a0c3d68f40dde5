"""ONNX normalisations, selections, repeats, masks, cumulative sums, products, pools and
casts composed of native layers: onnxruntime's values, torch's gradients, save and load."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

import xai_core as xai
from xai_core.errors import CapabilityError
from xai_core.nn import Record

RNG = np.random.default_rng(43)
SHAPE = (4, 6, 5)


def model(op, attrs=None, inits=None, inputs=None, opset=18, shape=SHAPE, out=TensorProto.FLOAT):
    """One ``op`` node reading ``x`` (batch, *shape) and the constants ``inits``."""
    inits = inits or {}
    node = helper.make_node(
        op, inputs or ["x", *inits], ["y"], name=f"the_{op.lower()}", **(attrs or {})
    )
    graph = helper.make_graph(
        [node],
        f"{op}_alone",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", *shape])],
        [helper.make_tensor_value_info("y", out, None)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


@dataclass
class Case:
    data: bytes
    torch_fn: Any
    shape: tuple[int, ...] = SHAPE
    ort: bool = True  # onnxruntime has a kernel for it at this opset
    nonzero: bool = False

    def inputs(self, n=3):
        x = RNG.standard_normal((n, *self.shape)) * 1.5
        if self.nonzero:
            x = np.sign(x) * (np.abs(x) + 0.3)
        return x.astype(np.float32)


def T(v):
    return torch.as_tensor(np.asarray(v), dtype=torch.float64)


S4, B4 = RNG.standard_normal(4).astype(np.float32), RNG.standard_normal(4).astype(np.float32)
S5 = RNG.standard_normal(5).astype(np.float32)
# per-axis (4 channels) and blocked (pairs along the last axis of 5: 3 blocks) quantisation
Q4, Z4 = np.float32([0.01, 0.02, 0.015, 0.05]), np.uint8([128, 120, 3, 250])
QB = (0.2 + RNG.random((1, 4, 6, 3))).astype(np.float32)
ZB = RNG.integers(-3, 3, (1, 4, 6, 3)).astype(ml_dtypes.int4)


def _blocks(v: np.ndarray) -> np.ndarray:
    """Blocked scales or zero points (1, 4, 6, 3) repeated to the sample's (1, 4, 6, 5)."""
    return np.repeat(v.astype(np.float64), 2, axis=-1)[..., :5]


def _where_computed() -> bytes:
    """``where(x > 0.5, x, c)``: the condition computed by a Greater node."""
    graph = helper.make_graph(
        [
            helper.make_node("Greater", ["x", "h"], ["g"]),
            helper.make_node("Where", ["g", "x", "c"], ["y"], name="the_where"),
        ],
        "where_computed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", *SHAPE])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.float32(0.5), "h"), numpy_helper.from_array(S5, "c")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    return m.SerializeToString()


def _cumsum(x, dim, exclusive=False, reverse=False):
    if reverse:
        x = torch.flip(x, [dim])
    y = torch.cumsum(x, dim)
    if exclusive:
        y = y - x
    return torch.flip(y, [dim]) if reverse else y


def _lp_pool(x, p, k, s, pad):
    xp = F.pad(x.abs() ** p, (pad, pad, pad, pad))
    return (F.avg_pool2d(xp, k, s) * k * k) ** (1 / p)


CASES = {
    "RMSNormalization": Case(
        model("RMSNormalization", {"epsilon": 1e-3}, {"s": S5}, opset=23),
        lambda x: x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-3) * T(S5),
        ort=False,
    ),
    "RMSNormalization_two_axes": Case(
        model("RMSNormalization", {"axis": -2}, {"s": np.float32(2.0)}, opset=23),
        lambda x: x / torch.sqrt((x * x).mean((-2, -1), keepdim=True) + 1e-5) * 2,
        ort=False,
    ),
    "InstanceNormalization": Case(
        model("InstanceNormalization", {"epsilon": 1e-4}, {"s": S4, "b": B4}),
        lambda x: F.instance_norm(x, weight=T(S4), bias=T(B4), eps=1e-4),
    ),
    "GroupNormalization": Case(
        model("GroupNormalization", {"num_groups": 2}, {"s": S4, "b": B4}, opset=21),
        lambda x: F.group_norm(x, 2, T(S4), T(B4), 1e-5),
    ),
    "MeanVarianceNormalization": Case(
        model("MeanVarianceNormalization", {"axes": [2, 3]}),
        lambda x: (
            (x - x.mean((2, 3), True)) / (x.var((2, 3), keepdim=True, correction=0).sqrt() + 1e-9)
        ),
    ),
    "LpNormalization_2": Case(
        model("LpNormalization", {"axis": 2}), lambda x: x / torch.linalg.norm(x, 2, 2, True)
    ),
    "LpNormalization_1": Case(
        model("LpNormalization", {"p": 1}), lambda x: x / x.abs().sum(-1, True)
    ),
    "GlobalMaxPool": Case(model("GlobalMaxPool"), lambda x: torch.amax(x, (2, 3), True)),
    "SpaceToDepth": Case(
        model("SpaceToDepth", {"blocksize": 2}, shape=(3, 4, 6)),
        lambda x: (
            F.pixel_unshuffle(x, 2)
            .reshape(len(x), 3, 4, 2, 3)
            .transpose(1, 2)
            .reshape(len(x), 12, 2, 3)
        ),
        shape=(3, 4, 6),
    ),
    "SpaceToDepth_CRD": Case(
        model("SpaceToDepth", {"blocksize": 2, "mode": "CRD"}, shape=(3, 4, 6), opset=24),
        lambda x: F.pixel_unshuffle(x, 2),
        shape=(3, 4, 6),
        ort=False,
    ),
    "Tile": Case(
        model("Tile", inits={"r": np.array([1, 2, 1, 3])}), lambda x: x.repeat(1, 2, 1, 3)
    ),
    "Trilu_upper": Case(model("Trilu", inits={"k": np.array(1)}), lambda x: torch.triu(x, 1)),
    "Trilu_lower": Case(
        model("Trilu", {"upper": 0}, {"k": np.array(-1)}), lambda x: torch.tril(x, -1)
    ),
    "CumSum": Case(model("CumSum", inits={"a": np.array(2)}), lambda x: _cumsum(x, 2)),
    "CumSum_exclusive_reverse": Case(
        model("CumSum", {"exclusive": 1, "reverse": 1}, {"a": np.array(-1)}, shape=(7,)),
        lambda x: _cumsum(x, 1, True, True),
        shape=(7,),
    ),
    "Gather": Case(
        model("Gather", {"axis": 2}, {"i": np.array([[4, 0], [-1, 2]])}),
        lambda x: x[:, :, [[4, 0], [5, 2]]],
    ),
    "Gather_scalar_index": Case(
        model("Gather", {"axis": 1}, {"i": np.array(2)}, shape=(5,)), lambda x: x[:, 2], shape=(5,)
    ),
    "Compress": Case(
        model("Compress", {"axis": 3}, {"c": np.array([True, False, True, True, False])}),
        lambda x: x[..., [0, 2, 3]],
    ),
    "ReduceProd": Case(
        model("ReduceProd", {"keepdims": 0}, {"a": np.array([1, 3])}),
        lambda x: torch.prod(torch.prod(x, 3), 1),
        nonzero=True,
    ),
    "LpPool": Case(
        model("LpPool", {"kernel_shape": [2, 2], "strides": [2, 1], "pads": [1, 1, 1, 1], "p": 3}),
        lambda x: _lp_pool(x, 3, 2, (2, 1), 1),
    ),
    "Upsample": Case(
        model(
            "Upsample", inputs=["x", "s"], inits={"s": np.array([1, 1, 2, 3], np.float32)}, opset=9
        ),
        lambda x: x.repeat_interleave(2, 2).repeat_interleave(3, 3),
    ),
    "CastLike_float": Case(
        model("CastLike", inits={"like": np.zeros(1, np.float32)}, opset=19), lambda x: x * 1
    ),
    "Cast_float": Case(model("Cast", {"to": TensorProto.FLOAT}), lambda x: x * 1),
    "Cast_float16": Case(
        model("Cast", {"to": TensorProto.FLOAT16}, out=TensorProto.FLOAT16),
        lambda x: x.to(torch.float16).to(x.dtype),
    ),
    "Cast_bfloat16": Case(
        model("Cast", {"to": TensorProto.BFLOAT16}, out=TensorProto.BFLOAT16),
        lambda x: x.to(torch.bfloat16).to(x.dtype),
        ort=False,  # onnxruntime's outputs of bfloat16 do not reach numpy
    ),
    "Cast_float8e4m3fn": Case(
        model("Cast", {"to": TensorProto.FLOAT8E4M3FN}, out=TensorProto.FLOAT8E4M3FN),
        lambda x: x.clamp(-448, 448).to(torch.float8_e4m3fn).to(x.dtype),
        ort=False,
    ),
    "CastLike_float8e5m2": Case(
        model(
            "CastLike",
            inits={"like": np.zeros(1, ml_dtypes.float8_e5m2)},
            opset=19,
            out=TensorProto.FLOAT8E5M2,
        ),
        lambda x: x.clamp(-57344, 57344).to(torch.float8_e5m2).to(x.dtype),
        ort=False,
    ),
    "Equal": Case(
        model("Equal", inputs=["x", "x"], out=TensorProto.BOOL),
        lambda x: (x == x).to(x.dtype) + 0 * x.sum(),
    ),
    "Cast_to_bool": Case(
        model("Cast", {"to": TensorProto.BOOL}, out=TensorProto.BOOL),
        lambda x: (x != 0).to(x.dtype) + 0 * x.sum(),
    ),
    "Unsqueeze": Case(
        model("Unsqueeze", inits={"a": np.array([-1, 2])}), lambda x: x[:, :, None, :, :, None]
    ),
    "Unsqueeze_opset11": Case(model("Unsqueeze", {"axes": [1]}, opset=11), lambda x: x[:, None]),
    "Squeeze": Case(
        model("Squeeze", inits={"a": np.array([-2])}, shape=(4, 1, 5)),
        lambda x: x[:, :, 0],
        shape=(4, 1, 5),
    ),
    "Where_computed_condition": Case(_where_computed(), lambda x: torch.where(x > 0.5, x, T(S5))),
    "QuantizeLinear": Case(
        model(
            "QuantizeLinear",
            inits={"s": np.float32(0.02), "z": np.int8(3)},
            out=TensorProto.INT8,
        ),
        lambda x: torch.clamp(torch.round(x / 0.02) + 3, -128, 127) + 0 * x.sum(),
    ),
    "QuantizeLinear_per_axis_uint8": Case(
        model("QuantizeLinear", inits={"s": Q4, "z": Z4}, out=TensorProto.UINT8),
        lambda x: (
            torch.clamp(torch.round(x / T(Q4)[:, None, None]) + T(Z4)[:, None, None], 0, 255)
            + 0 * x.sum()
        ),
    ),
    "QuantizeLinear_blocked_int4": Case(
        model(
            "QuantizeLinear",
            {"axis": -1, "block_size": 2},
            inits={"s": QB, "z": ZB},
            opset=21,
            out=TensorProto.INT4,
        ),
        lambda x: (
            torch.clamp(torch.round(x / T(_blocks(QB))) + T(_blocks(ZB)), -8, 7) + 0 * x.sum()
        ),
        ort=False,  # no int4 QuantizeLinear kernel
    ),
    "QuantizeLinear_int16": Case(
        model(
            "QuantizeLinear",
            inits={"s": np.float32(1e-3), "z": np.int16(-7)},
            opset=21,
            out=TensorProto.INT16,
        ),
        lambda x: torch.clamp(torch.round(x / 1e-3) - 7, -32768, 32767) + 0 * x.sum(),
    ),
    "QuantizeLinear_float8e4m3fn": Case(
        model(
            "QuantizeLinear",
            inits={"s": np.float32(0.004), "z": np.zeros((), ml_dtypes.float8_e4m3fn)},
            opset=19,
            out=TensorProto.FLOAT8E4M3FN,
        ),
        lambda x: (x / 0.004).clamp(-448, 448).to(torch.float8_e4m3fn).to(x.dtype),
        ort=False,
    ),
    "DequantizeLinear_blocked": Case(
        model(
            "DequantizeLinear",
            {"axis": -1, "block_size": 2},
            inits={"s": QB, "z": ZB.astype(np.float32)},
            opset=21,
        ),
        lambda x: (x - T(_blocks(ZB))) * T(_blocks(QB)),
        ort=False,  # onnxruntime's takes integer inputs only
    ),
}
IDS = sorted(CASES)


def _ids(cases):
    return pytest.mark.parametrize("case", cases, ids=cases)


def _ort(data: bytes, X: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    (out,) = sess.run(None, {"x": X})
    return np.asarray(out, dtype=np.float32)


@_ids([c for c in IDS if CASES[c].ort])
def test_operator_matches_onnxruntime(case):
    """Outputs equal onnxruntime's within 1e-4 relative (fp32, composed of several layers)."""
    c = CASES[case]
    X = c.inputs()
    want = _ort(c.data, X).reshape(len(X), -1)
    got = xai.from_onnx(c.data).predict(X)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


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
    np.testing.assert_allclose(out.reshape(yt.shape), yt.detach().numpy(), rtol=1e-6, atol=1e-8)
    (want,) = torch.autograd.grad(yt, xt, torch.tensor(seed.reshape(yt.shape)))
    np.testing.assert_allclose(gX, want.numpy(), rtol=1e-6, atol=1e-8)


@_ids(IDS)
def test_operator_saves_and_loads(case, tmp_path):
    """The imported network saves as weights + JSON and loads to the same outputs."""
    c = CASES[case]
    net = xai.from_onnx(c.data)
    net.save(tmp_path / "m.npz")
    X = c.inputs()
    np.testing.assert_array_equal(xai.load_model(tmp_path / "m.npz").predict(X), net.predict(X))


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (model("Tile", inits={"r": np.array([2, 1, 1, 1])}), "1 on the batch axis"),
        (model("Compress", inits={"c": np.array([True])}), "mixes the batch's samples"),
        (model("Cast", {"to": TensorProto.INT32}), "not supported"),
        (model("Cast", {"to": TensorProto.FLOAT8E8M0}), "float8_e8m0fnu is not supported"),
        (model("MeanVarianceNormalization"), "the batch axis cannot be touched"),
        (model("CumSum", inits={"a": np.array(0)}), "the batch axis cannot be touched"),
        (model("Unsqueeze", inits={"a": np.array([0])}), "before the batch axis"),
        (model("Squeeze", inits={"a": np.array([0])}), "squeeze the batch axis"),
        (
            model("Add", inits={"m": np.array([0.0, -np.inf, 0.0, 0.0, 0.0], np.float32)}),
            "NaN or infinite values",
        ),
        (
            model("QuantizeLinear", inits={"s": np.float32([0.1, 0.2])}, out=TensorProto.UINT8),
            r"scale of shape \(2,\) along axis 1 of size 4",
        ),
        (
            model(
                "QuantizeLinear",
                {"axis": 1, "block_size": 2},
                inits={"s": np.ones((3, 2, 6, 5), np.float32)},
                opset=21,
                out=TensorProto.UINT8,
            ),
            r"first axis must be 1 or the batch size \(not fixed\)",
        ),
        (
            model(
                "QuantizeLinear",
                {"axis": 1, "block_size": 2, "output_dtype": TensorProto.INT8},
                inits={"s": np.float32(0.1), "z": np.uint8(0)},
                opset=21,
                out=TensorProto.INT8,
            ),
            "output_dtype int8 and a zero point of type uint8 disagree",
        ),
        (
            model("QuantizeLinear", inits={"s": np.float32(0.1), "z": np.float16(0)}),
            "an output of type float16",
        ),
    ],
    ids=[
        "tile_batch",
        "compress_flat",
        "cast_to_int",
        "cast_to_e8m0",
        "mvn_default_axes",
        "cumsum_batch",
        "unsqueeze_batch",
        "squeeze_batch",
        "infinite_constant",
        "quantize_axis_size",
        "quantize_blocks_open_batch",
        "quantize_output_dtype_mismatch",
        "quantize_to_float16",
    ],
)
def test_refusals_name_the_limit(data, words):
    """What the converters cannot compute is refused up front, naming the node."""
    with pytest.raises(CapabilityError, match=words):
        xai.from_onnx(data)


@pytest.mark.parametrize("saturate", [1, 0])
def test_float8_cast_saturates_as_onnx_says_and_clips_its_gradient(saturate):
    """Out of float8_e4m3fn's range (448), a saturating cast gives +-448 and no gradient (as
    torch's clamp then cast); a non-saturating one gives NaN, as onnx's reference does."""
    from onnx.reference import ReferenceEvaluator

    data = model("Cast", {"to": TensorProto.FLOAT8E4M3FN, "saturate": saturate}, opset=19)
    net = xai.from_onnx(data)
    X = RNG.standard_normal((2, *SHAPE)) * 300
    X[0, 0, 0, :3] = [1000.0, -1000.0, 447.0]
    backend = xai.get_backend("cpu", dtype="float64")
    record = Record()
    out = net.forward(X, backend, record=record)
    (want,) = ReferenceEvaluator(data).run(None, {"x": X.astype(np.float32)})
    np.testing.assert_array_equal(out.reshape(X.shape), want.astype(np.float64))
    if saturate:
        seed = RNG.standard_normal(out.shape)
        gX, _ = net.vjp(seed, backend, record, param_grads=False)
        xt = torch.tensor(X, requires_grad=True)
        yt = xt.clamp(-448, 448).to(torch.float8_e4m3fn).to(xt.dtype)
        (g,) = torch.autograd.grad(yt, xt, torch.tensor(seed.reshape(X.shape)))
        np.testing.assert_array_equal(gX, g.numpy())


def test_layer_norm_mean_and_inv_std_outputs_match_onnxruntime_and_torch():
    """LayerNormalization's three outputs equal onnxruntime's; InvStdDev's gradient torch's."""
    import onnxruntime as ort

    node = helper.make_node(
        "LayerNormalization", ["x", "s", "b"], ["y", "m", "r"], axis=-2, epsilon=1e-3
    )
    s = RNG.standard_normal((6, 5)).astype(np.float32)
    bias = RNG.standard_normal((6, 5)).astype(np.float32)
    graph = helper.make_graph(
        [node],
        "ln3",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", *SHAPE])],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, None) for k in "ymr"],
        [numpy_helper.from_array(s, "s"), numpy_helper.from_array(bias, "b")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    data = m.SerializeToString()
    X = RNG.standard_normal((3, *SHAPE)).astype(np.float32)
    net = xai.from_onnx(data)
    got = net.predict_outputs(X)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": X})
    for name, w in zip(net.outputs, want, strict=True):
        np.testing.assert_allclose(got[name], w, rtol=1e-4, atol=1e-5)
    inv = xai.from_onnx(data, dtype="float64").with_output(2)
    backend = xai.get_backend("cpu", dtype="float64")
    record = Record()
    X64 = X.astype(np.float64)
    out = inv.forward(X64, backend, record=record)
    seed = RNG.standard_normal(out.shape)
    gX, _ = inv.vjp(seed, backend, record, param_grads=False)
    xt = torch.tensor(X64, requires_grad=True)
    var = xt.var((2, 3), keepdim=True, correction=0)
    yt = 1 / torch.sqrt(var + 1e-3)
    (g,) = torch.autograd.grad(yt, xt, torch.tensor(seed.reshape(yt.shape)))
    np.testing.assert_allclose(gX, g.numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize(
    ("p", "norm"),
    [(2, lambda x: torch.linalg.vector_norm(x, 2, -1, True)), (1, lambda x: x.abs().sum(-1, True))],
)
def test_lp_normalization_of_an_all_zero_row_is_zero_as_onnxruntime_and_reference(p, norm):
    """A slice whose norm is 0 gives 0 (onnxruntime, the ONNX reference), not NaN; the
    gradient equals torch's of ``x / (norm + (norm == 0))`` and is finite."""
    from onnx.reference import ReferenceEvaluator

    data = model("LpNormalization", {"p": p})
    X = RNG.standard_normal((3, *SHAPE)).astype(np.float32)
    X[0, 2, :] = 0.0
    X[2, :, :] = 0.0
    got = xai.from_onnx(data).predict(X).reshape(X.shape)
    (ref,) = ReferenceEvaluator(data).run(None, {"x": X})
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, _ort(data, X).reshape(X.shape), rtol=1e-5, atol=1e-6)
    # the reference's p=1 sums x, not |x| (onnxruntime sums |x|): it is the oracle of the
    # zero slices there, and of every value for p=2
    np.testing.assert_array_equal(ref[0, 2], 0.0)
    np.testing.assert_array_equal(ref[2], 0.0)
    np.testing.assert_array_equal(got[0, 2], 0.0)
    np.testing.assert_array_equal(got[2], 0.0)
    if p == 2:
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)

    net = xai.from_onnx(data)
    backend = xai.get_backend("cpu", dtype="float64")
    record = Record()
    X64 = X.astype(np.float64)
    out = net.forward(X64, backend, record=record)
    seed = RNG.standard_normal(out.shape)
    gX, _ = net.vjp(seed, backend, record, param_grads=False)
    xt = torch.tensor(X64, requires_grad=True)
    n = norm(xt)
    yt = xt / (n + (n == 0).to(n.dtype))
    (want,) = torch.autograd.grad(yt, xt, torch.tensor(seed.reshape(yt.shape)))
    assert np.isfinite(gX).all()
    np.testing.assert_allclose(gX, want.numpy(), rtol=1e-6, atol=1e-8)
