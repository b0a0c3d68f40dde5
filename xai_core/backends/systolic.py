"""A GEMM on an R x C systolic array: the closed-form cost model and a cycle-stepping simulator.

For ``C[M, N] = A[M, K] @ B[K, N]`` each dataflow maps two of the three dimensions onto the
array and streams the third through it (the names are SCALE-Sim's: ``Sr`` on the array's
rows, ``Sc`` on its columns, ``T`` streamed in time):

========  =====================  ======  ======  =====  =====================
dataflow  stationary operand     Sr      Sc      T      cycles per fold
========  =====================  ======  ======  =====  =====================
``ws``    weights ``B``          K       N       M      2R + C + M - 2
``os``    outputs ``C``          M       N       K      K + R + C - 2
``is``    inputs ``A``           K       M       N      2R + C + N - 2
========  =====================  ======  ======  =====  =====================

An operand larger than the array is cut into ``ceil(Sr / R) * ceil(Sc / C)`` folds, run
one after another, each for the full fold time whatever part of the array it occupies.
These are the counts of SCALE-Sim (v2 and v3), which :func:`gemm_cost` reproduces in
closed form with O(1) work per GEMM, and :meth:`GemmCost.scalesim_report` in SCALE-Sim's
own terms. :func:`simulate` is the reference the closed form is tested against: it moves
operands through the processing elements register by register, one cycle at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xai_core.backends.base import matmul_operands
from xai_core.errors import UnknownNameError, ValidationError
from xai_core.validation import check_positive_int

__all__ = [
    "DATAFLOWS",
    "STEP_LIMIT",
    "GemmCost",
    "check_array_shape",
    "chip_cycles",
    "describe_fold",
    "fold_cycles",
    "gemm_cost",
    "round_bf16",
    "simulate",
]

DATAFLOWS: tuple[str, ...] = ("ws", "os", "is")


def round_bf16(x: Any) -> np.ndarray:
    """Round to bfloat16 (nearest, ties to even) and return the values as float32.

    The operand is first stored as float32 (the accelerator's memory format), then
    rounded (:func:`xai_core.kernels.bf16.round_bf16`, equal to ``ml_dtypes``' cast bit
    for bit). Products of two such values are exact in float32 unless they overflow or
    underflow its range.

    Parameters
    ----------
    x : array-like
        Any shape.

    Returns
    -------
    ndarray of float32, the shape of ``x``
    """
    from xai_core.kernels import bf16  # here, not at the top: numba's import takes a second

    return bf16.round_bf16(x)


def check_array_shape(array: Any) -> tuple[int, int]:
    """Return ``array`` as (rows, columns), both integers >= 2, or raise."""
    try:
        rows, cols = (int(v) for v in array)
        ok = all(
            not isinstance(v, bool) and isinstance(v, (int, np.integer)) and v >= 2 for v in array
        )
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise ValidationError(
            f"array must be (rows, columns), two integers >= 2 such as (128, 128); got {array!r}."
        )
    return rows, cols


def _check_dataflow(dataflow: Any) -> str:
    if dataflow not in DATAFLOWS:
        raise UnknownNameError("dataflow", dataflow, DATAFLOWS)
    return dataflow


def _spatial(dataflow: str, m: int, k: int, n: int) -> tuple[int, int, int]:
    """(Sr, Sc, T) of a dataflow: rows of the array, columns, and the streamed dimension."""
    return {"ws": (k, n, m), "os": (m, n, k), "is": (k, m, n)}[dataflow]


def fold_cycles(dataflow: str, rows: int, cols: int, m: int, k: int, n: int) -> int:
    """Cycles of one fold: fill, stream and drain of the array (see the module table)."""
    sr, sc, t = _spatial(dataflow, m, k, n)
    if dataflow == "os":
        return t + rows + cols - 2
    return 2 * rows + cols + t - 2


@dataclass(frozen=True)
class GemmCost:
    """What one GEMM costs on a systolic array. Built by :func:`gemm_cost`.

    Attributes
    ----------
    m, k, n : int
        ``C[m, n] = A[m, k] @ B[k, n]``.
    rows, cols : int
        The array.
    dataflow : str
        ``"ws"``, ``"os"`` or ``"is"``.
    arrays : int
        Identical arrays sharing the folds (the matrix units of a chip).
    double_buffered : bool
        Whether each fold's stationary operand is loaded while the previous fold streams.
    row_folds, col_folds, folds : int
        ``ceil(Sr / rows)``, ``ceil(Sc / cols)`` and their product.
    fold_cycles : int
        Cycles of one fold without overlap.
    array_cycles : int
        Cycles of all folds on one array (``folds * fold_cycles`` unless double-buffered).
    cycles : int
        Cycles of the chip: the folds dealt round-robin to ``arrays`` arrays.
    scalesim_total_cycles : int
        SCALE-Sim's "total cycles" for this GEMM: ``folds * fold_cycles - 1``, the index of
        the last cycle (SCALE-Sim models one array and no double buffering).
    macs : int
        ``m * k * n``.
    mapping_efficiency : float
        Mean over folds of the fraction of processing elements mapped (SCALE-Sim's
        definition): ``Sr * Sc / (folds * rows * cols)``.
    utilization : float
        ``macs / (cycles * rows * cols * arrays)``: the fraction of multiplier-cycles used.
    sram_reads_a, sram_reads_b, sram_writes_c : int
        Elements read from the on-chip buffers of ``A`` (SCALE-Sim's ifmap) and ``B``
        (filter) and written to that of ``C`` (ofmap, partial sums of each K fold included).
    offchip_reads_a, offchip_reads_b, offchip_writes_c : int
        Elements moved between the chip and its memory when the buffers hold the operands:
        each input element once; every write of ``C``.
    """

    m: int
    k: int
    n: int
    rows: int
    cols: int
    dataflow: str
    arrays: int
    double_buffered: bool
    row_folds: int
    col_folds: int
    folds: int
    fold_cycles: int
    array_cycles: int
    cycles: int
    scalesim_total_cycles: int
    macs: int
    mapping_efficiency: float
    utilization: float
    sram_reads_a: int
    sram_reads_b: int
    sram_writes_c: int
    offchip_reads_a: int
    offchip_reads_b: int
    offchip_writes_c: int
    _compute_util_cycles: int = field(repr=False, default=0)

    def scalesim_report(self) -> dict[str, float]:
        """This GEMM in the terms of SCALE-Sim's compute and detailed-access reports.

        Returns
        -------
        dict
            ``total_cycles`` (SCALE-Sim's, the last cycle's index), ``overall_util``,
            ``mapping_efficiency`` and ``compute_util`` in percent, and the SRAM and DRAM
            access counts per operand, as SCALE-Sim computes them with buffers large enough
            for the operands and no memory stalls. Two of its conventions differ from this
            module's own counters and are reproduced here as they are: ``compute_util``
            divides each fold by ``fold cycles + cols - 1`` for ``ws`` and ``is`` (by the
            fold cycles for ``os``), and ``ofmap_sram_writes`` adds ``rows + cols`` per fold
            for ``os``.
        """
        total = self.folds * self.fold_cycles - 1
        pe = self.rows * self.cols
        ofmap_sram = self.sram_writes_c
        if self.dataflow == "os":
            ofmap_sram += self.folds * (self.rows + self.cols)
        return {
            "total_cycles": total,
            "overall_util": 100.0 * self.macs / (total * pe),
            "mapping_efficiency": 100.0 * self.mapping_efficiency,
            "compute_util": 100.0 * self.macs / (self.folds * pe * self._compute_util_cycles),
            "ifmap_sram_reads": self.sram_reads_a,
            "filter_sram_reads": self.sram_reads_b,
            "ofmap_sram_writes": ofmap_sram,
            "ifmap_dram_reads": self.offchip_reads_a,
            "filter_dram_reads": self.offchip_reads_b,
            "ofmap_dram_writes": self.offchip_writes_c,
        }


def gemm_cost(
    m: int,
    k: int,
    n: int,
    *,
    array: tuple[int, int] = (128, 128),
    dataflow: str = "ws",
    arrays: int = 1,
    double_buffered: bool = False,
) -> GemmCost:
    """The closed-form cost of ``C[m, n] = A[m, k] @ B[k, n]`` on a systolic array.

    O(1) work whatever the sizes: this is what normal runs use.

    Parameters
    ----------
    m, k, n : int
        GEMM sizes, each >= 1.
    array : (int, int), default=(128, 128)
        Rows and columns of the array, each >= 2.
    dataflow : {"ws", "os", "is"}, default="ws"
    arrays : int, default=1
        Identical arrays that share the folds round-robin.
    double_buffered : bool, default=False
        Load each fold's stationary operand (``ws``: weights, ``is``: inputs) while the
        previous fold streams, hiding ``rows`` cycles of every fold but the first on each
        array. ``os`` has no stationary operand to preload and is unchanged. This models
        the real TPU, not SCALE-Sim, which runs folds back to back.

    Returns
    -------
    GemmCost
    """
    m, k, n = (check_positive_int(v, name) for v, name in ((m, "m"), (k, "k"), (n, "n")))
    rows, cols = check_array_shape(array)
    dataflow = _check_dataflow(dataflow)
    arrays = check_positive_int(arrays, "arrays")
    sr, sc, t = _spatial(dataflow, m, k, n)
    row_folds, col_folds = -(-sr // rows), -(-sc // cols)
    folds = row_folds * col_folds
    per_fold = fold_cycles(dataflow, rows, cols, m, k, n)
    hidden = rows if (double_buffered and dataflow != "os") else 0

    def run(f: int) -> int:
        return f * per_fold - (f - 1) * hidden

    cycles = run(-(-folds // arrays))
    macs = m * k * n
    if dataflow == "ws":  # A streams once per column fold; partial sums leave per K fold
        reads_a, reads_b, writes_c = col_folds * m * k, k * n, row_folds * m * n
    elif dataflow == "os":  # A once per column fold, B once per row fold, C once
        reads_a, reads_b, writes_c = col_folds * m * k, row_folds * k * n, m * n
    else:  # is: A stationary, read once; B streams once per column fold
        reads_a, reads_b, writes_c = m * k, col_folds * k * n, row_folds * m * n
    return GemmCost(
        m=m,
        k=k,
        n=n,
        rows=rows,
        cols=cols,
        dataflow=dataflow,
        arrays=arrays,
        double_buffered=bool(double_buffered),
        row_folds=row_folds,
        col_folds=col_folds,
        folds=folds,
        fold_cycles=per_fold,
        array_cycles=run(folds),
        cycles=cycles,
        scalesim_total_cycles=folds * per_fold - 1,
        macs=macs,
        mapping_efficiency=sr * sc / (folds * rows * cols),
        utilization=macs / (cycles * rows * cols * arrays),
        sram_reads_a=reads_a,
        sram_reads_b=reads_b,
        sram_writes_c=writes_c,
        offchip_reads_a=m * k,
        offchip_reads_b=k * n,
        offchip_writes_c=writes_c,
        _compute_util_cycles=per_fold if dataflow == "os" else per_fold + cols - 1,
    )


# -- the cycle-stepping reference -------------------------------------------------------


def _pad(x: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """``x`` in the top-left corner of zeros of ``shape``: the idle lanes carry zeros."""
    out = np.zeros(shape, dtype=x.dtype)
    out[: x.shape[0], : x.shape[1]] = x
    return out


def _step_stationary(stat: np.ndarray, stream: np.ndarray) -> tuple[np.ndarray, int]:
    """One fold with a stationary operand (``ws`` and ``is``), cycle by cycle.

    ``stat`` (R, C) is shifted into the processing elements from the top edge, one row per
    cycle, last row first, so that after R cycles PE (r, c) holds ``stat[r, c]``. Then row
    ``i`` of ``stream`` (T, R) enters the left edge skewed, element ``r`` into array row
    ``r`` at streaming cycle ``i + r``, and moves one PE right per cycle; each PE adds its
    product to the partial sum arriving from the PE above and passes it down. Each sum
    carries the index of its stream row; sums leaving the bottom edge are the outputs.

    Returns
    -------
    out : ndarray of shape (T, C)
        ``stream @ stat`` accumulated down the columns in the register dtype.
    cycles : int
        Cycles from the first weight shift to the last output leaving the array.
    """
    rows, cols = stat.shape
    t_len = stream.shape[0]
    dtype = stat.dtype
    weights = np.zeros((rows, cols), dtype=dtype)
    cycle = 0
    for _ in range(rows):  # weight load: shift down, feed the top row
        weights[1:] = weights[:-1].copy()
        weights[0] = stat[rows - 1 - cycle]
        cycle += 1
    a = np.zeros((rows, cols), dtype=dtype)  # horizontal operand registers
    a_tag = np.full((rows, cols), -1, dtype=np.int64)  # stream row each register holds
    psum = np.zeros((rows, cols), dtype=dtype)  # vertical partial-sum registers
    p_tag = np.full((rows, cols), -1, dtype=np.int64)
    out = np.zeros((t_len, cols), dtype=dtype)
    row_ids = np.arange(rows)
    col_ids = np.arange(cols)
    remaining = t_len * cols
    zero_row = np.zeros((1, cols), dtype=dtype)
    while remaining:
        s = cycle - rows  # streaming cycle
        a[:, 1:] = a[:, :-1].copy()
        a_tag[:, 1:] = a_tag[:, :-1].copy()
        idx = s - row_ids
        live = (idx >= 0) & (idx < t_len)
        safe = np.clip(idx, 0, t_len - 1)
        a[:, 0] = np.where(live, stream[safe, row_ids], 0)
        a_tag[:, 0] = np.where(live, idx, -1)
        incoming = np.concatenate([zero_row, psum[:-1]], axis=0)
        p_tag = np.concatenate([a_tag[:1], p_tag[:-1]], axis=0)
        product = a * weights
        psum = incoming + np.where(a_tag >= 0, product, 0).astype(dtype, copy=False)
        leaving = p_tag[-1]
        done = leaving >= 0
        if done.any():
            out[leaving[done], col_ids[done]] = psum[-1, done]
            remaining -= int(done.sum())
        cycle += 1
    return out, cycle


def _step_output_stationary(a_blk: np.ndarray, b_blk: np.ndarray) -> tuple[np.ndarray, int]:
    """One ``os`` fold, cycle by cycle.

    Row ``r`` of ``a_blk`` (R, K) enters the left edge of array row ``r`` skewed by ``r``
    cycles and moves right; column ``c`` of ``b_blk`` (K, C) enters the top of array
    column ``c`` skewed by ``c`` cycles and moves down. A PE multiplies when both registers
    hold an operand and accumulates in place; the fold ends with the last PE's K-th MAC.

    Returns
    -------
    out : ndarray of shape (R, C)
        ``a_blk @ b_blk``, each element accumulated in order of K in the register dtype.
    cycles : int
    """
    rows, k_len = a_blk.shape
    cols = b_blk.shape[1]
    dtype = a_blk.dtype
    a = np.zeros((rows, cols), dtype=dtype)
    a_ok = np.zeros((rows, cols), dtype=bool)
    b = np.zeros((rows, cols), dtype=dtype)
    b_ok = np.zeros((rows, cols), dtype=bool)
    acc = np.zeros((rows, cols), dtype=dtype)
    macs_done = np.zeros((rows, cols), dtype=np.int64)
    row_ids = np.arange(rows)
    col_ids = np.arange(cols)
    cycle = 0
    while (macs_done < k_len).any():
        a[:, 1:] = a[:, :-1].copy()
        a_ok[:, 1:] = a_ok[:, :-1].copy()
        ka = cycle - row_ids
        live = (ka >= 0) & (ka < k_len)
        a[:, 0] = np.where(live, a_blk[row_ids, np.clip(ka, 0, k_len - 1)], 0)
        a_ok[:, 0] = live
        b[1:] = b[:-1].copy()
        b_ok[1:] = b_ok[:-1].copy()
        kb = cycle - col_ids
        live = (kb >= 0) & (kb < k_len)
        b[0] = np.where(live, b_blk[np.clip(kb, 0, k_len - 1), col_ids], 0)
        b_ok[0] = live
        fire = a_ok & b_ok
        np.add(acc, a * b, out=acc, where=fire)
        macs_done += fire
        cycle += 1
    return acc, cycle


#: Default bound on processing-element cycles (rows * cols * cycles) a stepping run may take.
STEP_LIMIT = 2e8


def simulate(
    a: Any,
    b: Any,
    *,
    array: tuple[int, int] = (4, 4),
    dataflow: str = "ws",
    accumulate: Any = np.float32,
    limit: float = STEP_LIMIT,
) -> tuple[np.ndarray, list[int]]:
    """Run ``a @ b`` on a systolic array one cycle at a time: the reference for :func:`gemm_cost`.

    Folds run in SCALE-Sim's order (column folds outer, row folds inner); the partial sums
    of successive K folds (``ws``, ``is``) are added in that order in the accumulator dtype.
    Operands are used as given: round them to the array's input format first.

    Parameters
    ----------
    a : array-like of shape (M, K)
    b : array-like of shape (K, N)
    array : (int, int), default=(4, 4)
    dataflow : {"ws", "os", "is"}, default="ws"
    accumulate : numpy dtype, default=float32
        Register and accumulator dtype: ``float32`` for bf16 operands, ``int64`` for int8.
    limit : float, default=2e8
        Largest ``rows * cols * cycles`` allowed; bigger runs raise before any work.

    Returns
    -------
    out : ndarray of shape (M, N) and dtype ``accumulate``
    fold_cycles : list of int
        Cycles each fold took, in run order; their sum is the array's cycle count.
    """
    a, b = matmul_operands(a, b, numeric=False, what="a and b")
    rows, cols = check_array_shape(array)
    dataflow = _check_dataflow(dataflow)
    (m, k), n = a.shape, b.shape[1]
    cost = gemm_cost(m, k, n, array=(rows, cols), dataflow=dataflow)
    work = float(rows) * cols * cost.array_cycles
    if work > limit:
        raise ValidationError(
            f"cycle stepping {m}x{k}x{n} on a {rows}x{cols} array takes {work:.3g} PE-cycles, "
            f"over the limit of {limit:.3g}; use the closed form (mode='closed') or a smaller "
            "array or GEMM."
        )
    acc = np.dtype(accumulate)
    a = a.astype(acc)
    b = b.astype(acc)
    out = np.zeros((m, n), dtype=acc)
    folds: list[int] = []
    sr, sc, _ = _spatial(dataflow, m, k, n)
    for fc in range(-(-sc // cols)):
        c0, c1 = fc * cols, min((fc + 1) * cols, sc)
        for fr in range(-(-sr // rows)):
            r0, r1 = fr * rows, min((fr + 1) * rows, sr)
            if dataflow == "os":  # rows: M, columns: N, K streamed
                res, cyc = _step_output_stationary(
                    _pad(a[r0:r1], (rows, k)), _pad(b[:, c0:c1], (k, cols))
                )
                out[r0:r1, c0:c1] = res[: r1 - r0, : c1 - c0]
            elif dataflow == "ws":  # rows: K, columns: N, M streamed
                res, cyc = _step_stationary(
                    _pad(b[r0:r1, c0:c1], (rows, cols)), _pad(a[:, r0:r1], (m, rows))
                )
                out[:, c0:c1] += res[:, : c1 - c0]
            else:  # is: rows: K, columns: M, N streamed
                res, cyc = _step_stationary(
                    _pad(a[c0:c1, r0:r1].T, (rows, cols)), _pad(b[r0:r1].T, (n, rows))
                )
                out[c0:c1] += res[:, : c1 - c0].T
            folds.append(cyc)
    return out, folds


def chip_cycles(fold_cycles_list: list[int], arrays: int) -> int:
    """Cycles of folds dealt round-robin to ``arrays`` arrays: the busiest array's sum."""
    per_array = [
        sum(fold_cycles_list[i::arrays]) for i in range(min(arrays, len(fold_cycles_list)))
    ]
    return max(per_array) if per_array else 0


def describe_fold(dataflow: str) -> str:
    """One line on how a dataflow maps a GEMM, for ``describe()``."""
    return {
        "ws": "weight stationary: K on rows, N on columns, M streamed",
        "os": "output stationary: M on rows, N on columns, K streamed",
        "is": "input stationary: K on rows, M on columns, N streamed",
    }[_check_dataflow(dataflow)]
