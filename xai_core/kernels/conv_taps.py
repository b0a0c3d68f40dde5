"""Convolutions without im2col: the ``cpu`` backend's reference computation of common cases.

The im2col path (:mod:`xai_core.kernels.conv_ops`) copies every input pixel ``kh * kw`` times
before one matrix product; these kernels compute the same sums from the (padded)
activation itself:

- **pointwise** (1x1 kernel, no padding, ``groups = 1``, any stride): one matrix product
  over the pixels' channel rows, ``rows @ weight.T``;
- **depthwise** (``groups = channels``, any depth multiplier, stride, dilation, padding):
  ``kh * kw`` multiply-adds of shifted (strided) slices of the padded activation by
  per-channel weights (at stride 1 with one kernel per channel, of contiguous blocks of
  its flattened rows, as the taps kernel below);
- **taps** (``groups = 1``, any kernel, stride, dilation, padding): ``kh * kw`` matrix
  products of contiguous blocks of the padded activation's channel rows, each shifted by
  its tap's offset in the flattened image (the outputs of a padded-width grid are computed
  and the columns beyond the output width dropped). A strided convolution first splits
  the padded activation into its ``sh * sw`` stride phases (``[:, a::sh, b::sw]``, in the
  one copy that pads it): each tap then reads a stride-1 window of one phase, and the
  input gradient is accumulated into the phases and interleaved back once. With one
  input channel (a grayscale image) a tap's product has a single term, so the taps' rows
  are gathered side by side for one product per block of rows (im2col a cache-sized block
  at a time).

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

from xai_core.kernels import scratch
from xai_core.kernels.conv_ops import ConvGeometry
from xai_core.kernels.depthwise import depthwise_channels_last
from xai_core.kernels.weight_cache import derived

__all__ = ["fast_kind", "conv2d_taps", "conv2d_taps_vjp", "crop", "taps_input"]

#: Bytes of output a depthwise kernel computes at a time (its temporaries stay in cache).
BLOCK_BYTES = 1 << 17

#: Below this many input channels, the taps kernel gathers the taps' rows into a block of
#: columns for one product (a product of ``channels`` terms per tap runs far below speed).
FEW_CHANNELS = 4

#: Bytes of gathered columns the few-channel taps kernel holds at a time.
COLUMN_BYTES = 1 << 20

#: Bytes of output sums above which the taps' products fill them a block at a time.
SUMS_BYTES = 8 << 20

#: Above this ratio of the padded grid's pixels to the output's, the taps kernel gathers the
#: output pixels' windows into columns instead (a 7x7 image padded to 9x9 would compute 81
#: rows for 49 outputs): one product per block of images, of :data:`GRID_COLUMN_BYTES`.
GRID_WASTE = 1.2
GRID_COLUMN_BYTES = 16 << 20


def fast_kind(x_shape: tuple[int, ...], weight_shape: tuple[int, ...], geom: ConvGeometry):
    """``"pointwise"``, ``"depthwise"``, ``"taps"`` or None: which kernel computes this convolution."""
    c, cg = x_shape[1], weight_shape[1]
    if geom.kernel == (1, 1) and not any(geom.pads) and geom.groups == 1:
        return "pointwise"
    if geom.groups == 1:
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
    return derived(weight, f"depthwise taps of {c}", lambda w: _depthwise_layout(w, c))


def _depthwise_layout(weight, c):
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


def _compiled_depthwise(xp, weight, bias, geom):
    """:func:`_depthwise` by the compiled loop of :mod:`~xai_core.kernels.depthwise` on the
    padded activation (so no padding is left to it), or None (a weight not finite)."""
    if weight.shape[0] != xp.shape[3]:  # a depth multiplier
        return None
    flat = geom._replace(pads=(0, 0, 0, 0))
    return depthwise_channels_last(xp.transpose(0, 3, 1, 2), weight, bias, flat)


def _depthwise_adjoint(grad, weight, geom, hw):
    """The input gradient of a stride-1 depthwise convolution, one kernel per channel, as the
    compiled depthwise loop over ``grad`` by the flipped kernel (the adjoint of a stride-1
    correlation), or None where that does not apply (a padding wider than the kernel's
    reach, a weight not finite).

    The adjoint pads ``grad`` by the kernel's reach less the forward padding on each side,
    so the input pixels come out exactly (the forward padding's are never made).
    """
    (kh, kw), (dh, dw), (t, b, left, r) = geom.kernel, geom.dilation, geom.pads
    pads = ((kh - 1) * dh - t, (kh - 1) * dh - b, (kw - 1) * dw - left, (kw - 1) * dw - r)
    if min(pads) < 0:
        return None
    flipped = derived(weight, "flipped", lambda w: np.ascontiguousarray(w[:, :, ::-1, ::-1]))
    return depthwise_channels_last(grad, flipped, None, geom._replace(pads=pads))


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
    if input_grad and wt.ndim == 2 and geom.strides == (1, 1):
        gx = _depthwise_adjoint(grad, weight, geom, hw)
        if gx is not None:
            return gx, gw
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


# -- taps (groups = 1) ------------------------------------------------------------------
def _phase_span(a: int, s: int, pad: int, size: int) -> tuple[int, int, int]:
    """``(first phase row, first input row, rows)``: the input rows phase ``a`` of stride ``s`` holds.

    Phase ``a`` holds the padded positions ``a, a + s, a + 2 s, ...``; position ``p`` is
    input row ``p - pad``.
    """
    r0 = max(0, -(-(pad - a) // s))
    x0 = a + s * r0 - pad
    return r0, x0, len(range(x0, size, s))


def _phases(x: np.ndarray, geom: ConvGeometry) -> np.ndarray:
    """The padded activation split by stride phase: (sh * sw, n, hq, wq, c), C-contiguous.

    Phase ``(a, b)`` is the padded channels-last activation's ``[:, a::sh, b::sw]``, zero
    filled to ``hq = ceil(hp / sh)`` rows and ``wq = ceil(wp / sw)`` columns, so that every
    tap of a strided convolution reads a stride-1 window of one phase. One copy of ``x``
    (at stride 1 the padded activation itself).
    """
    (sh, sw), pads = geom.strides, geom.pads
    if (sh, sw) == (1, 1):
        return _pad_channels_last(x, pads)[None]
    xh = x.transpose(0, 2, 3, 1)
    n, h, w, c = xh.shape
    hq, wq = -(-(h + pads[0] + pads[1]) // sh), -(-(w + pads[2] + pads[3]) // sw)
    ph = scratch.zeros((sh * sw, n, hq, wq, c), x.dtype)
    for a in range(sh):
        r0, x0, nr = _phase_span(a, sh, pads[0], h)
        for b in range(sw):
            c0, y0, nc = _phase_span(b, sw, pads[2], w)
            ph[a * sw + b, :, r0 : r0 + nr, c0 : c0 + nc] = xh[:, x0::sh, y0::sw]
    return ph


def _unphase(gph: np.ndarray, geom: ConvGeometry, hw: tuple[int, int]) -> np.ndarray:
    """The adjoint of :func:`_phases`: the input's part of each phase, as an NCHW-shaped view."""
    (sh, sw), pads = geom.strides, geom.pads
    if (sh, sw) == (1, 1):
        return crop(gph[0], pads, hw)
    n, c = gph.shape[1], gph.shape[4]
    h, w = hw
    gx = scratch.empty((n, h, w, c), gph.dtype)  # every input pixel is in exactly one phase
    for a in range(sh):
        r0, x0, nr = _phase_span(a, sh, pads[0], h)
        for b in range(sw):
            c0, y0, nc = _phase_span(b, sw, pads[2], w)
            gx[:, x0::sh, y0::sw] = gph[a * sw + b, :, r0 : r0 + nr, c0 : c0 + nc]
    return gx.transpose(0, 3, 1, 2)


def _offsets(geom: ConvGeometry, wp: int) -> list[int]:
    (kh, kw), (dh, dw) = geom.kernel, geom.dilation
    return [i * dh * wp + j * dw for i in range(kh) for j in range(kw)]


def _phase_taps(geom: ConvGeometry, wq: int) -> list[tuple[int, int]]:
    """``(phase, offset)`` of each tap: the phase it reads and its shift in the flattened phase."""
    (kh, kw), (sh, sw), (dh, dw) = geom.kernel, geom.strides, geom.dilation
    taps = []
    for i in range(kh):
        (u, a) = divmod(i * dh, sh)
        for j in range(kw):
            (v, b) = divmod(j * dw, sw)
            taps.append((a * sw + b, u * wq + v))
    return taps


def _add_product(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """``out += a @ b`` in one BLAS call (``gemm`` with ``beta = 1``), no temporary.

    scipy's BLAS may be another library than numpy's, each with its own threads: a loop
    that alternates between ``np.matmul`` and this function makes the two pools contend
    for the cores (at two threads, the 3x3 products of a ResNet ran at half speed so), so
    a loop of products calls this one alone.

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


def _tap_weights(weight: np.ndarray) -> np.ndarray:
    """(kh * kw, c, f): each tap's (channels, filters) matrix (made once per weight and
    :func:`~xai_core.kernels.weight_cache.weights_fixed` scope)."""
    return derived(weight, "taps", _tap_layout)


def _tap_layout(weight: np.ndarray) -> np.ndarray:
    f, c, kh, kw = weight.shape
    return np.ascontiguousarray(weight.transpose(2, 3, 1, 0)).reshape(kh * kw, c, f)


def _row_blocks(q: int, width: int, itemsize: int) -> Iterator[slice]:
    """Slices of ``q`` rows whose gathered columns (``width`` per row) fit in :data:`COLUMN_BYTES`."""
    step = max(1024, COLUMN_BYTES // (width * itemsize))
    for start in range(0, q, step):
        yield slice(start, min(start + step, q))


def _sum_blocks(q: int, f: int, itemsize: int) -> list[slice]:
    """Blocks of the ``q`` output rows (``f`` sums each) that the taps' products fill in turn.

    Every tap adds its product to all the sums: when they pass :data:`SUMS_BYTES`, they are
    filled a block of :data:`COLUMN_BYTES` at a time, so that the block stays in cache
    across the taps instead of going through memory once per tap (a ResNet's 64-channel
    layers on a batch of 50 images at 224 px: 77 GFLOP/s whole, 102 GFLOP/s in blocks, on
    two cores). Smaller outputs are one block: their products are wider and fast as they are.
    """
    if q * f * itemsize <= SUMS_BYTES:
        return [slice(0, q)]
    return list(_row_blocks(q, f, itemsize))


def _taps_few_channels(rows, wt, bias, taps, q, acc):
    """``acc = bias + sum_t rows[p_t, off_t:][:q] @ wt[t]``, one product per block of rows.

    Each block's taps are gathered side by side into (rows, taps * c) columns, as im2col
    does, but a block at a time (in cache) instead of the whole batch.
    """
    n_taps, c, f = wt.shape
    w2 = wt.reshape(n_taps * c, f)
    blocks = list(_row_blocks(q, n_taps * c, rows.itemsize))
    buf = scratch.empty((blocks[0].stop, n_taps, c), rows.dtype)
    for block in blocks:
        b = buf[: block.stop - block.start]
        for t, (pt, off) in enumerate(taps):
            b[:, t] = rows[pt, block.start + off : block.stop + off]
        np.matmul(b.reshape(len(b), -1), w2, out=acc[block])
    if bias is not None:
        acc += bias


def _taps_few_channels_vjp(g_rows, wt, taps, q, g_in):
    """``g_in[p_t, off_t:][:q] += g_rows @ wt[t].T`` for every tap, one product per block of rows."""
    n_taps, c, f = wt.shape
    w2t = wt.reshape(n_taps * c, f).T
    blocks = list(_row_blocks(q, n_taps * c, g_rows.itemsize))
    buf = scratch.empty((blocks[0].stop, n_taps * c), g_rows.dtype)
    for block in blocks:
        b = np.matmul(g_rows[block], w2t, out=buf[: block.stop - block.start])
        b = b.reshape(len(b), n_taps, c)
        for t, (pt, off) in enumerate(taps):
            g_in[pt, block.start + off : block.stop + off] += b[:, t]


def _wasteful(ph_shape: tuple[int, ...], out_hw: tuple[int, int]) -> bool:
    """Whether the padded grid holds many more pixels than the output (:data:`GRID_WASTE`)."""
    return ph_shape[2] * ph_shape[3] > GRID_WASTE * out_hw[0] * out_hw[1]


def _image_blocks(n: int, per_image: int, itemsize: int) -> list[slice]:
    step = max(1, GRID_COLUMN_BYTES // max(per_image * itemsize, 1))
    return [slice(b, min(b + step, n)) for b in range(0, n, step)]


def _windows_of(ph, taps, wq, out_hw):
    """``(tap, (phase, rows, cols))``: the window of the phase grid each tap reads."""
    oh, ow = out_hw
    for t, (pt, off) in enumerate(taps):
        u, v = divmod(off, wq)
        yield t, (pt, slice(u, u + oh), slice(v, v + ow))


def _taps_columns(ph, wt, bias, taps, out_hw):
    """The output pixels' windows gathered into (pixels, taps * c) columns, a block of images
    at a time, each block one product: no output of the padded grid is computed."""
    p, n, hq, wq, c = ph.shape
    n_taps, _, f = wt.shape
    oh, ow = out_hw
    out = scratch.empty((n, oh, ow, f), ph.dtype)
    blocks = _image_blocks(n, oh * ow * n_taps * c, ph.itemsize)
    buf = scratch.empty((blocks[0].stop, oh, ow, n_taps, c), ph.dtype)
    w2 = wt.reshape(n_taps * c, f)
    windows = list(_windows_of(ph, taps, wq, out_hw))
    for block in blocks:
        cols = buf[: block.stop - block.start]
        for t, (pt, rows, columns) in windows:
            cols[:, :, :, t] = ph[pt, block, rows, columns]
        np.matmul(cols.reshape(-1, n_taps * c), w2, out=out[block].reshape(-1, f))
    if bias is not None:
        out += bias
    return out.transpose(0, 3, 1, 2)


def _taps_columns_vjp(grad, wt, taps, ph_shape, out_hw):
    """The adjoint of :func:`_taps_columns`: the gradient of the phase grid (ph_shape)."""
    p, n, hq, wq, c = ph_shape
    n_taps, _, f = wt.shape
    oh, ow = out_hw
    g = grad.transpose(0, 2, 3, 1)
    g = g if g.flags.c_contiguous else _copy(g)
    g_in = scratch.zeros(ph_shape, grad.dtype)
    blocks = _image_blocks(n, oh * ow * n_taps * c, grad.itemsize)
    buf = scratch.empty((blocks[0].stop * oh * ow, n_taps * c), grad.dtype)
    w2t = wt.reshape(n_taps * c, f).T
    windows = list(_windows_of(g_in, taps, wq, out_hw))
    for block in blocks:
        m = (block.stop - block.start) * oh * ow
        cols = np.matmul(g[block].reshape(m, f), w2t, out=buf[:m])
        cols = cols.reshape(block.stop - block.start, oh, ow, n_taps, c)
        for t, (pt, rows, columns) in windows:
            g_in[pt, block, rows, columns] += cols[:, :, :, t]
    return g_in


def _taps(ph, weight, bias, geom, out_hw):
    p, n, hq, wq, c = ph.shape
    f = weight.shape[0]
    oh, ow = out_hw
    rows = ph.reshape(p, -1, c)
    taps = _phase_taps(geom, wq)
    q = rows.shape[1] - max(off for _, off in taps)
    wt = _tap_weights(weight)
    if c >= FEW_CHANNELS and n and _wasteful(ph.shape, out_hw):
        return _taps_columns(ph, wt, bias, taps, out_hw)
    out = scratch.empty((rows.shape[1], f), ph.dtype)
    acc = out[:q]
    if c < FEW_CHANNELS and len(taps) > 1:
        _taps_few_channels(rows, wt, bias, taps, q, acc)
        out[q:] = 0
        return out.reshape(n, hq, wq, f)[:, :oh, :ow].transpose(0, 3, 1, 2)
    for block in _sum_blocks(q, f, out.itemsize):  # every tap's product into a block of sums
        sums = acc[block]
        sums[...] = 0 if bias is None else bias  # (all products by one BLAS: see _add_product)
        for t, (pt, off) in enumerate(taps):
            _add_product(sums, rows[pt, block.start + off : block.stop + off], wt[t])
    out[q:] = 0  # rows past the last window: never part of an output
    return out.reshape(n, hq, wq, f)[:, :oh, :ow].transpose(0, 3, 1, 2)


def _taps_vjp(grad, ph, weight, geom, hw, param_grads, input_grad):
    p, n, hq, wq, c = ph.shape
    f, _, kh, kw = weight.shape
    oh, ow = grad.shape[2:]
    rows = ph.reshape(p, -1, c)
    taps = _phase_taps(geom, wq)
    q = rows.shape[1] - max(off for _, off in taps)
    gw = gx = None
    columns = input_grad and n and c >= FEW_CHANNELS and _wasteful(ph.shape, (oh, ow))
    if columns:
        g_in = _taps_columns_vjp(grad, _tap_weights(weight), taps, ph.shape, (oh, ow))
        gx = _unphase(g_in, geom, hw)
        if not param_grads:
            return gx, None
    full = scratch.zeros((n, hq, wq, f), ph.dtype)
    full[:, :oh, :ow] = grad.transpose(0, 2, 3, 1)
    g_rows = full.reshape(-1, f)[:q]
    if param_grads:
        dw = np.empty((kh * kw, c, f), dtype=ph.dtype)
        for t, (pt, off) in enumerate(taps):
            np.matmul(rows[pt, off : off + q].T, g_rows, out=dw[t])
        gw = dw.reshape(kh, kw, c, f).transpose(3, 2, 0, 1).copy()
    if input_grad and not columns:
        wt = _tap_weights(weight)
        g_in = scratch.zeros(rows.shape, rows.dtype)
        if c < FEW_CHANNELS and len(taps) > 1:
            _taps_few_channels_vjp(g_rows, wt, taps, q, g_in)
        else:  # a block of output rows adds to its window of g_in in every tap, in cache
            for block in _sum_blocks(q, max(c, f), rows.itemsize):
                g_block, start, stop = g_rows[block], block.start, block.stop
                for t, (pt, off) in enumerate(taps):
                    _add_product(g_in[pt, start + off : stop + off], g_block, wt[t].T)
        gx = _unphase(g_in.reshape(ph.shape), geom, hw)
    return gx, gw


def taps_input(kind: str, saved: np.ndarray, x: np.ndarray, geom: ConvGeometry) -> np.ndarray:
    """The convolution's input ``x`` from what :func:`conv2d_taps` saved (a view when it can be)."""
    if kind == "pointwise" or (kind == "taps" and geom.strides != (1, 1)):
        return x
    return crop(saved[0] if kind == "taps" else saved, geom.pads, x.shape[2:])


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
    if kind == "taps":
        ph = _phases(x, geom)
        return _taps(ph, weight, bias, geom, out_hw), ph
    xp = _pad_channels_last(x, geom.pads)
    y = _compiled_depthwise(xp, weight, bias, geom)
    return (_depthwise(xp, weight, bias, geom, out_hw) if y is None else y), xp


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
