"""ONNX tensors whose batch axis is not first, or is merged with other axes.

A native network keeps the batch axis outside every per-sample shape (see
:mod:`xai_core.nn.graph`). Transformer exports move it: timm's attention permutes
``(B, N, 3, heads, d)`` to ``(3, B, heads, N, d)`` before ``unbind(0)``; torch's
``nn.MultiheadAttention`` works on ``(seq, B * heads, d)``; Swin's window partition makes
``(B * windows, ws, ws, c)``. Such a tensor is held as a :class:`View`: a native node with
the per-sample axes in the ONNX memory order, the batch axis outside as always, and
where the batch axis sits in the ONNX tensor and which per-sample axes the ONNX tensor
merges with it. Each sample still reads only its own values: these are layouts, not
arithmetic across samples.

The operators here read views (and reshapes that create them from plain activations):
``Transpose``, ``Reshape``, ``Shape``, ``Split``, ``Squeeze``, ``Unsqueeze``, ``Gather``
(one index), ``MatMul`` (two views of one layout, or a view and a constant matrix),
``Gemm`` (constant weights), ``Expand`` (to a shape of the same layout), ``ReduceL2`` /
``ReduceSum`` / ``ReduceMean`` / ``ReduceMax`` / ``ReduceMin`` (keeping axes outside the
batch group), ``Add`` / ``Sub`` / ``Mul`` / ``Div`` (two views of one
layout, or a view and a constant of size 1 along the batch group), ``Softmax`` (last
axis), ``Identity``. An axis argument may not name the batch axis (or its group); any
other operator reading a view is refused naming the node and the one that moved the
batch axis. The batch size in folded shapes may be multiplied by constants
(``bsz * num_heads``) and divided back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from xai_core import nn
from xai_core.importers.ir import IRNode
from xai_core.importers.onnx_ops import BATCH, Builder, _axes, _Batch, _store

__all__ = ["BatchMultiple", "View", "convert", "put_view", "view_of", "wants"]


class BatchMultiple(_Batch):
    """``k`` times the batch size in a folded shape (``bsz * num_heads``)."""

    def __init__(self, k: int) -> None:
        self.k = int(k)

    def __repr__(self) -> str:
        return f"{self.k}*BATCH"


def batch_factor(v: object) -> int | None:
    """``k`` when ``v`` is ``k`` times the batch size, else None."""
    if isinstance(v, BatchMultiple):
        return v.k
    return 1 if v is BATCH else None


def _times_batch(k: int) -> _Batch:
    return BATCH if k == 1 else BatchMultiple(k)


@dataclass(frozen=True)
class View:
    """An ONNX tensor held as a native node ``node`` of per-sample shape ``S``.

    The ONNX tensor's memory order is ``S[:pos]``, the batch, ``S[pos:]``; its axes are
    those, except that the ``before`` axes just before the batch and the ``after`` axes
    just after it are merged with the batch into one ONNX axis (the *batch group*).
    ``origin`` names the ONNX node that first moved the batch axis, for messages.
    """

    node: str
    pos: int
    before: int
    after: int
    origin: str

    def groups(self, b: Builder) -> list[list]:
        """The ONNX axes, each a list of per-sample axis indices (and ``"B"``)."""
        n = len(b.g.shape_of(self.node))
        lo, hi = self.pos - self.before, self.pos + self.after
        batch = [*range(lo, self.pos), "B", *range(self.pos, hi)]
        return [[s] for s in range(lo)] + [batch] + [[s] for s in range(hi, n)]

    @property
    def batch_axis(self) -> int:
        return self.pos - self.before


def _views(b: Builder) -> dict[str, View]:
    return b.__dict__.setdefault("views", {})


def _of(b: Builder, name: str) -> View | None:
    """The view of ONNX tensor ``name``: a plain activation is a view with the batch first."""
    if name in _views(b):
        return _views(b)[name]
    if b.is_act(name):
        return View(b.act[name], 0, 0, 0, "")
    return None


def view_of(b: Builder, name: str) -> View | None:
    """The view ONNX tensor ``name`` is held as, or None (a plain activation or a constant)."""
    return _views(b).get(name)


def put_view(b: Builder, out: str, native: str, pos: int, origin: str) -> None:
    """Hold ONNX tensor ``out`` as ``native``'s per-sample axes with the batch at ``pos``."""
    b.act.pop(out, None)
    _views(b)[out] = View(native, pos, 0, 0, origin)


