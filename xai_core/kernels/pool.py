"""Max pooling in channels-last memory: window maxima and their gradient in one compiled pass.

The activations a convolution of :mod:`xai_core.kernels.conv_taps` returns are NCHW-shaped
views of channels-last memory. These kernels read such an array as its (n, h, w, c)
channels-last memory (copied once when its memory is in another order) and make every
result in that order too: one loop over the outputs, the channels innermost, visiting
each window's cells in the input itself. Cells of the padding (and those ``ceil_mode``
adds) are skipped, which is what padding with ``-inf`` does for a finite input; no padded
copy, window array or per-tap mask is made.

The gradient goes to the first maximal element of each window in row-major window order
(as :class:`~xai_core.nn.MaxPool2D` documents, and as PyTorch does): :func:`max_pool2d`
records, per output, the tap ``i * kw + j`` of that element, and :func:`max_pool2d_vjp`
adds each output's gradient at its tap. As ``np.maximum`` does, a window holding NaN has
the maximum NaN (its tap the first NaN's, as torch's). Compiled by numba on first use and
cached on disk.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from xai_core.kernels import scratch

__all__ = ["max_pool2d", "max_pool2d_vjp"]

_JIT = {"cache": True, "nogil": True, "error_model": "numpy", "boundscheck": False}


@njit(**_JIT)
def _forward(x, kh, kw, sh, sw, top, left, y, tap):  # pragma: no cover - compiled
    """``y`` (n, oh, ow, c): each window's maximum; ``tap``: where it first is."""
    n, h, w, c = x.shape
    oh, ow = y.shape[1], y.shape[2]
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                yo, to = y[b, i, j], tap[b, i, j]
                first = True
                for di in range(kh):
                    r = i * sh - top + di
                    if r < 0 or r >= h:
                        continue
                    for dj in range(kw):
                        s = j * sw - left + dj
                        if s < 0 or s >= w:
                            continue
                        xi, t = x[b, r, s], di * kw + dj
                        if first:
                            for k in range(c):
                                yo[k] = xi[k]
                                to[k] = t
                            first = False
                            continue
                        for k in range(c):
                            v = xi[k]
                            if v > yo[k]:
                                yo[k] = v
                                to[k] = t
                            elif v != v and yo[k] == yo[k]:  # NaN: the maximum is NaN
                                yo[k] = v
                                to[k] = t


@njit(**_JIT)
def _backward(g, tap, kw, sh, sw, top, left, gx):  # pragma: no cover - compiled
    """``gx`` (n, h, w, c), zeroed: each output's gradient added at its tap."""
    n, h, w, c = gx.shape
    oh, ow = g.shape[1], g.shape[2]
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                go, to = g[b, i, j], tap[b, i, j]
                for k in range(c):
                    t = to[k]
                    r = i * sh - top + t // kw
                    s = j * sw - left + t % kw
                    gx[b, r, s, k] += go[k]


def _channels_last(a: np.ndarray) -> np.ndarray:
    """The NCHW-shaped ``a`` as C-contiguous (n, h, w, c) memory (a view when it is already)."""
    nhwc = a.transpose(0, 2, 3, 1)
    return nhwc if nhwc.flags.c_contiguous else np.ascontiguousarray(nhwc)


def _tap_dtype(pool: tuple[int, int]) -> np.dtype:
    return np.dtype(np.uint8 if pool[0] * pool[1] <= 256 else np.intp)


def max_pool2d(
    x: np.ndarray,
    pool: tuple[int, int],
    strides: tuple[int, int],
    pads: tuple[int, int, int, int],
    out_hw: tuple[int, int],
) -> tuple[np.ndarray, np.ndarray]:
    """The maximum of each (kh, kw) window of each channel, and where it is.

    Parameters
    ----------
    x : ndarray of shape (n, channels, height, width)
        Float32 or float64, any memory order.
    pool, strides : (int, int)
    pads : (top, bottom, left, right)
        Rows and columns of padding (with ``ceil_mode``, the extra cells included); every
        window must hold at least one cell of the input.
    out_hw : (int, int)
        The output's height and width.

    Returns
    -------
    y : ndarray of shape (n, channels, out_height, out_width)
        A view of channels-last memory.
    tap : ndarray of shape (n, out_height, out_width, channels)
        The index ``i * kw + j`` of the first maximal element of each window, uint8 for
        windows of at most 256 elements (for :func:`max_pool2d_vjp`).
    """
    xl = _channels_last(x)
    n, c = xl.shape[0], xl.shape[3]
    y = scratch.empty((n, *out_hw, c), xl.dtype)
    tap = np.empty(y.shape, dtype=_tap_dtype(pool))
    _forward(xl, *pool, *strides, pads[0], pads[2], y, tap)
    return y.transpose(0, 3, 1, 2), tap


def max_pool2d_vjp(
    grad: np.ndarray,
    tap: np.ndarray,
    x_shape: tuple[int, int, int, int],
    pool: tuple[int, int],
    strides: tuple[int, int],
    pads: tuple[int, int, int, int],
) -> np.ndarray:
    """The gradient of :func:`max_pool2d` with respect to its input.

    Parameters
    ----------
    grad : ndarray of shape (n, channels, out_height, out_width)
        Any memory order.
    tap : ndarray of shape (n, out_height, out_width, channels)
        What :func:`max_pool2d` returned.
    x_shape : (n, channels, height, width)
    pool, strides, pads
        As for :func:`max_pool2d`.

    Returns
    -------
    ndarray of shape ``x_shape``
        A view of channels-last memory; overlapping windows add up.
    """
    n, c, h, w = x_shape
    g = _channels_last(grad)
    gx = scratch.zeros((n, h, w, c), g.dtype)
    _backward(g, tap, pool[1], *strides, pads[0], pads[2], gx)
    return gx.transpose(0, 3, 1, 2)
