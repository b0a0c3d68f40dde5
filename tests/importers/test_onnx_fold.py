"""Constant folding at import: nodes on constants only are evaluated once (onnx's reference),
never in the network; a folded tensor over the size limit is refused before it is made."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from onnx import helper

import xai_core as xai
from xai_core.errors import CapabilityError, ResourceError
from xai_core.importers import onnx_fold
from xai_core.importers.onnx_ops import Builder
from xai_core.importers.onnx_reader import read_onnx

from .conftest import one_node_model, ort_run

RNG = np.random.default_rng(0)


def _layers(net) -> list[str]:
    return [type(layer).__name__ for layer in net.layers]


def test_position_bias_mlp_on_constants_is_folded():
    """Swin v2's pattern: MatMul of two constants, Relu, MatMul, Sigmoid, Mul, then added to
    the input: the network holds one constant and the Add, and matches onnxruntime."""
    table = RNG.standard_normal((6, 2)).astype(np.float32)
    w1 = RNG.standard_normal((2, 8)).astype(np.float32)
    w2 = RNG.standard_normal((8, 3)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["table", "w1"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["m"]),
        helper.make_node("Sigmoid", ["m"], ["s"]),
        helper.make_node("Mul", ["s", "sixteen"], ["bias"]),
        helper.make_node("Transpose", ["bias"], ["bias_t"], perm=[1, 0]),
    ]
    inits = {"table": table, "w1": w1, "w2": w2, "sixteen": np.float32(16)}
    data = one_node_model("Add", shape=(3, 6), inputs=["x", "bias_t"], inits=inits, nodes=nodes)
    net = xai.from_onnx(data)
    assert sorted(_layers(net)) == ["Add", "Constant"]
    X = RNG.standard_normal((4, 3, 6)).astype(np.float32)
    want = ort_run(data, X).reshape(4, -1)
    np.testing.assert_allclose(net.predict(X), want, rtol=1e-5, atol=1e-5)


def test_a_node_of_several_outputs_folds_each():
    """``Split`` of a constant: both parts become constants, each read by the network."""
    c = RNG.standard_normal((4, 3)).astype(np.float32)
    nodes = [
        helper.make_node("Split", ["c", "parts"], ["c1", "c2"], axis=0),
        helper.make_node("Sub", ["c1", "c2"], ["d"]),
    ]
    inits = {"c": c, "parts": np.array([2, 2], dtype=np.int64)}
    data = one_node_model("Mul", shape=(2, 3), inputs=["x", "d"], inits=inits, nodes=nodes)
    net = xai.from_onnx(data)
    assert "Split" not in _layers(net) and "Subtract" not in _layers(net)
    X = RNG.standard_normal((3, 2, 3)).astype(np.float32)
    np.testing.assert_allclose(net.predict(X), ort_run(data, X).reshape(3, -1), rtol=1e-6)


@pytest.mark.parametrize("op", ["Expand", "Tile"])
def test_a_large_folded_tensor_is_refused_before_it_is_made(op):
    """A constant asked to grow to 5 * 10**7 elements (past the weights plus the margin, within
    the memory limit): a CapabilityError naming the node and the limit, raised before the
    200 MB are allocated (numpy's allocations are traced)."""
    nodes = [helper.make_node(op, ["c", "shape"], ["big"], name="grow")]
    inits = {"c": np.ones((1, 1), dtype=np.float32), "shape": np.array([5000, 10_000])}
    data = one_node_model("Add", shape=(4,), inputs=["x", "big"], inits=inits, nodes=nodes)
    tracemalloc.start()
    try:
        with pytest.raises(CapabilityError, match=r"'grow' computes a constant .* 50000000 elem"):
            xai.from_onnx(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 2**20


def test_a_folded_tensor_over_the_memory_limit_is_a_resource_error():
    """Past the memory limit (10**10 elements) the refusal is the ResourceError of every
    folding converter, again before allocation."""
    nodes = [helper.make_node("Expand", ["c", "shape"], ["big"], name="grow")]
    inits = {"c": np.ones((1, 1), dtype=np.float32), "shape": np.array([100_000, 100_000])}
    data = one_node_model("Add", shape=(4,), inputs=["x", "big"], inits=inits, nodes=nodes)
    with pytest.raises(ResourceError, match="Expand node 'grow'"):
        xai.from_onnx(data)


def test_the_limit_counts_the_model_weights():
    """The limit is the initialisers' elements in total plus the margin: a model with more
    weights may fold larger tables."""
    small = one_node_model("Add", shape=(4,), inits={"c": np.ones(4, dtype=np.float32)})
    big = one_node_model("Add", shape=(4,), inits={"c": np.ones((1000, 4), dtype=np.float32)})
    limits = [
        onnx_fold.limit(Builder(xai.nn.Graph((4,)), read_onnx(d).initializers, "m"))
        for d in (small, big)
    ]
    assert limits == [onnx_fold.MARGIN + 4, onnx_fold.MARGIN + 4000]