def _recurrent(b: Builder, node: IRNode, x: View) -> None:
    """``LSTM`` / ``GRU`` on a time-major view: their converters read views themselves."""
    from xai_core.importers.onnx_registry import find_converter

    find_converter(node.op, b.opset).fn(b, node)


def _apply(b: Builder, node: IRNode, layer, sources: list[str], suffix: str = "") -> str:
    made = b.g.add(layer, sources, name=b.unique(node.name + suffix))
    b._made.add(made)
    return made


def _reshaped(b: Builder, node: IRNode, source: str, shape, suffix: str = "") -> str:
    if tuple(b.g.shape_of(source)) == tuple(shape):
        return source
    return _apply(b, node, nn.Reshape(tuple(int(d) for d in shape)), [source], suffix)


def _put(b: Builder, node: IRNode, out: str, native: str, groups: list[list], origin: str):
    """Map ``out`` to ``native`` laid out as ``groups`` (per-sample axes numbered in order)."""
    flat = [e for g in groups for e in g]
    pos = flat.index("B")
    batch = next(g for g in groups if "B" in g)
    before, after = batch.index("B"), len(batch) - batch.index("B") - 1
    if pos == 0 and before == 0 and after == 0:
        if b.act.get(out) != native:
            if native in b.act.values() or native == b.g.input_name:
                native = _apply(b, node, nn.Identity(), [native])  # a node of its own name
            b.act[out] = native
        _views(b).pop(out, None)
        return
    _views(b)[out] = View(native, pos, before, after, origin or node.name)


def _renumber(groups: list[list]) -> list[list]:
    """Per-sample axes numbered 0, 1, ... in the order they appear."""
    k, out = 0, []
    for g in groups:
        new = []
        for e in g:
            if e == "B":
                new.append("B")
            else:
                new.append(k)
                k += 1
        out.append(new)
    return out


def _single(b: Builder, node: IRNode, x: View, axis: int) -> tuple[int, int]:
    """(ONNX axis, per-sample axis) of ONNX ``axis``, which must not be the batch group."""
    groups = x.groups(b)
    a = axis + len(groups) if axis < 0 else axis
    if not 0 <= a < len(groups):
        raise b.fail(node, f"axis {axis} of a rank-{len(groups)} tensor.")
    if "B" in groups[a]:
        where = f" (moved by {x.origin!r})" if x.origin else ""
        raise b.fail(node, f"axis {axis} is the batch axis{where}; it cannot be touched.")
    return a, groups[a][0]


# -- operators ------------------------------------------------------------------------------
def _transpose(b: Builder, node: IRNode, x: View) -> None:
    groups = x.groups(b)
    rank = len(groups)
    perm = [int(p) for p in node.attrs.get("perm", range(rank - 1, -1, -1))]
    if sorted(perm) != list(range(rank)):
        raise b.fail(node, f"perm {perm} is not a permutation of the {rank} axes of its input.")
    moved = [groups[p] for p in perm]
    order = tuple(e for g in moved for e in g if e != "B")
    source = x.node
    if order != tuple(range(len(order))):
        source = _apply(b, node, nn.Transpose(order), [source])
    _put(b, node, node.outputs[0], source, _renumber(moved), x.origin)


def _shape(b: Builder, node: IRNode, x: View) -> None:
    shape = b.g.shape_of(x.node)
    dims: list[object] = []
    for g in x.groups(b):
        if "B" in g:
            dims.append(_times_batch(int(np.prod([shape[e] for e in g if e != "B"]))))
        else:
            dims.append(int(shape[g[0]]))
    out = np.array(dims, dtype=object)
    _store(b, node, out[node.attrs.get("start", 0) : node.attrs.get("end")])


