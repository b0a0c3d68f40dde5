"""What transformer exports need: the batch axis moved or merged (views), batch constants,
mask arithmetic, Gather of activations, the NaN guard. Values against onnxruntime,
gradients against torch autograd, the TPU's counts of attention's products."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

import xai_core as xai
from xai_core import nn
from xai_core.errors import CapabilityError

from .conftest import ort_run

RNG = np.random.default_rng(7)


def i64(*values):
    return np.array(values, dtype=np.int64)


def model(nodes, shape, inits=None, opset=17):
    """A model reading ``x`` of per-sample ``shape`` (batch dynamic), writing ``y``."""
    graph = helper.make_graph(
        nodes,
        "attention_ops",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", *shape])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=f"{op.lower()}_{outs[0]}", **attrs)


def batch_size(out="bs"):
    """Nodes computing ``out``: the batch size as a 1-D tensor (Shape -> Gather -> Unsqueeze)."""
    return [
        node("Shape", ["x"], [f"{out}_shape"]),
        node("Gather", [f"{out}_shape", "zero"], [f"{out}_scalar"], axis=0),
        node("Unsqueeze", [f"{out}_scalar", "axis0"], [out]),
    ]


BS = {"zero": np.array(0, dtype=np.int64), "axis0": i64(0)}

# -- the cases: (ONNX model, per-sample shape, the same function in torch) -------------------
W_QKV = (RNG.standard_normal((4, 12)) * 0.5).astype(np.float32)
BIAS = (RNG.standard_normal((1, 2, 1, 3)) * 0.5).astype(np.float32)
TOKEN = RNG.standard_normal((1, 1, 4)).astype(np.float32)


def _unbind_attention(x):
    """timm's attention: qkv reshaped to (B, N, 3, h, d), permuted to (3, B, h, N, d), unbound."""
    n = len(x)
    q, k, v = (
        (x @ torch.as_tensor(W_QKV, dtype=x.dtype)).reshape(n, 5, 3, 2, 2).permute(2, 0, 3, 1, 4)
    )
    p = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
    return (p @ v).transpose(1, 2).reshape(n, 5, 4)


def _merged_heads(x):
    """torch's multi-head attention inside: (seq, B * heads, d)."""
    n = len(x)
    t = x.transpose(0, 1).reshape(5, n * 2, 2).transpose(0, 1)
    p = torch.softmax(t @ t.transpose(1, 2), dim=-1)
    out = (p @ t).transpose(0, 1).reshape(5, n, 4)
    return out.transpose(0, 1)


def _windows(x):
    """Swin's window partition (B * windows, ws, ws, c), a bias, softmax, window reverse."""
    n = len(x)
    w = x.reshape(n, 2, 2, 2, 2, 3).permute(0, 1, 3, 2, 4, 5).reshape(-1, 2, 2, 3)
    w = w.reshape(-1, 4, 3) + torch.as_tensor(BIAS[0, 0], dtype=x.dtype)
    w = torch.softmax(w.reshape(-1, 2, 4, 3) + torch.as_tensor(BIAS[0], dtype=x.dtype), -1)
    w = w.reshape(-1, 2, 2, 2, 2, 3).permute(0, 1, 3, 2, 4, 5)
    return w.reshape(n, 4, 4, 3)


def _windows_normalized(x):
    """Swin v2's cosine attention inside: each window token L2-normalised (``F.normalize``),
    scaled by its window's mean over an axis, on the (B * windows, ws, ws, c) view."""
    n = len(x)
    w = x.reshape(n, 2, 2, 2, 2, 3).permute(0, 1, 3, 2, 4, 5).reshape(-1, 2, 2, 3)
    w = w / w.norm(dim=-1, keepdim=True).clamp_min(1e-12) * w.mean(-2, keepdim=True)
    w = w.reshape(-1, 2, 2, 2, 2, 3).permute(0, 1, 3, 2, 4, 5)
    return w.reshape(n, 4, 4, 3)


