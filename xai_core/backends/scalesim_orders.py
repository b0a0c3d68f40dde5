"""SCALE-Sim 3's operands, demand tiles and prefetch orders, built with numpy index arithmetic.

The orders in which SCALE-Sim's compute modules (``systolic_compute_ws`` / ``_is`` /
``_os``) ask its SRAMs for addresses, fold by fold, and in which its read buffers prefetch
them: the inputs of :mod:`xai_core.backends.scalesim_replay`.

- Operands: the ifmap as (ofmap pixels x window) addresses, ``-1`` outside the ifmap, a
  convolution's ifmap pixels repeated across windows; the filter as (window x filters)
  addresses from SCALE-Sim's filter offset (10,000,000).
- A read operand's demand is a sequence of folds, each one of a few distinct tiles laid
  out as ``("skew", prefix)`` (column ``c`` delayed ``c`` rows after ``prefix`` empty
  rows) or ``("flip", 0)`` (rows upside down); its prefetch order is the tiles stacked,
  row by row or by anti-diagonals (bottom row first). A skewed operand is kept as its
  im2col parts (a row part plus a column part per address), not as a matrix
  (:class:`ReadOperand`).
- The ofmap: each fold's output tile (rows, columns, first demand row written), skewed.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = ["FILTER_OFFSET", "ReadOperand", "orders", "ofmap_hw"]


@njit(cache=True, nogil=True)
def _conv_ifmap(h, w, fh, fw, ch, stride, oh, ow):  # pragma: no cover - compiled
    """The (oh * ow, fh * fw * ch) ifmap addresses of a convolution's windows (``-1``
    past the ifmap's edge)."""
    out = np.empty((oh * ow, fh * fw * ch), np.int32)
    for oy in range(oh):
        for ox in range(ow):
            pix = oy * ow + ox
            k = 0
            for ky in range(fh):
                for kx in range(fw):
                    y, x = oy * stride + ky, ox * stride + kx
                    first = (y * w + x) * ch if y < h and x < w else -1
                    for c in range(ch):
                        out[pix, k] = first + c if first >= 0 else -1
                        k += 1
    return out


class ReadOperand(NamedTuple):
    """A read SRAM's demand and prefetch order.

    The demand is a sequence of folds, each one of a few distinct tiles (``fold_tile[f]``)
    laid out as ``kind``: ``"skew"`` (element ``(r, c)`` demanded ``prefix + r + c`` rows
    into the fold) or ``"flip"`` (rows upside down). The prefetch order is ``size``
    elements, ``q`` of them addresses (the rest padding).

    A skewed operand's tiles are the blocks of its prefetch order, stacked and read by
    anti-diagonals (bottom row first). With ``parts = (row, col, last_cols)`` its address
    at ``(block b, row r, column c)`` is ``row[r] + col[b, c]`` (the im2col structure: a
    window offset plus a pixel base), every block whole but the last, which has its first
    ``last_cols`` columns; ``mat`` and ``tiles`` are then not built. Otherwise ``mat``
    (B, H, W) holds the prefetch order's addresses (``-1``: padding), stacked as
    (B * H, W), read row by row, or by anti-diagonals if skewed, and ``tiles``
    (U, h, w) the demand tiles.
    """

    fold_tile: np.ndarray
    kind: str
    prefix: int
    q: int
    size: int
    parts: tuple[np.ndarray, np.ndarray, int] | None = None
    mat: np.ndarray | None = None
    tiles: np.ndarray | None = None


#: SCALE-Sim's filter address offset.
FILTER_OFFSET = 10_000_000


