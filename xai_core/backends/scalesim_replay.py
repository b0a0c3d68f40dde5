"""SCALE-Sim 3's memory system replayed exactly, event by event instead of cycle by cycle.

SCALE-Sim (USER bandwidth mode) feeds its double-buffered SRAMs one demand row per cycle.
This module takes the same demand and prefetch orders (:mod:`xai_core.backends.scalesim_orders`,
numpy index arithmetic on whole folds) and replays the same rules, but only at the cycles
where something happens:

- **Read SRAMs** (ifmap, filter). The operand's prefetch order, ``-1`` entries dropped, is
  cut into sets of ``e = ceil(S / 100)`` elements (``S``: the SRAM's words), ``Q // e + 1``
  sets in all. The active window holds ``a = ceil(ceil(S/2) / e)`` consecutive sets
  (circularly); a demanded address in none of them makes the window advance by
  ``p = ceil((S - ceil(S/2)) / e)`` sets, one prefetch each, until it is. Which demand
  triggers how many prefetches does not depend on time, so it is found first, in blocks
  (a vectorised hit test per block: exact in two comparisons for an address whose sets are
  at most ``a`` apart, held for one circular range of window starts; else first on the
  demand's set nearest its place in the prefetch order, then on all its sets; at a miss the
  number of prefetches in closed form, the window never stepping over a set since
  ``p <= a``). Prefetch ``k`` ends at
  cycle ``k * (ceil(P / bw) + 1) - 1``, and a row that waits for prefetches is delayed by
  SCALE-Sim's own offset rule (``offset += d`` and again ``+= d`` when ``d > 0``).
- **Write SRAM** (ofmap). Elements fill the buffer; once fewer than ``ceil(S/2)`` words are
  free and no drain is running, the lines written so far (rows of ``bw`` words, a partial
  row closed at every drain start) drain, ``ceil(half / bw)`` lines per drain, one line per
  cycle; a full buffer makes the array wait for the running drain's end.
- A row's stall is the largest of the three ports' stalls; total cycles are the last ofmap
  write's cycle, as SCALE-Sim reports them.

The stall loop runs once per event (a row with prefetches, a drain start, a full buffer),
never per cycle. Finding the prefetch rows walks the read window over a tile's demands in
Python (``_walk`` for tiles of up to 512 demands, ``_walk_blocks`` in numpy blocks above),
once per distinct tile and starting window: the folds that repeat a tile reuse its walk.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np

from xai_core.backends.scalesim_orders import orders, set_lookup, tile_streams, unsigned_for
from xai_core.errors import ValidationError

__all__ = ["ReplayResult", "replay"]


@dataclass(frozen=True)
class ReplayResult:
    """SCALE-Sim's counts for one layer.

    Attributes
    ----------
    total_cycles : int
        SCALE-Sim's "Total Cycles" (the cycle of the last ofmap write).
    stall_cycles : int
    overall_cycles : int
        "Total Cycles (incl. prefetch)": first DRAM read to last DRAM write.
    ifmap_dram_reads, filter_dram_reads, ofmap_dram_writes : int
        Words moved, as SCALE-Sim counts them (whole lines of ``bw`` words).
    port_stalls : (int, int, int)
        Stall cycles charged to the ifmap, filter and ofmap port (each row's stall to the
        port that waited longest).
    """

    total_cycles: int
    stall_cycles: int
    overall_cycles: int
    ifmap_dram_reads: int
    filter_dram_reads: int
    ofmap_dram_writes: int
    port_stalls: tuple[int, int, int] = (0, 0, 0)


# -- read buffer: which demands trigger prefetches ---------------------------------------


def _prefetch_rows(pre, tiles, fold_tile, kind, prefix, per_fold, size):
    """Demand rows that trigger prefetches, and how many each (SCALE-Sim's window walk).

    The walk is done fold by fold; a fold whose tile and starting window were seen before
    repeats that fold's prefetches (when every tile is used once, in order, and tiles are
    short, the walk runs over the whole demand at once).
    """
    eps = math.ceil(size / 100)
    q = int((pre != -1).sum())
    n_sets = q // eps + 1
    active = math.ceil(size * 0.5)
    a = min(math.ceil(active / eps), n_sets)
    p = min(math.ceil((size - active) / eps), n_sets - a)
    if a >= n_sets:
        return [], []
    base, index, table = set_lookup(pre, eps)
    stream, rows, starts, place = tile_streams(tiles, kind, prefix, (base, index))
    set_list = stream.tolist() if table is None else None
    if table is None:
        hint = stream.astype(unsigned_for(n_sets))
    else:
        hint = _cover(table, stream, place, eps, n_sets, a)
    once = len(fold_tile) == len(tiles) and (fold_tile == np.arange(len(tiles))).all()
    if once and len(stream) < _FIRST_BLOCK * len(tiles):
        # short tiles, each once, in order: one walk over the whole demand, rows global
        fold = np.repeat(np.arange(len(tiles)), np.diff(starts))
        row_list = (rows + fold * per_fold).tolist()
        if set_list is not None and len(stream) <= 512:
            ev_rows, ev_counts, _ = _walk(set_list, row_list, 0, len(stream), 0, n_sets, a, p)
        else:
            ev_rows, ev_counts, _ = _walk_blocks(
                hint, table, stream, row_list, 0, len(stream), 0, n_sets, a, p
            )
        return ev_rows, ev_counts
    row_list = rows.tolist()
    bounds = starts.tolist()
    memo: dict[tuple[int, int], tuple[list[int], list[int], int]] = {}
    ev_rows: list[int] = []
    ev_counts: list[int] = []
    w = 0
    for f, u in enumerate(fold_tile.tolist()):
        key = (u, w)
        hit = memo.get(key)
        if hit is None:
            lo, hi = bounds[u], bounds[u + 1]
            if set_list is not None and hi - lo <= 512:
                hit = _walk(set_list, row_list, lo, hi, w, n_sets, a, p)
            else:
                hit = _walk_blocks(hint, table, stream, row_list, lo, hi, w, n_sets, a, p)
            memo[key] = hit
        rel, counts, w = hit
        base = f * per_fold
        ev_rows.extend([base + x for x in rel])
        ev_counts.extend(counts)
    return ev_rows, ev_counts


def _walk(set_list, row_list, lo, hi, w, n_sets, a, p):
    """The window walk over demands ``lo:hi`` (one set each) from window start ``w``.

    Returns (rows in the fold with prefetches, prefetches in each, final window start).
    """
    rel: list[int] = []
    counts: list[int] = []
    for i in range(lo, hi):
        s = set_list[i]
        if (s - w) % n_sets < a:
            continue
        k = ((s - w) % n_sets - a) // p + 1
        w = (w + k * p) % n_sets
        rel.append(row_list[i])
        counts.append(k)
    return *_merged(rel, counts), w


def _merged(rows: list[int], counts: list[int]) -> tuple[list[int], list[int]]:
    """Consecutive prefetches at one demand row as one entry, their counts summed."""
    if len(rows) < 2:
        return rows, counts
    r = np.asarray(rows)
    starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
    return r[starts].tolist(), np.add.reduceat(np.asarray(counts), starts).tolist()


def _steps(sets: list[int], w: int, n_sets: int, a: int, p: int) -> int:
    """Prefetches (window advances of ``p <= a`` sets) until one of ``sets``, none in the
    window of ``a`` sets from ``w``, is in it: the window never steps over a set."""
    return min(((x - w) % n_sets - a) // p for x in sets) + 1


def _in_window(sets: np.ndarray, w: int, a: int, n_sets: int) -> np.ndarray:
    """Which of ``sets`` (unsigned) lie in the window of ``a`` sets from ``w`` (circular)."""
    if w + a <= n_sets:  # unsigned: a set below w wraps to a large difference
        return (sets - sets.dtype.type(w)) < a
    return (sets >= w) | (sets < w + a - n_sets)


def _cover(table, stream, place, eps, n_sets, a):
    """Each demand's window starts that hold it, as a circular range ``(start, length)``,
    and whether the range is exact (else it is one set's and all sets must be tested).

    The window of ``a`` sets from ``w`` holds set ``s`` for ``w`` in ``(s - a, s]``; an
    address whose sets (ascending in ``table``'s column) are at most ``a`` apart is held for ``w`` in one range.
    Another's range is that of its set nearest its place (the tiles are prefetched about
    in order).
    """
    low = table[0].astype(np.int32)  # each column ascending
    exact = (np.diff(table, axis=0) <= a).all(axis=0)
    length = np.minimum(table[-1] - low + a, n_sets)
    if not exact.all():
        est = (place // eps).astype(np.int32)
        hint = table[0, stream]
        gap = np.abs(hint.astype(np.int32) - est)
        for held in table[1:]:
            held = held[stream]
            g = np.abs(held.astype(np.int32) - est)
            hint = np.where(g < gap, held, hint)
            gap = np.minimum(gap, g)
        ex = exact[stream]
        low = np.where(ex, low[stream], hint)
        length = np.where(ex, length[stream], a)
    else:
        ex, low, length = exact[stream], low[stream], length[stream]
    dtype = unsigned_for(n_sets)
    start = ((low - (a - 1)) % n_sets).astype(dtype)
    return start, length.astype(dtype), ex


def _in_cover(start: np.ndarray, length: np.ndarray, w: int, n_sets: int) -> np.ndarray:
    """Whether ``w`` is in each circular range ``[start, start + length)`` (unsigned)."""
    d = start.dtype.type(w) - start  # wraps below zero: then d + n_sets is w - start + n_sets
    return (d < length) | ((d + start.dtype.type(n_sets)) < length)


def _walk_blocks(hint, table, stream, row_list, lo, hi, w, n_sets, a, p):
    """:func:`_walk` for long streams or several sets per address: a vectorised hit test
    over blocks of demands, a scalar walk at each miss.

    With ``table`` None, demand ``i`` is held by the set ``hint[i]``; else by the sets
    ``table[:, stream[i]]``, and ``hint`` is :func:`_cover`'s (start, length, exact): a
    demand in its range is a hit, one outside an exact range a miss, the others are tested
    on all their sets.
    """
    rel: list[int] = []
    counts: list[int] = []
    t, block = lo, _FIRST_BLOCK
    while t < hi:
        stop = min(hi, t + block)
        if table is None:
            hit = _in_window(hint[t:stop], w, a, n_sets)
        else:
            hit = _in_cover(hint[0][t:stop], hint[1][t:stop], w, n_sets)
        first = int(hit.argmin())
        if not hit[first]:
            if table is not None and not hint[2][t + first]:
                cand = np.flatnonzero(~hit[first:]) + (t + first)
                ex = hint[2][cand]
                e = int(ex.argmax())
                if ex[e]:  # an exact miss ends the search
                    cand = cand[: e + 1]
                held = np.logical_or.reduce(_in_window(table[:, stream[cand]], w, a, n_sets))
                j = int(held.argmin())
                first = -1 if held[j] else int(cand[j]) - t
        else:
            first = -1
        if first < 0:
            t, block = stop, min(block * 8, 1 << 16)
            continue
        t += first
        mine = [int(hint[t])] if table is None else table[:, stream[t]].tolist()
        k = _steps(mine, w, n_sets, a, p)
        w = (w + k * p) % n_sets
        rel.append(row_list[t])
        counts.append(k)
        t, block = t + 1, _FIRST_BLOCK
    return *_merged(rel, counts), w


_FIRST_BLOCK = 256


def _read_stall(cycle: int, done: int, count: int, step: int) -> int:
    """SCALE-Sim's read-buffer delay of a row at ``cycle`` waiting for ``count`` prefetches
    after ``done`` earlier ones (each ``step`` cycles)."""
    offset = 1
    for j in range(1, count + 1):
        last = -1 + (done + j) * step
        pot = last - (cycle + offset)
        offset += pot
        if pot > 0:
            offset += pot
    return offset - 1


# -- write buffer -------------------------------------------------------------------------


class _WriteBuffer:
    """SCALE-Sim's ofmap write buffer, advanced a whole run of elements at a time."""

    def __init__(self, size: int, bw: int, writes: np.ndarray) -> None:
        self.size, self.bw = size, bw
        self.active = math.ceil(size * 0.5)
        self.lines = math.ceil((size - self.active) / bw)
        self.cum = [0, *np.cumsum(writes).tolist()]
        self.n_rows = len(writes)
        self.free, self.drain_end, self.e = size, 0, 0
        self.rows_closed, self.line_idx, self.start_line = 0, 0, 0
        self.partial: dict[int, int] = {}
        self.drained, self.stop = 0, 0
        self.changed = True
        self.row_at = 0

    def _store(self, n: int) -> None:
        self.e += n
        self.free -= n
        self.line_idx += n
        self.rows_closed += self.line_idx // self.bw
        self.line_idx %= self.bw

    def _flush(self) -> None:
        if self.line_idx:
            self.partial[self.rows_closed] = self.line_idx
            self.rows_closed += 1
            self.line_idx = 0

    def _drain(self, cycle: int) -> int:
        self._flush()
        taken = min(self.lines, self.rows_closed - self.start_line)
        last = self.start_line + taken - 1
        data = taken * self.bw - (self.bw - self.partial.get(last, self.bw))
        self.drained += data
        self.free += data
        self.start_line += taken
        end = cycle + taken - 1
        self.stop = max(self.stop, end)
        return end

    def next_event_row(self, row: int, stall: int) -> int:
        """First row >= ``row`` where the buffer stalls or starts a drain (cycles row + stall)."""
        e, free = self.e, self.free
        e_zero = e + max(free, 1) - 1
        e_thr = e + max(free - self.active, 0)
        row_cur = max(row, self.drain_end - stall)
        e_cur = self.cum[min(row_cur, self.n_rows)]
        el = e_zero if e_zero < e_cur else max(e_thr, e_cur)
        if el >= self.cum[-1]:
            return self.n_rows
        return bisect.bisect_right(self.cum, el) - 1

    def advance_to(self, row: int) -> None:
        """Store the writes of the rows before ``row`` (no event among them)."""
        self._store(self.cum[row] - self.e)
        self.row_at = row

    def row(self, r: int, cycle: int) -> int:
        """Every write of row ``r`` at ``cycle``; returns the row's delay."""
        offset = 0
        end = self.cum[r + 1]
        self.row_at = r + 1
        while self.e < end:
            rem = end - self.e
            cur = cycle + offset
            if cur < self.drain_end:
                n = max(self.free, 1)
                if n > rem:
                    self._store(rem)
                    break
                self._store(n)
                offset += self.drain_end - cur
                self.changed = True
            else:
                n = max(self.free - self.active + 1, 1)
                if n > rem:
                    self._store(rem)
                    break
                self._store(n)
                self.drain_end = self._drain(cur)
                self.changed = True
        return offset

    def finish(self, cycle: int) -> int:
        """Drain what is left from ``cycle`` on; the last DRAM write's cycle."""
        self._flush()
        while self.start_line < self.rows_closed:
            cycle = self._drain(cycle) + 1
        return self.stop


# -- the replay --------------------------------------------------------------------------


def _check(conv, array, dataflow, sram_words, bandwidth) -> None:
    """Clear errors for what SCALE-Sim would reject, loop on, or mis-simulate."""

    def ints(v, n):
        return (
            isinstance(v, (tuple, list))
            and len(v) == n
            and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in v)
        )

    if not ints(conv, 7) or min(conv) < 1 or conv[2] > conv[0] or conv[3] > conv[1]:
        raise ValidationError(
            "conv must be 7 integers >= 1 (ifmap h, w, filter h, w, channels, filters, "
            f"stride) with the filter inside the ifmap; got {conv!r}."
        )
    if not ints(array, 2) or min(array) < 1:
        raise ValidationError(f"array must be 2 integers >= 1 (rows, cols); got {array!r}.")
    if dataflow not in ("ws", "os", "is"):
        raise ValidationError(f"dataflow must be 'ws', 'os' or 'is'; got {dataflow!r}.")
    if not ints(sram_words, 3) or min(sram_words) < 2:
        raise ValidationError(
            f"sram_words must be 3 integers >= 2 (ifmap, filter, ofmap words); got {sram_words!r}."
        )
    if not ints(bandwidth, 3) or min(bandwidth) < 1:
        raise ValidationError(
            f"bandwidth must be 3 integers >= 1 (words per cycle); got {bandwidth!r}."
        )


