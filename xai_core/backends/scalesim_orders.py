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
- A read SRAM's view of them: the sets of the prefetch order holding each address
  (:func:`set_lookup`) and each tile's demands as runs of demands held by the same sets
  (:func:`tile_streams`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["antidiagonal_order", "orders", "set_lookup", "tile_streams", "unsigned_for"]


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


def antidiagonal_order(h: int, w: int) -> np.ndarray:
    """Flat indices of an (h, w) matrix by anti-diagonals, bottom row first in each."""
    d = np.arange(h + w - 1, dtype=np.int32)
    top = np.minimum(d, h - 1)
    length = top - np.maximum(0, d - w + 1) + 1
    start = np.cumsum(length, dtype=np.int32) - length
    # position in the order minus its diagonal's start is (top - r): r = top - offset;
    # flat index r * w + c = r * (w - 1) + d, built in place (few large temporaries)
    out = np.repeat(top + start, length)
    out -= np.arange(h * w, dtype=np.int32)
    out *= w - 1
    out += np.repeat(d, length)
    return out


def _diagonal(mat: np.ndarray) -> np.ndarray:
    """Elements in SCALE-Sim's prefetch diagonal order (anti-diagonals, bottom row first)."""
    return mat.ravel()[antidiagonal_order(*mat.shape)]


def orders(conv, dataflow: str, rows: int, cols: int):
    """Each read operand's prefetch order and demand tiles; ofmap writes per demand row.

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
            (_diagonal(a_t.reshape(-1, rows)), a_t, np.tile(np.arange(rf), cf), "skew", rows),
            (f_t.reshape(-1), b_tiles, np.arange(cf * rf), "flip", 0),
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
            (_blocks(at, win, cols, 1, cf)[0].reshape(-1), a_tiles, np.arange(cf * rf), "flip", 0),
            (_diagonal(b_t.reshape(-1, rows)), b_t, np.tile(np.arange(rf), cf), "skew", rows),
        )
        o_cols = np.repeat(np.minimum(cols, px - np.arange(cf) * cols), rf)
        o_rows, o_prefix = np.full(cf * rf, t), 2 * rows - 1
    else:  # os: Sr = pixels, Sc = filters, T = window
        rf, cf = -(-px // rows), -(-nf // cols)
        t, per_fold = win, win + rows + cols - 2
        a_t = _blocks(ifmap.T, win, rows, 1, rf)[0]  # (rf, T, R)
        b_t = _blocks(filt, win, cols, 1, cf)[0]  # (cf, T, C)
        ops = (
            (_diagonal(a_t.reshape(-1, rows)), a_t, np.tile(np.arange(rf), cf), "skew", 0),
            (_diagonal(b_t.reshape(-1, cols)), b_t, np.repeat(np.arange(cf), rf), "skew", 0),
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


# -- a read SRAM's view: sets per address, demands as runs of equal sets -------------


def set_lookup(pre: np.ndarray, eps: int):
    """The sets holding each address of the prefetch order, as columns of distinct set lists.

    Returns (base, index, table): address ``x`` is held by the sets ``table[:, index[x - base]]``
    (a column, its sets ascending, padded with the last; addresses held by the same sets
    share a column), or
    ``table`` is None when every address is held once and ``index[x - base]`` is its set.
    """
    if pre.min() < 0:
        pre = pre[pre != -1]
    n = len(pre)
    set_of = np.arange(n, dtype=np.int32)
    set_of //= eps
    base = int(pre.min())
    index = np.full(int(pre.max()) - base + 1, -1, dtype=np.int32)
    index[pre - base] = set_of
    if (index >= 0).sum() == n:  # every address once: its own set
        return base, index, None
    n_sets = int(set_of[-1]) + 1
    # (address, set) pairs, sorted and distinct: a stable sort of the addresses (a radix
    # sort for 16-bit keys) keeps each address's positions, so its sets, in order
    rel = pre - base
    key = rel.astype(np.uint16) if len(index) <= 1 << 16 else rel
    pos = np.argsort(key, kind="stable")
    addr = rel[pos]
    sets = set_of[pos]
    keep = np.ones(n, bool)
    keep[1:] = (addr[1:] != addr[:-1]) | (sets[1:] != sets[:-1])
    addr, sets = addr[keep], sets[keep]
    first = np.ones(len(addr), bool)
    first[1:] = addr[1:] != addr[:-1]
    starts = np.flatnonzero(first)
    ends = np.r_[starts[1:], len(addr)] - 1
    depth = int((ends - starts).max()) + 1
    # row r: each address's (r + 1)-th set, its last once it has no more
    table = np.stack([sets[np.minimum(starts + r, ends)] for r in range(depth)])
    # addresses with equal set lists share a column: candidates by a hash, checked exactly
    mix = np.arange(1, depth + 1, dtype=np.int64)[:, None] * 0x9E3779B1
    _, rep, inv = np.unique((table * mix).sum(axis=0), return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    if (table[:, rep[inv]] == table).all():
        table, col_of = table[:, rep], inv.astype(np.int32)
    else:  # a hash collision: one column per address
        col_of = np.arange(len(starts), dtype=np.int32)
    index[addr[starts]] = col_of
    return base, index, np.ascontiguousarray(table, dtype=unsigned_for(n_sets))


def unsigned_for(n_sets: int):
    """The unsigned dtype for set numbers: ``s - w`` wraps past zero to a large value."""
    return np.uint16 if n_sets <= 1 << 15 else np.uint32


def tile_streams(tiles, kind, prefix, index_base):
    """Each tile's demands in SCALE-Sim's order, runs of demands with equal sets merged.

    Returns (set row per demand (n,), row in the fold (n,), start of each tile's run (U + 1,),
    the demand's place in the tiles laid end to end (n,)).
    """
    base, index = index_base
    u, h, w = tiles.shape
    if kind == "skew":  # demand row prefix + r + c, columns left to right
        order = antidiagonal_order(h, w)
        out_row = prefix + order // w + order % w
    else:  # demand row h - 1 - r
        order = (np.arange(h)[::-1, None] * w + np.arange(w)).ravel()
        out_row = h - 1 - order // w
    flat = tiles.reshape(u, h * w)[:, order]
    if flat.min() >= 0:  # no padding: runs found tile by tile, no per-demand bookkeeping
        row = index[np.subtract(flat, base, out=flat)]
        keep = np.ones(row.shape, bool)
        keep[:, 1:] = row[:, 1:] != row[:, :-1]
        tile_of, k = np.nonzero(keep)
        starts = np.searchsorted(tile_of, np.arange(u + 1))
        return row[tile_of, k], out_row[k], starts, tile_of * (h * w) + k
    flat = flat.ravel()
    idx = np.flatnonzero(flat != -1)
    row = index[flat[idx] - base]
    tile_of = idx // (h * w)
    keep = np.ones(len(idx), bool)
    keep[1:] = (tile_of[1:] != tile_of[:-1]) | (row[1:] != row[:-1])
    rows = out_row[idx[keep] % (h * w)]
    return row[keep], rows, np.searchsorted(tile_of[keep], np.arange(u + 1)), idx[keep]
