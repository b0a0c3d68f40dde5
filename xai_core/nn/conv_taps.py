"""Convolutions without im2col: the ``cpu`` backend's reference computation of common cases.

The im2col path (:mod:`xai_core.nn.conv_ops`) copies every input pixel ``kh * kw`` times
before one matrix product; these kernels compute the same sums from the (padded)
activation itself:

- **pointwise** (1x1 kernel, no padding, ``groups = 1``, any stride): one matrix product
  over the pixels' channel rows, ``rows @ weight.T``;
- **depthwise** (``groups = channels``, any depth multiplier, stride, dilation, padding):
  ``kh * kw`` multiply-adds of shifted (strided) slices of the padded activation by
  per-channel weights (at stride 1 with one kernel per channel, of contiguous blocks of
  its flattened rows, as the taps kernel below);
- **taps** (``groups = 1``, stride 1, any kernel, dilation, padding): ``kh * kw`` matrix
  products of contiguous blocks of the padded activation's channel rows, each shifted by
  its tap's offset in the flattened image (the outputs of a padded-width grid are computed
  and the columns beyond the output width dropped).

Activations are NCHW-shaped arrays of any memory order: the kernels work on the
channels-last (NHWC) memory of the padded activation (made by the one copy that pads it)
and return NCHW-shaped *views* of channels-last memory, so a chain of convolutions and
elementwise layers runs without a layout transpose between layers (numpy's elementwise
operations keep the memory order of their operands, and
:func:`~xai_core.backends.base.one_memory_order` gives the operands of one elementwise
call one order, since numpy is many times slower on mixed ones). The backward passes are the exact adjoints of the same sums. The results
equal the im2col path's to floating-point rounding (the sums run in another order).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from xai_core.nn import scratch
from xai_core.nn.conv_ops import ConvGeometry

__all__ = ["fast_kind", "conv2d_taps", "conv2d_taps_vjp", "crop"]

#: Bytes of output a depthwise kernel computes at a time (its temporaries stay in cache).
BLOCK_BYTES = 1 << 17


def fast_kind(x_shape: tuple[int, ...], weight_shape: tuple[int, ...], geom: ConvGeometry):
    """``"pointwise"``, ``"depthwise"``, ``"taps"`` or None: which kernel computes this convolution."""
    c, cg = x_shape[1], weight_shape[1]
    if geom.kernel == (1, 1) and not any(geom.pads) and geom.groups == 1:
        return "pointwise"
    if geom.groups == 1 and geom.strides == (1, 1):
        return "taps"
    if geom.groups == c > 1 and cg == 1:
        return "depthwise"
    return None


def _pad_channels_last(x: np.ndarray, pads: tuple[int, int, int, int]) -> np.ndarray:
    """The NCHW-shaped ``x`` as a zero-padded, C-contiguous (n, hp, wp, c) array (one copy at most)."""
    xh = x.transpose(0, 2, 3, 1)
    if not any(pads):
        return np.ascontiguousarray(xh)
    t, b, left, r = pads
    n, h, w, c = xh.shape
    xp = scratch.zeros((n, h + t + b, w + left + r, c), x.dtype)
    xp[:, t : t + h, left : left + w] = xh
    return xp


def crop(xp: np.ndarray, pads: tuple[int, int, int, int], hw: tuple[int, int]) -> np.ndarray:
    """The unpadded part of a padded (n, hp, wp, c) array, as an NCHW-shaped view."""
    t, left = pads[0], pads[2]
    return xp[:, t : t + hw[0], left : left + hw[1]].transpose(0, 3, 1, 2)


def _slices(geom: ConvGeometry, oh: int, ow: int) -> Iterator[tuple[int, tuple]]:
    """``(tap, index)``: the strided slice of a padded (n, hp, wp, c) array each tap reads."""
    (kh, kw), (sh, sw), (dh, dw) = geom.kernel, geom.strides, geom.dilation
    rows, cols = (oh - 1) * sh + 1, (ow - 1) * sw + 1
    for i in range(kh):
        for j in range(kw):
            yield (
                i * kw + j,
                (
                    slice(None),
                    slice(i * dh, i * dh + rows, sh),
                    slice(j * dw, j * dw + cols, sw),
                ),
            )


def _rows(a: np.ndarray) -> np.ndarray:
    """An NCHW-shaped array as its (n * h * w, c) channel rows (a view when its memory is NHWC)."""
    nhwc = a.transpose(0, 2, 3, 1)
    if not nhwc.flags.c_contiguous:
        nhwc = _copy(nhwc)
    return nhwc.reshape(-1, a.shape[1])


def _copy(a: np.ndarray) -> np.ndarray:
    out = scratch.empty(a.shape, a.dtype)
    np.copyto(out, a)
    return out


def _product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` (stacks broadcast) into reused memory."""
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    return np.matmul(a, b, out=scratch.empty(shape, np.result_type(a, b)))


