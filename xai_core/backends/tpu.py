"""The systolic TPU backend: bf16 (or int8) matrix units, an fp32 vector unit, exact cycle counts."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np

from xai_core.backends import systolic
from xai_core.backends.base import Backend, matmul_operands
from xai_core.backends.energy import energy_of
from xai_core.backends.memory import MemorySystem, memory_cost
from xai_core.backends.presets import TPU_PRESETS
from xai_core.errors import CapabilityError, ValidationError
from xai_core.kernels.int8_product import exact_int8_product
from xai_core.kernels.weight_cache import derived
from xai_core.plugin.hookspecs import hookimpl
from xai_core.validation import check_bool, check_choice, check_float, check_positive_int

__all__ = ["INT32_SAFE_K", "TPUBackend", "check_int32_sums", "int8_gemm"]

MODES: tuple[str, ...] = ("closed", "step")
NUMERICS: tuple[str, ...] = ("bf16", "int8")

#: Settings of ``TPUBackend()`` without a preset: one 128 x 128 matrix unit at v3's clock.
_GENERIC: dict[str, Any] = {
    "array": (128, 128),
    "mxus_per_core": 1,
    "cores": 1,
    "clock_mhz": 940.0,
    "numerics": "bf16",
    "memory_gib": None,
    "memory_gbps": None,
    "vector_lanes": 1024,
}


#: The longest K whose int8 sums always fit an int32 accumulator: ``K * 128**2 <= 2**31 - 1``.
INT32_SAFE_K = (2**31 - 1) // 128**2


def check_int32_sums(exact: np.ndarray, k: int) -> None:
    """Raise :class:`CapabilityError` if an exact int8 GEMM result leaves the int32 range.

    Two's-complement wrap-around is associative, so partial sums that wrap on the way
    still give the right total whenever the total fits: only the exact result is checked,
    and only when ``k`` exceeds :data:`INT32_SAFE_K` (below it no sum can overflow).

    Parameters
    ----------
    exact : ndarray of shape (M, N)
        The exact (int64 or float64) product.
    k : int
        The GEMM's inner dimension.
    """
    if k > INT32_SAFE_K and exact.size:
        lo, hi = float(exact.min()), float(exact.max())
        if lo < -(2**31) or hi > 2**31 - 1:
            raise CapabilityError(
                f"an int8 GEMM with K = {k:,} has sums beyond the int32 accumulator's range "
                f"(from {lo:.0f} to {hi:.0f}; they would wrap on the hardware); split the "
                "product along K."
            )


def int8_gemm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact ``a @ b`` of int8 matrices with an int32 accumulator.

    Computed exactly by float32 BLAS in K-slices of 1024
    (:func:`~xai_core.kernels.int8_product.exact_int8_product`). A sum outside the int32
    range (which needs ``K > 131071``) would wrap in the hardware's accumulator: it is
    refused (:func:`check_int32_sums`) rather than returned wrong.

    Parameters
    ----------
    a : ndarray of int8, shape (M, K)
    b : ndarray of int8, shape (K, N)

    Returns
    -------
    ndarray of int32, shape (M, N)
    """
    exact = exact_int8_product(a, b)
    check_int32_sums(exact, a.shape[1])
    return exact.astype(np.int32)


#: Per thread: whether the matrix products' operands are already bf16 values.
_ROUNDED = threading.local()


@contextmanager
def _operands_rounded() -> Iterator[None]:
    """A scope whose products' operands were rounded to bf16 by the caller."""
    before = getattr(_ROUNDED, "on", False)
    _ROUNDED.on = True
    try:
        yield
    finally:
        _ROUNDED.on = before


