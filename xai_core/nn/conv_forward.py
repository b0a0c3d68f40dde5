"""Forward-only convolutions in channel-major memory: the ``cpu`` backend's inference kernels.

When no gradient is asked for (no record), the ``cpu`` backend computes pointwise and
depthwise convolutions with these kernels instead of :mod:`xai_core.nn.conv_taps`. They
keep activations in *channel-major* memory, a C-contiguous ``(channels, n, height, width)``
array seen as an NCHW-shaped view, so that

- a **pointwise** convolution (1x1, no padding, ``groups = 1``, stride 1) is one matrix
  product ``weight (f, c) @ x (c, n * h * w)`` whose result is already channel-major (the
  bias then added in one pass); a channels-last input stays channels-last
  (``rows (n * h * w, c) @ weight.T``), so a chain of channels-last kernels is not
  transposed either;
- a **depthwise** convolution (``groups = channels``, one kernel per channel, any kernel,
  stride, dilation and padding) is a few stacked matrix products, one matrix per channel:
  each kernel row ``i`` is a banded (Toeplitz) ``(width, out_width)`` matrix ``T_i`` with
  the row's taps on its diagonals (stride, dilation and the left / right zero padding are
  in its band); the image rows kernel row ``i`` reads, ``(n * rows, width)``, times ``T_i``
  is one product per kernel row, and the output rows are sums of those products shifted by
  whole rows (a kernel row's product added to the output as one contiguous add, the rows
  that would cross an image's top or bottom edge zeroed: the top / bottom padding). The
  band multiplies zeros the im2col path never does, so the products do ``width / kw`` times
  the multiply-adds (counted, as every convolution here, as the im2col path's products), but
  run at matrix-product speed where a tap-by-tap sum makes one elementwise pass per tap.
  Small images (:data:`WHOLE_IMAGE`) are multiplied by one banded matrix of the whole
  image, ``(h * w, out_h * out_w)``, per channel instead;
- a ``groups = 1`` convolution of at most :data:`FEW_CHANNELS` input channels (an image
  input's first layer) is one product ``weight (f, c * kh * kw) @ im2col(x).T``: its column
  matrix is small, and a tap's product over so few channels would run far below speed.

Results equal the im2col path's to floating-point rounding: the band's extra terms are
exact zeros (``0 * x`` for finite ``x``); an output that is not finite is recomputed by
:mod:`xai_core.nn.conv_taps`, so a non-finite input spreads exactly as it does there.
"""

from __future__ import annotations

import functools

import numpy as np

from xai_core.nn import scratch
from xai_core.nn.conv_ops import ConvGeometry
from xai_core.nn.im2col import im2col

__all__ = ["forward_kind", "conv2d_forward", "channel_major"]


#: Up to this many input channels, a ``groups = 1`` convolution is one product of its im2col.
FEW_CHANNELS = 4


#: Up to this many (input pixels) x (output pixels), a depthwise convolution multiplies each
#: channel's images by one matrix of the whole image (a few products of tiny matrices cost
#: more than the one product's extra multiply-adds).
WHOLE_IMAGE = 2048


def forward_kind(x_shape, weight_shape, geom: ConvGeometry) -> str | None:
    """``"pointwise"``, ``"depthwise"``, ``"columns"`` or None: which forward-only kernel computes this convolution."""
    c, f = x_shape[1], weight_shape[0]
    if geom.kernel == (1, 1) and not any(geom.pads) and geom.groups == 1 and geom.strides == (1, 1):
        return "pointwise"
    if geom.groups == c == f > 1 and weight_shape[1] == 1:
        return "depthwise"
    if geom.groups == 1 and c <= FEW_CHANNELS:
        return "columns"
    return None


def channel_major(x: np.ndarray) -> np.ndarray:
    """The NCHW-shaped ``x`` as a C-contiguous (c, n, h, w) array (a view when its memory is so)."""
    xm = x.transpose(1, 0, 2, 3)
    if xm.flags.c_contiguous:
        return xm
    out = scratch.empty(xm.shape, x.dtype)
    np.copyto(out, xm)
    return out


def _pointwise(x, weight, bias):
    n, c, h, w = x.shape
    f = weight.shape[0]
    w2 = weight.reshape(f, c)
    nhwc = x.transpose(0, 2, 3, 1)
    if nhwc.flags.c_contiguous and c > 1:  # channels-last stays so: rows (pixels, c) @ w.T
        out = np.matmul(nhwc.reshape(-1, c), w2.T, out=scratch.empty((n * h * w, f), x.dtype))
        if bias is not None:
            out += bias
        return out.reshape(n, h, w, f).transpose(0, 3, 1, 2)
    cols = channel_major(x).reshape(c, -1)
    out = np.matmul(w2, cols, out=scratch.empty((f, n * h * w), x.dtype))
    if bias is not None:  # (a gemm accumulating into the bias runs slower than this pass)
        out += bias[:, None]
    return out.reshape(f, n, h, w).transpose(1, 0, 2, 3)


