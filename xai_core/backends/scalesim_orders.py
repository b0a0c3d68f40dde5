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
  row by row or by anti-diagonals (bottom row first).
- The ofmap: each fold's output tile (rows, columns, first demand row written), skewed.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["orders"]


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


def _operands(conv: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    """SCALE-Sim's ifmap (pixels x window) and filter (window x filters) address matrices."""
    h, w, fh, fw, ch, nf, stride = conv
    oh, ow = -(-(h - fh + stride) // stride), -(-(w - fw + stride) // stride)
    px, win = oh * ow, fh * fw * ch
    filt = np.arange(nf, dtype=np.int32)[None, :] * win + np.arange(win, dtype=np.int32)[:, None]
    filt += 10_000_000
    if fh == ch == stride == 1 and fw == w:  # a GEMM: pixel i, window j at i * K + j
        return np.arange(px * win, dtype=np.int32).reshape(px, win), filt, (px, nf)
    # address (row * w + col) * ch + channel; SCALE-Sim's last windows may reach past the
    # ifmap's edge (oh, ow rounded up), their elements there -1
    ifmap = _conv_ifmap(h, w, fh, fw, ch, stride, oh, ow)
    return ifmap, filt, (px, nf)


def _blocks(mat: np.ndarray, tile_rows: int, tile_cols: int, rf: int, cf: int) -> np.ndarray:
    """``mat`` padded with -1 and cut into (rf, cf, tile_rows, tile_cols) tiles."""
    if mat.shape == (rf * tile_rows, cf * tile_cols):
        pad = mat
    else:
        pad = np.full((rf * tile_rows, cf * tile_cols), -1, dtype=mat.dtype)
        pad[: mat.shape[0], : mat.shape[1]] = mat
    return pad.reshape(rf, tile_rows, cf, tile_cols).transpose(0, 2, 1, 3)


def orders(conv, dataflow: str, rows: int, cols: int):
    """Each read operand's prefetch order and demand tiles; each fold's ofmap tile.

    A read operand is ``(mat, diagonal, tiles, fold_tile, kind, prefix, q, last_cols)``:
    its prefetch order is ``mat`` (B, H, W) stacked as (B * H, W) and read row by row, or
    by anti-diagonals (bottom row first) if ``diagonal``, ``-1`` entries (padding) dropped:
    ``q`` elements. A skewed operand's tiles are ``mat``'s blocks; ``last_cols`` is ``-1``,
    or says that every block is full but the last, which has its first ``last_cols``
    columns (every row).

    A read operand's demand is a sequence of folds, each one of a few distinct tiles
    (``tiles[fold_tile[f]]``) laid out the same way: ``("skew", prefix)`` (column ``c``
    delayed ``c`` rows after ``prefix`` empty rows) or ``("flip", 0)`` (rows upside down).
    """
    ifmap, filt, (px, nf) = _operands(conv)
    win = ifmap.shape[1]
    h, w, fh, fw, _, _, stride = conv
    oh, ow = -(-(h - fh + stride) // stride), -(-(w - fw + stride) // stride)
    whole = (oh - 1) * stride + fh <= h and (ow - 1) * stride + fw <= w  # no -1 in the ifmap
    q_if = px * win if whole else int(np.count_nonzero(ifmap >= 0))
    if dataflow == "ws":  # Sr = window, Sc = filters, T = pixels
        rf, cf = -(-win // rows), -(-nf // cols)
        t, per_fold = px, 2 * rows + px + cols - 2
        last_r = (rf - 1) * rows
        cols_if = win - last_r if whole else -1
        a_t = _blocks(ifmap, px, rows, 1, rf)[0]  # (rf, T, R)
        f_t = _blocks(filt, win, cols, 1, cf)[0]  # (cf, K, C)
        b_tiles = _blocks(filt, rows, cols, rf, cf).transpose(1, 0, 2, 3).reshape(-1, rows, cols)
        ops = (
            (a_t, True, a_t, np.tile(np.arange(rf), cf), "skew", rows, q_if, cols_if),
            (f_t, False, b_tiles, np.arange(cf * rf), "flip", 0, win * nf, -1),
        )
        o_cols = np.repeat(np.minimum(cols, nf - np.arange(cf) * cols), rf)
        o_rows, o_prefix = np.full(cf * rf, t), 2 * rows - 1
    elif dataflow == "is":  # Sr = window, Sc = pixels, T = filters
        rf, cf = -(-win // rows), -(-px // cols)
        t, per_fold = nf, 2 * rows + nf + cols - 2
        last_r = (rf - 1) * rows
        at = ifmap.T
        b_t = _blocks(filt, rows, nf, rf, 1)[:, 0].transpose(0, 2, 1)  # (rf, T, R)
        a_tiles = _blocks(at, rows, cols, rf, cf).transpose(1, 0, 2, 3).reshape(-1, rows, cols)
        a_mat = _blocks(at, win, cols, 1, cf)[0]
        ops = (
            (a_mat, False, a_tiles, np.arange(cf * rf), "flip", 0, q_if, -1),
            (b_t, True, b_t, np.tile(np.arange(rf), cf), "skew", rows, win * nf, win - last_r),
        )
        o_cols = np.repeat(np.minimum(cols, px - np.arange(cf) * cols), rf)
        o_rows, o_prefix = np.full(cf * rf, t), 2 * rows - 1
    else:  # os: Sr = pixels, Sc = filters, T = window
        rf, cf = -(-px // rows), -(-nf // cols)
        t, per_fold = win, win + rows + cols - 2
        last_r, last_c = (rf - 1) * rows, (cf - 1) * cols
        cols_if = px - last_r if whole else -1
        a_t = _blocks(ifmap.T, win, rows, 1, rf)[0]  # (rf, T, R)
        b_t = _blocks(filt, win, cols, 1, cf)[0]  # (cf, T, C)
        ops = (
            (a_t, True, a_t, np.tile(np.arange(rf), cf), "skew", 0, q_if, cols_if),
            (b_t, True, b_t, np.repeat(np.arange(cf), rf), "skew", 0, win * nf, nf - last_c),
        )
        o_cols = np.repeat(np.minimum(cols, nf - np.arange(cf) * cols), rf)
        o_rows = np.tile(np.minimum(rows, px - np.arange(rf) * rows), cf)
        o_prefix = t - 1
    first = o_prefix + ((rows - o_rows) if dataflow == "os" else np.zeros_like(o_rows))
    ofmap = tuple(np.ascontiguousarray(v, dtype=np.int64) for v in (o_rows, o_cols, first))
    return ops, per_fold, ofmap
