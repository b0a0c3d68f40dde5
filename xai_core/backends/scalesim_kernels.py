"""The compiled loops of the SCALE-Sim replay: sets per address, the window walk, the stall events.

Three numba kernels, called by :mod:`xai_core.backends.scalesim_replay` (whose docstring
states the rules they follow):

- :func:`set_table`: the sets of the prefetch order that hold each address (ascending), in
  one pass over the prefetch order;
- :func:`tile_runs`: each distinct tile's demands in order, once, runs of demands held by
  the same one set merged;
- :func:`walk`: the read window's walk over the folds' demand runs, a tile's walk done once
  per starting window (a fold that repeats a tile from the same window repeats its
  prefetches);
- :func:`stalls`: the rows with prefetches and the write buffer's drains and full-buffer
  waits, in cycle order, giving the stall and total cycles and the ofmap's DRAM writes.

Compiled once and cached on disk (``cache=True``); each is linear in what it walks.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.typed import Dict, List

__all__ = ["set_table", "stalls", "tile_runs", "walk"]


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
    memo = Dict.empty(key_type=types.int64, value_type=types.int64)
    m_lo, m_hi = List.empty_list(types.int64), List.empty_list(types.int64)
    m_w = List.empty_list(types.int64)
    rel_r, rel_c = List.empty_list(types.int64), List.empty_list(types.int64)
    out_r, out_c = List.empty_list(types.int64), List.empty_list(types.int64)
    w = np.int64(0)
    for f in range(len(fold_tile)):
        u = fold_tile[f]
        key = u * n + w
        if key in memo:
            m = memo[key]
        else:
            m = len(m_lo)
            lo = len(rel_r)
            last_row = -1
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
                    best = n
                    hit = False
                    for j in range(r * depth, r * depth + cnt[r]):
                        d = table[j] - w
                        if d < 0:
                            d += n
                        if d < a:
                            hit = True
                            break
                        best = min(best, d)
                    if hit:
                        continue
                # the window advances p sets at a time and never steps over a set (p <= a)
                k = (best - a) // p + 1
                w = (w + k * p) % n
                row = rows[i]
                if row == last_row:
                    rel_c[len(rel_c) - 1] += k
                else:
                    rel_r.append(row)
                    rel_c.append(k)
                    last_row = row
            memo[key] = m
            m_lo.append(lo)
            m_hi.append(len(rel_r))
            m_w.append(w)
        for t in range(m_lo[m], m_hi[m]):
            out_r.append(f * per_fold + rel_r[t])
            out_c.append(rel_c[t])
        w = m_w[m]
    ev_rows = np.empty(len(out_r), np.int64)
    counts = np.empty(len(out_r), np.int64)
    for t in range(len(out_r)):
        ev_rows[t] = out_r[t]
        counts[t] = out_c[t]
    return ev_rows, counts


# -- the write buffer's state: elements stored, free words, lines, drains -----------------

_E, _FREE, _DRAIN_END, _CLOSED, _LINE, _START, _DRAINED, _STOP, _ROW_AT, _CHANGED = range(10)


@njit(cache=True, nogil=True, inline="always")
def _store(st, n, bw):  # pragma: no cover - compiled
    st[_E] += n
    st[_FREE] -= n
    st[_LINE] += n
    st[_CLOSED] += st[_LINE] // bw
    st[_LINE] %= bw


@njit(cache=True, nogil=True, inline="always")
def _flush(st, partial):  # pragma: no cover - compiled
    """Close the open line (its fill recorded) as a drain starts."""
    if st[_LINE]:
        partial[st[_CLOSED]] = st[_LINE]
        st[_CLOSED] += 1
        st[_LINE] = 0


@njit(cache=True, nogil=True, inline="always")
def _drain(st, partial, cycle, lines, bw):  # pragma: no cover - compiled
    """Start a drain of up to ``lines`` closed lines at ``cycle``; its last cycle."""
    _flush(st, partial)
    taken = min(lines, st[_CLOSED] - st[_START])
    last = st[_START] + taken - 1
    data = taken * bw - (bw - partial.get(last, bw))
    st[_DRAINED] += data
    st[_FREE] += data
    st[_START] += taken
    end = cycle + taken - 1
    st[_STOP] = max(st[_STOP], end)
    return end


@njit(cache=True, nogil=True, inline="always")
def _write_row(st, partial, cum, r, cycle, active, lines, bw):  # pragma: no cover
    """Every write of row ``r`` at ``cycle``; the row's delay (waits for a full buffer)."""
    offset = 0
    end = cum[r + 1]
    st[_ROW_AT] = r + 1
    while st[_E] < end:
        rem = end - st[_E]
        cur = cycle + offset
        if cur < st[_DRAIN_END]:
            k = max(st[_FREE], 1)
            if k > rem:
                _store(st, rem, bw)
                break
            _store(st, k, bw)
            offset += st[_DRAIN_END] - cur
            st[_CHANGED] = 1
        else:
            k = max(st[_FREE] - active + 1, 1)
            if k > rem:
                _store(st, rem, bw)
                break
            _store(st, k, bw)
            st[_DRAIN_END] = _drain(st, partial, cur, lines, bw)
            st[_CHANGED] = 1
    return offset


