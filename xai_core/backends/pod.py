"""Cloud TPU boards and pod slices: data parallelism over TensorCores joined by a torus.

A batch's rows (and, for integrated gradients, its path points, which arrive as rows)
are dealt to the devices in contiguous shards: with ``n`` rows on ``D`` devices the first
``n mod D`` devices take ``ceil(n / D)`` rows and the others ``floor(n / D)``. Every
device runs the same program on its shard, so each matrix product is costed twice at
most (once per shard size) and the per-device counters are numpy vectors: no Python loop
per device. The values are those of one device: a row's result does not depend on which
device computes it, and they are computed in one product in the single chip's numerics.

Time of a batch: the slowest device's cycles, plus the host infeed of the batch (each
chip receives its rows over its own PCIe link), plus the all-gather of the results over
the torus; for a training step, plus the all-reduce of the gradients
(:mod:`xai_core.backends.collectives`). No overlap between them is assumed.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from xai_core.backends import systolic
from xai_core.backends.collectives import all_gather_cost, all_reduce_cost
from xai_core.backends.presets import TPU_POD_PRESETS
from xai_core.backends.tpu import TPUBackend
from xai_core.plugin.hookspecs import hookimpl
from xai_core.validation import check_float

__all__ = ["TPUPodBackend"]


class TPUPodBackend(TPUBackend):
    """A Cloud TPU board or pod slice (``v2-8``, ``v3-8``, ``v3-2048``, ``v4-128``...).

    Each data-parallel device is one TensorCore on v2 and v3 (two per chip) and one chip
    on v4 (its two TensorCores act as one, "megacore"); each runs the systolic model of
    :class:`~xai_core.backends.tpu.TPUBackend` with that device's matrix units.
    :meth:`describe` gives memory per device (``memory_gib``: a v2 TensorCore's 8 GiB, half
    its chip's 16 GiB HBM; a v4 chip's 32 GiB) and per chip (``memory_gib_per_chip``).

    Parameters
    ----------
    preset : str, default="v2-8"
        A Cloud TPU accelerator type (see :data:`xai_core.backends.presets.TPU_POD_PRESETS`).
    dataflow, double_buffered, clock_mhz
        As for :class:`~xai_core.backends.tpu.TPUBackend` (closed mode, bf16 only).
    ici_latency_us : float, optional
        Microseconds per ring step of a collective (assumed 1.0: not published).
    sram_kib, dram_bw
        The memory system of :class:`~xai_core.backends.tpu.TPUBackend`, per device.

    Examples
    --------
    >>> pod = xai.get_backend("tpu_pod", preset="v2-8")
    >>> xai.ModelRunner(net, pod).predict(X); pod.counters["compute_seconds"]
    >>> pod.device_cycles          # one entry per device
    """

    name: ClassVar[str] = "tpu_pod"
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = TPU_POD_PRESETS
    DEFAULT_PRESET: ClassVar[str | None] = "v2-8"
    ALLOWED_NUMERICS: ClassVar[tuple[str, ...]] = ("bf16",)

    def __init__(
        self,
        preset: str | None = None,
        *,
        dataflow: str = "ws",
        double_buffered: bool = False,
        clock_mhz: float | None = None,
        ici_latency_us: float | None = None,
        sram_kib: tuple[float, float, float] | None = None,
        dram_bw: float | tuple[float, float, float] | None = None,
    ) -> None:
        super().__init__(
            preset,
            dataflow=dataflow,
            double_buffered=double_buffered,
            clock_mhz=clock_mhz,
            sram_kib=sram_kib,
            dram_bw=dram_bw,
        )
        spec = self.PRESETS[self.preset]
        self.spec = spec
        self.devices = int(spec["devices"])
        self.torus = tuple(int(d) for d in spec["torus"])
        self.wraparound = tuple(bool(w) for w in spec["wraparound"])
        self.link_gbps = float(spec["ici_gbps_per_link"])
        latency = check_float(ici_latency_us, "ici_latency_us", inclusive=True, allow_none=True)
        self.ici_latency_us = float(spec["ici_latency_us"] if latency is None else latency)
        self.devices_per_chip = self.devices // int(spec["chips"])
        self.host_gbps = float(spec["host_gbps_per_chip"])
        # the chip's HBM is shared by its devices: each TensorCore of v2/v3 has half of it
        chip_gib = spec.get("memory_gib")
        self.memory_gib_per_chip = None if chip_gib is None else float(chip_gib)
        self.memory_gib = None if chip_gib is None else float(chip_gib) / self.devices_per_chip
        self.reset_counters()

    # -- counters ---------------------------------------------------------------------
    def extra_counters(self) -> tuple[str, ...]:
        return super().extra_counters() + (
            "device_matmuls",
            "compute_cycles",
            "fastest_device_cycles",
            "compute_seconds",
            "infeed_bytes",
            "infeed_seconds",
            "gather_bytes",
            "gather_seconds",
            "allreduce_bytes",
            "allreduce_link_bytes",
            "allreduce_steps",
            "allreduce_seconds",
            "communication_seconds",
            "batches",
            "train_steps",
        )

    def reset_counters(self) -> None:
        super().reset_counters()
        n = getattr(self, "devices", 1)
        self._device_total = np.zeros(n)  # cycles per device since the reset
        self._device_batch = np.zeros(n)  # cycles per device in the open batch
        self._committed = 0.0  # sum over closed batches of the slowest device's cycles
        self._rows: int | None = None

    @property
    def device_cycles(self) -> np.ndarray:
        """Cycles of each device since the last reset, shape (devices,)."""
        return self._device_total + self._device_batch

    @property
    def counters(self) -> dict[str, float]:
        """The whole pod's counters: ``cycles`` and ``est_seconds`` are the slowest device's
        compute plus infeed, gather and all-reduce time; ``matmul_cycles`` and the traffic
        counters sum over devices."""
        c = super().counters
        compute = self._committed + float(self._device_batch.max(initial=0.0))
        comm = c["infeed_seconds"] + c["gather_seconds"] + c["allreduce_seconds"]
        c["compute_cycles"] = compute
        c["fastest_device_cycles"] = (
            float(self.device_cycles.min(initial=np.inf)) if compute else 0.0
        )
        c["compute_seconds"] = compute / self.clock_hz
        c["communication_seconds"] = comm
        c["est_seconds"] = c["compute_seconds"] + comm
        c["cycles"] = c["est_seconds"] * self.clock_hz
        pes = self.array[0] * self.array[1] * self.mxus * self.devices
        c["utilization"] = c["macs"] / (compute * pes) if compute else 0.0
        return c

    def _close_batch(self) -> None:
        self._committed += float(self._device_batch.max(initial=0.0))
        self._device_total += self._device_batch
        self._device_batch[:] = 0
        self._rows = None

    # -- sharding ---------------------------------------------------------------------
    def shard_rows(self, n: int) -> np.ndarray:
        """Rows of a batch of ``n`` on each device, shape (devices,)."""
        q, r = divmod(int(n), self.devices)
        rows = np.full(self.devices, q, dtype=np.int64)
        rows[:r] += 1
        return rows

    def _groups(self, count: int) -> list[tuple[int, int, int]]:
        """(shard size, first device, number of devices) of each shard group (at most 2)."""
        q, r = divmod(int(count), self.devices)
        groups = [(q + 1, 0, r), (q, r, self.devices - r)]
        return [(size, start, n) for size, start, n in groups if size > 0 and n > 0]

    def begin_batch(self, x: np.ndarray) -> None:
        """Start a batch: its rows are sharded, and its infeed is costed."""
        if self._rows is not None:
            self._close_batch()
        x = np.asarray(x)
        n = len(x)
        self._rows = n if n > 0 else None
        per_chip = self.shard_rows(n).reshape(-1, self.devices_per_chip).sum(axis=1).max()
        chip_bytes = x.nbytes * float(per_chip) / max(n, 1)
        self._add(
            batches=1,
            infeed_bytes=x.nbytes,
            infeed_seconds=chip_bytes / (self.host_gbps * 1e9),
        )

    def end_batch(self, out: Any) -> None:
        """End a batch: gather its results (``out``) to every device over the torus."""
        nbytes = float(np.asarray(out).nbytes) if out is not None else 0.0
        cost = all_gather_cost(
            nbytes,
            self.torus,
            self.wraparound,
            link_gbps=self.link_gbps,
            latency_us=self.ici_latency_us,
        )
        self._add(gather_bytes=nbytes, gather_seconds=cost.seconds)
        self._close_batch()

    def all_reduce_cost(self, nbytes: float):
        """The :class:`~xai_core.backends.collectives.CollectiveCost` of all-reducing ``nbytes``."""
        return all_reduce_cost(
            nbytes,
            self.torus,
            self.wraparound,
            link_gbps=self.link_gbps,
            latency_us=self.ici_latency_us,
            cores_per_device=self.devices_per_chip,
            memory_gbps=self.memory_gbps,
        )

    def all_reduce(self, grads: list[np.ndarray]) -> list[np.ndarray]:
        """Cost the all-reduce of a step's gradients (fp32) and end the step's batch.

        The gradients were computed over the whole global batch, which is what the sum of
        the devices' partial gradients is; they are returned as they are.
        """
        nbytes = float(sum(np.asarray(g).size for g in grads) * 4)
        cost = self.all_reduce_cost(nbytes)
        self._add(
            train_steps=1,
            allreduce_bytes=nbytes,
            allreduce_link_bytes=cost.link_bytes,
            allreduce_steps=cost.steps,
            allreduce_seconds=cost.seconds,
        )
        self._close_batch()
        return grads

    # -- primitives -------------------------------------------------------------------
    def matmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The product, its rows sharded over the devices (its K for a weight gradient).

        With a batch of ``n`` rows open, a GEMM whose M is a multiple of ``n`` (a dense
        layer, or a convolution's ``n * pixels`` rows) is split along M by samples; one
        whose K is (the weight gradient ``x.T @ grad``) is split along K, each device
        forming a partial sum for the all-reduce. Outside a batch, M is split by rows.
        """
        a, b = self._operands(a, b)
        (m, k), n = a.shape, b.shape[1]
        out = self._product(*self._inputs(a, b))
        self._add(matmuls=1)
        rows = self._rows
        if rows and m % rows == 0:
            along_k, unit, count = False, m // rows, rows
        elif rows and k % rows == 0:
            along_k, unit, count = True, k // rows, rows
        else:
            along_k, unit, count = False, 1, m
        for size, start, n_dev in self._groups(count):
            mm, kk = (m, size * unit) if along_k else (size * unit, k)
            cost = self._gemm_cost(mm, kk, n)
            stall = self._count_shard(cost, n_dev)
            self._device_batch[start : start + n_dev] += cost.cycles + stall
        return out

    def _count_shard(self, cost: systolic.GemmCost, n_dev: int) -> int:
        """Add ``n_dev`` devices' worth of one shard's GEMM to the summed counters; returns
        the shard's stall cycles."""
        stall = self._count_memory(cost, n_dev)
        read = (cost.offchip_reads_a + cost.offchip_reads_b) * 2 * n_dev
        written = cost.offchip_writes_c * 4 * n_dev
        self._mapped_sum += cost.mapping_efficiency * cost.folds * n_dev
        self._add(
            device_matmuls=n_dev,
            macs=cost.macs * n_dev,
            folds=cost.folds * n_dev,
            matmul_cycles=(cost.cycles + stall) * n_dev,
            array_cycles=cost.array_cycles * n_dev,
            scalesim_total_cycles=cost.scalesim_total_cycles * n_dev,
            sram_reads_a=cost.sram_reads_a * n_dev,
            sram_reads_b=cost.sram_reads_b * n_dev,
            sram_writes_c=cost.sram_writes_c * n_dev,
            offchip_bytes_read=read,
            offchip_bytes_written=written,
            bytes_read=read,
            bytes_written=written,
        )
        self._counters["mapping_efficiency"] = self._mapped_sum / self._counters["folds"]
        return stall

    def _count_vector(self, n_in: int, n_out: int, n_ops: int) -> None:
        """Elementwise work, split over the devices like the open batch's rows."""
        shares = self.shard_rows(self._rows or self.devices) / float(self._rows or self.devices)
        cycles = np.ceil(n_ops * shares / self.vector_lanes)
        self._device_batch += cycles
        self._add(
            elementwise_ops=n_ops,
            bytes_read=n_in * self.dtype.itemsize,
            bytes_written=n_out * self.dtype.itemsize,
            vector_cycles=float(cycles.sum()),
        )

    # -- description ------------------------------------------------------------------
    def topology_text(self) -> str:
        """The slice's shape in words."""
        spec = self.spec
        dims = " x ".join(str(d) for d in self.torus)
        wrap = [f"dim {i}" for i, w in enumerate(self.wraparound) if w]
        kind = "torus" if all(self.wraparound) else ("mesh" if not wrap else "partial torus")
        unit = "TensorCores" if self.devices_per_chip > 1 else "chips (megacore)"
        return (
            f"{spec['accelerator_type']}: {dims} {kind} of {spec['chips']} {spec['chip']} chips "
            f"({spec['hosts']} host{'s' if spec['hosts'] > 1 else ''}, "
            f"{spec['chips_per_host']} chips each); {self.devices} data-parallel {unit}; "
            f"ICI {spec['ici_links_per_chip']} links x {self.link_gbps:g} Gbit/s per chip"
        )

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        spec = self.spec
        info.update(
            {
                "presets": list(self.PRESETS),
                "topology": self.topology_text(),
                "accelerator_type": spec["accelerator_type"],
                "chip": spec["chip"],
                "chips": spec["chips"],
                "devices": self.devices,
                "hosts": spec["hosts"],
                "chips_per_host": spec["chips_per_host"],
                "torus": self.torus,
                "wraparound": self.wraparound,
                "ici_links_per_chip": spec["ici_links_per_chip"],
                "ici_gbps_per_link": self.link_gbps,
                "ici_latency_us": self.ici_latency_us,
                "host_gbps_per_chip": self.host_gbps,
                "memory_gib": self.memory_gib,  # per data-parallel device
                "memory_gib_per_chip": self.memory_gib_per_chip,
                "peak_tops": self.peak_ops() * self.devices / 1e12,
                "peak_tops_per_device": self.peak_ops() / 1e12,
            }
        )
        return info


@hookimpl
def xai_register_backends():
    """Cloud TPU boards and pod slices."""
    return [TPUPodBackend]
