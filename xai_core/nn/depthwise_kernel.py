"""The ``cpu`` backend's compiled depthwise convolution, in channels-last memory.

A depthwise convolution (one kernel per channel) makes each output pixel from its own
window: ``out[n, y, x, :] = bias + sum over the taps (i, j) inside the image of
weight[i, j, :] * x[n, y * sh + i * dh - top, x * sw + j * dw - left, :]``. In channels-
last memory every term is one multiply-add of two contiguous runs of ``channels`` numbers,
so the compiled loop (:func:`_depthwise`) vectorises across channels and never builds a
column matrix, a padded copy or a shifted copy: each input element is read once per tap
that uses it, each output written once. Taps that fall in the zero padding are skipped.
An activation that clamps (ReLU, ReLU6, Clip: ``bounds = (lo, hi)``) is applied as each
output is stored, so a convolution followed by it is one pass over memory.

Every finite output equals the im2col path's sum up to floating-point rounding (the order
of the taps and fused multiply-adds). The padding's products are not computed, so the
caller redoes a convolution with a non-finite output the im2col way, where a weight's
NaN or infinity also spreads through ``0 * weight``. Compiled by numba on first use and
cached on disk.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from xai_core.nn import scratch
from xai_core.nn.conv_ops import ConvGeometry

__all__ = ["depthwise_channels_last"]


@njit(cache=True, nogil=True, fastmath={"contract"}, error_model="numpy", boundscheck=False)
def _depthwise(x, weight, bias, geometry, bounds, out):  # pragma: no cover - compiled
    """``out (n, oh, ow, c)`` of ``x (n, h, w, c)``, ``weight (kh, kw, c)``, ``bias (c,)``.

    Each sum is clamped to ``bounds = (lo, hi)`` as it is stored (a NaN stays NaN).
    Returns whether every sum, before the clamp, was finite.
    """
    n, h, w, c = x.shape
    kh, kw = weight.shape[0], weight.shape[1]
    oh, ow = out.shape[1], out.shape[2]
    sh, sw, dh, dw, top, left = geometry
    lo, hi = bounds[0], bounds[1]
    acc = np.empty(c, x.dtype)
    seen = np.zeros(c, x.dtype)  # stays 0 unless a sum is not finite (then NaN)
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
                    seen[k] += v * 0
                    v = lo if v < lo else v
                    dst[k] = hi if v > hi else v
    for k in range(c):
        if seen[k] != 0:
            return False
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
        in ``x``'s dtype; None when a sum is not finite (a NaN or infinity the caller
        must spread the im2col way).
    """
    n, c, h, w = x.shape
    oh, ow = geom.out_hw((h, w))
    nhwc = x.transpose(0, 2, 3, 1)
    if not nhwc.flags.c_contiguous:
        copy = scratch.empty(nhwc.shape, x.dtype)
        np.copyto(copy, nhwc)
        nhwc = copy
    taps = np.ascontiguousarray(weight[:, 0].transpose(1, 2, 0), dtype=x.dtype)
    shift = np.zeros(c, x.dtype) if bias is None else np.ascontiguousarray(bias, dtype=x.dtype)
    (sh, sw), (dh, dw), (top, _, left, _) = geom.strides, geom.dilation, geom.pads
    geometry = np.array([sh, sw, dh, dw, top, left], np.int64)
    clamp = np.array((-np.inf, np.inf) if bounds is None else bounds, x.dtype)
    out = scratch.empty((n, oh, ow, c), x.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = _depthwise(nhwc, taps, shift, geometry, clamp, out)
    return out.transpose(0, 3, 1, 2) if finite else None
