"""Fold the operators that only unpack constants: ``DEQUANTIZE`` of float16 weights, ``DENSIFY``.

Converters store float weights as float16 (a ``DEQUANTIZE`` to float32 before each use) or
sparse (a ``DENSIFY`` to the dense tensor). Both read a constant and write the same value
every run, so :func:`fold_constants` computes them once: their outputs become constants and
the operators leave the graph, which is what every runtime's constant propagation does. The
values are exact: float16 to float32 is exact, and the reader has already decoded a sparse
constant to its dense value (:mod:`xai_core.importers.tflite.sparsity`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from xai_core.int8.graph import TFLiteGraph

__all__ = ["FOLDED", "fold_constants"]

#: Operators folded when their input is a constant.
FOLDED = frozenset({"DEQUANTIZE", "DENSIFY"})


def _foldable(graph: TFLiteGraph, tensors: list, op) -> bool:
    if op.custom_code or op.op not in FOLDED or len(op.inputs) != 1 or len(op.outputs) != 1:
        return False
    src = tensors[op.inputs[0]] if op.inputs[0] >= 0 else None
    if src is None or src.data is None:
        return False
    out = graph.tensors[op.outputs[0]]
    if op.op == "DENSIFY":
        return out.dtype == src.dtype and out.shape == src.shape
    return src.dtype == np.float16 and out.dtype == np.float32 and out.shape == src.shape


def fold_constants(graph: TFLiteGraph) -> TFLiteGraph:
    """``graph`` with every foldable operator (see the module docstring) computed.

    Returns
    -------
    TFLiteGraph
        The same graph when nothing folds; else one whose folded outputs are constants
        (float32 for a float16 ``DEQUANTIZE``) and whose operators are the rest, in order
        and keeping the file's operator indices.
    """
    tensors = list(graph.tensors)
    kept = []
    for op in graph.operators:
        if _foldable(graph, tensors, op):
            src = tensors[op.inputs[0]]
            out = tensors[op.outputs[0]]
            tensors[out.index] = replace(out, data=src.data.astype(out.dtype))
        else:
            kept.append(op)
    if len(kept) == len(graph.operators):
        return graph
    return replace(graph, tensors=tuple(tensors), operators=tuple(kept))
