"""Hostile ``.tflite`` files: each runs as LiteRT runs it, or is refused naming what is wrong.

``CASES`` is one row per hole, each a TensorFlow-converter fixture with one thing changed
(a tensor's quantisation, an operator's inputs, an option, the order of the operators;
written back with the project's own writer, or with LiteRT's schema for fields the writer
derives), then either ``None`` (it must import and equal LiteRT's reference kernels) or the
error class and the words its message must hold. Every refusal names the file, and the
operator (index and opcode) and tensor where there is one. The fuzz tests mutate a small
valid file in a child process under a memory cap and a time limit: only xai-core's own
errors, or a model that runs, may come out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import xai_core as xai
from xai_core.errors import ModelFormatError, ResourceError
from xai_core.importers.tflite import read_tflite
from xai_core.importers.tflite.reader import OperatorInfo, TensorInfo, TFLiteGraph
from xai_core.importers.tflite.writer import graph_to_bytes

from .hostile_files import FIXTURES, assert_refused, run_fuzz

litert = pytest.importorskip(
    "ai_edge_litert.interpreter", reason="the tflite extra is not installed"
)


@cache
def _graph(name: str) -> TFLiteGraph:
    return read_tflite(FIXTURES / f"{name}.tflite")


def tensor(name: str, index: int, **changes: Any) -> bytes:
    """The fixture with tensor ``index`` changed."""
    g = _graph(name)
    tensors = list(g.tensors)
    tensors[index] = replace(tensors[index], **changes)
    return graph_to_bytes(replace(g, tensors=tuple(tensors)))


def operator(name: str, index: int, **changes: Any) -> bytes:
    """The fixture with operator ``index`` changed (options merged into its own)."""
    g = _graph(name)
    ops = list(g.operators)
    if "options" in changes:
        changes["options"] = {**ops[index].options, **changes["options"]}
    ops[index] = replace(ops[index], **changes)
    return graph_to_bytes(replace(g, operators=tuple(ops)))


def graph(name: str, **changes: Any) -> bytes:
    """The fixture with graph-level fields changed (operators, inputs, outputs)."""
    return graph_to_bytes(replace(_graph(name), **changes))


def reorder(name: str, *order: int) -> bytes:
    g = _graph(name)
    return graph(name, operators=tuple(g.operators[i] for i in order))


def packed(name: str, edit: Callable[[Any], None]) -> bytes:
    """The fixture through LiteRT's object API, for fields the writer derives itself."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    model = schema.ModelT.InitFromPackedBuf((FIXTURES / f"{name}.tflite").read_bytes(), 0)
    edit(model)
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _set(path: str, value: Any) -> Callable[[Any], None]:
    """An edit setting ``model.<path>`` (``subgraphs.0.tensors.3.type``)."""

    def edit(model: Any) -> None:
        *parents, last = path.split(".")
        obj = model
        for p in parents:
            obj = obj[int(p)] if p.isdigit() else getattr(obj, p)
        setattr(obj, last, value)

    return edit


def relu_of(*sample: int) -> bytes:
    """One float RELU of a (1, *sample) input: a tiny file declaring that many values."""
    x = TensorInfo(0, "x", (1, *sample), np.dtype(np.float32))
    y = TensorInfo(1, "y", (1, *sample), np.dtype(np.float32))
    relu = OperatorInfo(0, "RELU", (0,), (1,))
    return graph_to_bytes(TFLiteGraph((x, y), (relu,), (0,), (1,)))


S = np.float32
MLP_W = _graph("mlp_int8").tensors[4]  # (8, 12) int8 weights, 8 per-channel scales


