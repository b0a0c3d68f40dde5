"""The compiled write buffer and stall events of the SCALE-Sim replay.

:func:`stalls` walks the rows with prefetches (from
:mod:`xai_core.backends.scalesim_kernels`) and the ofmap write buffer's drain starts and
full-buffer waits in cycle order (the rules in :mod:`xai_core.backends.scalesim_replay`'s
docstring), skipping the rows between events by a binary search on the cumulative writes.
A numba kernel, compiled once and cached on disk.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["stalls"]

# -- the write buffer's state: elements stored, free words, lines, drains -----------------

(
    _E,
    _FREE,
    _DRAIN_END,
    _CLOSED,
    _LINE,
    _START,
    _DRAINED,
    _STOP,
    _ROW_AT,
    _CHANGED,
    _N_PART,
    _CUR,
) = range(12)


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
        partial[0, st[_N_PART]] = st[_CLOSED]
        partial[1, st[_N_PART]] = st[_LINE]
        st[_N_PART] += 1
        st[_CLOSED] += 1
        st[_LINE] = 0


@njit(cache=True, nogil=True, inline="always")
def _drain(st, partial, cycle, lines, bw):  # pragma: no cover - compiled
    """Start a drain of up to ``lines`` closed lines at ``cycle``; its last cycle."""
    _flush(st, partial)
    taken = min(lines, st[_CLOSED] - st[_START])
    last = st[_START] + taken - 1
    # the fill of line ``last`` (queried in rising order): its partial fill if closed early
    cur = st[_CUR]
    while cur < st[_N_PART] and partial[0, cur] < last:
        cur += 1
    st[_CUR] = cur
    fill = partial[1, cur] if cur < st[_N_PART] and partial[0, cur] == last else bw
    data = taken * bw - (bw - fill)
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
def _cumulative_writes(o_rows, o_cols, first, per_fold):  # pragma: no cover - compiled
    """Ofmap writes before each demand row: in fold ``f``'s row ``first[f] + x``, the
    columns ``c`` with ``0 <= x - c < o_rows[f]`` (and ``c < o_cols[f]``)."""
    cum = np.zeros(len(o_rows) * per_fold + 1, np.int64)
    total = 0
    for f in range(len(o_rows)):
        for y in range(per_fold):
            x = y - first[f]
            total += max(0, min(o_cols[f] - 1, x) - max(0, x - o_rows[f] + 1) + 1)
            cum[f * per_fold + y + 1] = total
    return cum


@njit(cache=True, nogil=True)
def stalls(
    rows0, counts0, rows1, counts1, step0, step1, ofmap, per_fold, size, bw
):  # pragma: no cover
    """The stall events in row order: prefetch waits, drain starts, full-buffer waits.

    Parameters
    ----------
    rows0, counts0, rows1, counts1 : (E,) int64
        :func:`walk`'s prefetch rows and counts of the ifmap and filter SRAMs.
    step0, step1 : int
        Cycles per prefetch of each (``ceil(P / bw) + 1``).
    ofmap : ((F,) int64, (F,) int64, (F,) int64)
        Each fold's ofmap tile: rows, columns, and the first demand row (in the fold)
        written; column ``c`` is written from that row plus ``c`` on, a row a cycle.
    per_fold : int
        Demand rows per fold.
    size, bw : int
        Ofmap SRAM words, ofmap DRAM words per cycle.

    Returns
    -------
    (total, stall, stop, drained, ifmap stall, filter stall, ofmap stall)
        The last ofmap write's cycle, the stall cycles, the last DRAM write's cycle, the
        words written to DRAM, and the stalls charged to each port.
    """
    cum = _cumulative_writes(ofmap[0], ofmap[1], ofmap[2], per_fold)
    n_rows = len(cum) - 1
    active = (size + 1) // 2
    lines = (size - active + bw - 1) // bw
    st = np.zeros(12, np.int64)
    st[_FREE] = size
    st[_CHANGED] = 1
    # lines closed before they were full: (line, fill), at most one per drain (and the last)
    partial = np.empty((2, cum[n_rows] + 2), np.int64)
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
