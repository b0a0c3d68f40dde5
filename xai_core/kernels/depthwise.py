"""The ``cpu`` backend's compiled depthwise convolution, in channels-last memory.

A depthwise convolution (one kernel per channel) makes each output pixel from its own
window: ``out[n, y, x, :] = bias + sum over the taps (i, j) inside the image of
weight[i, j, :] * x[n, y * sh + i * dh - top, x * sw + j * dw - left, :]``. In channels-
last memory every term is one multiply-add of two contiguous runs of ``channels`` numbers,
so the compiled loops vectorise across channels and never build a column matrix, a
padded copy or a shifted copy: each input element is read once per tap that uses it,
each output written once.

- :func:`_depthwise3x3` (a 3x3 kernel, any stride, dilation and padding) sums a pixel's
  nine taps and its bias in one expression per channel, kept in registers; a tap in the
  zero padding reads a run of zeros.
- :func:`_depthwise` (any kernel) adds the taps inside the image one at a time into a
  per-pixel accumulator.

An activation that clamps (ReLU, ReLU6, Clip: ``bounds = (lo, hi)``) is applied as each
output is stored, so a convolution followed by it is one pass over memory (a NaN stays
NaN, as ``np.clip`` keeps it).

Both read the taps (kh, kw, channels) and the bias from copies they make on cache-line
boundaries, as the activations of :func:`xai_core.kernels.scratch.empty` are: a 512-bit load
from an address that is not crosses two cache lines, and a misaligned taps array alone
made the 3x3 loop 1.6x slower.

Outputs equal the im2col path's sums up to floating-point rounding (the order of the
taps and fused multiply-adds). With finite weights and bias a padding tap contributes
``0 * weight = 0`` there too, so a NaN or infinity of the input spreads exactly as on the
im2col path; a non-finite weight or bias (which the im2col path spreads through
``0 * weight``) is left to the caller (:func:`depthwise_channels_last` returns None).
Compiled by numba on first use and cached on disk.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from xai_core.kernels import scratch
from xai_core.kernels.conv_ops import ConvGeometry
from xai_core.kernels.scratch import ALIGNMENT

__all__ = ["depthwise_channels_last"]

_NO_BIAS = np.zeros(0)

_JIT = {
    "cache": True,
    "nogil": True,
    "fastmath": {"contract"},
    "error_model": "numpy",
    "boundscheck": False,
}


@njit(**_JIT)
def _aligned(size, like):  # pragma: no cover - compiled
    """An uninitialised array of ``size`` elements of ``like``'s dtype on an
    :data:`~xai_core.kernels.scratch.ALIGNMENT` boundary, as the pooled activations are."""
    slack = ALIGNMENT // like.itemsize
    buf = np.empty(size + slack, like.dtype)
    start = (-buf.ctypes.data % ALIGNMENT) // like.itemsize
    return buf[start : start + size]


@njit(**_JIT)
def _taps(weight, bias, like):  # pragma: no cover - compiled
    """Aligned ``(taps (kh, kw, c), shift (c,))`` of ``weight (c, kh, kw)`` and ``bias``
    (``(c,)``, or empty for none) in ``like``'s dtype, and whether every one is finite."""
    c, kh, kw = weight.shape
    taps = _aligned(kh * kw * c, like)
    shift = _aligned(c, like)
    finite = True
    for k in range(c):
        shift[k] = bias[k] if bias.size else 0
        finite &= np.isfinite(shift[k])
        for i in range(kh):
            for j in range(kw):
                t = (i * kw + j) * c + k
                taps[t] = weight[k, i, j]
                finite &= np.isfinite(taps[t])
    return taps.reshape((kh, kw, c)), shift, finite


@njit(**_JIT)
def _depthwise(x, weight, bias, geometry, bounds, out):  # pragma: no cover - compiled
    """``out (n, oh, ow, c)`` of ``x (n, h, w, c)``, ``weight (c, kh, kw)``, ``bias (c,)``
    (or empty); False, computing nothing, when a weight or the bias is not finite.

    Each sum is clamped to ``bounds = (lo, hi)`` as it is stored.
    """
    weight, bias, finite = _taps(weight, bias, x)
    if not finite:
        return False
    n, h, w, c = x.shape
    kh, kw = weight.shape[0], weight.shape[1]
    oh, ow = out.shape[1], out.shape[2]
    sh, sw, dh, dw, top, left = geometry
    lo, hi = bounds[0], bounds[1]
    acc = np.empty(c, x.dtype)
    for i in range(n):
        for oy in range(oh):
            for ox in range(ow):
                for k in range(c):
                    acc[k] = bias[k]
                for ki in range(kh):
                    iy = oy * sh - top + ki * dh
                    if iy < 0 or iy >= h:
                        continue
                    for kj in range(kw):
                        ix = ox * sw - left + kj * dw
                        if ix < 0 or ix >= w:
                            continue
                        src, taps = x[i, iy, ix], weight[ki, kj]
                        for k in range(c):
                            acc[k] += taps[k] * src[k]
                dst = out[i, oy, ox]
                for k in range(c):
                    v = acc[k]
                    v = lo if v < lo else v
                    dst[k] = hi if v > hi else v
    return True