#: name -> (file bytes, None for "imports and equals LiteRT" or (error, words)).
CASES: dict[str, tuple[Callable[[], bytes], tuple[type, tuple[str, ...]] | None]] = {
    # -- 2: quantisation parameters -------------------------------------------------------------
    "scale-0": (
        lambda: tensor("mlp_int8", 9, scale=np.array([0], S)),
        (ModelFormatError, ("operator 0 (FULLY_CONNECTED), output 0, tensor 9", "scale 0.0")),
    ),
    "scale-nan": (
        lambda: tensor("mlp_int8", 9, scale=np.array([np.nan], S)),
        (ModelFormatError, ("tensor 9", "scale nan")),
    ),
    "scale-inf": (
        lambda: tensor("mlp_int8", 11, scale=np.array([np.inf], S)),
        (ModelFormatError, ("operator 2 (TANH)", "scale inf")),
    ),
    "scale-negative": (
        lambda: tensor("mlp_int8", 9, scale=np.array([-0.1], S)),
        (ModelFormatError, ("tensor 9", "finite, positive")),
    ),
    "scale-subnormal-1e-45": (
        lambda: tensor("mlp_int8", 9, scale=np.array([1e-45], S)),
        (ModelFormatError, ("tensor 9", "normal float32", "1.18e-38")),
    ),
    "weight-scale-0-in-channel-5": (
        lambda: tensor("mlp_int8", 4, scale=np.where(np.arange(8) == 5, 0, MLP_W.scale).astype(S)),
        (ModelFormatError, ("operator 3 (FULLY_CONNECTED), input 1, tensor 4", "(entry 5)")),
    ),
    "int8-zero-point-1000": (
        lambda: tensor("mlp_int8", 9, zero_point=np.array([1000])),
        (ModelFormatError, ("tensor 9", "zero point 1000", "-128..127")),
    ),
    "int8-input-zero-point-minus-129": (
        lambda: tensor("mlp_int8", 0, zero_point=np.array([-129])),
        (ModelFormatError, ("operator 0 (FULLY_CONNECTED), input 0, tensor 0", "zero point -129")),
    ),
    "uint8-zero-point-256": (
        lambda: tensor("cnn_int8_uint8_io", 0, zero_point=np.array([256])),
        (ModelFormatError, ("operator 0 (QUANTIZE)", "uint8 zero points lie in 0..255")),
    ),
    "uint8-zero-point-minus-1": (
        lambda: tensor("cnn_int8_uint8_io", 16, zero_point=np.array([-1])),
        (ModelFormatError, ("operator 8 (QUANTIZE), output 0, tensor 16", "zero point -1")),
    ),
    "2-scales-for-8-channels": (
        lambda: tensor("mlp_int8", 4, scale=MLP_W.scale[:2], zero_point=MLP_W.zero_point[:2]),
        (
            ModelFormatError,
            (
                "operator 3 (FULLY_CONNECTED), input 1, tensor 4",
                "2 quantisation scales for its 8 channels",
            ),
        ),
    ),
    "per-channel-dimension-5-of-2": (
        lambda: tensor("mlp_int8", 4, quantized_dimension=5),
        (ModelFormatError, ("tensor 4", "along dimension 5, which it does not have")),
    ),
    "per-channel-along-the-input-axis": (
        lambda: tensor(
            "mlp_int8",
            4,
            scale=np.full(12, 0.004, S),
            zero_point=np.zeros(12, np.int64),
            quantized_dimension=1,
        ),
        (
            ModelFormatError,
            ("operator 3 (FULLY_CONNECTED): input 1, tensor 4", "along dimension 1", "dimension 0"),
        ),
    ),
    "per-channel-activation": (
        lambda: tensor(
            "mlp_int8",
            9,
            scale=np.full(16, 0.006, S),
            zero_point=np.full(16, -128),
            quantized_dimension=1,
        ),
        (
            ModelFormatError,
            (
                "operator 0 (FULLY_CONNECTED): the output, tensor 9",
                "16 quantisation scales",
                "an activation has one",
            ),
        ),
    ),
    "zero-points-not-paired-with-scales": (
        lambda: tensor("mlp_int8", 4, zero_point=MLP_W.zero_point[:3]),
        (ModelFormatError, ("tensor 4", "8 quantisation scale(s) but 3 zero point(s)")),
    ),
    "weight-zero-point-5": (
        lambda: tensor("mlp_int8", 4, zero_point=np.full(8, 5)),
        (
            ModelFormatError,
            ("operator 3 (FULLY_CONNECTED): input 1, tensor 4", "zero point 5", "symmetric"),
        ),
    ),
    "bias-zero-point-3": (
        lambda: tensor("cnn_int8", 6, zero_point=np.full(4, 3)),
        (ModelFormatError, ("operator 0 (CONV_2D): input 2, tensor 6", "zero point 3")),
    ),
    "int8-activation-without-quantisation": (
        lambda: tensor("cnn_int8", 9, scale=None, zero_point=None),
        (
            ModelFormatError,
            ("operator 1 (MAX_POOL_2D): the output, tensor 9", "without quantisation parameters"),
        ),
    ),
    "int8-softmax-output-at-scale-0.5": (
        lambda: tensor("cnn_int8", 14, scale=np.array([0.5], S)),
        (ModelFormatError, ("operator 6 (SOFTMAX)", "scale 1/256, zero point -128")),
    ),
    "rescaling-past-2**31": (
        lambda: tensor("mlp_int8", 9, scale=np.array([1e30], S)),
        (ModelFormatError, ("operator 1 (FULLY_CONNECTED): input 0's scale", "at most 2**31")),
    ),
    "concatenation-of-unlike-quantisations": (
        lambda: tensor("separable_int8", 30, scale=np.array([0.5], S)),
        (ModelFormatError, ("operator 14 (CONCATENATION): input 1, tensor 30", "does not rescale")),
    ),
    # -- 10: graph structure --------------------------------------------------------------------
    "input-index-out-of-range": (
        lambda: operator("mlp_int8", 2, inputs=(99,)),
        (ModelFormatError, ("operator 2 (TANH) reads tensor index 99", "16 tensors")),
    ),
    "output-index-minus-1": (
        lambda: operator("mlp_int8", 2, outputs=(-1,)),
        (ModelFormatError, ("operator 2 (TANH) writes tensor index -1", "cannot be omitted")),
    ),
    "operator-with-no-outputs": (
        lambda: operator("mlp_int8", 2, outputs=()),
        (ModelFormatError, ("operator 2 (TANH) writes no tensor",)),
    ),
    "operators-out-of-order": (
        lambda: reorder("mlp_int8", 1, 0, 2, 3, 4, 5, 6),
        (ModelFormatError, ("operator 0 (FULLY_CONNECTED) reads tensor 9", "execution order")),
    ),
    "a-tensor-written-twice": (
        lambda: operator("mlp_int8", 2, outputs=(10,)),
        (
            ModelFormatError,
            ("operator 2 (TANH) writes tensor 10", "operator 1 (FULLY_CONNECTED) already writes"),
        ),
    ),
    "an-operator-writes-a-constant": (
        lambda: operator("mlp_int8", 2, outputs=(8,)),
        (ModelFormatError, ("operator 2 (TANH) writes tensor 8", "its constant buffer")),
    ),
    "graph-output-out-of-range": (
        lambda: graph("mlp_int8", outputs=(40,)),
        (ModelFormatError, ("the graph output is tensor index 40",)),
    ),
    "graph-output-never-written": (
        lambda: graph("mlp_int8", operators=_graph("mlp_int8").operators[:-1]),
        (ModelFormatError, ("the graph output tensor 15", "written by no operator")),
    ),
    "opcode-index-out-of-range": (
        lambda: packed("mlp_int8", _set("subgraphs.0.operators.2.opcodeIndex", 77)),
        (ModelFormatError, ("operator 2 has opcode index 77",)),
    ),
    "buffer-index-out-of-range": (
        lambda: packed("mlp_int8", _set("subgraphs.0.tensors.4.buffer", 500)),
        (ModelFormatError, ("tensor 4 ('mlp_1/dense_4_1/MatMul') names buffer 500",)),
    ),
    "tensor-type-complex64": (
        lambda: packed("mlp_int8", _set("subgraphs.0.tensors.11.type", 8)),
        (ModelFormatError, ("tensor 11", "TFLite type 8, which is not supported")),
    ),
    "required-weight-omitted": (
        lambda: operator("mlp_int8", 3, inputs=(11, -1, 3)),
        (
            ModelFormatError,
            ("operator 3 (FULLY_CONNECTED): input 1 is -1 (omitted)", "may omit: 2"),
        ),
    ),
    "optional-bias-omitted": (lambda: operator("mlp_int8", 3, inputs=(11, 4, -1)), None),
    "tanh-with-two-inputs": (
        lambda: operator("mlp_int8", 2, inputs=(10, 10)),
        (ModelFormatError, ("operator 2 (TANH): has 2 inputs; TANH takes 1",)),
    ),
    "weights-computed-not-constant": (
        lambda: operator("mlp_int8", 1, inputs=(9, 9, 5)),
        (
            ModelFormatError,
            ("operator 1 (FULLY_CONNECTED): input 1, tensor 9", "must be a constant"),
        ),
    ),
    "declared-output-shape-wrong": (
        lambda: tensor("mlp_int8", 10, shape=(1, 13)),
        (
            ModelFormatError,
            ("operator 1 (FULLY_CONNECTED): the output, tensor 10", "(1, 13)", "computes (1, 12)"),
        ),
    ),
    "weights-narrower-than-the-input": (
        lambda: tensor("mlp_int8", 4, shape=(8, 11), data=MLP_W.data[:, :11].copy()),
        (ModelFormatError, ("operator 3 (FULLY_CONNECTED)", "(1, 12) does not hold 11 values")),
    ),
    "reshape-to-other-size": (
        lambda: tensor("cnn_int8", 12, shape=(1, 25)),
        (ModelFormatError, ("operator 4 (RESHAPE)", "different numbers of values")),
    ),
    "uint8-into-an-int8-conv": (
        lambda: tensor("cnn_int8", 0, dtype=np.dtype(np.uint8), zero_point=np.array([0])),
        (ModelFormatError, ("operator 0 (CONV_2D): input 0, tensor 0", "is uint8", "takes int8")),
    ),
    "hybrid-int8-weights-in-a-float-model": (
        lambda: tensor("mlp_float", 7, dtype=np.dtype(np.int8), data=np.zeros((16, 20), np.int8)),
        (ModelFormatError, ("operator 0 (FULLY_CONNECTED): input 1, tensor 7", "hybrid")),
    ),
    "nan-in-float-weights": (
        lambda: tensor("mlp_float", 7, data=np.full((16, 20), np.nan, np.float32)),
        (ModelFormatError, ("tensor 7", "holds NaN")),
    ),
    # -- options ----------------------------------------------------------------------------------
    "conv-stride-0": (
        lambda: operator("cnn_int8", 0, options={"StrideH": 0}),
        (ModelFormatError, ("operator 0 (CONV_2D): option StrideH is 0",)),
    ),
    "pool-filter-0": (
        lambda: operator("cnn_int8", 1, options={"FilterWidth": 0}),
        (ModelFormatError, ("operator 1 (MAX_POOL_2D): option FilterWidth is 0",)),
    ),
    "padding-7": (
        lambda: operator("cnn_int8", 0, options={"Padding": 7}),
        (ModelFormatError, ("operator 0 (CONV_2D): option Padding is 7",)),
    ),
    "fused-activation-9": (
        lambda: operator("cnn_int8", 0, options={"FusedActivationFunction": 9}),
        (ModelFormatError, ("operator 0 (CONV_2D): option FusedActivationFunction is 9",)),
    ),
    "softmax-beta-nan": (
        lambda: operator("mlp_int8", 6, options={"Beta": float("nan")}),
        (ModelFormatError, ("operator 6 (SOFTMAX): option Beta is nan",)),
    ),
    "mean-over-the-batch-axis": (
        lambda: tensor("separable_int8", 1, data=np.array([0, 1], np.int32)),
        (ModelFormatError, ("operator 8 (MEAN): axis 0 is the batch axis",)),
    ),
    "mean-over-axis-9": (
        lambda: tensor("separable_int8", 1, data=np.array([1, 9], np.int32)),
        (ModelFormatError, ("operator 8 (MEAN): axis 9 is outside a tensor of rank 4",)),
    ),
    "negative-padding": (
        lambda: tensor(
            "separable_int8", 2, data=np.array([[0, 0], [-1, 0], [0, 1], [0, 0]], np.int32)
        ),
        (ModelFormatError, ("operator 10 (PAD)", "values >= 0")),
    ),
    # -- bytes and sizes --------------------------------------------------------------------------
    "empty": (lambda: b"", (ModelFormatError, ("lacks the 'TFL3' identifier",))),
    "truncated": (
        lambda: (FIXTURES / "cnn_int8.tflite").read_bytes()[:1500],
        (ModelFormatError, ("flatbuffer is corrupt",)),
    ),
    "buffer-past-the-end": (
        lambda: packed(
            "mlp_int8",
            lambda m: (setattr(m.buffers[3], "offset", 10**6), setattr(m.buffers[3], "size", 64)),
        ),
        (ModelFormatError, ("declares 64 bytes at offset 1,000,000, past the end",)),
    ),
    "one-sample-of-2**40-values": (
        lambda: relu_of(2**20, 2**20),
        (ResourceError, ("running one sample through the model", "memory")),
    ),
    "untouched-converter-file": (lambda: (FIXTURES / "separable_int8.tflite").read_bytes(), None),
}


