"""ONNX operators that move, repeat, mask, accumulate or cast samples, as native layers.

``GlobalMaxPool`` is a max :class:`~xai_core.nn.Reduce` over the spatial axes;
``SpaceToDepth`` a Reshape, a Transpose and a Reshape; ``Tile`` one
:class:`~xai_core.nn.Expand` between Reshapes per repeated axis; ``Trilu`` a product with a
constant 0/1 mask; ``CumSum`` a :class:`~xai_core.nn.MatMul` by a constant triangular
matrix along the axis; ``CastLike`` (and ``Cast`` of an activation) to float32 or float64
is an identity (the network computes in its own dtype; the output's declared type is the
caller's to apply), to a narrower type (float16, bfloat16, float8, int4) a
:class:`~xai_core.nn.CastTo` rounding the values to that type's; ``QuantizeLinear`` is ``clip(round(x / scale) + zero_point)``;
``DequantizeLinear`` ``(x - zero_point) * scale`` (per tensor or per axis); ``Size`` folds when the batch size is fixed.
"""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np

from xai_core import nn
from xai_core.importers.ir import IRNode
from xai_core.importers.onnx_ops import Builder, _axis, _given, _store, cast_activation
from xai_core.importers.onnx_ops_pool_windows import needs_windows, pool_by_windows
from xai_core.importers.onnx_registry import register
from xai_core.nn.elementwise_math import CAST_TYPES

__all__: list[str] = []


def _shape(b: Builder, node: IRNode, x: str) -> tuple[int, ...]:
    return b.g.shape_of(b.node_of(node, x))


def _times(b: Builder, node: IRNode, src: str, matrix: np.ndarray, suffix: str) -> str:
    """The native node ``src`` (last axis m) times the constant (m, k) ``matrix``: a Dense
    layer without bias for vector samples, a MatMul by a Constant otherwise."""
    if len(b.g.shape_of(src)) == 1:
        name = b.add(node, nn.Dense(matrix.shape[1], use_bias=False), src, suffix=suffix)
        b.g.set_params(name, weight=matrix)
        return name
    rank = len(b.g.shape_of(src)) + 1
    return b.add(node, nn.MatMul(), [src, b.value_node(node, matrix, rank)], suffix=suffix)


def op_global_max_pool(b: Builder, node: IRNode) -> None:
    """``GlobalMaxPool``: the largest value of each channel, keeping the spatial axes as 1."""
    shape = _shape(b, node, node.inputs[0])
    if len(shape) < 2:
        raise b.fail(node, f"needs (C, *spatial) samples; got {shape}.")
    b.add(node, nn.Reduce("max", tuple(range(1, len(shape))), keepdims=True), node.inputs[0])


