"""Read a ``.tflite`` flatbuffer into plain Python: tensors, constant buffers and operators.

The flatbuffer is parsed with the ``tflite`` package (the schema's generated reader). Nothing
is allocated from a size the file declares until it has been checked against the bytes that
are really there: a constant tensor's shape times its element size must equal its buffer's
length, and a buffer stored after the flatbuffer (``offset``/``size``, for models over 2 GB)
must lie inside the file. A sparse constant (TFLite's ``SparsityParameters``, the input of
``DENSIFY``) is decoded to its dense value by :func:`.sparsity.densify`, which checks every
declared size and index first.

Every tensor's quantisation is checked as it is read (:func:`check_quantization`): finite,
positive, normal float32 scales, zero points within the tensor type's range, as many zero
points as scales, and one scale per tensor or one per channel along a dimension the tensor
has. The graph's structure is checked once it is read (:func:`check_structure`): every
tensor index in range, each operator writing at least one tensor, each tensor written once,
and operators in execution order (each reads only graph inputs, constants and tensors an
earlier operator wrote). Every error names the file, the operator (index and opcode) and
the tensor (index and name).
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.errors import ModelFormatError
from xai_core.importers.tflite.sparsity import densify
from xai_core.int8.graph import (
    TENSOR_TYPES,
    OperatorInfo,
    TensorInfo,
    TFLiteGraph,
    operator_label,
    tensor_label,
)

__all__ = [
    "OperatorInfo",
    "TFLiteGraph",
    "TensorInfo",
    "check_quantization",
    "check_structure",
    "operator_label",
    "read_tflite",
    "tensor_label",
]

#: Largest ``.tflite`` file read (the flatbuffer format itself stops at 2 GB).
MAX_FILE_BYTES = 2**31


#: The zero points a tensor type can hold (a runtime keeps them as int32).
_ZERO_POINT_RANGE: dict[np.dtype, tuple[int, int]] = {
    np.dtype(np.int8): (-128, 127),
    np.dtype(np.uint8): (0, 255),
    np.dtype(np.int16): (-(2**15), 2**15 - 1),
    np.dtype(np.int32): (-(2**31), 2**31 - 1),
    np.dtype(np.int64): (-(2**31), 2**31 - 1),
}
_TINY = float(np.finfo(np.float32).tiny)


def check_quantization(
    label: str,
    dtype: np.dtype,
    shape: tuple[int, ...],
    scale: np.ndarray,
    zero_point: np.ndarray,
    qdim: int,
    where: str,
) -> None:
    """Refuse quantisation parameters no int8 kernel can compute with.

    Parameters
    ----------
    label : str
        The tensor, for messages (``"tensor 3 ('dense/MatMul')"``).
    dtype : numpy.dtype
    shape : tuple of int
    scale : ndarray of float32, shape (n,)
    zero_point : ndarray of int64, shape (m,)
    qdim : int
        The quantised dimension (used when ``n > 1``).
    where : str
        The file, for messages.

    Raises
    ------
    ModelFormatError
        A scale that is 0, negative, NaN, infinite or subnormal (its reciprocal, which
        the kernels compute, would overflow); a zero point outside the type's range; a
        count of zero points other than the count of scales; several scales that are not
        one per channel of ``shape`` along ``qdim``.
    """
    n = len(scale)
    if len(zero_point) != n:
        raise ModelFormatError(
            f"{where}: {label} has {n} quantisation scale(s) but {len(zero_point)} zero "
            "point(s); they must come in pairs."
        )
    bad = ~(np.isfinite(scale) & (scale >= _TINY))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ModelFormatError(
            f"{where}: {label} has quantisation scale {float(scale[k])!r} (entry {k}); a "
            f"scale must be a finite, positive, normal float32 number (at least {_TINY:.3g})."
        )
    if n > 1:
        if not 0 <= qdim < len(shape):
            raise ModelFormatError(
                f"{where}: {label} of shape {shape} has {n} scales along dimension {qdim}, "
                f"which it does not have (it has {len(shape)})."
            )
        if shape[qdim] != n:
            raise ModelFormatError(
                f"{where}: {label} of shape {shape} has {n} quantisation scales for its "
                f"{shape[qdim]} channels along dimension {qdim}; expected 1 (per tensor) or "
                f"{shape[qdim]} (one per channel)."
            )
    lo, hi = _ZERO_POINT_RANGE.get(np.dtype(dtype), (-(2**31), 2**31 - 1))
    out = (zero_point < lo) | (zero_point > hi)
    if out.any():
        k = int(np.flatnonzero(out)[0])
        raise ModelFormatError(
            f"{where}: {label} of type {np.dtype(dtype)} has zero point {int(zero_point[k])} "
            f"(entry {k}); {np.dtype(dtype)} zero points lie in {lo}..{hi}."
        )


def check_structure(graph: TFLiteGraph) -> None:
    """Refuse a graph whose operators do not fit together.

    Every tensor index must name a tensor (an operator input may be -1, TFLite's "optional
    input omitted"; which inputs may be omitted is each operator's own rule, checked with
    its kernel); every operator writes at least one tensor and never -1; each tensor is
    written once (by the graph input or one operator) and never a constant; each operator
    reads only graph inputs, constants and tensors an earlier operator wrote (TFLite runs
    operators in the order stored); every graph output is written.

    Raises
    ------
    ModelFormatError
        Naming the operator (index and opcode) and the tensor.
    """
    where, n = graph.where, len(graph.tensors)
    for kind, indices in (("input", graph.inputs), ("output", graph.outputs)):
        for t in indices:
            if not 0 <= t < n:
                raise ModelFormatError(
                    f"{where}: the graph {kind} is tensor index {t}; the subgraph has {n} "
                    f"tensors (0..{n - 1})."
                )
    written: dict[int, str] = {t: "the graph input" for t in graph.inputs}
    for op in graph.operators:
        label = operator_label(op)
        for t in op.inputs:
            if t == -1:
                continue
            if not 0 <= t < n:
                raise ModelFormatError(
                    f"{where}: {label} reads tensor index {t}; the subgraph has {n} tensors "
                    f"(0..{n - 1}), and -1 (an omitted optional input) is the only other index."
                )
            if t not in written and graph.tensors[t].data is None:
                raise ModelFormatError(
                    f"{where}: {label} reads {graph.tensor_label(t)}, which is no constant, "
                    "no graph input and written by no earlier operator (operators must be "
                    "stored in execution order)."
                )
        if not op.outputs:
            raise ModelFormatError(f"{where}: {label} writes no tensor.")
        for t in op.outputs:
            if not 0 <= t < n:
                raise ModelFormatError(
                    f"{where}: {label} writes tensor index {t}; the subgraph has {n} tensors "
                    f"(0..{n - 1}), and an output cannot be omitted."
                )
            if t in written or graph.tensors[t].data is not None:
                first = written.get(t, "its constant buffer")
                raise ModelFormatError(
                    f"{where}: {label} writes {graph.tensor_label(t)}, which {first} "
                    "already writes; each tensor has one writer."
                )
            written[t] = label
    for t in graph.outputs:
        if t not in written and graph.tensors[t].data is None:
            raise ModelFormatError(
                f"{where}: the graph output {graph.tensor_label(t)} is written by no operator."
            )


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


def _buffer_bytes(model: Any, index: int, raw: bytes, where: str, label: str) -> bytes | None:
    n = model.BuffersLength()
    if not 0 <= index < n:
        if index == 0:  # the empty sentinel buffer, left out of the file
            return None
        raise ModelFormatError(f"{where}: {label} names buffer {index}; the model has {n} buffers.")
    buf = model.Buffers(index)
    if buf is None:
        return None
    offset, size = int(buf.Offset()), int(buf.Size())
    if offset > 1:  # stored after the flatbuffer
        if offset + size > len(raw):
            raise ModelFormatError(
                f"{where}: {label}'s buffer {index} declares {size:,} bytes at offset "
                f"{offset:,}, past the end of the {len(raw):,}-byte file."
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
        Not a TFLite flatbuffer; a constant whose declared shape does not match its
        bytes; quantisation parameters no kernel can use (:func:`check_quantization`); or
        operators that do not fit together (:func:`check_structure`). The message names
        the file, the operator and the tensor.
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
    where = Path(path).name if path else "the .tflite bytes"
    if len(raw) < 8 or raw[4:8] != b"TFL3":
        raise ModelFormatError(
            f"{where}: not a TensorFlow Lite model: the file lacks the 'TFL3' identifier at byte 4."
        )
    try:
        graph = _read_graph(tflite.Model.GetRootAsModel(raw, 0), raw, path, where)
    except ModelFormatError:
        raise
    except Exception as exc:  # a corrupt flatbuffer raises anything from struct to IndexError
        raise ModelFormatError(
            f"{where}: the .tflite flatbuffer is corrupt: {type(exc).__name__}: {exc}"
        ) from exc
    check_structure(graph)
    _check_quantizations(graph)
    return graph


def _check_quantizations(graph: TFLiteGraph) -> None:
    """:func:`check_quantization` of every quantised tensor, naming the first operator that
    reads or writes it."""
    users: dict[int, str] = {}
    for op in graph.operators:
        for role, indices in (("input", op.inputs), ("output", op.outputs)):
            for k, t in enumerate(indices):
                users.setdefault(t, f"{operator_label(op)}, {role} {k}, ")
    for t in graph.tensors:
        if t.scale is not None:
            label = f"{users.get(t.index, '')}{tensor_label(t)}"
            check_quantization(
                label, t.dtype, t.shape, t.scale, t.zero_point, t.quantized_dimension, graph.where
            )


#: MediaPipe's ``TfLitePadding`` (1 SAME, 2 VALID) -> the schema's ``Padding`` (0 SAME, 1 VALID).
_TFLITE_PADDING = {1: 0, 2: 1}


def _custom_options(code: str, blob: bytes, where: str, index: int) -> dict[str, Any]:
    """The options of a custom operator whose layout is known, by the builtin options' names.

    MediaPipe's ``Convolution2DTransposeBias`` stores a ``TfLiteTransposeConvParams`` struct:
    int32 padding (``TfLitePadding``), stride width, stride height (later fields ignored).
    """
    if code != "Convolution2DTransposeBias":
        return {}
    if len(blob) < 12:
        raise ModelFormatError(
            f"{where}: operator {index} ({code}) has {len(blob)} bytes of options; its "
            "TfLiteTransposeConvParams take at least 12 (padding, stride width, stride height)."
        )
    padding, stride_w, stride_h = (int(v) for v in np.frombuffer(blob[:12], "<i4"))
    if padding not in _TFLITE_PADDING:
        raise ModelFormatError(
            f"{where}: operator {index} ({code}) has padding {padding}; expected 1 (SAME) or "
            "2 (VALID)."
        )
    return {"Padding": _TFLITE_PADDING[padding], "StrideW": stride_w, "StrideH": stride_h}


def _read_graph(model: Any, raw: bytes, path: str | None, where: str) -> TFLiteGraph:
    """The first subgraph's tensors and operators (the flatbuffer read field by field)."""
    if model.SubgraphsLength() < 1:
        raise ModelFormatError(f"{where}: the model has no subgraph.")
    graph = model.Subgraphs(0)
    names = _builtin_names()
    tensors = [
        _read_tensor(model, graph.Tensors(i), i, raw, where) for i in range(graph.TensorsLength())
    ]
    n_codes = model.OperatorCodesLength()
    operators = []
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        if not 0 <= op.OpcodeIndex() < n_codes:
            raise ModelFormatError(
                f"{where}: operator {i} has opcode index {op.OpcodeIndex()}; the model has "
                f"{n_codes} operator codes."
            )
        code = model.OperatorCodes(op.OpcodeIndex())
        builtin = max(int(code.BuiltinCode()), int(code.DeprecatedBuiltinCode()))
        custom = code.CustomCode()
        options_type, options = _read_options(op)
        custom_options = op.CustomOptionsAsNumpy().tobytes() if op.CustomOptionsLength() else b""
        if custom:
            options = _custom_options(custom.decode("utf-8", "replace"), custom_options, where, i)
        operators.append(
            OperatorInfo(
                index=i,
                op=names.get(builtin, f"BUILTIN_{builtin}"),
                inputs=tuple(int(t) for t in op.InputsAsNumpy()) if op.InputsLength() else (),
                outputs=tuple(int(t) for t in op.OutputsAsNumpy()) if op.OutputsLength() else (),
                options=options,
                custom_code=custom.decode("utf-8", "replace") if custom else None,
                options_type=options_type,
                custom_options=custom_options,
            )
        )
    description = model.Description()
    return TFLiteGraph(
        tensors=tuple(tensors),
        operators=tuple(operators),
        inputs=tuple(int(t) for t in graph.InputsAsNumpy()) if graph.InputsLength() else (),
        outputs=tuple(int(t) for t in graph.OutputsAsNumpy()) if graph.OutputsLength() else (),
        description=description.decode("utf-8", "replace") if description else "",
        path=path,
    )


