"""TFLite's float32 kernels in the backend's numerics: every product through ``backend.matmul``.

The windows and padding rules are the int8 kernels' (:mod:`.kernels_int8`); elementwise work
and reductions go through ``backend.elementwise`` and ``backend.reduce`` so they are counted.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xai_core.errors import ModelFormatError
from xai_core.int8.geometry import (
    batch_matmul_stacks,
    resize_coordinates,
    transpose_conv_padding,
)
from xai_core.int8.kernels_int8 import (
    depth_to_space,
    float_bias,
    gather,
    pack,
    same_batch,
    strided_slice,
    transpose,
    window_patches,
)

__all__ = ["FLOAT_KERNELS"]

_ACTIVATIONS: dict[int, Callable[[np.ndarray], np.ndarray] | None] = {
    0: None,
    1: lambda v: np.maximum(v, 0),
    2: lambda v: np.clip(v, -1, 1),
    3: lambda v: np.clip(v, 0, 6),
}


def _fused(op, y, backend):
    fn = _ACTIVATIONS.get(int(op.options.get("FusedActivationFunction", 0)), "?")
    if fn == "?":
        raise ModelFormatError(f"operator {op.index}: unsupported fused activation.")
    return y if fn is None else backend.elementwise(fn, y)


def conv_2d(op, tensors, inputs, backend):
    x = inputs[0]
    w = tensors[op.inputs[1]].data  # (out_c, kh, kw, in_c)
    oc, kh, kw, ic = w.shape
    groups = x.shape[-1] // ic
    patches = window_patches(x, kh, kw, op.options, 0.0)
    n, oh, ow = patches.shape[:3]
    if groups == 1:
        y = backend.matmul(patches.reshape(n * oh * ow, -1), w.reshape(oc, -1).T)
    else:  # group g: input channels g*ic.., output channels g*(oc/groups)..
        cols = patches.reshape(n * oh * ow, kh * kw, groups, ic).transpose(2, 0, 1, 3)
        cols = np.ascontiguousarray(cols.reshape(groups, n * oh * ow, kh * kw * ic))
        wk = np.ascontiguousarray(w.reshape(groups, oc // groups, -1).transpose(0, 2, 1))
        y = np.asarray(backend.batched_matmul(cols, wk)).transpose(1, 0, 2).reshape(-1, oc)
    y = backend.elementwise(np.add, y, float_bias(op, tensors, oc))
    return _fused(op, y, backend).reshape(n, oh, ow, oc)


def depthwise_conv_2d(op, tensors, inputs, backend):
    x = inputs[0]
    w = tensors[op.inputs[1]].data  # (1, kh, kw, out_c)
    _, kh, kw, oc = w.shape
    ic = x.shape[-1]
    mult = oc // ic
    patches = window_patches(x, kh, kw, op.options, 0.0)
    n, oh, ow = patches.shape[:3]
    cols = np.ascontiguousarray(patches.reshape(n * oh * ow, kh * kw, ic).transpose(2, 0, 1))
    wk = np.ascontiguousarray(w.reshape(kh * kw, ic, mult).transpose(1, 0, 2))
    y = np.asarray(backend.batched_matmul(cols, wk)).transpose(1, 0, 2).reshape(-1, oc)
    y = backend.elementwise(np.add, y, float_bias(op, tensors, oc))
    return _fused(op, y, backend).reshape(n, oh, ow, oc)


def fully_connected(op, tensors, inputs, backend):
    x = inputs[0]
    w = tensors[op.inputs[1]].data  # (units, k)
    units, k = w.shape
    y = backend.matmul(x.reshape(-1, k), w.T)
    y = _fused(op, backend.elementwise(np.add, y, float_bias(op, tensors, units)), backend)
    return (
        y.reshape(*x.shape[:-1], units) if op.options.get("KeepNumDims") else y.reshape(-1, units)
    )


def max_pool_2d(op, tensors, inputs, backend):
    kh, kw = int(op.options["FilterHeight"]), int(op.options["FilterWidth"])
    patches = window_patches(inputs[0], kh, kw, op.options, -np.inf)
    return _fused(op, backend.reduce(np.max, patches, axis=(3, 4)), backend)


def average_pool_2d(op, tensors, inputs, backend):
    x = inputs[0]
    kh, kw = int(op.options["FilterHeight"]), int(op.options["FilterWidth"])
    sums = backend.reduce(np.sum, window_patches(x, kh, kw, op.options, 0.0), axis=(3, 4))
    ones = np.ones((1, *x.shape[1:3], 1), np.float32)
    counts = window_patches(ones, kh, kw, op.options, 0.0).sum(axis=(3, 4))
    return _fused(op, backend.elementwise(np.divide, sums, counts), backend)


def batch_matmul(op, tensors, inputs, backend):
    """TFLite's float ``BatchMatMul``: the last two axes multiplied (``AdjX`` / ``AdjY``
    transpose an operand first), the leading axes broadcast; one batched product."""
    a, b = inputs[0], inputs[1]
    a3, b3, lead = batch_matmul_stacks(a, b, op.options.get("AdjX"), op.options.get("AdjY"))
    return np.asarray(backend.batched_matmul(a3, b3)).reshape(*lead, a3.shape[1], b3.shape[2])


def mean(op, tensors, inputs, backend):
    x = inputs[0]
    axes = tuple(int(a) % x.ndim for a in np.ravel(tensors[op.inputs[1]].data))
    keep = bool(op.options.get("KeepDims"))
    return backend.reduce(lambda v, axis: np.mean(v, axis=axis, keepdims=keep), x, axis=axes)


def pad(op, tensors, inputs, backend):
    widths = tensors[op.inputs[1]].data.astype(np.int64)
    value = 0.0
    if len(op.inputs) > 2 and op.inputs[2] >= 0:
        value = float(tensors[op.inputs[2]].data.ravel()[0])
    return np.pad(inputs[0], [tuple(w) for w in widths], constant_values=value)


def reshape(op, tensors, inputs, backend):
    return inputs[0].reshape(len(inputs[0]), *tensors[op.outputs[0]].shape[1:])


def concatenation(op, tensors, inputs, backend):
    axis = int(op.options.get("Axis", 0)) % inputs[0].ndim
    return _fused(op, np.concatenate(same_batch(inputs), axis=axis), backend)


def _binary(fn):
    def kernel(op, tensors, inputs, backend):
        return _fused(op, backend.elementwise(fn, *inputs), backend)

    return kernel


def _unary(fn, ops=1):
    def kernel(op, tensors, inputs, backend):
        return backend.elementwise(fn, inputs[0], ops=ops)

    return kernel


def _logistic(v: np.ndarray) -> np.ndarray:
    """TFLite's reference float ``Logistic``: 1 above 16.619..., ``exp(v)`` below -9, else
    ``1 / (1 + exp(-v))`` (float32)."""
    v = np.asarray(v, np.float32)
    with np.errstate(over="ignore"):
        mid = np.float32(1) / (np.float32(1) + np.exp(-v))
    out = np.where(v < np.float32(-9.0), np.exp(np.minimum(v, 0)), mid)
    return np.where(v > np.float32(16.619047164916992188), np.float32(1), out).astype(np.float32)


def _reduce(fn):
    def kernel(op, tensors, inputs, backend):
        x = inputs[0]
        axes = tuple(int(a) % x.ndim for a in np.ravel(tensors[op.inputs[1]].data))
        keep = bool(op.options.get("KeepDims"))
        return backend.reduce(lambda v, axis: fn(v, axis=axis, keepdims=keep), x, axis=axes)

    return kernel


def leaky_relu(op, tensors, inputs, backend):
    alpha = np.float32(op.options.get("Alpha", 0.2))
    return backend.elementwise(lambda v: np.where(v >= 0, v, v * alpha), inputs[0], ops=2)


def gelu(op, tensors, inputs, backend):
    from xai_core.int8.kernels_int8 import gelu_transform

    fn = gelu_transform(bool(op.options.get("Approximate")))
    return backend.elementwise(fn, inputs[0], ops=10)


def softmax(op, tensors, inputs, backend):
    beta = np.float32(op.options.get("Beta", 1.0))
    x = inputs[0]
    m = backend.reduce(np.max, x, axis=-1)[..., None]
    e = backend.elementwise(lambda v, mm: np.exp((v - mm) * beta), x, m, ops=3)
    return backend.elementwise(np.divide, e, backend.reduce(np.sum, e, axis=-1)[..., None])


def prelu(op, tensors, inputs, backend):
    """``x`` where ``x >= 0``, else ``alpha * x`` (``alpha`` broadcast, TFLite's reference)."""
    return backend.elementwise(lambda v, a: np.where(v >= 0, v, v * a), *inputs, ops=2)


def resize_bilinear(op, tensors, inputs, backend):
    """TFLite's reference ``ResizeBilinear`` (float32 arithmetic, the same order of terms)."""
    x = inputs[0]
    out_h, out_w = tensors[op.outputs[0]].shape[1:3]
    align = bool(op.options.get("AlignCorners", False))
    half = bool(op.options.get("HalfPixelCenters", False))
    ys, y0, y1 = resize_coordinates(out_h, x.shape[1], align, half, integer=False)
    xs, x0, x1 = resize_coordinates(out_w, x.shape[2], align, half, integer=False)
    dy = (ys - y0.astype(np.float32))[None, :, None, None]
    dx = (xs - x0.astype(np.float32))[None, None, :, None]
    rows0, rows1 = x[:, y0], x[:, y1]
    corners = (rows0[:, :, x0], rows1[:, :, x0], rows0[:, :, x1], rows1[:, :, x1])
    one = np.float32(1)

    def blend(a, b, c, d, fy, fx):
        return a * (one - fy) * (one - fx) + b * fy * (one - fx) + c * (one - fy) * fx + d * fy * fx

    return backend.elementwise(blend, *corners, dy, dx, ops=11)


def transpose_conv(op, tensors, inputs, backend):
    """TFLite's reference ``TransposeConv``: every input pixel's products added into a window
    of the output, bias added, fused activation applied.

    Inputs are TFLite's (output shape, weights (oc, kh, kw, ic), input, [bias]), or MediaPipe's
    ``Convolution2DTransposeBias`` (input, weights, bias).
    """
    if op.custom_code:
        x, w_t, b_t = inputs[0], tensors[op.inputs[1]], tensors[op.inputs[2]]
        bias = np.asarray(b_t.data, np.float32)
    else:
        x, w_t = inputs[2], tensors[op.inputs[1]]
        has_bias = len(op.inputs) > 3 and op.inputs[3] >= 0
        bias = np.asarray(tensors[op.inputs[3]].data, np.float32) if has_bias else None
    w = w_t.data
    oc, kh, kw, ic = w.shape
    n, h, wd, _ = x.shape
    out_h, out_w = tensors[op.outputs[0]].shape[1:3]
    sh, sw = int(op.options.get("StrideH", 1)), int(op.options.get("StrideW", 1))
    same = int(op.options.get("Padding", 0)) == 0
    top, _ = transpose_conv_padding(out_h, h, kh, sh, same)
    left, _ = transpose_conv_padding(out_w, wd, kw, sw, same)
    taps = backend.matmul(x.reshape(n * h * wd, ic), w.transpose(3, 1, 2, 0).reshape(ic, -1))
    taps = np.asarray(taps, np.float32).reshape(n, h, wd, kh, kw, oc)
    full_h = max((h - 1) * sh + kh, top + out_h)
    full_w = max((wd - 1) * sw + kw, left + out_w)
    full = np.zeros((n, full_h, full_w, oc), np.float32)
    for fy in range(kh):
        for fx in range(kw):
            full[:, fy : fy + (h - 1) * sh + 1 : sh, fx : fx + (wd - 1) * sw + 1 : sw] += taps[
                :, :, :, fy, fx
            ]
    y = full[:, top : top + out_h, left : left + out_w]
    if bias is not None:
        y = backend.elementwise(np.add, y, bias)
    return _fused(op, y, backend)


FLOAT_KERNELS: dict[str, Callable[..., np.ndarray]] = {
    "ADD": _binary(np.add),
    "AVERAGE_POOL_2D": average_pool_2d,
    "BATCH_MATMUL": batch_matmul,
    "CONCATENATION": concatenation,
    "CONV_2D": conv_2d,
    "Convolution2DTransposeBias": transpose_conv,
    "DEPTH_TO_SPACE": depth_to_space,
    "DEPTHWISE_CONV_2D": depthwise_conv_2d,
    "DIV": _binary(np.divide),
    "EXP": _unary(np.exp, ops=3),
    "FULLY_CONNECTED": fully_connected,
    "GATHER": gather,
    "GELU": gelu,
    "LEAKY_RELU": leaky_relu,
    "REDUCE_MAX": _reduce(np.max),
    "REDUCE_MIN": _reduce(np.min),
    "HARD_SWISH": _unary(lambda v: v * np.clip(v + 3, 0, 6) / 6, ops=4),
    "LOG": _unary(np.log, ops=3),
    "LOGISTIC": _unary(_logistic, ops=3),
    "MAX_POOL_2D": max_pool_2d,
    "MEAN": mean,
    "MUL": _binary(np.multiply),
    "PACK": pack,
    "PAD": pad,
    "PADV2": pad,
    "PRELU": prelu,
    "RELU": _unary(lambda v: np.maximum(v, 0)),
    "RELU6": _unary(lambda v: np.clip(v, 0, 6)),
    "RELU_0_TO_1": _unary(lambda v: np.clip(v, 0, 1)),
    "RESHAPE": reshape,
    "RESIZE_BILINEAR": resize_bilinear,
    "RSQRT": _unary(lambda v: np.float32(1) / np.sqrt(v), ops=2),
    "SOFTMAX": softmax,
    "SQUARED_DIFFERENCE": _binary(lambda a, b: (a - b) * (a - b)),
    "SQUEEZE": reshape,
    "STRIDED_SLICE": strided_slice,
    "SUB": _binary(np.subtract),
    "TANH": _unary(np.tanh, ops=3),
    "TRANSPOSE": transpose,
    "TRANSPOSE_CONV": transpose_conv,
}