def _litert(path: Path, X: np.ndarray) -> np.ndarray:
    """LiteRT's reference kernels, row by row (the files have batch 1)."""
    it = litert.Interpreter(
        str(path), experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF
    )
    it.allocate_tensors()
    inp, out = it.get_input_details()[0], it.get_output_details()[0]
    rows = []
    for row in X:
        it.set_tensor(inp["index"], row[None])
        it.invoke()
        rows.append(it.get_tensor(out["index"]).copy())
    return np.concatenate(rows)


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_hostile_tflite(tmp_path: Path, case: str) -> None:
    """Each file equals LiteRT's reference kernels, or is refused naming the file and the problem."""
    make, expected = CASES[case]
    path = tmp_path / f"{case}.tflite"
    path.write_bytes(make())
    if expected is None:
        model = xai.from_tflite(path)
        info = np.iinfo(model.input_tensor.dtype)
        X = np.random.default_rng(0).integers(info.min, info.max + 1, (20, *model.input_shape))
        X = X.astype(model.input_tensor.dtype)
        np.testing.assert_array_equal(model.run(X)[model.graph.outputs[0]], _litert(path, X))
        return
    assert_refused(xai.from_tflite, path, *expected)


def test_a_file_over_2_gb_is_not_read(tmp_path: Path) -> None:
    """A sparse file past the flatbuffer format's 2 GB is refused from its size."""
    path = tmp_path / "huge.tflite"
    with open(path, "wb") as fh:
        fh.truncate(2**31 + 1)
    with pytest.raises(ModelFormatError, match="huge.tflite is over 2 GB"):
        xai.from_tflite(path)


def test_a_refused_huge_file_allocates_nothing() -> None:
    """A 300-byte file declaring 2**40 values per sample is refused before anything is allocated."""
    import tracemalloc

    data = relu_of(2**20, 2**20)
    tracemalloc.start()
    try:
        with pytest.raises(ResourceError):
            xai.from_tflite(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(data) < 1000 and peak < 4 * 2**20


@pytest.mark.parametrize(
    "make",
    ["small_tflite", "converter_tflite"],
    ids=["written-by-xai-core", "tensorflow-converter"],
)
def test_fuzzed_tflite_gives_our_errors_only(make: str) -> None:
    """Truncated, bit-flipped and overwritten copies of a small valid .tflite: an XaiError or a model that runs."""
    assert "fuzzed 120 mutants" in run_fuzz(make, "from_tflite", 120)