def ofmap_hw(conv: tuple[int, ...]) -> tuple[int, int]:
    """SCALE-Sim's ofmap height and width of ``conv`` (rounded up: a last window may reach
    past the ifmap's edge)."""
    h, w, fh, fw, _, _, stride = conv
    return -(-(h - fh + stride) // stride), -(-(w - fw + stride) // stride)


def _operands(conv: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """SCALE-Sim's ifmap address ``pix[i] + win[k]`` of pixel ``i``, window place ``k``.

    Returns (pix (px,), win (K,), filters, whole): ``whole`` is False when the last windows
    reach past the ifmap's edge (SCALE-Sim rounds the ofmap size up), their addresses there
    missing (:func:`_ifmap` marks them ``-1``).
    """
    h, w, fh, fw, ch, nf, stride = conv
    oh, ow = ofmap_hw(conv)
    if fh == ch == stride == 1 and fw == w:  # a GEMM: pixel i, window j at i * K + j
        return np.arange(oh, dtype=np.int32) * fw, np.arange(fw, dtype=np.int32), nf, True
    o_row, o_col = np.divmod(np.arange(oh * ow, dtype=np.int32), ow)
    c_row, rest = np.divmod(np.arange(fh * fw * ch, dtype=np.int32), fw * ch)
    c_col, c_ch = np.divmod(rest, ch)
    # address (row * w + col) * ch + channel: a pixel part plus a window part
    pix = (o_row * stride * w + o_col * stride) * ch
    whole = (oh - 1) * stride + fh <= h and (ow - 1) * stride + fw <= w
    return pix, (c_row * w + c_col) * ch + c_ch, nf, whole


def _ifmap(conv, pix: np.ndarray, win: np.ndarray, whole: bool) -> np.ndarray:
    """The (pixels x window) ifmap address matrix, ``-1`` past the ifmap's edge."""
    if whole:
        return pix[:, None] + win[None, :]
    h, w, fh, fw, ch, _, stride = conv
    return _conv_ifmap(h, w, fh, fw, ch, stride, *ofmap_hw(conv))


def _filter(win: int, nf: int) -> np.ndarray:
    """The (window x filters) filter address matrix."""
    filt = np.arange(nf, dtype=np.int32)[None, :] * win + np.arange(win, dtype=np.int32)[:, None]
    filt += FILTER_OFFSET
    return filt


def _padded(v: np.ndarray, blocks: int, width: int) -> np.ndarray:
    """``v`` padded with -1 to ``blocks * width`` and cut into (blocks, width)."""
    out = np.full(blocks * width, -1, dtype=np.int32)
    out[: len(v)] = v
    return out.reshape(blocks, width)


def _blocks(mat: np.ndarray, tile_rows: int, tile_cols: int, rf: int, cf: int) -> np.ndarray:
    """``mat`` padded with -1 and cut into (rf, cf, tile_rows, tile_cols) tiles."""
    if mat.shape == (rf * tile_rows, cf * tile_cols):
        pad = mat
    else:
        pad = np.full((rf * tile_rows, cf * tile_cols), -1, dtype=mat.dtype)
        pad[: mat.shape[0], : mat.shape[1]] = mat
    return pad.reshape(rf, tile_rows, cf, tile_cols).transpose(0, 2, 1, 3)


def _skewed(row, col, n_valid, fold_tile, prefix) -> ReadOperand:
    """A skewed operand from its im2col parts (``col`` (B, W), ``n_valid`` columns in all)."""
    blocks, width = col.shape
    last_cols = n_valid - (blocks - 1) * width
    q, size = len(row) * n_valid, len(row) * col.size
    return ReadOperand(fold_tile, "skew", prefix, q, size, parts=(row, col, last_cols))


def _materialised(mat, tiles, fold_tile, kind, prefix) -> ReadOperand:
    q = int(np.count_nonzero(mat >= 0))
    return ReadOperand(fold_tile, kind, prefix, q, mat.size, None, mat, tiles)


def orders(conv, dataflow: str, rows: int, cols: int):
    """Each read operand's demand and prefetch order; each fold's ofmap tile.

    Returns
    -------
    ops : (ReadOperand, ReadOperand)
        The ifmap's and the filter's.
    per_fold : int
        Demand rows per fold.
    ofmap : ((F,) int64, (F,) int64, (F,) int64)
        Each fold's output tile: rows, columns, first demand row written (column ``c``
        from that row plus ``c`` on).
    """
    pix, woff, nf, whole = _operands(conv)
    px, win = len(pix), len(woff)
    f_cols = FILTER_OFFSET + np.arange(nf, dtype=np.int32) * win  # filter n's window starts
    if dataflow == "ws":  # Sr = window, Sc = filters, T = pixels
        rf, cf = -(-win // rows), -(-nf // cols)
        t, per_fold = px, 2 * rows + px + cols - 2
        folds = np.tile(np.arange(rf), cf)
        if whole:
            a_op = _skewed(pix, _padded(woff, rf, rows), win, folds, rows)
        else:
            a_t = _blocks(_ifmap(conv, pix, woff, whole), px, rows, 1, rf)[0]  # (rf, T, R)
            a_op = _materialised(a_t, a_t, folds, "skew", rows)
        filt = _filter(win, nf)
        f_t = _blocks(filt, win, cols, 1, cf)[0]  # (cf, K, C)
        b_tiles = _blocks(filt, rows, cols, rf, cf).transpose(1, 0, 2, 3).reshape(-1, rows, cols)
        ops = (a_op, _materialised(f_t, b_tiles, np.arange(cf * rf), "flip", 0))
        o_cols = np.repeat(np.minimum(cols, nf - np.arange(cf) * cols), rf)
        o_rows, o_prefix = np.full(cf * rf, t), 2 * rows - 1
    elif dataflow == "is":  # Sr = window, Sc = pixels, T = filters
        rf, cf = -(-win // rows), -(-px // cols)
        t, per_fold = nf, 2 * rows + nf + cols - 2
        at = _ifmap(conv, pix, woff, whole).T
        a_tiles = _blocks(at, rows, cols, rf, cf).transpose(1, 0, 2, 3).reshape(-1, rows, cols)
        a_mat = _blocks(at, win, cols, 1, cf)[0]
        w_idx = _padded(np.arange(win, dtype=np.int32), rf, rows)
        ops = (
            _materialised(a_mat, a_tiles, np.arange(cf * rf), "flip", 0),
            _skewed(f_cols, w_idx, win, np.tile(np.arange(rf), cf), rows),
        )
        o_cols = np.repeat(np.minimum(cols, px - np.arange(cf) * cols), rf)
        o_rows, o_prefix = np.full(cf * rf, t), 2 * rows - 1
    else:  # os: Sr = pixels, Sc = filters, T = window
        rf, cf = -(-px // rows), -(-nf // cols)
        t, per_fold = win, win + rows + cols - 2
        folds = np.tile(np.arange(rf), cf)
        if whole:
            a_op = _skewed(woff, _padded(pix, rf, rows), px, folds, 0)
        else:
            a_t = _blocks(_ifmap(conv, pix, woff, whole).T, win, rows, 1, rf)[0]  # (rf, T, R)
            a_op = _materialised(a_t, a_t, folds, "skew", 0)
        w_idx = np.arange(win, dtype=np.int32)
        b_op = _skewed(w_idx, _padded(f_cols, cf, cols), nf, np.repeat(np.arange(cf), rf), 0)
        ops = (a_op, b_op)
        o_cols = np.repeat(np.minimum(cols, nf - np.arange(cf) * cols), rf)
        o_rows = np.tile(np.minimum(rows, px - np.arange(rf) * rows), cf)
        o_prefix = t - 1
    first = o_prefix + ((rows - o_rows) if dataflow == "os" else np.zeros_like(o_rows))
    ofmap = tuple(np.ascontiguousarray(v, dtype=np.int64) for v in (o_rows, o_cols, first))
    return ops, per_fold, ofmap
