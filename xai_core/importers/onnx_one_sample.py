"""An ONNX model rewritten to run as one sample: its inputs given ``k`` leading axes of 1.

The backend adapter (:mod:`xai_core.importers.onnx_backend`) treats a tensor's first axis
as the batch axis. A model that works on that axis (``ArgMax`` over axis 0, a ``Reduce*``
over every axis, a ``Trilu`` of a matrix) or whose inputs have no sample axis (a 1-D
``Split``, ``CumSum``) computes the same values when every input is given ``k`` leading
axes of size 1 and every node's axes are moved ``k`` places on; the network then sees one
sample of the original tensors, and the adapter removes the ``k`` axes from the outputs.

:func:`lift` rewrites a model so, for the operators of :data:`LIFTABLE`: a non-negative
axis ``a`` (attribute or constant input) becomes ``a + k``, a negative one (counted from
the end) stays, a default that names axes from the front (``ArgMax``'s 0, every axis
of a ``Reduce*``, ``Slice``'s first axes) is written out shifted, a ``Transpose``'s
permutation keeps the ``k`` new axes first, a constant shape or
repeats (``Reshape``, ``Expand``, ``Tile``) starts with ``k`` ones (an ``Expand`` to more
axes than its input has gives the input those axes of 1 after the ``k`` first), a ``Flatten``
becomes the ``Reshape`` to ``(1,) * k`` and its two axes, an ``Einsum`` gives its computed
operands and its output ``k`` new leading indices, a ``Gemm`` (2-D only) becomes the
``MatMul`` of its operands (transposed and scaled as asked), plus ``beta * C``, and a
``Compress`` without an axis compresses a ``Reshape`` to ``(1,) * k + (-1,)``. Before that, the shape
arithmetic of :data:`FOLDED` (``Shape`` and ``Size`` of a tensor of known shape, and the
nodes computing from them and constants alone: an expanded ``LayerNormalization``'s
reduced shape, an expanded ``RMSNormalization``'s ``Range`` of axes) is folded into
constants of the model's own shapes, which the rewrite then shifts as it does any other.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from xai_core.importers.onnx_ops_einsum import LETTERS as _LETTERS
from xai_core.importers.onnx_ops_einsum import parse_equation

__all__ = ["FOLDED", "LIFTABLE", "REDUCE", "batch_first", "lift"]

#: The ``Reduce*`` operators.
REDUCE = frozenset(
    "ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin "
    "ReduceProd ReduceSum ReduceSumSquare".split()
)

#: Operators of one ``axis`` attribute, with its default when it counts from the front
#: (None: it has none, or it counts from the end).
_AXIS: dict[str, int | None] = {
    "ArgMax": 0,
    "ArgMin": 0,
    "Compress": None,
    "Concat": None,
    "DequantizeLinear": 1,
    "Gather": 0,
    "GatherElements": 0,
    "Hardmax": None,
    "LayerNormalization": None,
    "LogSoftmax": None,
    "LpNormalization": None,
    "QuantizeLinear": 1,
    "RMSNormalization": None,
    "Softmax": None,
    "Split": 0,
}

#: Operators on the last axes, or elementwise over booleans: left as they are.
_UNCHANGED = frozenset({"And", "Not", "Or", "Trilu", "Xor"})

#: Operators whose values do not depend on how many leading axes of 1 the tensors have,
#: given their axes shifted as :func:`lift` does. ``Softmax`` and its kin before opset 13
#: default to axis 1, written out; ``Trilu`` works on the last two axes.
LIFTABLE = frozenset(
    {*REDUCE, *_AXIS, *_UNCHANGED, "CumSum", "Einsum", "MeanVarianceNormalization", "Slice"}
    | {"Expand", "Flatten", "Gemm", "Reshape", "Squeeze", "Tile", "Transpose", "Unsqueeze"}
)


#: Operators of shape arithmetic that :func:`lift` folds into constants (``Shape`` and
#: ``Size`` of a tensor whose shape is known, and these on constants alone); a model
#: holding one it cannot fold is not lifted.
FOLDED = frozenset({"ConstantOfShape", "Range", "Shape", "Size"})

#: Operators evaluated on constants while folding shape arithmetic (with onnx's reference
#: evaluator), when their inputs are all constants and one comes from a folded ``Shape``
#: or ``Size``, or all are integers, or the operator is one of :data:`FOLDED`.
_FOLDABLE = FOLDED | {
    "Add", "Cast", "Concat", "Div", "Gather", "Identity", "Mul", "Neg", "Slice", "Squeeze",
    "Sub", "Unsqueeze",
}  # fmt: skip


def _fold_shapes(model: Any, shapes: dict[str, tuple[int | None, ...]], opset: int) -> None:
    """Replace the shape arithmetic of ``model`` by initialisers, in place.

    A ``Shape`` or ``Size`` of a tensor whose shape (before lifting) is fully known becomes
    its value; then each node of :data:`_FOLDABLE` whose inputs are all constants (one at
    least so derived, or all integers, or the node one of :data:`FOLDED`) is evaluated.
    The folded nodes are removed; the rest are kept. When a folded value is a graph
    output, nothing is folded (lifted, that shape would be another).
    """
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    graph = model.graph
    values: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute:
            a = node.attribute[0]
            if a.name == "value":
                values[node.output[0]] = numpy_helper.to_array(a.t)
            elif a.name in ("value_int", "value_ints", "value_float", "value_floats"):
                kind = np.int64 if "int" in a.name else np.float32
                values[node.output[0]] = np.asarray(helper.get_attribute_value(a), kind)
    derived: set[str] = set()
    folded = []
    for node in graph.node:
        op = node.op_type
        if op in ("Shape", "Size"):
            shape = shapes.get(node.input[0])
            if shape is None or None in shape:
                continue
            if op == "Size":
                value = np.asarray(int(np.prod(shape, dtype=np.int64)), np.int64)
            else:
                attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
                start, end = attrs.get("start", 0), attrs.get("end")
                value = np.asarray(shape[start:end], np.int64)
        elif op in _FOLDABLE and all(i in values for i in node.input if i):
            ins = [values[i] for i in node.input if i]
            if not (
                op in FOLDED
                or any(i in derived for i in node.input)
                or all(v.dtype.kind in "iu" for v in ins)
            ):
                continue
            with np.errstate(all="ignore"):
                ref = ReferenceEvaluator(node, opsets={"": opset})
                feeds = {i: values[i] for i in node.input if i}
                outs = ref.run(None, feeds)
            if len(outs) != len(node.output):
                continue
            for name, out in zip(node.output, outs, strict=True):
                values[name] = np.asarray(out)
                derived.add(name)
            folded.append(node)
            continue
        else:
            continue
        values[node.output[0]] = value
        derived.add(node.output[0])
        folded.append(node)
    if not folded:
        return
    outputs = {vi.name for vi in graph.output}
    if any(o in outputs for n in folded for o in n.output):
        # a shape the model returns would be the lifted tensor's: nothing is folded, and
        # the model (its Shape or Size not rewritten) is not lifted
        return
    kept = [n for n in graph.node if n not in folded]
    needed = {i for n in kept for i in n.input}
    for node in folded:
        for name in node.output:
            if name in needed:
                graph.initializer.append(numpy_helper.from_array(values[name], name))
    del graph.node[:]
    graph.node.extend(kept)


def _shift(axes: Any, k: int) -> list[int]:
    return [int(a) + k if int(a) >= 0 else int(a) for a in np.ravel(axes)]


def lift(
    model: Any,
    k: int,
    shapes: dict[str, tuple[int | None, ...]],
    opset: int,
    unchanged: frozenset[str],
) -> bool:
    """Shift every node's axes ``k`` places on, in place (``model``: an onnx.ModelProto).

    Parameters
    ----------
    model : onnx.ModelProto
        Constant inputs already initialisers; its nodes are rewritten.
    k : int
        The leading axes of 1 its inputs are given.
    shapes : dict of str to tuple
        The shape of each tensor (before lifting) that :func:`onnx.shape_inference` knows
        (None for an axis of unknown size).
    opset : int
        The model's default-domain opset.
    unchanged : frozenset of str
        Operators left as they are (elementwise ones, broadcasting from the last axis).

    Returns
    -------
    bool
        Whether every node was rewritten; False (the model left part-way) when a node is
        not of :data:`LIFTABLE` or an axis it reads is not a constant, or a
        shape it needs is unknown.
    """
    from onnx import helper, numpy_helper

    _fold_shapes(model, shapes, opset)
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    for node in graph.node:  # a Constant node's tensor reads as an initialiser's
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    inits[node.output[0]] = a.t
                elif a.name in ("value_int", "value_ints"):
                    value = np.asarray(helper.get_attribute_value(a), np.int64)
                    inits[node.output[0]] = numpy_helper.from_array(value)

    def attr(node: Any, name: str) -> Any:
        for a in node.attribute:
            if a.name == name:
                return helper.get_attribute_value(a)
        return None

    def set_attr(node: Any, name: str, value: Any) -> None:
        kept = [a for a in node.attribute if a.name != name]
        del node.attribute[:]
        node.attribute.extend([*kept, helper.make_attribute(name, value)])

    def set_input(node: Any, i: int, values: np.ndarray) -> None:
        name = f"{node.output[0]}__input_{i}_lifted"  # outputs are unique
        graph.initializer.append(numpy_helper.from_array(values, name))
        while len(node.input) <= i:
            node.input.append("")
        node.input[i] = name

    def constant(node: Any, i: int) -> np.ndarray | None | bool:
        """Input ``i``'s value; None when absent; False when not a constant (an
        initialiser or a Constant node's ``value``)."""
        if len(node.input) <= i or not node.input[i]:
            return None
        t = inits.get(node.input[i])
        return False if t is None else numpy_helper.to_array(t)

    inserted: list[tuple[Any, Any]] = []  # (node, a node to put before it), in order
    for node in graph.node:
        op = node.op_type
        shape = shapes.get(node.input[0]) if node.input else None
        rank = None if shape is None else len(shape)
        if op in _UNCHANGED or op in unchanged:
            continue
        if op == "Compress" and attr(node, "axis") is None:  # of the flattened tensor:
            flat = f"{node.output[0]}__input_0_flattened"  # a Reshape to k axes and one
            shape = np.asarray([1] * k + [-1], np.int64)
            graph.initializer.append(numpy_helper.from_array(shape, f"{flat}_shape"))
            reshape = helper.make_node("Reshape", [node.input[0], f"{flat}_shape"], [flat])
            inserted.append((node, reshape))
            node.input[0] = flat
            set_attr(node, "axis", k)
        elif op in _AXIS:
            axis = attr(node, "axis")
            if axis is None:
                default = _AXIS[op]
                if op in ("Softmax", "LogSoftmax", "Hardmax") and opset < 13:
                    default = 1
                if default is None:
                    continue
                axis = default
            set_attr(node, "axis", _shift([axis], k)[0])
            # constants of the input's rank: GatherElements' indices, blocked scales
            blocked = op.endswith("QuantizeLinear") and attr(node, "block_size")
            for i in (1,) if op == "GatherElements" else (1, 2) if blocked else ():
                given = constant(node, i)
                if given is False:
                    return False
                if given is not None:
                    set_input(node, i, given.reshape((1,) * k + given.shape))
        elif op == "CumSum":
            axis = constant(node, 1)
            if axis is None or axis is False:
                return False
            set_input(node, 1, np.asarray(_shift(axis, k)[0], axis.dtype))  # a 0-D tensor
        elif op in ("Squeeze", "Unsqueeze"):
            axes = constant(node, 1) if opset >= 13 else attr(node, "axes")
            if axes is None or axes is False:  # Squeeze's default: every axis of size 1
                return False
            if opset >= 13:
                set_input(node, 1, np.asarray(_shift(axes, k), np.int64))
            else:
                set_attr(node, "axes", _shift(axes, k))
        elif op in ("Expand", "Reshape", "Tile"):  # a shape or repeats: 1 on the new axes
            given = constant(node, 1)
            if given is None or given is False:
                return False
            set_input(node, 1, np.concatenate([np.ones(k, given.dtype), np.ravel(given)]))
            if op == "Expand" and rank is not None and given.size > rank:
                # a target of more axes than the input: ONNX aligns them from the end, so
                # the input takes the missing axes of 1 after the k new ones (an Unsqueeze
                # before the Expand), and the k leading axes stay the first
                extra = given.size - rank
                name = f"{node.output[0]}__input_0_unsqueezed"
                axes = list(range(k, k + extra))
                if opset >= 13:
                    axes_name = f"{name}_axes"
                    graph.initializer.append(
                        numpy_helper.from_array(np.asarray(axes, np.int64), axes_name)
                    )
                    before = helper.make_node("Unsqueeze", [node.input[0], axes_name], [name])
                else:
                    before = helper.make_node("Unsqueeze", [node.input[0]], [name], axes=axes)
                node.input[0] = name
                inserted.append((node, before))
        elif op == "Flatten":  # to 2-D: a Reshape to (1,) * k + its two axes
            axis = attr(node, "axis")
            axis = 1 if axis is None else int(axis)
            if shape is None or None in shape:
                return False
            axis = axis + len(shape) if axis < 0 else axis
            dims = [*[1] * k, int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))]
            node.op_type = "Reshape"
            del node.attribute[:]
            set_input(node, 1, np.asarray(dims, np.int64))
        elif op == "Gemm":  # 2-D only: a MatMul of the k-axis operands, scaled, plus C
            _gemm_as_matmul(node, k, inits, graph, inserted)
        elif op == "Einsum":  # k new indices lead every computed operand and the output
            computed = [i not in inits for i in node.input]
            if any(c and i not in shapes for i, c in zip(node.input, computed)):
                return False
            ranks = [
                len(shapes[i]) if c else len(inits[i].dims) for i, c in zip(node.input, computed)
            ]
            parsed = parse_equation(str(attr(node, "equation"), "utf-8"), ranks)
            if parsed is None:
                return False
            operands, rhs = parsed
            new = "".join(c for c in _LETTERS if c not in "".join(operands))[:k]
            lifted = [new + o if c else o for o, c in zip(operands, computed)]
            set_attr(node, "equation", ",".join(lifted) + "->" + new + rhs)
        elif op == "MeanVarianceNormalization":
            set_attr(node, "axes", _shift(attr(node, "axes") or [0, 2, 3], k))
        elif op == "Slice":
            if opset < 10:
                axes = attr(node, "axes")
                n = len(attr(node, "starts") or [])
                set_attr(node, "axes", _shift(range(n) if axes is None else axes, k))
                continue
            starts, axes = constant(node, 1), constant(node, 3)
            if starts is None or starts is False or axes is False:
                return False
            given = range(starts.size) if axes is None else axes
            set_input(node, 3, np.asarray(_shift(given, k), np.int64))
        elif op in REDUCE:
            from_input = opset >= (13 if op == "ReduceSum" else 18)
            axes = constant(node, 1) if from_input else attr(node, "axes")
            if axes is False:
                return False
            axes = [] if axes is None else list(np.ravel(axes))
            if not axes:
                if attr(node, "noop_with_empty_axes"):
                    continue
                if rank is None:
                    return False
                axes = list(range(rank))
            if from_input:
                set_input(node, 1, np.asarray(_shift(axes, k), np.int64))
            else:
                set_attr(node, "axes", _shift(axes, k))
        elif op == "Transpose":  # the k new axes stay first
            perm = attr(node, "perm")
            if perm is None:  # the default reverses the axes
                if rank is None:
                    return False
                perm = range(rank - 1, -1, -1)
            set_attr(node, "perm", [*range(k), *(int(p) + k for p in perm)])
        else:
            return False
    if inserted:
        before: dict[str, list[Any]] = {}  # outputs are unique
        for n, b in inserted:
            before.setdefault(n.output[0], []).append(b)
        nodes = []
        for n in graph.node:
            if n.output:
                nodes.extend(before.get(n.output[0], []))
            nodes.append(n)
        del graph.node[:]
        graph.node.extend(nodes)
    return True