def _reshape(b: Builder, node: IRNode, x: View) -> None:
    """A reshape of the ONNX tensor: the per-sample axes before and after the batch are
    reshaped apart (their products kept), the target's batch entry says what merges."""
    shape = b.g.shape_of(x.node)
    before = int(np.prod(shape[: x.pos]))
    after = int(np.prod(shape[x.pos :]))
    raw = list(np.asarray(b.value(node, node.inputs[1])).reshape(-1))
    dims_in = [
        _times_batch(int(np.prod([shape[e] for e in g if e != "B"]))) if "B" in g else shape[g[0]]
        for g in x.groups(b)
    ]
    target: list[object] = []
    for j, d in enumerate(raw):
        if batch_factor(d) is None and int(d) == 0 and not node.attrs.get("allowzero", 0):
            d = dims_in[j]
        target.append(d if batch_factor(d) is not None else int(d))
    marked = [j for j, d in enumerate(target) if batch_factor(d) is not None]
    unknown = [j for j, d in enumerate(target) if batch_factor(d) is None and d == -1]
    if len(marked) > 1 or len(unknown) > 1:
        raise b.fail(node, f"target shape {raw}: the batch size or -1 appears more than once.")
    if marked:
        i, k = marked[0], batch_factor(target[marked[0]])
        if unknown:
            known = int(np.prod([d for d in target if batch_factor(d) is None and d != -1]))
            if known * k == 0 or (before * after) % (known * k):
                raise b.fail(node, f"target shape {raw} does not fit the input.")
            target[unknown[0]] = (before * after) // (known * k)
    elif unknown:
        i, k = unknown[0], None
    else:
        raise b.fail(
            node,
            f"target shape {raw} has no entry holding the batch size (nor -1); the batch "
            "size must stay an input of the reshape.",
        )
    head = int(np.prod([int(d) for d in target[:i]]))
    tail = int(np.prod([int(d) for d in target[i + 1 :]]))
    if head == 0 or tail == 0 or before % head or after % tail:
        raise b.fail(
            node,
            f"target shape {raw} mixes the batch axis with others (each sample's values "
            "would depend on the rest of the batch).",
        )
    lead, trail = before // head, after // tail
    if k is not None and lead * trail != k:
        raise b.fail(node, f"target shape {raw} does not fit the input.")
    new_shape = [int(d) for d in target[:i]] + [lead, trail] + [int(d) for d in target[i + 1 :]]
    groups = [[j] for j in range(i)]
    groups.append([i, "B", i + 1])
    groups += [[j + 2] for j in range(i + 1, len(target))]
    keep = [j for j, d in enumerate(new_shape) if not (j in (i, i + 1) and d == 1)]
    new_shape = [new_shape[j] for j in keep]
    groups = _renumber([[e for e in g if e == "B" or e in keep] for g in groups])
    source = _reshaped(b, node, x.node, new_shape)
    _put(b, node, node.outputs[0], source, groups, x.origin)


def _split(b: Builder, node: IRNode, x: View) -> None:
    from xai_core.importers.onnx_ops_tensor import _split_sizes

    _, a = _single(b, node, x, int(node.attrs.get("axis", 0)))
    sizes = _split_sizes(b, node, b.g.shape_of(x.node)[a])
    start = 0
    for k, (out, size) in enumerate(zip(node.outputs, sizes)):
        if size == 0:
            raise b.fail(node, f"output {k} ({out!r}) is empty.")
        if out:
            part = _apply(b, node, nn.Slice(a, start, start + size), [x.node], f"/{k}")
            _put(b, node, out, part, x.groups(b), x.origin)
        start += size


