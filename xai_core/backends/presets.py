"""Published figures of the simulated chips, one table per backend.

Every number is a vendor's published figure unless its comment says otherwise. Clocks are
the boost clocks the peak rates are quoted at.

Sources
-------
- TPU v1: Jouppi et al., "In-Datacenter Performance Analysis of a Tensor Processing Unit",
  ISCA 2017 (256 x 256 int8 MACs, 700 MHz, 92 TOPS, 8 GiB DDR3 at 34 GB/s).
- TPU v2, v3: Jouppi et al., "A Domain-Specific Supercomputer for Training Deep Neural
  Networks", CACM 2020, and the Cloud TPU documentation (two TensorCores per chip;
  v2: one 128 x 128 MXU per core, 700 MHz, 16 GiB HBM; v3: two MXUs per core, 940 MHz,
  32 GiB HBM at 900 GB/s, 123 TFLOPS).
- TPU v4: the Cloud TPU v4 documentation and Jouppi et al., ISCA 2023 (two TensorCores,
  four MXUs each, 1050 MHz, 32 GiB HBM2 at 1200 GB/s, 275 TFLOPS).
- Edge TPU: the Coral USB Accelerator datasheet (4 TOPS int8, 2 TOPS per watt).
- GPUs: NVIDIA's Tesla P100 and V100 whitepapers and the A100 datasheet (SXM parts).
"""

from __future__ import annotations

from typing import Any

__all__ = ["TPU_PRESETS", "TPU_POD_PRESETS", "EDGETPU_PRESETS", "GPU_PRESETS"]

#: The columns of the systolic chips' rows below, in order.
_SYSTOLIC_COLUMNS = (
    "array",
    "mxus_per_core",
    "cores",
    "clock_mhz",
    "numerics",
    "memory_gib",
    "memory_gbps",
    "vector_lanes",
    "peak_tops",
)


def _systolic(**rows: tuple[Any, ...]) -> dict[str, dict[str, Any]]:
    """One preset per row of :data:`_SYSTOLIC_COLUMNS` values."""
    return {name: dict(zip(_SYSTOLIC_COLUMNS, row, strict=True)) for name, row in rows.items()}


#: Systolic chips. ``array``: (rows, columns) of one matrix unit; ``mxus_per_core`` x
#: ``cores`` matrix units work on one GEMM's folds in parallel; ``vector_lanes``: fp32 lanes
#: of the vector unit per core (8 sublanes x 128 lanes on v2-v4).
#: v1's memory is DDR3, the others' HBM; v1's activation pipeline takes one column-wide
#: vector per cycle, hence 256 lanes.
TPU_PRESETS: dict[str, dict[str, Any]] = _systolic(
    v1=((256, 256), 1, 1, 700.0, "int8", 8.0, 34.0, 256, 92.0),
    v2=((128, 128), 1, 2, 700.0, "bf16", 16.0, 700.0, 1024, 46.0),
    v3=((128, 128), 2, 2, 940.0, "bf16", 32.0, 900.0, 1024, 123.0),
    v4=((128, 128), 4, 2, 1050.0, "bf16", 32.0, 1200.0, 1024, 275.0),
)

#: The Edge TPU. Google publishes 4 TOPS and 2 TOPS/W, not the array geometry: a 64 x 64
#: int8 array at 480 MHz (2 * 64 * 64 * 480e6 = 3.9 TOPS) is the geometry assumed here,
#: the one that gives the published peak. The vector width is likewise an assumption.
#: Memory: 8 MiB of on-chip SRAM (0.0078125 GiB), the model streamed over USB 3.0 (5 Gb/s).
EDGETPU_PRESETS: dict[str, dict[str, Any]] = _systolic(
    coral=((64, 64), 1, 1, 480.0, "int8", 0.0078125, 0.625, 64, 4.0),
)
EDGETPU_PRESETS["coral"]["tops_per_watt"] = 2.0

#: GPUs. ``peak_tflops``: dense peak per operand precision (fp16 and tf32 on tensor cores
#: where the chip has them; ``None`` where it has no such unit, and the fp32 rate is used);
#: ``smem_kib_per_sm``: the largest shared-memory carve-out per SM.
GPU_PRESETS: dict[str, dict[str, Any]] = {
    "p100": {
        "sms": 56,
        "cuda_cores": 3584,
        "clock_mhz": 1480.0,
        "peak_tflops": {"fp32": 10.6, "tf32": None, "fp16": 21.2},  # fp16: paired-half CUDA cores
        "tensor_cores": (),
        "memory_gbps": 732.0,
        "memory_gib": 16.0,
        "smem_kib_per_sm": 64,
        "max_threads_per_sm": 2048,
        "max_blocks_per_sm": 32,
        "regs_per_sm": 65536,
    },
    "v100": {
        "sms": 80,
        "cuda_cores": 5120,
        "clock_mhz": 1530.0,
        "peak_tflops": {"fp32": 15.7, "tf32": None, "fp16": 125.0},
        "tensor_cores": ("fp16",),
        "memory_gbps": 900.0,
        "memory_gib": 16.0,
        "smem_kib_per_sm": 96,
        "max_threads_per_sm": 2048,
        "max_blocks_per_sm": 32,
        "regs_per_sm": 65536,
    },
    "a100": {
        "sms": 108,
        "cuda_cores": 6912,
        "clock_mhz": 1410.0,
        "peak_tflops": {"fp32": 19.5, "tf32": 156.0, "fp16": 312.0},
        "tensor_cores": ("tf32", "fp16"),
        "memory_gbps": 1555.0,
        "memory_gib": 40.0,
        "smem_kib_per_sm": 164,
        "max_threads_per_sm": 2048,
        "max_blocks_per_sm": 32,
        "regs_per_sm": 65536,
    },
}


