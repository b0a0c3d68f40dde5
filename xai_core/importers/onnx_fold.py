"""Constant folding at import: a node whose inputs are all constants is evaluated once.

Exporters leave computations on constants in the graph: Swin v2's relative-position-bias
MLP (``MatMul``, ``Relu``, ``Sigmoid`` on a constant coordinate table), a weight
transposed or scaled before use. Such a node computes the same tensor for every input, so
it is evaluated here, once, with onnx's own reference implementation
(:class:`onnx.reference.ReferenceEvaluator` on the node alone, at the model's opset), and
its outputs become constants like the initialisers: the network never carries it.

Converters registered with ``folds=True`` fold their nodes themselves (they also handle
shapes holding the batch size, which the reference cannot); the rest of the registry's
converters see a node only when one of its inputs is computed at run time, or when the
reference cannot evaluate it.

A hostile file could ask for a huge constant from small ones (``Expand``, ``Tile``, an outer
product): each output's shape is inferred first (onnx's shape inference, the integer inputs
given) and a result over the memory limit (a ResourceError, as for every folding converter)
or with more elements than :func:`limit` allows is refused before it is allocated.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core.errors import CapabilityError
from xai_core.importers.ir import IRNode
from xai_core.importers.onnx_ops import Builder, _store
from xai_core.importers.onnx_registry import Converter

__all__ = ["MARGIN", "fold", "foldable", "limit"]

#: Elements a folded tensor may hold beyond the model's initialisers in total (2**24, 64 MiB
#: of float32): enough for any table a model computes from its weights.
MARGIN = 2**24

#: Operators never folded: their outputs are random, not functions of their inputs.
_RANDOM = frozenset({"Bernoulli", "Multinomial", "RandomNormalLike", "RandomUniformLike"})

#: Integer inputs up to this many elements are given to shape inference as values (the
#: target of a ``Reshape``, ``Expand`` or ``Tile``); larger ones by their shape only.
_SMALL = 64


def limit(b: Builder) -> int:
    """The most elements a folded tensor may hold: the initialisers' in total plus
    :data:`MARGIN`."""
    if "fold_limit" not in b.__dict__:
        b.__dict__["fold_limit"] = MARGIN + sum(
            int(np.size(v)) for v in b.const.values() if isinstance(v, np.ndarray)
        )
    return b.__dict__["fold_limit"]


def foldable(b: Builder, node: IRNode, conv: Converter | None) -> bool:
    """Whether ``node`` is folded here: it reads constants only (numbers, not shapes holding
    the batch size), at least one, and its converter does not fold it itself."""
    names = [i for i in node.inputs if i]
    if not names or node.op in _RANDOM or (conv is not None and conv.folds):
        return False
    return all(i in b.const and np.asarray(b.const[i]).dtype.kind in "biuf" for i in names)


def _attribute(onnx: Any, schema: Any, key: str, value: Any) -> Any:
    """An attribute as read (:func:`~xai_core.importers.onnx_reader.read_onnx` decodes them)
    encoded again, typed by the operator's schema (an empty list has no type of its own)."""
    if isinstance(value, np.ndarray):
        return onnx.helper.make_attribute(key, onnx.numpy_helper.from_array(value))
    kind = schema.attributes[key].type if schema is not None and key in schema.attributes else None
    return onnx.helper.make_attribute(key, value, attr_type=kind)


def _node_proto(onnx: Any, b: Builder, node: IRNode) -> Any:
    try:
        schema = onnx.defs.get_schema(node.op, b.opset, "")
    except onnx.defs.SchemaError:
        schema = None
    proto = onnx.helper.make_node(node.op, node.inputs, node.outputs, name=node.name)
    proto.attribute.extend(_attribute(onnx, schema, k, v) for k, v in node.attrs.items())
    return proto


