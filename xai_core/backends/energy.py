"""Energy per operation and per access, and the energy of the work a backend counted.

Figures: Horowitz, "Computing's energy problem (and what we can do about it)", ISSCC
2014, for a 45 nm process at 0.9 V, as tabulated by Han et al., "Learning both Weights and
Connections for Efficient Neural Networks", NeurIPS 2015 (Figure 1): 32-bit float add
0.9 pJ, 32-bit float multiply 3.7 pJ, 16-bit float multiply 1.1 pJ, 8-bit integer
multiply 0.2 pJ, 32-bit integer add 0.1 pJ, a 32-bit read of an 8 KiB SRAM 5 pJ, a 32-bit
DRAM read 640 pJ. A bf16 MAC is a 16-bit multiply and a 32-bit float add; an int8 MAC an
8-bit multiply and a 32-bit integer add. SRAM and DRAM costs are per byte (the 32-bit
figures over 4); writes are taken to cost what reads do. Real TPUs are built in 16 nm
(v2, v3) and 7 nm (v4) and spend less: these are order-of-magnitude estimates, useful to
compare layers, dataflows and memory configurations, not to predict a chip's power.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ENERGY_PJ", "energy_of"]

#: Picojoules per event (45 nm; see the module docstring).
ENERGY_PJ: dict[str, float] = {
    "mac_bf16": 1.1 + 0.9,
    "mac_int8": 0.2 + 0.1,
    "vector_op_fp32": 0.9,
    "sram_byte": 5.0 / 4,
    "dram_byte": 640.0 / 4,
}


def energy_of(counters: dict[str, Any], *, int8: bool = False, operand_bytes: int = 2) -> dict:
    """Joules of the counted work: MACs, vector operations, SRAM and DRAM bytes.

    Parameters
    ----------
    counters : dict
        A systolic backend's counters (``macs``, ``elementwise_ops``, ``sram_reads_a``,
        ``sram_reads_b``, ``sram_writes_c``, ``offchip_bytes_read``,
        ``offchip_bytes_written``).
    int8 : bool, default=False
        int8 MACs instead of bf16.
    operand_bytes : int, default=2
        Bytes per SRAM element read (outputs are written as 4-byte sums).

    Returns
    -------
    dict
        ``energy_mac_j``, ``energy_vector_j``, ``energy_sram_j``, ``energy_dram_j`` and their
        sum ``energy_j``.
    """
    pj = ENERGY_PJ
    mac = counters.get("macs", 0) * (pj["mac_int8"] if int8 else pj["mac_bf16"])
    vec = counters.get("elementwise_ops", 0) * pj["vector_op_fp32"]
    sram_bytes = (
        counters.get("sram_reads_a", 0) + counters.get("sram_reads_b", 0)
    ) * operand_bytes + counters.get("sram_writes_c", 0) * 4
    sram = sram_bytes * pj["sram_byte"]
    dram_bytes = counters.get("offchip_bytes_read", 0) + counters.get("offchip_bytes_written", 0)
    dram = dram_bytes * pj["dram_byte"]
    out = {
        "energy_mac_j": mac * 1e-12,
        "energy_vector_j": vec * 1e-12,
        "energy_sram_j": sram * 1e-12,
        "energy_dram_j": dram * 1e-12,
    }
    out["energy_j"] = sum(out.values())
    return out