CASES = {
    "Gather_activation_class_token": (
        model([node("Gather", ["x", "i"], ["y"], axis=1)], (5, 4), {"i": i64(0)[0]}),
        (5, 4),
        lambda x: x[:, 0],
    ),
    "Gather_activation_repeated_negative": (
        model(
            [node("Gather", ["x", "i"], ["y"], axis=2)],
            (3, 4, 5),
            {"i": i64(2, -1, 2, 0).reshape(2, 2)},
        ),
        (3, 4, 5),
        lambda x: x[:, :, [[2, 3], [2, 0]]],
    ),
    "views_unbind_attention": (
        model(
            [
                node("MatMul", ["x", "w"], ["qkv"]),
                node("Reshape", ["qkv", "split_shape"], ["heads"]),
                node("Transpose", ["heads"], ["moved"], perm=[2, 0, 3, 1, 4]),
                node("Split", ["moved", "ones"], ["q3", "k3", "v3"], axis=0),
                node("Squeeze", ["q3", "axis0"], ["q"]),
                node("Squeeze", ["k3", "axis0"], ["k"]),
                node("Squeeze", ["v3", "axis0"], ["v"]),
                node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
                node("MatMul", ["q", "kt"], ["s"]),
                node("Softmax", ["s"], ["p"], axis=-1),
                node("MatMul", ["p", "v"], ["o"]),
                node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
                node("Reshape", ["ot", "out_shape"], ["y"]),
            ],
            (5, 4),
            {
                "w": W_QKV,
                "split_shape": i64(0, 5, 3, 2, 2),
                "ones": i64(1, 1, 1),
                "axis0": i64(0),
                "out_shape": i64(0, 5, 4),
            },
        ),
        (5, 4),
        _unbind_attention,
    ),
    "views_merged_heads": (
        model(
            [
                *batch_size(),
                node("Mul", ["bs", "two"], ["bs_heads"]),
                node("Concat", ["five", "bs_heads", "two"], ["merged_shape"], axis=0),
                node("Concat", ["five", "bs", "four"], ["seq_shape"], axis=0),
                node("Transpose", ["x"], ["seq_first"], perm=[1, 0, 2]),
                node("Reshape", ["seq_first", "merged_shape"], ["merged"]),
                node("Transpose", ["merged"], ["t"], perm=[1, 0, 2]),
                node("Transpose", ["t"], ["tt"], perm=[0, 2, 1]),
                node("MatMul", ["t", "tt"], ["s"]),
                node("Softmax", ["s"], ["p"], axis=-1),
                node("MatMul", ["p", "t"], ["o"]),
                node("Transpose", ["o"], ["o_seq"], perm=[1, 0, 2]),
                node("Reshape", ["o_seq", "seq_shape"], ["o_back"]),
                node("Transpose", ["o_back"], ["y"], perm=[1, 0, 2]),
            ],
            (5, 4),
            {**BS, "two": i64(2), "five": i64(5), "four": i64(4)},
        ),
        (5, 4),
        _merged_heads,
    ),
    "views_windows": (
        model(
            [
                node("Reshape", ["x", "blocks"], ["b6"]),
                node("Transpose", ["b6"], ["bt"], perm=[0, 1, 3, 2, 4, 5]),
                node("Reshape", ["bt", "windows"], ["win"]),
                node("Reshape", ["win", "tokens"], ["tok"]),
                node("Add", ["tok", "bias_tokens"], ["tb"]),
                node("Reshape", ["tb", "per_image"], ["pi"]),
                node("Add", ["pi", "bias"], ["pb"]),
                node("Softmax", ["pb"], ["sm"], axis=-1),
                node("Reshape", ["sm", "blocks_back"], ["bb"]),
                node("Transpose", ["bb"], ["bbt"], perm=[0, 1, 3, 2, 4, 5]),
                node("Reshape", ["bbt", "image"], ["y"]),
            ],
            (4, 4, 3),
            {
                "blocks": i64(0, 2, 2, 2, 2, 3),
                "windows": i64(-1, 2, 2, 3),
                "tokens": i64(-1, 4, 3),
                "bias_tokens": BIAS[0, 0],
                "per_image": i64(-1, 2, 4, 3),
                "bias": BIAS,
                "blocks_back": i64(-1, 2, 2, 2, 2, 3),
                "image": i64(-1, 4, 4, 3),
            },
        ),
        (4, 4, 3),
        _windows,
    ),
    "views_windows_normalized": (
        model(
            [
                node("Reshape", ["x", "blocks"], ["b6"]),
                node("Transpose", ["b6"], ["bt"], perm=[0, 1, 3, 2, 4, 5]),
                node("Reshape", ["bt", "windows"], ["win"]),
                node("ReduceL2", ["win"], ["norm"], axes=[-1], keepdims=1),
                node("Clip", ["norm", "eps"], ["clipped"]),
                node("Shape", ["win"], ["win_shape"]),
                node("Expand", ["clipped", "win_shape"], ["norms"]),
                node("Div", ["win", "norms"], ["unit"]),
                node("ReduceMean", ["win"], ["mean"], axes=[2], keepdims=1),
                node("Mul", ["unit", "mean"], ["scaled"]),
                node("Reshape", ["scaled", "blocks_back"], ["bb"]),
                node("Transpose", ["bb"], ["bbt"], perm=[0, 1, 3, 2, 4, 5]),
                node("Reshape", ["bbt", "image"], ["y"]),
            ],
            (4, 4, 3),
            {
                "blocks": i64(0, 2, 2, 2, 2, 3),
                "windows": i64(-1, 2, 2, 3),
                "eps": np.array(1e-12, dtype=np.float32),
                "blocks_back": i64(-1, 2, 2, 2, 2, 3),
                "image": i64(-1, 4, 4, 3),
            },
        ),
        (4, 4, 3),
        _windows_normalized,
    ),
    "batch_constant_class_token": (
        model(
            [
                *batch_size(),
                node("Concat", ["bs", "one", "minus_one"], ["tgt"], axis=0),
                node("Expand", ["token", "tgt"], ["tokens"]),
                node("Concat", ["tokens", "x"], ["joined"], axis=1),
                node("Shape", ["tokens"], ["tshape"]),
                node("Expand", ["pos", "tshape"], ["pos_b"]),
                node("Add", ["joined", "pos_b"], ["y"]),
            ],
            (5, 4),
            {**BS, "token": TOKEN, "one": i64(1), "minus_one": i64(4), "pos": TOKEN * 0.5},
        ),
        (5, 4),
        lambda x: (
            torch.cat([torch.as_tensor(TOKEN, dtype=x.dtype).expand(len(x), -1, -1), x], 1)
            + torch.as_tensor(np.concatenate([TOKEN, *[TOKEN * 0.5] * 5], 1), dtype=x.dtype)
        ),
    ),
    "nan_guard_after_softmax": (
        model(
            [
                node("Softmax", ["x"], ["p"], axis=-1),
                node("IsNaN", ["p"], ["bad"]),
                node("Where", ["bad", "zero_f", "p"], ["y"]),
            ],
            (3, 4),
            {"zero_f": np.float32(0.0)},
        ),
        (3, 4),
        lambda x: torch.softmax(x, -1),
    ),
}

