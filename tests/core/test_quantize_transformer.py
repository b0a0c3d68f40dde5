"""xai.quantize of what transformers need: BATCH_MATMUL, the lowered layer norm (MEAN,
SQUARED_DIFFERENCE, RSQRT, ...), products by constant matrices, division by constants and
PyTorch's exported GELU, each bit-identical with LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest

import xai_core as xai
from xai_core import nn
from xai_core.int8.convert import Builder
from xai_core.int8.graph import TFLiteGraph
from xai_core.testing import litert_reference_outputs

litert = pytest.importorskip(
    "ai_edge_litert.interpreter", reason="the tflite extra is not installed"
)


def _params(rng, positive: bool = False) -> tuple[float, int]:
    """A random int8 scale and zero point (the zero point -128 for a non-negative tensor)."""
    scale = float(np.exp(rng.uniform(np.log(1e-3), np.log(0.5))))
    return scale, -128 if positive else int(rng.integers(-100, 100))


def _run(tmp_path, b: Builder, x: int, out: int, Q: np.ndarray):
    from xai_core.importers.tflite.writer import write_tflite

    graph = TFLiteGraph(tuple(b.tensors), tuple(b.ops), (x,), (out,), "test")
    path = write_tflite(graph, tmp_path / "op.tflite")
    model = xai.from_tflite(path)
    ours = model.run(Q)[model.graph.outputs[0]]
    return ours, litert_reference_outputs(path, Q)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("adj_y", [False, True], ids=["plain", "adj-y"])
def test_batch_matmul_is_litert_bit_for_bit(tmp_path, seed, adj_y):
    """int8 BATCH_MATMUL of two activations (quantised differently), and of an activation by a
    broadcast constant, on random scales and inputs: LiteRT's integers."""
    rng = np.random.default_rng(seed)
    b = Builder()
    sx, zx = _params(rng)
    x = b.tensor("x", (1, 2, 5, 7), scale=sx, zero_point=zx)
    s2, z2 = _params(rng)
    y = b.op("QUANTIZE", [x], [b.tensor("y", (1, 2, 5, 7), scale=s2, zero_point=z2)])
    if not adj_y:
        perm = b.const_int32("perm", [0, 1, 3, 2])
        y = b.op("TRANSPOSE", [y, perm], [b.tensor("yt", (1, 2, 7, 5), scale=s2, zero_point=z2)],
                 "TransposeOptions")  # fmt: skip
    spread = 128 * 128 / 127 / 8  # an eighth of the largest |sum| of products, per term
    s3 = sx * s2 * 7 * spread * rng.uniform(0.5, 2)
    prod = b.tensor("xy", (1, 2, 5, 5), scale=s3, zero_point=_params(rng)[1])
    b.op("BATCH_MATMUL", [x, y], [prod], "BatchMatMulOptions", AdjX=False, AdjY=adj_y)
    c = b.tensor("c", (1, 5, 3), scale=0.02, zero_point=3, data=rng.integers(-128, 128, (1, 5, 3)).astype(np.int8))  # fmt: skip
    s4 = s3 * 0.02 * 5 * spread * rng.uniform(0.5, 2)
    out = b.tensor("out", (1, 2, 5, 3), scale=s4, zero_point=_params(rng)[1])
    b.op("BATCH_MATMUL", [prod, c], [out], "BatchMatMulOptions", AdjX=False, AdjY=False)
    Q = rng.integers(-128, 128, (30, 2, 5, 7)).astype(np.int8)
    ours, theirs = _run(tmp_path, b, x, out, Q)
    assert len(np.unique(ours)) > 20  # not saturated
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("seed", range(4))
def test_squared_difference_is_litert_bit_for_bit(tmp_path, seed):
    """int8 SQUARED_DIFFERENCE, broadcast against a row mean and against a constant."""
    rng = np.random.default_rng(seed)
    b = Builder()
    sx, zx = _params(rng)
    x = b.tensor("x", (1, 4, 6), scale=sx, zero_point=zx)
    axes = b.const_int32("axes", [2])
    sm, zm = _params(rng)
    mean = b.op("MEAN", [x, axes], [b.tensor("m", (1, 4, 1), scale=sm, zero_point=zm)],
                "ReducerOptions", KeepDims=True)  # fmt: skip
    sq = b.tensor("sq", (1, 4, 6), scale=_params(rng, True)[0], zero_point=-128)
    b.op("SQUARED_DIFFERENCE", [x, mean], [sq], "SquaredDifferenceOptions")
    c = b.tensor("c", (1, 1, 6), scale=0.01, zero_point=-5, data=rng.integers(-128, 128, (1, 1, 6)).astype(np.int8))  # fmt: skip
    out = b.tensor("out", (1, 4, 6), scale=_params(rng, True)[0], zero_point=-128)
    b.op("SQUARED_DIFFERENCE", [sq, c], [out], "SquaredDifferenceOptions")
    Q = rng.integers(-128, 128, (40, 4, 6)).astype(np.int8)
    ours, theirs = _run(tmp_path, b, x, out, Q)
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("seed", range(6))
def test_rsqrt_is_litert_bit_for_bit_on_every_input(tmp_path, seed):
    """int8 RSQRT on every value from the zero point (a zero: 127) to 127, random scales."""
    rng = np.random.default_rng(seed)
    b = Builder()
    sx, zx = _params(rng)
    x = b.tensor("x", (1, 128 - zx), scale=sx, zero_point=zx)
    out = b.tensor("out", (1, 128 - zx), scale=_params(rng, True)[0], zero_point=_params(rng)[1])
    b.op("RSQRT", [x], [out])
    Q = np.arange(zx, 128, dtype=np.int8)[None]
    Q = np.concatenate([Q, rng.permuted(np.repeat(Q, 3, axis=0), axis=1)])
    ours, theirs = _run(tmp_path, b, x, out, Q)
    np.testing.assert_array_equal(ours, theirs)
    assert ours[0, 0] == 127  # the zero point: TFLite's largest output