def _drop(b: Builder, node: IRNode, x: View, axes: list[int], source: str) -> None:
    groups = x.groups(b)
    drop = {_single(b, node, x, a)[0] for a in axes}
    shape = b.g.shape_of(source)
    if any(shape[groups[a][0]] != 1 for a in drop):
        raise b.fail(node, f"axes {axes} of a tensor of per-sample shape {shape} are not all 1.")
    kept = [g for a, g in enumerate(groups) if a not in drop]
    new_shape = [shape[e] for g in kept for e in g if e != "B"]
    _put(b, node, node.outputs[0], _reshaped(b, node, source, new_shape), _renumber(kept), x.origin)


def _squeeze(b: Builder, node: IRNode, x: View) -> None:
    axes = _axes(b, node)
    if not axes:
        shape = b.g.shape_of(x.node)
        axes = [a for a, g in enumerate(x.groups(b)) if "B" not in g and shape[g[0]] == 1]
    _drop(b, node, x, axes, x.node)


def _unsqueeze(b: Builder, node: IRNode, x: View) -> None:
    groups = x.groups(b)
    axes = _axes(b, node)
    rank = len(groups) + len(axes)
    shape = list(b.g.shape_of(x.node))
    sizes = {e: shape[e] for g in groups for e in g if e != "B"}
    for a in sorted(a + rank if a < 0 else a for a in axes):
        groups.insert(a, ["new"])
    new_shape = [1 if e == "new" else sizes[e] for g in groups for e in g if e != "B"]
    source = _reshaped(b, node, x.node, new_shape)
    _put(b, node, node.outputs[0], source, _renumber(groups), x.origin)


def _gather(b: Builder, node: IRNode, x: View) -> None:
    index = np.asarray(b.numbers(node, node.inputs[1]))
    axis = int(node.attrs.get("axis", 0))
    _, a = _single(b, node, x, axis)
    size = b.g.shape_of(x.node)[a]
    if index.size != 1 or index.ndim > 1:
        raise b.fail(node, f"indices of shape {index.shape} on this tensor; one index only.")
    i = int(index.reshape(-1)[0])
    i = i + size if i < 0 else i
    if not 0 <= i < size:
        raise b.fail(node, f"index {index.tolist()} outside an axis of size {size}.")
    part = _apply(b, node, nn.Slice(a, i, i + 1), [x.node], "/slice")
    if index.ndim == 1:
        _put(b, node, node.outputs[0], part, x.groups(b), x.origin)
    else:
        _drop(b, node, x, [axis], part)


def _same_layout(b: Builder, node: IRNode, views: list[View]) -> None:
    first = views[0]
    shapes = [b.g.shape_of(v.node) for v in views]
    for v, s in zip(views[1:], shapes[1:]):
        if (v.pos, v.before, v.after, len(s)) != (
            first.pos,
            first.before,
            first.after,
            len(shapes[0]),
        ):
            raise b.fail(
                node,
                "its inputs hold the batch axis in different places (moved by "
                f"{first.origin or v.origin!r}); they must agree.",
            )


def _native_constant(b: Builder, node: IRNode, x: View, value: np.ndarray) -> np.ndarray:
    """A constant broadcast against the ONNX tensor ``x``, as one broadcast against its node."""
    groups = x.groups(b)
    value = np.asarray(value)
    if value.ndim > len(groups):
        raise b.fail(node, f"a constant of shape {value.shape} has more axes than its operand.")
    full = (1,) * (len(groups) - value.ndim) + value.shape
    out = []
    for g, d in zip(groups, full):
        if "B" in g:
            if d != 1:
                raise b.fail(
                    node,
                    f"a constant of shape {value.shape} varies along the batch axis (moved by "
                    f"{x.origin!r}).",
                )
            out += [1] * (len(g) - 1)
        else:
            out.append(d)
    return value.reshape(out)


_BINARY = {"Add": nn.Add, "Sub": nn.Subtract, "Mul": nn.Multiply, "Div": nn.Divide}


def _binary(b: Builder, node: IRNode, x: View) -> None:
    views = [_of(b, i) for i in node.inputs[:2]]
    acts = [v for v in views if v is not None]
    _same_layout(b, node, acts)
    layout = acts[0]
    rank = len(b.g.shape_of(layout.node)) + 1
    ins = []
    for name, v in zip(node.inputs[:2], views):
        if v is not None:
            ins.append(v.node)
        else:
            value = _native_constant(b, node, layout, b.numbers(node, name))
            ins.append(b.value_node(node, value, rank))
    _put(
        b,
        node,
        node.outputs[0],
        _apply(b, node, _BINARY[node.op](), ins),
        layout.groups(b),
        layout.origin,
    )