C1, C2 = (RNG.standard_normal((1, 2, 3)).astype(np.float32) for _ in range(2))
CASES["constants_concatenated_nd"] = (
    model(
        [
            node("Concat", ["c1", "c2"], ["cc"], axis=1),
            node("Add", ["x", "cc"], ["y"]),
        ],
        (4, 3),
        {"c1": C1, "c2": C2},
    ),
    (4, 3),
    lambda x: x + torch.as_tensor(np.concatenate([C1, C2], 1), dtype=x.dtype),
)

MASK = np.array([[1, 1, 0, 1, 1]], dtype=np.int64)
# transformers' mask: the batch index (Range to the batch size) indexes a mask expanded to
# the batch, flattened; comparisons and logic on constants; an additive mask on scores.
MASK_MODEL = model(
    [
        *batch_size(),
        node("Concat", ["bs", "five"], ["mshape"], axis=0),
        node("Expand", ["mask", "mshape"], ["mask_b"]),
        node("Cast", ["bs_scalar"], ["bs_i"], to=TensorProto.INT64),
        node("Range", ["zero", "bs_i", "one"], ["b_idx"]),
        node("Unsqueeze", ["b_idx", "axis1"], ["b_col"]),
        node("Mul", ["b_col", "five"], ["offset"]),
        node("Add", ["offset", "kv"], ["flat_idx"]),
        node("Flatten", ["mask_b"], ["flat_mask"], axis=2),
        node("Gather", ["flat_mask", "flat_idx"], ["picked3"], axis=0),
        node("Squeeze", ["picked3", "axis2"], ["picked"]),
        node("Cast", ["picked"], ["keep"], to=TensorProto.BOOL),
        node("GreaterOrEqual", ["kv", "zero"], ["ge"]),
        node("Less", ["kv", "nine"], ["lt"]),
        node("LessOrEqual", ["kv", "nine"], ["le"]),
        node("Greater", ["nine", "kv"], ["gt"]),
        node("And", ["ge", "lt"], ["in_range"]),
        node("Or", ["le", "gt"], ["either"]),
        node("Xor", ["in_range", "either"], ["neither"]),
        node("Not", ["neither"], ["fine"]),
        node("And", ["keep", "fine"], ["allowed"]),
        node("IsInf", ["inf_f"], ["is_inf"]),
        node("Where", ["is_inf", "neg", "zero_f"], ["big_neg"]),
        node("IsNaN", ["zero_f"], ["never"]),
        node("Where", ["never", "neg", "zero_f"], ["zero_too"]),
        node("Add", ["big_neg", "zero_too"], ["masked_value"]),
        node("Where", ["allowed", "zero_f", "masked_value"], ["additive"]),
        node("GatherElements", ["ids", "pos_ids"], ["picked_ids"], axis=1),
        node("Cast", ["picked_ids"], ["ids_f"], to=TensorProto.FLOAT),
        node("Unsqueeze", ["additive", "axis1"], ["additive3"]),
        node("Add", ["x", "additive3"], ["scores"]),
        node("Softmax", ["scores"], ["probs"], axis=-1),
        node("Unsqueeze", ["ids_f", "axis1"], ["ids3"]),
        node("Mul", ["probs", "ids3"], ["y"]),
    ],
    (3, 5),
    {
        **BS,
        "five": i64(5),
        "mask": MASK,
        "one": i64(1),
        "axis1": i64(1),
        "axis2": i64(2),
        "kv": i64(0, 1, 2, 3, 4).reshape(1, 5),
        "nine": i64(9),
        "inf_f": np.float32(np.inf),
        "neg": np.float32(-1e4),
        "zero_f": np.float32(0.0),
        "ids": np.array([[5, 6, 7, 8, 9]], dtype=np.int64),
        "pos_ids": i64(4, 3, 2, 1, 0).reshape(1, 5),
    },
)