def test_rsqrt_refuses_negative_values():
    """A value below RSQRT's zero point is a negative number: refused, as LiteRT refuses it."""
    b = Builder()
    x = b.tensor("x", (1, 3), scale=0.1, zero_point=0)
    out = b.tensor("out", (1, 3), scale=0.1, zero_point=-128)
    b.op("RSQRT", [x], [out])
    from xai_core.int8.model import TFLiteModel

    model = TFLiteModel(TFLiteGraph(tuple(b.tensors), tuple(b.ops), (x,), (out,), "t"))
    with pytest.raises(xai.ModelFormatError, match="below its zero point"):
        model.run(np.array([[1, -2, 3]], np.int8))


# -- layers: the converter's lowering, LiteRT's integers, near the float network ------------


def _tokens(layer_fn) -> nn.Graph:
    """Six tokens of 16 features through ``layer_fn(graph)``, which adds nodes after ``x``."""
    g = nn.Graph(input_shape=(6, 16), input_name="x", seed=0)
    layer_fn(g)
    return g


def _layer_norm(g):
    rng = np.random.default_rng(2)
    g.add(nn.LayerNormalization(), "x", name="ln")
    g.set_params("ln", gamma=rng.uniform(0.5, 1.5, 16).astype(np.float32))
    g.set_params("ln", beta=rng.uniform(-0.5, 0.5, 16).astype(np.float32))


def _attention(g):
    g.add(nn.Transpose((1, 0)), "x", name="t")
    g.add(nn.MatMul(), ["x", "t"], name="qk")
    g.add(nn.Softmax(), name="a")
    g.add(nn.MatMul(), ["a", "x"], name="av")


def _by_constants(g):
    w = np.random.default_rng(3).standard_normal((16, 8)).astype(np.float32)
    g.add(nn.Constant(w), name="w")
    g.add(nn.MatMul(), ["x", "w"], name="mm")
    g.add(nn.Constant(np.array(2.5, np.float32)), name="s")
    g.add(nn.Divide(), ["mm", "s"], name="d")


def _exported_gelu(g):
    """PyTorch's ONNX GELU: x * (1 + erf(x / sqrt 2)) * 0.5."""
    for name, v in (("root2", np.sqrt(2.0)), ("one", 1.0), ("half", 0.5)):
        g.add(nn.Constant(np.array(v, np.float32)), name=name)
    g.add(nn.Divide(), ["x", "root2"], name="div")
    g.add(nn.Erf(), "div", name="erf")
    g.add(nn.Add(), ["erf", "one"], name="add")
    g.add(nn.Multiply(), ["x", "add"], name="mul")
    g.add(nn.Multiply(), ["mul", "half"], name="gelu")