@njit(cache=True, nogil=True, inline="always")
def _next_write_event(st, cum, row, stall, active):  # pragma: no cover - compiled
    """First row >= ``row`` where the buffer waits or starts a drain (at cycle row + stall)."""
    n_rows = len(cum) - 1
    e, free = st[_E], st[_FREE]
    e_zero = e + max(free, 1) - 1
    e_thr = e + max(free - active, 0)
    row_cur = max(row, st[_DRAIN_END] - stall)
    e_cur = cum[min(row_cur, n_rows)]
    el = e_zero if e_zero < e_cur else max(e_thr, e_cur)
    if el >= cum[n_rows]:
        return n_rows
    return np.searchsorted(cum, el, side="right") - 1


@njit(cache=True, nogil=True, inline="always")
def _advance(st, cum, row, bw):  # pragma: no cover - compiled
    _store(st, cum[row] - st[_E], bw)
    st[_ROW_AT] = row


@njit(cache=True, nogil=True, inline="always")
def _read_stall(cycle, done, count, step):  # pragma: no cover - compiled
    """SCALE-Sim's delay of a row at ``cycle`` waiting for ``count`` prefetches after
    ``done`` earlier ones (each ``step`` cycles): ``offset += d``, again when ``d > 0``."""
    offset = 1
    for j in range(1, count + 1):
        pot = -1 + (done + j) * step - (cycle + offset)
        offset += pot
        if pot > 0:
            offset += pot
    return offset - 1


@njit(cache=True, nogil=True)
def stalls(rows0, counts0, rows1, counts1, step0, step1, cum, size, bw):  # pragma: no cover
    """The stall events in row order: prefetch waits, drain starts, full-buffer waits.

    Parameters
    ----------
    rows0, counts0, rows1, counts1 : (E,) int64
        :func:`walk`'s prefetch rows and counts of the ifmap and filter SRAMs.
    step0, step1 : int
        Cycles per prefetch of each (``ceil(P / bw) + 1``).
    cum : (R + 1,) int64
        Ofmap writes before each demand row (cumulative, from 0).
    size, bw : int
        Ofmap SRAM words, ofmap DRAM words per cycle.

    Returns
    -------
    (total, stall, stop, drained, ifmap stall, filter stall, ofmap stall)
        The last ofmap write's cycle, the stall cycles, the last DRAM write's cycle, the
        words written to DRAM, and the stalls charged to each port.
    """
    n_rows = len(cum) - 1
    active = (size + 1) // 2
    lines = (size - active + bw - 1) // bw
    st = np.zeros(10, np.int64)
    st[_FREE] = size
    st[_CHANGED] = 1
    partial = Dict.empty(key_type=types.int64, value_type=types.int64)
    stall, last, total = np.int64(0), n_rows - 1, np.int64(-1)
    ports = np.zeros(3, np.int64)
    done0, done1 = np.int64(0), np.int64(0)
    w_next, w_stall = np.int64(-1), np.int64(-1)
    i0, i1 = 0, 0
    while True:
        r = n_rows
        if i0 < len(rows0):
            r = min(r, rows0[i0])
        if i1 < len(rows1):
            r = min(r, rows1[i1])
        while True:  # write-only events before row r
            if st[_CHANGED] or stall != w_stall:
                w_next = _next_write_event(st, cum, st[_ROW_AT], stall, active)
                w_stall = stall
                st[_CHANGED] = 0
            if w_next >= r:
                break
            _advance(st, cum, w_next, bw)
            off = _write_row(st, partial, cum, w_next, w_next + stall, active, lines, bw)
            st[_CHANGED] = 1
            if w_next == last:
                total = w_next + stall + off
            ports[2] += off
            stall += off
        if r >= n_rows:
            break
        _advance(st, cum, r, bw)
        cycle = r + stall
        e0, e1 = np.int64(0), np.int64(0)
        if i0 < len(rows0) and rows0[i0] == r:
            e0 = _read_stall(cycle, done0, counts0[i0], step0)
            done0 += counts0[i0]
            i0 += 1
        if i1 < len(rows1) and rows1[i1] == r:
            e1 = _read_stall(cycle, done1, counts1[i1], step1)
            done1 += counts1[i1]
            i1 += 1
        e2 = _write_row(st, partial, cum, r, cycle, active, lines, bw)
        if r == last:
            total = cycle + e2
        s = max(e0, e1, e2)
        if s > 0:
            ports[0 if s == e0 else (1 if s == e1 else 2)] += s
            stall += s
    _advance(st, cum, n_rows, bw)
    if total < 0:
        total = last + stall
    _flush(st, partial)  # what is left drains from the last write on
    cycle = total
    while st[_START] < st[_CLOSED]:
        cycle = _drain(st, partial, cycle, lines, bw) + 1
    return total, stall, st[_STOP], st[_DRAINED], ports[0], ports[1], ports[2]
