"""ONNX's ``Attention`` (opset 23) composed of native layers: onnxruntime's values, the
gradients of torch's ``scaled_dot_product_attention`` with respect to Q, K and V."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

import xai_core as xai
from tests.importers.conftest import input_gradient
from xai_core.errors import CapabilityError

RNG = np.random.default_rng(23)
B, S, D = 3, 5, 4


def model(shapes, attrs=None, mask=None, outputs=("y",)) -> bytes:
    """``Attention(q, k, v[, mask])`` of inputs of per-sample ``shapes`` (batch open)."""
    inputs = ["q", "k", "v", *(["mask"] if mask is not None else [])]
    graph = helper.make_graph(
        [helper.make_node("Attention", inputs, list(outputs), name="attention", **(attrs or {}))],
        "attention",
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, ["n", *s])
            for n, s in zip("qkv", shapes)
        ],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs if o],
        [] if mask is None else [numpy_helper.from_array(mask, "mask")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    m.ir_version = 10
    return m.SerializeToString()


CAUSAL_ROWS = np.tril(np.ones((S, S), bool))
CASES = {  # shapes, attributes, constant mask; torch's call on 4-D q, k, v
    "4d": (((2, S, D),) * 3, {}, None, {}),
    "4d_causal_scaled": (((2, S, D),) * 3, {"is_causal": 1, "scale": 0.25}, None, {"is_causal": True, "scale": 0.25}),
    "4d_bool_mask": (((2, S, D),) * 3, {}, ~np.eye(S, dtype=bool), {"attn_mask": torch.tensor(~np.eye(S, dtype=bool))}),
    "4d_float_mask": (
        ((2, S, D),) * 3, {}, RNG.standard_normal((2, S, S)).astype(np.float32), {"float_mask": True},
    ),
    "4d_gqa": (((4, S, D), (2, S, D), (2, S, 3)), {}, None, {"enable_gqa": True}),
    "3d_heads": (((S, 2 * D), (S, 2 * D), (S, 2 * 3)), {"q_num_heads": 2, "kv_num_heads": 2}, None, {}),
    "3d_gqa_causal": (
        ((S, 4 * D), (S, 2 * D), (S, 2 * D)), {"q_num_heads": 4, "kv_num_heads": 2, "is_causal": 1},
        None, {"enable_gqa": True, "is_causal": True},
    ),
    "4d_row_masked_out": (((2, S, D),) * 3, {}, np.vstack([np.zeros((1, S), bool), CAUSAL_ROWS[1:]]), {"row0_zero": True}),
}  # fmt: skip


def _feeds(shapes, n=B, dtype=np.float32):
    return {k: RNG.standard_normal((n, *s)).astype(dtype) for k, s in zip("qkv", shapes)}


def _four_d(x, shape, heads):
    """A 3-D (n, seq, heads * size) tensor as 4-D (n, heads, seq, size), as ONNX reads it."""
    if len(shape) == 3:
        return x
    n, seq, hidden = x.shape
    return x.reshape(n, seq, heads, hidden // heads).transpose(1, 2)


def _torch(case, t):
    shapes, attrs, mask, call = CASES[case]
    hq, hk = attrs.get("q_num_heads"), attrs.get("kv_num_heads")
    q, k, v = (_four_d(t[n], s, h) for n, s, h in zip("qkv", shapes, (hq, hk, hk)))
    call = dict(call)
    if call.pop("float_mask", False):
        call["attn_mask"] = torch.tensor(mask, dtype=q.dtype)
    zero_row = call.pop("row0_zero", False)
    if zero_row:  # torch gives NaN for a query attending nothing; ONNX gives zeros
        call["attn_mask"] = torch.tensor(np.vstack([np.ones((1, S), bool), mask[1:]]))
    y = F.scaled_dot_product_attention(q, k, v, **call)
    if zero_row:
        y = torch.cat([torch.zeros_like(y[:, :, :1]), y[:, :, 1:]], dim=2)
    if len(shapes[0]) == 2:
        y = y.transpose(1, 2).reshape(y.shape[0], S, -1)
    return y


@pytest.mark.parametrize("case", sorted(CASES))
def test_attention_equals_onnxruntime(case):
    """Values equal onnxruntime's Attention kernel (float32)."""
    import onnxruntime as ort

    shapes, attrs, mask, _ = CASES[case]
    data = model(shapes, attrs, mask)
    feeds = _feeds(shapes)
    (want,) = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = xai.from_onnx(data).predict_outputs(feeds)
    np.testing.assert_allclose(next(iter(got.values())), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", sorted(CASES))
def test_attention_gradients_equal_torch_sdpa(case):
    """Values and the gradients with respect to Q, K and V equal torch autograd's through
    ``scaled_dot_product_attention`` (float64), one input at a time, the others fixed."""
    shapes, attrs, mask, _ = CASES[case]
    net = xai.from_onnx(model(shapes, attrs, mask), dtype="float64")
    feeds = _feeds(shapes, dtype=np.float64)
    t = {k: torch.tensor(v, requires_grad=True) for k, v in feeds.items()}
    y = _torch(case, t)
    backend = xai.get_backend("cpu", dtype="float64")
    got = net.predict_outputs(feeds, backend)[net.outputs[0]]
    np.testing.assert_allclose(got, y.detach().numpy(), rtol=1e-10, atol=1e-12)
    seed = RNG.standard_normal(y.shape)
    wants = torch.autograd.grad(y, [t[k] for k in "qkv"], torch.tensor(seed))
    for name, want in zip("qkv", wants, strict=True):
        got = input_gradient(net, feeds, name, seed, backend)
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-9, atol=1e-12)