def _class_token(g):
    """A constant class token joined to the tokens, then its row taken (ViT's head)."""
    token = np.random.default_rng(4).standard_normal((1, 16)).astype(np.float32)
    g.add(nn.Constant(token), name="cls")
    g.add(nn.Concatenate(axis=0), ["cls", "x"], name="cat")
    g.add(nn.Gather(0, [0, 3]), name="rows")
    g.add(nn.Gather(0, 1), name="token")


# network, the operators it becomes, largest error over the output's peak (measured + margin)
LAYERS = {
    "layer-norm": (
        _layer_norm,
        ["MEAN", "SUB", "SQUARED_DIFFERENCE", "MEAN", "ADD", "RSQRT", "MUL", "MUL", "ADD"],
        0.08,
    ),
    "attention": (_attention, ["TRANSPOSE", "BATCH_MATMUL", "SOFTMAX", "BATCH_MATMUL"], 0.12),
    "by-constants": (_by_constants, ["FULLY_CONNECTED", "MUL"], 0.02),
    "exported-gelu": (_exported_gelu, ["GELU"], 0.02),
    "class-token": (_class_token, ["QUANTIZE", "CONCATENATION", "GATHER", "STRIDED_SLICE"], 0.01),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_transformer_layers_quantise_bit_identical_with_litert(name, tmp_path):
    """The converter's operators; LiteRT's integers on 100 inputs, and the file's read back;
    the int8 output near the float one; the edgetpu backend gives the same numbers."""
    build, ops, tolerance = LAYERS[name]
    g = _tokens(build)
    X = np.random.default_rng(0).standard_normal((100, 6, 16)).astype(np.float32)
    q = xai.quantize(g, X, progress=False)
    assert q.operators == ops
    path = xai.to_tflite(q, tmp_path / f"{name}.tflite")
    Q = q.quantize_input(X)
    ours = q.run(Q)[q.graph.outputs[0]]
    np.testing.assert_array_equal(ours.reshape(-1), litert_reference_outputs(path, Q).reshape(-1))
    back = xai.from_tflite(path)
    np.testing.assert_array_equal(back.run(Q)[back.graph.outputs[0]], ours)
    expected = g.predict(X)
    error = np.abs(q.predict(X) - expected).max() / np.abs(expected).max()
    assert error < tolerance, f"{name}: {error:.1%} of the output's peak"
    runner = xai.ModelRunner(q, backend="edgetpu")
    np.testing.assert_array_equal(runner.predict(X[:10]), q.predict(X[:10]))


def test_placement_of_the_transformer_operators():
    """The Edge TPU compiler's table: SQUARED_DIFFERENCE, RSQRT and MEAN map; BATCH_MATMUL,
    GELU and a FULLY_CONNECTED per token (a two-dimensional output) do not."""
    X = np.random.default_rng(0).standard_normal((20, 6, 16)).astype(np.float32)
    norm = xai.quantize(_tokens(_layer_norm), X, progress=False).placement()
    assert [p.device for p in norm[:6]] == ["edgetpu"] * 6  # MEAN over features is the last axis
    attention = xai.quantize(_tokens(_attention), X, progress=False).placement()
    assert (attention[1].op, attention[1].device) == ("BATCH_MATMUL", "host")
    assert "not supported" in attention[1].reason
    fc = xai.quantize(_tokens(_by_constants), X, progress=False).placement()
    assert (fc[0].op, fc[0].device) == ("FULLY_CONNECTED", "host")
    assert "one-dimensional" in fc[0].reason


def test_gelu_fusion_leaves_the_float_network_alone():
    """The fusion rewrites the quantised copy only; its Gelu computes the exported pattern."""
    g = _tokens(_exported_gelu)
    X = np.random.default_rng(1).standard_normal((10, 6, 16)).astype(np.float32)
    before = g.predict(X)
    q = xai.quantize(g, X, progress=False)
    assert [type(n.layer).__name__ for n in g.nodes].count("Erf") == 1
    np.testing.assert_array_equal(g.predict(X), before)
    from xai_core.nn.folding import fuse_gelu

    fused = fuse_gelu(g)
    assert type(fused.node("gelu").layer).__name__ == "Gelu"
    np.testing.assert_allclose(fused.predict(X), before, atol=1e-5)
    assert "GELU" in q.operators


def test_division_by_an_activation_is_refused():
    """TFLite has no int8 DIV: a Divide of two activations is refused, naming the node."""
    g = nn.Graph(input_shape=(6, 16), input_name="x", seed=0)
    g.add(nn.Reduce("max", (1,), keepdims=True), "x", name="m")
    g.add(nn.Divide(), ["x", "m"], name="ratio")
    with pytest.raises(xai.CapabilityError, match="'ratio'.*non-zero constant"):
        xai.quantize(g, np.ones((4, 6, 16), np.float32), progress=False)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("op", ["EXP", "LOG"])
def test_exp_and_log_tables_are_litert_bit_for_bit(tmp_path, op, seed):
    """int8 EXP on every input and LOG on every input from its zero point (log 0: -128), random
    scales: TFLite's 256-entry tables."""
    rng = np.random.default_rng(seed)
    b = Builder()
    sx, zx = _params(rng)
    lo = zx if op == "LOG" else -128
    x = b.tensor("x", (1, 128 - lo), scale=sx, zero_point=zx)
    out = b.tensor("out", (1, 128 - lo), scale=_params(rng)[0] * 4, zero_point=_params(rng)[1])
    b.op(op, [x], [out])
    Q = np.arange(lo, 128, dtype=np.int8)[None]
    ours, theirs = _run(tmp_path, b, x, out, Q)
    np.testing.assert_array_equal(ours, theirs)


def test_exp_and_log_layers_quantise_to_their_tables(tmp_path):
    """nn.Exp and nn.Log become EXP and LOG (host operators): LiteRT's integers, near float."""
    g = nn.Graph(input_shape=(6, 16), input_name="x", seed=0)
    g.add(nn.Exp(), "x", name="e")
    g.add(nn.Log(), name="l")
    X = np.random.default_rng(0).uniform(-2, 2, (50, 6, 16)).astype(np.float32)
    q = xai.quantize(g, X, progress=False)
    assert q.operators == ["EXP", "LOG"]
    assert [p.device for p in q.placement()] == ["host", "host"]
    path = xai.to_tflite(q, tmp_path / "explog.tflite")
    Q = q.quantize_input(X)
    ours = q.run(Q)[q.graph.outputs[0]]
    np.testing.assert_array_equal(ours.reshape(-1), litert_reference_outputs(path, Q).reshape(-1))
    expected = g.predict(X)
    assert np.abs(q.predict(X) - expected).max() / np.abs(expected).max() < 0.1


def test_float_transformer_layers_are_written_for_litert(tmp_path):
    """Unquantised, the same lowering in float32 (BATCH_MATMUL, SQUARED_DIFFERENCE, RSQRT,
    FULLY_CONNECTED per token): LiteRT and the network agree."""

    def build(g):
        _layer_norm(g)
        w = np.random.default_rng(5).standard_normal((16, 16)).astype(np.float32)
        g.add(nn.Constant(w), name="w")
        g.add(nn.MatMul(), ["ln", "w"], name="proj")
        g.add(nn.Transpose((1, 0)), "proj", name="t")
        g.add(nn.MatMul(), ["proj", "t"], name="qk")
        g.add(nn.Softmax(), name="a")
        g.add(nn.MatMul(), ["a", "proj"], name="av")

    g = _tokens(build)
    X = np.random.default_rng(6).standard_normal((10, 6, 16)).astype(np.float32)
    path = xai.to_tflite(g, tmp_path / "float.tflite")
    back = xai.from_tflite(path)
    assert not back.is_quantized and "BATCH_MATMUL" in back.operators
    expected = g.predict(X)
    theirs = litert_reference_outputs(path, X).reshape(expected.shape)
    np.testing.assert_allclose(theirs, expected, atol=1e-4 * np.abs(expected).max())
    np.testing.assert_allclose(back.predict(X), expected, atol=1e-4 * np.abs(expected).max())