def _columns(x, weight, bias, geom):
    """``weight (f, c * kh * kw) @ im2col(x).T``: the column matrix of few channels is small."""
    n, f = x.shape[0], weight.shape[0]
    oh, ow = geom.out_hw(x.shape[2:])
    (kh, kw), pads = geom.kernel, geom.pads
    cols = im2col(x, kh, kw, geom.strides, pads, dilation=geom.dilation)  # column-major
    out = np.matmul(weight.reshape(f, -1), cols.T, out=scratch.empty((f, cols.shape[0]), x.dtype))
    if bias is not None:
        out += bias[:, None]
    return out.reshape(f, n, oh, ow).transpose(1, 0, 2, 3)


def _bands(weight: np.ndarray, w: int, ow: int, geom: ConvGeometry) -> np.ndarray:
    """(c, kh, w, ow): per channel and kernel row, the banded matrix of the row's taps."""
    c, _, kh, kw = weight.shape
    sw, dw, left = geom.strides[1], geom.dilation[1], geom.pads[2]
    bands = np.zeros((c, kh, w, ow), dtype=weight.dtype)
    cols = np.arange(ow)
    for j in range(kw):
        src = cols * sw + j * dw - left
        ok = (src >= 0) & (src < w)
        bands[:, :, src[ok], cols[ok]] = weight[:, 0, :, j, None]
    return bands


def _row_taps(h: int, oh: int, geom: ConvGeometry):
    """``(i, a, rows, shift, r0, r1)`` per kernel row ``i`` that reads any input row.

    Output row ``r`` of kernel row ``i`` reads input row ``r * sh + i * dh - top``: row
    ``r + shift`` of the ``rows`` input rows ``a::sh`` (stride phase ``a``); the output rows
    ``r0 <= r < r1`` read a real row, the others the zero padding. The kernel row that
    covers every output row (when one does) comes first.
    """
    (kh, _), (sh, _), (dh, _), top = geom.kernel, geom.strides, geom.dilation, geom.pads[0]
    taps = []
    for i in range(kh):
        shift, a = divmod(i * dh - top, sh)
        rows = len(range(a, h, sh))
        r0, r1 = max(0, -shift), min(oh, rows - shift)
        if r0 < r1:
            taps.append((i, a, rows, shift, r0, r1))
    taps.sort(key=lambda t: (t[4], -t[5]))  # a covering row first
    return taps


def _phase_rows(xm: np.ndarray, a: int, sh: int) -> np.ndarray:
    """The input rows ``a::sh`` of every image: (c, n * rows, w) when evenly spaced, else (c, n, rows, w)."""
    c, n, h, w = xm.shape
    src = xm[:, :, a::sh]
    if h % sh == 0 or n == 1:
        return src.reshape(c, -1, w)  # a view: the rows of all images are evenly spaced
    return src


def _add_shifted(out: np.ndarray, prod: np.ndarray, shift: int, r0: int, r1: int) -> None:
    """``out[:, :, r0:r1] += prod[:, :, r0 + shift : r1 + shift]`` as one contiguous add.

    Both are (c, n, oh, ow). The rows of ``prod`` no output row reads are zeroed, and the
    whole memory is added shifted by ``shift`` rows: an output row outside ``r0:r1`` then
    receives a zero of a neighbouring image (exact), and the add runs over contiguous
    memory instead of one short run per image.
    """
    oh, ow = out.shape[2:]
    prod[:, :, : r0 + shift] = 0
    prod[:, :, r1 + shift :] = 0
    flat_out, flat_prod = out.reshape(-1), prod.reshape(-1)
    lo, hi = r0 * ow, flat_out.size - (oh - r1) * ow
    flat_out[lo:hi] += flat_prod[lo + shift * ow : hi + shift * ow]


@functools.lru_cache(maxsize=32)
def _selection(kernel, hw, out_hw, strides, dilation, pads, dtype) -> np.ndarray:
    """(kh * kw, h * w * oh * ow) zeros and ones: which (input, output) pixel pairs each tap joins."""
    (kh, kw), (h, w), (oh, ow) = kernel, hw, out_hw
    (sh, sw), (dh, dw), (top, _, left, _) = strides, dilation, pads
    i, j, ro, co = np.ix_(np.arange(kh), np.arange(kw), np.arange(oh), np.arange(ow))
    ri, ci = ro * sh + i * dh - top, co * sw + j * dw - left
    ok = (ri >= 0) & (ri < h) & (ci >= 0) & (ci < w)
    at = ((ri * w + ci) * (oh * ow) + ro * ow + co)[ok]
    tap = np.broadcast_to(i * kw + j, ok.shape)[ok]
    sel = np.zeros((kh * kw, h * w * oh * ow), dtype=dtype)
    sel[tap, at] = 1
    sel.flags.writeable = False
    return sel


