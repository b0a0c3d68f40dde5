"""What transformer exports need beyond the plain operators, handled while building.

- **The batch axis moved or merged** (timm's ``permute(2, 0, 3, 1, 4)`` before
  ``unbind(0)``, torch's ``(seq, batch * heads, d)``, Swin's windows): views, in
  :mod:`xai_core.importers.onnx_batch_views`.
- **Constants with a batch axis.** ``cls_token.expand(B, -1, -1)`` (ViT, DeiT) and the
  ``token_type_ids`` / attention mask that BERT expands to the batch size are the same
  for every sample: such a tensor is held as a constant whose batch axis has size 1 (a
  *batch constant*), so ``Concat``, ``Add`` and ``Where`` broadcast it over the batch and
  ``Shape`` reports the batch size for it. Every tensor folded from a batch constant is
  one too; ``Range(0, batch size)`` (the sample index transformers' mask functions use
  to index such masks) is the batch constant ``[0]``.
- **Attention-mask arithmetic** on constants (``And``, ``Or``, comparisons,
  ``GatherElements``, ``Flatten`` and ``Concat`` of any rank), folded; ``Where(IsNaN(p), 0, p)`` after a masked softmax (torch's
  ``scaled_dot_product_attention``) as :class:`~xai_core.nn.ReplaceNaN`.
- ``Gather`` of an activation by constant indices (``x[:, 0]``, the class token) as
  :class:`~xai_core.nn.Gather`; of a constant table by run-time ids (``nn.Embedding``) as
  :class:`~xai_core.nn.Embedding`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xai_core import nn
from xai_core.importers import onnx_batch_views, onnx_ops_recurrent
from xai_core.importers.ir import IRNode
from xai_core.importers.onnx_ops import BATCH, Builder, _store
from xai_core.importers.onnx_registry import register

__all__ = ["before", "after"]


def _batch_consts(b: Builder) -> set[str]:
    return b.__dict__.setdefault("batch_consts", set())


# -- batch constants ---------------------------------------------------------------------
def _expand_constant(b: Builder, node: IRNode) -> bool:
    """A constant expanded to the batch size: a batch constant (its batch axis of size 1)."""
    target = np.asarray(b.value(node, node.inputs[1])).reshape(-1)
    if not len(target) or target[0] is not BATCH:
        return False
    if any(d is BATCH for d in target[1:]):
        raise b.fail(node, f"target shape {target.tolist()} moves the batch axis.")
    data = np.asarray(b.value(node, node.inputs[0]))
    out = np.broadcast_shapes(data.shape, (1, *(int(d) for d in target[1:])))
    if len(out) != len(target):
        raise b.fail(node, f"a constant of shape {data.shape} is expanded to rank {len(target)}.")
    _store(b, node, np.broadcast_to(data, out).copy())
    _batch_consts(b).add(node.outputs[0])
    return True


def _shape_of_batch_constant(b: Builder, node: IRNode) -> None:
    dims: list[object] = [BATCH, *np.shape(b.const[node.inputs[0]])[1:]]
    out = np.array(dims, dtype=object)
    _store(b, node, out[node.attrs.get("start", 0) : node.attrs.get("end")])


def _reshape_batch_constant(b: Builder, node: IRNode) -> bool:
    """A batch constant reshaped to a target holding the batch size (kept of size 1)."""
    target = list(np.asarray(b.value(node, node.inputs[1])).reshape(-1))
    if not target or target[0] is not BATCH or any(d is BATCH for d in target[1:]):
        return False
    data = np.asarray(b.const[node.inputs[0]])
    shape = [1] + [data.shape[i + 1] if int(d) == 0 else int(d) for i, d in enumerate(target[1:])]
    _store(b, node, data.reshape(shape))
    _batch_consts(b).add(node.outputs[0])
    return True


def _concat_constants(b: Builder, node: IRNode) -> bool:
    """``Concat`` of constants of any rank (torchvision's shifted-window mask), folded."""
    names = [i for i in node.inputs if i]
    if not names or any(i not in b.const for i in names):
        return False
    parts = [np.asarray(b.const[i]) for i in names]
    if all(p.ndim <= 1 for p in parts):
        return False  # shapes and 1-D constants: the registered converter folds them
    axis = int(node.attrs["axis"])
    if len({p.ndim for p in parts}) != 1 or not -parts[0].ndim <= axis < parts[0].ndim:
        raise b.fail(node, f"constants of shapes {[p.shape for p in parts]} along axis {axis}.")
    try:
        _store(b, node, np.concatenate(parts, axis=axis))
    except ValueError:
        raise b.fail(
            node, f"constants of shapes {[p.shape for p in parts]} differ off axis {axis}."
        ) from None
    return True


def _batch_range(b: Builder, node: IRNode) -> bool:
    """``Range(0, batch size, 1)``: the index of each sample in its batch, as transformers'
    mask functions compute it to index masks expanded to the batch. Held as the batch
    constant ``[0]``: the index of the first sample, right wherever it indexes batch
    constants (the same for every sample). ``from_torch`` checks the result on two batches."""
    start, limit, delta = (np.asarray(b.value(node, i)).reshape(-1) for i in node.inputs[:3])
    if not (len(limit) == 1 and limit[0] is BATCH):
        return False
    if start.dtype == object or delta.dtype == object or start[0] != 0 or delta[0] != 1:
        raise b.fail(node, "a range over the batch size must start at 0 with step 1.")
    _store(b, node, np.zeros(1, dtype=np.int64))
    _batch_consts(b).add(node.outputs[0])
    _sample_indices(b).add(node.outputs[0])
    return True


def _sample_indices(b: Builder) -> set[str]:
    """The outputs of ``Range(0, batch size)`` (:func:`_batch_range`)."""
    return b.__dict__.setdefault("sample_indices", set())


def _stride_of_sample_index(b: Builder, name: str) -> int | None:
    """``k`` when ``name`` is ``Range(0, batch size) * k`` for a constant ``k`` (either
    wrapped in ``Unsqueeze`` nodes), else None: the batch term of an index into a batch
    merged with ``k`` rows."""
    producers = b.producers

    def unsqueezed(t: str) -> str:  # what a chain of Unsqueeze nodes started from
        while t not in _sample_indices(b) and getattr(producers.get(t), "op", "") == "Unsqueeze":
            t = producers[t].inputs[0]
        return t

    mul = producers.get(unsqueezed(name))
    if mul is None or mul.op != "Mul":
        return None
    for index, k in (mul.inputs[:2], mul.inputs[1::-1]):
        if unsqueezed(index) in _sample_indices(b) and k not in _batch_consts(b):
            value = np.asarray(b.const.get(k, b.shape.get(k, np.array([]))))
            if value.size == 1 and value.dtype.kind in "iu":
                return int(value.reshape(-1)[0])
    return None


def _merged(b: Builder) -> dict[str, tuple[str, int]]:
    """``Flatten(x, axis > 1)`` of activations: ``x``'s batch axis merged with its next axes."""
    return b.__dict__.setdefault("merged", {})


def _merges_for_gathers(b: Builder, node: IRNode) -> bool:
    """Whether ``node`` is a ``Flatten`` of an activation merging its batch axis with
    others, read only by ``Gather`` nodes (else its own converter refuses it, by name)."""
    if not b.is_act(node.inputs[0]) or int(node.attrs.get("axis", 1)) <= 1:
        return False
    out = node.outputs[0]
    readers = b.readers.get(out, [])
    return (
        bool(readers)
        and out not in b.graph_outputs
        and all(r.op == "Gather" and r.inputs[0] == out for r in readers)
    )


def _gather_merged(b: Builder, node: IRNode) -> None:
    """``Gather(Flatten(x, axis), batch_index * rows + i)`` along axis 0, as transformers'
    mask functions read each sample's mask: the index a batch constant (the batch term
    held as 0, :func:`_batch_range`), so each sample's rows ``i`` of its own ``x`` are read:
    a per-sample ``Reshape`` and :class:`~xai_core.nn.Gather`. ``from_torch`` checks the
    result on two batches, as for every batch constant."""
    x, axis = _merged(b)[node.inputs[0]]
    index = node.inputs[1]
    sample = b.g.shape_of(b.node_of(node, x))
    rows = int(np.prod(sample[: axis - 1]))
    add = b.producers.get(index)
    strides = (
        [_stride_of_sample_index(b, i) for i in add.inputs[:2]]
        if add is not None and add.op == "Add"
        else []
    )
    if (
        int(node.attrs.get("axis", 0)) != 0
        or index not in _batch_consts(b)
        or sorted(strides, key=lambda s: s is None) != [rows, None]
    ):
        raise b.fail(
            node,
            "a Flatten that merges the batch axis with others is read only by a Gather along "
            f"axis 0 by Range(0, batch size) * {rows} + a constant position (a per-sample "
            "mask lookup).",
        )
    local = add.inputs[strides.index(None)]
    if local in _batch_consts(b) or local not in b.const:
        raise b.fail(node, "the position added to the sample's index must be a constant.")
    idx = np.asarray(b.const[index])
    if idx.dtype.kind not in "iu" or idx.shape[:1] != (1,) or idx.min() < 0 or idx.max() >= rows:
        raise b.fail(node, f"indices of shape {idx.shape} outside a sample's {rows} rows.")
    flat = b.add(node, nn.Reshape((rows, int(np.prod(sample[axis - 1 :])))), x, suffix="/rows")
    b.add(node, nn.Gather(0, idx[0]), flat)


def _nan_tests(b: Builder) -> dict[str, str]:
    return b.__dict__.setdefault("nan_tests", {})


def _nan_guard(b: Builder, node: IRNode) -> bool:
    """``Where(IsNaN(x), c, x)`` with a constant ``c`` of one value as one
    :class:`~xai_core.nn.ReplaceNaN`; False (and nothing added) for any other ``Where``."""
    cond, then, other = node.inputs[:3]
    if other != _nan_tests(b)[cond] or b.is_act(then):
        return False
    value = np.asarray(b.numbers(node, then))
    if value.size != 1:
        return False
    b.add(node, nn.ReplaceNaN(float(value.reshape(-1)[0])), other)
    return True


# -- the hooks build_onnx calls around each converter ------------------------------------
def before(b: Builder, node: IRNode) -> bool:
    """Convert ``node`` here when it reads a view, moves the batch axis or makes a batch
    constant; True when it was converted (the registered converter is then skipped)."""
    onnx_ops_recurrent.check_fill_readers(b, node)
    if onnx_ops_recurrent.batch_fill(b, node) or onnx_ops_recurrent.fill_slice(b, node):
        return True
    if onnx_batch_views.wants(b, node):
        onnx_batch_views.convert(b, node)
        return True
    if node.op == "IsNaN" and b.is_act(node.inputs[0]):
        _nan_tests(b)[node.outputs[0]] = node.inputs[0]  # for a Where below; built as well
        return False
    if node.op == "Where" and node.inputs[0] in _nan_tests(b) and _nan_guard(b, node):
        return True
    consts = _batch_consts(b)
    if node.op == "Concat" and _concat_constants(b, node):
        return True
    if node.op == "Range" and _batch_range(b, node):
        return True
    if node.op == "Flatten" and _merges_for_gathers(b, node):
        _merged(b)[node.outputs[0]] = (node.inputs[0], int(node.attrs["axis"]))
        return True  # built by the Gathers that read it (a mask indexed per sample)
    if node.op == "Gather" and node.inputs[0] in _merged(b):
        _gather_merged(b, node)
        return True
    if node.op == "Flatten" and node.inputs[0] in b.const:
        data = np.asarray(b.const[node.inputs[0]])
        axis = int(node.attrs.get("axis", 1))
        axis = axis + data.ndim if axis < 0 else axis
        _store(b, node, data.reshape(int(np.prod(data.shape[:axis])), -1))
        return True
    if node.op == "Expand" and not b.is_act(node.inputs[0]):
        return _expand_constant(b, node)
    if node.op == "Shape" and node.inputs[0] in consts:
        _shape_of_batch_constant(b, node)
        return True
    if node.op == "Reshape" and node.inputs[0] in consts:
        return _reshape_batch_constant(b, node)
    return False


def after(b: Builder, node: IRNode) -> None:
    """Mark the constant outputs of a node folded from a batch constant as batch constants."""
    consts = _batch_consts(b)
    if consts and node.op != "Shape" and any(i in consts for i in node.inputs):
        consts.update(o for o in node.outputs if o in b.const)


# -- Gather: of constants and shapes (folded), or of an activation ----------------------
def _table_lookup(b: Builder, node: IRNode) -> None:
    """``Gather`` of a constant table by activation indices along axis 0: token ids looked
    up in an embedding table (torch's ``nn.Embedding``), as :class:`~xai_core.nn.Embedding`."""
    data, indices = node.inputs[:2]
    if data not in b.const or b.rank(node, indices) != 2:
        raise b.fail(
            node,
            "a table is looked up by run-time indices only as an embedding: a constant table "
            "of shape (vocab_size, dim) indexed by a (batch, seq_len) tensor of ids.",
        )
    table = np.asarray(b.numbers(node, data))
    axis = int(node.attrs.get("axis", 0))
    if table.ndim != 2 or axis not in (0, -2):
        raise b.fail(
            node,
            f"run-time indices select rows (axis 0) of a 2-D table; got a table of shape "
            f"{table.shape} indexed along axis {axis}.",
        )
    layer = nn.Embedding(table.shape[0], table.shape[1])
    b.add(node, layer, indices, params={"weight": table})


def op_gather(b: Builder, node: IRNode) -> None:
    """``Gather`` of a constant or shape (folded), or of an activation by constant indices
    along an axis other than the batch's (:class:`~xai_core.nn.Gather`)."""
    from xai_core.importers import onnx_ops
    from xai_core.importers.onnx_ops import _axis

    data, indices = node.inputs[:2]
    if not b.is_act(data) and b.is_act(indices):
        _table_lookup(b, node)
        return
    if not b.is_act(data):
        onnx_ops.op_gather(b, node)
        return
    if b.is_act(indices):
        raise b.fail(node, "the indices must be constants; they are computed at run time.")
    index = np.asarray(b.numbers(node, indices))
    if index.dtype.kind not in "iu":
        raise b.fail(node, f"indices of type {index.dtype}; integers are expected.")
    rank = b.rank(node, data)
    axis = _axis(b, node, int(node.attrs.get("axis", 0)), rank)
    size = b.g.shape_of(b.node_of(node, data))[axis]
    if np.any(index < -size) or np.any(index >= size):
        raise b.fail(node, f"indices {index.tolist()} outside an axis of size {size}.")
    b.add(node, nn.Gather(axis, index), data)


register(
    "Gather",
    op_gather,
    since=1,
    limits=(
        "activations: constant indices, not along the batch axis; any on constants; a "
        "constant 2-D table by run-time ids along axis 0 (an embedding)"
    ),
)


# -- attention-mask arithmetic on constants, folded ----------------------------------------
def _folded(fn: Callable[..., np.ndarray], arity: int) -> Callable[[Builder, IRNode], None]:
    """A converter folding ``fn`` of ``arity`` constant inputs (numpy broadcasting)."""
    from xai_core.importers.onnx_ops_tensor import _plain

    def op(b: Builder, node: IRNode) -> None:
        if any(b.is_act(i) for i in node.inputs[:arity]):
            raise b.fail(
                node,
                f"{node.op} of a tensor computed at run time is not supported; only of "
                "constants (attention masks fixed at export).",
            )
        _store(b, node, fn(*(_plain(b, node, i) for i in node.inputs[:arity])))

    return op


def _gather_elements(b: Builder, node: IRNode) -> None:
    """``GatherElements``: folded on constants (position and token-type ids); of a computed
    tensor by constant indices along an axis other than the batch's, the same for every
    sample, a flattening ``Reshape`` and one :class:`~xai_core.nn.Gather` of the elements'
    flat positions (its backward pass adds the gradient back to the elements read)."""
    from xai_core.importers.onnx_ops import _axis
    from xai_core.importers.onnx_ops_tensor import _plain

    if b.is_act(node.inputs[1]):
        raise b.fail(node, "the indices must be constants; they are computed at run time.")
    computed = b.is_act(node.inputs[0])
    index = _plain(b, node, node.inputs[1])
    if index.dtype.kind not in "iu":
        raise b.fail(node, f"indices of type {index.dtype}; integers are expected.")
    shape = (
        (0, *b.g.shape_of(b.node_of(node, node.inputs[0])))
        if computed
        else _plain(b, node, node.inputs[0]).shape
    )
    axis = int(node.attrs.get("axis", 0))
    if len(shape) != index.ndim:
        raise b.fail(node, f"data of rank {len(shape)} and indices of rank {index.ndim} differ.")
    if not -len(shape) <= axis < len(shape):
        raise b.fail(node, f"axis {axis} of a rank-{len(shape)} tensor is out of range.")
    a = _axis(b, node, axis, len(shape)) + 1 if computed else axis % len(shape)
    size = shape[a]
    if np.any(index < -size) or np.any(index >= size):
        raise b.fail(node, f"an index is outside axis {axis} of size {size}.")
    index = np.where(index < 0, index + size, index)
    if not computed:
        data = _plain(b, node, node.inputs[0])
        _store(b, node, np.take_along_axis(data, index, axis=a))
        return
    if index.shape[0] != b.batch or np.any(index != index[:1]):
        raise b.fail(
            node,
            f"indices of shape {index.shape}: their first axis must be the batch size "
            f"({b.batch or 'not fixed'}) and hold the same indices for every sample.",
        )
    sample = index[0]
    if any(n > m for d, (n, m) in enumerate(zip(sample.shape, shape[1:])) if d != a - 1):
        raise b.fail(
            node, f"indices of shape {index.shape} exceed the data's (batch, *{shape[1:]})."
        )
    where = list(np.indices(sample.shape, sparse=True))
    where[a - 1] = sample
    flat = np.ravel_multi_index(tuple(where), shape[1:])
    src = b.add(node, nn.Reshape((int(np.prod(shape[1:])),)), node.inputs[0], suffix="/flat")
    b.add(node, nn.Gather(0, flat), src)


def _logical(kind: str, fn: Callable[..., np.ndarray]) -> Callable[[Builder, IRNode], None]:
    """``And``, ``Or``, ``Xor``: folded on constants; of a computed tensor (booleans held as
    1 and 0), a :class:`~xai_core.nn.Compare` of that kind (gradient 0)."""
    from xai_core.importers.onnx_ops_elementwise import _operands

    folded = _folded(fn, 2)

    def op(b: Builder, node: IRNode) -> None:
        x, y = node.inputs[:2]
        if not b.is_act(x) and not b.is_act(y):
            folded(b, node)
            return
        b.add(node, nn.Compare(kind), _operands(b, node, [x, y]))

    return op


for _op, _fn in [("And", np.logical_and), ("Or", np.logical_or), ("Xor", np.logical_xor)]:
    register(
        _op,
        _logical(_op.lower(), _fn),
        since=7,
        limits="constants folded; computed tensors as 1 and 0 (gradient 0)",
    )
# The comparisons, IsNaN and IsInf are onnx_ops_elementwise's (constants folded, activations
# as layers); ``Where(IsNaN(x), c, x)`` after a masked softmax becomes one ReplaceNaN here.
register(
    "GatherElements",
    _gather_elements,
    since=11,
    folds=True,
    limits="constant indices, the same for every sample, not along the batch axis",
)