# -- pointwise ---------------------------------------------------------------------------
def _pointwise(x, weight, bias, geom):
    sh, sw = geom.strides
    xs = x[:, :, ::sh, ::sw]
    n, c, oh, ow = xs.shape
    w2 = weight.reshape(weight.shape[0], c)
    # one product over all pixels (NCHW memory is copied to rows once): many small
    # per-image products would each start the BLAS threads
    y = _product(_rows(xs), w2.T)
    if bias is not None:
        y += bias
    return y.reshape(n, oh, ow, -1).transpose(0, 3, 1, 2)


def _pointwise_vjp(grad, x, weight, geom, param_grads, input_grad):
    sh, sw = geom.strides
    n, c, h, w = x.shape
    f, oh, ow = grad.shape[1:]
    w2 = weight.reshape(f, c)
    gw = gx = None
    g_rows = _rows(grad)
    if param_grads:
        gw = (g_rows.T @ _rows(x[:, :, ::sh, ::sw])).reshape(weight.shape)
    if input_grad:
        gs = _product(g_rows, w2).reshape(n, oh, ow, c).transpose(0, 3, 1, 2)
        if (sh, sw) == (1, 1):
            gx = gs
        else:
            gxh = scratch.zeros((n, h, w, c), gs.dtype)
            gxh[:, ::sh, ::sw] = gs.transpose(0, 2, 3, 1)
            gx = gxh.transpose(0, 3, 1, 2)
    return gx, gw


# -- depthwise ---------------------------------------------------------------------------
def _depthwise_taps(weight, c):
    """Per-tap weights: (taps, c) for one kernel per channel, else (taps, c, multiplier)."""
    f, _, kh, kw = weight.shape
    m = f // c
    wt = np.ascontiguousarray(weight.reshape(c, m, kh * kw).transpose(2, 0, 1))
    return wt[:, :, 0] if m == 1 else wt