def _mask_torch(x):
    additive = torch.where(torch.as_tensor(MASK[0] != 0), 0.0, -1e4).to(x.dtype)
    ids = torch.tensor([9.0, 8.0, 7.0, 6.0, 5.0], dtype=x.dtype)
    return torch.softmax(x + additive, -1) * ids


CASES["mask_arithmetic_folded"] = (MASK_MODEL, (3, 5), _mask_torch)


def _batch(shape, n=3):
    return RNG.standard_normal((n, *shape)).astype(np.float32)


@pytest.mark.parametrize("case", sorted(CASES), ids=sorted(CASES))
def test_values_match_onnxruntime(case):
    """The imported network's output equals onnxruntime's within 1e-5 relative, in float32."""
    data, shape, _ = CASES[case]
    X = _batch(shape)
    want = ort_run(data, X).reshape(len(X), -1)
    got = xai.from_onnx(data).predict(X)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * np.abs(want).max())


@pytest.mark.parametrize("case", sorted(CASES), ids=sorted(CASES))
def test_gradients_match_torch_autograd(case):
    """``ModelRunner.gradient`` equals torch autograd of the same function (float64 oracle)."""
    data, shape, fn = CASES[case]
    X = _batch(shape, n=4)
    net = xai.from_onnx(data, dtype="float64")
    n_out = net.predict(X[:1]).shape[1]
    target = RNG.integers(0, n_out, len(X))
    got = xai.ModelRunner(net).gradient(X, target)
    x = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    out = fn(x).reshape(len(X), -1)
    assert out.shape[1] == n_out
    out[torch.arange(len(X)), torch.as_tensor(target)].sum().backward()
    want = x.grad.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * (np.abs(want).max() + 1e-30))


