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

__all__ = [
    "conv_output_size",
    "im2col",
    "col2im",
    "windows",
    "add_windows",
    "accumulate",
    "offsets",
]


def conv_output_size(size: int, kernel: int, stride: int, padding: int) -> int:
    """Output length of a convolution or pool along one axis.

    Parameters
    ----------
    size : int
        Input length (height or width).
    kernel, stride, padding : int
        Window length, step and zero padding on each side.

    Returns
    -------
    int
        ``(size + 2 * padding - kernel) // stride + 1``; at least 1, or a :class:`ShapeError`.
    """
    out = (size + 2 * padding - kernel) // stride + 1
    if size + 2 * padding < kernel or out < 1:
        raise ShapeError(
            f"a window of {kernel} with padding {padding} does not fit an input of length {size}."
        )
    return out


def _check_geometry(kh: int, kw: int, stride: int, padding: int) -> None:
    for name, value, low in (
        ("kh", kh, 1),
        ("kw", kw, 1),
        ("stride", stride, 1),
        ("padding", padding, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValidationError(f"{name} must be an integer >= {low}; got {value!r}.")


def windows(
    x: np.ndarray, kh: int, kw: int, stride: int = 1, padding: int = 0, fill: float = 0.0
) -> np.ndarray:
    """Every (kh, kw) window of a batch of images, as a strided view where possible.

    Parameters
    ----------
    x : ndarray of shape (n_samples, channels, height, width)
    kh, kw : int
        Window height and width.
    stride : int, default=1
    padding : int, default=0
        Rows and columns of ``fill`` added on each side.
    fill : float, default=0.0
        Padding value (``-inf`` for max pooling).

    Returns
    -------
    ndarray of shape (n_samples, channels, out_height, out_width, kh, kw)
    """
    _check_geometry(kh, kw, stride, padding)
    if x.ndim != 4:
        raise ShapeError(
            f"x must have shape (n_samples, channels, height, width); got an array of shape {x.shape}."
        )
    oh = conv_output_size(x.shape[2], kh, stride, padding)
    ow = conv_output_size(x.shape[3], kw, stride, padding)
    x = _pad(x, padding, fill)
    view = sliding_window_view(x, (kh, kw), axis=(2, 3))
    return view[:, :, : (oh - 1) * stride + 1 : stride, : (ow - 1) * stride + 1 : stride]


def _pad(x: np.ndarray, padding: int, fill: float = 0.0) -> np.ndarray:
    if not padding:
        return x
    return np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)), constant_values=fill)


def offsets(kh: int, kw: int, oh: int, ow: int, stride: int):
    """Yield ``(i, j, index)``: for each kernel offset, the strided slice of the padded image it reads.

    ``x_padded[index]`` has shape (n_samples, channels, out_height, out_width) and holds
    element ``(i, j)`` of every window. Loops over the kh * kw offsets, never over samples.
    """
    rows, cols = (oh - 1) * stride + 1, (ow - 1) * stride + 1
    for i in range(kh):
        for j in range(kw):
            yield (
                i,
                j,
                (slice(None), slice(None), slice(i, i + rows, stride), slice(j, j + cols, stride)),
            )


