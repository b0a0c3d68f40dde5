"""Read an ONNX model into the neutral :class:`~xai_core.importers.ir.IRGraph`.

Uses the ``onnx`` package (protobuf; never pickle). Every tensor's declared shape is checked
against the bytes in the file before it becomes an array; weights stored in external files
beside a model file are read from them under the same check
(:class:`~xai_core.importers.onnx_external.ExternalData`). ``Constant`` nodes become
initialisers.
"""

from __future__ import annotations

import heapq
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.errors import CapabilityError, ModelFormatError, UnknownNameError, ValidationError
from xai_core.importers.ir import IRGraph, IRNode, check_size
from xai_core.importers.onnx_external import ExternalData
from xai_core.optional import require

__all__ = ["read_onnx", "load_onnx_model"]

#: Largest ``.onnx`` file read: protobuf's own limit on one message (2 GiB).
MAX_FILE_BYTES = 2**31


def _onnx():
    return require("onnx", extra="import", need="reading ONNX")


def load_onnx_model(source: Any):
    """An ``onnx.ModelProto`` from a path, bytes, a binary file object or a ModelProto."""
    onnx = _onnx()
    if isinstance(source, onnx.ModelProto):
        return source, "the ONNX model"
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, where = bytes(source), "the ONNX bytes"
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise ValidationError(
                f"path_or_model must be an ONNX file; {str(path)!r} is not a file."
            )
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ModelFormatError(
                f"{path.name} holds {path.stat().st_size:,} bytes, over the 2 GiB a protobuf "
                "ONNX file can hold; it is not read."
            )
        data, where = path.read_bytes(), path.name
    elif hasattr(source, "read"):
        data, where = source.read(), "the ONNX stream"
    else:
        raise ValidationError(
            "path_or_model must be a path to an .onnx file, its bytes or an onnx.ModelProto; "
            f"got {type(source).__name__}."
        )
    try:
        model = onnx.load_model_from_string(data)
    except Exception as exc:  # protobuf's DecodeError and friends
        raise ModelFormatError(f"{where} is not an ONNX model: {exc}") from None
    if not model.HasField("graph"):
        raise ModelFormatError(f"{where} is not an ONNX model: it has no graph.")
    return model, where


#: TensorProto data types whose raw bytes are the numpy array's, little-endian
#: (FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, BOOL, FLOAT16, DOUBLE, UINT32, UINT64).
_PLAIN_RAW = frozenset((1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13))


#: TensorProto data types packed several to a byte, and their bits (UINT4, INT4, FLOAT4E2M1,
#: UINT2, INT2).
_PACKED = {21: 4, 22: 4, 23: 4, 25: 2, 26: 2}