# -- boards and pods -------------------------------------------------------------------
#
# Sources (Cloud TPU documentation, "TPU v2", "TPU v3", "TPU v4" and "System architecture"
# pages; Jouppi et al., CACM 2020; Jouppi et al., ISCA 2023):
# - a board (v2-8, v3-8) is four chips on one host; an accelerator type's number counts
#   TensorCores: v2-8 and v3-8 are 4 chips x 2 cores, v4-8 is 4 chips (v4's two cores per
#   chip act as one device, "megacore").
# - v2 pod: 256 chips (512 cores), 2-D torus, slices v2-32 (4 x 4 chips) to v2-512 (16 x 16).
# - v3 pod: 1024 chips (2048 cores), 2-D torus, slices v3-32 (4 x 4) to v3-2048 (32 x 32);
#   per pod 340 TB/s all-reduce and 6.4 TB/s bisection bandwidth.
# - v4 pod: 4096 chips, 3-D mesh, wired as a 3-D torus on slices whose dimensions are
#   multiples of 4; 1.1 PB/s all-reduce per pod; four chips per host.
# - ICI links: 4 per chip on v2 and v3 (the four neighbours of a 2-D torus), 496 Gbit/s
#   (v2) and 656 Gbit/s (v3) each (Jouppi et al. 2020, Table 3). v3's figure agrees with the
#   documented all-reduce bandwidth: 340 TB/s / 1024 chips / 4 links = 83 GB/s = 664 Gbit/s.
#   v4: 6 links per chip (3-D); the documented 1.1 PB/s / 4096 chips / 6 links gives
#   45 GB/s = 358 Gbit/s per link, the figure used here.
# - Host link: PCIe Gen3 x16 per chip, 15.75 GB/s (8 GT/s x 16 lanes, 128b/130b
#   encoding). Google does not publish the sustained infeed rate; this is the link's peak.
# - Per-hop ICI latency: not published; 1 microsecond per ring step is assumed (set
#   ``ici_latency_us`` to change it).
# Wraparound: full v2 and v3 pods are tori; that every v2 / v3 slice keeps wraparound on
# both dimensions is an assumption (Google documents the pod, not each slice). v4 slices
# are tori on a dimension only when all three are multiples of 4 (the documented rule;
# twisted tori are not modelled).

_V2_V3_SLICES = {  # cores: (chips x, chips y)
    8: (2, 2),
    32: (4, 4),
    64: (4, 8),
    128: (8, 8),
    256: (8, 16),
    512: (16, 16),
    1024: (16, 32),
    2048: (32, 32),
}
_V4_SLICES = {  # TensorCores: (x, y, z) chips
    8: (2, 2, 1),
    16: (2, 2, 2),
    32: (2, 2, 4),
    64: (2, 4, 4),
    128: (4, 4, 4),
    256: (4, 4, 8),
    512: (4, 8, 8),
    1024: (8, 8, 8),
    2048: (8, 8, 16),
    4096: (8, 16, 16),
    8192: (16, 16, 16),  # the full pod, 4096 chips
}
_ICI = {  # chip: (links per chip, Gbit/s per link, largest slice in cores)
    "v2": (4, 496.0, 512),
    "v3": (4, 656.0, 2048),
    "v4": (6, 358.0, 8192),
}


def _pod_preset(chip: str, cores: int, dims: tuple[int, ...]) -> dict[str, Any]:
    links, gbps, _ = _ICI[chip]
    n_chips = 1
    for d in dims:
        n_chips *= d
    megacore = chip == "v4"
    base = dict(TPU_PRESETS[chip])
    if megacore:
        wrap = tuple(all(d % 4 == 0 for d in dims) for _ in dims)
    else:
        wrap = tuple(d > 2 for d in dims)  # a 2-chip ring has no separate wraparound link
    base.update(
        {
            "chip": chip,
            "accelerator_type": f"{chip}-{cores}",
            "chips": n_chips,
            "tensorcores": cores,
            "cores_per_chip": 2,
            # a data-parallel device: one TensorCore (v2, v3) or one chip (v4 megacore)
            "devices": n_chips if megacore else 2 * n_chips,
            "cores": 2 if megacore else 1,  # TensorCores per device
            "chips_per_host": 4,
            "hosts": max(1, n_chips // 4),
            "torus": dims,
            "wraparound": wrap,
            "ici_links_per_chip": links,
            "ici_gbps_per_link": gbps,  # Gbit/s, one direction
            "ici_latency_us": 1.0,  # assumed
            "host_gbps_per_chip": 15.75,  # GB/s, PCIe Gen3 x16
            "peak_tops_per_chip": TPU_PRESETS[chip]["peak_tops"],
        }
    )
    return base


#: Cloud TPU accelerator types: boards (``v2-8``, ``v3-8``, ``v4-8``) and pod slices.
TPU_POD_PRESETS: dict[str, dict[str, Any]] = {
    **{f"v2-{c}": _pod_preset("v2", c, d) for c, d in _V2_V3_SLICES.items() if c <= 512},
    **{f"v3-{c}": _pod_preset("v3", c, d) for c, d in _V2_V3_SLICES.items()},
    **{f"v4-{c}": _pod_preset("v4", c, d) for c, d in _V4_SLICES.items()},
}