def _gemm_as_matmul(node: Any, k: int, inits: dict, graph: Any, inserted: list) -> None:
    """Rewrite ``Gemm`` (``alpha * A' @ B' + beta * C``, ``'`` a transpose if asked) as a
    ``MatMul`` of operands with ``k`` leading axes, then ``Mul`` and ``Add``: the nodes before
    it go to ``inserted``; the node itself becomes the last. A constant operand is
    transposed and scaled in place of a node."""
    from onnx import helper, numpy_helper

    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    out = node.output[0]
    step = itertools.count()

    def added(op: str, inputs: list[str], **kw: Any) -> str:
        name = f"{out}__gemm_{next(step)}"
        inserted.append((node, helper.make_node(op, inputs, [name], **kw)))
        return name

    def constant(value: np.ndarray) -> str:
        name = f"{out}__gemm_{next(step)}"
        graph.initializer.append(numpy_helper.from_array(value, name))
        return name

    def operand(name: str, transposed: bool, scale: float) -> str:
        if name in inits:  # a constant: not lifted, transposed and scaled here
            value = numpy_helper.to_array(inits[name])
            if transposed:
                value = value.T
            return (
                constant((value * scale).astype(value.dtype)) if transposed or scale != 1 else name
            )
        if transposed:
            name = added("Transpose", [name], perm=[*range(k), k + 1, k])
        if scale != 1:
            name = added("Mul", [name, constant(np.asarray(scale, np.float32))])
        return name

    a = operand(node.input[0], bool(attrs.get("transA", 0)), 1.0)
    b = operand(node.input[1], bool(attrs.get("transB", 0)), alpha)
    c = node.input[2] if len(node.input) > 2 and node.input[2] and beta != 0 else None
    del node.attribute[:]
    if c is None:
        node.op_type, node.input[:] = "MatMul", [a, b]
        return
    node.op_type, node.input[:] = "Add", [added("MatMul", [a, b]), operand(c, False, beta)]


