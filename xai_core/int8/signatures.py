"""The operators :class:`~xai_core.importers.tflite.model.TFLiteModel` runs, as data.

One :class:`Signature` per TFLite builtin operator: how many inputs it takes, which of
them may be omitted (index -1, TFLite's optional input) and which must be constants, and
a function giving the shape of its output from the shapes (and constants) of its inputs.
:func:`check_operators` holds every operator of a graph to its signature before anything
runs, so a file whose operators do not fit together is refused at import with the
operator, its opcode and the tensor named, instead of failing inside a kernel with a raw
numpy error, or, worse, computing something else:

- the number of inputs and outputs, omitted inputs only where the operator allows them,
  constants where the kernel reads a constant (weights, biases, axes, paddings, perms);
- tensor types: int8 kernels read int8 activations (uint8 only into and out of
  ``QUANTIZE`` / ``DEQUANTIZE``) with int8 weights and int32 biases; float kernels read
  float32 and refuse int8 weights (a hybrid model);
- quantisation, where the int8 kernels depend on it: every int8 tensor quantised, one
  scale per activation tensor, weights and biases symmetric (zero point 0, as TFLite's
  int8 specification requires) with one scale or one per output channel along the output
  channel's axis, rescalings (ratios of scales) that TFLite's fixed-point multipliers
  represent, a ``CONCATENATION``'s inputs quantised as its output, and an int8
  ``SOFTMAX`` output at TFLite's fixed scale 1/256, zero point -128;
- options: strides, dilations and filter sizes of at least 1, a known padding and fused
  activation, a finite positive softmax ``Beta``, axes inside the tensor and off the
  batch axis;
- the output shape each operator computes equals the one the file declares (the batch
  axis kept first).

:func:`activation_bytes` bounds the memory one sample takes through the graph, for the
import-time check against the session's memory limit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core.errors import ModelFormatError
from xai_core.int8.graph import (
    OperatorInfo,
    TensorInfo,
    TFLiteGraph,
    operator_label,
    tensor_label,
)

__all__ = ["SIGNATURES", "Signature", "activation_bytes", "check_operators"]

_INT8, _UINT8, _INT32, _FLOAT = (np.dtype(t) for t in (np.int8, np.uint8, np.int32, np.float32))
_INDEX_TYPES = (np.dtype(np.int32), np.dtype(np.int64))
_PADDINGS = {0: "SAME", 1: "VALID"}
_FUSED = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6"}


class _Op:
    """One operator being checked: its tensors, options, and messages naming it."""

    def __init__(self, graph: TFLiteGraph, op: OperatorInfo, integer: bool) -> None:
        self.graph, self.op, self.integer = graph, op, integer
        self.label = f"{graph.where}: {operator_label(op)}"

    def fail(self, message: str) -> ModelFormatError:
        return ModelFormatError(f"{self.label}: {message}")

    def has(self, k: int) -> bool:
        return k < len(self.op.inputs) and self.op.inputs[k] >= 0

    def tensor(self, k: int) -> TensorInfo:
        return self.graph.tensors[self.op.inputs[k]]

    @property
    def out(self) -> TensorInfo:
        return self.graph.tensors[self.op.outputs[0]]

    def shape(self, k: int) -> tuple[int, ...]:
        return self.tensor(k).shape

    def rank(self, k: int, *ranks: int) -> tuple[int, ...]:
        """Input ``k``'s shape, refused unless its rank is one of ``ranks``."""
        shape = self.shape(k)
        if len(shape) not in ranks:
            want = " or ".join(str(r) for r in ranks)
            raise self.fail(
                f"input {k}, {tensor_label(self.tensor(k))}, has shape {shape}; expected "
                f"rank {want}."
            )
        return shape

    def ints(self, k: int) -> np.ndarray:
        """The integer constant of input ``k`` (axes, paddings, perms)."""
        t = self.tensor(k)
        if t.dtype not in _INDEX_TYPES:
            raise self.fail(f"input {k}, {tensor_label(t)}, must hold int32; it holds {t.dtype}.")
        return t.data.astype(np.int64)

    def option(self, name: str, default: int = 0) -> int:
        return int(self.op.options.get(name, default))

    def positive(self, *names: str) -> list[int]:
        values = [self.option(n, 1) for n in names]
        for n, v in zip(names, values):
            if v < 1:
                raise self.fail(f"option {n} is {v}; it must be at least 1.")
        return values

    def axis(self, axis: int, rank: int, what: str) -> int:
        """``axis`` of a rank-``rank`` tensor in 1..rank-1 (the batch axis refused)."""
        if not -rank <= axis < rank:
            raise self.fail(f"{what} {axis} is outside a tensor of rank {rank}.")
        axis %= rank
        if axis == 0:
            raise self.fail(f"{what} 0 is the batch axis, which the kernels keep.")
        return axis