@njit(**_JIT)
def _depthwise3x3(x, weight, bias, geometry, bounds, out):  # pragma: no cover - compiled
    """:func:`_depthwise` for ``weight (c, 3, 3)``: a pixel's nine taps in one expression."""
    weight, bias, finite = _taps(weight, bias, x)
    if not finite:
        return False
    n, h, w, c = x.shape
    oh, ow = out.shape[1], out.shape[2]
    sh, sw, dh, dw, top, left = geometry
    lo, hi = bounds[0], bounds[1]
    zero = np.zeros(c, x.dtype)  # what a tap in the padding reads
    w00, w01, w02 = weight[0, 0], weight[0, 1], weight[0, 2]
    w10, w11, w12 = weight[1, 0], weight[1, 1], weight[1, 2]
    w20, w21, w22 = weight[2, 0], weight[2, 1], weight[2, 2]
    for i in range(n):
        for oy in range(oh):
            y0 = oy * sh - top
            y1, y2 = y0 + dh, y0 + 2 * dh
            v0, v1, v2 = 0 <= y0 < h, 0 <= y1 < h, 0 <= y2 < h
            for ox in range(ow):
                x0 = ox * sw - left
                x1, x2 = x0 + dw, x0 + 2 * dw
                u0, u1, u2 = 0 <= x0 < w, 0 <= x1 < w, 0 <= x2 < w
                a00 = x[i, y0, x0] if v0 and u0 else zero
                a01 = x[i, y0, x1] if v0 and u1 else zero
                a02 = x[i, y0, x2] if v0 and u2 else zero
                a10 = x[i, y1, x0] if v1 and u0 else zero
                a11 = x[i, y1, x1] if v1 and u1 else zero
                a12 = x[i, y1, x2] if v1 and u2 else zero
                a20 = x[i, y2, x0] if v2 and u0 else zero
                a21 = x[i, y2, x1] if v2 and u1 else zero
                a22 = x[i, y2, x2] if v2 and u2 else zero
                dst = out[i, oy, ox]
                for k in range(c):
                    v = bias[k] + w00[k] * a00[k] + w01[k] * a01[k] + w02[k] * a02[k]
                    v += w10[k] * a10[k] + w11[k] * a11[k] + w12[k] * a12[k]
                    v += w20[k] * a20[k] + w21[k] * a21[k] + w22[k] * a22[k]
                    v = lo if v < lo else v
                    dst[k] = hi if v > hi else v
    return True


def depthwise_channels_last(
    x: np.ndarray, weight: np.ndarray, bias, geom: ConvGeometry, bounds=None
) -> np.ndarray | None:
    """The depthwise convolution of ``x`` in channels-last memory, optionally clamped.

    Parameters
    ----------
    x : ndarray of shape (n, channels, height, width)
        Any memory order (copied to channels-last when it is not).
    weight : ndarray of shape (channels, 1, kh, kw)
    bias : ndarray of shape (channels,) or None
    geom : ConvGeometry
        ``groups == channels``.
    bounds : tuple of (float, float), optional
        ``(lo, hi)``: each output clamped to ``min(max(y, lo), hi)`` as it is stored
        (``-inf`` / ``inf`` leave a side open); none by default.

    Returns
    -------
    ndarray of shape (n, channels, out_height, out_width) or None
        An NCHW-shaped view of C-contiguous (n, out_height, out_width, channels) memory,
        in ``x``'s dtype; None when a weight or the bias is not finite (its NaN or
        infinity must spread through the padding the im2col way).
    """
    n, c, h, w = x.shape
    oh, ow = geom.out_hw((h, w))
    nhwc = x.transpose(0, 2, 3, 1)
    if not nhwc.flags.c_contiguous:
        copy = scratch.empty(nhwc.shape, x.dtype)
        np.copyto(copy, nhwc)
        nhwc = copy
    (sh, sw), (dh, dw), (top, _, left, _) = geom.strides, geom.dilation, geom.pads
    geometry = np.array([sh, sw, dh, dw, top, left], np.int64)
    clamp = np.array((-np.inf, np.inf) if bounds is None else bounds, x.dtype)
    out = scratch.empty((n, oh, ow, c), x.dtype)
    kernel = _depthwise3x3 if weight.shape[2:] == (3, 3) else _depthwise
    shift = _NO_BIAS if bias is None else bias
    if not kernel(nhwc, weight[:, 0], shift.astype(x.dtype, copy=False), geometry, clamp, out):
        return None
    return out.transpose(0, 3, 1, 2)
