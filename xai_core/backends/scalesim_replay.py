"""SCALE-Sim 3's memory system replayed exactly, event by event instead of cycle by cycle.

SCALE-Sim (USER bandwidth mode) feeds its double-buffered SRAMs one demand row per cycle.
This module takes the same demand and prefetch orders (:mod:`xai_core.backends.scalesim_orders`,
index arithmetic on whole folds) and replays the same rules, but only at the cycles where
something happens (the loops compiled with numba: :mod:`xai_core.backends.scalesim_kernels`
for the read SRAMs, :mod:`xai_core.backends.scalesim_stalls` for the events):

- **Read SRAMs** (ifmap, filter). The operand's prefetch order, ``-1`` entries dropped, is
  cut into sets of ``e = ceil(S / 100)`` elements (``S``: the SRAM's words), ``Q // e + 1``
  sets in all. The active window holds ``a = ceil(ceil(S/2) / e)`` consecutive sets
  (circularly); a demanded address in none of them makes the window advance by
  ``p = ceil((S - ceil(S/2)) / e)`` sets, one prefetch each, until it is. Which demand
  triggers how many prefetches does not depend on time, so it is found first: the sets
  holding each address come from one pass over the prefetch order (a convolution's ifmap
  pixel is held by up to one set per filter position). A skewed operand (its tiles the
  blocks of its own prefetch order, read by the same anti-diagonals; kept as its im2col
  parts, a pixel base plus a window offset) has every demand's own set rising along the
  fold, in closed form from its anti-diagonal's start: the demands whose own set is in the
  window are skipped by a binary search, the others tested on all their sets. The other
  operands' demands are walked as runs of the same one set. At a miss the number of
  prefetches is found in closed form, the window never stepping over a set since
  ``p <= a``. A fold that repeats a tile from the same starting window repeats that
  tile's prefetches. Prefetch ``k`` ends at
  cycle ``k * (ceil(P / bw) + 1) - 1``, and a row that waits for prefetches is delayed by
  SCALE-Sim's own offset rule (``offset += d`` and again ``+= d`` when ``d > 0``).
- **Write SRAM** (ofmap). Elements fill the buffer; once fewer than ``ceil(S/2)`` words are
  free and no drain is running, the lines written so far (rows of ``bw`` words, a partial
  row closed at every drain start) drain, ``ceil(half / bw)`` lines per drain, one line per
  cycle; a full buffer makes the array wait for the running drain's end.
- A row's stall is the largest of the three ports' stalls; total cycles are the last ofmap
  write's cycle, as SCALE-Sim reports them.

The stall loop runs once per event (a row with prefetches, a drain start, a full buffer),
never per cycle; the rows between write events are skipped by a binary search on the
cumulative writes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from xai_core.backends.scalesim_kernels import (
    set_table,
    set_table_parts,
    tile_runs,
    walk,
    walk_skew,
)
from xai_core.backends.scalesim_orders import FILTER_OFFSET, ReadOperand, ofmap_hw, orders
from xai_core.backends.scalesim_stalls import stalls
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
    ops, per_fold, ofmap = orders(conv, dataflow, rows, cols)
    reads, events = [], []
    # an ifmap address is in at most one window per filter position, a filter address in one
    # and the operands' address ranges (SCALE-Sim's ifmap and filter offsets)
    h, w, fh, fw, _, _, stride = conv
    oh, ow = ofmap_hw(conv)
    depths = (min(-(-fh // stride), oh) * min(-(-fw // stride), ow), 1)
    spaces = ((0, h * w * conv[4]), (FILTER_OFFSET, fh * fw * conv[4] * conv[5]))
    for op, size, bw, depth, space in zip(ops, sram_words, bandwidth, depths, spaces):
        ev_r, ev_c = _prefetch_rows(op, per_fold, size, depth, space)
        fetch_lines = math.ceil(op.size / bw)
        first = min(math.ceil(math.ceil(size * 0.5) / bw), fetch_lines)
        n_lines = math.ceil((size - math.ceil(size * 0.5)) / bw)
        reads.append((first, first * bw + int(ev_c.sum()) * n_lines * bw))
        events.append((ev_r, ev_c, n_lines + 1))
    (r0, c0, s0), (r1, c1, s1) = events
    total, stall, stop, drained, *ports = stalls(
        r0, c0, r1, c1, s0, s1, ofmap, per_fold, int(sram_words[2]), int(bandwidth[2])
    )
    overall = int(stop + max(reads[0][0], reads[1][0]))
    return ReplayResult(
        total_cycles=int(total),
        stall_cycles=int(stall),
        overall_cycles=overall,
        ifmap_dram_reads=int(reads[0][1]),
        filter_dram_reads=int(reads[1][1]),
        ofmap_dram_writes=int(drained),
        port_stalls=tuple(int(v) for v in ports),
    )


def _prefetch_rows(op: ReadOperand, per_fold, size, depth, space):
    """Demand rows that trigger prefetches of one read SRAM, and how many each (int64 arrays)."""
    eps = math.ceil(size / 100)
    n_sets = op.q // eps + 1
    active = math.ceil(size * 0.5)
    a = min(math.ceil(active / eps), n_sets)
    p = min(math.ceil((size - active) / eps), n_sets - a)
    if a >= n_sets:  # the operand fits in the window: loaded once, no prefetch after
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    base, span = space
    folds = np.ascontiguousarray(op.fold_tile, dtype=np.int64)
    sizes = int(n_sets), int(a), int(p)
    if op.parts is not None:  # a skewed tile's own sets rise along its demand order
        row, col, last_cols = op.parts
        cnt, table, own = set_table_parts(row, col, last_cols, eps, depth, base, span)
        args = (row, col, own, last_cols, int(op.prefix), folds, int(per_fold), base, cnt)
        return walk_skew(*args, table, depth, *sizes)
    cnt, table = set_table(op.mat, op.kind == "skew", eps, depth, base, span)
    keys, rows, starts = tile_runs(op.tiles, op.kind == "skew", op.prefix, base, cnt, table, depth)
    return walk(keys, rows, starts, folds, int(per_fold), cnt, table, depth, *sizes)
