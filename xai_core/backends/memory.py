"""The memory system of a systolic array: double-buffered SRAMs per operand, a DRAM bandwidth, stalls.

Two models of SCALE-Sim 3's memory system (USER bandwidth mode), chosen by ``method``:

- ``"replay"`` (:mod:`xai_core.backends.scalesim_replay`): SCALE-Sim's own rules replayed
  at the cycles where something happens (a prefetch, a drain, a full buffer), giving its
  total cycles, stall cycles and DRAM traffic exactly. It needs whole words per cycle on
  every port (SCALE-Sim's DRAM lines) and builds the operands' address matrices, so it is
  used up to :data:`REPLAY_LIMIT` operand elements.
- ``"closed"``: a closed form on the GEMM sizes, for any bandwidth and size. Each operand
  has its own SRAM: ifmap (``A``), filter (``B``) and ofmap (``C``), split as SCALE-Sim
  splits it: an active half of ``ceil(S / 2)`` words and a prefetch half of
  ``P = S - ceil(S / 2)`` words filled from DRAM in bursts of ``ceil(P / bw)`` cycles
  plus one cycle of latency. An operand that fits in the active half is loaded once before
  compute starts and never stalls; a larger one is streamed once per pass the dataflow
  makes over it (``ws``: ifmap once per column fold, filter once; ``os``: ifmap per column
  fold, filter per row fold; ``is``: ifmap once, filter per column fold). The ofmap SRAM
  absorbs the array's writes (partial sums of every K fold included) and drains half of
  itself at a time in ``ceil(half / bw)`` cycles. The GEMM takes ``max(compute, ifmap
  stream, filter stream, ofmap drain)`` cycles. It equals SCALE-Sim without stalls and is
  within a few percent when the ofmap port is the bottleneck, but SCALE-Sim's read buffers
  re-fetch a streamed operand up to hundreds of times (see ``docs/backends.md``), which one
  stream per pass does not reproduce.

``"auto"`` (the default) replays when it can and falls back to the closed form. With
operands that fit or enough bandwidth both give exactly the cycles of
:func:`xai_core.backends.systolic.gemm_cost`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from xai_core.errors import ValidationError

__all__ = ["REPLAY_LIMIT", "MemoryCost", "MemorySystem", "memory_cost"]

#: Largest ``m * k + k * n`` (operand elements) that ``method="auto"`` replays.
REPLAY_LIMIT = 1 << 21


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
        Cycles the slowest DRAM port needs (closed form; 0 when every operand fits), or
        the cycles the memory system lets the GEMM finish in (replay).
    stall_cycles : int or ndarray
    total_cycles : int or ndarray
        ``compute_cycles + stall_cycles``.
    prefetch_cycles : int or ndarray
        Cycles loading the operands that fit before compute starts.
    ifmap_dram_reads, filter_dram_reads, ofmap_dram_writes : int or ndarray
        Elements moved.
    bound : str or ndarray of str
        ``"compute"``, ``"ifmap"``, ``"filter"`` or ``"ofmap"``: what sets the time (replay:
        the port behind most stall cycles).
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
    m: Any,
    k: Any,
    n: Any,
    *,
    array: tuple[int, int],
    dataflow: str,
    memory: MemorySystem,
    method: str = "auto",
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
    method : {"auto", "replay", "closed"}, default="auto"
        SCALE-Sim's rules replayed (exact; whole words per cycle on every port), the
        closed form, or the replay where it applies (integer bandwidths, operands up to
        :data:`REPLAY_LIMIT` elements) and the closed form elsewhere.

    Returns
    -------
    MemoryCost
        Arrays of the broadcast shape (0-d for scalars).
    """
    if dataflow not in ("ws", "os", "is"):
        raise ValidationError(f"dataflow must be 'ws', 'os' or 'is'; got {dataflow!r}.")
    if method not in ("auto", "replay", "closed"):
        raise ValidationError(f"method must be 'auto', 'replay' or 'closed'; got {method!r}.")
    bws = (memory.ifmap_bw, memory.filter_bw, memory.ofmap_bw)
    whole = all(float(b).is_integer() for b in bws)
    if method == "replay" and not whole:
        raise ValidationError(
            f"method='replay' needs whole words per cycle on every port (SCALE-Sim's DRAM "
            f"lines); got bandwidths {bws!r}."
        )
    if method == "replay" and min(memory.words()) < 2:
        raise ValidationError(
            f"method='replay' needs SRAMs of 2 words or more; got {memory.words()!r} words."
        )
    closed = _closed_form(m, k, n, array=array, dataflow=dataflow, memory=memory)
    if method == "closed" or not whole or min(memory.words()) < 2:
        return closed
    m, k, n = np.broadcast_arrays(*(np.asarray(v, dtype=np.int64) for v in (m, k, n)))
    size = m * k + k * n
    use = np.ones(m.shape, bool) if method == "replay" else size <= REPLAY_LIMIT
    if not use.any():
        return closed
    out = {f: np.array(np.broadcast_to(getattr(closed, f), m.shape)) for f in _FIELDS}
    for i in np.ndindex(m.shape):
        if not use[i]:
            continue
        r = _replayed(
            int(m[i]),
            int(k[i]),
            int(n[i]),
            tuple(int(v) for v in array),
            dataflow,
            memory.words(),
            tuple(int(b) for b in bws),
        )
        for f, v in zip(_FIELDS, r):
            out[f][i] = v
    return MemoryCost(**{f: (v[()] if v.ndim == 0 else v) for f, v in out.items()})


_FIELDS = (
    "compute_cycles",
    "port_cycles",
    "stall_cycles",
    "total_cycles",
    "prefetch_cycles",
    "ifmap_dram_reads",
    "filter_dram_reads",
    "ofmap_dram_writes",
    "bound",
)


@lru_cache(maxsize=4096)
def _replayed(m, k, n, array, dataflow, words, bws) -> tuple:
    """One GEMM replayed, as the fields of :class:`MemoryCost` (cached: layers repeat)."""
    from xai_core.backends.scalesim_replay import replay

    r = replay(
        (m, k, 1, k, 1, n, 1), array=array, dataflow=dataflow, sram_words=words, bandwidth=bws
    )
    rows, cols = array
    sr, sc, t = _spatial(dataflow, m, k, n)
    folds = -(-sr // rows) * -(-sc // cols)
    compute = folds * (t + rows + cols - 2 if dataflow == "os" else 2 * rows + cols + t - 2)
    total = r.total_cycles + 1  # SCALE-Sim reports the last cycle's index
    ports = r.port_stalls
    bound = "compute" if total == compute else ("ifmap", "filter", "ofmap")[ports.index(max(ports))]
    return (
        compute,
        float(total),
        total - compute,
        total,
        r.overall_cycles - r.total_cycles,
        r.ifmap_dram_reads,
        r.filter_dram_reads,
        r.ofmap_dram_writes,
        bound,
    )


def _closed_form(
    m: Any, k: Any, n: Any, *, array: tuple[int, int], dataflow: str, memory: MemorySystem
) -> MemoryCost:
    """The closed form (see the module docstring), vectorised over the GEMM sizes."""
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