def op_space_to_depth(b: Builder, node: IRNode) -> None:
    """Blocks of pixels to channels (DepthToSpace's DCR inverse): no arithmetic."""
    shape = _shape(b, node, node.inputs[0])
    if len(shape) != 3:
        raise b.fail(node, f"needs NCHW images; got samples of shape {shape}.")
    c, h, w = shape
    bs = int(node.attrs["blocksize"])
    if bs < 1 or h % bs or w % bs:
        raise b.fail(node, f"height {h} and width {w} do not split into blocks of {bs}.")
    mode = node.attrs.get("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise b.fail(node, f"unknown mode {mode!r}; expected 'DCR' or 'CRD'.")
    perm = (2, 4, 0, 1, 3) if mode == "DCR" else (0, 2, 4, 1, 3)
    split = b.add(node, nn.Reshape((c, h // bs, bs, w // bs, bs)), node.inputs[0], suffix="/split")
    moved = b.add(node, nn.Transpose(perm), split, suffix="/moved")
    b.add(node, nn.Reshape((c * bs * bs, h // bs, w // bs)), moved)


def op_tile(b: Builder, node: IRNode) -> None:
    """``Tile`` with constant repeats (1 on the batch axis): an Expand per repeated axis."""
    x = node.inputs[0]
    repeats = b.ints(node, node.inputs[1])
    if not b.is_act(x):
        _store(b, node, np.tile(np.asarray(b.value(node, x)), repeats))
        return
    shape = list(_shape(b, node, x))
    if len(repeats) != len(shape) + 1 or repeats[0] != 1 or min(repeats) < 1:
        raise b.fail(
            node,
            f"repeats {repeats} must be 1 on the batch axis and positive on the {len(shape)} "
            "axes of each sample.",
        )
    src = b.node_of(node, x)
    todo = [(a, r) for a, r in enumerate(repeats[1:]) if r != 1]
    if not todo:
        b.add(node, nn.Identity(), src)
        return
    for k, (a, r) in enumerate(todo):
        last = k == len(todo) - 1
        lifted = b.add(node, nn.Reshape((*shape[:a], 1, *shape[a:])), src, suffix=f"/lift{a}")
        wide = b.add(node, nn.Expand((*shape[:a], r, *shape[a:])), lifted, suffix=f"/repeat{a}")
        shape[a] *= r
        src = b.add(node, nn.Reshape(tuple(shape)), wide, suffix="" if last else f"/tile{a}")


def op_trilu(b: Builder, node: IRNode) -> None:
    """``Trilu``: the upper or lower triangle of the last two axes (k a constant)."""
    x = node.inputs[0]
    k = b.ints(node, node.inputs[1])[0] if _given(node, 1) else 0
    upper = bool(node.attrs.get("upper", 1))
    if not b.is_act(x):
        v = np.asarray(b.value(node, x))
        _store(b, node, np.triu(v, k) if upper else np.tril(v, k))
        return
    shape = _shape(b, node, x)
    if len(shape) < 2:
        raise b.fail(node, "the last two axes include the batch axis; samples need two axes.")
    ones = np.ones(shape[-2:])
    mask = np.triu(ones, k) if upper else np.tril(ones, k)
    rank = len(shape) + 1
    b.add(node, nn.Multiply(), [b.node_of(node, x), b.value_node(node, mask, rank)])


def op_cumsum(b: Builder, node: IRNode) -> None:
    """``CumSum`` along a constant axis: a MatMul by a triangular 0/1 matrix there."""
    x = node.inputs[0]
    axis = b.ints(node, node.inputs[1])[0]
    exclusive, reverse = bool(node.attrs.get("exclusive", 0)), bool(node.attrs.get("reverse", 0))
    shape = _shape(b, node, x)
    rank = len(shape) + 1
    a = _axis(b, node, axis, rank)
    m = shape[a]
    i, j = np.indices((m, m))  # out[..., j] = sum over i of x[..., i] * T[i, j]
    tri = (i > j if exclusive else i >= j) if reverse else (i < j if exclusive else i <= j)
    tri = tri.astype(np.float64)
    src = b.node_of(node, x)
    last = len(shape) - 1
    if a != last:
        perm = list(range(len(shape)))
        perm[a], perm[last] = last, a
        src = b.add(node, nn.Transpose(tuple(perm)), src, suffix="/to_last")
    summed = _times(b, node, src, tri, "/sum" if a != last else "")
    if a != last:
        b.add(node, nn.Transpose(tuple(perm)), summed)


def _float_cast(to_of: Callable[[Builder, IRNode], int]) -> Callable[[Builder, IRNode], None]:
    """A cast: folded on constants; on an activation, to float32/float64 an identity."""

    def convert(b: Builder, node: IRNode) -> None:
        import onnx

        to = to_of(b, node)
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(to))
        x = node.inputs[0]
        if not b.is_act(x):
            v = np.asarray(b.value(node, x))
            _store(b, node, v if v.dtype == object else v.astype(dtype))
            return
        cast_activation(b, node, dtype)

    return convert


def _like_type(b: Builder, node: IRNode) -> int:
    import onnx

    like = node.inputs[1]
    if b.is_act(like):
        return onnx.TensorProto.FLOAT if b.g.dtype == np.float32 else onnx.TensorProto.DOUBLE
    return onnx.helper.np_dtype_to_tensor_dtype(np.asarray(b.value(node, like)).dtype)


#: The integer types a ``QuantizeLinear`` writes, by ONNX's name: their ranges.
_QUANTISED_INTEGERS = {
    t: (int(ml_dtypes.iinfo(t).min), int(ml_dtypes.iinfo(t).max))
    for t in ("int2", "uint2", "int4", "uint4", "int8", "uint8", "int16", "uint16")
}


#: The float types a ``QuantizeLinear`` writes.
_QUANTISED_FLOATS = tuple(t for t in CAST_TYPES if t.startswith(("float8", "float4")))


def _quantisation_constants(
    b: Builder, node: IRNode, x: str, name: str, values: np.ndarray
) -> np.ndarray:
    """A scale or zero point of ``(De)QuantizeLinear`` reshaped to broadcast over ``x``'s
    batch: one value (per tensor), a 1-D one along ``axis`` (per axis), or, with
    ``block_size``, one of ``x``'s rank whose ``axis`` holds one value per block (blocked,
    repeated here to ``x``'s size). Returns an array of ``x``'s rank (the batch axis 1)."""
    rank = b.rank(node, x)
    sample = _shape(b, node, x)
    block = int(node.attrs.get("block_size", 0) or 0)
    if values.size == 1 and not block:
        return values.reshape([1] * rank)
    axis = int(node.attrs.get("axis", 1))
    a = _axis(b, node, axis, rank)  # per sample
    if block:
        want = list(sample)
        want[a] = -(-sample[a] // block)
        where = f"the {name} of shape {values.shape} for blocks of {block} along axis {axis}"
        if values.ndim != rank or list(values.shape[1:]) != want:
            raise b.fail(
                node,
                f"{where} of a (batch, *{tuple(sample)}) input: expected (batch, *{tuple(want)}).",
            )
        if values.shape[0] not in (1, b.batch):
            raise b.fail(
                node,
                f"{where}: its first axis must be 1 or the batch size ({b.batch or 'not fixed'}).",
            )
        if np.any(values != values[:1]):
            raise b.fail(node, f"{where} varies along the batch axis; it must not.")
        return np.repeat(values[:1], block, axis=a + 1)[
            (slice(None),) * (a + 1) + (slice(0, sample[a]),)
        ]
    if values.ndim != 1 or values.size != sample[a]:
        raise b.fail(
            node,
            f"the {name} of shape {values.shape} along axis {axis} of size {sample[a]}: one "
            "value, or a 1-D one of that size (per axis), or blocks (block_size).",
        )
    shape = [1] * rank
    shape[a + 1] = values.size
    return values.reshape(shape)


def op_quantize_linear(b: Builder, node: IRNode) -> None:
    """``QuantizeLinear`` of an activation: ``clip(round(x / scale) + zero_point)`` for an
    integer output (int2 to int16, uint2 to uint16), ``x / scale`` rounded to a float8 type
    (saturating unless ``saturate=0``) or ``x / scale + zero_point`` to float4; per tensor,
    per axis or blocked, constant scale and zero point. The gradient is 0 for integers
    (rounding), the cast's for floats."""
    import onnx

    x = node.inputs[0]
    if not b.is_act(x):
        raise b.fail(node, "a constant input: nothing to compute.")
    scale = np.asarray(b.numbers(node, node.inputs[1]), dtype=np.float64)
    zp = np.asarray(b.value(node, node.inputs[2])) if _given(node, 2) else None
    declared = int(node.attrs.get("output_dtype", 0) or 0)
    named = str(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(declared))) if declared else None
    if zp is not None and named is not None and named != str(zp.dtype):
        raise b.fail(node, f"output_dtype {named} and a zero point of type {zp.dtype} disagree.")
    to = str(zp.dtype) if zp is not None else named or "uint8"
    if to not in _QUANTISED_INTEGERS and to not in _QUANTISED_FLOATS:
        raise b.fail(node, f"an output of type {to}: integers of 2 to 16 bits or float8/float4.")
    if node.attrs.get("precision", 0) not in (0, onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE):
        raise b.fail(node, "a division in a precision other than the network's float.")
    rank = b.rank(node, x)
    scale = _quantisation_constants(b, node, x, "scale", scale)
    zp = (
        None
        if zp is None
        else _quantisation_constants(b, node, x, "zero point", zp.astype(np.float64))
    )
    out = b.add(
        node, nn.Divide(), [b.node_of(node, x), b.value_node(node, scale, rank)], suffix="/scaled"
    )
    if to in _QUANTISED_INTEGERS:
        out = b.add(node, nn.Round(), out, suffix="/rounded")
        if zp is not None and np.any(zp != 0):
            out = b.add(node, nn.Add(), [out, b.value_node(node, zp, rank)], suffix="/shifted")
        b.add(node, nn.Clip(*map(float, _QUANTISED_INTEGERS[to])), out)
    elif to.startswith("float8"):  # the zero point of a float8 is 0 and not read
        b.add(node, nn.CastTo(to, saturate=bool(node.attrs.get("saturate", 1))), out)
    else:
        if zp is not None and np.any(zp != 0):
            out = b.add(node, nn.Add(), [out, b.value_node(node, zp, rank)], suffix="/shifted")
        b.add(node, nn.CastTo(to), out)


def op_dequantize_linear(b: Builder, node: IRNode) -> None:
    """``DequantizeLinear``: ``(x - zero_point) * scale``, per tensor, per axis (a 1-D scale
    along ``axis``, not the batch's) or blocked (``block_size``); constant scale and zero
    point.

    ``x`` arrives as floats holding its integers (or float8, float4 values) exactly; the
    subtraction and product are the network's, so the gradient is ``scale``.
    """
    x = node.inputs[0]
    scale = np.asarray(b.numbers(node, node.inputs[1]), dtype=np.float64)
    zp = np.asarray(b.numbers(node, node.inputs[2]), np.float64) if _given(node, 2) else None
    if not b.is_act(x):
        v = np.asarray(b.numbers(node, x), np.float64)
        if scale.size != 1 or (zp is not None and zp.size != 1):
            raise b.fail(node, "a constant input of per-axis scales is not folded.")
        out = (v - (0.0 if zp is None else float(zp.reshape(-1)[0]))) * float(scale.reshape(-1)[0])
        _store(b, node, out.astype(b.g.dtype))
        return
    if zp is not None and zp.size > 1 and zp.shape != scale.shape:
        raise b.fail(node, f"a scale of shape {scale.shape} and a zero point of shape {zp.shape}.")
    rank = b.rank(node, x)
    src = b.node_of(node, x)
    if zp is not None and np.any(zp != 0):
        zp = _quantisation_constants(b, node, x, "zero point", zp)
        src = b.add(node, nn.Subtract(), [src, b.value_node(node, zp, rank)], suffix="/centred")
    scale = _quantisation_constants(b, node, x, "scale", scale)
    b.add(node, nn.Multiply(), [src, b.value_node(node, scale, rank)])


def op_size(b: Builder, node: IRNode) -> None:
    """``Size``: folded, from the per-sample shape and the batch size the input fixes."""
    x = node.inputs[0]
    if not b.is_act(x):
        _store(b, node, np.asarray(np.asarray(b.value(node, x)).size, dtype=np.int64))
        return
    per_sample = int(np.prod(_shape(b, node, x)))
    if b.batch is None:
        raise b.fail(node, "the size depends on the batch size, which the input leaves open.")
    _store(b, node, np.asarray(b.batch * per_sample, dtype=np.int64))


for _op, _fn, _since, _folds, _limits in [
    ("GlobalMaxPool", op_global_max_pool, 1, False, "(C, *spatial) samples"),
    ("SpaceToDepth", op_space_to_depth, 1, False, "NCHW images; DCR and CRD modes"),
    ("Tile", op_tile, 6, False, "constant repeats, 1 on the batch axis"),
    ("Trilu", op_trilu, 14, False, "constant k; samples of two or more axes"),
    ("CumSum", op_cumsum, 11, False, "a constant axis, not the batch's; exclusive, reverse"),
    (
        "CastLike",
        _float_cast(_like_type),
        15,
        False,
        "constants to any type; computed tensors as Cast's",
    ),
    (
        "QuantizeLinear",
        op_quantize_linear,
        10,
        False,
        "per tensor, per axis or blocked; integers of 2 to 16 bits, float8, float4; constant scale and zero point",
    ),
    (
        "DequantizeLinear",
        op_dequantize_linear,
        10,
        False,
        "per tensor, per axis or blocked (not along the batch axis); constant scale and zero point",
    ),
    ("Size", op_size, 1, True, "folded: a constant, or an activation with a fixed batch size"),
]:
    register(_op, _fn, since=_since, folds=_folds, limits=_limits)


# -- selections, products and pools composed of native layers ---------------------------
def select_along(b: Builder, node: IRNode, x: str, axis: int, index: np.ndarray) -> str:
    """The native node of ``x`` with its per-sample ``axis`` replaced by the elements
    ``index`` (1-D, negative from the end): a MatMul by a constant one-hot matrix there,
    so the gradient flows back to the elements picked. The last layer is the node's
    output unless a reshape follows (its suffix ``/picked``)."""
    shape = _shape(b, node, x)
    m = shape[axis]
    index = np.asarray(index, dtype=np.int64).reshape(-1)
    if index.size == 0 or np.any(index < -m) or np.any(index >= m):
        raise b.fail(node, f"indices {index.tolist()} are empty or out of range for size {m}.")
    index = np.where(index < 0, index + m, index)
    pick = np.zeros((m, index.size))
    pick[index, np.arange(index.size)] = 1.0
    src = b.node_of(node, x)
    last = len(shape) - 1
    perm = list(range(len(shape)))
    perm[axis], perm[last] = last, axis
    if axis != last:
        src = b.add(node, nn.Transpose(tuple(perm)), src, suffix="/to_last")
    out = _times(b, node, src, pick, "/picked")
    if axis != last:
        out = b.add(node, nn.Transpose(tuple(perm)), out, suffix="/back")
    return out


def op_compress(b: Builder, node: IRNode) -> None:
    """``Compress`` with a constant condition along an axis (not the batch's)."""
    x = node.inputs[0]
    cond = np.asarray(b.value(node, node.inputs[1])).reshape(-1).astype(bool)
    if not b.is_act(x):
        axis = node.attrs.get("axis")
        _store(b, node, np.compress(cond, np.asarray(b.value(node, x)), axis=axis))
        return
    if "axis" not in node.attrs:
        raise b.fail(node, "no axis: compressing the flattened tensor mixes the batch's samples.")
    a = _axis(b, node, int(node.attrs["axis"]), b.rank(node, x))
    out = select_along(b, node, x, a, np.flatnonzero(cond))
    b.add(node, nn.Identity(), out)


def op_reduce_prod(axes_input: bool) -> Callable[[Builder, IRNode], None]:
    """``ReduceProd``: ``exp(sum(log|x|))`` times the sign ``cos(pi * #negatives)``."""

    def convert(b: Builder, node: IRNode) -> None:
        x = node.inputs[0]
        keep = bool(node.attrs.get("keepdims", 1))
        if axes_input:
            axes = b.ints(node, node.inputs[1]) if _given(node, 1) else []
            if not axes and node.attrs.get("noop_with_empty_axes", 0):
                if b.is_act(x):
                    b.add(node, nn.Identity(), x)
                else:
                    _store(b, node, np.asarray(b.value(node, x)))
                return
        else:
            axes = [int(a) for a in node.attrs.get("axes", [])]
        if not b.is_act(x):
            v = np.asarray(b.value(node, x))
            _store(b, node, np.prod(v, axis=tuple(axes) if axes else None, keepdims=keep))
            return
        if not axes:
            raise b.fail(
                node, "no axes given: the reduction over every axis would mix the batch's samples."
            )
        rank = b.rank(node, x)
        sample_axes = tuple(sorted({_axis(b, node, a, rank) for a in axes}))
        src = b.node_of(node, x)
        mag = b.add(node, nn.Abs(), src, suffix="/abs")
        log = b.add(node, nn.Log(), mag, suffix="/log")
        total = b.add(node, nn.Reduce("sum", sample_axes, keepdims=keep), log, suffix="/sum")
        size = b.add(node, nn.Exp(), total, suffix="/magnitude")
        zero = b.value_node(node, np.zeros([1] * rank), rank)
        neg = b.add(node, nn.Compare("less"), [src, zero], suffix="/negative")
        count = b.add(node, nn.Reduce("sum", sample_axes, keepdims=keep), neg, suffix="/count")
        out_rank = len(b.g.shape_of(count)) + 1
        pi = b.value_node(node, np.full([1] * out_rank, np.pi), out_rank)
        turn = b.add(node, nn.Multiply(), [count, pi], suffix="/angle")
        sign = b.add(node, nn.Cos(), turn, suffix="/sign")
        b.add(node, nn.Multiply(), [size, sign])

    return convert


def op_lp_pool(b: Builder, node: IRNode) -> None:
    """``LpPool``: ``(sum over the window of |x|**p) ** (1/p)``. On NCHW images the sum is an
    average pool (padding counted as 0) times the window's area; any other kernel (another
    rank, dilations, wide pads, ``ceil_mode``) sums gathered windows."""
    from xai_core.importers.onnx_ops import _kernel_attrs, _pads, _spatial

    p = float(node.attrs.get("p", 2))
    if p <= 0:
        raise b.fail(node, f"p must be positive; got {p}.")
    windows = needs_windows(node, native_ranks=(2,)) or node.attrs.get("ceil_mode", 0)
    if not windows:
        kernel, strides, dilations = _kernel_attrs(b, node, node.attrs["kernel_shape"])
        pads = _pads(b, node, kernel, strides, dilations, _spatial(b, node, node.inputs[0]))
    src = b.node_of(node, node.inputs[0])
    mag = b.add(node, nn.Abs(), src, suffix="/abs") if p != 2 else src
    powered = b.add(node, nn.Power(p), mag, suffix="/power")
    if windows:
        total = pool_by_windows(b, node, "sum", powered, suffix="/sum")
    else:
        pooled = b.add(
            node,
            nn.AvgPool2D(kernel, stride=strides, padding=pads, count_include_pad=True),
            powered,
            suffix="/mean",
        )
        rank = len(b.g.shape_of(pooled)) + 1
        area = b.value_node(node, np.full([1] * rank, float(kernel[0] * kernel[1])), rank)
        total = b.add(node, nn.Multiply(), [pooled, area], suffix="/sum")
    b.add(node, nn.Power(1.0 / p), total)


def op_upsample(b: Builder, node: IRNode) -> None:
    """``Upsample`` (opsets 7 to 9): ``Resize`` with asymmetric coordinates (nearest: floor)."""
    from xai_core.importers.onnx_ops_resize import op_resize

    if len(node.inputs) > 1 and node.inputs[1]:
        scales = node.inputs[1]
    else:
        scales = f"{node.name}/scales"
        b.const[scales] = np.asarray(node.attrs["scales"], dtype=np.float32)
    mode = node.attrs.get("mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise b.fail(node, f"mode {mode!r}; supported: nearest, linear.")
    attrs = {"mode": mode, "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    op_resize(b, IRNode("Resize", node.name, [node.inputs[0], "", scales], node.outputs, attrs))


_NOT_BATCH = "axes not including the batch axis; keepdims"
for _op, _fn, _since, _until, _limits in [
    ("Compress", op_compress, 9, None, "a constant condition along an axis not the batch's"),
    ("ReduceProd", op_reduce_prod(False), 1, 17, f"{_NOT_BATCH} (attribute)"),
    (
        "ReduceProd",
        op_reduce_prod(True),
        18,
        None,
        f"{_NOT_BATCH}; constant axes input; noop_with_empty_axes; gradient undefined at 0",
    ),
    ("LpPool", op_lp_pool, 2, None, "any kernel rank, dilations, pads and ceil_mode"),
    ("Upsample", op_upsample, 7, 9, "NCHW images; nearest or linear; scales 1 on N and C"),
]:
    register(_op, _fn, since=_since, until=_until, limits=_limits)
