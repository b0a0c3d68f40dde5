"""A convolution lowered to a backend's products: the im2col path every backend runs by default.

:meth:`Backend.conv2d <xai_core.backends.base.Backend.conv2d>` and
:meth:`~xai_core.backends.base.Backend.conv2d_vjp` default to :func:`conv2d_im2col` and
:func:`conv2d_im2col_vjp`: the batch is lowered by :func:`~xai_core.kernels.im2col.im2col` to one column
matrix, multiplied by the kernels in one ``backend.matmul`` (or, for ``groups > 1``, one
``backend.batched_matmul`` of the groups' blocks), and the input gradient is added back by
:func:`~xai_core.kernels.im2col.col2im`. A simulated backend therefore sees, and counts, exactly these
products. Arrays are NCHW-shaped (``(n, channels, height, width)``); the weights are
``(filters, in_channels / groups, kh, kw)``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from xai_core.kernels.im2col import col2im, conv_output_size, im2col

__all__ = [
    "ConvGeometry",
    "conv2d_im2col",
    "conv2d_im2col_vjp",
    "conv_transpose2d_im2col",
    "conv_transpose2d_im2col_vjp",
    "add_channel_bias",
]


class ConvGeometry(NamedTuple):
    """How a convolution slides: kernel ``(kh, kw)``, strides, ``(top, bottom, left, right)``
    zero padding, dilation and groups."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]
    dilation: tuple[int, int]
    groups: int

    def out_hw(self, hw: tuple[int, int]) -> tuple[int, int]:
        """``(out_height, out_width)`` for an input of ``(height, width)``."""
        (kh, kw), (sh, sw), p, (dh, dw) = self.kernel, self.strides, self.pads, self.dilation
        return (
            conv_output_size(hw[0], kh, sh, p[:2], dh),
            conv_output_size(hw[1], kw, sw, p[2:], dw),
        )


