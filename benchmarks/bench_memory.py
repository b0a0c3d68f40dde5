"""SCALE-Sim 3's memory system replayed, against SCALE-Sim itself on the same layers.

Run from the repository root (needs the ``scalesim`` extra)::

    python benchmarks/bench_memory.py [--repeats 5]

The table is printed at 1 and at 2 threads of numpy's BLAS (``_pinning.THREADS``).
For each layer (GEMMs and convolutions; ws, is and os; SRAMs and DRAM ports small enough
that streamed operands and the ofmap drain stall the array, and one layer without
stalls) writes SCALE-Sim's .cfg and topology files, runs SCALE-Sim 3.0.0 once (``max`` in
its modules is patched for NumPy 2, the one change it needs) and times its simulation
proper (``single_layer_sim.run``: operand, prefetch and demand matrices and the memory
simulation, not the report files), then times the replay on the same layer
(``xai_core.backends.scalesim_replay.replay``, median of ``--repeats``; also
``run_scalesim``, which adds its report tables). Wall-clock and CPU (process) time are
both reported; on a loaded machine the CPU-time ratio is the steadier one. Prints both total cycles, whether every
count (total and stall cycles, cycles incl. prefetch, DRAM reads and writes) is equal,
and the speed-up (goal: 1,000x or more).
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import functools
import importlib
import io
import os
import pkgutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from xai_core.backends.scalesim_io import CONV_COLUMNS, read_config, read_topology, run_scalesim
from xai_core.backends.scalesim_replay import replay

CFG = """[general]
run_name = run

[architecture_presets]
ArrayHeight: {rows}
ArrayWidth: {cols}
IfmapSramSzkB: {kb[0]}
FilterSramSzkB: {kb[1]}
OfmapSramSzkB: {kb[2]}
IfmapOffset: 0
FilterOffset: 10000000
OfmapOffset: 20000000
Bandwidth: {bw[2]}
Dataflow: {dataflow}
MemoryBanks: 1
ReadRequestBuffer: 32
WriteRequestBuffer: 32

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: {bw[0]}
IfmapSRAMBankNum: 1
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: {bw[1]}
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

#: (name, topology row, gemm?, array, dataflow, SRAM KiB, DRAM words per cycle)
LAYERS = [
    ("gemm 256x128x192 ws", "l0, 256, 128, 192,", True, (32, 32), "ws", (16, 16, 4), (8, 8, 4)),
    ("gemm 300x96x160 is", "l0, 300, 96, 160,", True, (16, 16), "is", (8, 8, 2), (4, 4, 2)),
    ("gemm 200x96x144 os", "l0, 200, 96, 144,", True, (16, 16), "os", (8, 8, 2), (4, 4, 2)),
    (
        "conv 28x28x8->16 3x3 os",
        "l0, 30, 30, 3, 3, 8, 16, 1,",
        False,
        (16, 16),
        "os",
        (4, 4, 2),
        (4, 4, 1),
    ),
    (
        "conv 14x14x16->32 3x3 ws",
        "l0, 16, 16, 3, 3, 16, 32, 1,",
        False,
        (32, 32),
        "ws",
        (8, 8, 1),
        (8, 8, 2),
    ),
    (
        "conv 14x14x16->32 3x3 is",
        "l0, 16, 16, 3, 3, 16, 32, 1,",
        False,
        (8, 8),
        "is",
        (4, 4, 1),
        (4, 4, 2),
    ),
    (
        "gemm 128x256x128 ws, no stalls",
        "l0, 128, 256, 128,",
        True,
        (32, 32),
        "ws",
        (256, 256, 256),
        (64, 64, 64),
    ),
]
HEADERS = {
    True: "Layer, M, N, K,",
    False: "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
    "Num Filter, Strides,",
}


def _max(*args, **kwargs):
    out = builtins.max(*args, **kwargs)
    return out.reshape(()) if isinstance(out, np.ndarray) and out.size == 1 else out