def _tensor(t, where: str, external: ExternalData) -> np.ndarray:
    """A checked numpy copy of a TensorProto (its bytes read from ``external`` when the
    tensor keeps them in a file beside the model)."""
    onnx = _onnx()
    from onnx import numpy_helper

    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.data_type))
    except Exception:
        raise ModelFormatError(
            f"{where}: tensor {t.name!r} has an unknown data type {t.data_type}."
        ) from None
    if t.data_location == onnx.TensorProto.EXTERNAL:
        if t.data_type == onnx.TensorProto.STRING:
            raise ModelFormatError(
                f"{where}: tensor {t.name!r} keeps strings in an external file; ONNX stores "
                "only numbers there."
            )
        flat = external.read(t, dtype)  # checked against the tensor's shape before allocating
        if t.data_type in _PLAIN_RAW and sys.byteorder == "little":
            return flat.reshape(tuple(t.dims))
        inline = onnx.TensorProto()
        inline.name, inline.data_type = t.name, t.data_type
        inline.dims.extend(t.dims)
        inline.raw_data = flat.tobytes()
        return np.array(numpy_helper.to_array(inline))
    if t.HasField("raw_data"):
        raw = t.raw_data  # each read of the field is a copy of its bytes: read it once
        bits = _PACKED.get(t.data_type)
        if bits:  # int4, float4, int2: elements packed several to a byte
            count = check_size(t.name, t.dims, None, dtype.itemsize, where)
            if len(raw) != -(-count * bits // 8):
                raise ModelFormatError(
                    f"{where}: tensor {t.name!r} declares shape {list(t.dims)} ({count} "
                    f"{bits}-bit values, {-(-count * bits // 8)} bytes) but the file holds "
                    f"{len(raw)} bytes for it."
                )
            return np.array(numpy_helper.to_array(t))
        check_size(t.name, t.dims, len(raw), dtype.itemsize, where)
        if t.data_type in _PLAIN_RAW and sys.byteorder == "little":
            return np.frombuffer(raw, dtype=dtype).reshape(tuple(t.dims)).copy()
    else:
        fields = (
            "float_data",
            "int32_data",
            "int64_data",
            "double_data",
            "uint64_data",
            "string_data",
        )
        stored = max(len(getattr(t, f)) for f in fields)
        count = check_size(t.name, t.dims, None, dtype.itemsize, where)
        if stored != count:
            raise ModelFormatError(
                f"{where}: tensor {t.name!r} declares shape {list(t.dims)} ({count} values) "
                f"but the file holds {stored} values for it."
            )
    return np.array(numpy_helper.to_array(t))


def _attrs(node, where: str, onnx: Any, external: ExternalData) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in node.attribute:
        if a.type == onnx.AttributeProto.TENSOR:
            out[a.name] = _tensor(a.t, where, external)
        elif a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            raise CapabilityError(
                f"{where}: node {node.name!r} ({node.op_type}) has a subgraph; control flow "
                "is not supported."
            )
        else:
            value = onnx.helper.get_attribute_value(a)
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            elif isinstance(value, list):
                value = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
            out[a.name] = value
    return out


def _dims(value_info) -> list[Any] | None:
    t = value_info.type
    if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    return [
        d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
        for d in t.tensor_type.shape.dim
    ]


def _constant_value(node, attrs: dict[str, Any], where: str) -> np.ndarray:
    if "value" in attrs:
        return attrs["value"]
    for key, dtype in (
        ("value_float", np.float32),
        ("value_floats", np.float32),
        ("value_int", np.int64),
        ("value_ints", np.int64),
    ):
        if key in attrs:
            return np.asarray(attrs[key], dtype=dtype)
    raise CapabilityError(
        f"{where}: Constant node {node.name!r} has none of value, value_float(s), value_int(s)."
    )


def _node_label(node: IRNode, i: int) -> str:
    """``node 3 (Add 'name')``: how messages name a node of the file."""
    return f"node {i} ({node.op} {node.name!r})" if node.name else f"node {i} ({node.op})"


def _node_order(
    nodes: list[IRNode], input_names: set[str], initializers: dict[str, Any], where: str
) -> list[int]:
    """The nodes' indices in an order where each reads only tensors written before it.

    Every tensor must have one writer: the graph input, an initializer or a single node
    output (onnxruntime refuses a second writer, and which value a reader would get is not
    defined). Nodes are kept in file order where they already are in order (ONNX asks
    for that); otherwise they are sorted the way onnxruntime sorts them, a node after
    the writers of its inputs (O(n log n) in the number of nodes).

    Raises
    ------
    ModelFormatError
        A tensor written twice, a node writing nothing, a node reading a tensor nothing
        writes, or a cycle.
    """
    writer: dict[str, int] = {}  # tensor -> the node writing it
    for i, node in enumerate(nodes):
        outs = [o for o in node.outputs if o]
        if not outs:
            raise ModelFormatError(f"{where}: {_node_label(node, i)} writes no tensor.")
        for o in outs:
            first = (
                f"the graph input {o!r}"
                if o in input_names
                else "an initializer"
                if o in initializers
                else _node_label(nodes[writer[o]], writer[o])
                if o in writer
                else None
            )
            if first is not None:
                raise ModelFormatError(
                    f"{where}: tensor {o!r} is written twice: by {first} and by "
                    f"{_node_label(node, i)}; each tensor must have one writer."
                )
            writer[o] = i
    waiting: list[int] = []  # per node, how many of its inputs are not yet written
    readers: dict[str, list[int]] = {}
    ready: list[int] = []
    for i, node in enumerate(nodes):
        pending = set()
        for name in node.inputs:
            if not name or name in initializers or name in input_names:
                continue
            if name not in writer:
                raise ModelFormatError(
                    f"{where}: {_node_label(node, i)} reads tensor {name!r}, which no node, "
                    "initializer or graph input writes."
                )
            pending.add(name)
        for name in pending:
            readers.setdefault(name, []).append(i)
        waiting.append(len(pending))
        if not pending:
            ready.append(i)
    heapq.heapify(ready)  # smallest index first: file order wherever it is already valid
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for o in nodes[i].outputs:
            for j in readers.get(o, ()):
                waiting[j] -= 1
                if waiting[j] == 0:
                    heapq.heappush(ready, j)
    if len(order) != len(nodes):
        stuck = min(set(range(len(nodes))) - set(order))
        raise ModelFormatError(
            f"{where}: {_node_label(nodes[stuck], stuck)} depends on its own output (the "
            "nodes form a cycle)."
        )
    return order


def _check_schema(
    node: IRNode, proto: Any, i: int, opset: int, schemas: dict[str, Any], where: str
) -> None:
    """The node's input and output counts and required attributes, against ONNX's schema.

    Operators ONNX does not know are left to the supported-operator check.
    """
    import onnx.defs

    op = node.op
    if op not in schemas:
        try:
            schemas[op] = onnx.defs.get_schema(op, opset, "")
        except Exception:  # SchemaError: not an ONNX operator at this opset
            schemas[op] = None
    schema = schemas[op]
    if schema is None:
        return
    for kind, got, lo, hi in (
        ("inputs", len(node.inputs), schema.min_input, schema.max_input),
        ("outputs", len(node.outputs), schema.min_output, schema.max_output),
    ):
        if not lo <= got <= hi:
            takes = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi < 2**31 - 1 else f"{lo} or more"
            raise ModelFormatError(
                f"{where}: {_node_label(node, i)} has {got} {kind}; {op} takes {takes} (ONNX "
                f"opset {opset})."
            )
    formal = list(schema.inputs)
    optional = {
        k
        for k, f in enumerate(formal)
        if f.option == onnx.defs.OpSchema.FormalParameterOption.Optional
    }
    if not all(name or k in optional for k, name in enumerate(node.inputs[: schema.min_input])):
        k = next(k for k, name in enumerate(node.inputs) if not name and k not in optional)
        raise ModelFormatError(
            f"{where}: {_node_label(node, i)} leaves its required input {k} empty."
        )
    required = [name for name, attr in schema.attributes.items() if attr.required]
    if required:
        given = {a.name for a in proto.attribute}
        for name in required:
            if name not in given:
                raise ModelFormatError(
                    f"{where}: {_node_label(node, i)} lacks the attribute {name!r}, which {op} "
                    "requires."
                )


#: Initialisers of at most this many elements keep their values for shape inference.
SMALL_CONSTANT = 64


def _shapes_only(model: Any, onnx: Any, values: dict[str, np.ndarray]) -> Any:
    """``model`` for shape inference: each large floating-point initialiser a graph input
    of its type and shape instead, so its bytes are not serialised for ONNX's inference.

    Integer and small initialisers (reshape targets, axes, pads, scales: the values an
    output shape can depend on) keep their values, so the shapes inferred are those of
    the whole model; those kept in external files are given inline from ``values`` (the
    arrays read), since ONNX's inference reads no file.
    """
    from onnx import numpy_helper

    graph = model.graph
    external = onnx.TensorProto.EXTERNAL
    float_types = {
        onnx.TensorProto.FLOAT,
        onnx.TensorProto.DOUBLE,
        onnx.TensorProto.FLOAT16,
        onnx.TensorProto.BFLOAT16,
    }
    big = [
        t
        for t in graph.initializer
        if t.data_type in float_types and np.prod(t.dims, dtype=np.float64) > SMALL_CONSTANT
    ]
    if not big and all(t.data_location != external for t in graph.initializer):
        return model
    slim = onnx.ModelProto()
    slim.ir_version = model.ir_version
    slim.opset_import.extend(model.opset_import)
    g = slim.graph
    g.node.extend(graph.node)
    held = {t.name for t in big}
    for t in graph.initializer:
        if t.name in held:
            continue
        if t.data_location == external:
            try:
                t = numpy_helper.from_array(values[t.name], t.name)
            except Exception:  # a type from_array does not write: inferred as an input
                big.append(t)
                held.add(t.name)
                continue
        g.initializer.append(t)
    g.input.extend(vi for vi in graph.input if vi.name not in held)
    g.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, t.dims) for t in big)
    g.output.extend(graph.output)
    g.value_info.extend(graph.value_info)
    return slim