class TPUBackend(Backend):
    """A systolic-array accelerator: the TPU's matrix units and vector unit.

    Matrix products run on R x C systolic arrays (one per matrix unit) in the chosen
    dataflow; cycles, folds, utilisation, mapping efficiency and buffer traffic come from
    the closed form of :mod:`xai_core.backends.systolic`, which agrees exactly with
    SCALE-Sim. Numerics: operands rounded to bfloat16 (nearest even, ``ml_dtypes``),
    products exact, sums in fp32; or, with ``numerics="int8"`` (the v1 preset), int8
    operands and exact int32 sums. Elementwise work runs in fp32 on the vector unit.

    Parameters
    ----------
    preset : {"v1", "v2", "v3", "v4"}, optional
        A published chip; its settings are the defaults of the keywords below. Without a
        preset: one 128 x 128 bf16 matrix unit at 940 MHz.
    array : (int, int), optional
        Rows and columns of each matrix unit, any size down to (2, 2), non-square allowed.
    dataflow : {"ws", "os", "is"}, default="ws"
        Weight, output or input stationary.
    numerics : {"bf16", "int8"}, optional
        ``int8`` makes the backend inference-only and requires int8 operands (a model
        from :func:`xai_core.quantize`).
    mode : {"closed", "step"}, default="closed"
        ``closed``: the closed-form counts and one vectorised product per GEMM.
        ``step``: move every operand through the processing elements cycle by cycle (the
        reference; small arrays and GEMMs only). Both give the same cycle counts.
    double_buffered : bool, default=False
        Hide the load of each fold's stationary operand behind the previous fold, as the
        real TPU does. A departure from SCALE-Sim; ``scalesim_total_cycles`` still counts
        SCALE-Sim's way. Closed mode only.
    clock_mhz : float, optional
        Clock for ``est_seconds``.
    mxus : int, optional
        Matrix units that share a GEMM's folds (default: all on the chip,
        ``mxus_per_core * cores``).
    step_limit : float, default=2e8
        Largest ``rows * cols * cycles`` one GEMM may take in step mode.
    sram_kib : (float, float, float), optional
        The memory system (:mod:`xai_core.backends.memory`): ifmap, filter and ofmap SRAM
        in KiB, each double-buffered. Without it operands are assumed on chip (no stalls).
    dram_bw : float or (float, float, float), optional
        DRAM words per cycle of the ifmap, filter and ofmap ports (one number: each);
        by default the preset's memory bandwidth split equally over the three.

    Examples
    --------
    >>> b = xai.get_backend("tpu", preset="v3", array=(128, 128), dataflow="ws")
    >>> c = b.matmul(x, w); b.counters["cycles"]
    """

    name: ClassVar[str] = "tpu"
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = TPU_PRESETS
    DEFAULT_PRESET: ClassVar[str | None] = None
    ALLOWED_NUMERICS: ClassVar[tuple[str, ...]] = NUMERICS

    def __init__(
        self,
        preset: str | None = None,
        *,
        array: tuple[int, int] | None = None,
        dataflow: str = "ws",
        numerics: str | None = None,
        mode: str = "closed",
        double_buffered: bool = False,
        clock_mhz: float | None = None,
        mxus: int | None = None,
        step_limit: float = systolic.STEP_LIMIT,
        sram_kib: tuple[float, float, float] | None = None,
        dram_bw: float | tuple[float, float, float] | None = None,
    ) -> None:
        if preset is None:
            preset = self.DEFAULT_PRESET
        if preset is None:
            base = dict(_GENERIC)
        else:
            base = dict(self.PRESETS[check_choice(preset, f"{self.name} preset", self.PRESETS)])
        self.preset = preset
        self.array = systolic.check_array_shape(array if array is not None else base["array"])
        self.dataflow = check_choice(dataflow, "dataflow", systolic.DATAFLOWS)
        numerics = base["numerics"] if numerics is None else numerics
        self.numerics = check_choice(numerics, f"{self.name} numerics", self.ALLOWED_NUMERICS)
        self.mode = check_choice(mode, "mode", MODES)
        self.double_buffered = check_bool(double_buffered, "double_buffered")
        if self.double_buffered and mode == "step":
            raise ValidationError(
                "double_buffered=True is modelled by the closed form only; use mode='closed' "
                "or double_buffered=False."
            )
        clock = check_float(clock_mhz, "clock_mhz", allow_none=True)
        self.clock_hz = float(base["clock_mhz"] if clock is None else clock) * 1e6
        default_mxus = base["mxus_per_core"] * base["cores"]
        self.mxus = check_positive_int(default_mxus if mxus is None else mxus, "mxus")
        self.step_limit = check_float(step_limit, "step_limit")
        self.vector_lanes = int(base["vector_lanes"]) * int(base["cores"])
        self.memory_gbps = base.get("memory_gbps")
        self.memory_gib = base.get("memory_gib")
        self.int8 = numerics == "int8"
        # An int8 chip (TPU v1, the Edge TPU) runs quantised models only, for inference.
        self.supports_gradients = not self.int8
        self.requires_quantized = self.int8
        self.matmul_rtol = 0.0 if self.int8 else 1e-2
        self.memory = self._memory_system(sram_kib, dram_bw)
        super().__init__(np.float32)

    def _memory_system(self, sram_kib: Any, dram_bw: Any) -> MemorySystem | None:
        word = 1 if self.int8 else 2
        if sram_kib is None:
            if dram_bw is not None:
                raise ValidationError("dram_bw needs sram_kib: give the SRAM sizes too.")
            return None
        if not isinstance(sram_kib, (tuple, list)) or len(sram_kib) != 3:
            raise ValidationError(
                f"sram_kib must be (ifmap, filter, ofmap) KiB such as (256, 256, 128); got {sram_kib!r}."
            )
        kib = tuple(check_float(v, f"sram_kib[{i}] (KiB)") for i, v in enumerate(sram_kib))
        for i, v in enumerate(kib):
            if v * 1024 < 2 * word:  # double-buffered: each half holds at least one word
                raise ValidationError(
                    f"sram_kib[{i}] must hold at least two {word}-byte words (both halves of "
                    f"its double buffer), {2 * word / 1024:g} KiB; got {v:g} KiB."
                )
        if dram_bw is None:
            if not self.memory_gbps:
                raise ValidationError("dram_bw is needed: this backend has no memory bandwidth.")
            return MemorySystem.from_gbps(kib, self.memory_gbps, self.clock_hz, word)
        bws = tuple(dram_bw) if isinstance(dram_bw, (tuple, list)) else (dram_bw,) * 3
        if len(bws) != 3:
            raise ValidationError(f"dram_bw must be one number or three; got {dram_bw!r}.")
        bws = tuple(check_float(v, "dram_bw (words per cycle)") for v in bws)
        return MemorySystem(*kib, *bws, word_bytes=word)

    # -- counters ---------------------------------------------------------------------
    def extra_counters(self) -> tuple[str, ...]:
        return (
            "folds",
            "matmul_cycles",
            "array_cycles",
            "scalesim_total_cycles",
            "vector_cycles",
            "utilization",
            "mapping_efficiency",
            "sram_reads_a",
            "sram_reads_b",
            "sram_writes_c",
            "offchip_bytes_read",
            "offchip_bytes_written",
            "stall_cycles",
            "dram_reads_a",
            "dram_reads_b",
            "dram_writes_c",
        )

    @property
    def counters(self) -> dict[str, float]:
        """The counters, with the energy estimate of :mod:`xai_core.backends.energy`."""
        c = dict(self._counters)
        c.update(energy_of(c, int8=self.int8, operand_bytes=1 if self.int8 else 2))
        return c

    def _count_memory(self, cost: systolic.GemmCost, n_dev: int = 1) -> int:
        """Stalls and DRAM traffic of one GEMM on ``n_dev`` devices; returns its stall cycles."""
        if self.memory is None:
            return 0
        mc = memory_cost(
            cost.m, cost.k, cost.n, array=self.array, dataflow=self.dataflow, memory=self.memory
        )
        stall = int(max(0.0, np.ceil(float(mc.port_cycles)) - cost.cycles))
        in_bytes = self.memory.word_bytes
        read = (int(mc.ifmap_dram_reads) + int(mc.filter_dram_reads)) * in_bytes * n_dev
        written = int(mc.ofmap_dram_writes) * 4 * n_dev
        c = self._counters
        # the DRAM traffic replaces the operands-once estimate of the off-chip counters
        for key, old, new in (
            ("offchip_bytes_read", (cost.offchip_reads_a + cost.offchip_reads_b) * in_bytes, read),
            ("offchip_bytes_written", cost.offchip_writes_c * 4, written),
        ):
            c[key] += new - old * n_dev
            c["bytes_read" if "read" in key else "bytes_written"] += new - old * n_dev
        self._add(
            stall_cycles=stall * n_dev,
            dram_reads_a=int(mc.ifmap_dram_reads) * n_dev,
            dram_reads_b=int(mc.filter_dram_reads) * n_dev,
            dram_writes_c=int(mc.ofmap_dram_writes) * n_dev,
        )
        return stall

    def reset_counters(self) -> None:
        super().reset_counters()
        self._mapped_sum = 0.0

    def _count_gemm(self, cost: systolic.GemmCost, cycles: int, array_cycles: int) -> None:
        in_bytes = 1 if self.int8 else 2  # int8 or bf16 operands
        read = (cost.offchip_reads_a + cost.offchip_reads_b) * in_bytes
        written = cost.offchip_writes_c * 4  # int32 or fp32 results
        self._mapped_sum += cost.mapping_efficiency * cost.folds
        stall = self._count_memory(cost)
        cycles += stall
        self._add(
            matmuls=1,
            macs=cost.macs,
            folds=cost.folds,
            cycles=cycles,
            matmul_cycles=cycles,
            array_cycles=array_cycles,
            scalesim_total_cycles=cost.scalesim_total_cycles,
            sram_reads_a=cost.sram_reads_a,
            sram_reads_b=cost.sram_reads_b,
            sram_writes_c=cost.sram_writes_c,
            offchip_bytes_read=read,
            offchip_bytes_written=written,
            bytes_read=read,
            bytes_written=written,
            est_seconds=cycles / self.clock_hz,
        )
        c = self._counters
        pes = self.array[0] * self.array[1] * self.mxus
        c["utilization"] = c["macs"] / (c["matmul_cycles"] * pes)
        c["mapping_efficiency"] = self._mapped_sum / c["folds"]

    def vector_cycles(self, n_ops: int) -> float:
        return float(-(-int(n_ops) // self.vector_lanes))

    def _count_vector(self, n_in: int, n_out: int, n_ops: int) -> None:
        super()._count_vector(n_in, n_out, n_ops)
        self._add(vector_cycles=self.vector_cycles(n_ops))

    # -- primitives -------------------------------------------------------------------
    def _operands(self, a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
        a, b = matmul_operands(a, b, numeric=not self.int8)
        if self.int8 and (a.dtype != np.int8 or b.dtype != np.int8):
            raise CapabilityError(
                f"the {self.name!r} backend ({self._label()}) multiplies int8 operands only; got "
                f"{a.dtype} and {b.dtype}. Quantise the model with xai.quantize(net, "
                "calibration_X) and run the quantised model."
            )
        return a, b

    @property
    def number_format(self) -> str:
        """``"bf16"`` or ``"int8"``: the operands of the matrix units."""
        return self.numerics

    def _label(self) -> str:
        return f"preset {self.preset}" if self.preset else "int8 numerics"

    def matmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Matrix product on the systolic arrays.

        Parameters
        ----------
        a : ndarray of shape (M, K)
            Any real dtype (bf16 numerics: stored as float32, rounded to bf16); int8 only
            with int8 numerics.
        b : ndarray of shape (K, N)

        Returns
        -------
        ndarray of shape (M, N)
            float32 (bf16 numerics) or int32 (int8 numerics).
        """
        a, b = self._operands(a, b)
        (m, k), n = a.shape, b.shape[1]
        cost = self._gemm_cost(m, k, n)
        a_in, b_in = self._inputs(a, b)
        acc = np.int64 if self.int8 else np.float32
        if self.mode == "step":
            if self.int8 and k > INT32_SAFE_K:  # refused before the stepping starts
                check_int32_sums(exact_int8_product(a_in, b_in), k)
            out, folds = systolic.simulate(
                a_in,
                b_in,
                array=self.array,
                dataflow=self.dataflow,
                accumulate=acc,
                limit=self.step_limit,
            )
            if self.int8:
                check_int32_sums(out, k)  # exact int64 sums: the int32 ones did not wrap
                out = out.astype(np.int32)
            cycles, array_cycles = systolic.chip_cycles(folds, self.mxus), sum(folds)
        else:
            out = self._product(a_in, b_in)
            cycles, array_cycles = cost.cycles, cost.array_cycles
        self._count_gemm(cost, cycles, array_cycles)
        return out

    def _gemm_cost(self, m: int, k: int, n: int) -> systolic.GemmCost:
        return systolic.gemm_cost(
            m,
            k,
            n,
            array=self.array,
            dataflow=self.dataflow,
            arrays=self.mxus,
            double_buffered=self.double_buffered,
        )

    def _inputs(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The operands as the matrix units see them: int8 as they are, else rounded to bf16
        (unless the caller rounded them: :func:`_operands_rounded`)."""
        if self.int8:
            return a, b
        if getattr(_ROUNDED, "on", False):
            return np.asarray(a, np.float32), np.asarray(b, np.float32)
        return systolic.round_bf16(a), systolic.round_bf16(b)

    def conv2d(
        self,
        x: np.ndarray,
        weight: np.ndarray,
        bias: np.ndarray | None,
        geometry: Any,
        record: dict | None = None,
    ) -> np.ndarray:
        """The im2col convolution of the base class, its operands rounded to bf16 first: the
        input once (not once per window that reads it, ``kh * kw`` times) and the weight
        once per explanation (:func:`~xai_core.kernels.weight_cache.derived`). Rounding is
        elementwise, so the values and the counts are those of rounding the column matrix."""
        if self.int8:
            return super().conv2d(x, weight, bias, geometry, record)
        from xai_core.kernels.conv_ops import conv2d_im2col

        x = systolic.round_bf16(x)
        weight = derived(weight, "bf16", systolic.round_bf16)
        with _operands_rounded():
            return conv2d_im2col(self, x, weight, bias, geometry, record)

    def _product(self, a_in: np.ndarray, b_in: np.ndarray) -> np.ndarray:
        """The closed mode's values: exact int32 or fp32 sums of the rounded operands."""
        return int8_gemm(a_in, b_in) if self.int8 else a_in @ b_in

    def elementwise(
        self, fn: Callable[..., np.ndarray], *arrays: np.ndarray, ops: int = 1
    ) -> np.ndarray:
        """Elementwise work on the vector unit, counted at ``ceil(ops / lanes)`` cycles.

        fp32, as the base class; with int8 numerics, integer inputs stay integers (the
        requantisation of a quantised model runs in integer arithmetic).
        """
        if self.int8 and arrays and all(np.asarray(x).dtype.kind in "iu" for x in arrays):
            ints = [np.asarray(x) for x in arrays]
            out = np.asarray(fn(*ints))
            self._count_vector(sum(x.size for x in ints), out.size, out.size * ops)
            return out
        return super().elementwise(fn, *arrays, ops=ops)

    # -- description ------------------------------------------------------------------
    def numerics_text(self) -> str:
        """The arithmetic, in words."""
        if self.int8:
            return "int8 x int8 products, exact int32 accumulation; fp32 vector unit"
        return "bf16 operands (round to nearest even), exact products, fp32 accumulation; fp32 vector unit"

    def memory_text(self) -> str:
        """The memory system, in words."""
        mem = self.memory
        if mem is None:
            return "operands assumed on chip (no stalls)"
        kib = f"{mem.ifmap_sram_kib:g}/{mem.filter_sram_kib:g}/{mem.ofmap_sram_kib:g}"
        bws = f"{mem.ifmap_bw:.3g}/{mem.filter_bw:.3g}/{mem.ofmap_bw:.3g}"
        return f"SRAM ifmap/filter/ofmap {kib} KiB double-buffered; DRAM {bws} words per cycle"

    def peak_ops(self) -> float:
        """Peak multiply-accumulates x 2 per second of the matrix units."""
        return 2.0 * self.array[0] * self.array[1] * self.mxus * self.clock_hz

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "numerics": self.numerics_text(),
            "gradients": self.supports_gradients,
            "presets": sorted(self.PRESETS),
            "preset": self.preset,
            "array": self.array,
            "mxus": self.mxus,
            "dataflow": self.dataflow,
            "dataflow_mapping": systolic.describe_fold(self.dataflow),
            "mode": self.mode,
            "double_buffered": self.double_buffered,
            "clock_mhz": self.clock_hz / 1e6,
            "peak_tops": self.peak_ops() / 1e12,
            "memory_gib": self.memory_gib,
            "memory_gbps": self.memory_gbps,
            "memory_system": self.memory_text(),
        }


@hookimpl
def xai_register_backends():
    """The systolic TPU."""
    return [TPUBackend]