#: Recurrent operators, and their initial-state inputs (by position).
_RECURRENT = {"LSTM": (5, 6), "GRU": (5,), "RNN": (5,)}


def batch_first(model: Any) -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[int, ...]]]:
    """Rewrite a model's time-major (``layout=0``) recurrent nodes to batch-first, in place.

    A node is rewritten when its ``X`` and initial states are graph inputs (or
    initialisers) read by it alone and its outputs are graph outputs read by no node: its
    batch axis then becomes their first, as the network needs, and the adapter transposes
    the inputs before the run and the outputs after it.

    Parameters
    ----------
    model : onnx.ModelProto

    Returns
    -------
    inputs, outputs : dict of str to tuple of int
        The axis permutation each graph input (and initialiser) takes to the rewritten
        model, and each graph output takes back; empty when nothing was rewritten.
    """
    from onnx import helper, numpy_helper

    graph = model.graph
    graph_inputs = {vi.name: vi for vi in graph.input}
    graph_outputs = {vi.name: vi for vi in graph.output}
    inits = {t.name: t for t in graph.initializer}
    reads: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            reads[name] = reads.get(name, 0) + 1
    to_model: dict[str, tuple[int, ...]] = {}
    back: dict[str, tuple[int, ...]] = {}
    for node in graph.node:
        if node.op_type not in _RECURRENT:
            continue
        layout = next(
            (helper.get_attribute_value(a) for a in node.attribute if a.name == "layout"), 0
        )
        if layout != 0:
            continue
        moved = [
            node.input[0],
            *(node.input[i] for i in _RECURRENT[node.op_type] if i < len(node.input)),
        ]
        moved = [m for m in moved if m]
        outs = [o for o in node.output if o]
        if not all(
            (m in graph_inputs or m in inits) and reads.get(m) == 1 for m in moved
        ) or not all(o in graph_outputs and o not in reads for o in outs):
            continue
        for m in moved:
            to_model[m] = (1, 0, 2)
            if m in inits:
                t = inits[m]
                t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).transpose(1, 0, 2), m))
        for i, o in enumerate(node.output):
            if o:
                back[o] = (1, 2, 0, 3) if i == 0 else (1, 0, 2)
        kept = [a for a in node.attribute if a.name != "layout"]
        del node.attribute[:]
        node.attribute.extend([*kept, helper.make_attribute("layout", 1)])
    for name, perm in to_model.items():
        if name in graph_inputs:
            dims = graph_inputs[name].type.tensor_type.shape.dim
            if len(dims) == len(perm):
                values = [type(d)() for d in dims]
                for v, j in zip(values, perm, strict=True):
                    v.CopyFrom(dims[j])
                del dims[:]
                dims.extend(values)
    for name in back:
        graph_outputs[name].type.tensor_type.ClearField("shape")
    return {m: p for m, p in to_model.items() if m in graph_inputs}, back