def _matmul(b: Builder, node: IRNode, x: View) -> None:
    views = [_of(b, i) for i in node.inputs[:2]]
    if views[0] is None:
        raise b.fail(node, "a constant times a tensor with the batch axis moved is not supported.")
    a = views[0]
    groups = a.groups(b)
    if len(groups) < 2 or "B" in groups[-1]:
        raise b.fail(node, "the batch axis is the last axis of the first operand.")
    rank = len(b.g.shape_of(a.node)) + 1
    if views[1] is None:
        w = np.asarray(b.numbers(node, node.inputs[1]))
        if w.ndim < 2 or any(d != 1 for d in w.shape[:-2]):
            raise b.fail(node, f"a constant of shape {w.shape}: a matrix is expected here.")
        other = b.value_node(node, w.reshape(w.shape[-2:]), rank)
    else:
        _same_layout(b, node, views)
        if "B" in groups[-2]:
            raise b.fail(node, "the batch axis is one of the multiplied axes.")
        other = views[1].node
    out = _apply(b, node, nn.MatMul(), [a.node, other])
    _put(b, node, node.outputs[0], out, groups, a.origin)


def _gemm(b: Builder, node: IRNode, x: View) -> None:
    attrs = node.attrs
    if attrs.get("transA", 0):
        raise b.fail(node, "transA=1 is not supported (the batch must be the rows of A).")
    groups = x.groups(b)
    if len(groups) != 2 or "B" in groups[1]:
        raise b.fail(node, "the batch axis must be in the rows of A.")
    w = np.asarray(b.numbers(node, node.inputs[1]), dtype=np.float64) * attrs.get("alpha", 1.0)
    w = w.T if attrs.get("transB", 0) else w
    rank = len(b.g.shape_of(x.node)) + 1
    out = _apply(b, node, nn.MatMul(), [x.node, b.value_node(node, w, rank)], "/matmul")
    if len(node.inputs) > 2 and node.inputs[2]:
        c = np.asarray(b.numbers(node, node.inputs[2]), dtype=np.float64) * attrs.get("beta", 1.0)
        bias = _native_constant(b, node, x, c)
        out = _apply(b, node, nn.Add(), [out, b.value_node(node, bias, rank)])
    _put(b, node, node.outputs[0], out, groups, x.origin)


def _softmax(b: Builder, node: IRNode, x: View) -> None:
    if b.opset < 13:
        raise b.fail(node, "Softmax before opset 13 of a tensor with the batch axis moved.")
    _, a = _single(b, node, x, int(node.attrs.get("axis", -1)))
    if a != len(b.g.shape_of(x.node)) - 1:
        raise b.fail(node, "only a softmax over the last axis, with the batch axis moved.")
    made = _apply(b, node, nn.LogSoftmax() if node.op == "LogSoftmax" else nn.Softmax(), [x.node])
    _put(b, node, node.outputs[0], made, x.groups(b), x.origin)


def _identity(b: Builder, node: IRNode, x: View) -> None:
    _put(b, node, node.outputs[0], x.node, x.groups(b), x.origin)


#: Operators of one input acting on each element alone: their converters run unchanged on
#: the view's node.
ELEMENTWISE = frozenset(
    "Relu LeakyRelu Sigmoid Tanh Erf Gelu Sqrt Exp Log Neg Abs Reciprocal Softplus Softsign "
    "HardSigmoid HardSwish Mish Elu Selu Celu Sin Cos Clip".split()
)