def replay(
    conv: tuple[int, int, int, int, int, int, int],
    *,
    array: tuple[int, int],
    dataflow: str,
    sram_words: tuple[int, int, int],
    bandwidth: tuple[int, int, int],
) -> ReplayResult:
    """SCALE-Sim 3's cycles, stalls and DRAM traffic for one layer (USER bandwidth mode).

    Parameters
    ----------
    conv : (H, W, R, S, C, filters, stride)
        SCALE-Sim's convolution fields (a GEMM ``M, N, K`` is ``(M, K, 1, K, 1, N, 1)``).
    array : (rows, cols)
    dataflow : {"ws", "os", "is"}
    sram_words : (ifmap, filter, ofmap)
        SRAM sizes in words (SCALE-Sim: KiB * 1024, 1-byte words).
    bandwidth : (ifmap, filter, ofmap)
        DRAM words per cycle of each port (integers, as SCALE-Sim's lines).

    Returns
    -------
    ReplayResult

    Raises
    ------
    ValidationError
        For a malformed layer or architecture, or an SRAM under two words (its prefetch
        half is empty and SCALE-Sim never finishes).
    """
    _check(conv, array, dataflow, sram_words, bandwidth)
    rows, cols = array
    ops, per_fold, writes = orders(conv, dataflow, rows, cols)
    n_rows = len(writes)
    reads = []
    events = []
    for (pre, tiles, fold_tile, kind, prefix), size, bw in zip(ops, sram_words, bandwidth):
        ev_r, ev_c = _prefetch_rows(pre, tiles, fold_tile, kind, prefix, per_fold, size)
        fetch_lines = math.ceil(len(pre) / bw)
        first = min(math.ceil(math.ceil(size * 0.5) / bw), fetch_lines)
        n_lines = math.ceil((size - math.ceil(size * 0.5)) / bw)
        reads.append((first, first * bw + sum(ev_c) * n_lines * bw))
        events.append((ev_r, ev_c, n_lines + 1))
    w = _WriteBuffer(sram_words[2], bandwidth[2], writes)
    # the rows where either read port prefetches, in order, with each port's count
    reads_at: dict[int, list[int]] = {}
    for j, (ev_r, ev_c, _) in enumerate(events):
        for r, c in zip(ev_r, ev_c):
            reads_at.setdefault(r, [0, 0])[j] = c
    steps = (events[0][2], events[1][2])
    stall, last, total = 0, n_rows - 1, None
    ports = [0, 0, 0]
    done = [0, 0]
    w_next, w_stall = -1, -1
    for r in [*sorted(reads_at), n_rows]:
        while True:  # write-only events before row r
            if w.changed or stall != w_stall:
                w_next, w_stall, w.changed = w.next_event_row(w.row_at, stall), stall, False
            if w_next >= r:
                break
            w.advance_to(w_next)
            off = w.row(w_next, w_next + stall)
            w.changed = True
            if w_next == last:
                total = w_next + stall + off
            ports[2] += off
            stall += off
        if r >= n_rows:
            break
        w.advance_to(r)
        cycle = r + stall
        counts = reads_at[r]
        each = [0, 0, 0]
        for j in (0, 1):
            if counts[j]:
                each[j] = _read_stall(cycle, done[j], counts[j], steps[j])
                done[j] += counts[j]
        each[2] = w.row(r, cycle)
        if r == last:
            total = cycle + each[2]
        s = max(each)
        if s > 0:
            ports[each.index(s)] += s
            stall += s
    w.advance_to(n_rows)
    if total is None:
        total = last + stall
    stop = w.finish(total)
    overall = int(stop + max(reads[0][0], reads[1][0]))
    return ReplayResult(
        total_cycles=int(total),
        stall_cycles=int(stall),
        overall_cycles=overall,
        ifmap_dram_reads=int(reads[0][1]),
        filter_dram_reads=int(reads[1][1]),
        ofmap_dram_writes=int(w.drained),
        port_stalls=tuple(ports),
    )
