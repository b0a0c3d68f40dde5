"""What the Edge TPU compiler would map: each operator on the Edge TPU or on the host CPU.

The compiler maps operators to the Edge TPU in order until the first one it cannot run; that
operator and every one after it stay on the host CPU, even where a later one is supported
(it makes at most one Edge TPU subgraph). A float model input's QUANTIZE runs on the host
ahead of that subgraph. An operator runs on the Edge TPU when it is in
Coral's table of supported operations, its tensors are 8-bit integers, it meets the
table's limits, and no activation tensor has more than three dimensions larger than one.

Sources: Coral, "TensorFlow models on the Edge TPU", section "Supported operations" (Edge
TPU Compiler 16); statuses as the compiler's operation log words them ("Mapped to Edge
TPU", "Operation not supported", "Operation is working on an unsupported data type", "More
than one subgraph is not supported"). BATCH_MATMUL and GELU are not in that table (the
transformers' matrix products of two activations and their GELU run on the host), and
FULLY_CONNECTED maps only with a one-dimensional output (not a product per token).
LeakyRelu and HardSwish are not mapped (google-coral/edgetpu issue 272, compiler 15). A grouped CONV_2D (filters that take fewer
channels than the input has, which TFLite runs since 2.9) is modelled as not mapped: the
table does not list it and compiler 16 predates it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xai_core.int8.graph import TFLiteGraph

__all__ = ["EDGETPU_OPERATORS", "OperatorPlacement", "operator_macs", "place_operators"]

#: TFLite builtin operators in Coral's table of supported operations.
EDGETPU_OPERATORS = frozenset(
    {
        "ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D", "EXPAND_DIMS",
        "FULLY_CONNECTED", "L2_NORMALIZATION", "LOGISTIC", "MAXIMUM", "MAX_POOL_2D", "MEAN",
        "MINIMUM", "MUL", "PACK", "PAD", "PRELU", "QUANTIZE", "REDUCE_MAX", "REDUCE_MIN", "RELU",
        "RELU6", "RELU_N1_TO_1", "RESHAPE", "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR",
        "RSQRT", "SLICE", "SOFTMAX", "SPACE_TO_DEPTH", "SPLIT", "SQUARED_DIFFERENCE", "SQUEEZE",
        "STRIDED_SLICE", "SUB", "SUM", "TANH", "TRANSPOSE", "TRANSPOSE_CONV",
    }
)  # fmt: skip

MAPPED = "Mapped to Edge TPU"
NOT_SUPPORTED = "Operation not supported"
DATA_TYPE = "Operation is working on an unsupported data type"
ONE_SUBGRAPH = "More than one subgraph is not supported"
_INT8 = (np.dtype(np.int8), np.dtype(np.uint8))


@dataclass(frozen=True)
class OperatorPlacement:
    """Where one operator runs, and why."""

    index: int
    op: str
    device: str  # "edgetpu" or "host"
    reason: str


def _limit(graph: TFLiteGraph, index: int) -> str | None:
    """The table's limit this operator breaks, or ``None``."""
    op = graph.operators[index]
    out = graph.tensors[op.outputs[0]]
    fused = int(op.options.get("FusedActivationFunction", 0))
    if op.op in ("AVERAGE_POOL_2D", "MAX_POOL_2D", "CONCATENATION") and fused:
        return f"{NOT_SUPPORTED}: no fused activation function on {op.op}"
    if op.op == "CONV_2D":
        channels = graph.tensors[op.inputs[0]].shape[-1]
        if graph.tensors[op.inputs[1]].shape[-1] != channels:
            return f"{NOT_SUPPORTED}: grouped CONV_2D (filters take fewer channels than the input)"
    if op.op == "FULLY_CONNECTED" and sum(d > 1 for d in out.shape) > 1:
        return f"{NOT_SUPPORTED}: FULLY_CONNECTED's output tensor must be one-dimensional"
    if op.op == "SOFTMAX":
        size = int(np.prod(out.shape[1:], dtype=np.int64))
        if sum(d > 1 for d in out.shape) > 1 or size > 16000:
            return f"{NOT_SUPPORTED}: SOFTMAX supports only a 1-D input of at most 16,000 elements"
    if op.op == "MEAN":
        axes = {
            int(a) % len(graph.tensors[op.inputs[0]].shape)
            for a in np.ravel(graph.tensors[op.inputs[1]].data)
        }
        if not axes <= {1, 2}:
            return f"{NOT_SUPPORTED}: MEAN reduces along x and/or y only"
    if op.op == "PAD":
        widths = graph.tensors[op.inputs[1]].data
        if widths is not None and (np.any(widths[0]) or (len(widths) > 3 and np.any(widths[3]))):
            return f"{NOT_SUPPORTED}: PAD pads along x and/or y only"
    if op.op == "STRIDED_SLICE":
        strides = graph.tensors[op.inputs[3]].data
        masks = int(op.options.get("EllipsisMask", 0)) | int(op.options.get("NewAxisMask", 0))
        if strides is None or np.any(strides != 1) or masks:
            return (
                f"{NOT_SUPPORTED}: STRIDED_SLICE supports only strides of 1, without ellipsis "
                "or new-axis masks"
            )
    for t in (*op.inputs, *op.outputs):  # activations; weights are 4-D by nature
        tensor = graph.tensors[t] if t >= 0 else None
        if tensor is not None and tensor.data is None and sum(d > 1 for d in tensor.shape) > 3:
            return f"{NOT_SUPPORTED}: a tensor with more than 3 dimensions larger than 1"
    return None


