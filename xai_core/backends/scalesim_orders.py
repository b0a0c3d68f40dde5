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
- The ofmap: the number of writes in each demand row.
"""

from __future__ import annotations

import numpy as np

__all__ = ["orders"]


def _operands(conv: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    """SCALE-Sim's ifmap (pixels x window) and filter (window x filters) address matrices."""
    h, w, fh, fw, ch, nf, stride = conv
    oh, ow = -(-(h - fh + stride) // stride), -(-(w - fw + stride) // stride)
    px, win = oh * ow, fh * fw * ch
    filt = np.arange(nf, dtype=np.int32)[None, :] * win + np.arange(win, dtype=np.int32)[:, None]
    filt += 10_000_000
    if fh == ch == stride == 1 and fw == w:  # a GEMM: pixel i, window j at i * K + j
        return np.arange(px * win, dtype=np.int32).reshape(px, win), filt, (px, nf)
    o_row, o_col = np.divmod(np.arange(px, dtype=np.int32), ow)
    i_row, i_col = o_row * stride, o_col * stride
    c_row, rest = np.divmod(np.arange(win, dtype=np.int32), fw * ch)
    c_col, c_ch = np.divmod(rest, ch)
    # address (row * w + col) * ch + channel: a pixel part plus a window part
    ifmap = ((i_row * w + i_col) * ch)[:, None] + ((c_row * w + c_col) * ch + c_ch)[None, :]
    if (o_row[-1] * stride + fh > h) or (o_col[-1] * stride + fw > w):  # windows past the edge
        rr = i_row[:, None] + c_row[None, :]
        cc = i_col[:, None] + c_col[None, :]
        ifmap[(rr >= h) | (cc >= w)] = -1
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
    """Each read operand's prefetch order and demand tiles; ofmap writes per demand row.

    A read operand is ``(mat, diagonal, tiles, fold_tile, kind, prefix)``: its prefetch
    order is ``mat`` (B, H, W) stacked as (B * H, W) and read row by row, or by
    anti-diagonals (bottom row first) if ``diagonal``, ``-1`` entries dropped.

    A read operand's demand is a sequence of folds, each one of a few distinct tiles
    (``tiles[fold_tile[f]]``) laid out the same way: ``("skew", prefix)`` (column ``c``
    delayed ``c`` rows after ``prefix`` empty rows) or ``("flip", 0)`` (rows upside down).
    """
    ifmap, filt, (px, nf) = _operands(conv)
    win = ifmap.shape[1]
    if dataflow == "ws":  # Sr = window, Sc = filters, T = pixels
        rf, cf = -(-win // rows), -(-nf // cols)
        t, per_fold = px, 2 * rows + px + cols - 2
        a_t = _blocks(ifmap, px, rows, 1, rf)[0]  # (rf, T, R)
        f_t = _blocks(filt, win, cols, 1, cf)[0]  # (cf, K, C)
        b_tiles = _blocks(filt, rows, cols, rf, cf).transpose(1, 0, 2, 3).reshape(-1, rows, cols)
        ops = (
            (a_t, True, a_t, np.tile(np.arange(rf), cf), "skew", rows),
            (f_t, False, b_tiles, np.arange(cf * rf), "flip", 0),
        )
        o_cols = np.repeat(np.minimum(cols, nf - np.arange(cf) * cols), rf)
        o_rows, o_prefix = np.full(cf * rf, t), 2 * rows - 1
    elif dataflow == "is":  # Sr = window, Sc = pixels, T = filters
        rf, cf = -(-win // rows), -(-px // cols)
        t, per_fold = nf, 2 * rows + nf + cols - 2
        at = ifmap.T
        b_t = _blocks(filt, rows, nf, rf, 1)[:, 0].transpose(0, 2, 1)  # (rf, T, R)
        a_tiles = _blocks(at, rows, cols, rf, cf).transpose(1, 0, 2, 3).reshape(-1, rows, cols)
        ops = (
            (_blocks(at, win, cols, 1, cf)[0], False, a_tiles, np.arange(cf * rf), "flip", 0),
            (b_t, True, b_t, np.tile(np.arange(rf), cf), "skew", rows),
        )
        o_cols = np.repeat(np.minimum(cols, px - np.arange(cf) * cols), rf)
        o_rows, o_prefix = np.full(cf * rf, t), 2 * rows - 1
    else:  # os: Sr = pixels, Sc = filters, T = window
        rf, cf = -(-px // rows), -(-nf // cols)
        t, per_fold = win, win + rows + cols - 2
        a_t = _blocks(ifmap.T, win, rows, 1, rf)[0]  # (rf, T, R)
        b_t = _blocks(filt, win, cols, 1, cf)[0]  # (cf, T, C)
        ops = (
            (a_t, True, a_t, np.tile(np.arange(rf), cf), "skew", 0),
            (b_t, True, b_t, np.repeat(np.arange(cf), rf), "skew", 0),
        )
        o_cols = np.repeat(np.minimum(cols, nf - np.arange(cf) * cols), rf)
        o_rows = np.tile(np.minimum(rows, px - np.arange(rf) * rows), cf)
        o_prefix = t - 1
    writes = _ofmap_counts(o_rows, o_cols, o_prefix, per_fold, dataflow, rows, cols)
    return ops, per_fold, writes


def _ofmap_counts(o_rows, o_cols, prefix, per_fold, dataflow, rows, cols) -> np.ndarray:
    """Valid ofmap writes in each demand row: fold ``f``'s output tile (``o_rows[f]`` rows
    by ``o_cols[f]`` columns) skewed, column ``c`` written from row ``prefix + c`` on (os:
    the tile flipped, its valid rows at the bottom of ``rows``)."""
    first = prefix + ((rows - o_rows) if dataflow == "os" else np.zeros_like(o_rows))
    x = np.arange(per_fold)[None, :] - np.asarray(first)[:, None]
    lo = np.maximum(0, x - o_rows[:, None] + 1)
    hi = np.minimum(o_cols[:, None] - 1, x)
    return np.maximum(0, hi - lo + 1).reshape(-1)