def _pass_through(b: Builder, node: IRNode, x: View) -> None:
    """An elementwise operator, or one over trailing axes that exclude the batch group
    (``LayerNormalization``), run by its registered converter on the view's node."""
    from xai_core.importers.onnx_registry import find_converter

    if node.op == "LayerNormalization":
        groups = x.groups(b)
        axis = int(node.attrs.get("axis", -1))
        if axis >= 0 or any("B" in g for g in groups[axis:]):
            raise b.fail(
                node, f"axis {axis}: only trailing axes after the batch axis are normalised here."
            )
    name = node.inputs[0]
    b.act[name] = x.node
    try:
        find_converter(node.op, b.opset).fn(b, node)
    finally:
        del b.act[name]
    _put(b, node, node.outputs[0], b.act.pop(node.outputs[0]), x.groups(b), x.origin)


_REDUCTIONS = {
    "ReduceL2": "l2",
    "ReduceSum": "sum",
    "ReduceMean": "mean",
    "ReduceMax": "max",
    "ReduceMin": "min",
}


def _reduce(b: Builder, node: IRNode, x: View) -> None:
    """A reduction over ONNX axes outside the batch group, keeping them (``F.normalize``'s
    norm in Swin v2's cosine attention): one :class:`~xai_core.nn.Reduce` on the view's node."""
    if not node.attrs.get("keepdims", 1):
        raise b.fail(node, "keepdims=0 on a tensor whose batch axis is moved: not supported.")
    if len(node.inputs) > 1 and node.inputs[1]:
        axes = b.ints(node, node.inputs[1])
    else:
        axes = [int(a) for a in node.attrs.get("axes", [])]
    groups = x.groups(b)
    if not axes:
        raise b.fail(node, "no axes given: the reduction would mix the batch's samples.")
    sample = []
    for a in axes:
        if not -len(groups) <= a < len(groups):
            raise b.fail(node, f"axis {a} is out of range for {len(groups)} axes.")
        g = groups[a]
        if "B" in g:
            raise b.fail(node, f"axis {a} holds the batch axis (moved by {x.origin!r}).")
        sample.append(g[0])
    if len(set(sample)) != len(sample):
        raise b.fail(node, f"axes {axes} name one axis twice.")
    layer = nn.Reduce(_REDUCTIONS[node.op], tuple(sorted(sample)), keepdims=True)
    _put(b, node, node.outputs[0], _apply(b, node, layer, [x.node]), groups, x.origin)


def _expand(b: Builder, node: IRNode, x: View) -> None:
    """``Expand`` of a view to a shape of the same layout (``Shape`` of a view of it):
    axes of size 1 outside the batch group broadcast, as :class:`~xai_core.nn.Expand`."""
    groups = x.groups(b)
    shape = b.g.shape_of(x.node)
    target = list(np.asarray(b.value(node, node.inputs[1])).reshape(-1))
    if len(target) != len(groups):
        raise b.fail(
            node, f"target shape {target} of {len(target)} axes; its input has {len(groups)}."
        )
    out = list(shape)
    for g, t in zip(groups, target):
        if "B" in g:
            k = int(np.prod([shape[s] for s in g if s != "B"]))
            if not (batch_factor(t) == k or (batch_factor(t) is None and int(t) == 1)):
                raise b.fail(node, f"target shape {target} changes the batch axis's size.")
            continue
        if batch_factor(t) is not None:
            raise b.fail(node, f"target shape {target} moves the batch axis.")
        size, want = shape[g[0]], int(t)
        if want != 1 and size not in (1, want):
            raise b.fail(node, f"axis of size {size} cannot be expanded to {want}.")
        out[g[0]] = max(size, want)
    _put(
        b, node, node.outputs[0], _apply(b, node, nn.Expand(tuple(out)), [x.node]), groups, x.origin
    )


_OPS: dict[str, Callable[[Builder, IRNode, View], None]] = {
    "LayerNormalization": _pass_through,
    "LSTM": _recurrent,
    "GRU": _recurrent,
    **{op: _pass_through for op in ELEMENTWISE},
    "Transpose": _transpose,
    "Reshape": _reshape,
    "Shape": _shape,
    "Split": _split,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Gather": _gather,
    "MatMul": _matmul,
    "Gemm": _gemm,
    "Add": _binary,
    "Sub": _binary,
    "Mul": _binary,
    "Div": _binary,
    "Softmax": _softmax,
    "LogSoftmax": _softmax,
    "Identity": _identity,
    "Dropout": _identity,
    "Expand": _expand,
    **{op: _reduce for op in _REDUCTIONS},
}