def _whole_band(weight: np.ndarray, hw, out_hw, geom: ConvGeometry) -> np.ndarray:
    """(c, h * w, oh * ow): per channel, the convolution of a whole image as one matrix.

    The taps' weights times the (cached) selection of the pixel pairs each tap joins: every
    entry is one weight or zero, exactly.
    """
    c, _, kh, kw = weight.shape
    sel = _selection(
        (kh, kw),
        tuple(hw),
        tuple(out_hw),
        tuple(geom.strides),
        tuple(geom.dilation),
        tuple(geom.pads),
        weight.dtype,
    )
    band = np.matmul(
        weight.reshape(c, kh * kw), sel, out=scratch.empty((c, sel.shape[1]), weight.dtype)
    )
    return band.reshape(c, hw[0] * hw[1], -1)


def _depthwise(x, weight, bias, geom):
    n, c, h, w = x.shape
    oh, ow = geom.out_hw((h, w))
    xm = channel_major(x)
    if h * w * oh * ow <= WHOLE_IMAGE:  # small images: one product per channel
        band = _whole_band(weight, (h, w), (oh, ow), geom)
        out = np.matmul(xm.reshape(c, n, h * w), band, out=scratch.empty((c, n, oh * ow), x.dtype))
        if bias is not None:
            out += bias.reshape(c, 1, 1)
        return out.reshape(c, n, oh, ow).transpose(1, 0, 2, 3)
    bands = _bands(weight, w, ow, geom)
    sh = geom.strides[0]
    taps = _row_taps(h, oh, geom)
    out = scratch.empty((c, n, oh, ow), x.dtype)
    if not taps or taps[0][4:] != (0, oh):
        out.fill(0)
    for t, (i, a, rows, shift, r0, r1) in enumerate(taps):
        src = _phase_rows(xm, a, sh)
        band = bands[:, i] if src.ndim == 3 else bands[:, i, None]
        direct = t == 0 and (r0, r1) == (0, oh) and rows == oh and shift == 0
        if direct:  # the product is the output's rows themselves
            np.matmul(src, band, out=out.reshape(src.shape[:-1] + (ow,)))
            continue
        prod = np.matmul(src, band, out=scratch.empty(src.shape[:-1] + (ow,), x.dtype))
        prod = prod.reshape(c, n, rows, ow)
        if t == 0 and (r0, r1) == (0, oh):
            np.copyto(out, prod[:, :, r0 + shift : r1 + shift])
        elif rows == oh:
            _add_shifted(out, prod, shift, r0, r1)
        else:
            out[:, :, r0:r1] += prod[:, :, r0 + shift : r1 + shift]
        del prod  # its block is free for the next kernel row's product
    if bias is not None:
        out += bias.reshape(c, 1, 1, 1)
    return out.transpose(1, 0, 2, 3)


def _finite(y: np.ndarray) -> bool:
    """Whether every element of the NCHW-shaped view of channel-major ``y`` is finite.

    One BLAS dot of its memory with itself: a NaN or infinity makes it non-finite (as
    does a sum of squares beyond the float range, a false alarm that only costs time).
    """
    flat = y.transpose(1, 0, 2, 3).reshape(-1)
    return bool(np.isfinite(np.dot(flat, flat)))


def conv2d_forward(kind: str, x, weight, bias, geom: ConvGeometry):
    """The convolution of ``x`` by the forward-only kernel ``kind`` (see :func:`forward_kind`).

    Parameters
    ----------
    kind : {"pointwise", "depthwise", "columns"}
    x : ndarray of shape (n, channels, height, width)
        Any memory order.
    weight : ndarray of shape (filters, channels // groups, kh, kw)
    bias : ndarray of shape (filters,) or None
    geom : ConvGeometry

    Returns
    -------
    ndarray of shape (n, filters, out_height, out_width)
        An NCHW-shaped view of channel-major memory, or None when an output is not finite
        (the caller then computes the convolution another way).
    """
    if kind == "pointwise":
        return _pointwise(x, weight, bias)
    if kind == "columns":
        return _columns(x, weight, bias, geom)
    with np.errstate(invalid="ignore", over="ignore"):  # a non-finite output is redone
        y = _depthwise(x, weight, bias, geom)
        return y if _finite(y) else None
