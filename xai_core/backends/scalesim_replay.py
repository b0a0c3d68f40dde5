"""SCALE-Sim 3's memory system replayed exactly, event by event instead of cycle by cycle.

SCALE-Sim (USER bandwidth mode) feeds its double-buffered SRAMs one demand row per cycle.
This module builds the same demand and prefetch orders (numpy index arithmetic on whole
folds) and replays the same rules, but only at the cycles where something happens:

- **Read SRAMs** (ifmap, filter). The operand's prefetch order, ``-1`` entries dropped, is
  cut into sets of ``e = ceil(S / 100)`` elements (``S``: the SRAM's words), ``Q // e + 1``
  sets in all. The active window holds ``a = ceil(ceil(S/2) / e)`` consecutive sets
  (circularly); a demanded address in none of them makes the window advance by
  ``p = ceil((S - ceil(S/2)) / e)`` sets, one prefetch each, until it is. Which demand
  triggers how many prefetches does not depend on time, so it is found first, in blocks
  (a vectorised hit test per block, a scalar walk only at a miss). Prefetch ``k`` ends at
  cycle ``k * (ceil(P / bw) + 1) - 1``, and a row that waits for prefetches is delayed by
  SCALE-Sim's own offset rule (``offset += d`` and again ``+= d`` when ``d > 0``).
- **Write SRAM** (ofmap). Elements fill the buffer; once fewer than ``ceil(S/2)`` words are
  free and no drain is running, the lines written so far (rows of ``bw`` words, a partial
  row closed at every drain start) drain, ``ceil(half / bw)`` lines per drain, one line per
  cycle; a full buffer makes the array wait for the running drain's end.
- A row's stall is the largest of the three ports' stalls; total cycles are the last ofmap
  write's cycle, as SCALE-Sim reports them.

The loop runs once per event (a row with prefetches, a drain start, a full buffer), never
per cycle or per element.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

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
    """

    total_cycles: int
    stall_cycles: int
    overall_cycles: int
    ifmap_dram_reads: int
    filter_dram_reads: int
    ofmap_dram_writes: int


# -- operands, demand and prefetch orders -------------------------------------------------