def place_operators(graph: TFLiteGraph) -> list[OperatorPlacement]:
    """Each operator's device, as the Edge TPU compiler would place it.

    Returns
    -------
    list of OperatorPlacement
        In execution order. Everything from the first unmapped operator on is on ``"host"``.
    """
    placements: list[OperatorPlacement] = []
    stopped = False
    for op in graph.operators:
        if stopped:
            placements.append(OperatorPlacement(op.index, op.op, "host", ONE_SUBGRAPH))
            continue
        types = {
            graph.tensors[t].dtype
            for t in (*op.inputs, *op.outputs)
            if t >= 0 and graph.tensors[t].data is None
        }
        if op.op not in EDGETPU_OPERATORS:
            reason = NOT_SUPPORTED
        elif not types <= set(_INT8):
            reason = DATA_TYPE
        else:
            reason = _limit(graph, op.index) or MAPPED
        leading_quantize = op.op == "QUANTIZE" and not any(
            p.device == "edgetpu" for p in placements
        )
        if reason != MAPPED and not leading_quantize:
            stopped = True  # a float input's QUANTIZE runs on the host before the Edge TPU part
        placements.append(
            OperatorPlacement(op.index, op.op, "edgetpu" if reason == MAPPED else "host", reason)
        )
    return placements


def operator_macs(graph: TFLiteGraph, index: int) -> int:
    """Multiply-accumulates of one sample through operator ``index`` (0 for non-GEMM operators)."""
    op = graph.operators[index]
    out = graph.tensors[op.outputs[0]].shape
    if op.op in ("CONV_2D", "FULLY_CONNECTED"):
        return int(np.prod(out[1:], dtype=np.int64)) * int(
            np.prod(graph.tensors[op.inputs[1]].shape[1:])
        )
    if op.op == "BATCH_MATMUL":  # the inner axis of the left operand (AdjX: its rows)
        a = graph.tensors[op.inputs[0]].shape
        return int(np.prod(out[1:], dtype=np.int64)) * int(
            a[-2] if op.options.get("AdjX") else a[-1]
        )
    if op.op == "DEPTHWISE_CONV_2D":
        w = graph.tensors[op.inputs[1]].shape
        return int(np.prod(out[1:], dtype=np.int64)) * int(w[1] * w[2])
    if op.kind in ("TRANSPOSE_CONV", "Convolution2DTransposeBias"):
        data = op.inputs[0] if op.custom_code else op.inputs[2]
        x = graph.tensors[data].shape
        return int(np.prod(x[1:], dtype=np.int64)) * int(
            np.prod(graph.tensors[op.inputs[1]].shape[:3])
        )
    return 0
