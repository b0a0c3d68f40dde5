"""Fold the operators that compute constants: float16 ``DEQUANTIZE``, ``DENSIFY``, shape arithmetic.

Converters store float weights as float16 (a ``DEQUANTIZE`` to float32 before each use) or
sparse (a ``DENSIFY`` to the dense tensor), and write a reshape's target as arithmetic on
``SHAPE`` (``SHAPE``, ``STRIDED_SLICE`` of it, ``PACK`` with constants). Each writes the same
value every run, so :func:`fold_constants` computes them once: their outputs become constants
and the operators leave the graph, which is what every runtime's constant propagation does.
The values are exact: float16 to float32 is exact, the reader has already decoded a sparse
constant to its dense value (:mod:`xai_core.importers.tflite.sparsity`), and a ``SHAPE`` is
the declared shape (the file's batch of one: what a reshape's target holds, which the
``RESHAPE`` kernel replaces by the batch it runs).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from xai_core.int8.graph import TFLiteGraph

__all__ = ["FOLDED", "fold_constants"]

#: Operators folded when their input is a constant (``SHAPE``: whatever its input).
FOLDED = frozenset({"DEQUANTIZE", "DENSIFY", "SHAPE", "STRIDED_SLICE", "PACK"})
_INDEX = (np.dtype(np.int32), np.dtype(np.int64))


def _value(graph: TFLiteGraph, tensors: list, op) -> np.ndarray | None:
    """The constant ``op`` writes, or ``None`` when it is no constant (or not one of these)."""
    if op.custom_code or op.op not in FOLDED or len(op.outputs) != 1 or -1 in op.inputs:
        return None
    out = graph.tensors[op.outputs[0]]
    src = [tensors[t] for t in op.inputs]
    if op.op == "SHAPE":
        if len(src) != 1 or out.dtype not in _INDEX or out.shape != (len(src[0].shape),):
            return None
        return np.asarray(src[0].shape, out.dtype)
    if any(t.data is None for t in src):
        return None
    if op.op == "DENSIFY":
        ok = len(src) == 1 and out.dtype == src[0].dtype and out.shape == src[0].shape
        return src[0].data if ok else None
    if op.op == "DEQUANTIZE":
        ok = len(src) == 1 and src[0].dtype == np.float16 and out.shape == src[0].shape
        return src[0].data.astype(np.float32) if ok and out.dtype == np.float32 else None
    if out.dtype not in _INDEX:  # shape arithmetic only: data goes through the kernels
        return None
    if op.op == "STRIDED_SLICE":
        from xai_core.int8.geometry import strided_slice_key

        if len(src) != 4 or any(t.dtype not in _INDEX for t in src[1:]):
            return None
        begin, end, strides = (t.data.astype(np.int64).ravel() for t in src[1:])
        if not len(begin) == len(end) == len(strides) or (strides == 0).any():
            return None
        try:
            value = src[0].data[strided_slice_key(begin, end, strides, op.options)]
        except IndexError:
            return None
    else:  # PACK
        axis = int(op.options.get("Axis", 0))
        if len({t.shape for t in src}) != 1 or not -len(src[0].shape) - 1 <= axis <= len(
            src[0].shape
        ):
            return None
        value = np.stack([t.data for t in src], axis=axis)
    return value.astype(out.dtype) if value.shape == out.shape else None


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
        value = _value(graph, tensors, op)
        if value is None:
            kept.append(op)
            continue
        out = tensors[op.outputs[0]]
        tensors[out.index] = replace(out, data=value)
    if len(kept) == len(graph.operators):
        return graph
    return replace(graph, tensors=tuple(tensors), operators=tuple(kept))