@dataclass(frozen=True)
class Signature:
    """What one TFLite operator takes.

    Attributes
    ----------
    n_inputs : tuple of (int, int)
        Least and most inputs (index -1 included).
    optional : frozenset of int
        Input positions that may be -1 (omitted).
    constant : frozenset of int
        Input positions that must be constant tensors.
    shape : callable
        ``shape(op) -> tuple``: the output shape the operator computes, raising
        :class:`ModelFormatError` for inputs or options it cannot take.
    indices : frozenset of int
        Input positions holding int32 axes, paddings, perms or shapes (not data).
    weights : int or None
        The output-channel axis of the weights (input 1), for their per-channel scales.
    fused : bool
        Whether the operator has a ``FusedActivationFunction`` option.
    """

    n_inputs: tuple[int, int]
    shape: Callable[[_Op], tuple[int, ...]]
    optional: frozenset[int] = frozenset()
    constant: frozenset[int] = frozenset()
    indices: frozenset[int] = frozenset()
    weights: int | None = None
    #: The position of the bias (int32 in an int8 operator), when ``weights`` is set.
    bias: int = 2
    fused: bool = False


# -- output shapes --------------------------------------------------------------------------


def _same(op: _Op) -> tuple[int, ...]:
    return op.shape(0)


def _window(op: _Op, size: int, k: int, stride: int, dilation: int, what: str) -> int:
    """Output length along one spatial axis, as the kernels' windows compute it."""
    padding = op.option("Padding", 1)
    if padding not in _PADDINGS:
        raise op.fail(f"option Padding is {padding}; expected 0 (SAME) or 1 (VALID).")
    if padding == 0:
        return (size + stride - 1) // stride
    out = (size - (k - 1) * dilation - 1) // stride + 1
    if out < 1:
        raise op.fail(
            f"a {what} window of {k} (dilation {dilation}) does not fit in {size} with VALID "
            "padding."
        )
    return out


def _spatial(op: _Op, kh: int, kw: int, dilated: bool) -> tuple[int, int]:
    n, h, w, _ = op.rank(0, 4)
    sh, sw = op.positive("StrideH", "StrideW")
    dh, dw = op.positive("DilationHFactor", "DilationWFactor") if dilated else (1, 1)
    return _window(op, h, kh, sh, dh, "height"), _window(op, w, kw, sw, dw, "width")