@pytest.mark.parametrize("case", sorted(CASES), ids=sorted(CASES))
def test_runs_on_tpu_and_saves(case, tmp_path):
    """On the TPU the output is within bf16's reach of the CPU's; a saved network reloads."""
    data, shape, _ = CASES[case]
    net = xai.from_onnx(data)
    X = _batch(shape)
    cpu = xai.ModelRunner(net, backend="cpu").predict(X)
    tpu = xai.ModelRunner(net, backend="tpu").predict(X)
    np.testing.assert_allclose(tpu, cpu, rtol=0, atol=0.05 * (np.abs(cpu).max() + 1))
    net.save(tmp_path / "m.npz")
    np.testing.assert_array_equal(xai.load_model(tmp_path / "m.npz").predict(X), cpu)


@pytest.mark.parametrize(
    ("case", "shared", "per_sample"),
    [
        # q @ k^T and p @ v: one GEMM per head (2) each per sample; the qkv projection,
        # a weight shared by every sample, one GEMM of all the batch's tokens
        ("views_unbind_attention", 1, 2 + 2),
        # t @ t^T and p @ t: one GEMM per head (2) each
        ("views_merged_heads", 0, 2 + 2),
    ],
)
def test_attention_products_are_gemms_on_the_tpu(case, shared, per_sample):
    """The products of views are counted as GEMMs like any other, forward and backward; a
    product by a weight is one GEMM for the whole batch, whose weight gradient (of a
    constant) is not computed."""
    data, shape, _ = CASES[case]
    net = xai.from_onnx(data)
    X = _batch(shape, n=3)
    runner = xai.ModelRunner(net, backend="tpu")
    runner.predict(X)
    assert runner.counters["matmuls"] == shared + 3 * per_sample
    runner.reset_counters()
    runner.gradient(X, 0)
    # forward, then dA of every product and dB of the products of two activations
    assert runner.counters["matmuls"] == 2 * shared + 3 * per_sample * 3


def test_replace_nan_layer_replaces_only_nan():
    """ReplaceNaN: NaN becomes the value, everything else (inf too) passes; the gradient
    passes where the input is not NaN."""
    layer = nn.ReplaceNaN(0.5)
    x = np.array([[1.0, np.nan, -np.inf, 2.0]], dtype=np.float32)
    np.testing.assert_array_equal(layer.fn(x), [[1.0, 0.5, -np.inf, 2.0]])
    np.testing.assert_array_equal(layer.dfn(np.ones_like(x), x), [[1.0, 0.0, 1.0, 1.0]])


def test_gather_layer_adds_repeated_indices_in_the_gradient():
    """Gather's backward sums the gradient of an index picked twice (torch's index_select)."""
    g = xai.nn.Graph(input_shape=(4, 3))
    g.add(nn.Gather(0, [1, 1, -1]), "input")
    X = _batch((4, 3), n=2)
    x = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    (x[:, [1, 1, 3]] * 1.0).reshape(2, -1)[:, 4].sum().backward()
    np.testing.assert_allclose(xai.ModelRunner(g).gradient(X, 4), x.grad.numpy(), atol=1e-6)


