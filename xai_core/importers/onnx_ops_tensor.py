"""ONNX operators on tensors and shapes: ceil-mode pooling, shape building, slicing, MatMul.

Most of these fold at import: a model builds its weights with ``ConstantOfShape`` and
``ScatterND``, or the target of a ``Reshape`` / ``Expand`` with ``Range``, ``Equal``,
``Where`` and ``Mod`` on shapes (see :mod:`xai_core.importers.onnx_ops` for the three kinds
of tensor while building). Where an input is a runtime activation, ``Expand``, ``Where``
(with a constant condition), ``Split``, ``Slice`` and ``MatMul`` run as native layers
(:mod:`xai_core.nn.tensor_ops`); ``DepthToSpace`` becomes reshapes and a transpose, and
``Resize`` two products by constant interpolation matrices, so both run and are counted on
every backend.
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
    _kernel_attrs,
    _pads,
    _spatial,
    _store,
)
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


def _check_bytes(b: Builder, node: IRNode, shape, dtype) -> None:
    """Refuse a folded tensor over the memory limit before it is allocated."""
    from xai_core.attribution.cost import Cost, check_cost

    size = int(np.prod([int(d) for d in shape], dtype=object)) if len(shape) else 1
    cost = Cost(0, size * np.dtype(dtype).itemsize, detail=f"a tensor of shape {list(shape)}")
    check_cost(cost, f"{b.where}: {node.op} node {node.name!r}", advice="use a smaller model")


def _given(node: IRNode, i: int) -> bool:
    return len(node.inputs) > i and bool(node.inputs[i])


# -- pooling with ceil_mode ---------------------------------------------------------------
def _pool(kind: str) -> Callable[[Builder, IRNode], None]:
    plain = onnx_ops._pool(kind)

    def op(b: Builder, node: IRNode) -> None:
        if len(node.outputs) > 1 and node.outputs[1]:
            raise b.fail(node, "the Indices output of MaxPool is not supported.")
        if not node.attrs.get("ceil_mode", 0) or len(node.attrs["kernel_shape"]) == 1:
            plain(b, node)
            return
        kernel, strides, dilations = _kernel_attrs(b, node, node.attrs["kernel_shape"])
        if dilations != (1, 1):
            raise b.fail(node, f"dilated pooling is not supported; dilations={list(dilations)}.")
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
    ins = [
        i if b.is_act(i) else b.value_node(node, _plain(b, node, i).astype(float), rank)
        for i in (cond, x, y)
    ]
    b.add(node, nn.Where(), ins)


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
    """Activation @ activation as a native MatMul layer; anything else as before."""
    x, y = node.inputs[:2]
    if not b.is_act(y) and (not b.is_act(x) or b.rank(node, x) == 2):
        onnx_ops.op_matmul(b, node)  # rows @ a constant matrix: a dense layer
        return
    if not b.is_act(y):  # (n, ..., k) @ constant (..., k, m): a Linear on sequences
        value = np.asarray(b.value(node, y))
        if value.ndim < 2:
            raise b.fail(node, f"a 1-D second operand of shape {value.shape} is not supported.")
        y = b.value_node(node, value, b.rank(node, x))
    elif not b.is_act(x):
        rank = b.rank(node, y)
        value = np.asarray(b.value(node, x))
        if value.ndim < 2:
            raise b.fail(node, f"a 1-D first operand of shape {value.shape} is not supported.")
        x = b.value_node(node, value, rank)
    for i in (x, y):
        if i in b.act and b.rank(node, i) < 3:
            raise b.fail(node, f"operand {i!r} has one axis per sample; MatMul needs two.")
    b.add(node, nn.MatMul(), [x, y])


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


def _resize_matrix(n_in: int, n_out: int, scale: float, attrs: dict, mode: str) -> np.ndarray:
    """(n_out, n_in) matrix of one axis of ``Resize``: output = matrix @ input along the axis."""
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    o = np.arange(n_out, dtype=np.float64)
    if ctm == "half_pixel":
        x = (o + 0.5) / scale - 0.5
    elif ctm == "pytorch_half_pixel":
        x = (o + 0.5) / scale - 0.5 if n_out > 1 else np.zeros_like(o)
    elif ctm == "half_pixel_symmetric":  # half_pixel, centred when n_out != n_in * scale
        offset = n_in / 2 * (1 - n_out / (n_in * scale))
        x = offset + (o + 0.5) / scale - 0.5
    elif ctm == "align_corners":  # the resized length unrounded (n_in * scale), as ONNX's
        size = n_in * scale
        x = o * (n_in - 1) / (size - 1) if n_out > 1 and size > 1 else np.zeros_like(o)
    else:  # asymmetric
        x = o / scale
    m = np.zeros((n_out, n_in))
    if mode == "nearest":
        rule = attrs.get("nearest_mode", "round_prefer_floor")
        pick = {
            "round_prefer_floor": lambda v: np.where(
                v - np.floor(v) == 0.5, np.floor(v), np.round(v)
            ),
            "round_prefer_ceil": lambda v: np.where(
                v - np.floor(v) == 0.5, np.ceil(v), np.round(v)
            ),
            "floor": np.floor,
            "ceil": np.ceil,
        }[rule](x)
        m[np.arange(n_out), np.clip(pick, 0, n_in - 1).astype(int)] = 1.0
        return m
    x = np.clip(x, 0, n_in - 1)
    lo = np.floor(x).astype(int)
    hi = np.minimum(lo + 1, n_in - 1)
    frac = x - lo
    np.add.at(m, (np.arange(n_out), lo), 1 - frac)
    np.add.at(m, (np.arange(n_out), hi), frac)
    return m


def op_resize(b: Builder, node: IRNode) -> None:
    """Nearest or bilinear resizing of NCHW images: two MatMuls by constant interpolation matrices."""
    c, h, w = _spatial_chw(b, node)
    a = node.attrs
    mode = a.get("mode", "nearest")
    ctm = a.get("coordinate_transformation_mode", "half_pixel")
    modes = (
        "half_pixel",
        "half_pixel_symmetric",
        "pytorch_half_pixel",
        "align_corners",
        "asymmetric",
    )
    if mode not in ("nearest", "linear") or ctm not in modes:
        raise b.fail(
            node,
            f"mode={mode!r}, coordinate_transformation_mode={ctm!r}; supported: nearest or "
            f"linear with {', '.join(modes)}.",
        )
    if a.get("nearest_mode", "round_prefer_floor") not in (
        "round_prefer_floor",
        "round_prefer_ceil",
        "floor",
        "ceil",
    ):
        raise b.fail(node, f"unknown nearest_mode {a['nearest_mode']!r}.")
    if a.get("antialias", 0) or a.get("exclude_outside", 0):
        raise b.fail(node, "antialias and exclude_outside are not supported.")
    given_axes = a.get("axes")
    axes = list(range(4)) if given_axes is None else [int(v) % 4 for v in given_axes]
    if any(not -4 <= int(v) < 4 for v in given_axes or ()) or len(set(axes)) != len(axes):
        raise b.fail(node, f"axes {list(given_axes)} of a rank-4 tensor.")
    policy = a.get("keep_aspect_ratio_policy", "stretch")
    if _given(node, 3):
        listed = list(np.asarray(b.value(node, node.inputs[3])).reshape(-1))
        if len(listed) != len(axes):
            raise b.fail(node, f"{len(listed)} sizes for the axes {axes}.")
        raw = [BATCH, c, h, w]
        for d, v in zip(axes, listed, strict=True):
            raw[d] = v
        batch_kept = bool(raw) and (raw[0] is BATCH or (b.batch is not None and raw[0] == b.batch))
        sizes = [0 if v is BATCH else int(v) for v in raw]
        if len(sizes) != 4 or not batch_kept or sizes[1] != c or min(sizes[2:]) < 1:
            raise b.fail(
                node,
                f"sizes {raw} must keep the batch size and the {c} channels and resize height "
                "and width only.",
            )
        if policy == "stretch":
            (oh, ow), scales = sizes[2:], [sizes[2] / h, sizes[3] / w]
        elif policy in ("not_larger", "not_smaller") and set(axes) <= {2, 3}:
            # one scale for the listed axes, the smallest or largest asked; sizes rounded
            # half up from it (as the ONNX reference and onnxruntime)
            ratios = [sizes[d] / (h, w)[d - 2] for d in axes]
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            scales = [scale if d in axes else 1.0 for d in (2, 3)]
            oh, ow = (int(scale * n + 0.5) if d in axes else n for d, n in ((2, h), (3, w)))
        else:
            raise b.fail(
                node,
                f"keep_aspect_ratio_policy={policy!r} over the axes {axes}; supported: stretch, "
                "or not_larger and not_smaller over height and width.",
            )
    elif _given(node, 2):
        listed = [float(v) for v in _plain(b, node, node.inputs[2]).reshape(-1)]
        if len(listed) != len(axes):
            raise b.fail(node, f"{len(listed)} scales for the axes {axes}.")
        full = [1.0] * 4
        for d, v in zip(axes, listed, strict=True):
            full[d] = v
        if len(full) != 4 or full[:2] != [1.0, 1.0] or min(full) <= 0:
            raise b.fail(node, f"scales {full} must be 1 on the batch and channel axes, > 0 else.")
        scales = full[2:]
        oh, ow = int(np.floor(h * scales[0])), int(np.floor(w * scales[1]))
    else:
        raise b.fail(node, "neither scales nor sizes is given.")
    if min(oh, ow) < 1:
        raise b.fail(node, f"the output would be {oh} x {ow} pixels.")
    _check_bytes(b, node, [c, oh, ow], np.float32)
    rows = _resize_matrix(h, oh, scales[0], a, mode)
    cols = _resize_matrix(w, ow, scales[1], a, mode)
    right = b.value_node(node, cols.T, 4)
    wide = b.add(node, nn.MatMul(), [node.inputs[0], right], suffix="/width")
    left = b.value_node(node, rows, 4)
    b.add(node, nn.MatMul(), [left, wide])


def _spatial_chw(b: Builder, node: IRNode) -> tuple[int, int, int]:
    shape = b.g.shape_of(b.node_of(node, node.inputs[0]))
    if len(shape) != 3:
        raise b.fail(node, f"needs an NCHW image input; got a per-sample shape {shape}.")
    return int(shape[0]), int(shape[1]), int(shape[2])


# -- the registry -------------------------------------------------------------------------
for _op, _fn, _since, _limits in [
    ("MaxPool", _pool("max"), 1, "1-D and 2-D; ceil_mode; no dilation, no Indices output"),
    (
        "AveragePool",
        _pool("avg"),
        1,
        "1-D and 2-D; ceil_mode, count_include_pad; no dilation",
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
    (
        "Resize",
        op_resize,
        11,
        "NCHW images, H and W; nearest (any nearest_mode) and linear with half_pixel, "
        "half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric; constant scales or sizes (axes "
        "given or not; keep_aspect_ratio_policy over H and W); no antialias",
    ),
    ("Slice", op_slice, 1, "activations: any nonzero steps, not the batch axis; any on constants"),
    ("MatMul", op_matmul, 1, "activations or constants, broadcasting, >= 2-D operands"),
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