def _conv(op: _Op) -> tuple[int, ...]:
    n, _, _, c = op.rank(0, 4)
    oc, kh, kw, ic = op.rank(1, 4)
    if c % ic or oc % (c // ic):
        raise op.fail(
            f"the input has {c} channels and the weights, of shape {op.shape(1)}, take {ic}: a "
            f"grouped CONV_2D needs the filters' input channels to divide the input's and the "
            "groups to divide the filters."
        )
    _bias(op, oc)
    return (n, *_spatial(op, kh, kw, True), oc)


def _depthwise(op: _Op) -> tuple[int, ...]:
    n, _, _, c = op.rank(0, 4)
    one, kh, kw, oc = op.rank(1, 4)
    if one != 1 or oc % c:
        raise op.fail(
            f"the weights have shape {op.shape(1)}; a DEPTHWISE_CONV_2D of {c} channels takes "
            f"(1, kh, kw, {c} * multiplier)."
        )
    _bias(op, oc)
    return (n, *_spatial(op, kh, kw, True), oc)


def _fully_connected(op: _Op) -> tuple[int, ...]:
    x = op.shape(0)
    units, k = op.rank(1, 2)
    if op.option("WeightsFormat") != 0:
        raise op.fail("only the default weights format is supported (not shuffled int8).")
    _bias(op, units)
    if op.op.options.get("KeepNumDims"):
        if not x or x[-1] != k:
            raise op.fail(f"the input of shape {x} has no last axis of {k}, the weights' width.")
        return (*x[:-1], units)
    if len(x) < 2 or int(np.prod(x[1:], dtype=object)) != k:
        raise op.fail(
            f"the input of shape {x} does not hold {k} values per sample, the weights' width."
        )
    return (x[0], units)


def _batch_matmul(op: _Op) -> tuple[int, ...]:
    a, b = op.shape(0), op.shape(1)
    if len(a) < 2 or len(b) < 2 or max(len(a), len(b)) > 5:
        raise op.fail(f"the inputs have shapes {a} and {b}; BATCH_MATMUL takes ranks 2 to 5.")
    if op.option("AdjX"):
        a = (*a[:-2], a[-1], a[-2])
    if op.option("AdjY"):
        b = (*b[:-2], b[-1], b[-2])
    if a[-1] != b[-2]:
        raise op.fail(f"the inputs of shapes {a} and {b} do not multiply (inner axes differ).")
    try:
        lead = np.broadcast_shapes(a[:-2], b[:-2])
    except ValueError:
        raise op.fail(f"the leading axes of {a} and {b} do not broadcast.") from None
    return (*lead, a[-2], b[-1])


def _gather(op: _Op) -> tuple[int, ...]:
    x = op.shape(0)
    axis = op.axis(op.option("Axis"), len(x), "axis")
    if op.option("BatchDims"):
        raise op.fail("option BatchDims must be 0.")
    indices = op.ints(1)
    if indices.size and (indices.min() < -x[axis] or indices.max() >= x[axis]):
        raise op.fail(f"indices {indices.tolist()} outside axis {axis} of size {x[axis]}.")
    _same_quantization(op)
    return (*x[:axis], *indices.shape, *x[axis + 1 :])


def _bias(op: _Op, channels: int) -> None:
    if op.has(2) and op.shape(2) not in ((channels,),):
        raise op.fail(
            f"the bias, {tensor_label(op.tensor(2))}, has shape {op.shape(2)}; expected "
            f"({channels},)."
        )


def _pool(op: _Op) -> tuple[int, ...]:
    n, _, _, c = op.rank(0, 4)
    kh, kw = op.positive("FilterHeight", "FilterWidth")
    return (n, *_spatial(op, kh, kw, False), c)


def _mean(op: _Op) -> tuple[int, ...]:
    x = op.shape(0)
    listed = [op.axis(int(a), len(x), "axis") for a in op.ints(1).reshape(-1)]
    axes = sorted(set(listed))
    if len(axes) != len(listed):
        raise op.fail(f"the axes {listed} name an axis twice.")
    if op.op.options.get("KeepDims"):
        return tuple(1 if i in axes else d for i, d in enumerate(x))
    return tuple(d for i, d in enumerate(x) if i not in axes)


def _pad(op: _Op) -> tuple[int, ...]:
    x = op.shape(0)
    widths = op.ints(1)
    if widths.shape != (len(x), 2) or (widths < 0).any():
        raise op.fail(
            f"the paddings have shape {widths.shape}; expected ({len(x)}, 2) of values >= 0."
        )
    if widths[0].any():
        raise op.fail("padding the batch axis is not supported.")
    if op.has(2) and op.tensor(2).data.size != 1:
        raise op.fail(f"the padding value has shape {op.shape(2)}; expected one value.")
    return tuple(int(d + a + b) for d, (a, b) in zip(x, widths))


def _reshape(op: _Op) -> tuple[int, ...]:
    x, out = op.shape(0), op.out.shape
    if len(x) < 1 or len(out) < 1:
        raise op.fail(f"reshaping {x} to {out} loses the batch axis.")
    if int(np.prod(x[1:], dtype=object)) != int(np.prod(out[1:], dtype=object)):
        raise op.fail(
            f"{tensor_label(op.tensor(0))} of shape {x} cannot be reshaped to the declared "
            f"{out}: the samples hold different numbers of values."
        )
    return (x[0], *out[1:])


def _transpose(op: _Op) -> tuple[int, ...]:
    x = op.shape(0)
    perm = [int(p) for p in op.ints(1).reshape(-1)]
    if sorted(perm) != list(range(len(x))):
        raise op.fail(f"perm {perm} is not a permutation of the {len(x)} axes.")
    if perm[0] != 0:
        raise op.fail(f"perm {perm} moves the batch axis.")
    return tuple(x[p] for p in perm)


def _strided_slice(op: _Op) -> tuple[int, ...]:
    x = op.shape(0)
    begin, end, strides = (op.ints(k).reshape(-1) for k in (1, 2, 3))
    if not len(begin) == len(end) == len(strides) == len(x):
        raise op.fail(
            f"begin, end and strides have {len(begin)}, {len(end)} and {len(strides)} values; "
            f"the input has {len(x)} axes."
        )
    for mask in ("EllipsisMask", "NewAxisMask", "ShrinkAxisMask", "Offset"):
        if op.option(mask):
            raise op.fail(f"option {mask} is {op.option(mask)}; only 0 is supported.")
    begin_mask, end_mask = op.option("BeginMask"), op.option("EndMask")
    if not (begin_mask & 1 and end_mask & 1):
        raise op.fail("the batch axis must be taken whole (bit 0 of BeginMask and EndMask set).")
    if (strides[1:] < 1).any():
        raise op.fail(f"strides {strides.tolist()}: only positive strides are supported.")
    out = [x[0]]
    for k in range(1, len(x)):
        lo = None if begin_mask >> k & 1 else int(begin[k])
        hi = None if end_mask >> k & 1 else int(end[k])
        size = len(range(*slice(lo, hi, int(strides[k])).indices(x[k])))
        if size == 0:
            raise op.fail(f"axis {k} of {x} sliced [{lo}:{hi}:{int(strides[k])}] is empty.")
        out.append(size)
    return tuple(out)


def _concatenation(op: _Op) -> tuple[int, ...]:
    shapes = [op.shape(k) for k in range(len(op.op.inputs))]
    rank = len(shapes[0])
    axis = op.axis(op.option("Axis"), rank, "axis")
    for k, s in enumerate(shapes):
        if len(s) != rank or any(a != b for i, (a, b) in enumerate(zip(s, shapes[0])) if i != axis):
            raise op.fail(
                f"input {k} has shape {s}; every input must be {shapes[0]} but along axis {axis}."
            )
    return tuple(sum(s[axis] for s in shapes) if i == axis else d for i, d in enumerate(shapes[0]))


def _broadcast(op: _Op) -> tuple[int, ...]:
    a, b = op.shape(0), op.shape(1)
    try:
        out = tuple(int(d) for d in np.broadcast_shapes(a, b))
    except ValueError:
        raise op.fail(f"inputs of shapes {a} and {b} do not broadcast.") from None
    for k in (0, 1):
        t = op.tensor(k)
        if t.data is not None and len(t.shape) == len(out) and t.shape and t.shape[0] != 1:
            raise op.fail(
                f"the constant {tensor_label(t)} of shape {t.shape} varies along the batch axis."
            )
    return out


def _softmax(op: _Op) -> tuple[int, ...]:
    beta = float(op.op.options.get("Beta", 1.0))
    if not (np.isfinite(beta) and beta > 0):
        raise op.fail(f"option Beta is {beta}; it must be finite and positive.")
    return _same(op)


def _same_quantization(op: _Op) -> None:
    """An int8 operator that only moves or blends values writes them quantised as it reads."""
    x, out = op.tensor(0), op.out
    if op.integer and x.scale is not None and out.scale is not None:
        if float(x.scale[0]) != float(out.scale[0]) or int(x.zero_point[0]) != int(
            out.zero_point[0]
        ):
            raise op.fail(
                f"the input, {tensor_label(x)}, and the output, {tensor_label(out)}, are "
                f"quantised differently; TFLite's int8 {op.op.op} does not rescale."
            )


def _size_pair(op: _Op, k: int, what: str) -> tuple[int, int]:
    values = op.ints(k).reshape(-1)
    if values.shape != (2,) or (values < 1).any():
        raise op.fail(f"the {what}, {tensor_label(op.tensor(k))}, must be 2 values >= 1.")
    return int(values[0]), int(values[1])


def _resize_bilinear(op: _Op) -> tuple[int, ...]:
    n, _, _, c = op.rank(0, 4)
    if op.op.options.get("AlignCorners") and op.op.options.get("HalfPixelCenters"):
        raise op.fail("options AlignCorners and HalfPixelCenters cannot both be set.")
    _same_quantization(op)
    return (n, *_size_pair(op, 1, "size"), c)


def _strided_slice(op: _Op) -> tuple[int, ...]:
    from xai_core.int8.geometry import strided_slice_key, whole_batch

    x = op.rank(0, 1, 2, 3, 4, 5)
    begin, end, strides = (op.ints(k).reshape(-1) for k in (1, 2, 3))
    if not len(begin) == len(end) == len(strides) or (strides == 0).any():
        raise op.fail(
            f"begin {begin.tolist()}, end {end.tolist()} and strides {strides.tolist()} must "
            "have one entry each per axis and no stride 0."
        )
    if bin(op.option("EllipsisMask")).count("1") > 1:
        raise op.fail("option EllipsisMask names more than one ellipsis.")
    key = whole_batch(strided_slice_key(begin, end, strides, op.op.options), x[0])
    shapes = []
    for batch in (2, 3):  # the batch axis must pass through unchanged, whatever its size
        dummy = np.broadcast_to(np.zeros((), np.int8), (batch, *x[1:]))
        try:
            shapes.append(dummy[key].shape)
        except IndexError as exc:
            raise op.fail(f"the slice does not fit {x}: {exc}.") from None
    if any(s[:1] != (b,) for s, b in zip(shapes, (2, 3))) or shapes[0][1:] != shapes[1][1:]:
        raise op.fail("the slice changes the batch axis, which the kernels keep.")
    _same_quantization(op)
    return (x[0], *shapes[0][1:])


def _pack(op: _Op) -> tuple[int, ...]:
    shapes = [op.shape(k) for k in range(len(op.op.inputs))]
    if len(set(shapes)) != 1:
        raise op.fail(f"the inputs have shapes {shapes}; PACK stacks inputs of one shape.")
    if op.option("ValuesCount", len(shapes)) != len(shapes):
        raise op.fail(
            f"option ValuesCount is {op.option('ValuesCount')}; it has {len(shapes)} inputs."
        )
    axis = op.axis(op.option("Axis"), len(shapes[0]) + 1, "axis")
    for k in range(len(shapes)):
        t = op.tensor(k)
        if op.integer and (
            float(t.scale[0]) != float(op.out.scale[0])
            or int(t.zero_point[0]) != int(op.out.zero_point[0])
        ):
            raise op.fail(
                f"input {k}, {tensor_label(t)}, is quantised unlike the output; TFLite's int8 "
                "PACK does not rescale."
            )
    x = shapes[0]
    return (*x[:axis], len(shapes), *x[axis:])


def _depth_to_space(op: _Op) -> tuple[int, ...]:
    n, h, w, c = op.rank(0, 4)
    (block,) = op.positive("BlockSize")
    if c % (block * block):
        raise op.fail(f"{c} channels do not split into blocks of {block} x {block}.")
    _same_quantization(op)
    return (n, h * block, w * block, c // (block * block))


def _transpose_conv(op: _Op) -> tuple[int, ...]:
    from xai_core.int8.geometry import transpose_conv_padding

    custom = op.op.custom_code is not None
    data, bias = (0, 2) if custom else (2, 3)
    n, h, w, c = op.rank(data, 4)
    oc, kh, kw, ic = op.rank(1, 4)
    if ic != c:
        raise op.fail(f"the input has {c} channels and the weights, {op.shape(1)}, take {ic}.")
    if op.has(bias) and op.shape(bias) != (oc,):
        raise op.fail(
            f"the bias, {tensor_label(op.tensor(bias))}, has shape {op.shape(bias)}; expected "
            f"({oc},)."
        )
    sh, sw = op.positive("StrideH", "StrideW")
    padding = op.option("Padding", 0)
    if padding not in _PADDINGS:
        raise op.fail(f"option Padding is {padding}; expected 0 (SAME) or 1 (VALID).")
    same = padding == 0
    if custom:  # MediaPipe's operator computes its output size
        out_h, out_w = (h * sh, w * sw) if same else ((h - 1) * sh + kh, (w - 1) * sw + kw)
    else:
        shape = op.ints(0).reshape(-1)
        if shape.shape != (4,) or (shape[1:] < 1).any():
            raise op.fail(f"the output shape {shape.tolist()} must be 4 values >= 1 (NHWC).")
        if int(shape[3]) != oc:
            raise op.fail(f"the output shape {shape.tolist()} has not the weights' {oc} channels.")
        out_h, out_w = int(shape[1]), int(shape[2])
        for size, src, k, s, what in ((out_h, h, kh, sh, "height"), (out_w, w, kw, sw, "width")):
            if transpose_conv_padding(size, src, k, s, same)[1] != src:
                raise op.fail(
                    f"an output {what} of {size} does not come from an input {what} of {src} "
                    f"with a window of {k} and stride {s}."
                )
    return (n, out_h, out_w, oc)


def _sig(n: tuple[int, int], shape, **kw: Any) -> Signature:
    return Signature(
        n, shape, **{k: frozenset(v) if isinstance(v, set) else v for k, v in kw.items()}
    )


_CONV = {"optional": {2}, "constant": {1, 2}, "weights": 0, "fused": True}
_UNARY = _sig((1, 1), _same)
_BINARY = _sig((2, 2), _broadcast, fused=True)

#: Operator name -> what it takes (every operator with a kernel).
SIGNATURES: dict[str, Signature] = {
    "ADD": _BINARY,
    "AVERAGE_POOL_2D": _sig((1, 1), _pool, fused=True),
    "BATCH_MATMUL": _sig((2, 2), _batch_matmul),
    "CONCATENATION": _sig((1, 2**31), _concatenation, fused=True),
    "CONV_2D": _sig((2, 3), _conv, **_CONV),
    "DEPTH_TO_SPACE": _sig((1, 1), _depth_to_space),
    "DEPTHWISE_CONV_2D": _sig((2, 3), _depthwise, **{**_CONV, "weights": 3}),
    "DEQUANTIZE": _UNARY,
    "DIV": _BINARY,
    "EXP": _UNARY,
    "FULLY_CONNECTED": _sig((2, 3), _fully_connected, **_CONV),
    "GATHER": _sig((2, 2), _gather, constant={1}, indices={1}),
    "GELU": _UNARY,
    "HARD_SWISH": _UNARY,
    "LEAKY_RELU": _UNARY,
    "LOG": _UNARY,
    "LOGISTIC": _UNARY,
    "MAX_POOL_2D": _sig((1, 1), _pool, fused=True),
    "MEAN": _sig((2, 2), _mean, constant={1}, indices={1}),
    "MUL": _BINARY,
    "PACK": _sig((1, 2**31), _pack),
    "PAD": _sig((2, 2), _pad, constant={1}, indices={1}),
    "PADV2": _sig((2, 3), _pad, optional={2}, constant={1, 2}, indices={1}),
    "PRELU": _sig((2, 2), _broadcast, constant={1}),
    "QUANTIZE": _UNARY,
    "REDUCE_MAX": _sig((2, 2), _mean, constant={1}, indices={1}),
    "REDUCE_MIN": _sig((2, 2), _mean, constant={1}, indices={1}),
    "RELU": _UNARY,
    "RELU6": _UNARY,
    "RELU_0_TO_1": _UNARY,
    "RESHAPE": _sig((1, 2), _reshape, optional={1}, indices={1}),
    "RESIZE_BILINEAR": _sig((2, 2), _resize_bilinear, constant={1}, indices={1}),
    "RSQRT": _UNARY,
    "SOFTMAX": _sig((1, 1), _softmax),
    "SQUARED_DIFFERENCE": _sig((2, 2), _broadcast),
    "SQUEEZE": _sig((1, 1), _reshape),
    "STRIDED_SLICE": _sig((4, 4), _strided_slice, constant={1, 2, 3}, indices={1, 2, 3}),
    "SUB": _BINARY,
    "TANH": _UNARY,
    "TRANSPOSE": _sig((2, 2), _transpose, constant={1}, indices={1}),
    "TRANSPOSE_CONV": _sig(
        (3, 4),
        _transpose_conv,
        optional={3},
        constant={0, 1, 3},
        indices={0},
        weights=0,
        bias=3,
        fused=True,
    ),
    # MediaPipe's custom operator: (input, weights, bias), TfLiteTransposeConvParams options
    "Convolution2DTransposeBias": _sig((3, 3), _transpose_conv, constant={1, 2}, weights=0),
}


# -- the checks -----------------------------------------------------------------------------


def _check_inputs(op: _Op, sig: Signature) -> None:
    n = len(op.op.inputs)
    lo, hi = sig.n_inputs
    if not lo <= n <= hi:
        takes = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi < 2**31 else f"at least {lo}"
        raise op.fail(f"has {n} inputs; {op.op.op} takes {takes}.")
    if len(op.op.outputs) != 1:
        raise op.fail(f"writes {len(op.op.outputs)} tensors; {op.op.op} writes one.")
    for k, t in enumerate(op.op.inputs):
        if t < 0:
            if k not in sig.optional:
                may = ", ".join(str(i) for i in sorted(sig.optional)) or "none"
                raise op.fail(
                    f"input {k} is -1 (omitted), but {op.op.op} needs it (inputs it may omit: "
                    f"{may})."
                )
            continue
        tensor = op.graph.tensors[t]
        if k in sig.constant and tensor.data is None:
            raise op.fail(f"input {k}, {tensor_label(tensor)}, must be a constant; it is computed.")
        if tensor.data is None and any(d == 0 for d in tensor.shape):
            raise op.fail(f"input {k}, {tensor_label(tensor)}, has an empty shape {tensor.shape}.")
    if sig.fused:
        fused = op.option("FusedActivationFunction")
        if fused not in _FUSED:
            raise op.fail(
                f"option FusedActivationFunction is {fused}; supported: "
                + ", ".join(f"{k} ({v})" for k, v in _FUSED.items())
                + "."
            )


def _check_types(op: _Op, sig: Signature) -> None:
    """Tensor types and, for the int8 kernels, the quantisation they compute with."""
    name = op.op.op
    roles = []  # (label, tensor, allowed types)
    for k, t in enumerate(op.op.inputs):
        if t < 0:
            continue
        if k in sig.indices:
            continue  # axes, paddings, perms, shapes: checked as integers where read
        roles.append((f"input {k}", op.graph.tensors[t], k))
    roles.append(("the output", op.out, None))
    for role, t, k in roles:
        if name == "QUANTIZE":
            allowed = (_FLOAT, _INT8, _UINT8) if k == 0 else (_INT8, _UINT8)
        elif name == "DEQUANTIZE":
            allowed = (_INT8, _UINT8) if k == 0 else (_FLOAT,)
        elif k == sig.bias and sig.weights is not None:
            allowed = (_INT32,) if op.integer else (_FLOAT,)
        else:
            allowed = (_INT8,) if op.integer else (_FLOAT,)
        if t.dtype not in allowed:
            kind = "int8" if op.integer else "float32"
            raise op.fail(
                f"{role}, {tensor_label(t)}, is {t.dtype}; the {kind} {name} kernel takes "
                f"{' or '.join(str(a) for a in allowed)} there"
                + (
                    " (int8 weights in a float model, a hybrid model, are not supported)"
                    if not op.integer and t.dtype == _INT8
                    else ""
                )
                + "."
            )
        if t.dtype in (_INT8, _UINT8) or (op.integer and k == sig.bias and sig.weights is not None):
            _check_scales(op, sig, role, t, k)
    if op.integer:
        _check_rescaling(op, sig, roles)
    if name == "SOFTMAX" and op.integer:
        if op.out.scale[0] != np.float32(1 / 256) or op.out.zero_point[0] != -128:
            raise op.fail(
                f"the output, {tensor_label(op.out)}, has scale {float(op.out.scale[0])!r} and zero "
                f"point {int(op.out.zero_point[0])}; an int8 SOFTMAX writes scale 1/256, zero "
                "point -128 (TFLite's fixed output quantisation)."
            )


#: The largest rescaling TFLite's ``QuantizeMultiplier`` represents (a shift of 31 bits).
MAX_RESCALE = 2.0**31


def _check_rescaling(op: _Op, sig: Signature, roles: list) -> None:
    """The int8 kernels rescale by ratios of scales; refuse ratios past :data:`MAX_RESCALE`,
    which TFLite's ``QuantizeMultiplier`` does not represent, and a CONCATENATION whose
    inputs are quantised unlike its output (TFLite's int8 kernel does not rescale)."""
    out = op.out
    if out.scale is None or out.dtype not in (_INT8, _UINT8):
        return  # DEQUANTIZE: the output is real
    s_out = float(out.scale[0])
    scales = [
        (role, t, float(np.max(t.scale)))
        for role, t, k in roles
        if k is not None and t.scale is not None and not (k == sig.bias and sig.weights is not None)
    ]
    ratios = [(f"{role}'s scale", s / s_out) for role, t, s in scales]
    if len(scales) > 1:
        ratios.append(
            ("the product of the inputs' scales", float(np.prod([s for *_, s in scales])) / s_out)
        )
    for what, ratio in ratios:
        if not ratio < MAX_RESCALE:
            raise op.fail(
                f"{what} over the output's, {tensor_label(out)}, is {ratio:.3g}; TFLite's int8 "
                f"kernels rescale by at most 2**31."
            )
    if op.op.op in ("CONCATENATION", "REDUCE_MAX", "REDUCE_MIN", "STRIDED_SLICE"):
        for role, t, _ in scales:
            if float(t.scale[0]) != s_out or int(t.zero_point[0]) != int(out.zero_point[0]):
                raise op.fail(
                    f"{role}, {tensor_label(t)}, is quantised unlike the output, which "
                    f"TFLite's int8 {op.op.op} does not rescale."
                )


def _check_scales(op: _Op, sig: Signature, role: str, t: TensorInfo, k: int | None) -> None:
    weights = sig.weights is not None and k in (1, sig.bias)
    if t.scale is None and not (weights and k == sig.bias):
        raise op.fail(f"{role}, {tensor_label(t)}, is {t.dtype} without quantisation parameters.")
    if not weights:
        if len(t.scale) != 1:
            raise op.fail(
                f"{role}, {tensor_label(t)}, has {len(t.scale)} quantisation scales; an "
                "activation has one."
            )
        return
    if t.scale is None:  # a bias: the kernels add its integers, whatever its scale
        return
    axis = sig.weights if k == 1 else 0
    if len(t.scale) > 1 and t.quantized_dimension != axis:
        raise op.fail(
            f"{role}, {tensor_label(t)}, is quantised per channel along dimension "
            f"{t.quantized_dimension}; {op.op.op} scales its output channels, dimension {axis}."
        )
    if np.any(t.zero_point != 0):
        raise op.fail(
            f"{role}, {tensor_label(t)}, has zero point {int(t.zero_point[t.zero_point != 0][0])}; "
            "weights and biases are symmetric (zero point 0) in TFLite's int8 specification."
        )
    if k == sig.bias and len(t.scale) not in (1, t.shape[0] if t.shape else 1):
        raise op.fail(f"{role}, {tensor_label(t)}, has {len(t.scale)} scales for {t.shape}.")


def check_operators(graph: TFLiteGraph, integer: list[bool]) -> None:
    """Hold every operator to its :class:`Signature` (see the module docstring).

    Parameters
    ----------
    graph : TFLiteGraph
        Read by :func:`~xai_core.importers.tflite.reader.read_tflite` (structure checked).
    integer : list of bool
        Per operator, whether it runs an int8 kernel.

    Raises
    ------
    ModelFormatError
        Naming the file, the operator (index and opcode) and the tensor.
    """
    inp = graph.tensors[graph.inputs[0]]
    if inp.data is not None or len(inp.shape) < 2 or 0 in inp.shape:
        raise ModelFormatError(
            f"{graph.where}: the graph input, {tensor_label(inp)}, has shape {inp.shape}; "
            "expected a computed tensor of shape (batch, *sample) with no empty axis."
        )
    for op_info, is_int in zip(graph.operators, integer):
        op = _Op(graph, op_info, is_int)
        sig = SIGNATURES[op_info.kind]
        _check_inputs(op, sig)
        _check_types(op, sig)
        expected = tuple(int(d) for d in sig.shape(op))
        declared = op.out.shape
        if expected != declared:
            raise op.fail(
                f"the output, {tensor_label(op.out)}, is declared with shape {declared}, but "
                f"the operator computes {expected} from its inputs."
            )


def activation_bytes(graph: TFLiteGraph) -> int:
    """Bytes one sample takes through the graph: every computed tensor (a run keeps them
    all) and the largest working array of one operator (int64 accumulators, im2col
    windows), from the declared shapes."""

    def per_sample(shape: tuple[int, ...]) -> int:
        n = 1
        for d in shape[1:]:
            n *= d
        return n

    kept = sum(per_sample(t.shape) * t.dtype.itemsize for t in graph.tensors if t.data is None)
    work = 0
    for op in graph.operators:
        out = per_sample(graph.tensors[op.outputs[0]].shape)
        taps = 1
        if op.op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            w = graph.tensors[op.inputs[1]].shape
            taps = w[1] * w[2] * (w[3] if op.op == "CONV_2D" else 1)
        elif op.kind in ("TRANSPOSE_CONV", "Convolution2DTransposeBias"):
            w = graph.tensors[op.inputs[1]].shape  # every input pixel's products, kept at once
            data = graph.tensors[op.inputs[0] if op.custom_code else op.inputs[2]].shape
            out = max(out, per_sample(data) // max(w[3], 1) * w[0] * w[1] * w[2])
        elif op.op in ("MAX_POOL_2D", "AVERAGE_POOL_2D"):
            taps = int(op.options.get("FilterHeight", 1)) * int(op.options.get("FilterWidth", 1))
        work = max(work, 8 * out * (taps + 2))
    return kept + work