def run_scalesim_live(folder: Path, gemm: bool) -> tuple[list[int], tuple[float, float]]:
    """SCALE-Sim's counts for the files in ``folder``, its simulation's wall and CPU seconds."""
    import scalesim
    from scalesim import single_layer_sim
    from scalesim.scale_sim import scalesim as ScaleSim

    for info in pkgutil.walk_packages(scalesim.__path__, "scalesim."):
        importlib.import_module(info.name).max = _max
    spent = []
    run = single_layer_sim.single_layer_sim.run

    def timed(self):
        start, cpu = time.perf_counter(), time.process_time()
        run(self)
        spent.append((time.perf_counter() - start, time.process_time() - cpu))

    (folder / "layout.csv").write_text("Layer name,\n")
    sim = ScaleSim(
        save_disk_space=True,
        verbose=False,
        config=str(folder / "arch.cfg"),
        topology=str(folder / "topo.csv"),
        layout=str(folder / "layout.csv"),
        input_type_gemm=gemm,
    )
    single_layer_sim.single_layer_sim.run = timed
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            sim.run_scale(top_path=str(folder))
    finally:
        single_layer_sim.single_layer_sim.run = run

    def row(name: str) -> list[float]:
        line = (folder / "run" / f"{name}.csv").read_text().strip().splitlines()[1]
        return [float(x) for x in line.split(",")[:-1]]

    comp, detail = row("COMPUTE_REPORT"), row("DETAILED_ACCESS_REPORT")
    counts = [int(v) for v in (comp[2], comp[3], comp[1], detail[12], detail[15], detail[18])]
    return counts, spent[0]


def _median_seconds(fn, repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``fn()``."""
    wall, cpu = [], []
    for _ in range(repeats):
        start, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def main() -> int:
    """The table at 1 and at 2 threads of numpy's BLAS (idle BLAS threads would spin and count
    as CPU); SCALE-Sim and the replay measured alike at each."""
    from _pinning import THREADS, pinned

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for threads in THREADS:
        with pinned(threads):
            _table(args.repeats, threads)
    return 0


def _table(repeats: int, threads: int) -> None:
    print(
        f"{threads} thread(s), load average {os.getloadavg()[0]:.1f} "
        "(SCALE-Sim and the replay run one after the other)"
    )
    print(
        f"{'layer':<32} {'SCALE-Sim':>9} {'replay':>9} {'equal':>6} {'SS s':>6} "
        f"{'replay ms':>9} {'speed-up':>9} {'CPU s/ms':>12} {'CPU x':>7} {'report ms':>9}"
    )
    ratios = []
    for name, row, gemm, (rows, cols), df, kb, bw in LAYERS:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "arch.cfg").write_text(
                CFG.format(rows=rows, cols=cols, dataflow=df, kb=kb, bw=bw)
            )
            (folder / "topo.csv").write_text(HEADERS[gemm] + "\n" + row + "\n")
            want, t_ss = run_scalesim_live(folder, gemm)
            config, topo = read_config(folder / "arch.cfg"), read_topology(folder / "topo.csv")
        conv = tuple(int(v) for v in topo[list(CONV_COLUMNS)].iloc[0])
        mem = config["memory"]

        ours = functools.partial(
            replay,
            conv,
            array=(rows, cols),
            dataflow=df,
            sram_words=mem.words(),
            bandwidth=tuple(int(b) for b in (mem.ifmap_bw, mem.filter_bw, mem.ofmap_bw)),
        )
        r = ours()
        got = [
            r.total_cycles,
            r.stall_cycles,
            r.overall_cycles,
            r.ifmap_dram_reads,
            r.filter_dram_reads,
            r.ofmap_dram_writes,
        ]
        (t_ours, c_ours) = _median_seconds(ours, repeats)
        t_report, _ = _median_seconds(functools.partial(run_scalesim, config, topo), repeats)
        (t_ss, c_ss) = t_ss
        ratios.append((t_ss / t_ours, c_ss / max(c_ours, 1e-6)))
        print(
            f"{name:<32} {want[0]:>9} {got[0]:>9} {str(got == want):>6} {t_ss:>6.2f} "
            f"{t_ours * 1e3:>9.2f} {t_ss / t_ours:>8.0f}x {c_ss:>5.2f}/{c_ours * 1e3:<6.2f} "
            f"{ratios[-1][1]:>6.0f}x {t_report * 1e3:>9.2f}"
        )
    print(
        f"smallest speed-up {min(r[0] for r in ratios):.0f}x wall, "
        f"{min(r[1] for r in ratios):.0f}x CPU time (goal: 1,000x)\n"
    )


if __name__ == "__main__":
    raise SystemExit(main())
