"""The memory-system closed form against SCALE-Sim 3 on the same layers: time and agreement.

Run from the repository root (needs the ``scalesim`` extra)::

    python benchmarks/bench_memory.py [--repeats 5]

For each layer (GEMMs and convolutions, weight and input stationary, with an output SRAM
and bandwidth small enough to stall the array) writes SCALE-Sim's .cfg and topology
files, runs SCALE-Sim 3.0.0 once (it simulates every cycle; ``max`` in its modules is
patched for NumPy 2, the one change it needs), then times the closed form on the same
files' contents (``xai_core.backends.scalesim_io.run_scalesim``, median of
``--repeats``), and prints both total cycles, the difference and the speed-up (goal:
1,000x or more).
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import importlib
import io
import pkgutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from xai_core.backends.scalesim_io import read_config, read_topology, run_scalesim

CFG = """[general]
run_name = run

[architecture_presets]
ArrayHeight: {rows}
ArrayWidth: {cols}
IfmapSramSzkB: 256
FilterSramSzkB: 256
OfmapSramSzkB: {ofmap_kb}
IfmapOffset: 0
FilterOffset: 10000000
OfmapOffset: 20000000
Bandwidth: {bw}
Dataflow: {dataflow}
MemoryBanks: 1
ReadRequestBuffer: 32
WriteRequestBuffer: 32

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: 16
IfmapSRAMBankNum: 1
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: 16
FilterSRAMBankNum: 1
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport: false
SparseRep: ellpack_block
OptimizedMapping: false
BlockSize: 8
RandomNumberGeneratorSeed: 40

[run_presets]
InterfaceBandwidth: USER
UseRamulatorTrace: False
"""

#: (name, topology row, gemm?, array, dataflow, ofmap KiB, ofmap words per cycle)
LAYERS = [
    ("gemm 256x128x192 ws", "l0, 256, 128, 192,", True, (32, 32), "ws", 4, 4),
    ("gemm 300x96x160 is", "l0, 300, 96, 160,", True, (16, 16), "is", 2, 2),
    ("conv 28x28x8->16 3x3 ws", "l0, 30, 30, 3, 3, 8, 16, 1,", False, (16, 16), "ws", 2, 1),
    ("conv 14x14x16->32 3x3 is", "l0, 16, 16, 3, 3, 16, 32, 1,", False, (32, 32), "is", 1, 2),
    ("gemm 128x256x128 ws, no stalls", "l0, 128, 256, 128,", True, (32, 32), "ws", 256, 64),
]
HEADERS = {
    True: "Layer, M, N, K,",
    False: "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
    "Num Filter, Strides,",
}


def _max(*args, **kwargs):
    out = builtins.max(*args, **kwargs)
    return out.reshape(()) if isinstance(out, np.ndarray) and out.size == 1 else out


def run_scalesim_live(folder: Path, gemm: bool) -> float:
    """SCALE-Sim's total cycles for the files in ``folder``."""
    import scalesim
    from scalesim.scale_sim import scalesim as ScaleSim

    for info in pkgutil.walk_packages(scalesim.__path__, "scalesim."):
        importlib.import_module(info.name).max = _max
    (folder / "layout.csv").write_text("Layer name,\n")
    sim = ScaleSim(
        save_disk_space=True,
        verbose=False,
        config=str(folder / "arch.cfg"),
        topology=str(folder / "topo.csv"),
        layout=str(folder / "layout.csv"),
        input_type_gemm=gemm,
    )
    with contextlib.redirect_stdout(io.StringIO()):
        sim.run_scale(top_path=str(folder))
    line = (folder / "run" / "COMPUTE_REPORT.csv").read_text().strip().splitlines()[1]
    return float(line.split(",")[2])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{'layer':<34} {'SCALE-Sim':>10} {'closed':>10} {'diff':>7} {'SS s':>7} {'ours ms':>8} {'speed-up':>9}"
    )
    ratios = []
    for name, row, gemm, (rows, cols), df, okb, bw in LAYERS:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "arch.cfg").write_text(
                CFG.format(rows=rows, cols=cols, dataflow=df, ofmap_kb=okb, bw=bw)
            )
            (folder / "topo.csv").write_text(HEADERS[gemm] + "\n" + row + "\n")
            start = time.perf_counter()
            want = run_scalesim_live(folder, gemm)
            t_ss = time.perf_counter() - start
            config, topo = read_config(folder / "arch.cfg"), read_topology(folder / "topo.csv")
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            got = float(run_scalesim(config, topo)[0]["Total Cycles"].iloc[0])
            times.append(time.perf_counter() - start)
        t_ours = statistics.median(times)
        ratios.append(t_ss / t_ours)
        print(
            f"{name:<34} {want:>10.0f} {got:>10.0f} {got / want - 1:>+7.1%} {t_ss:>7.2f} "
            f"{t_ours * 1e3:>8.2f} {t_ss / t_ours:>8.0f}x"
        )
    print(f"smallest speed-up {min(ratios):.0f}x (goal: 1,000x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