def im2col(
    x: np.ndarray, kh: int, kw: int, stride: int = 1, padding: int = 0, fill: float = 0.0
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
    stride : int, default=1
    padding : int, default=0
        Rows and columns of ``fill`` added on each side.
    fill : float, default=0.0
        Padding value (an int8 model pads with its input zero point).

    Returns
    -------
    ndarray of shape (n_samples * out_height * out_width, channels * kh * kw)
        Same dtype as ``x``; column-major (Fortran order).
    """
    x = np.asarray(x)
    _check_geometry(kh, kw, stride, padding)
    if x.ndim != 4:
        raise ShapeError(
            f"x must have shape (n_samples, channels, height, width); got an array of shape {x.shape}."
        )
    n, c, h, w = x.shape
    oh = conv_output_size(h, kh, stride, padding)
    ow = conv_output_size(w, kw, stride, padding)
    xp = _pad(x, padding, fill)
    # Built as (channels, kh, kw, n, oh, ow) so each offset is one block copy; returned as its
    # transpose, a column-major (n * oh * ow, c * kh * kw) matrix that BLAS reads without a copy.
    cols = np.empty((c, kh, kw, n, oh, ow), dtype=x.dtype)
    for i, j, index in offsets(kh, kw, oh, ow, stride):
        cols[:, i, j] = xp[index].transpose(1, 0, 2, 3)
    return cols.reshape(c * kh * kw, n * oh * ow).T


def accumulate(
    piece, x_shape: tuple[int, ...], kh: int, kw: int, stride: int, padding: int, dtype
) -> np.ndarray:
    """Sum per-offset window values back onto the image: the adjoint of reading windows.

    Parameters
    ----------
    piece : callable
        ``piece(i, j)`` returns an array of shape (n_samples, channels, out_height,
        out_width): what element ``(i, j)`` of every window contributes.
    x_shape : tuple of int
        ``(n_samples, channels, height, width)`` of the original (unpadded) images.
    kh, kw, stride, padding : int
    dtype : numpy dtype

    Returns
    -------
    ndarray of shape ``x_shape``
        Overlapping windows add up; padding is cropped away.
    """
    n, c, h, w = x_shape
    oh = conv_output_size(h, kh, stride, padding)
    ow = conv_output_size(w, kw, stride, padding)
    out = np.zeros((n, c, h + 2 * padding, w + 2 * padding), dtype=dtype)
    for i, j, index in offsets(kh, kw, oh, ow, stride):
        out[index] += piece(i, j)
    if padding:
        out = out[:, :, padding : padding + h, padding : padding + w]
    return out


def add_windows(
    cols: np.ndarray, x_shape: tuple[int, ...], stride: int = 1, padding: int = 0
) -> np.ndarray:
    """Sum window values back onto the image they came from: the adjoint of :func:`windows`.

    Parameters
    ----------
    cols : ndarray of shape (n_samples, channels, out_height, out_width, kh, kw)
    x_shape : tuple of int
        ``(n_samples, channels, height, width)`` of the original (unpadded) images.
    stride, padding : int

    Returns
    -------
    ndarray of shape ``x_shape``, the dtype of ``cols``
    """
    kh, kw = cols.shape[4:]
    return accumulate(lambda i, j: cols[..., i, j], x_shape, kh, kw, stride, padding, cols.dtype)


def col2im(
    cols: np.ndarray, x_shape: tuple[int, ...], kh: int, kw: int, stride: int = 1, padding: int = 0
) -> np.ndarray:
    """Adjoint of :func:`im2col`: add every row of the column matrix back to its window.

    ``col2im(g, ...)`` is the gradient of ``sum(g * im2col(x, ...))`` with respect to ``x``,
    which is how a convolution's input gradient is formed.

    Parameters
    ----------
    cols : ndarray of shape (n_samples * out_height * out_width, channels * kh * kw)
    x_shape : tuple of int
        ``(n_samples, channels, height, width)``.
    kh, kw, stride, padding : int
        As given to :func:`im2col`.

    Returns
    -------
    ndarray of shape ``x_shape``
    """
    _check_geometry(kh, kw, stride, padding)
    n, c, h, w = x_shape
    oh = conv_output_size(h, kh, stride, padding)
    ow = conv_output_size(w, kw, stride, padding)
    expected = (n * oh * ow, c * kh * kw)
    if cols.shape != expected:
        raise ShapeError(
            f"cols must have shape {expected} for x_shape {tuple(x_shape)}; got {cols.shape}."
        )
    six = cols.reshape(n, oh, ow, c, kh, kw).transpose(0, 3, 1, 2, 4, 5)
    return add_windows(six, x_shape, stride, padding)
