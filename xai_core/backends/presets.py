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

__all__ = ["TPU_PRESETS", "EDGETPU_PRESETS", "GPU_PRESETS"]

#: Systolic chips. ``array``: (rows, columns) of one matrix unit; ``mxus_per_core`` x
#: ``cores`` matrix units work on one GEMM's folds in parallel; ``vector_lanes``: fp32 lanes
#: of the vector unit per core (8 sublanes x 128 lanes on v2-v4).
TPU_PRESETS: dict[str, dict[str, Any]] = {
    "v1": {
        "array": (256, 256),
        "mxus_per_core": 1,
        "cores": 1,
        "clock_mhz": 700.0,
        "numerics": "int8",
        "memory_gib": 8.0,  # DDR3
        "memory_gbps": 34.0,
        "vector_lanes": 256,  # the activation pipeline takes one column-wide vector per cycle
        "peak_tops": 92.0,
    },
    "v2": {
        "array": (128, 128),
        "mxus_per_core": 1,
        "cores": 2,
        "clock_mhz": 700.0,
        "numerics": "bf16",
        "memory_gib": 16.0,  # HBM
        "memory_gbps": 700.0,
        "vector_lanes": 1024,
        "peak_tops": 46.0,
    },
    "v3": {
        "array": (128, 128),
        "mxus_per_core": 2,
        "cores": 2,
        "clock_mhz": 940.0,
        "numerics": "bf16",
        "memory_gib": 32.0,
        "memory_gbps": 900.0,
        "vector_lanes": 1024,
        "peak_tops": 123.0,
    },
    "v4": {
        "array": (128, 128),
        "mxus_per_core": 4,
        "cores": 2,
        "clock_mhz": 1050.0,
        "numerics": "bf16",
        "memory_gib": 32.0,
        "memory_gbps": 1200.0,
        "vector_lanes": 1024,
        "peak_tops": 275.0,
    },
}

#: The Edge TPU. Google publishes 4 TOPS and 2 TOPS/W, not the array geometry: a 64 x 64
#: int8 array at 480 MHz (2 * 64 * 64 * 480e6 = 3.9 TOPS) is the geometry assumed here,
#: the one that gives the published peak. The vector width is likewise an assumption.
EDGETPU_PRESETS: dict[str, dict[str, Any]] = {
    "coral": {
        "array": (64, 64),
        "mxus_per_core": 1,
        "cores": 1,
        "clock_mhz": 480.0,
        "numerics": "int8",
        "memory_gib": 0.0078125,  # 8 MiB on-chip SRAM; the model is streamed over USB / PCIe
        "memory_gbps": 0.625,  # USB 3.0 (5 Gb/s)
        "vector_lanes": 64,
        "peak_tops": 4.0,
        "tops_per_watt": 2.0,
    },
}

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
