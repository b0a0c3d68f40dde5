"""Write a graph as a ``.tflite`` flatbuffer, with LiteRT's own generated schema.

The inverse of :mod:`.reader`: tensors with their quantisation, constant buffers, operator
codes and each operator's builtin options. The object API of ``ai_edge_litert``'s
``schema_py_generated`` packs the flatbuffer, so the file is what the schema says.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.int8.graph import TENSOR_TYPES, TFLiteGraph

__all__ = ["graph_to_bytes", "write_tflite"]

_TYPE_OF_DTYPE = {dtype: code for code, dtype in TENSOR_TYPES.items()}


def _schema():
    from xai_core.optional import require

    return require(
        "ai_edge_litert.schema_py_generated", extra="tflite", need="writing .tflite files"
    )


def _options(schema: Any, type_name: str | None, values: dict[str, Any]) -> tuple[int, Any]:
    if type_name is None:
        return 0, None
    cls = getattr(schema, type_name + "T")
    options = cls()
    for key, value in values.items():
        attr = key[0].lower() + key[1:]
        if hasattr(options, attr):
            setattr(options, attr, value.tolist() if isinstance(value, np.ndarray) else value)
    return int(getattr(schema.BuiltinOptions, type_name)), options


def graph_to_bytes(graph: TFLiteGraph, *, description: str = "xai-core") -> bytes:
    """The flatbuffer bytes of ``graph`` (one subgraph), with the ``TFL3`` identifier."""
    import flatbuffers

    schema = _schema()
    model = schema.ModelT()
    model.version = 3
    model.description = description
    model.buffers = [schema.BufferT()]  # buffer 0 is the empty sentinel
    codes: dict[tuple[int, str | None], int] = {}
    model.operatorCodes = []
    sub = schema.SubGraphT()
    sub.tensors = []
    for t in graph.tensors:
        tt = schema.TensorT()
        tt.name = t.name
        tt.shape = list(t.shape)
        tt.type = _TYPE_OF_DTYPE[np.dtype(t.dtype)]
        tt.buffer = 0
        if t.data is not None:
            buf = schema.BufferT()
            buf.data = np.ascontiguousarray(t.data, dtype=t.dtype).view(np.uint8).ravel()
            model.buffers.append(buf)
            tt.buffer = len(model.buffers) - 1
        if t.scale is not None:
            q = schema.QuantizationParametersT()
            q.scale = np.asarray(t.scale, np.float32).tolist()
            q.zeroPoint = np.asarray(t.zero_point, np.int64).tolist()
            q.quantizedDimension = int(t.quantized_dimension)
            tt.quantization = q
        sub.tensors.append(tt)
    sub.operators = []
    for op in graph.operators:
        builtin = int(getattr(schema.BuiltinOperator, op.op))
        key = (builtin, op.custom_code)
        if key not in codes:
            code = schema.OperatorCodeT()
            code.builtinCode = builtin
            code.deprecatedBuiltinCode = min(builtin, 127)
            code.version = 1
            if op.custom_code:
                code.customCode = op.custom_code
            codes[key] = len(model.operatorCodes)
            model.operatorCodes.append(code)
        ot = schema.OperatorT()
        ot.opcodeIndex = codes[key]
        ot.inputs = list(op.inputs)
        ot.outputs = list(op.outputs)
        ot.builtinOptionsType, ot.builtinOptions = _options(schema, op.options_type, op.options)
        if op.custom_options:
            ot.customOptions = list(op.custom_options)
        sub.operators.append(ot)
    sub.inputs = list(graph.inputs)
    sub.outputs = list(graph.outputs)
    sub.name = "main"
    model.subgraphs = [sub]
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def write_tflite(graph: TFLiteGraph, path: str | os.PathLike[str]) -> Path:
    """Write ``graph`` to ``path`` atomically; return the path."""
    from xai_core.files import atomic_write

    data = graph_to_bytes(graph)
    return atomic_write(path, lambda f: f.write(data))
