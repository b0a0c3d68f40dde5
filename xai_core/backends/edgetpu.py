"""The Edge TPU backend: an int8 systolic array that runs quantised models only."""

from __future__ import annotations

from typing import Any, ClassVar

from xai_core.backends.base import Backend
from xai_core.backends.presets import EDGETPU_PRESETS
from xai_core.backends.tpu import TPUBackend
from xai_core.plugin.hookspecs import hookimpl

__all__ = ["EdgeTPUBackend"]


class EdgeTPUBackend(TPUBackend):
    """The Coral Edge TPU: int8 weights and activations, int32 accumulation, inference only.

    A systolic array like :class:`~xai_core.backends.tpu.TPUBackend` with int8 numerics:
    ``matmul`` takes int8 operands only and returns their exact int32 product; float
    operands raise :class:`~xai_core.errors.CapabilityError` telling to call
    :func:`xai_core.quantize`. A model quantised that way (TFLite's int8 scheme: weights
    per-channel symmetric, activations per-tensor asymmetric) runs here; an unquantised
    network is refused by :class:`~xai_core.ModelRunner`, and gradients are not available.

    Parameters
    ----------
    preset : {"coral"}, default="coral"
        4 TOPS: a 64 x 64 array at 480 MHz (the geometry is an assumption that gives
        Google's published peak; see :mod:`xai_core.backends.presets`).
    array, dataflow, mode, clock_mhz, mxus, step_limit, double_buffered
        As for :class:`~xai_core.backends.tpu.TPUBackend`.
    """

    name: ClassVar[str] = "edgetpu"
    supports_gradients: ClassVar[bool] = False
    requires_quantized: ClassVar[bool] = True
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = EDGETPU_PRESETS
    DEFAULT_PRESET: ClassVar[str | None] = "coral"
    ALLOWED_NUMERICS: ClassVar[tuple[str, ...]] = ("int8",)

    #: Counters of the work that the host CPU does for a model the compiler maps only in part.
    HOST_COUNTERS: ClassVar[tuple[str, ...]] = ("macs", "cycles", "est_seconds", "bytes_read")

    @property
    def host(self) -> Backend:
        """The host CPU that runs the operators the Edge TPU compiler would not map."""
        if getattr(self, "_host", None) is None:
            from xai_core.backends.cpu import CPUBackend

            self._host = CPUBackend()
        return self._host

    def count_operator(self, on_host: bool) -> None:
        """Count one operator run on the Edge TPU or, unmapped, on the host."""
        self._add(**{"host_operators" if on_host else "edgetpu_operators": 1})

    def extra_counters(self) -> tuple[str, ...]:
        return (*super().extra_counters(), "edgetpu_operators", "host_operators")

    @property
    def counters(self) -> dict[str, float]:
        """The Edge TPU's counters, plus ``host_*`` for the host's share of a split model."""
        out = super().counters
        host = self.host.counters
        for key in self.HOST_COUNTERS:
            out[f"host_{key}"] = host.get(key, 0)
        out["total_est_seconds"] = out["est_seconds"] + out["host_est_seconds"]
        return out

    def reset_counters(self) -> None:
        super().reset_counters()
        if getattr(self, "_host", None) is not None:
            self._host.reset_counters()

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info["tops_per_watt"] = self.PRESETS[self.preset].get("tops_per_watt")
        info["numerics"] = (
            "int8 weights (per-channel symmetric) and activations (per-tensor asymmetric), "
            "exact int32 accumulation, requantisation by fixed-point multipliers (TFLite int8)"
        )
        info["host"] = "operators the Edge TPU compiler would not map run on a cpu backend"
        return info


@hookimpl
def xai_register_backends():
    """The Edge TPU."""
    return [EdgeTPUBackend]
