"""TFLite's int8 kernels, bit-exact with its reference kernels, vectorised over the batch.

Each kernel takes the operator, the graph's tensors and the int8 input arrays (NHWC, the
batch first) and returns the int8 output. Multipliers are derived from the float32 scales
the file stores, in double, as TFLite's ``Prepare`` functions do. Every matrix product (the
convolutions lowered by im2col, fully connected layers, depthwise convolutions per channel)
goes through :func:`xai_core.int8.numerics.int8_matmul`, so an int8 device receives the int8
operands and counts the work, and every other backend gives the same integers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from xai_core.errors import ModelFormatError
from xai_core.int8.fixedpoint import (
    INT16_MAX,
    INT16_MIN,
    inv_sqrt_multiplier,
    multiplier_from_scales,
    requantize,
    rounding_divide_by_pot,
    saturating_left_shift,
    saturating_rounding_doubling_high_mul,
)
from xai_core.int8.geometry import (
    batch_matmul_stacks,
    resize_coordinates,
    strided_slice_key,
    transpose_conv_padding,
    whole_batch,
)
from xai_core.int8.geometry import depth_to_space as _depth_to_space
from xai_core.int8.graph import OperatorInfo, TensorInfo
from xai_core.int8.numerics import (
    QMAX,
    QMIN,
    int8_batched_matmul,
    int8_elementwise,
    int8_matmul,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    round_half_away,
)

__all__ = [
    "INT8_KERNELS",
    "activation_range",
    "depth_to_space",
    "float_bias",
    "gather",
    "pack",
    "gelu_transform",
    "quantize_real",
    "same_batch",
    "strided_slice",
    "transpose",
    "window_patches",
]

#: TFLite's ActivationFunctionType: NONE, RELU, RELU_N1_TO_1, RELU6.
_FUSED = {0: None, 1: (0.0, None), 2: (-1.0, 1.0), 3: (0.0, 6.0)}


def _scale(t: TensorInfo) -> np.float32:
    if t.scale is None:
        raise ModelFormatError(f"tensor {t.name!r} has no quantisation parameters.")
    return np.float32(t.scale[0])


def _zp(t: TensorInfo) -> int:
    return int(t.zero_point[0]) if t.zero_point is not None and len(t.zero_point) else 0


def activation_range(fused: int, out: TensorInfo) -> tuple[int, int]:
    """TFLite's ``CalculateActivationRangeQuantized``: the clamp of a fused activation."""
    if fused not in _FUSED:
        raise ModelFormatError(f"fused activation {fused} is not supported (only RELU, RELU6).")
    bounds = _FUSED[fused]
    if bounds is None:
        return QMIN, QMAX
    scale, zp = _scale(out), _zp(out)

    def q(f: float) -> int:  # float32 division, as TFLite's lambda computes it
        return zp + int(round_half_away(np.float32(f) / scale))

    lo = max(QMIN, q(bounds[0]))
    hi = QMAX if bounds[1] is None else min(QMAX, q(bounds[1]))
    return lo, hi


# -- convolutions and fully connected layers ---------------------------------------------


def _same_padding(size: int, k: int, stride: int, dilation: int) -> tuple[int, int, int]:
    eff = (k - 1) * dilation + 1
    out = (size + stride - 1) // stride
    total = max((out - 1) * stride + eff - size, 0)
    return out, total // 2, total - total // 2


def window_patches(
    x: np.ndarray, kh: int, kw: int, opts: dict[str, Any], pad_value: int
) -> np.ndarray:
    """Patches of shape (n, oh, ow, kh, kw, c) for a TFLite SAME/VALID window (NHWC input)."""
    sh, sw = int(opts.get("StrideH", 1)), int(opts.get("StrideW", 1))
    dh, dw = int(opts.get("DilationHFactor", 1)), int(opts.get("DilationWFactor", 1))
    n, h, w, c = x.shape
    if int(opts.get("Padding", 1)) == 0:  # SAME
        oh, top, bottom = _same_padding(h, kh, sh, dh)
        ow, left, right = _same_padding(w, kw, sw, dw)
    else:
        oh = (h - (kh - 1) * dh - 1) // sh + 1
        ow = (w - (kw - 1) * dw - 1) // sw + 1
        top = bottom = left = right = 0
    if top or bottom or left or right:
        x = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=pad_value)
    view = np.lib.stride_tricks.sliding_window_view(
        x, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), (1, 2)
    )
    # view: (n, H', W', c, eh, ew) -> strided output positions and dilated taps
    view = view[:, : (oh - 1) * sh + 1 : sh, : (ow - 1) * sw + 1 : sw, :, ::dh, ::dw]
    return view.transpose(0, 1, 2, 4, 5, 3)


def _per_channel_multipliers(x: TensorInfo, w: TensorInfo, out: TensorInfo):
    scales = np.asarray(w.scale, dtype=np.float32).astype(np.float64)
    return multiplier_from_scales(np.float64(_scale(x)) * scales, np.float64(_scale(out)))


