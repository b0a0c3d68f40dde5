"""ONNX operators on tensors and shapes: ceil-mode pooling, shape building, slicing, MatMul.

Most of these fold at import: a model builds its weights with ``ConstantOfShape`` and
``ScatterND``, or the target of a ``Reshape`` / ``Expand`` with ``Range``, ``Equal``,
``Where`` and ``Mod`` on shapes (see :mod:`xai_core.importers.onnx_ops` for the three kinds
of tensor while building). Where an input is a runtime activation, ``Expand``, ``Where``
(with a constant condition), ``Split``, ``Slice`` and ``MatMul`` run as native layers
(:mod:`xai_core.nn.tensor_ops`); ``DepthToSpace`` becomes reshapes and a transpose, so it runs
and is counted on every backend (``Resize``: :mod:`xai_core.importers.onnx_ops_resize`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xai_core import nn
from xai_core.importers import onnx_ops
from xai_core.importers.ir import IRNode
from xai_core.importers.onnx_ops import (
    BATCH,
    Builder,
    _axis,
    _check_bytes,
    _given,
    _kernel_attrs,
    _pads,
    _spatial,
    _store,
)
from xai_core.importers.onnx_ops_pool_windows import needs_windows, pool_by_windows
from xai_core.importers.onnx_registry import register

__all__: list[str] = []


def _has_batch(value: np.ndarray) -> bool:
    v = np.asarray(value)
    return v.dtype == object and any(x is BATCH for x in v.reshape(-1))


def _plain(b: Builder, node: IRNode, name: str) -> np.ndarray:
    """A constant input (a shape without the batch size)."""
    v = np.asarray(b.value(node, name))
    if _has_batch(v):
        raise b.fail(node, f"input {name!r} depends on the batch size; it must not here.")
    return v.astype(np.int64) if v.dtype == object else v


# -- pooling with ceil_mode ---------------------------------------------------------------
def _pool(kind: str) -> Callable[[Builder, IRNode], None]:
    plain = onnx_ops._pool(kind)

    def op(b: Builder, node: IRNode) -> None:
        if len(node.outputs) > 1 and node.outputs[1]:
            raise b.fail(node, "the Indices output of MaxPool is not supported.")
        if needs_windows(node):
            pool_by_windows(b, node, kind, node.inputs[0])
            return
        if not node.attrs.get("ceil_mode", 0) or len(node.attrs["kernel_shape"]) == 1:
            plain(b, node)
            return
        kernel, strides, dilations = _kernel_attrs(b, node, node.attrs["kernel_shape"])
        auto = node.attrs.get("auto_pad", "NOTSET")
        if auto not in ("NOTSET", "", "VALID"):
            raise b.fail(node, f"ceil_mode=1 with auto_pad={auto!r} is not supported; use pads.")
        pads = _pads(b, node, kernel, strides, dilations, _spatial(b, node, node.inputs[0]))
        if kind == "max":
            layer = nn.MaxPool2D(kernel, stride=strides, padding=pads, ceil_mode=True)
        else:
            include = bool(node.attrs.get("count_include_pad", 0))
            layer = nn.AvgPool2D(
                kernel, stride=strides, padding=pads, count_include_pad=include, ceil_mode=True
            )
        b.add(node, layer, node.inputs[0])

    return op


# -- shapes and constants, folded ---------------------------------------------------------
def op_constant_of_shape(b: Builder, node: IRNode) -> None:
    shape = _plain(b, node, node.inputs[0]).reshape(-1)
    if np.any(shape < 0):
        raise b.fail(node, f"the shape {shape.tolist()} has a negative size.")
    value = np.asarray(node.attrs.get("value", np.zeros(1, dtype=np.float32)))
    if value.size != 1:
        raise b.fail(node, f"the value attribute must hold one element; got shape {value.shape}.")
    _check_bytes(b, node, shape, value.dtype)
    _store(b, node, np.full(tuple(int(d) for d in shape), value.reshape(-1)[0], dtype=value.dtype))


def op_range(b: Builder, node: IRNode) -> None:
    start, limit, delta = (_plain(b, node, i) for i in node.inputs[:3])
    if delta.reshape(-1)[0] == 0:
        raise b.fail(node, "delta is 0.")
    count = max(int(np.ceil((limit.item() - start.item()) / delta.item())), 0)
    _check_bytes(b, node, [count], start.dtype)
    _store(b, node, (start.item() + np.arange(count) * delta.item()).astype(start.dtype))


def _same(x: object, y: object) -> bool | None:
    """Whether two entries of folded shapes are equal (None: it depends on the batch size)."""
    if x is BATCH and y is BATCH:
        return True
    if x is BATCH or y is BATCH:
        other = y if x is BATCH else x
        return False if int(other) < 1 else None  # the batch size is at least 1
    return bool(x == y)


def op_equal(b: Builder, node: IRNode) -> None:
    if any(b.is_act(i) for i in node.inputs[:2]):  # computed: 1.0 where equal (gradient 0)
        rank = max(b.rank(node, i) for i in node.inputs[:2] if b.is_act(i))
        ins = [i if b.is_act(i) else b.constant_node(node, i, rank) for i in node.inputs[:2]]
        b.add(node, nn.Compare("equal"), ins)
        return
    x, y = (np.asarray(b.value(node, i)) for i in node.inputs[:2])
    if x.dtype != object and y.dtype != object:
        _store(b, node, np.equal(x, y))
        return
    xs, ys = np.broadcast_arrays(x.astype(object), y.astype(object))
    out = [_same(p, q) for p, q in zip(xs.reshape(-1), ys.reshape(-1))]
    if None in out:
        raise b.fail(node, "compares the batch size with a positive number; it is unknown here.")
    _store(b, node, np.array(out, dtype=bool).reshape(xs.shape))


def op_not(b: Builder, node: IRNode) -> None:
    """``Not``: folded on constants; of a computed tensor (booleans as 1 and 0), ``x == 0``."""
    x = node.inputs[0]
    if b.is_act(x):
        zero = b.value_node(node, np.zeros([1] * b.rank(node, x)), b.rank(node, x))
        b.add(node, nn.Compare("equal"), [b.node_of(node, x), zero])
        return
    _store(b, node, np.logical_not(_plain(b, node, x)))


def _mod_of_activations(b: Builder, node: IRNode, fmod: bool) -> None:
    """``Mod`` of computed floats: :class:`~xai_core.nn.Remainder` (``fmod=1``: C's ``fmod``;
    ``fmod=0``: the divisor's sign, Python's ``%``), its gradients those of torch's ``fmod``
    and ``remainder``."""
    x, y = node.inputs[:2]
    rank = max(b.rank(node, i) for i in (x, y) if b.is_act(i))
    ins = [b.node_of(node, i) if b.is_act(i) else b.constant_node(node, i, rank) for i in (x, y)]
    b.add(node, nn.Remainder(fmod), ins)


def op_mod(b: Builder, node: IRNode) -> None:
    """``Mod``: folded on constants; of computed floats, :func:`_mod_of_activations`."""
    if any(b.is_act(i) for i in node.inputs[:2]):
        _mod_of_activations(b, node, bool(int(node.attrs.get("fmod", 0))))
        return
    x, y = (_plain(b, node, i) for i in node.inputs[:2])
    fmod = int(node.attrs.get("fmod", 0))
    if not fmod and (x.dtype.kind == "f" or y.dtype.kind == "f"):
        raise b.fail(node, "fmod=0 on floating-point inputs (the spec requires fmod=1).")
    if np.any(y == 0):
        raise b.fail(node, "division by zero.")
    _store(b, node, np.fmod(x, y) if fmod else np.mod(x, y))


def op_scatter_nd(b: Builder, node: IRNode) -> None:
    data = np.array(b.value(node, node.inputs[0]), copy=True)
    idx = _plain(b, node, node.inputs[1]).astype(np.int64)
    updates = np.asarray(b.value(node, node.inputs[2]))
    k = idx.shape[-1] if idx.ndim else 0
    if idx.ndim < 1 or k > data.ndim or updates.shape != idx.shape[:-1] + data.shape[k:]:
        raise b.fail(
            node,
            f"indices of shape {idx.shape} and updates of shape {updates.shape} do not fit "
            f"data of shape {data.shape} (updates must be indices.shape[:-1] + "
            "data.shape[indices.shape[-1]:]).",
        )
    bound = np.array(data.shape[:k])
    if np.any(idx < -bound) or np.any(idx >= bound):
        raise b.fail(node, f"an index is outside data of shape {data.shape}.")
    reduction = node.attrs.get("reduction", "none")
    combine = {
        "none": lambda old, new: new,
        "add": np.add,
        "mul": np.multiply,
        "max": np.maximum,
        "min": np.minimum,
    }
    if reduction not in combine:
        raise b.fail(node, f"unknown reduction {reduction!r}; expected one of {list(combine)}.")
    flat_idx = idx.reshape(-1, k)
    flat_upd = updates.reshape(-1, *data.shape[k:])
    for where, value in zip(flat_idx, flat_upd):
        key = tuple(int(i) for i in where)
        data[key] = combine[reduction](data[key], value)
    _store(b, node, data)


# -- tensors that may be activations ------------------------------------------------------
def _target(b: Builder, node: IRNode, name: str) -> list:
    """The shape input of Expand: ints, with BATCH allowed first."""
    shape = [d if d is BATCH else int(d) for d in np.asarray(b.value(node, name)).reshape(-1)]
    if any(d is BATCH for d in shape[1:]):
        raise b.fail(node, f"target shape {shape} moves the batch axis.")
    return shape


def op_expand(b: Builder, node: IRNode) -> None:
    x = node.inputs[0]
    shape = _target(b, node, node.inputs[1])
    if not b.is_act(x):
        if shape and shape[0] is BATCH:
            raise b.fail(node, "a constant expanded to the batch size (make it an input).")
        data = np.asarray(b.value(node, x))
        out = np.broadcast_shapes(data.shape, tuple(int(d) for d in shape))
        _check_bytes(b, node, out, data.dtype)
        _store(b, node, np.broadcast_to(data, out).copy())
        return
    rank = b.rank(node, x)
    if len(shape) > rank:
        raise b.fail(node, f"target shape {shape} adds axes before the batch axis.")
    if len(shape) == rank:
        first, shape = shape[0], shape[1:]
        if not (first is BATCH or int(first) == 1 or int(first) == b.batch):
            raise b.fail(node, f"target shape {[first, *shape]} sets the batch size to {first}.")
    per_sample = [int(d) for d in shape]
    b.add(node, nn.Expand(tuple(per_sample)), x)


def op_where(b: Builder, node: IRNode) -> None:
    cond, x, y = node.inputs[:3]
    if not any(b.is_act(i) for i in (cond, x, y)):
        c = np.asarray(b.value(node, cond)).astype(bool)
        _store(b, node, np.where(c, b.value(node, x), b.value(node, y)))
        return
    rank = max(b.rank(node, i) for i in (cond, x, y) if b.is_act(i))
    masks = _feeds_softmax_scores(b, node)
    ins = [
        i
        if b.is_act(i)
        else b.value_node(node, _masked(_plain(b, node, i).astype(float), masks), rank)
        for i in (cond, x, y)
    ]
    b.add(node, nn.Where(), ins)


#: What a -inf attention mask holds here: exp of it underflows to exactly 0 beside any
#: finite score, so the softmax weights are the same (a network holds no infinities).
MASKED_SCORE = -1e30


def _masked(value: np.ndarray, masks: bool) -> np.ndarray:
    """``value`` with -inf as :data:`MASKED_SCORE` when it masks softmax scores."""
    return np.where(np.isneginf(value), MASKED_SCORE, value) if masks else value


def _feeds_softmax_scores(b: Builder, node: IRNode) -> bool:
    """Whether ``node``'s output is an additive attention mask: read only by ``Add`` nodes
    whose outputs only a ``Softmax`` over the last axis reads (torch's masked attention)."""
    readers = b.readers
    out = node.outputs[0]
    adds = readers.get(out, [])
    outputs = b.graph_outputs
    if not adds or out in outputs or any(r.op != "Add" or r.outputs[0] in outputs for r in adds):
        return False
    softmaxes = [r for add in adds for r in readers.get(add.outputs[0], [None])]
    return all(
        r is not None and r.op == "Softmax" and b.opset >= 13 and int(r.attrs.get("axis", -1)) == -1
        for r in softmaxes
    )


def _split_sizes(b: Builder, node: IRNode, size: int) -> list[int]:
    n = len(node.outputs)
    if _given(node, 1):
        sizes = [int(s) for s in _plain(b, node, node.inputs[1]).reshape(-1)]
    elif "split" in node.attrs:
        sizes = [int(s) for s in node.attrs["split"]]
    elif "num_outputs" in node.attrs:
        k = int(node.attrs["num_outputs"])
        part = -(-size // k)
        sizes = [part] * (k - 1) + [size - part * (k - 1)]
    else:
        if size % n:
            raise b.fail(node, f"an axis of size {size} does not split into {n} equal parts.")
        sizes = [size // n] * n
    if len(sizes) != n or sum(sizes) != size or any(s < 0 for s in sizes):
        raise b.fail(node, f"split sizes {sizes} for {n} outputs of an axis of size {size}.")
    return sizes


def op_split(b: Builder, node: IRNode) -> None:
    x = node.inputs[0]
    axis = int(node.attrs.get("axis", 0))
    if not b.is_act(x):
        data = np.asarray(b.value(node, x))
        a = axis + data.ndim if axis < 0 else axis
        sizes = _split_sizes(b, node, data.shape[a])
        for out, part in zip(node.outputs, np.split(data, np.cumsum(sizes)[:-1], axis=a)):
            _store(b, IRNode(node.op, node.name, node.inputs, [out]), part)
        return
    rank = b.rank(node, x)
    a = _axis(b, node, axis, rank)
    sizes = _split_sizes(b, node, b.g.shape_of(b.node_of(node, x))[a])
    start = 0
    for k, (out, size) in enumerate(zip(node.outputs, sizes)):
        if size == 0:
            raise b.fail(node, f"output {k} ({out!r}) is empty.")
        if out:
            name = b.add(node, nn.Slice(a, start, start + size), x, suffix=f"/{k}")
            b.act[out] = name
        start += size


def op_slice(b: Builder, node: IRNode) -> None:
    """A constant or a shape sliced (folded), or an activation: one Slice layer per axis (a
    Gather of the positions read where the step is negative)."""
    x = node.inputs[0]
    if not b.is_act(x) and b.opset >= 10:
        onnx_ops.op_slice(b, node)
        return
    if b.opset < 10:  # starts, ends and axes were attributes
        starts, ends = list(node.attrs["starts"]), list(node.attrs["ends"])
        axes, steps = node.attrs.get("axes"), None
    else:
        starts, ends = b.ints(node, node.inputs[1]), b.ints(node, node.inputs[2])
        axes = b.ints(node, node.inputs[3]) if _given(node, 3) else None
        steps = b.ints(node, node.inputs[4]) if _given(node, 4) else None
    axes = list(axes or range(len(starts)))
    steps = list(steps or [1] * len(starts))
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise b.fail(
            node, f"starts {starts}, ends {ends}, axes {axes}, steps {steps} differ in length."
        )
    if not b.is_act(x):
        data = np.asarray(b.value(node, x))
        index = [slice(None)] * data.ndim
        for start, end, axis, step in zip(starts, ends, axes, steps):
            index[axis] = slice(start, end, step)
        _store(b, node, data[tuple(index)])
        return
    rank = b.rank(node, x)
    source = x
    for k, (start, end, axis, step) in enumerate(zip(starts, ends, axes, steps)):
        if step == 0:
            raise b.fail(node, "a step of 0 (ONNX requires a nonzero step).")
        a = _axis(b, node, int(axis), rank)
        last = k == len(starts) - 1
        size = b.g.shape_of(b.act.get(source, source))[a]
        if not range(size)[slice(start, end, step)]:
            raise b.fail(
                node,
                f"[{start}:{end}:{step}] of axis {axis} (size {size}) is empty: tensors without "
                "elements are not supported.",
            )
        if step > 0:
            layer = nn.Slice(a, max(min(start, size), -size), max(min(end, size), -size - 1), step)
        else:  # backwards (torch.flip): the positions read, gathered
            layer = nn.Gather(a, np.arange(size)[slice(start, end, step)])
        source = b.add(node, layer, source, suffix="" if last else f"/{k}")


def op_matmul(b: Builder, node: IRNode) -> None:
    """Activation @ activation as a native MatMul layer; anything else as before.

    A 1-D constant operand is numpy's vector: a matrix of one column (second operand) or
    one row (first), that axis removed from the product by a ``Reshape``.
    """
    x, y = node.inputs[:2]
    vector = None  # the constant operand that is 1-D: "x" or "y"
    if not b.is_act(y) and b.is_act(x) and np.ndim(b.value(node, y)) == 1:
        vector = "y"
    elif not b.is_act(x) and b.is_act(y) and np.ndim(b.value(node, x)) == 1:
        vector = "x"
    if vector is None and not b.is_act(y) and (not b.is_act(x) or b.rank(node, x) == 2):
        onnx_ops.op_matmul(b, node)  # rows @ a constant matrix: a dense layer
        return
    act = x if b.is_act(x) else y
    rank = b.rank(node, act)
    if not b.is_act(y):  # (n, ..., k) @ constant (..., k, m): a Linear on sequences
        value = np.asarray(b.value(node, y))
        y = b.value_node(node, value[:, None] if vector else value, rank)
    elif not b.is_act(x):
        value = np.asarray(b.value(node, x))
        x = b.value_node(node, value[None, :] if vector else value, rank)
    for i in (x, y):
        if i in b.act and b.rank(node, i) < 3:
            raise b.fail(node, f"operand {i!r} has one axis per sample; MatMul needs two.")
    if vector is None:
        b.add(node, nn.MatMul(), [x, y])
        return
    product = b.add(node, nn.MatMul(), [x, y], suffix="/matmul")
    shape = list(b.g.shape_of(product))
    del shape[-1 if vector == "y" else -2]
    b.add(node, nn.Reshape(tuple(shape)), product)


def op_depth_to_space(b: Builder, node: IRNode) -> None:
    """Channels to blocks of pixels: a Reshape, a Transpose and a Reshape (no arithmetic)."""
    c, h, w = _spatial_chw(b, node)
    bs = int(node.attrs["blocksize"])
    mode = node.attrs.get("mode", "DCR")
    if bs < 1 or c % (bs * bs):
        raise b.fail(node, f"{c} channels do not split into blocks of {bs} x {bs}.")
    if mode == "DCR":
        split, perm = (bs, bs, c // (bs * bs), h, w), (2, 3, 0, 4, 1)
    elif mode == "CRD":
        split, perm = (c // (bs * bs), bs, bs, h, w), (0, 3, 1, 4, 2)
    else:
        raise b.fail(node, f"unknown mode {mode!r}; expected 'DCR' or 'CRD'.")
    first = b.add(node, nn.Reshape(split), node.inputs[0], suffix="/blocks")
    moved = b.add(node, nn.Transpose(perm), first, suffix="/moved")
    b.add(node, nn.Reshape((c // (bs * bs), h * bs, w * bs)), moved)


def _spatial_chw(b: Builder, node: IRNode) -> tuple[int, int, int]:
    shape = b.g.shape_of(b.node_of(node, node.inputs[0]))
    if len(shape) != 3:
        raise b.fail(node, f"needs an NCHW image input; got a per-sample shape {shape}.")
    return int(shape[0]), int(shape[1]), int(shape[2])


# -- the registry -------------------------------------------------------------------------
for _op, _fn, _since, _limits in [
    (
        "MaxPool",
        _pool("max"),
        1,
        "any kernel rank, dilations, pads and ceil_mode; no Indices output",
    ),
    (
        "AveragePool",
        _pool("avg"),
        1,
        "any kernel rank, dilations, pads, ceil_mode and count_include_pad",
    ),
    ("Expand", op_expand, 8, "an activation (batch axis kept) or a constant"),
    (
        "Where",
        op_where,
        9,
        "condition and branches computed or constant (gradient 0 for the condition)",
    ),
    ("Split", op_split, 1, "split sizes from the attribute, the input or num_outputs"),
    ("DepthToSpace", op_depth_to_space, 1, "NCHW images; DCR and CRD modes"),
    ("Slice", op_slice, 1, "activations: any nonzero steps, not the batch axis; any on constants"),
    ("MatMul", op_matmul, 1, "activations or constants, broadcasting; 1-D constant operands"),
]:
    register(_op, _fn, since=_since, limits=_limits)

for _op, _fn, _since, _limits in [
    ("ConstantOfShape", op_constant_of_shape, 9, "a constant shape"),
    ("Range", op_range, 11, "constant bounds"),
    ("ScatterND", op_scatter_nd, 11, "on constants; reduction none, add, mul, max, min"),
]:
    register(_op, _fn, since=_since, folds=True, limits=_limits)

register("Not", op_not, since=1, limits="constants folded; computed tensors as 1 and 0")
register(
    "Mod",
    op_mod,
    since=10,
    limits="constants and shapes (no batch size) folded; computed floats (fmod 0 or 1)",
)
register(
    "Equal",
    op_equal,
    since=7,
    limits="constants and shapes folded (numpy broadcasting); computed tensors as 0/1",
)