def _gather_elements_model(index: np.ndarray, axis: int, batch) -> bytes:
    """``GatherElements(x, index)`` of an input (batch, 4, 5) of a fixed or open batch."""
    graph = helper.make_graph(
        [node("GatherElements", ["x", "index"], ["y"], axis=axis)],
        "gather_elements",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(index, "index")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize(
    ("axis", "shape"), [(1, (4, 5)), (-1, (4, 7)), (2, (2, 3))], ids=["rows", "repeats", "fewer"]
)
def test_gather_elements_of_a_computed_tensor_equals_onnxruntime_and_torch(axis, shape):
    """Constant indices (negative ones too), the same for every sample, of a computed
    tensor: onnxruntime's values; torch.gather's gradient, repeated picks summed."""
    rng = np.random.default_rng(11)
    a = axis % 3
    one = rng.integers(-(4 if a == 1 else 5), 4 if a == 1 else 5, (1, *shape))
    index = np.repeat(one, 3, axis=0)
    data = _gather_elements_model(index, axis, 3)
    net = xai.from_onnx(data)
    X = _batch((4, 5), n=3)
    np.testing.assert_allclose(net.forward(X, xai.get_backend("cpu")), ort_run(data, X), rtol=1e-6)
    x = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    size = 4 if a == 1 else 5
    want = torch.gather(x, a, torch.tensor(np.where(index < 0, index + size, index)))
    seed = rng.normal(size=want.shape)
    (want * torch.tensor(seed)).sum().backward()
    backend = xai.get_backend("cpu", dtype="float64")
    record = nn.Record()
    net.forward(X.astype(np.float64), backend, record=record)
    gX, _ = net.vjp(seed, backend, record, param_grads=False)
    np.testing.assert_allclose(gX, x.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    ("index", "batch", "fragment"),
    [
        (np.zeros((1, 4, 5), np.int64), "n", "must be the batch size"),
        (np.arange(6).reshape(3, 2, 1) % 4, 3, "the same indices for every sample"),
    ],
    ids=["open-batch", "varying"],
)
def test_gather_elements_indices_that_are_not_per_sample_are_refused(index, batch, fragment):
    with pytest.raises(CapabilityError, match=fragment):
        xai.from_onnx(_gather_elements_model(index, 1, batch))


REFUSALS = [
    (
        "view_read_by_an_argmax",
        model(
            [
                node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
                node("ArgMax", ["t"], ["y"], axis=2, keepdims=1),
            ],
            (3, 4),
        ),
        "its input has the batch axis moved or merged with other axes (by 'transpose_t')",
    ),
    (
        "view_reduced_over_the_batch_axis",
        model(
            [
                node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
                node("ReduceSum", ["t", "axes"], ["y"], keepdims=1),
            ],
            (3, 4),
            {"axes": i64(1)},
        ),
        "axis 1 holds the batch axis (moved by 'transpose_t')",
    ),
    (
        "reshape_mixing_samples",
        model([node("Reshape", ["x", "s"], ["y"])], (6,), {"s": i64(-1, 4)}),
        "mixes the batch axis with others",
    ),
    (
        "softmax_over_the_batch",
        model(
            [
                node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
                node("Softmax", ["t"], ["y"], axis=1),
            ],
            (3, 4),
        ),
        "axis 1 is the batch axis (moved by 'transpose_t')",
    ),
    (
        "range_over_the_batch_from_one",
        model(
            [*batch_size(), node("Range", ["one", "bs_scalar", "one"], ["y"])],
            (3,),
            {**BS, "one": i64(1)[0]},
        ),
        "a range over the batch size must start at 0 with step 1",
    ),
]


@pytest.mark.parametrize(("name", "data", "fragment"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_name_the_node_and_the_reason(name, data, fragment):
    """Each refusal is a CapabilityError naming the node and what was expected."""
    with pytest.raises(CapabilityError, match="node '") as info:
        xai.from_onnx(data)
    assert fragment in str(info.value)