def _sample_shape(vi: Any, where: str) -> tuple[int, ...]:
    """The per-sample shape of a graph input of shape (batch, *sample).

    Raises
    ------
    CapabilityError
        A per-sample scalar (fewer than two dimensions) or an axis of size 0.
    ModelFormatError
        Unknown or invalid sample sizes.
    """
    dims = _dims(vi)
    if dims is not None and len(dims) < 2:
        raise CapabilityError(
            f"{where}: input {vi.name!r} has {len(dims)} dimension"
            f"{'' if len(dims) == 1 else 's'} ({dims}); the network's input is (batch, *sample) "
            "with at least one sample axis (a per-sample scalar is not supported)."
        )
    if dims is not None and any(d == 0 for d in dims[1:]):
        raise CapabilityError(
            f"{where}: input {vi.name!r} declares {dims}: samples with no elements "
            "(an axis of size 0) are not supported."
        )
    if dims is None or len(dims) < 2 or any(not isinstance(d, int) or d < 1 for d in dims[1:]):
        raise ModelFormatError(
            f"{where}: input {vi.name!r} must have shape (batch, *sample) with known "
            f"sample sizes; it declares {dims}."
        )
    return tuple(int(d) for d in dims[1:])


def fix_input_shapes(model: Any, input_shapes: Any, where: str, *, copy: bool) -> Any:
    """``model`` (a copy of it with ``copy``) whose graph inputs declare the per-sample
    shapes of ``input_shapes``: a mapping of input name to shape, or one shape for a model
    of one input. Each shape is the input's without the batch axis; it replaces the
    symbolic sizes (``"sequence"``) and must agree with the sizes the file fixes. Every
    shape is checked before the model is changed.

    Raises
    ------
    UnknownNameError
        A name that is not one of the graph's inputs.
    ValidationError
        A shape that is not positive integers of the input's rank, or that changes a size
        the file fixes.
    """
    onnx = _onnx()
    weights = {t.name for t in model.graph.initializer}
    inputs = [vi for vi in model.graph.input if vi.name not in weights]
    if not isinstance(input_shapes, Mapping):
        if len(inputs) != 1:
            raise ValidationError(
                f"input_shapes must be a mapping of input name to shape for a model of "
                f"{len(inputs)} inputs ({', '.join(vi.name for vi in inputs)}); got "
                f"{input_shapes!r}."
            )
        input_shapes = {inputs[0].name: input_shapes}
    by_name = {vi.name: vi for vi in inputs}
    sizes: list[tuple[str, int, int]] = []  # (input, axis, size), all checked first
    for name, shape in input_shapes.items():
        if name not in by_name:
            raise UnknownNameError("input of input_shapes", name, list(by_name))
        try:
            sample = tuple(int(d) for d in shape)
            ok = all(d >= 1 and d == s for d, s in zip(sample, shape, strict=True))
        except (TypeError, ValueError):
            ok = False
        dims = _dims(by_name[name])
        if not ok or dims is None or len(sample) != len(dims) - 1:
            raise ValidationError(
                f"input_shapes[{name!r}] must be the input's shape without the batch axis, "
                f"{len(dims) - 1 if dims else 'its'} positive integers (it declares "
                f"{dims}); got {shape!r}."
            )
        for axis, (size, declared) in enumerate(zip(sample, dims[1:]), 1):
            if isinstance(declared, int) and declared > 0 and declared != size:
                raise ValidationError(
                    f"input_shapes[{name!r}] gives axis {axis} the size {size}; {where} fixes "
                    f"it at {declared} ({dims})."
                )
            sizes.append((name, axis, size))
    if copy:  # the caller's model stays as it is
        fixed = onnx.ModelProto()
        fixed.CopyFrom(model)
        model = fixed
    targets = {vi.name: vi for vi in model.graph.input}
    for name, axis, size in sizes:
        dim = targets[name].type.tensor_type.shape.dim[axis]
        dim.Clear()
        dim.dim_value = size
    return model