def _read_tensor(model: Any, t: Any, index: int, raw: bytes, where: str) -> TensorInfo:
    kind = int(t.Type())
    name = t.Name().decode("utf-8", "replace") if t.Name() else f"tensor_{index}"
    label = f"tensor {index} ({name!r})"
    if kind not in TENSOR_TYPES:
        raise ModelFormatError(
            f"{where}: {label} has TFLite type {kind}, which is not supported (supported: "
            f"{', '.join(str(d) for d in TENSOR_TYPES.values())})."
        )
    dtype = TENSOR_TYPES[kind]
    shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
    if any(d < 0 for d in shape):
        raise ModelFormatError(f"{where}: {label} has a negative dimension in {shape}.")
    scale = zero_point = None
    qdim = 0
    q = t.Quantization()
    if q is not None and q.ScaleLength() > 0:
        scale = np.asarray(q.ScaleAsNumpy(), dtype=np.float32)
        zero_point = (
            np.asarray(q.ZeroPointAsNumpy(), dtype=np.int64)
            if q.ZeroPointLength()
            else np.zeros(0, np.int64)
        )
        qdim = int(q.QuantizedDimension())
    data = None
    blob = _buffer_bytes(model, int(t.Buffer()), raw, where, label)
    if blob is not None:
        count = 1
        for d in shape:  # Python ints: no overflow on absurd shapes
            count *= d
        expected = count * dtype.itemsize
        sparsity = t.Sparsity()
        if sparsity is not None:  # only the non-zero values are stored
            if len(blob) % dtype.itemsize:
                raise ModelFormatError(
                    f"{where}: the sparse {label} of {dtype} holds {len(blob):,} bytes, not a "
                    f"whole number of {dtype.itemsize}-byte values."
                )
            values = np.frombuffer(blob, dtype=dtype).copy()
            data = densify(sparsity, values, shape, label, where)
        elif expected != len(blob):
            raise ModelFormatError(
                f"{where}: {label} declares shape {shape} of {dtype} ({expected:,} bytes) but "
                f"its buffer holds {len(blob):,} bytes."
            )
        else:
            data = np.frombuffer(blob, dtype=dtype).reshape(shape).copy()
        if dtype.kind == "f" and np.isnan(data).any():
            raise ModelFormatError(f"{where}: the constant {label} holds NaN.")
    return TensorInfo(index, name, shape, dtype, scale, zero_point, qdim, data)
