"""The Edge TPU backend: an int8 systolic array that runs quantised models only."""

from __future__ import annotations

from typing import Any, ClassVar

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

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info["tops_per_watt"] = self.PRESETS[self.preset].get("tops_per_watt")
        info["numerics"] = (
            "int8 weights (per-channel symmetric) and activations (per-tensor asymmetric), "
            "exact int32 accumulation, requantisation by fixed-point multipliers (TFLite int8)"
        )
        return info


@hookimpl
def xai_register_backends():
    """The Edge TPU."""
    return [EdgeTPUBackend]