def read_onnx(source: Any, input_shapes: Any = None) -> IRGraph:
    """Read an ONNX model (path, bytes or ModelProto) into an :class:`IRGraph`.

    Tensors kept in external files are read from the files beside a model given by its
    path (:class:`~xai_core.importers.onnx_external.ExternalData` states the checks).
    ``input_shapes`` fixes the inputs' symbolic sample sizes (:func:`fix_input_shapes`).

    Raises
    ------
    ModelFormatError
        Not an ONNX model, a tensor whose declared shape disagrees with its data, external
        data that is refused (outside the model's directory, missing, shorter than
        declared, or given without a directory), no single input of known per-sample
        shape, or a graph whose nodes do not fit together (a tensor written twice, read
        but never written, a cycle).
    CapabilityError
        Inputs of different batch sizes, an operator outside the default domain, control
        flow.
    """
    onnx = _onnx()
    model, where = load_onnx_model(source)
    if input_shapes is not None:  # a model read here is changed in place, the caller's copied
        model = fix_input_shapes(model, input_shapes, where, copy=model is source)
    directory = Path(source).parent if isinstance(source, (str, os.PathLike)) else None
    external = ExternalData(directory, where)
    graph = model.graph
    initializers: dict[str, np.ndarray] = {}
    for t in graph.initializer:
        if t.name in initializers:
            raise ModelFormatError(f"{where}: two initializers are named {t.name!r}.")
        initializers[t.name] = _tensor(t, where, external)
    inputs = [vi for vi in graph.input if vi.name not in initializers]
    if not inputs:
        raise CapabilityError(f"{where}: the graph has no input (every input is an initializer).")
    if not graph.output:
        raise ModelFormatError(f"{where}: the graph has no output.")
    symbolic = {
        vi.name: tuple(d if isinstance(d, int) and d > 0 else 128 for d in dims[1:])
        for vi in inputs
        if (dims := _dims(vi)) and len(dims) >= 2 and not all(isinstance(d, int) for d in dims[1:])
    }
    if symbolic:  # every input at once, with the argument that fixes them
        listed = ", ".join(
            f"{vi.name!r} declares {_dims(vi)}" for vi in inputs if vi.name in symbolic
        )
        raise ModelFormatError(
            f"{where}: the inputs' sample sizes must be known; {listed}. Fix them with "
            f"from_onnx(..., input_shapes={symbolic}) (128 standing for each symbolic size)."
        )
    shapes = [_sample_shape(vi, where) for vi in inputs]
    dims = _dims(inputs[0])
    batches = {vi.name: _dims(vi)[0] for vi in inputs if isinstance(_dims(vi)[0], int)}
    if len(set(batches.values())) > 1:
        raise CapabilityError(
            f"{where}: the inputs declare different batch sizes {batches}; every input's "
            "first axis is the batch axis the samples share."
        )
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    protos = list(graph.node)
    parsed = [IRNode(p.op_type, p.name, list(p.input), list(p.output)) for p in protos]
    order = _node_order(parsed, {vi.name for vi in inputs}, initializers, where)
    names = {o.name for o in graph.output}
    missing = names - {
        *(vi.name for vi in inputs),
        *initializers,
        *(o for n in parsed for o in n.outputs),
    }
    if missing:
        raise ModelFormatError(
            f"{where}: the graph output {sorted(missing)[0]!r} is written by no node, "
            "initializer or graph input."
        )
    schemas: dict[str, Any] = {}
    nodes: list[IRNode] = []
    for i in order:
        node, proto = parsed[i], protos[i]
        if proto.domain not in ("", "ai.onnx"):
            raise CapabilityError(
                f"{where}: operator {node.op!r} ({_node_label(node, i)}) is from the domain "
                f"{proto.domain!r}; only the default ONNX domain is supported."
            )
        _check_schema(node, proto, i, opset or 13, schemas, where)
        node.name = node.name or f"{node.op.lower()}_{i}"
        node.attrs = _attrs(proto, where, onnx, external)
        if node.op == "Constant":
            initializers[node.outputs[0]] = _constant_value(proto, node.attrs, where)
            continue
        nodes.append(node)

    declared: dict[str, tuple[int, ...]] = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(_shapes_only(model, onnx, initializers)).graph
        infos = [*inferred.value_info, *inferred.output]
    except Exception:  # inference is a cross-check only; fall back to what the file states
        infos = [*graph.value_info, *graph.output]
    types: dict[str, int] = {}
    for vi in [*inputs, *infos]:
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            types[vi.name] = int(vi.type.tensor_type.elem_type)
    for vi in infos:
        d = _dims(vi)
        if d and all(isinstance(x, int) and x > 0 for x in d[1:]):
            declared[vi.name] = tuple(d[1:])
    return IRGraph(
        nodes=nodes,
        initializers=initializers,
        input_name=inputs[0].name,
        input_shape=shapes[0],
        output_name=graph.output[0].name,
        more_inputs={vi.name: shape for vi, shape in zip(inputs[1:], shapes[1:])},
        more_outputs=[o.name for o in graph.output[1:]],
        declared=declared,
        types=types,
        meta={
            "source": where,
            "producer": f"{model.producer_name} {model.producer_version}".strip(),
            "opset": opset,
            "batch": dims[0] if isinstance(dims[0], int) and dims[0] > 0 else None,
            "metadata": {p.key: p.value for p in model.metadata_props},
        },
    )