def test_attention_products_are_gemms_on_the_tpu():
    """Both products of every head run on the systolic array and are counted."""
    shapes = ((2, S, D),) * 3
    net = xai.from_onnx(model(shapes))
    tpu = xai.get_backend("tpu")
    tpu.reset_counters()
    cpu = net.predict_outputs(_feeds(shapes))[net.outputs[0]]
    out = net.predict_outputs(_feeds(shapes), tpu)[net.outputs[0]]
    assert out.shape == cpu.shape
    # Q K^T and the weights times V: S*S*D multiply-adds each, per head and row
    assert tpu.counters["macs"] == B * 2 * 2 * S * S * D and tpu.counters["matmuls"] >= 2


@pytest.mark.parametrize(
    ("inputs", "outputs", "words"),
    [
        (["q", "k", "v", "", "", "", "lens"], ("y",), "nonpad_kv_seqlen"),
        (["q", "k", "v", "", "pk"], ("y",), "past_key and past_value come together"),
        (
            ["q", "k", "v", "q"],
            ("y",),
            r"attn_mask computed at run time of shape \(batch, \*\(2, 5, 4\)\)",
        ),
    ],
    ids=["external-cache", "half-a-cache", "computed-mask"],
)
def test_what_is_not_built_is_refused_naming_it(inputs, outputs, words):
    """What is not built (an external cache, half a cache, a computed mask of another
    shape) is refused naming it, before anything is built."""
    shapes = [(2, S, D)] * 3
    names = [i for i in inputs if i and i not in "qkv"]
    graph = helper.make_graph(
        [helper.make_node("Attention", inputs, list(outputs), name="attention")],
        "attention",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["n", *s]) for n, s in zip("qkv", shapes)],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs if o],
        [numpy_helper.from_array(np.zeros((1, 2, 1, D), np.float32), n) for n in names],
    )  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])
    m.ir_version = 10
    with pytest.raises(CapabilityError, match=words):
        xai.from_onnx(m.SerializeToString())


def test_a_cache_leads_the_keys_and_every_output_equals_onnxruntime():
    """past_key and past_value (computed) lead K and V: Y, present_key, present_value and
    the softmax weights (qk_matmul_output_mode 3) equal onnxruntime's, causal from the
    queries' positions after the cache."""
    import onnxruntime as ort

    past = 3
    inputs = ["q", "k", "v", "", "pk", "pv"]
    shapes = {
        "q": (2, S, D),
        "k": (2, S, D),
        "v": (2, S, D),
        "pk": (2, past, D),
        "pv": (2, past, D),
    }
    outs = ["y", "present_k", "present_v", "weights"]
    graph = helper.make_graph(
        [helper.make_node("Attention", inputs, outs, is_causal=1, qk_matmul_output_mode=3)],
        "cached",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["n", *s]) for n, s in shapes.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
    )  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    m.ir_version = 10
    data = m.SerializeToString()
    feeds = {n: RNG.standard_normal((B, *s)).astype(np.float32) for n, s in shapes.items()}
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    net = xai.from_onnx(data)
    got = net.predict_outputs(feeds)
    assert len(net.outputs) == 4
    for name, w in zip(net.outputs, want, strict=True):
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-6)


def _run_time_mask_model(boolean: bool, mode: int, softcap: float) -> bytes:
    """Attention whose mask is computed from an input ``m`` (batch, 2, S, S): ``m > 0``
    (booleans) or ``m`` itself (floats), every output read, the fourth in ``mode``."""
    nodes = []
    mask = "m"
    if boolean:
        nodes.append(helper.make_node("Greater", ["m", "zero"], ["keep"]))
        mask = "keep"
    outs = ["y", "pk", "pv", "qk"]
    nodes.append(
        helper.make_node(
            "Attention", ["q", "k", "v", mask], outs, qk_matmul_output_mode=mode, softcap=softcap
        )
    )
    shapes = {"q": (2, S, D), "k": (2, S, D), "v": (2, S, D), "m": (2, S, S)}
    graph = helper.make_graph(
        nodes,
        "run_time_mask",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["n", *s]) for n, s in shapes.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
        [numpy_helper.from_array(np.float32(0), "zero")],
    )  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    m.ir_version = 10
    return m.SerializeToString()


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("boolean", [False, True], ids=["float", "bool"])
def test_a_mask_computed_at_run_time_equals_onnx_reference_in_every_output(boolean, mode):
    """A mask computed at run time (floats added; booleans from a comparison, True
    attending) with a softcap: Y and qk_matmul_output in each mode equal onnx's reference
    (every query keeps its diagonal key, so none attends nothing)."""
    from onnx.reference import ReferenceEvaluator

    data = _run_time_mask_model(boolean, mode, softcap=2.0)
    if boolean and mode == 2:  # its masked scores are -inf, which a network holds no more
        with pytest.raises(CapabilityError, match="mode 2 of a masked score is -inf"):
            xai.from_onnx(data)
        return
    feeds = _feeds(((2, S, D),) * 3) | {"m": RNG.standard_normal((B, 2, S, S)).astype(np.float32)}
    feeds["m"][:, :, np.arange(S), np.arange(S)] = 1.0
    want = ReferenceEvaluator(data).run(None, feeds)
    net = xai.from_onnx(data)
    got = net.predict_outputs(feeds)
    for name, w in zip(net.outputs, want, strict=True):
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-6)


def test_window_sizes_below_minus_one_are_refused():
    data = model(((2, S, D),) * 3, {"is_causal": 1, "left_window_size": -2})
    with pytest.raises(CapabilityError, match="window sizes -2"):
        xai.from_onnx(data)
