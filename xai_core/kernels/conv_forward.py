"""Forward-only convolutions: the ``cpu`` backend's inference kernels.

When no gradient is asked for (no record), the ``cpu`` backend computes pointwise,
depthwise and few-channel convolutions with these kernels instead of
:mod:`xai_core.kernels.conv_taps`. They keep activations in *channels-last* memory, a
C-contiguous ``(n, height, width, channels)`` array seen as an NCHW-shaped view, so that
no layer of a chain transposes:

- a **pointwise** convolution (1x1, no padding, ``groups = 1``, stride 1) is one matrix
  product ``rows (n * h * w, c) @ weight.T``, the bias then added in one pass (an input in
  channel-major memory, ``(c, n, h, w)``, is computed as ``weight @ x`` and stays so);
- a **depthwise** convolution (``groups = channels``, one kernel per channel, any kernel,
  stride, dilation and padding) is the compiled channels-last loop of
  :mod:`xai_core.kernels.depthwise`: each tap one multiply-add across the channels;
- a ``groups = 1`` convolution of at most :data:`FEW_CHANNELS` input channels (an image
  input's first layer) is one product ``im2col(x) @ weight.T``: its column matrix is
  small, and a tap's product over so few channels would run far below speed.

Each kernel can also clamp its outputs as it makes them (``bounds``): the activation
(ReLU, ReLU6, Clip) that follows a convolution at inference, fused into its epilogue; or
add the other input of a residual connection's ``Add`` (``residual``), in the same pass as
the bias after a product.
Results equal the im2col path's to floating-point rounding, NaN and infinity of the input
spreading as there; a depthwise convolution by a non-finite weight or bias is recomputed
by :mod:`xai_core.kernels.conv_taps`, where it spreads through the padding too.
"""

from __future__ import annotations

import numpy as np

from xai_core.kernels import scratch
from xai_core.kernels.conv_ops import ConvGeometry
from xai_core.kernels.depthwise import depthwise_channels_last
from xai_core.kernels.epilogue import bias_clamp
from xai_core.kernels.im2col import im2col

__all__ = ["forward_kind", "conv2d_forward", "channel_major"]


#: Up to this many input channels, a ``groups = 1`` convolution is one product of its im2col.
FEW_CHANNELS = 4


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


def _rows(residual, n_rows, channels_last: bool):
    """``residual`` (NCHW-shaped) as the (pixels, f) or (f, pixels) matrix of the output, or None.

    None when its memory is not in that order (it is then added by numpy afterwards).
    """
    if residual is None:
        return None
    order = (0, 2, 3, 1) if channels_last else (1, 0, 2, 3)
    view = residual.transpose(order)
    return view.reshape(n_rows, -1) if view.flags.c_contiguous else None


def _finish(out, bias, bounds, residual, nchw, channels_last: bool):
    """The epilogue of a product ``out``: bias, residual and clamp; returns the NCHW view ``nchw``."""
    rows = _rows(residual, out.shape[0], channels_last)
    bias_clamp(out, bias, bounds, axis=1 if channels_last else 0, residual=rows)
    if residual is not None and rows is None:  # another memory order: the same sums by numpy
        np.add(nchw, residual, out=nchw)
    return nchw


def _pointwise(x, weight, bias, bounds, residual):
    n, c, h, w = x.shape
    f = weight.shape[0]
    w2 = weight.reshape(f, c)
    nhwc = x.transpose(0, 2, 3, 1)
    if nhwc.flags.c_contiguous and c > 1:  # channels-last stays so: rows (pixels, c) @ w.T
        out = np.matmul(nhwc.reshape(-1, c), w2.T, out=scratch.empty((n * h * w, f), x.dtype))
        nchw = out.reshape(n, h, w, f).transpose(0, 3, 1, 2)
        return _finish(out, bias, bounds, residual, nchw, channels_last=True)
    cols = channel_major(x).reshape(c, -1)
    out = np.matmul(w2, cols, out=scratch.empty((f, n * h * w), x.dtype))
    nchw = out.reshape(f, n, h, w).transpose(1, 0, 2, 3)
    # the bias after the product: a gemm accumulating into it runs slower
    return _finish(out, bias, bounds, residual, nchw, channels_last=False)


def _columns(x, weight, bias, geom, bounds, residual):
    """``im2col(x) @ weight (f, c * kh * kw).T``: the column matrix of few channels is small."""
    n, f = x.shape[0], weight.shape[0]
    oh, ow = geom.out_hw(x.shape[2:])
    (kh, kw), pads = geom.kernel, geom.pads
    cols = im2col(x, kh, kw, geom.strides, pads, dilation=geom.dilation)  # column-major
    out = np.matmul(cols, weight.reshape(f, -1).T, out=scratch.empty((cols.shape[0], f), x.dtype))
    nchw = out.reshape(n, oh, ow, f).transpose(0, 3, 1, 2)
    return _finish(out, bias, bounds, residual, nchw, channels_last=True)


def conv2d_forward(kind: str, x, weight, bias, geom: ConvGeometry, bounds=None, residual=None):
    """The convolution of ``x`` by the forward-only kernel ``kind`` (see :func:`forward_kind`).

    The arguments are :func:`xai_core.kernels.conv_taps.conv2d_taps`' (``x`` in any memory
    order); ``bounds = (lo, hi)``, when given, clamps every output as it is made (the
    epilogue of a following ReLU, ReLU6 or Clip); ``residual``, an array of the output's
    shape, is added after the bias (the epilogue of a following ``Add``; not with
    ``bounds``). Returns the (n, filters, out_height, out_width) output, an NCHW-shaped
    view of channels-last or channel-major memory, or None when a depthwise weight or bias
    is not finite (the caller then computes the convolution another way, with neither).
    """
    if kind == "pointwise":
        return _pointwise(x, weight, bias, bounds, residual)
    if kind == "columns":
        return _columns(x, weight, bias, geom, bounds, residual)
    y = depthwise_channels_last(x, weight, bias, geom, bounds)
    if y is not None and residual is not None:  # after the compiled loop, by numpy
        np.add(y, residual, out=y)
    return y
