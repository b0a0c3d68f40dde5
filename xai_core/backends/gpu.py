"""The GPU backend: a SIMT machine whose matrix products run as shared-memory tiled GEMMs."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from xai_core.backends.base import Backend, matmul_operands
from xai_core.backends.presets import GPU_PRESETS
from xai_core.errors import ValidationError
from xai_core.plugin.hookspecs import hookimpl
from xai_core.validation import check_choice, check_float, check_positive_int

__all__ = ["GPUBackend", "round_tf32"]

PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "fp16")
_RTOL = {"fp32": 1e-5, "tf32": 2e-3, "fp16": 2e-3}
#: Elements of the output one pass over the K-tiles sums (2 MiB of fp32): rows at a time,
#: so the running sums stay in cache instead of streaming (M, N) through memory per tile.
_SUM_BLOCK = 1 << 19
_OPERAND_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2}


def round_tf32(x: Any) -> np.ndarray:
    """Round float32 values to TensorFloat-32 (10 mantissa bits), nearest, ties to even.

    Done on the bit pattern: add half of the 13 dropped bits' range (plus the kept last
    bit, for ties to even) and clear them. TF32 has float32's exponent range, so
    subnormals round at the same absolute step and values that round past the largest
    finite number become infinity. NaN stays NaN, infinities stay infinite.

    Parameters
    ----------
    x : array-like
        Any shape; stored as float32 first.

    Returns
    -------
    ndarray of float32, the shape of ``x``
    """
    x = np.array(x, dtype=np.float32, copy=True)
    bits = x.view(np.uint32)
    nan = np.isnan(x)
    kept_lsb = (bits >> np.uint32(13)) & np.uint32(1)
    bits += np.uint32(0xFFF) + kept_lsb
    bits &= np.uint32(0xFFFFE000)
    x[nan] = np.nan
    return x


class GPUBackend(Backend):
    """A GPU: streaming multiprocessors (SMs) that keep tiles of both operands in shared memory.

    ``C = A @ B`` runs as the classic tiled GEMM: one thread block per ``BM x BN`` tile
    of ``C``; each block walks ``K`` in steps of ``BK``, loading a ``BM x BK`` tile of A
    and a ``BK x BN`` tile of B from global into shared memory, from which its threads
    read their operands. Counted: thread blocks ``ceil(M/BM) * ceil(N/BN)``; waves
    ``ceil(blocks / (SMs * blocks per SM))``; global-memory element reads
    ``M*K*ceil(N/BN) + K*N*ceil(M/BM)`` and writes ``M*N``; shared-memory bytes; the
    theoretical occupancy; and a roofline time ``max(compute, memory)``: compute is the
    busiest SM's share of blocks, ``ceil(blocks / SMs)`` full tiles (padding included) at
    its part of the peak rate, so tile padding and partly filled waves cost time; memory
    is global bytes over the bandwidth.

    Numerics: operands rounded to the precision (``fp32``: as they are; ``tf32``: 10
    mantissa bits; ``fp16``: IEEE half), each K-tile's partial product formed in fp32
    and the partials accumulated in fp32 in tile order, as a block's accumulators are.

    Parameters
    ----------
    preset : {"p100", "v100", "a100"}, default="v100"
    precision : {"fp32", "tf32", "fp16"}, default="fp32"
        Operand precision; accumulation is fp32 in every case. On a chip without tensor
        cores for the precision (tf32 before the A100) the numerics are emulated at the
        fp32 rate.
    tile : (int, int, int), default=(128, 128, 8)
        ``(BM, BN, BK)``, the block tile of a CUTLASS-style SGEMM.
    threads_per_block : int, default=256
    regs_per_thread : int, default=128
        Registers per thread, for occupancy.
    stages : int, default=2
        Shared-memory buffers per operand tile (2: double buffering).
    clock_mhz : float, optional
        Overrides the preset's boost clock.
    """

    name: ClassVar[str] = "gpu"
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = GPU_PRESETS

    def __init__(
        self,
        preset: str = "v100",
        *,
        precision: str = "fp32",
        tile: tuple[int, int, int] = (128, 128, 8),
        threads_per_block: int = 256,
        regs_per_thread: int = 128,
        stages: int = 2,
        clock_mhz: float | None = None,
    ) -> None:
        check_choice(preset, "gpu preset", self.PRESETS)
        check_choice(precision, "precision", PRECISIONS)
        spec = self.PRESETS[preset]
        self.preset, self.precision, self.spec = preset, precision, spec
        try:
            bm, bn, bk = (int(v) for v in tile)
            ok = all(
                isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1
                for v in tile
            )
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise ValidationError(
                f"tile must be (BM, BN, BK), three positive integers; got {tile!r}."
            )
        self.tile = (bm, bn, bk)
        threads_per_block = check_positive_int(threads_per_block, "threads_per_block")
        regs_per_thread = check_positive_int(regs_per_thread, "regs_per_thread")
        stages = check_positive_int(stages, "stages")
        if (bm * bn) % threads_per_block:
            raise ValidationError(
                f"threads_per_block must divide BM * BN = {bm * bn} so each thread owns an "
                f"equal patch of C; got {threads_per_block}."
            )
        self.threads_per_block = int(threads_per_block)
        self.regs_per_thread = int(regs_per_thread)
        self.stages = int(stages)
        clock = check_float(clock_mhz, "clock_mhz", allow_none=True)
        self.clock_hz = (spec["clock_mhz"] if clock is None else clock) * 1e6
        self.operand_bytes = _OPERAND_BYTES[precision]
        self.smem_per_block = self.stages * (bm * bk + bk * bn) * self.operand_bytes
        limits = {
            "shared memory": spec["smem_kib_per_sm"] * 1024 // self.smem_per_block,
            "threads": spec["max_threads_per_sm"] // self.threads_per_block,
            "registers": spec["regs_per_sm"] // (self.regs_per_thread * self.threads_per_block),
            "blocks": spec["max_blocks_per_sm"],
        }
        self.blocks_per_sm = int(min(limits.values()))
        if self.blocks_per_sm < 1:
            short = [k for k, v in limits.items() if v < 1]
            raise ValidationError(
                f"a block of tile {self.tile} with {self.threads_per_block} threads does not fit "
                f"on one SM of the {preset} (not enough {', '.join(short)}); use a smaller tile."
            )
        self.occupancy = self.blocks_per_sm * self.threads_per_block / spec["max_threads_per_sm"]
        patch = bm * bn // self.threads_per_block
        tm = math.isqrt(patch)
        while patch % tm:
            tm -= 1
        self.thread_patch = (tm, patch // tm)
        peak = spec["peak_tflops"].get(precision)
        self.tensor_cores = precision in spec["tensor_cores"]
        self.emulated = peak is None
        self.peak_flops = float(peak if peak is not None else spec["peak_tflops"]["fp32"]) * 1e12
        # scale the published peak to a user clock
        self.peak_flops *= self.clock_hz / (spec["clock_mhz"] * 1e6)
        self.bandwidth = spec["memory_gbps"] * 1e9
        self.matmul_rtol = _RTOL[precision]
        super().__init__(np.float32)

    def extra_counters(self) -> tuple[str, ...]:
        return (
            "flops",
            "thread_blocks",
            "waves",
            "occupancy",
            "global_bytes_read",
            "global_bytes_written",
            "smem_bytes_read",
            "smem_bytes_written",
            "compute_seconds",
            "memory_seconds",
        )

    # -- numerics ---------------------------------------------------------------------
    def _round(self, x: np.ndarray) -> np.ndarray:
        if self.precision == "tf32":
            return round_tf32(x)
        x = np.asarray(x, dtype=np.float32)
        if self.precision == "fp16":
            return x.astype(np.float16).astype(np.float32)
        return x

    def matmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Tiled GEMM of ``a`` (M, K) and ``b`` (K, N): fp32 partial products per K-tile,
        accumulated in tile order; float32 of shape (M, N) (see :meth:`Backend.matmul`)."""
        a, b = matmul_operands(a, b)
        a, b = self._round(a), self._round(b)
        (m, k), n = a.shape, b.shape[1]
        bk = self.tile[2]
        out = np.empty((m, n), np.float32)
        rows = max(1, _SUM_BLOCK // n)  # row blocks whose sums stay in cache across K-tiles
        part = np.empty((min(rows, m), n), np.float32)
        for r0 in range(0, m, rows):
            a_rows, acc = a[r0 : r0 + rows], out[r0 : r0 + rows]
            np.matmul(a_rows[:, :bk], b[:bk], out=acc)
            tile = part[: len(acc)]
            for k0 in range(bk, k, bk):  # one step per K-tile, not per element
                acc += np.matmul(a_rows[:, k0 : k0 + bk], b[k0 : k0 + bk], out=tile)
        self._count_gemm(m, k, n)
        return out

    @property
    def number_format(self) -> str:
        """The operand precision: ``"fp32"``, ``"tf32"`` or ``"fp16"``."""
        return self.precision

    @property
    def exact_operands(self) -> bool:
        """True at fp32 precision (operands multiplied as given); False for tf32 and fp16."""
        return self.precision == "fp32"

    # -- counters ---------------------------------------------------------------------
    def _count_gemm(self, m: int, k: int, n: int) -> None:
        bm, bn, bk = self.tile
        row_tiles, col_tiles, k_tiles = -(-m // bm), -(-n // bn), -(-k // bk)
        blocks = row_tiles * col_tiles
        concurrent = self.spec["sms"] * self.blocks_per_sm
        waves = -(-blocks // concurrent)
        global_reads = m * k * col_tiles + k * n * row_tiles
        read_bytes = global_reads * self.operand_bytes
        written_bytes = m * n * 4
        tm, tn = self.thread_patch
        smem_reads = blocks * k_tiles * bk * self.threads_per_block * (tm + tn)
        block_flops = 2.0 * bm * bn * k_tiles * bk
        sms = self.spec["sms"]
        # blocks are spread evenly over the SMs; an SM's share runs at its 1/sms of the peak
        compute = -(-blocks // sms) * block_flops * sms / self.peak_flops
        self._add(
            matmuls=1,
            macs=m * k * n,
            flops=2 * m * k * n,
            thread_blocks=blocks,
            waves=waves,
            smem_bytes_written=read_bytes,
            smem_bytes_read=smem_reads * self.operand_bytes,
            **self._roofline(compute, read_bytes, written_bytes),
        )
        self._counters["occupancy"] = self.occupancy

    def vector_cycles(self, n_ops: int) -> float:
        """Cycles of the CUDA cores for ``n_ops`` fp32 operations (one per core per cycle)."""
        return float(n_ops) / self.spec["cuda_cores"]

    def _count_vector(self, n_in: int, n_out: int, n_ops: int) -> None:
        compute = self.vector_cycles(n_ops) / self.clock_hz
        self._add(elementwise_ops=n_ops, **self._roofline(compute, n_in * 4, n_out * 4))

    def _roofline(self, compute: float, read: int, written: int) -> dict[str, float]:
        """Traffic and time counters of one kernel: the slower of compute and memory."""
        memory = (read + written) / self.bandwidth
        seconds = max(compute, memory)
        return {
            "bytes_read": read,
            "bytes_written": written,
            "global_bytes_read": read,
            "global_bytes_written": written,
            "compute_seconds": compute,
            "memory_seconds": memory,
            "cycles": seconds * self.clock_hz,
            "est_seconds": seconds,
        }

    # -- description ------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        bm, bn, bk = self.tile
        unit = "tensor cores" if self.tensor_cores else "CUDA cores"
        if self.emulated:
            unit += ", emulated at the fp32 rate"
        if self.precision == "fp32":
            operands = "fp32 operands"
        else:
            operands = f"{self.precision} operands (round to nearest even) on {unit}"
        return {
            "name": self.name,
            "numerics": f"{operands}, fp32 accumulation in K-tile order (BK={bk})",
            "gradients": True,
            "presets": sorted(self.PRESETS),
            "preset": self.preset,
            "precision": self.precision,
            "tile": self.tile,
            "sms": self.spec["sms"],
            "blocks_per_sm": self.blocks_per_sm,
            "occupancy": self.occupancy,
            "clock_mhz": self.clock_hz / 1e6,
            "peak_tflops": self.peak_flops / 1e12,
            "memory_gbps": self.spec["memory_gbps"],
        }


@hookimpl
def xai_register_backends():
    """The tiled-GEMM GPU."""
    return [GPUBackend]