def _inferred(onnx: Any, b: Builder, proto: Any) -> list[tuple[int, Any] | None]:
    """Each output's (element count, dtype) by onnx's shape inference (None: not inferred)."""
    helper, numpy_helper = onnx.helper, onnx.numpy_helper
    inputs, inits = [], []
    for name in dict.fromkeys(i for i in proto.input if i):
        v = np.asarray(b.const[name])
        if v.dtype.kind in "iu" and v.size <= _SMALL:
            inits.append(numpy_helper.from_array(v, name))
        else:
            elem = helper.np_dtype_to_tensor_dtype(v.dtype)
            inputs.append(helper.make_tensor_value_info(name, elem, v.shape))
    outputs = [helper.make_empty_tensor_value_info(o) for o in proto.output if o]
    graph = helper.make_graph([proto], "fold", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", b.opset)])
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
    except Exception:  # noqa: BLE001 - inference is advisory; the result is checked after
        return [None] * len(outputs)
    known = {vi.name: vi for vi in [*inferred.output, *inferred.value_info]}
    found: list[tuple[int, Any] | None] = []
    for o in (o for o in proto.output if o):
        t = known[o].type.tensor_type if o in known else None
        if t is None or not t.HasField("shape") or not t.elem_type:
            found.append(None)
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(t.elem_type))
        except (KeyError, TypeError, ValueError):
            dtype = np.dtype(np.float64)
        found.append(None if None in dims else (int(np.prod(dims, dtype=object)), dtype))
    return found


def _refuse_size(b: Builder, node: IRNode, output: str, size: int, dtype: Any) -> None:
    """Refuse a folded tensor over the memory limit (a ResourceError, as every folding
    converter's) or over :func:`limit` elements (a CapabilityError)."""
    from xai_core.importers.onnx_ops import _check_bytes

    _check_bytes(b, node, [size], dtype)
    if size > limit(b):
        raise CapabilityError(
            f"{b.where}: {node.op} node {node.name!r} computes a constant {output!r} of "
            f"{size} elements from constants; at most {limit(b)} (the model's weights in "
            f"total plus {MARGIN}) are folded. A model whose constants grow that much is not "
            "supported."
        )


def fold(b: Builder, node: IRNode) -> bool:
    """Evaluate ``node`` (every input a constant: :func:`foldable`) with onnx's reference
    implementation and store its outputs as constants.

    Returns
    -------
    bool
        True when folded; False when the reference cannot evaluate the node (the registered
        converter is then asked, and refuses it or folds it its own way).

    Raises
    ------
    ResourceError
        A result over the memory limit (:func:`xai_core.set_resource_limits`), refused
        before it is computed when its shape can be inferred.
    CapabilityError
        A result with more elements than :func:`limit`, refused likewise; an integer
        ``Div`` or ``Mod`` by zero.
    """
    import onnx
    from onnx.reference import ReferenceEvaluator

    if node.op in ("Div", "Mod") and len(node.inputs) > 1:
        divisor = np.asarray(b.const[node.inputs[1]])
        if divisor.dtype.kind in "biu" and np.any(divisor == 0):
            raise CapabilityError(
                f"{b.where}: {node.op} node {node.name!r}: integer division by zero (its "
                "result is undefined in ONNX)."
            )
    proto = _node_proto(onnx, b, node)
    outputs = [o for o in node.outputs if o]
    for o, found in zip(outputs, _inferred(onnx, b, proto)):
        if found is not None:
            _refuse_size(b, node, o, *found)
    feeds = {i: np.asarray(b.const[i]) for i in node.inputs if i}
    try:
        results = ReferenceEvaluator(proto, opsets={"": b.opset}).run(None, feeds)
    except Exception:  # noqa: BLE001 - no reference kernel, or one it cannot run
        return False
    for name, value in zip(node.outputs, results):
        if name:
            value = np.asarray(value)
            _refuse_size(b, node, name, int(value.size), value.dtype)
            _store(b, IRNode(node.op, node.name, node.inputs, [name]), value)
    return True
