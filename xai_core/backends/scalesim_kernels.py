"""The compiled loops of the SCALE-Sim replay's read SRAMs: sets per address, the window walk.

Numba kernels, called by :mod:`xai_core.backends.scalesim_replay` (whose docstring states
the rules they follow):

- :func:`set_table`: the sets of the prefetch order that hold each address (ascending), in
  one pass over the prefetch order; :func:`set_table_parts` the same for a skewed operand
  given by its im2col parts (each address's sets in the order met), each element's own
  set in closed form;
- :func:`tile_runs`: each distinct tile's demands in order, once, runs of demands held by
  the same one set merged;
- :func:`walk`: the read window's walk over the folds' demand runs, a tile's walk done once
  per starting window (a fold that repeats a tile from the same window repeats its
  prefetches);
- :func:`walk_skew`: the same walk for a skewed operand whose tiles are its prefetch
  order's blocks: there a tile's demands hold their own sets in ascending order, so the
  demands whose own set is in the window are skipped by a binary search, and only the
  others are tested on all their sets.

Compiled once and cached on disk (``cache=True``); a tile's walk runs once per distinct
tile and starting window. :func:`walk` and :func:`walk_skew` keep their own copies of
the fold loop: numba does not cache a function that takes another as an argument, and
one loop choosing the tile's walk by the tile's tuple (which it does cache) made each
walk 12-30% slower on the small layers.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["set_table", "set_table_parts", "tile_runs", "walk", "walk_skew"]


@njit(cache=True, nogil=True)
def _diagonal_starts(rows, w, top, last_cols, eps):  # pragma: no cover - compiled
    """The set of each anti-diagonal's first element and its place in that set minus
    the diagonal's first column, in the anti-diagonal order of a (rows, w) matrix whose
    rows from ``top`` on have only their first ``last_cols`` columns (sets of ``eps``)."""
    first_set = np.empty(rows + w - 1, np.int64)
    start = np.empty(rows + w - 1, np.int64)
    total = 0
    for dg in range(rows + w - 1):
        c_lo, c_hi = max(0, dg - rows + 1), min(dg, w - 1)
        first_set[dg] = total // eps
        start[dg] = total % eps - c_lo
        total += c_hi - c_lo + 1 - max(0, min(dg - top, c_hi) - max(c_lo, last_cols) + 1)
    return first_set, start


@njit(cache=True, nogil=True)
def _push(buf, n, value):  # pragma: no cover - compiled
    """``buf`` with ``buf[n] = value``, doubled first if full."""
    if n == len(buf):
        grown = np.empty(2 * n + 16, buf.dtype)
        grown[:n] = buf
        buf = grown
    buf[n] = value
    return buf


@njit(cache=True, nogil=True)
def set_table(mat, diagonal, eps, depth, lo, span):  # pragma: no cover - compiled
    """Sets holding each address of a read SRAM's prefetch order, in one pass over it.

    Parameters
    ----------
    mat : (B, H, W) int32
        The prefetch order's addresses (``-1``: no element), stacked as (B * H, W) and
        taken row by row, or by anti-diagonals (bottom row first) if ``diagonal``.
    diagonal : bool
    eps : int
        Elements per set: element ``j`` of the order (``-1`` dropped) is in set ``j // eps``.
    depth : int
        At least the number of places of any one address.
    lo, span : int
        The addresses lie in ``lo ... lo + span - 1``.

    Returns
    -------
    (cnt, table)
        Address ``x`` is held by the ``cnt[x - lo]`` sets
        ``table[(x - lo) * depth :][: cnt[x - lo]]`` (distinct, ascending).
    """
    cnt = np.zeros(span, np.int32)
    table = np.empty(span * depth, np.int32)
    nb, h, w = mat.shape
    s, k = 0, 0  # set number, elements in it so far
    if not diagonal:
        for b in range(nb):
            for r in range(h):
                for c in range(w):
                    x = mat[b, r, c]
                    if x >= 0:
                        q = x - lo
                        n = cnt[q]
                        if n == 0 or table[q * depth + n - 1] != s:
                            table[q * depth + n] = s
                            cnt[q] = n + 1
                        k += 1
                        if k == eps:
                            s, k = s + 1, 0
        return cnt, table
    rows = nb * h
    for d in range(rows + w - 1):
        c0 = max(0, d - rows + 1)
        i = d - c0  # the stacked row, falling by one as the column rises
        b = i // h
        r = i - b * h
        for c in range(c0, min(d, w - 1) + 1):
            x = mat[b, r, c]
            if x >= 0:
                q = x - lo
                n = cnt[q]  # the sets arrive in ascending order: a new one is appended
                if n == 0 or table[q * depth + n - 1] != s:
                    table[q * depth + n] = s
                    cnt[q] = n + 1
                k += 1
                if k == eps:
                    s, k = s + 1, 0
            r -= 1
            if r < 0:
                r = h - 1
                b -= 1
    return cnt, table


@njit(cache=True, nogil=True)
def set_table_parts(row, col, last_cols, eps, depth, lo, span):  # pragma: no cover - compiled
    """:func:`set_table` for a skewed operand given by its im2col parts, and each element's
    own set, from each anti-diagonal's start (no walk in the prefetch order).

    Parameters
    ----------
    row : (H,) int32
    col : (B, W) int32
        Block ``b``'s element ``(r, c)`` is address ``row[r] + col[b, c]``; blocks stacked
        as (B * H, W), read by anti-diagonals, every block whole but the last, which has its
        first ``last_cols`` columns.
    eps, depth, lo, span
        As :func:`set_table`'s.

    Returns
    -------
    (cnt, table, own)
        :func:`set_table`'s (each address's sets in the order met, repeats kept), and
        ``own`` (B, H, W), each element's own set.
    """
    nb, w = col.shape
    h = len(row)
    cnt = np.zeros(span, np.int32)
    table = np.empty(span * depth, np.int32)
    own = np.empty((nb, h, w), np.int32)
    rows, top = nb * h, (nb - 1) * h  # the last tile's first stacked row
    first_set, start = _diagonal_starts(rows, w, top, last_cols, eps)
    for b in range(nb):
        cols = w if b < nb - 1 else last_cols
        for r in range(h):
            i = b * h + r
            near = i + cols > top + last_cols  # a diagonal here meets the missing columns
            for c in range(cols):
                dg = i + c
                s, o = first_set[dg], start[dg] + c
                if near:  # the last tile's missing columns on this diagonal before c
                    gap = min(c, dg - top + 1) - max(max(0, dg - rows + 1), last_cols)
                    o -= max(gap, 0)
                while o >= eps:
                    s, o = s + 1, o - eps
                own[b, r, c] = s
                q = row[r] + col[b, c] - lo
                table[q * depth + cnt[q]] = s
                cnt[q] += 1
    return cnt, table, own


@njit(cache=True, nogil=True)
def tile_runs(tiles, skew, prefix, base, cnt, table, depth):  # pragma: no cover - compiled
    """Each tile's demands in SCALE-Sim's order, consecutive demands held alike merged.

    Element ``(r, c)`` of a tile is demanded in row ``prefix + r + c`` if ``skew``, else in
    row ``h - 1 - r``; columns left to right within a row. A demand's key is its one set
    (``>= 0``) or ``-1 - (x - base)`` for an address ``x`` held by several sets.

    Returns
    -------
    keys, rows : (n,) int64
        The runs' keys and the demand row (in the fold) of each run's first demand.
    starts : (U + 1,) int64
        Where each tile's runs start.
    """
    u_n, h, w = tiles.shape
    keys = np.empty(u_n * h * w, np.int64)
    rows = np.empty(u_n * h * w, np.int64)
    starts = np.zeros(u_n + 1, np.int64)
    n = 0
    for u in range(u_n):
        prev = np.int64(-(1 << 62))
        if skew:
            for d in range(h + w - 1):
                for c in range(max(0, d - h + 1), min(d, w - 1) + 1):
                    x = tiles[u, d - c, c]
                    if x < 0:
                        continue
                    r = x - base
                    key = np.int64(table[r * depth]) if cnt[r] == 1 else -1 - r
                    if key != prev:
                        keys[n], rows[n] = key, prefix + d
                        n += 1
                        prev = key
        else:
            for rr in range(h - 1, -1, -1):
                for c in range(w):
                    x = tiles[u, rr, c]
                    if x < 0:
                        continue
                    r = x - base
                    key = np.int64(table[r * depth]) if cnt[r] == 1 else -1 - r
                    if key != prev:
                        keys[n], rows[n] = key, h - 1 - rr
                        n += 1
                        prev = key
        starts[u + 1] = n
    return keys[:n], rows[:n], starts


@njit(cache=True, nogil=True)
def _probe(table, first, held, slot, w, n, a):  # pragma: no cover - compiled
    """``(hit, slot, best)``: whether one of an address's ``held`` sets is in the window.

    The sets are ``table[first : first + held]``; the one at ``slot`` (which held the
    previous demand's address) is tried first. ``best`` is the distance past the window's
    start of the nearest set when none is in it.
    """
    if slot < held:
        d = table[first + slot] - w
        if 0 <= d < a or d + n < a:
            return True, slot, n
    best = n
    for j in range(held):
        d = table[first + j] - w
        if d < 0:
            d += n
        if d < a:
            return True, j, n
        best = min(best, d)
    return False, slot, best


@njit(cache=True, nogil=True)
def _memo_for(n_tiles, n_folds):  # pragma: no cover - compiled
    """Empty walk memo: per tile a linked list of its walks by starting window.

    Returns ``head (n_tiles,)`` (-1: none yet), ``memo (5, n_folds)`` (next, start window,
    first and last event, end window) and the growing event buffers ``rel_r, rel_c``
    (walks' events, rows relative to their fold) and ``out_r, out_c`` (the result).
    """
    head = np.full(n_tiles, -1, np.int64)
    memo = np.empty((5, n_folds), np.int64)
    rel_r, rel_c = np.empty(64, np.int64), np.empty(64, np.int64)
    out_r, out_c = np.empty(64, np.int64), np.empty(64, np.int64)
    return head, memo, rel_r, rel_c, out_r, out_c


@njit(cache=True, nogil=True)
def _recall(memo, head, u, w):  # pragma: no cover - compiled
    """The memo of tile ``u``'s walk from window ``w``, or -1."""
    m = head[u]
    while m >= 0 and memo[1, m] != w:
        m = memo[0, m]
    return m


@njit(cache=True, nogil=True)
def _remember(memo, head, m, u, w0, w, ev_r, ev_c, n_ev, rel_r, rel_c, n_rel):  # pragma: no cover
    """Store tile ``u``'s walk from window ``w0`` (its ``n_ev`` events, ending at ``w``) as memo ``m``."""
    lo = n_rel
    for t in range(n_ev):
        rel_r = _push(rel_r, n_rel, ev_r[t])
        rel_c = _push(rel_c, n_rel, ev_c[t])
        n_rel += 1
    memo[0, m], memo[1, m], memo[2, m], memo[3, m], memo[4, m] = head[u], w0, lo, n_rel, w
    head[u] = m
    return rel_r, rel_c, n_rel


@njit(cache=True, nogil=True)
def _replay(memo, m, offset, rel_r, rel_c, out_r, out_c, n_out):  # pragma: no cover - compiled
    """Append memo ``m``'s events to the output, their rows shifted by ``offset``."""
    for t in range(memo[2, m], memo[3, m]):
        out_r = _push(out_r, n_out, offset + rel_r[t])
        out_c = _push(out_c, n_out, rel_c[t])
        n_out += 1
    return out_r, out_c, n_out


@njit(cache=True, nogil=True)
def walk(keys, rows, starts, fold_tile, per_fold, cnt, table, depth, n, a, p):  # pragma: no cover
    """The read window's walk: the demand rows that prefetch and how many prefetches each.

    Parameters
    ----------
    keys, rows, starts
        :func:`tile_runs`'s demand runs of each tile.
    fold_tile : (F,) int64
        The tile of each fold; fold ``f``'s rows start at ``f * per_fold``.
    cnt, table, depth
        :func:`set_table`'s sets per address.
    n, a, p : int
        Sets, sets in the window, sets per prefetch (``p <= a``).

    Returns
    -------
    rows, counts : (E,) int64
        Demand rows with prefetches (ascending) and the prefetches at each.
    """
    n_tiles = len(starts) - 1
    # one walk's events (at most one per demand run), appended to rel after it
    longest = 1
    for u in range(n_tiles):
        longest = max(longest, starts[u + 1] - starts[u])
    ev_r, ev_c = np.empty(longest, np.int64), np.empty(longest, np.int64)
    head, memo, rel_r, rel_c, out_r, out_c = _memo_for(n_tiles, len(fold_tile))
    n_memo, n_rel, n_out = 0, 0, 0
    w = np.int64(0)
    for f in range(len(fold_tile)):
        u = fold_tile[f]
        m = _recall(memo, head, u, w)
        if m < 0:
            m, w0 = n_memo, w
            n_ev = 0
            last_row = -1
            slot = 0
            for i in range(starts[u], starts[u + 1]):
                kk = keys[i]
                if kk >= 0:
                    best = kk - w
                    if best < 0:
                        best += n
                    if best < a:
                        continue
                else:
                    r = -1 - kk
                    hit, slot, best = _probe(table, r * depth, cnt[r], slot, w, n, a)
                    if hit:
                        continue
                # the window advances p sets at a time and never steps over a set (p <= a)
                k = (best - a) // p + 1
                w = (w + k * p) % n
                row = rows[i]
                if row == last_row:
                    ev_c[n_ev - 1] += k
                else:
                    ev_r[n_ev], ev_c[n_ev] = row, k
                    n_ev += 1
                    last_row = row
            rel_r, rel_c, n_rel = _remember(
                memo, head, m, u, w0, w, ev_r, ev_c, n_ev, rel_r, rel_c, n_rel
            )
            n_memo += 1
        out_r, out_c, n_out = _replay(memo, m, f * per_fold, rel_r, rel_c, out_r, out_c, n_out)
        w = memo[4, m]
    return out_r[:n_out], out_c[:n_out]


@njit(cache=True, nogil=True)
def walk_skew(
    row, col, own, last_cols, prefix, fold_tile, per_fold, base, cnt, table, depth, n, a, p
):  # pragma: no cover - compiled
    """:func:`walk` for skewed tiles that are the blocks of the prefetch order itself.

    Tile ``u`` is block ``u`` of :func:`set_table_parts`' operand (addresses
    ``row[r] + col[u, c]``), whole but the last, which has its first ``last_cols``
    columns; element
    ``(r, c)`` is demanded in row ``prefix + r + c``, and its own set ``own[u, r, c]``
    rises along the demand order (the prefetch order reads the stacked tiles by the same
    anti-diagonals). A demand whose own set is in the window is a hit, and so are the
    following ones up to the first own set past it, found by a binary search over the
    diagonals; the others are tested on all their sets (:func:`set_table`'s).

    Returns
    -------
    rows, counts : (E,) int64
        Demand rows with prefetches (ascending) and the prefetches at each.
    """
    h = len(row)
    n_tiles = col.shape[0]
    # one walk's events (at most one per demand), appended to rel after it
    ev_r, ev_c = np.empty(h * col.shape[1] + 1, np.int64), np.empty(h * col.shape[1] + 1, np.int64)
    head, memo, rel_r, rel_c, out_r, out_c = _memo_for(n_tiles, len(fold_tile))
    n_memo, n_rel, n_out = 0, 0, 0
    w = np.int64(0)
    for f in range(len(fold_tile)):
        u = fold_tile[f]
        m = _recall(memo, head, u, w)
        if m < 0:
            m, w0 = n_memo, w
            n_ev = 0
            last_row = -1
            v = last_cols if u == col.shape[0] - 1 else col.shape[1]
            slot = 0
            n_diag = h + v - 1  # the anti-diagonals holding the tile's elements
            d, c = 0, 0
            while d < n_diag:
                sg = own[u, d - c, c]
                din = sg - w
                if din < 0:
                    din += n
                if din < a:  # held: skip to the first own set past the window
                    limit = w + a if sg >= w else w + a - n
                    if limit >= n:
                        break  # every later own set is held
                    chi = min(d, v - 1)
                    if own[u, d - chi, chi] < limit:
                        lo_d, hi_d = d + 1, n_diag
                        while lo_d < hi_d:
                            mid = (lo_d + hi_d) // 2
                            cm = min(mid, v - 1)
                            if own[u, mid - cm, cm] >= limit:
                                hi_d = mid
                            else:
                                lo_d = mid + 1
                        if lo_d >= n_diag:
                            break
                        d, c = lo_d, max(0, lo_d - h + 1)
                    else:
                        c += 1
                    while own[u, d - c, c] < limit:
                        c += 1
                    continue
                q = row[d - c] + col[u, c] - base
                hit, slot, best = _probe(table, q * depth, cnt[q], slot, w, n, a)
                if not hit:
                    k = (best - a) // p + 1
                    w = (w + k * p) % n
                    at = prefix + d
                    if at == last_row:
                        ev_c[n_ev - 1] += k
                    else:
                        ev_r[n_ev], ev_c[n_ev] = at, k
                        n_ev += 1
                        last_row = at
                if c < min(d, v - 1):
                    c += 1
                else:
                    d += 1
                    c = max(0, d - h + 1)
            rel_r, rel_c, n_rel = _remember(
                memo, head, m, u, w0, w, ev_r, ev_c, n_ev, rel_r, rel_c, n_rel
            )
            n_memo += 1
        out_r, out_c, n_out = _replay(memo, m, f * per_fold, rel_r, rel_c, out_r, out_c, n_out)
        w = memo[4, m]
    return out_r[:n_out], out_c[:n_out]