def _bias(op: OperatorInfo, tensors: list[TensorInfo], channels: int) -> np.ndarray:
    if len(op.inputs) > 2 and op.inputs[2] >= 0:
        b = tensors[op.inputs[2]].data
        if b is None or b.size != channels:
            raise ModelFormatError(
                f"operator {op.index} ({op.op}): bias must be {channels} constants."
            )
        return b.astype(np.int64)
    return np.zeros(channels, np.int64)


def float_bias(op: OperatorInfo, tensors: list[TensorInfo], channels: int) -> np.ndarray:
    """A float layer's bias (zeros when the operator has none): float32, or float64 as stored
    (the dequantised constants of :func:`xai_core.int8.ste.float_tensors`)."""
    if len(op.inputs) > 2 and op.inputs[2] >= 0:
        data = np.asarray(tensors[op.inputs[2]].data)
        return data.astype(np.float64 if data.dtype == np.float64 else np.float32)
    return np.zeros(channels, np.float32)


def _gemm_requant(cols, w_kc, op, tensors, backend, x_t, w_t, out_t):
    """int8 cols (M, K) @ weights (K, C) with TFLite's offsets, bias and requantisation.

    CONV_2D rescales with the fixed-point per-channel multipliers. FULLY_CONNECTED follows
    TFLite's reference kernel, which rescales in double instead: ``round(acc * s_in * s_w /
    s_out)``, ties away from zero. (TFLite's optimised kernel uses the fixed-point multiplier
    there too; the two differ by one on near-ties.)
    """
    channels = w_kc.shape[1]
    acc = int8_matmul(backend, cols, w_kc)
    acc -= _zp(x_t) * w_kc.astype(np.int64).sum(axis=0)
    acc += _bias(op, tensors, channels)
    lo, hi = activation_range(int(op.options.get("FusedActivationFunction", 0)), out_t)
    scales = np.asarray(w_t.scale, dtype=np.float32).astype(np.float64)
    if op.op == "FULLY_CONNECTED":
        effective = np.float64(_scale(x_t)) * scales / np.float64(_scale(out_t))

        def rescale(a):
            out = round_half_away(a.astype(np.float64) * effective).astype(np.int64) + _zp(out_t)
            return np.clip(out, lo, hi).astype(np.int8)

        return int8_elementwise(backend, rescale, acc)
    q, shift = multiplier_from_scales(np.float64(_scale(x_t)) * scales, np.float64(_scale(out_t)))
    return int8_elementwise(backend, lambda a: requantize(a, q, shift, _zp(out_t), lo, hi), acc)


def conv_2d(op, tensors, inputs, backend):
    x = inputs[0]
    x_t, w_t, out_t = tensors[op.inputs[0]], tensors[op.inputs[1]], tensors[op.outputs[0]]
    w = w_t.data  # (out_c, kh, kw, in_c)
    oc, kh, kw, ic = w.shape
    patches = window_patches(x, kh, kw, op.options, _zp(x_t))
    n, oh, ow = patches.shape[:3]
    groups = x.shape[-1] // ic
    if groups == 1:
        cols = patches.reshape(n * oh * ow, kh * kw * ic)
        out = _gemm_requant(cols, w.reshape(oc, -1).T, op, tensors, backend, x_t, w_t, out_t)
        return out.reshape(n, oh, ow, oc)
    # grouped (TFLite's reference ConvPerChannel): group g reads input channels
    # g*ic..(g+1)*ic and writes output channels g*(oc/groups)..; one stacked product
    per = oc // groups
    cols = patches.reshape(n * oh * ow, kh * kw, groups, ic).transpose(2, 0, 1, 3)
    cols = np.ascontiguousarray(cols.reshape(groups, n * oh * ow, kh * kw * ic))
    wk = np.ascontiguousarray(w.reshape(groups, per, kh * kw * ic).transpose(0, 2, 1))
    acc = int8_batched_matmul(backend, cols, wk).transpose(1, 0, 2).reshape(n * oh * ow, oc)
    acc -= _zp(x_t) * w.reshape(oc, -1).astype(np.int64).sum(axis=1)
    acc += _bias(op, tensors, oc)
    q, shift = _per_channel_multipliers(x_t, w_t, out_t)
    lo, hi = activation_range(int(op.options.get("FusedActivationFunction", 0)), out_t)
    out = int8_elementwise(backend, lambda a: requantize(a, q, shift, _zp(out_t), lo, hi), acc)
    return out.reshape(n, oh, ow, oc)