# -- the batch size in folded shapes --------------------------------------------------------
def _shape_arithmetic(b: Builder, node: IRNode) -> bool:
    """``Mul`` / ``Div`` of folded shapes holding the batch size by constants."""
    if node.op not in ("Mul", "Div") or any(b.is_act(i) for i in node.inputs[:2]):
        return False
    if not any(i in b.shape for i in node.inputs[:2]):
        return False
    x, y = (np.asarray(b.value(node, i)).astype(object) for i in node.inputs[:2])
    xs, ys = np.broadcast_arrays(x, y)
    out = []
    for p, q in zip(xs.reshape(-1), ys.reshape(-1)):
        fp, fq = batch_factor(p), batch_factor(q)
        if fp is not None and fq is not None:
            raise b.fail(node, "multiplies the batch size by itself.")
        if node.op == "Mul":
            if fp is None and fq is None:
                out.append(int(p) * int(q))
            else:
                out.append(_times_batch((fp or fq) * int(q if fp is not None else p)))
        else:
            if fq is not None or fp is None:
                if fq is not None:
                    raise b.fail(node, "divides by the batch size.")
                out.append(int(p) // int(q) if int(q) else 0)
            elif int(q) == 0 or fp % int(q):
                raise b.fail(node, f"divides {fp} times the batch size by {q}.")
            else:
                out.append(_times_batch(fp // int(q)))
    _store(b, node, np.array(out, dtype=object).reshape(xs.shape))
    return True


def _merges_batch(b: Builder, node: IRNode) -> bool:
    """Whether a ``Reshape`` of a plain activation merges the batch axis with others."""
    raw = list(np.asarray(b.value(node, node.inputs[1])).reshape(-1))
    if any(isinstance(d, BatchMultiple) for d in raw):
        return True
    if not raw or any(d is BATCH for d in raw[1:]) or not (raw[0] is BATCH or raw[0] in (0, -1)):
        return False
    rest = [int(d) for d in raw[1:]]
    shape = b.g.shape_of(b.act[node.inputs[0]])
    if -1 in rest or (0 in rest and not node.attrs.get("allowzero", 0)):
        return False
    return raw[0] == -1 and int(np.prod(rest)) != int(np.prod(shape))


def wants(b: Builder, node: IRNode) -> bool:
    """Whether ``node`` is converted here (it reads a view, or makes one)."""
    if any(i in _views(b) for i in node.inputs):
        return True
    if node.op == "Transpose" and node.inputs and b.is_act(node.inputs[0]):
        rank = b.rank(node, node.inputs[0])
        perm = [int(p) for p in node.attrs.get("perm", range(rank - 1, -1, -1))]
        return sorted(perm) == list(range(rank)) and perm[0] != 0
    if node.op == "Reshape" and b.is_act(node.inputs[0]):
        return _merges_batch(b, node)
    if node.op in ("Mul", "Div") and not any(b.is_act(i) for i in node.inputs[:2]):
        return any(i in b.shape for i in node.inputs[:2])
    return False


def convert(b: Builder, node: IRNode) -> None:
    """Convert a node :func:`wants` (reading a view, or making one)."""
    if _shape_arithmetic(b, node):
        return
    x = next((_views(b)[i] for i in node.inputs if i in _views(b)), None)
    if x is None:
        x = _of(b, node.inputs[0])
    fn = _OPS.get(node.op)
    if fn is None:
        raise b.fail(
            node,
            f"its input has the batch axis moved or merged with other axes (by {x.origin!r}); "
            f"{node.op} can only read tensors whose batch axis is first. Operators that read "
            f"such tensors: {', '.join(sorted(_OPS))}.",
        )
    fn(b, node, x)
