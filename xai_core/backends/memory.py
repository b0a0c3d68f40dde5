"""The memory system of a systolic array: double-buffered SRAMs per operand, a DRAM bandwidth, stalls.

SCALE-Sim's memory model, in closed form. Each operand has its own SRAM: ifmap (``A``),
filter (``B``) and ofmap (``C``). A read SRAM of ``S`` words is split as SCALE-Sim splits
it: an active half of ``ceil(S / 2)`` words that the array reads, and a prefetch half of
``P = S - ceil(S / 2)`` words filled from DRAM meanwhile, in bursts of ``ceil(P / bw)``
cycles plus one cycle of latency (``bw``: words per cycle of that operand's DRAM port).

- An operand that fits in the active half is loaded once before compute starts (those
  cycles are SCALE-Sim's "incl. prefetch" total, not its "total cycles") and never stalls.
- A larger operand is streamed: its DRAM reads are the operand once per pass the dataflow
  makes over it (``ws``: ifmap once per column fold, filter once; ``os``: ifmap per column
  fold, filter per row fold; ``is``: ifmap once, filter per column fold), all but the
  first active half arriving in bursts.
- The ofmap SRAM absorbs the array's writes (partial sums of every K fold included); once
  half of it is written that half drains to DRAM in ``ceil(half / bw)`` cycles (its space
  freed as the drain starts, as SCALE-Sim does) while the other half fills, drains run
  back to back, and the array waits when the buffer is full.

The array stalls when a port cannot keep up: the GEMM takes
``max(compute, ifmap stream, filter stream, ofmap drain)`` cycles, i.e. compute plus
``stall_cycles``. With operands that fit or enough bandwidth there are no stalls and the
cycles are exactly those of :func:`xai_core.backends.systolic.gemm_cost`. Everything is
numpy arithmetic on the GEMM sizes, so arrays of layers are costed at once.

Agreement with SCALE-Sim 3.0.0 (``docs/backends.md``): exact without stalls; within a few
percent when the ofmap port is the bottleneck; SCALE-Sim's read buffers re-fetch a
streamed operand many times over (its circular prefetch window), which this model, one
stream per pass, does not reproduce.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core.errors import ValidationError

__all__ = ["MemoryCost", "MemorySystem", "memory_cost"]


@dataclass(frozen=True)
class MemorySystem:
    """SRAM sizes and DRAM bandwidths of one array (SCALE-Sim's architecture settings).

    Attributes
    ----------
    ifmap_sram_kib, filter_sram_kib, ofmap_sram_kib : float
        SRAM per operand, KiB (SCALE-Sim's ``IfmapSramSzkB`` ...), both halves together.
    ifmap_bw, filter_bw, ofmap_bw : float
        DRAM words per cycle of each operand's port (SCALE-Sim USER mode: the layout
        section's ``IfmapSRAMBankBandwidth``, ``FilterSRAMBankBandwidth``, and
        ``Bandwidth`` for the ofmap).
    word_bytes : int
        Bytes per element (SCALE-Sim: 1; bf16: 2).
    """

    ifmap_sram_kib: float
    filter_sram_kib: float
    ofmap_sram_kib: float
    ifmap_bw: float
    filter_bw: float
    ofmap_bw: float
    word_bytes: int = 1

    def __post_init__(self) -> None:
        for key in ("ifmap_sram_kib", "filter_sram_kib", "ofmap_sram_kib"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise ValidationError(f"{key} must be a number > 0 (KiB); got {v!r}.")
        for key in ("ifmap_bw", "filter_bw", "ofmap_bw"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise ValidationError(f"{key} must be a number > 0 (words per cycle); got {v!r}.")
        if isinstance(self.word_bytes, bool) or self.word_bytes not in (1, 2, 4):
            raise ValidationError(f"word_bytes must be 1, 2 or 4; got {self.word_bytes!r}.")

    @classmethod
    def from_gbps(
        cls,
        sram_kib: tuple[float, float, float],
        dram_gbps: float,
        clock_hz: float,
        word_bytes: int,
    ) -> MemorySystem:
        """Split a DRAM bandwidth in GB/s equally over the three ports, in words per cycle."""
        per_port = dram_gbps * 1e9 / clock_hz / word_bytes / 3
        return cls(*sram_kib, per_port, per_port, per_port, word_bytes)

    def words(self) -> tuple[int, int, int]:
        """SRAM capacities in elements."""
        return tuple(
            int(kib * 1024 // self.word_bytes)
            for kib in (self.ifmap_sram_kib, self.filter_sram_kib, self.ofmap_sram_kib)
        )


@dataclass(frozen=True)
class MemoryCost:
    """Stalls and DRAM traffic of GEMMs (scalars, or arrays of the GEMM sizes' shape).

    Attributes
    ----------
    compute_cycles : int or ndarray
        Cycles without stalls (folds times fold cycles).
    port_cycles : float or ndarray
        Cycles the slowest DRAM port needs (0 when every operand fits).
    stall_cycles : int or ndarray
    total_cycles : int or ndarray
        ``compute_cycles + stall_cycles``.
    prefetch_cycles : int or ndarray
        Cycles loading the operands that fit before compute starts.
    ifmap_dram_reads, filter_dram_reads, ofmap_dram_writes : int or ndarray
        Elements moved.
    bound : str or ndarray of str
        ``"compute"``, ``"ifmap"``, ``"filter"`` or ``"ofmap"``: what sets the time.
    """

    compute_cycles: Any
    port_cycles: Any
    stall_cycles: Any
    total_cycles: Any
    prefetch_cycles: Any
    ifmap_dram_reads: Any
    filter_dram_reads: Any
    ofmap_dram_writes: Any
    bound: Any


def _spatial(dataflow: str, m, k, n):
    return {"ws": (k, n, m), "os": (m, n, k), "is": (k, m, n)}[dataflow]


def memory_cost(
    m: Any, k: Any, n: Any, *, array: tuple[int, int], dataflow: str, memory: MemorySystem
) -> MemoryCost:
    """Stall cycles and DRAM traffic of ``C[m, n] = A[m, k] @ B[k, n]`` (vectorised).

    Parameters
    ----------
    m, k, n : int or array of int
        GEMM sizes (broadcast together).
    array : (int, int)
        Rows and columns of the array.
    dataflow : {"ws", "os", "is"}
    memory : MemorySystem

    Returns
    -------
    MemoryCost
        Arrays of the broadcast shape (0-d for scalars).
    """
    if dataflow not in ("ws", "os", "is"):
        raise ValidationError(f"dataflow must be 'ws', 'os' or 'is'; got {dataflow!r}.")
    m, k, n = (np.asarray(v, dtype=np.int64) for v in (m, k, n))
    rows, cols = (int(v) for v in array)
    sr, sc, t = _spatial(dataflow, m, k, n)
    row_folds, col_folds = -(-sr // rows), -(-sc // cols)
    folds = row_folds * col_folds
    per_fold = t + rows + cols - 2 if dataflow == "os" else 2 * rows + cols + t - 2
    compute = folds * per_fold
    passes = {
        "ws": (col_folds, 1),
        "os": (col_folds, row_folds),
        "is": (1, col_folds),
    }[dataflow]
    sizes = (m * k, k * n)
    bws = (memory.ifmap_bw, memory.filter_bw)
    s_words = memory.words()
    times, reads, prefetch = [], [], np.zeros_like(compute)
    for j in range(2):
        s = s_words[j]
        active = -(-s // 2)
        half = s - active
        fits = sizes[j] <= active
        streamed = passes[j] * sizes[j]
        burst = np.ceil(half / bws[j]) + 1
        bursts = np.ceil(np.maximum(streamed - active, 0) / max(half, 1))
        times.append(np.where(fits, 0, bursts * burst))
        reads.append(np.where(fits, sizes[j], streamed))
        prefetch = prefetch + np.where(fits, np.ceil(sizes[j] / bws[j]), np.ceil(active / bws[j]))
    writes = (row_folds if dataflow != "os" else 1) * m * n
    o_size = s_words[2]
    drain = o_size - -(-o_size // 2)  # SCALE-Sim's drain half
    drain_cycles = np.ceil(drain / memory.ofmap_bw)
    # The first drain starts once ``drain`` words are written: after the first fold's
    # fill, at the rate the outputs leave the array (ws, is: one row of up to C per
    # cycle; os: the fold's outputs at its end, taken at the average rate). A drain frees
    # its half as it starts and the next starts when it ends, so the array's last write
    # is accepted once ceil((writes - size) / drain) drains have started.
    if dataflow == "os":
        first = drain * compute / np.maximum(writes, 1)
    else:
        first = 2 * rows + cols - 2 + drain / np.minimum(sc, cols)
    n_drains = np.ceil(np.maximum(writes - o_size, 0) / max(drain, 1))
    times.append(np.where(writes > o_size, first + (n_drains - 1) * drain_cycles, 0.0))
    stack = np.stack([compute.astype(np.float64), *np.broadcast_arrays(*times)])
    total = np.ceil(stack.max(axis=0)).astype(np.int64)
    bound = np.array(["compute", "ifmap", "filter", "ofmap"])[stack.argmax(axis=0)]
    return MemoryCost(
        compute_cycles=compute,
        port_cycles=np.max(np.stack(np.broadcast_arrays(*times)), axis=0),
        stall_cycles=total - compute,
        total_cycles=total,
        prefetch_cycles=prefetch.astype(np.int64),
        ifmap_dram_reads=reads[0],
        filter_dram_reads=reads[1],
        ofmap_dram_writes=writes,
        bound=bound,
    )