def _operands(conv: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    """SCALE-Sim's ifmap (pixels x window) and filter (window x filters) address matrices."""
    h, w, fh, fw, ch, nf, stride = conv
    oh, ow = -(-(h - fh + stride) // stride), -(-(w - fw + stride) // stride)
    px, win = oh * ow, fh * fw * ch
    o_row, o_col = np.divmod(np.arange(px), ow)
    i_row, i_col = o_row * stride, o_col * stride
    c_row, rest = np.divmod(np.arange(win), fw * ch)
    c_col, c_ch = np.divmod(rest, ch)
    rr = i_row[:, None] + c_row[None, :]
    cc = i_col[:, None] + c_col[None, :]
    ifmap = np.where((rr < h) & (cc < w), (rr * w + cc) * ch + c_ch[None, :], -1)
    filt = np.arange(nf)[None, :] * win + np.arange(win)[:, None] + 10_000_000
    return ifmap.astype(np.int64), filt.astype(np.int64), (px, nf)


def _blocks(mat: np.ndarray, tile_rows: int, tile_cols: int, rf: int, cf: int) -> np.ndarray:
    """``mat`` padded with -1 and cut into (rf, cf, tile_rows, tile_cols) tiles."""
    pad = np.full((rf * tile_rows, cf * tile_cols), -1, dtype=np.int64)
    pad[: mat.shape[0], : mat.shape[1]] = mat
    return pad.reshape(rf, tile_rows, cf, tile_cols).transpose(0, 2, 1, 3)


def _diagonal(mat: np.ndarray) -> np.ndarray:
    """Elements in SCALE-Sim's prefetch diagonal order (anti-diagonals, bottom row first)."""
    r, c = np.indices(mat.shape)
    order = np.lexsort((-r.ravel(), (r + c).ravel()))
    return mat.ravel()[order]


def _skew(tiles: np.ndarray, prefix: int, suffix: int) -> np.ndarray:
    """Folds (F, h, w) framed by -1 rows and skewed (column c delayed c rows): (F, rows, w)."""
    f, h, w = tiles.shape
    rows = prefix + h + suffix + w - 1
    out = np.full((f, rows, w), -1, dtype=np.int64)
    r, c = np.indices((h, w))
    out[:, prefix + r + c, c] = tiles
    return out


def _frame(tiles: np.ndarray, suffix: int) -> np.ndarray:
    """Folds (F, h, w) flipped upside down and followed by ``suffix`` -1 rows, not skewed."""
    f, h, w = tiles.shape
    out = np.full((f, h + suffix, w), -1, dtype=np.int64)
    out[:, :h] = tiles[:, ::-1]
    return out


def _orders(conv, dataflow: str, rows: int, cols: int):
    """Prefetch orders and demand matrices of ifmap and filter, ofmap writes per row."""
    ifmap, filt, (px, nf) = _operands(conv)
    win = ifmap.shape[1]
    if dataflow == "ws":  # Sr = window, Sc = filters, T = pixels
        rf, cf = -(-win // rows), -(-nf // cols)
        t = px
        a_t = _blocks(ifmap, px, rows, 1, rf)[0]  # (rf, T, R)
        if_pre = _diagonal(a_t.reshape(-1, rows))
        f_t = _blocks(filt, win, cols, 1, cf)[0]  # (cf, K, C)
        f_pre = f_t.reshape(-1)
        a_dem = _skew(np.tile(a_t, (cf, 1, 1)), rows, cols - 1)
        b_tiles = _blocks(filt, rows, cols, rf, cf).transpose(1, 0, 2, 3).reshape(-1, rows, cols)
        b_dem = _frame(b_tiles, rows + cols + t - 2)
        o_cols = np.repeat(np.minimum(cols, nf - np.arange(cf) * cols), rf)
        o_rows, o_prefix = np.full(cf * rf, t), 2 * rows - 1
    elif dataflow == "is":  # Sr = window, Sc = pixels, T = filters
        rf, cf = -(-win // rows), -(-px // cols)
        t = nf
        at = ifmap.T
        if_pre = _blocks(at, win, cols, 1, cf)[0].reshape(-1)
        b_t = _blocks(filt, rows, nf, rf, 1)[:, 0].transpose(0, 2, 1)  # (rf, T, R)
        f_pre = _diagonal(b_t.reshape(-1, rows))
        a_tiles = _blocks(at, rows, cols, rf, cf).transpose(1, 0, 2, 3).reshape(-1, rows, cols)
        a_dem = _frame(a_tiles, rows + cols + t - 2)
        b_dem = _skew(np.tile(b_t, (cf, 1, 1)), rows, cols - 1)
        o_cols = np.repeat(np.minimum(cols, px - np.arange(cf) * cols), rf)
        o_rows, o_prefix = np.full(cf * rf, t), 2 * rows - 1
    else:  # os: Sr = pixels, Sc = filters, T = window
        rf, cf = -(-px // rows), -(-nf // cols)
        t = win
        a_t = _blocks(ifmap.T, win, rows, 1, rf)[0]  # (rf, T, R)
        if_pre = _diagonal(a_t.reshape(-1, rows))
        b_t = _blocks(filt, win, cols, 1, cf)[0]  # (cf, T, C)
        f_pre = _diagonal(b_t.reshape(-1, cols))
        a_dem = _skew(np.tile(a_t, (cf, 1, 1)), 0, cols - 1)
        b_dem = _skew(np.repeat(b_t, rf, axis=0), 0, rows - 1)
        o_cols = np.repeat(np.minimum(cols, nf - np.arange(cf) * cols), rf)
        o_rows = np.tile(np.minimum(rows, px - np.arange(rf) * rows), cf)
        o_prefix = t - 1
    a_dem = a_dem.reshape(-1, a_dem.shape[-1])
    b_dem = b_dem.reshape(-1, b_dem.shape[-1])
    n_rows = a_dem.shape[0]
    per_fold = n_rows // (cf * rf)
    writes = _ofmap_counts(o_rows, o_cols, o_prefix, per_fold, dataflow, rows, cols)
    return if_pre, f_pre, a_dem, b_dem, writes


def _ofmap_counts(o_rows, o_cols, prefix, per_fold, dataflow, rows, cols) -> np.ndarray:
    """Valid ofmap writes in each demand row (the skewed output tiles of every fold)."""
    folds = len(o_rows)
    diff = np.zeros((folds, per_fold + 1), dtype=np.int64)
    c = np.arange(cols)
    valid = c[None, :] < o_cols[:, None]
    if dataflow == "os":  # tile flipped: valid rows at the bottom of ``rows``
        start = prefix + (rows - o_rows)[:, None] + c[None, :]
    else:
        start = prefix + np.zeros((folds, 1), dtype=np.int64) + c[None, :]
    stop = start + o_rows[:, None]
    f = np.repeat(np.arange(folds), cols).reshape(folds, cols)
    np.add.at(diff, (f[valid], start[valid]), 1)
    np.add.at(diff, (f[valid], stop[valid]), -1)
    return np.cumsum(diff[:, :-1], axis=1).reshape(-1)


# -- read buffer: which demands trigger prefetches ---------------------------------------


def _prefetch_rows(pre: np.ndarray, demand: np.ndarray, size: int):
    """Rows of ``demand`` that trigger prefetches, and how many each (SCALE-Sim's window walk).

    Returns (rows, counts, n_sets, sets_in_window) with rows increasing.
    """
    pre = pre[pre != -1]
    eps = math.ceil(size / 100)
    n_sets = len(pre) // eps + 1
    active = math.ceil(size * 0.5)
    a = min(math.ceil(active / eps), n_sets)
    p = min(math.ceil((size - active) / eps), n_sets - a)
    if a >= n_sets:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    set_of = np.arange(len(pre)) // eps
    uniq, inv = np.unique(pre, return_inverse=True)
    # distinct sets per address, padded with the address's first set
    order = np.lexsort((set_of, inv))
    inv_s, set_s = inv[order], set_of[order]
    keep = np.ones(len(order), bool)
    keep[1:] = (inv_s[1:] != inv_s[:-1]) | (set_s[1:] != set_s[:-1])
    inv_s, set_s = inv_s[keep], set_s[keep]
    starts = np.searchsorted(inv_s, np.arange(len(uniq)))
    rank = np.arange(len(inv_s)) - starts[inv_s]
    width = int(rank.max()) + 1
    sets = np.repeat(set_s[starts][:, None], width, axis=1)
    sets[inv_s, rank] = set_s
    flat = demand.ravel()
    pos = np.flatnonzero(flat != -1)
    addr_sets = sets[np.searchsorted(uniq, flat[pos])]  # (T, width)
    row_of = pos // demand.shape[1]
    return _walk(addr_sets, row_of, n_sets, a, p)


def _walk(addr_sets: np.ndarray, row_of: np.ndarray, n_sets: int, a: int, p: int):
    """The window walk over the demands: prefetch rows and counts."""
    total = len(row_of)
    w, t = 0, 0
    ev_rows, ev_counts = [], []
    block = 256
    while t < total:
        stop = min(total, t + block)
        d = (addr_sets[t:stop] - w) % n_sets
        miss = np.flatnonzero((d >= a).all(axis=1))
        if len(miss) == 0:
            t = stop
            block = min(block * 4, 1 << 16)
            continue
        t += int(miss[0])
        mine = addr_sets[t]
        k = 0
        while True:
            w = (w + p) % n_sets
            k += 1
            if (((mine - w) % n_sets) < a).any():
                break
        r = int(row_of[t])
        if ev_rows and ev_rows[-1] == r:
            ev_counts[-1] += k
        else:
            ev_rows.append(r)
            ev_counts.append(k)
        t += 1
        block = 64
    return np.asarray(ev_rows, np.int64), np.asarray(ev_counts, np.int64)


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
        self.cum = np.concatenate([[0], np.cumsum(writes)])
        self.n_rows = len(writes)
        self.free, self.drain_end, self.e = size, 0, 0
        self.rows_closed, self.line_idx, self.start_line = 0, 0, 0
        self.partial: dict[int, int] = {}
        self.drained, self.stop = 0, 0

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
        e_cur = int(self.cum[min(row_cur, self.n_rows)])
        el = e_zero if e_zero < e_cur else max(e_thr, e_cur)
        if el >= self.cum[-1]:
            return self.n_rows
        return int(np.searchsorted(self.cum, el, side="right")) - 1

    def advance_to(self, row: int) -> None:
        """Store the writes of the rows before ``row`` (no event among them)."""
        self._store(int(self.cum[row]) - self.e)

    def row(self, r: int, cycle: int) -> int:
        """Every write of row ``r`` at ``cycle``; returns the row's delay."""
        offset = 0
        end = int(self.cum[r + 1])
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
            else:
                n = max(self.free - self.active + 1, 1)
                if n > rem:
                    self._store(rem)
                    break
                self._store(n)
                self.drain_end = self._drain(cur)
        return offset

    def finish(self, cycle: int) -> int:
        """Drain what is left from ``cycle`` on; the last DRAM write's cycle."""
        self._flush()
        while self.start_line < self.rows_closed:
            cycle = self._drain(cycle) + 1
        return self.stop


# -- the replay --------------------------------------------------------------------------


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
    """
    rows, cols = array
    if_pre, f_pre, a_dem, b_dem, writes = _orders(conv, dataflow, rows, cols)
    n_rows = len(writes)
    reads = []
    events = []
    for pre, dem, size, bw in (
        (if_pre, a_dem, sram_words[0], bandwidth[0]),
        (f_pre, b_dem, sram_words[1], bandwidth[1]),
    ):
        ev_r, ev_c = _prefetch_rows(pre, dem, size)
        fetch_lines = math.ceil(len(pre) / bw)
        first = min(math.ceil(math.ceil(size * 0.5) / bw), fetch_lines)
        n_lines = math.ceil((size - math.ceil(size * 0.5)) / bw)
        reads.append((first, first * bw + int(ev_c.sum()) * n_lines * bw))
        events.append((ev_r, ev_c, n_lines + 1))
    w = _WriteBuffer(sram_words[2], bandwidth[2], writes)
    stall, last = 0, n_rows - 1
    total = None
    done, idx = [0, 0], [0, 0]
    row = 0
    while row < n_rows:
        nxt = [int(ev[0][i]) if i < len(ev[0]) else n_rows for ev, i in zip(events, idx)]
        r = min(min(nxt), w.next_event_row(row, stall))
        if r >= n_rows:
            break
        w.advance_to(r)
        cycle = r + stall
        s = 0
        for j in (0, 1):
            if nxt[j] == r:
                c = int(events[j][1][idx[j]])
                s = max(s, _read_stall(cycle, done[j], c, events[j][2]))
                done[j] += c
                idx[j] += 1
        off = w.row(r, cycle)
        if r == last:
            total = cycle + off
        stall += max(s, off)
        row = r + 1
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
    )