def depthwise_conv_2d(op, tensors, inputs, backend):
    x = inputs[0]
    x_t, w_t, out_t = tensors[op.inputs[0]], tensors[op.inputs[1]], tensors[op.outputs[0]]
    w = w_t.data  # (1, kh, kw, out_c), out_c = in_c * multiplier
    _, kh, kw, oc = w.shape
    ic = x.shape[-1]
    mult = oc // ic
    patches = window_patches(x, kh, kw, op.options, _zp(x_t))  # (n, oh, ow, kh, kw, ic)
    n, oh, ow = patches.shape[:3]
    # one small product per channel, all in one stacked call: (ic, M, kh*kw) @ (ic, kh*kw, mult)
    cols = np.ascontiguousarray(patches.reshape(n * oh * ow, kh * kw, ic).transpose(2, 0, 1))
    wk = np.ascontiguousarray(w.reshape(kh * kw, ic, mult).transpose(1, 0, 2))
    acc = int8_batched_matmul(backend, cols, wk).transpose(1, 0, 2).reshape(n * oh * ow, oc)
    acc -= _zp(x_t) * w.reshape(kh * kw, oc).astype(np.int64).sum(axis=0)
    acc += _bias(op, tensors, oc)
    q, shift = _per_channel_multipliers(x_t, w_t, out_t)
    lo, hi = activation_range(int(op.options.get("FusedActivationFunction", 0)), out_t)
    out = int8_elementwise(backend, lambda a: requantize(a, q, shift, _zp(out_t), lo, hi), acc)
    return out.reshape(n, oh, ow, oc)


def fully_connected(op, tensors, inputs, backend):
    x = inputs[0]
    x_t, w_t, out_t = tensors[op.inputs[0]], tensors[op.inputs[1]], tensors[op.outputs[0]]
    w = w_t.data  # (units, k)
    units, k = w.shape
    rows = x.reshape(-1, k)
    out = _gemm_requant(rows, w.T, op, tensors, backend, x_t, w_t, out_t)
    if op.options.get("KeepNumDims"):
        return out.reshape(*x.shape[:-1], units)
    return out.reshape(-1, units)


# -- pooling, reductions, shapes -------------------------------------------------------------


def _pool_windows(op, x, pad_value):
    opts = op.options
    kh, kw = int(opts["FilterHeight"]), int(opts["FilterWidth"])
    return window_patches(x, kh, kw, opts, pad_value)


def transpose_conv(op, tensors, inputs, backend):
    """TFLite's reference int8 ``TransposeConv``: each input pixel's ``(x - zp) * w`` added
    into its output window in integers, the int32 bias added, then the per-channel
    fixed-point rescaling of CONV_2D and the fused activation's clamp."""
    x = inputs[2]
    x_t, w_t, out_t = tensors[op.inputs[2]], tensors[op.inputs[1]], tensors[op.outputs[0]]
    w = w_t.data  # (oc, kh, kw, ic)
    oc, kh, kw, ic = w.shape
    n, h, wd, _ = x.shape
    out_h, out_w = out_t.shape[1:3]
    sh, sw = int(op.options.get("StrideH", 1)), int(op.options.get("StrideW", 1))
    same = int(op.options.get("Padding", 0)) == 0
    top, _ = transpose_conv_padding(out_h, h, kh, sh, same)
    left, _ = transpose_conv_padding(out_w, wd, kw, sw, same)
    w_kc = np.ascontiguousarray(w.transpose(3, 1, 2, 0).reshape(ic, -1))
    taps = int8_matmul(backend, x.reshape(n * h * wd, ic), w_kc)
    taps -= _zp(x_t) * w_kc.astype(np.int64).sum(axis=0)
    taps = taps.reshape(n, h, wd, kh, kw, oc)
    full_h = max((h - 1) * sh + kh, top + out_h)
    full_w = max((wd - 1) * sw + kw, left + out_w)
    full = np.zeros((n, full_h, full_w, oc), np.int64)
    for fy in range(kh):
        for fx in range(kw):
            full[:, fy : fy + (h - 1) * sh + 1 : sh, fx : fx + (wd - 1) * sw + 1 : sw] += taps[
                :, :, :, fy, fx
            ]
    acc = full[:, top : top + out_h, left : left + out_w]
    if len(op.inputs) > 3 and op.inputs[3] >= 0:
        acc = acc + tensors[op.inputs[3]].data.astype(np.int64)
    lo, hi = activation_range(int(op.options.get("FusedActivationFunction", 0)), out_t)
    q, shift = _per_channel_multipliers(x_t, w_t, out_t)
    return int8_elementwise(backend, lambda a: requantize(a, q, shift, _zp(out_t), lo, hi), acc)


def max_pool_2d(op, tensors, inputs, backend):
    x = inputs[0]
    out_t = tensors[op.outputs[0]]
    patches = _pool_windows(op, x, QMIN)  # padding never wins a max
    out = patches.max(axis=(3, 4)).astype(np.int64)
    lo, hi = activation_range(int(op.options.get("FusedActivationFunction", 0)), out_t)
    return np.clip(out, lo, hi).astype(np.int8)