def add_bias(y: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``y + b``, ``b`` broadcast from the last axis, in place when ``y`` owns its memory."""
    return np.add(y, b, out=y) if y.flags.writeable and y.flags.owndata else y + b


def add_channel_bias(y: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``y + b`` for y of shape (n, channels, pixels), in place when ``y`` is writable."""
    return add_bias(y, b[:, None])


def _group_cols(cols: np.ndarray, groups: int) -> np.ndarray:
    """The column matrix (rows, groups * k) as a stack (groups, rows, k), a view when it can be.

    :func:`~xai_core.kernels.im2col.im2col` returns a column-major matrix, whose transpose splits into
    the groups' blocks without a copy.
    """
    rows, width = cols.shape
    return cols.T.reshape(groups, width // groups, rows).transpose(0, 2, 1)


def _cols(x: np.ndarray, geom: ConvGeometry) -> np.ndarray:
    kh, kw = geom.kernel
    return im2col(x, kh, kw, geom.strides, geom.pads, dilation=geom.dilation)


def conv2d_im2col(
    backend: Any,
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    geom: ConvGeometry,
    record: dict | None,
) -> np.ndarray:
    """The convolution of ``x`` through ``backend.matmul`` / ``batched_matmul`` of its im2col.

    Parameters
    ----------
    backend : Backend
    x : ndarray of shape (n, channels, height, width)
    weight : ndarray of shape (filters, channels // groups, kh, kw)
    bias : ndarray of shape (filters,) or None
        Added with one ``backend.elementwise``.
    geom : ConvGeometry
    record : dict or None
        Filled with what :func:`conv2d_im2col_vjp` needs (the column matrix).

    Returns
    -------
    ndarray of shape (n, filters, out_height, out_width)
    """
    n = x.shape[0]
    cols = _cols(x, geom)
    f, g = weight.shape[0], geom.groups
    fg, kg = f // g, cols.shape[1] // g
    w = weight.reshape(f, -1)
    oh, ow = geom.out_hw(x.shape[2:])
    if record is not None:
        record["cols"], record["x_shape"] = cols, x.shape
    if g == 1:
        y = backend.matmul(cols, w.T)  # (n * oh * ow, filters): one row per pixel
        if bias is not None:
            y = backend.elementwise(add_bias, y, bias)
        # an NCHW view of the channels-last rows, as the cpu backend's products give
        return y.reshape(n, oh, ow, f).transpose(0, 3, 1, 2)
    y = backend.batched_matmul(_group_cols(cols, g), w.reshape(g, fg, kg).transpose(0, 2, 1))
    # (groups, n * oh * ow, filters / groups) -> contiguous (n, filters, oh * ow)
    y = np.ascontiguousarray(y.reshape(g, n, oh * ow, fg).transpose(1, 0, 3, 2))
    y = y.reshape(n, f, oh * ow)
    if bias is not None:
        y = backend.elementwise(add_channel_bias, y, bias)
    return y.reshape(n, f, oh, ow)


def conv2d_im2col_vjp(
    backend: Any,
    grad: np.ndarray,
    weight: np.ndarray,
    geom: ConvGeometry,
    record: dict,
    *,
    use_bias: bool,
    param_grads: bool = True,
    input_grad: bool = True,
) -> tuple[np.ndarray | None, dict[str, np.ndarray]]:
    """Gradients of :func:`conv2d_im2col` through the same backend's products.

    Parameters
    ----------
    backend : Backend
    grad : ndarray of shape (n, filters, out_height, out_width)
    weight : ndarray of shape (filters, channels // groups, kh, kw)
    geom : ConvGeometry
    record : dict
        Of the forward pass (its column matrix, or the input ``x`` a fast path kept).
    use_bias : bool
        Whether to return ``grads["bias"]``.
    param_grads, input_grad : bool, default=True

    Returns
    -------
    grad_x : ndarray of shape (n, channels, height, width) or None
    grads : dict
        ``weight`` (and ``bias``) when ``param_grads``.
    """
    if "cols" in record:
        cols, x_shape = record["cols"], record["x_shape"]
    else:  # the forward ran a backend's fast path, which kept the input
        x = record["x"]
        cols, x_shape = _cols(x, geom), x.shape
    f, g = weight.shape[0], geom.groups
    fg = f // g
    gm = _pixel_rows(grad)
    grads = {}
    # per group, the output channels' gradients (groups, n * oh * ow, filters / groups)
    gg = gm.reshape(-1, g, fg).transpose(1, 0, 2) if g > 1 else None
    if param_grads:
        if g == 1:
            grads["weight"] = backend.matmul(gm.T, cols).reshape(weight.shape)
        else:
            dw = backend.batched_matmul(gg.transpose(0, 2, 1), _group_cols(cols, g))
            grads["weight"] = dw.reshape(weight.shape)
        if use_bias:
            grads["bias"] = backend.reduce(np.sum, gm, axis=0)
    if not input_grad:
        return None, grads
    return _windows_back(backend, gm, weight, geom, x_shape), grads


def _windows_back(
    backend: Any, gm: np.ndarray, weight: np.ndarray, geom: ConvGeometry, x_shape: tuple[int, ...]
) -> np.ndarray:
    """``col2im(gm @ weight)``, per group: each output pixel's values spread back over its
    window, summed onto an image of ``x_shape``.

    ``gm`` has shape (n * out_pixels, filters); the product is ``backend.matmul`` (or, for
    ``groups > 1``, one ``backend.batched_matmul``). It is a convolution's input gradient
    and a transposed convolution's forward pass.
    """
    f, g = weight.shape[0], geom.groups
    w = weight.reshape(f, -1)
    if g == 1:
        dcols = backend.matmul(gm, w)
    else:
        fg, kg = f // g, w.shape[1]
        gg = gm.reshape(-1, g, fg).transpose(1, 0, 2)
        dcols = backend.batched_matmul(gg, w.reshape(g, fg, kg))
        dcols = dcols.transpose(1, 0, 2).reshape(-1, g * kg)
    kh, kw = geom.kernel
    return col2im(dcols, x_shape, kh, kw, geom.strides, geom.pads, geom.dilation)


def _pixel_rows(x: np.ndarray) -> np.ndarray:
    """(n, channels, h, w) as the matrix (n * h * w, channels): one row per pixel."""
    n, c = x.shape[:2]
    return np.ascontiguousarray(x.reshape(n, c, -1).transpose(0, 2, 1)).reshape(-1, c)


def conv_transpose2d_im2col(
    backend: Any,
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    geom: ConvGeometry,
    out_hw: tuple[int, int],
    record: dict | None,
) -> np.ndarray:
    """The transposed convolution of ``x``: the input gradient of the convolution ``geom``.

    Parameters
    ----------
    backend : Backend
    x : ndarray of shape (n, in_channels, height, width)
    weight : ndarray of shape (in_channels, out_channels // groups, kh, kw)
        ONNX's and PyTorch's layout (a convolution's ``(filters, channels // groups, ...)``
        from the output back to the input).
    bias : ndarray of shape (out_channels,) or None
    geom : ConvGeometry
        The convolution that maps the output back to ``x``'s size: its pads crop the
        output.
    out_hw : (int, int)
        The output's height and width (``output_padding`` rows and columns included).
    record : dict or None
        Filled with what :func:`conv_transpose2d_im2col_vjp` needs (the input).

    Returns
    -------
    ndarray of shape (n, out_channels, *out_hw)
    """
    n = x.shape[0]
    c_out = weight.shape[1] * geom.groups
    y = _windows_back(backend, _pixel_rows(x), weight, geom, (n, c_out, *out_hw))
    if record is not None:
        record["x"] = x
    if bias is not None:
        y = backend.elementwise(add_channel_bias, y.reshape(n, c_out, -1), bias)
    return y.reshape(n, c_out, *out_hw)


def conv_transpose2d_im2col_vjp(
    backend: Any,
    grad: np.ndarray,
    weight: np.ndarray,
    geom: ConvGeometry,
    record: dict,
    *,
    use_bias: bool,
    param_grads: bool = True,
    input_grad: bool = True,
) -> tuple[np.ndarray | None, dict[str, np.ndarray]]:
    """Gradients of :func:`conv_transpose2d_im2col`: the convolution ``geom`` of ``grad``
    (input) and that convolution's weight gradient with ``x`` as its output gradient.

    Returns
    -------
    grad_x : ndarray of shape (n, in_channels, height, width) or None
    grads : dict
        ``weight`` (and ``bias``) when ``param_grads``.
    """
    x = record["x"]
    grads: dict[str, np.ndarray] = {}
    if param_grads:
        cols = _cols(grad, geom)
        _, grads = conv2d_im2col_vjp(
            backend,
            x,
            weight,
            geom,
            {"cols": cols, "x_shape": grad.shape},
            use_bias=False,
            input_grad=False,
        )
        if use_bias:
            grads["bias"] = backend.reduce(np.sum, grad, axis=(0, 2, 3))
    gx = conv2d_im2col(backend, grad, weight, None, geom, None) if input_grad else None
    return gx, grads
