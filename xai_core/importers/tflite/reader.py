"""Read a ``.tflite`` flatbuffer into plain Python: tensors, constant buffers and operators.

The flatbuffer is parsed with the ``tflite`` package (the schema's generated reader). Nothing
is allocated from a size the file declares until it has been checked against the bytes that
are really there: a constant tensor's shape times its element size must equal its buffer's
length, and a buffer stored after the flatbuffer (``offset``/``size``, for models over 2 GB)
must lie inside the file.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.errors import ModelFormatError
from xai_core.int8.graph import TENSOR_TYPES, OperatorInfo, TensorInfo, TFLiteGraph

__all__ = ["TFLiteGraph", "TensorInfo", "OperatorInfo", "read_tflite"]

#: Largest ``.tflite`` file read (the flatbuffer format itself stops at 2 GB).
MAX_FILE_BYTES = 2**31


def _builtin_names() -> dict[int, str]:
    from tflite.BuiltinOperator import BuiltinOperator

    return {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}


def _options_classes() -> dict[int, str]:
    from tflite.BuiltinOptions import BuiltinOptions

    return {v: k for k, v in vars(BuiltinOptions).items() if not k.startswith("_")}


_SKIP = ("GetRootAs", "Init", "BufferHasIdentifier")


def _read_options(op: Any) -> tuple[str | None, dict[str, Any]]:
    """The options table's name and every scalar field, by name (``StrideH``: 2, ...)."""
    import tflite

    kind = op.BuiltinOptionsType()
    if kind == 0:
        return None, {}
    cls_name = _options_classes().get(kind)
    table = op.BuiltinOptions()
    cls = getattr(tflite, cls_name, None) if cls_name else None
    if cls is None or table is None:
        return cls_name, {}
    options = cls()
    options.Init(table.Bytes, table.Pos)
    values: dict[str, Any] = {}
    for name, method in inspect.getmembers(options, inspect.ismethod):
        if name.startswith("_") or any(name.endswith(s) or name.startswith(s) for s in _SKIP):
            continue
        if name.endswith(("IsNone", "Length")):
            continue
        if name.endswith("AsNumpy"):
            values[name[: -len("AsNumpy")]] = np.asarray(method())
            continue
        if len(inspect.signature(method).parameters) == 0 and name + "AsNumpy" not in values:
            values[name] = method()
    return cls_name, values


def _buffer_bytes(model: Any, index: int, raw: bytes) -> bytes | None:
    buf = model.Buffers(index)
    if buf is None:
        return None
    offset, size = int(buf.Offset()), int(buf.Size())
    if offset > 1:  # stored after the flatbuffer
        if offset + size > len(raw):
            raise ModelFormatError(
                f"buffer {index} declares {size:,} bytes at offset {offset:,}, past the end of "
                f"the {len(raw):,}-byte file."
            )
        return raw[offset : offset + size]
    if buf.DataLength() == 0:
        return None
    return buf.DataAsNumpy().tobytes()


def read_tflite(source: str | os.PathLike[str] | bytes) -> TFLiteGraph:
    """Parse a ``.tflite`` file (a path or its bytes).

    Raises
    ------
    ModelFormatError
        Not a TFLite flatbuffer, more than one subgraph's worth of control flow we cannot
        run, or a constant whose declared shape does not match its bytes.
    """
    from xai_core.optional import require

    tflite = require("tflite", extra="tflite", need="reading .tflite files")
    path = None
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw = bytes(source)
    else:
        p = Path(source)
        if not p.is_file():
            raise ModelFormatError(f"path must be a .tflite file; {str(p)!r} is not a file.")
        if p.stat().st_size > MAX_FILE_BYTES:
            raise ModelFormatError(f"{p.name} is over 2 GB, the flatbuffer format's limit.")
        raw, path = p.read_bytes(), str(p)
    if len(raw) < 8 or raw[4:8] != b"TFL3":
        raise ModelFormatError(
            "not a TensorFlow Lite model: the file lacks the 'TFL3' identifier at byte 4."
        )
    try:
        model = tflite.Model.GetRootAsModel(raw, 0)
        if model.SubgraphsLength() < 1:
            raise ModelFormatError("the model has no subgraph.")
        graph = model.Subgraphs(0)
        names = _builtin_names()
        tensors = [
            _read_tensor(model, graph.Tensors(i), i, raw) for i in range(graph.TensorsLength())
        ]
        operators = []
        for i in range(graph.OperatorsLength()):
            op = graph.Operators(i)
            code = model.OperatorCodes(op.OpcodeIndex())
            builtin = max(int(code.BuiltinCode()), int(code.DeprecatedBuiltinCode()))
            custom = code.CustomCode()
            options_type, options = _read_options(op)
            operators.append(
                OperatorInfo(
                    index=i,
                    op=names.get(builtin, f"BUILTIN_{builtin}"),
                    inputs=tuple(int(t) for t in op.InputsAsNumpy()) if op.InputsLength() else (),
                    outputs=tuple(int(t) for t in op.OutputsAsNumpy()),
                    options=options,
                    custom_code=custom.decode("utf-8", "replace") if custom else None,
                    options_type=options_type,
                )
            )
        description = model.Description()
        return TFLiteGraph(
            tensors=tuple(tensors),
            operators=tuple(operators),
            inputs=tuple(int(t) for t in graph.InputsAsNumpy()),
            outputs=tuple(int(t) for t in graph.OutputsAsNumpy()),
            description=description.decode("utf-8", "replace") if description else "",
            path=path,
        )
    except ModelFormatError:
        raise
    except Exception as exc:  # a corrupt flatbuffer raises anything from struct to IndexError
        raise ModelFormatError(
            f"the .tflite flatbuffer is corrupt: {type(exc).__name__}: {exc}"
        ) from exc


def _read_tensor(model: Any, t: Any, index: int, raw: bytes) -> TensorInfo:
    kind = int(t.Type())
    if kind not in TENSOR_TYPES:
        raise ModelFormatError(f"tensor {index} has TFLite type {kind}, which is not supported.")
    dtype = TENSOR_TYPES[kind]
    shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
    if any(d < 0 for d in shape):
        raise ModelFormatError(f"tensor {index} has a negative dimension in {shape}.")
    name = t.Name().decode("utf-8", "replace") if t.Name() else f"tensor_{index}"
    scale = zero_point = None
    qdim = 0
    q = t.Quantization()
    if q is not None and q.ScaleLength() > 0:
        scale = np.asarray(q.ScaleAsNumpy(), dtype=np.float32)
        zero_point = (
            np.asarray(q.ZeroPointAsNumpy(), dtype=np.int64)
            if q.ZeroPointLength()
            else np.zeros(len(scale), np.int64)
        )
        qdim = int(q.QuantizedDimension())
    data = None
    blob = _buffer_bytes(model, int(t.Buffer()), raw)
    if blob is not None:
        expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if expected != len(blob):
            raise ModelFormatError(
                f"tensor {index} ({name!r}) declares shape {shape} of {dtype} ({expected:,} bytes) "
                f"but its buffer holds {len(blob):,} bytes."
            )
        data = np.frombuffer(blob, dtype=dtype).reshape(shape).copy()
    return TensorInfo(index, name, shape, dtype, scale, zero_point, qdim, data)
