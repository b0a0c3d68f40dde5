"""Lowering convolutions and pools to matrices: ``im2col`` and its adjoint ``col2im``.

A convolution over a batch becomes *one* matrix product: every receptive field of every
image becomes a row of the column matrix, and the kernels become a matrix with one column
per output channel. Pools reuse the same windows.

Layout is NCHW: a batch has shape (n_samples, channels, height, width).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from xai_core.errors import ShapeError, ValidationError
from xai_core.kernels import scratch

__all__ = [
    "as_pair",
    "as_pads",
    "same_pads",
    "conv_output_size",
    "im2col",
    "col2im",
    "windows",
    "add_windows",
    "accumulate",
    "offsets",
]

#: Bytes of padded image that :func:`col2im` accumulates into at a time (about an L2 cache).
_BLOCK_BYTES = 1 << 18


def as_pair(value, name: str, low: int = 1) -> tuple[int, int]:
    """``(v, v)`` for an int ``v``, or a validated pair of ints ``>= low``."""
    vals = tuple(value) if isinstance(value, (tuple, list)) else (value, value)
    if len(vals) != 2 or any(
        isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low for v in vals
    ):
        raise ValidationError(
            f"{name} must be an integer >= {low} or a pair of them; got {value!r}."
        )
    return int(vals[0]), int(vals[1])


def as_pads(padding) -> tuple[int, int, int, int]:
    """``(top, bottom, left, right)`` from an int, ``(rows, cols)`` or a 4-tuple of ints >= 0."""
    vals = tuple(padding) if isinstance(padding, (tuple, list)) else (padding,)
    if len(vals) not in (1, 2, 4) or any(
        isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0 for v in vals
    ):
        raise ValidationError(
            "padding must be an integer >= 0, (rows, cols) or (top, bottom, left, right); "
            f"got {padding!r}."
        )
    if len(vals) == 1:
        return (int(vals[0]),) * 4
    if len(vals) == 2:
        return int(vals[0]), int(vals[0]), int(vals[1]), int(vals[1])
    return tuple(int(v) for v in vals)  # type: ignore[return-value]


def same_pads(size: tuple[int, int], kernel, stride, dilation=1) -> tuple[int, int, int, int]:
    """TensorFlow's (and ONNX's ``SAME_UPPER``) padding: output ``ceil(size / stride)``,
    the odd pixel at the bottom / right."""
    pads = []
    for n, k, s, d in zip(
        size, as_pair(kernel, "kernel"), as_pair(stride, "stride"), as_pair(dilation, "dilation")
    ):
        total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
        pads += [total // 2, total - total // 2]
    return tuple(pads)  # type: ignore[return-value]


def conv_output_size(size: int, kernel: int, stride: int, padding, dilation: int = 1) -> int:
    """Output length of a convolution or pool along one axis.

    Parameters
    ----------
    size : int
        Input length (height or width).
    kernel, stride : int
        Window length and step.
    padding : int or (int, int)
        Zero padding on each side, or ``(before, after)``.
    dilation : int, default=1
        Spacing of the window's taps.

    Returns
    -------
    int
        ``(size + before + after - dilation * (kernel - 1) - 1) // stride + 1``; at least
        1, or a :class:`ShapeError`.
    """
    before, after = (padding, padding) if isinstance(padding, (int, np.integer)) else padding
    span = dilation * (kernel - 1) + 1
    out = (size + before + after - span) // stride + 1
    if size + before + after < span or out < 1:
        raise ShapeError(
            f"a window of {kernel} (dilation {dilation}) with padding {padding} does not fit an "
            f"input of length {size}."
        )
    return out


def _geometry(kh, kw, stride, padding, dilation):
    for name, value in (("kh", kh), ("kw", kw)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValidationError(f"{name} must be an integer >= 1; got {value!r}.")
    return as_pair(stride, "stride"), as_pads(padding), as_pair(dilation, "dilation")


def _out_hw(x_shape, kh, kw, strides, pads, dilation) -> tuple[int, int]:
    h, w = x_shape[2], x_shape[3]
    return (
        conv_output_size(h, kh, strides[0], pads[:2], dilation[0]),
        conv_output_size(w, kw, strides[1], pads[2:], dilation[1]),
    )


def windows(
    x: np.ndarray, kh: int, kw: int, stride=1, padding=0, fill: float = 0.0, dilation=1
) -> np.ndarray:
    """Every (kh, kw) window of a batch of images, as a strided view where possible.

    Parameters
    ----------
    x : ndarray of shape (n_samples, channels, height, width)
    kh, kw : int
        Window height and width (taps).
    stride : int or (int, int), default=1
    padding : int, (rows, cols) or (top, bottom, left, right), default=0
        Rows and columns of ``fill`` added.
    fill : float, default=0.0
        Padding value (``-inf`` for max pooling).
    dilation : int or (int, int), default=1

    Returns
    -------
    ndarray of shape (n_samples, channels, out_height, out_width, kh, kw)
    """
    strides, pads, dil = _geometry(kh, kw, stride, padding, dilation)
    if x.ndim != 4:
        raise ShapeError(
            f"x must have shape (n_samples, channels, height, width); got an array of shape {x.shape}."
        )
    oh, ow = _out_hw(x.shape, kh, kw, strides, pads, dil)
    x = _pad(x, pads, fill)
    span = (dil[0] * (kh - 1) + 1, dil[1] * (kw - 1) + 1)
    view = sliding_window_view(x, span, axis=(2, 3))[..., :: dil[0], :: dil[1]]
    return view[
        :, :, : (oh - 1) * strides[0] + 1 : strides[0], : (ow - 1) * strides[1] + 1 : strides[1]
    ]


def _pad(x: np.ndarray, padding, fill: float = 0.0) -> np.ndarray:
    pads = as_pads(padding)
    if not any(pads):
        return x
    t, b, left, r = pads
    return np.pad(x, ((0, 0), (0, 0), (t, b), (left, r)), constant_values=fill)


def offsets(kh: int, kw: int, oh: int, ow: int, stride, dilation=1):
    """Yield ``(i, j, index)``: for each kernel offset, the strided slice of the padded image it reads.

    ``x_padded[index]`` has shape (n_samples, channels, out_height, out_width) and holds
    element ``(i, j)`` of every window. Loops over the kh * kw offsets, never over samples.
    """
    (sh, sw), (dh, dw) = as_pair(stride, "stride"), as_pair(dilation, "dilation")
    rows, cols = (oh - 1) * sh + 1, (ow - 1) * sw + 1
    for i in range(kh):
        for j in range(kw):
            yield (
                i,
                j,
                (
                    slice(None),
                    slice(None),
                    slice(i * dh, i * dh + rows, sh),
                    slice(j * dw, j * dw + cols, sw),
                ),
            )


def im2col(
    x: np.ndarray, kh: int, kw: int, stride=1, padding=0, fill: float = 0.0, dilation=1
) -> np.ndarray:
    """Lower a batch of images to the column matrix of a convolution.

    Row ``(i * out_height + r) * out_width + c`` holds the receptive field of output
    pixel ``(r, c)`` of image ``i``, flattened in (channel, kernel row, kernel column)
    order, which is the order of ``Conv2D.weight.reshape(out_channels, -1)``. The
    convolution is then ``im2col(x, ...) @ weight.reshape(out_channels, -1).T``.

    Parameters
    ----------
    x : ndarray of shape (n_samples, channels, height, width)
    kh, kw : int
        Kernel height and width.
    stride : int or (int, int), default=1
    padding : int, (rows, cols) or (top, bottom, left, right), default=0
        Rows and columns of ``fill`` added.
    fill : float, default=0.0
        Padding value (an int8 model pads with its input zero point).
    dilation : int or (int, int), default=1

    Returns
    -------
    ndarray of shape (n_samples * out_height * out_width, channels * kh * kw)
        Same dtype as ``x``; column-major (Fortran order).
    """
    x = np.asarray(x)
    strides, pads, dil = _geometry(kh, kw, stride, padding, dilation)
    if x.ndim != 4:
        raise ShapeError(
            f"x must have shape (n_samples, channels, height, width); got an array of shape {x.shape}."
        )
    n, c = x.shape[:2]
    oh, ow = _out_hw(x.shape, kh, kw, strides, pads, dil)
    xp = _pad(x, pads, fill)
    # Built as (channels, kh, kw, n, oh, ow) so each offset is one block copy; returned as its
    # transpose, a column-major (n * oh * ow, c * kh * kw) matrix that BLAS reads without a copy.
    cols = scratch.empty((c, kh, kw, n, oh, ow), x.dtype)
    for i, j, index in offsets(kh, kw, oh, ow, strides, dil):
        cols[:, i, j] = xp[index].transpose(1, 0, 2, 3)
    return cols.reshape(c * kh * kw, n * oh * ow).T


def accumulate(
    piece, x_shape: tuple[int, ...], kh: int, kw: int, stride, padding, dtype, dilation=1
) -> np.ndarray:
    """Sum per-offset window values back onto the image: the adjoint of reading windows.

    Parameters
    ----------
    piece : callable
        ``piece(i, j)`` returns an array of shape (n_samples, channels, out_height,
        out_width): what element ``(i, j)`` of every window contributes.
    x_shape : tuple of int
        ``(n_samples, channels, height, width)`` of the original (unpadded) images.
    kh, kw, stride, padding, dilation
        As for :func:`windows`.
    dtype : numpy dtype

    Returns
    -------
    ndarray of shape ``x_shape``
        Overlapping windows add up; padding is cropped away.
    """
    strides, pads, dil = _geometry(kh, kw, stride, padding, dilation)
    n, c, h, w = x_shape
    oh, ow = _out_hw(x_shape, kh, kw, strides, pads, dil)
    t, b, left, r = pads
    out = np.zeros((n, c, h + t + b, w + left + r), dtype=dtype)
    for i, j, index in offsets(kh, kw, oh, ow, strides, dil):
        out[index] += piece(i, j)
    if any(pads):
        out = out[:, :, t : t + h, left : left + w]
    return out


def add_windows(
    cols: np.ndarray, x_shape: tuple[int, ...], stride=1, padding=0, dilation=1
) -> np.ndarray:
    """Sum window values back onto the image they came from: the adjoint of :func:`windows`.

    Parameters
    ----------
    cols : ndarray of shape (n_samples, channels, out_height, out_width, kh, kw)
    x_shape : tuple of int
        ``(n_samples, channels, height, width)`` of the original (unpadded) images.
    stride, padding, dilation
        As for :func:`windows`.

    Returns
    -------
    ndarray of shape ``x_shape``, the dtype of ``cols``
    """
    kh, kw = cols.shape[4:]
    return accumulate(
        lambda i, j: cols[..., i, j], x_shape, kh, kw, stride, padding, cols.dtype, dilation
    )


def col2im(
    cols: np.ndarray, x_shape: tuple[int, ...], kh: int, kw: int, stride=1, padding=0, dilation=1
) -> np.ndarray:
    """Adjoint of :func:`im2col`: add every row of the column matrix back to its window.

    ``col2im(g, ...)`` is the gradient of ``sum(g * im2col(x, ...))`` with respect to ``x``,
    which is how a convolution's input gradient is formed.

    Parameters
    ----------
    cols : ndarray of shape (n_samples * out_height * out_width, channels * kh * kw)
    x_shape : tuple of int
        ``(n_samples, channels, height, width)``.
    kh, kw, stride, padding, dilation
        As given to :func:`im2col`.

    Returns
    -------
    ndarray of shape ``x_shape``
    """
    strides, pads, dil = _geometry(kh, kw, stride, padding, dilation)
    n, c = x_shape[:2]
    oh, ow = _out_hw(x_shape, kh, kw, strides, pads, dil)
    expected = (n * oh * ow, c * kh * kw)
    if cols.shape != expected:
        raise ShapeError(
            f"cols must have shape {expected} for x_shape {tuple(x_shape)}; got {cols.shape}."
        )
    # Rows of ``cols`` are (image, pixel) and columns (channel, tap): the taps of one pixel
    # sit side by side, so adding offset (i, j) into a channels-last image reads ``cols``
    # almost contiguously (stride kh * kw), where a channels-first target would read it
    # with stride channels * kh * kw. Images go in blocks small enough for the block of the
    # padded target to stay in cache over the kh * kw passes; the sum runs over offsets in
    # the order of :func:`accumulate`, so the result is the same to the bit.
    t, b, left, r = pads
    hp, wp = x_shape[2] + t + b, x_shape[3] + left + r
    six = cols.reshape(n, oh, ow, c, kh, kw)
    out = scratch.zeros((n, hp, wp, c), cols.dtype)
    step = max(1, _BLOCK_BYTES // (hp * wp * c * out.itemsize))
    taps = [(i, j, index[2:]) for i, j, index in offsets(kh, kw, oh, ow, strides, dil)]
    for start in range(0, n, step):
        block, part = out[start : start + step], six[start : start + step]
        for i, j, (rows, columns) in taps:
            block[:, rows, columns] += part[..., i, j]
    out = out[:, t : t + x_shape[2], left : left + x_shape[3]]
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2))