def _blocks(n: int, per_image: int, itemsize: int) -> Iterator[slice]:
    """Slices of the batch whose per-image work of ``per_image`` elements fits in :data:`BLOCK_BYTES`."""
    step = max(1, BLOCK_BYTES // max(per_image * itemsize, 1))
    for start in range(0, n, step):
        yield slice(start, min(start + step, n))


def _depthwise_flat(xp, wt, bias, geom, out_hw):
    """Stride 1, one kernel per channel: the taps as shifts of the flattened padded rows.

    Each tap is one multiply-add over contiguous (rows, channels) blocks (as for the
    ``taps`` kernel), computed on the padded-width grid and cropped.
    """
    n, hp, wp, c = xp.shape
    oh, ow = out_hw
    rows = xp.reshape(-1, c)
    offs = _offsets(geom, wp)
    q = rows.shape[0] - offs[-1]
    out = scratch.empty(rows.shape, xp.dtype)
    acc, tmp = out[:q], scratch.empty((q, c), xp.dtype)
    np.multiply(rows[:q], wt[0], out=acc)
    for t, off in enumerate(offs[1:], 1):
        np.multiply(rows[off : off + q], wt[t], out=tmp)
        acc += tmp
    if bias is not None:
        acc += bias
    out[q:] = 0  # rows past the last window: never part of an output
    return out.reshape(n, hp, wp, c)[:, :oh, :ow].transpose(0, 3, 1, 2)


def _depthwise(xp, weight, bias, geom, out_hw):
    n, c = xp.shape[0], xp.shape[3]
    oh, ow = out_hw
    wt = _depthwise_taps(weight, c)
    if wt.ndim == 2 and geom.strides == (1, 1):
        return _depthwise_flat(xp, wt, bias, geom, out_hw)
    shape = (n, oh, ow, *wt.shape[1:])
    out = scratch.empty(shape, xp.dtype)
    blocks = list(_blocks(n, out[0].size, out.itemsize))
    tmp = np.empty((blocks[0].stop, *shape[1:]), dtype=xp.dtype)
    taps = list(_slices(geom, oh, ow))
    for block in blocks:  # images in blocks whose temporaries stay in cache
        o, xb, tb = out[block], xp[block], tmp[: block.stop - block.start]
        for t, index in taps:
            src = xb[index] if wt.ndim == 2 else xb[index][..., None]
            if t == 0:
                np.multiply(src, wt[0], out=o)
            else:
                np.multiply(src, wt[t], out=tb)
                o += tb
        if bias is not None:
            o += bias.reshape(wt.shape[1:])
    return out.reshape(n, oh, ow, -1).transpose(0, 3, 1, 2)


def _depthwise_vjp(grad, xp, weight, geom, hw, param_grads, input_grad):
    n, c = xp.shape[0], xp.shape[3]
    f, _, kh, kw = weight.shape
    oh, ow = grad.shape[2:]
    wt = _depthwise_taps(weight, c)
    gh = grad.transpose(0, 2, 3, 1)
    gh = (gh if gh.flags.c_contiguous else _copy(gh)).reshape(n, oh, ow, *wt.shape[1:])
    tmp = scratch.empty(gh.shape, gh.dtype)
    gw = gx = None
    if param_grads:
        dw = np.empty(wt.shape, dtype=gh.dtype)
        for t, index in _slices(geom, oh, ow):
            src = xp[index] if wt.ndim == 2 else xp[index][..., None]
            np.multiply(gh, src, out=tmp)
            dw[t] = tmp.reshape(-1, *wt.shape[1:]).sum(axis=0)
        gw = dw.reshape(kh * kw, f).T.reshape(weight.shape)
    if input_grad:
        gxp = scratch.zeros(xp.shape, xp.dtype)
        for t, index in _slices(geom, oh, ow):
            if wt.ndim == 2:
                part = np.multiply(gh, wt[t], out=tmp)
            else:  # the channel's multiplier outputs summed
                part = np.multiply(gh, wt[t], out=tmp).sum(axis=-1)
            gxp[index] += part
        gx = crop(gxp, geom.pads, hw)
    return gx, gw


# -- taps (groups = 1, stride 1) -------------------------------------------------------
def _offsets(geom: ConvGeometry, wp: int) -> list[int]:
    (kh, kw), (dh, dw) = geom.kernel, geom.dilation
    return [i * dh * wp + j * dw for i in range(kh) for j in range(kw)]


def _add_product(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """``out += a @ b`` in one BLAS call (``gemm`` with ``beta = 1``), no temporary.

    ``out`` is a C-contiguous (m, n) float32 / float64 matrix, ``a`` (m, k) and ``b``
    (k, n) are C- or F-contiguous. BLAS is column-major, so it computes ``out.T += b.T @ a.T``.
    """
    from scipy.linalg import blas

    gemm = blas.sgemm if out.dtype == np.float32 else blas.dgemm
    bt, at = b.T, a.T
    first, trans_first = (bt, 0) if bt.flags.f_contiguous else (b, 1)
    second, trans_second = (at, 0) if at.flags.f_contiguous else (a, 1)
    res = gemm(
        1.0,
        first,
        second,
        beta=1.0,
        c=out.T,
        trans_a=trans_first,
        trans_b=trans_second,
        overwrite_c=1,
    )
    if not np.shares_memory(res, out):  # a BLAS wrapper that copied: keep the result
        out[...] = res.T


def _taps(xp, weight, bias, geom, out_hw):
    n, hp, wp, c = xp.shape
    f, _, kh, kw = weight.shape
    oh, ow = out_hw
    rows = xp.reshape(-1, c)
    offs = _offsets(geom, wp)
    q = rows.shape[0] - offs[-1]
    wt = np.ascontiguousarray(weight.transpose(2, 3, 1, 0)).reshape(kh * kw, c, f)
    out = scratch.empty((rows.shape[0], f), xp.dtype)
    acc = out[:q]
    if bias is None:
        np.matmul(rows[:q], wt[0], out=acc)
    else:
        acc[...] = bias
        _add_product(acc, rows[:q], wt[0])
    for t, off in enumerate(offs[1:], 1):
        _add_product(acc, rows[off : off + q], wt[t])
    out[q:] = 0  # rows past the last window: never part of an output
    return out.reshape(n, hp, wp, f)[:, :oh, :ow].transpose(0, 3, 1, 2)


def _taps_vjp(grad, xp, weight, geom, hw, param_grads, input_grad):
    n, hp, wp, c = xp.shape
    f, _, kh, kw = weight.shape
    oh, ow = grad.shape[2:]
    rows = xp.reshape(-1, c)
    offs = _offsets(geom, wp)
    q = rows.shape[0] - offs[-1]
    full = scratch.zeros((n, hp, wp, f), xp.dtype)
    full[:, :oh, :ow] = grad.transpose(0, 2, 3, 1)
    g_rows = full.reshape(-1, f)[:q]
    gw = gx = None
    wt = np.ascontiguousarray(weight.transpose(2, 3, 1, 0)).reshape(kh * kw, c, f)
    if param_grads:
        dw = np.empty((kh * kw, c, f), dtype=xp.dtype)
        for t, off in enumerate(offs):
            np.matmul(rows[off : off + q].T, g_rows, out=dw[t])
        gw = dw.reshape(kh, kw, c, f).transpose(3, 2, 0, 1).copy()
    if input_grad:
        g_in = scratch.zeros(rows.shape, rows.dtype)
        for t, off in enumerate(offs):
            _add_product(g_in[off : off + q], g_rows, wt[t].T)
        gx = crop(g_in.reshape(n, hp, wp, c), geom.pads, hw)
    return gx, gw


# -- entry points ------------------------------------------------------------------------
def conv2d_taps(
    kind: str, x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, geom: ConvGeometry
):
    """The convolution of ``x`` by the kernel ``kind`` (see :func:`fast_kind`), without im2col.

    Parameters
    ----------
    kind : {"pointwise", "depthwise", "taps"}
    x : ndarray of shape (n, channels, height, width)
        Any memory order.
    weight : ndarray of shape (filters, channels // groups, kh, kw)
    bias : ndarray of shape (filters,) or None
        Added while the output is computed.
    geom : ConvGeometry

    Returns
    -------
    y : ndarray of shape (n, filters, out_height, out_width)
        Often a view of channels-last memory.
    saved : ndarray
        What :func:`conv2d_taps_vjp` needs: ``x`` itself (pointwise) or the padded
        channels-last activation.
    """
    out_hw = geom.out_hw(x.shape[2:])
    if kind == "pointwise":
        return _pointwise(x, weight, bias, geom), x
    xp = _pad_channels_last(x, geom.pads)
    if kind == "depthwise":
        return _depthwise(xp, weight, bias, geom, out_hw), xp
    return _taps(xp, weight, bias, geom, out_hw), xp


def conv2d_taps_vjp(
    kind: str,
    grad: np.ndarray,
    saved: np.ndarray,
    x_hw: tuple[int, int],
    weight: np.ndarray,
    geom: ConvGeometry,
    *,
    param_grads: bool = True,
    input_grad: bool = True,
):
    """``(grad_x or None, grad_weight or None)`` of :func:`conv2d_taps` for ``grad`` of its output.

    ``saved`` is what :func:`conv2d_taps` returned with the output; ``x_hw`` the input's
    ``(height, width)``. The input gradient is NCHW-shaped, often a view of channels-last memory.
    """
    if kind == "pointwise":
        gx, gw = _pointwise_vjp(grad, saved, weight, geom, param_grads, input_grad)
    elif kind == "depthwise":
        gx, gw = _depthwise_vjp(grad, saved, weight, geom, x_hw, param_grads, input_grad)
    else:
        gx, gw = _taps_vjp(grad, saved, weight, geom, x_hw, param_grads, input_grad)
    return gx, gw