def average_pool_2d(op, tensors, inputs, backend):
    x = inputs[0]
    out_t = tensors[op.outputs[0]]
    ones = np.ones((1, *x.shape[1:3], 1), np.int8)
    patches = _pool_windows(op, x.astype(np.int16), 0)
    counts = _pool_windows(op, ones, 0).sum(axis=(3, 4), dtype=np.int64)  # padding excluded
    acc = patches.sum(axis=(3, 4), dtype=np.int64)
    half = counts // 2
    acc = np.where(acc > 0, (acc + half) // counts, -((-acc + half) // counts))
    lo, hi = activation_range(int(op.options.get("FusedActivationFunction", 0)), out_t)
    return np.clip(acc, lo, hi).astype(np.int8)


def mean(op, tensors, inputs, backend):
    x = inputs[0]
    x_t, out_t = tensors[op.inputs[0]], tensors[op.outputs[0]]
    axes = tuple(int(a) % x.ndim for a in np.ravel(tensors[op.inputs[1]].data))
    if 0 in axes:
        raise ModelFormatError(f"operator {op.index}: MEAN over the batch axis is not supported.")
    count = int(np.prod([x.shape[a] for a in axes]))
    total = x.astype(np.int64).sum(axis=axes, keepdims=bool(op.options.get("KeepDims")))
    q, shift = quantize_multiplier(np.float64(_scale(x_t)) / np.float64(_scale(out_t)))
    q, shift = int(q), int(shift)
    s = min(count.bit_length() - 1, 32, 31 + shift)
    q = (q << s) // count
    shift -= s
    shifted = total - _zp(x_t) * count
    out = multiply_by_quantized_multiplier(shifted, q, shift) + _zp(out_t)
    return np.clip(out, QMIN, QMAX).astype(np.int8)


def pad(op, tensors, inputs, backend):
    x = inputs[0]
    widths = tensors[op.inputs[1]].data.astype(np.int64)
    if widths[0].any():
        raise ModelFormatError(f"operator {op.index}: PAD of the batch axis is not supported.")
    value = _zp(tensors[op.outputs[0]])
    if len(op.inputs) > 2 and op.inputs[2] >= 0:  # PADV2's constant
        value = int(tensors[op.inputs[2]].data.ravel()[0])
    return np.pad(x, [tuple(w) for w in widths], constant_values=value)


def reshape(op, tensors, inputs, backend):
    x = inputs[0]
    out_shape = tensors[op.outputs[0]].shape
    return x.reshape(len(x), *out_shape[1:])


def transpose(op, tensors, inputs, backend):
    perm = [int(a) for a in np.ravel(tensors[op.inputs[1]].data)]
    if perm[0] != 0:
        raise ModelFormatError(f"operator {op.index}: TRANSPOSE must keep the batch axis first.")
    return np.ascontiguousarray(inputs[0].transpose(perm))


def strided_slice(op, tensors, inputs, backend):
    """STRIDED_SLICE of any type: a numpy index (see :func:`~.geometry.strided_slice_key`)."""
    begin, end, strides = (tensors[t].data.astype(np.int64).ravel() for t in op.inputs[1:4])
    key = strided_slice_key(begin, end, strides, op.options)
    key = whole_batch(key, tensors[op.inputs[0]].shape[0])
    return np.ascontiguousarray(inputs[0][key])


def gather(op, tensors, inputs, backend):
    """GATHER of any type along a non-batch axis by constant indices (data movement only)."""
    axis = int(op.options.get("Axis", 0)) % inputs[0].ndim
    if axis == 0 or int(op.options.get("BatchDims", 0)):
        raise ModelFormatError(f"operator {op.index}: GATHER along the batch axis.")
    indices = tensors[op.inputs[1]].data.astype(np.int64)
    return np.take(inputs[0], indices, axis=axis)


def pack(op, tensors, inputs, backend):
    """PACK of any type: the inputs stacked along a new axis (never the batch axis)."""
    axis = int(op.options.get("Axis", 0)) % (inputs[0].ndim + 1)
    return np.stack(inputs, axis=axis)


def depth_to_space(op, tensors, inputs, backend):
    """DEPTH_TO_SPACE of any type (data movement only)."""
    return _depth_to_space(inputs[0], int(op.options["BlockSize"]))


def resize_bilinear(op, tensors, inputs, backend):
    """TFLite's reference ``ResizeBilinearInteger``: source positions in units of 1/1024, the
    four products in int64, rounded half away from zero by 2**20 (input and output share
    their quantisation: no rescaling)."""
    x = inputs[0]
    out_h, out_w = tensors[op.outputs[0]].shape[1:3]
    align = bool(op.options.get("AlignCorners", False))
    half = bool(op.options.get("HalfPixelCenters", False))
    ys, y0, y1 = resize_coordinates(out_h, x.shape[1], align, half, integer=True)
    xs, x0, x1 = resize_coordinates(out_w, x.shape[2], align, half, integer=True)
    one = 1 << 10
    fy = (ys - one * y0)[None, :, None, None]
    fx = (xs - one * x0)[None, None, :, None]
    wide = x.astype(np.int64)
    rows0, rows1 = wide[:, y0], wide[:, y1]

    def blend(a, b, c, d, wy, wx):
        total = (
            a * (one - wy) * (one - wx) + b * wy * (one - wx) + c * (one - wy) * wx + d * wy * wx
        )
        half_unit = np.where(total > 0, 1 << 19, -(1 << 19))
        q = np.abs(total + half_unit) // (1 << 20)  # C's division, towards zero
        return np.where(total + half_unit < 0, -q, q)

    out = int8_elementwise(
        backend,
        blend,
        *(rows0[:, :, x0], rows1[:, :, x0], rows0[:, :, x1], rows1[:, :, x1], fy, fx),
        ops=11,
    )
    return np.clip(out, QMIN, QMAX).astype(np.int8)


def same_batch(arrays: list[np.ndarray]) -> list[np.ndarray]:
    """The arrays with a constant's batch of 1 repeated to the batch of the others (the file's
    batch is 1; a class token joined to a batch of patch embeddings is a constant)."""
    n = max(len(a) for a in arrays)
    return [np.broadcast_to(a, (n, *a.shape[1:])) if len(a) == 1 else a for a in arrays]


def concatenation(op, tensors, inputs, backend):
    axis = int(op.options.get("Axis", 0))
    out_t = tensors[op.outputs[0]]
    for i, t in enumerate(op.inputs):  # TFLite's int8 kernel refuses rescaling
        if _scale(tensors[t]) != _scale(out_t) or _zp(tensors[t]) != _zp(out_t):
            raise ModelFormatError(
                f"operator {op.index}: CONCATENATION input {i} has other quantisation than "
                "its output, which TFLite's int8 kernel does not run."
            )
    axis = axis % inputs[0].ndim
    if axis == 0:
        raise ModelFormatError(f"operator {op.index}: CONCATENATION along the batch axis.")
    out = np.concatenate(same_batch(inputs), axis=axis).astype(np.int64)
    lo, hi = activation_range(int(op.options.get("FusedActivationFunction", 0)), out_t)
    return np.clip(out, lo, hi).astype(np.int8)


# -- elementwise -------------------------------------------------------------------------------


def _add_sub(op, tensors, inputs, sign):
    a_t, b_t, out_t = (tensors[i] for i in (*op.inputs, op.outputs[0]))
    sa, sb, so = (np.float64(_scale(t)) for t in (a_t, b_t, out_t))
    left = 20
    twice_max = 2 * max(sa, sb)
    qa, sha = quantize_multiplier(sa / twice_max)
    qb, shb = quantize_multiplier(sb / twice_max)
    qo, sho = quantize_multiplier(twice_max / ((1 << left) * so))
    a = (inputs[0].astype(np.int64) - _zp(a_t)) << left
    b = (inputs[1].astype(np.int64) - _zp(b_t)) << left
    raw = multiply_by_quantized_multiplier(a, qa, sha) + sign * multiply_by_quantized_multiplier(
        b, qb, shb
    )
    lo, hi = activation_range(int(op.options.get("FusedActivationFunction", 0)), out_t)
    return requantize(raw, qo, sho, _zp(out_t), lo, hi)


def add(op, tensors, inputs, backend):
    return _add_sub(op, tensors, inputs, 1)


def sub(op, tensors, inputs, backend):
    return _add_sub(op, tensors, inputs, -1)


def mul(op, tensors, inputs, backend):
    """TFLite's reference int8 ``Mul``. Its multiplier ``s_a * s_b / s_out`` is computed in
    float32 arithmetic (``mul.cc`` multiplies the tensors' float scales before widening to
    double), so it is here too: in double, some scales round to another 31-bit multiplier."""
    a_t, b_t, out_t = (tensors[i] for i in (*op.inputs, op.outputs[0]))
    q, shift = quantize_multiplier(np.float64(_scale(a_t) * _scale(b_t) / _scale(out_t)))
    prod = (inputs[0].astype(np.int64) - _zp(a_t)) * (inputs[1].astype(np.int64) - _zp(b_t))
    lo, hi = activation_range(int(op.options.get("FusedActivationFunction", 0)), out_t)
    return requantize(prod, q, shift, _zp(out_t), lo, hi)


def batch_matmul(op, tensors, inputs, backend):
    """TFLite's reference int8 ``BatchMatMul``: ``sum_k (a - z_a)(b - z_b)`` exact in integers
    over the last axes (``AdjX`` / ``AdjY`` transpose an operand first), the leading axes
    broadcast, then ``MultiplyByQuantizedMultiplier`` by ``s_a * s_b / s_out`` (in double)
    and the output's zero point. One int8 product on ``backend``; the zero points come off
    with row and column sums."""
    a_t, b_t, out_t = (tensors[i] for i in (*op.inputs[:2], op.outputs[0]))
    a, b = inputs[0], inputs[1]
    a3, b3, lead = batch_matmul_stacks(a, b, op.options.get("AdjX"), op.options.get("AdjY"))
    m, k, n = a3.shape[1], a3.shape[2], b3.shape[2]
    za, zb = _zp(a_t), _zp(b_t)
    acc = int8_batched_matmul(backend, a3, b3)
    acc -= zb * a3.astype(np.int64).sum(axis=2, keepdims=True)
    acc -= za * b3.astype(np.int64).sum(axis=1, keepdims=True)
    acc += k * za * zb
    q, shift = quantize_multiplier(
        np.float64(_scale(a_t)) * np.float64(_scale(b_t)) / np.float64(_scale(out_t))
    )
    out = int8_elementwise(backend, lambda v: requantize(v, q, shift, _zp(out_t), QMIN, QMAX), acc)
    return out.reshape(*lead, m, n)


def squared_difference(op, tensors, inputs, backend):
    """TFLite's int8 ``SquaredDifference``: both inputs shifted left by 7 and brought to the
    scale of twice the larger input scale, their difference squared in int32, then rescaled
    by ``(2 max s)^2 / (2^14 s_out)``; every multiplier below one (``...SmallerThanOneExp``)."""
    a_t, b_t, out_t = (tensors[i] for i in (*op.inputs, op.outputs[0]))
    sa, sb, so = (np.float64(_scale(t)) for t in (a_t, b_t, out_t))
    left = 7
    twice_max = 2 * max(sa, sb)
    qa, sha = quantize_multiplier(sa / twice_max)
    qb, shb = quantize_multiplier(sb / twice_max)
    qo, sho = quantize_multiplier(twice_max * twice_max / ((1 << (2 * left)) * so))

    def kernel(x, y):
        x = multiply_by_quantized_multiplier((x.astype(np.int64) - _zp(a_t)) << left, qa, sha)
        y = multiply_by_quantized_multiplier((y.astype(np.int64) - _zp(b_t)) << left, qb, shb)
        return requantize((x - y) * (x - y), qo, sho, _zp(out_t), QMIN, QMAX)

    return int8_elementwise(backend, kernel, inputs[0], inputs[1], ops=6)


def rsqrt_table(x_t: TensorInfo, out_t: TensorInfo) -> np.ndarray:
    """The int8 output of TFLite's ``RsqrtEvalQuantized`` for each input ``-128..127``.

    ``1 / sqrt(q - z_in)`` from :func:`~xai_core.int8.fixedpoint.inv_sqrt_multiplier`, times
    ``2**20``, then rescaled by ``1 / (sqrt(s_in) s_out)`` (``sqrt`` and the product in
    float32, the reciprocal in double, as ``SetRsqrtOutputMultiplier`` does); an input at the
    zero point gives 127. Inputs below the zero point (negative values) are ``-128`` here;
    TFLite refuses them. Built once per pair of quantisations (its Newton steps, per entry,
    take a tenth of a second) and then shared, read-only.
    """
    return _rsqrt_table(float(_scale(x_t)), _zp(x_t), float(_scale(out_t)), _zp(out_t))


@functools.lru_cache(maxsize=256)
def _rsqrt_table(scale_in: float, zp_in: int, scale_out: float, zp_out: int) -> np.ndarray:
    q, shift = quantize_multiplier(
        1.0 / np.float64(np.sqrt(np.float32(scale_in), dtype=np.float32) * np.float32(scale_out))
    )
    table = np.full(256, QMIN, np.int64)
    for value in range(1, QMAX - zp_in + 1):  # once per quantisation pair, not per call
        m, s = inv_sqrt_multiplier(value)
        data = multiply_by_quantized_multiplier(1, m, s + 20)
        table[value + zp_in - QMIN] = multiply_by_quantized_multiplier(data, q, shift - 20)
    table += zp_out
    table[zp_in - QMIN] = QMAX
    out = np.clip(table, QMIN, QMAX).astype(np.int8)
    out.flags.writeable = False
    return out


def rsqrt(op, tensors, inputs, backend):
    """RSQRT of int8 values: :func:`rsqrt_table` looked up; a value below the input's zero
    point (a negative number) is refused, as TFLite refuses it."""
    x_t, out_t = tensors[op.inputs[0]], tensors[op.outputs[0]]
    x = inputs[0].astype(np.int64)
    if x.size and x.min() < _zp(x_t):
        raise ModelFormatError(
            f"operator {op.index} (RSQRT): an input below its zero point {_zp(x_t)} (a "
            "negative value); RSQRT is only defined for positive values."
        )
    return rsqrt_table(x_t, out_t)[x - QMIN]


def prelu(op, tensors, inputs, backend):
    """TFLite's reference int8 PRELU: ``x`` rescaled by ``s_x / s_out`` where ``x >= 0``, else
    ``x * alpha`` rescaled by ``s_x * s_alpha / s_out`` (both ratios computed in float32, as
    ``PreluPrepare`` computes them, then written as fixed-point multipliers)."""
    x_t, a_t, out_t = (tensors[i] for i in (*op.inputs, op.outputs[0]))
    q1, shift1 = quantize_multiplier(np.float64(_scale(x_t) / _scale(out_t)))
    q2, shift2 = quantize_multiplier(np.float64(_scale(x_t) * _scale(a_t) / _scale(out_t)))
    x = inputs[0].astype(np.int64) - _zp(x_t)
    alpha = inputs[1].astype(np.int64) - _zp(a_t)

    def blend(v, a):
        positive = multiply_by_quantized_multiplier(v, q1, shift1)
        negative = multiply_by_quantized_multiplier(v * a, q2, shift2)
        return np.where(v >= 0, positive, negative)

    out = int8_elementwise(backend, blend, x, alpha, ops=3) + _zp(out_t)
    return np.clip(out, QMIN, QMAX).astype(np.int8)


def _relu_x(op, tensors, inputs, bounds):
    x_t, out_t = tensors[op.inputs[0]], tensors[op.outputs[0]]
    q, shift = quantize_multiplier(np.float64(_scale(x_t)) / np.float64(_scale(out_t)))
    lo, hi = activation_range(bounds, out_t)
    return requantize(inputs[0].astype(np.int64) - _zp(x_t), q, shift, _zp(out_t), lo, hi)


def relu(op, tensors, inputs, backend):
    return _relu_x(op, tensors, inputs, 1)


def relu6(op, tensors, inputs, backend):
    return _relu_x(op, tensors, inputs, 3)


def _lut(fn: Callable[[np.ndarray], np.ndarray]):
    """A 256-entry table as TFLite's ``LUTPopulate<int8_t>`` fills it (float32 arithmetic)."""

    def kernel(op, tensors, inputs, backend):
        x_t, out_t = tensors[op.inputs[0]], tensors[op.outputs[0]]
        values = np.arange(QMIN, QMAX + 1, dtype=np.int32)
        real = _scale(x_t) * (values - _zp(x_t)).astype(np.float32)
        inverse = np.float32(1) / _scale(out_t)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            table = round_half_away(fn(real.astype(np.float32)).astype(np.float32) * inverse)
            shifted = (table + np.float32(_zp(out_t))).astype(np.float64)
        # C's float -> int32 conversion on x86: a value out of range (inf, NaN) is INT32_MIN
        wild = ~np.isfinite(shifted) | (shifted < -(2.0**31)) | (shifted >= 2.0**31)
        shifted = np.where(wild, -(2.0**31), shifted).astype(np.int64)
        table = np.clip(shifted, QMIN, QMAX).astype(np.int8)
        return table[inputs[0].astype(np.int64) - QMIN]

    return kernel


def leaky_relu(op, tensors, inputs, backend):
    """LEAKY_RELU: TFLite's ``QuantizeLeakyRelu``, one multiplier per sign of the input."""
    x_t, out_t = tensors[op.inputs[0]], tensors[op.outputs[0]]
    alpha = np.float32(op.options.get("Alpha", 0.2))
    s_in, s_out = _scale(x_t), _scale(out_t)
    q_id, sh_id = quantize_multiplier(np.float64(np.float32(s_in / s_out)))
    q_al, sh_al = quantize_multiplier(np.float64(np.float32(s_in * alpha / s_out)))
    v = inputs[0].astype(np.int64) - _zp(x_t)
    out = np.where(
        v >= 0,
        multiply_by_quantized_multiplier(v, q_id, sh_id),
        multiply_by_quantized_multiplier(v, q_al, sh_al),
    )
    return np.clip(out + _zp(out_t), QMIN, QMAX).astype(np.int8)


def _reduce_extreme(fn):
    """REDUCE_MAX / REDUCE_MIN: the extreme int8 value (input and output share parameters)."""

    def kernel(op, tensors, inputs, backend):
        x = inputs[0]
        axes = tuple(int(a) % x.ndim for a in np.ravel(tensors[op.inputs[1]].data))
        return fn(x, axis=axes, keepdims=bool(op.options.get("KeepDims")))

    return kernel


def _gelu(x: np.ndarray) -> np.ndarray:
    """TFLite's ``GeluTransform`` in float32: ``0.5 x erfc(-x / sqrt 2)``."""
    from scipy.special import erfc

    x = np.asarray(x, np.float32)
    return np.float32(0.5) * x * erfc(x * np.float32(-np.sqrt(0.5))).astype(np.float32)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    """TFLite's ``GeluTransformApproximate`` in float32."""
    x = np.asarray(x, np.float32)
    k = np.float32(np.sqrt(2.0 / np.pi))
    inner = k * (x + np.float32(0.044715) * x * x * x)
    return np.float32(0.5) * x * (np.float32(1) + np.tanh(inner))


def gelu_transform(approximate: bool) -> Callable[[np.ndarray], np.ndarray]:
    """TFLite's GELU of float32 values: exact (erfc) or its tanh approximation."""
    return _gelu_tanh if approximate else _gelu


def gelu(op, tensors, inputs, backend):
    """GELU: a 256-entry table of TFLite's transform, as its int8 kernel fills it."""
    return _lut(gelu_transform(bool(op.options.get("Approximate"))))(op, tensors, inputs, backend)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(np.float32)


def hard_swish(op, tensors, inputs, backend):
    x_t, out_t = tensors[op.inputs[0]], tensors[op.outputs[0]]
    s_in, s_out = _scale(x_t), _scale(out_t)
    hires = np.float32(1.0 / 128.0) * s_in
    out_q, out_e = quantize_multiplier(np.float64(np.float32(hires / s_out)))
    relu_q, relu_e = quantize_multiplier(np.float64(np.float32(hires / np.float32(3.0 / 32768.0))))
    out_q16 = _downscale_to_int16(int(out_q))
    relu_q16 = _downscale_to_int16(int(relu_q))
    out_e, relu_e = int(out_e), int(relu_e)
    v = inputs[0].astype(np.int64) - _zp(x_t)
    hires_v = v * 128
    preshift = saturating_rounding_doubling_high_mul(hires_v, out_q16, bits=16)
    r = hires_v
    if relu_e > 0:
        r = saturating_left_shift(r, relu_e - 1, bits=16)
    r = saturating_rounding_doubling_high_mul(r, relu_q16, bits=16)
    if relu_e > 0:
        r = saturating_left_shift(r, 1, bits=16)
    if relu_e < 0:
        r = rounding_divide_by_pot(r, -relu_e)
    r = (r + (1 << 15)) >> 1
    # SaturatingDoublingHighMul: truncating division by 2**15
    ab = r * preshift
    prod = np.where(ab >= 0, ab >> 15, -((-ab) >> 15))
    prod = np.where((r == INT16_MIN) & (preshift == INT16_MIN), INT16_MAX, prod)
    out = rounding_divide_by_pot(prod, -out_e) + _zp(out_t)
    return np.clip(out, QMIN, QMAX).astype(np.int8)


def _downscale_to_int16(q: int) -> int:
    if q >= 2**31 - 1 - (1 << 15):
        return INT16_MAX
    return (q + (1 << 15)) >> 16


def softmax(op, tensors, inputs, backend):
    from xai_core.int8.softmax import softmax_int8

    x_t = tensors[op.inputs[0]]
    return softmax_int8(inputs[0], float(op.options.get("Beta", 1.0)), _scale(x_t))


def quantize_real(x: np.ndarray, out_t: TensorInfo) -> np.ndarray:
    """Real values as TFLite's QUANTIZE writes them: ``round(x / scale) + zero_point``, clamped."""
    info = np.iinfo(out_t.dtype)
    out = round_half_away(np.asarray(x, np.float32) / _scale(out_t)).astype(np.int64) + _zp(out_t)
    return np.clip(out, info.min, info.max).astype(out_t.dtype)


def quantize(op, tensors, inputs, backend):
    """QUANTIZE: float -> int8/uint8, or a requantisation between int8 and uint8."""
    x = inputs[0]
    out_t = tensors[op.outputs[0]]
    if x.dtype not in (np.int8, np.uint8):
        return quantize_real(x, out_t)
    info = np.iinfo(out_t.dtype)
    x_t = tensors[op.inputs[0]]
    q, shift = quantize_multiplier(np.float64(_scale(x_t)) / np.float64(_scale(out_t)))
    out = multiply_by_quantized_multiplier(x.astype(np.int64) - _zp(x_t), q, shift) + _zp(out_t)
    return np.clip(out, info.min, info.max).astype(out_t.dtype)


def dequantize(op, tensors, inputs, backend):
    x_t = tensors[op.inputs[0]]
    real = np.float64(_scale(x_t)) * (inputs[0].astype(np.float64) - _zp(x_t))
    return real.astype(np.float32)


#: Operator name -> kernel(op, tensors, inputs, backend) -> output.
INT8_KERNELS: dict[str, Callable[..., np.ndarray]] = {
    "ADD": add,
    "AVERAGE_POOL_2D": average_pool_2d,
    "BATCH_MATMUL": batch_matmul,
    "CONCATENATION": concatenation,
    "CONV_2D": conv_2d,
    "DEPTH_TO_SPACE": depth_to_space,
    "DEPTHWISE_CONV_2D": depthwise_conv_2d,
    "DEQUANTIZE": dequantize,
    "EXP": _lut(np.exp),
    "FULLY_CONNECTED": fully_connected,
    "GATHER": gather,
    "GELU": gelu,
    "HARD_SWISH": hard_swish,
    "LEAKY_RELU": leaky_relu,
    "LOG": _lut(np.log),
    "LOGISTIC": _lut(_sigmoid),
    "MAX_POOL_2D": max_pool_2d,
    "MEAN": mean,
    "MUL": mul,
    "PACK": pack,
    "PAD": pad,
    "PADV2": pad,
    "PRELU": prelu,
    "QUANTIZE": quantize,
    "REDUCE_MAX": _reduce_extreme(np.max),
    "REDUCE_MIN": _reduce_extreme(np.min),
    "RELU": relu,
    "RELU6": relu6,
    "RESHAPE": reshape,
    "RESIZE_BILINEAR": resize_bilinear,
    "RSQRT": rsqrt,
    "SOFTMAX": softmax,
    "SQUARED_DIFFERENCE": squared_difference,
    "SQUEEZE": reshape,
    "STRIDED_SLICE": strided_slice,
    "SUB": sub,
    "TANH": _lut(np.tanh),
    "TRANSPOSE": transpose,
    "TRANSPOSE_CONV": transpose_conv,
}
