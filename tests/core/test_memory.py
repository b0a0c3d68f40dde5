"""The memory system: SRAM capacities and DRAM bandwidth give SCALE-Sim 3's stalls, run live."""

from __future__ import annotations

import builtins
import contextlib
import importlib
import io
import pkgutil
from pathlib import Path

import numpy as np
import pytest

import xai_core as xai
from xai_core.backends.memory import MemorySystem, memory_cost
from xai_core.backends.scalesim_io import export_topology, read_config, read_topology, run_scalesim
from xai_core.backends.systolic import gemm_cost

# -- running SCALE-Sim 3.0.0 (the PyPI package) on files written to a folder -------------

CFG = """[general]
run_name = run

[architecture_presets]
ArrayHeight: {rows}
ArrayWidth: {cols}
IfmapSramSzkB: {ifmap_kb}
FilterSramSzkB: {filter_kb}
OfmapSramSzkB: {ofmap_kb}
IfmapOffset: 0
FilterOffset: 10000000
OfmapOffset: 20000000
Bandwidth: {ofmap_bw}
Dataflow: {dataflow}
MemoryBanks: 1
ReadRequestBuffer: 32
WriteRequestBuffer: 32

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: {ifmap_bw}
IfmapSRAMBankNum: 1
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: {filter_bw}
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


def _max(*args, **kwargs):
    """builtins.max, returning a 0-d array for a one-element array result.

    SCALE-Sim 3.0.0 calls ``int(max(column))`` on (n, 1) arrays, which NumPy 2 refuses for
    the (1,) row that ``max`` returns; this is the one change needed to run it.
    """
    out = builtins.max(*args, **kwargs)
    return out.reshape(()) if isinstance(out, np.ndarray) and out.size == 1 else out


def write_inputs(folder: Path, layers, *, gemm=True, **arch) -> tuple[Path, Path]:
    """A .cfg and a topology CSV in SCALE-Sim's formats; returns their paths."""
    cfg = folder / "arch.cfg"
    cfg.write_text(CFG.format(**arch))
    topo = folder / "topo.csv"
    if gemm:
        rows = ["Layer, M, N, K,"] + [f"l{i}, {m}, {n}, {k}," for i, (m, n, k) in enumerate(layers)]
    else:
        rows = [
            "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
            "Num Filter, Strides,"
        ] + [f"l{i}, " + ", ".join(map(str, layer)) + "," for i, layer in enumerate(layers)]
    topo.write_text("\n".join(rows) + "\n")
    return cfg, topo


def run(folder: Path, cfg: Path, topo: Path, *, gemm: bool, monkeypatch) -> dict[str, list]:
    """SCALE-Sim's COMPUTE_REPORT, BANDWIDTH_REPORT and DETAILED_ACCESS_REPORT rows."""
    import scalesim
    from scalesim.scale_sim import scalesim as ScaleSim

    for info in pkgutil.walk_packages(scalesim.__path__, "scalesim."):
        monkeypatch.setattr(importlib.import_module(info.name), "max", _max, raising=False)
    layout = folder / "layout.csv"
    layout.write_text("Layer name,\n")
    sim = ScaleSim(
        save_disk_space=True,
        verbose=False,
        config=str(cfg),
        topology=str(topo),
        layout=str(layout),
        input_type_gemm=gemm,
    )
    with contextlib.redirect_stdout(io.StringIO()):
        sim.run_scale(top_path=str(folder))
    out = {}
    for name in ("COMPUTE_REPORT", "BANDWIDTH_REPORT", "DETAILED_ACCESS_REPORT"):
        lines = (folder / "run" / f"{name}.csv").read_text().strip().splitlines()[1:]
        out[name] = [[float(x) for x in line.split(",")[:-1]] for line in lines]
    return out


def _scalesim(tmp_path, layers, monkeypatch, *, gemm=True, **arch):
    cfg, topo = write_inputs(tmp_path, layers, gemm=gemm, **arch)
    return cfg, topo, run(tmp_path, cfg, topo, gemm=gemm, monkeypatch=monkeypatch)


def _grid(seed, n_layers):
    """Seeded GEMM layers and an architecture where the ofmap port stalls the array.

    Weight and input stationary: the array writes its outputs as a steady stream. (Output
    stationary writes each fold's outputs in one burst at its end, and SCALE-Sim then
    drains in bursts too; see docs/backends.md.)"""
    rng = np.random.default_rng(seed)
    layers = [tuple(int(v) for v in rng.integers(16, 120, 3)) for _ in range(n_layers)]
    arch = {
        "rows": int(rng.choice([8, 16, 32])),
        "cols": int(rng.choice([8, 16, 32])),
        "dataflow": ["ws", "is"][seed % 2],
        "ifmap_kb": 64,
        "filter_kb": 64,
        "ofmap_kb": int(rng.choice([1, 2])),
        "ifmap_bw": 10,
        "filter_bw": 10,
        "ofmap_bw": int(rng.choice([1, 2, 4])),
    }
    return layers, arch


@pytest.mark.parametrize("seed", [0, 1])
def test_total_cycles_with_stalls_match_scalesim(tmp_path, monkeypatch, seed):
    """SCALE-Sim's total cycles (compute plus stalls), USER bandwidth mode, from its own
    .cfg and topology files: within 10% per layer, 5% on average (ofmap-port stalls)."""
    layers, arch = _grid(seed, 3)
    cfg, topo, ss = _scalesim(tmp_path, layers, monkeypatch, **arch)
    ours, bw = run_scalesim(cfg, topo)
    want = np.array([r[2] for r in ss["COMPUTE_REPORT"]])
    stalls = np.array([r[3] for r in ss["COMPUTE_REPORT"]])
    got = ours["Total Cycles"].to_numpy()
    err = np.abs(got / want - 1)
    assert stalls.sum() > 0  # the grid stalls
    assert err.max() <= 0.10 and err.mean() <= 0.05, (got, want)
    # where SCALE-Sim does not stall, neither does the closed form: equal cycles
    assert np.array_equal(got[stalls == 0], want[stalls == 0])
    # the SRAM bandwidth columns are the access counts over those cycles
    ss_bw = np.array(ss["BANDWIDTH_REPORT"])[:, 1:4]
    assert np.allclose(bw.iloc[:, 1:4].to_numpy(), ss_bw, rtol=0.10)


def test_no_stalls_means_exactly_scalesims_cycles(tmp_path, monkeypatch):
    """With SRAMs that hold the operands and enough bandwidth: the same cycles, 0 stalls,
    and utilisation, mapping and compute utilisation columns as SCALE-Sim's."""
    layers = [(40, 24, 60), (17, 33, 9), (64, 9, 32)]
    arch = dict(rows=8, cols=4, dataflow="ws", ifmap_kb=64, filter_kb=64, ofmap_kb=64)
    arch.update(ifmap_bw=10, filter_bw=10, ofmap_bw=10)
    cfg, topo, ss = _scalesim(tmp_path, layers, monkeypatch, **arch)
    ours, _ = run_scalesim(cfg, topo)
    want = np.array(ss["COMPUTE_REPORT"])
    assert (want[:, 3] == 0).all()
    assert ours["Total Cycles"].tolist() == want[:, 2].tolist()
    assert ours["Stall Cycles"].tolist() == [0, 0, 0]
    assert np.allclose(ours.iloc[:, 4:7].to_numpy(), want[:, 4:7], rtol=0, atol=1e-6)


def test_convolution_topology_lowers_like_scalesim(tmp_path, monkeypatch):
    """A convolution topology CSV gives SCALE-Sim's GEMM (ofmap pixels x filters x window)."""
    layers = [(12, 12, 3, 3, 4, 8, 1), (15, 11, 5, 3, 2, 6, 2)]
    arch = dict(rows=8, cols=8, dataflow="os", ifmap_kb=64, filter_kb=64, ofmap_kb=64)
    arch.update(ifmap_bw=10, filter_bw=10, ofmap_bw=10)
    cfg, topo, ss = _scalesim(tmp_path, layers, monkeypatch, gemm=False, **arch)
    t = read_topology(topo)
    assert t[["M", "N", "K"]].values.tolist() == [[100, 8, 36], [30, 6, 30]]
    ours, _ = run_scalesim(cfg, topo)
    assert ours["Total Cycles"].tolist() == [r[2] for r in ss["COMPUTE_REPORT"]]


@pytest.mark.slow
def test_larger_grid_against_scalesim(tmp_path, monkeypatch):
    """Twelve architectures of three layers each: within 15% per layer, 5% on average."""
    errs = []
    for seed in range(12):
        folder = tmp_path / str(seed)
        folder.mkdir()
        layers, arch = _grid(100 + seed, 3)
        cfg, topo, ss = _scalesim(folder, layers, monkeypatch, **arch)
        ours, _ = run_scalesim(read_config(cfg), read_topology(topo))
        want = np.array([r[2] for r in ss["COMPUTE_REPORT"]])
        errs.extend(np.abs(ours["Total Cycles"].to_numpy() / want - 1))
    assert max(errs) <= 0.15 and np.mean(errs) <= 0.05


def test_memory_model_is_the_compute_cycles_when_everything_fits():
    """Operands that fit in the active halves and no ofmap overflow: no stalls at all."""
    mem = MemorySystem(64, 64, 64, 1, 1, 1)
    mc = memory_cost(30, 40, 50, array=(8, 8), dataflow="ws", memory=mem)
    assert int(mc.stall_cycles) == 0
    assert int(mc.total_cycles) == gemm_cost(30, 40, 50, array=(8, 8)).cycles
    assert int(mc.ifmap_dram_reads) == 30 * 40 and int(mc.filter_dram_reads) == 40 * 50


def test_memory_model_stalls_grow_as_bandwidth_falls():
    """Halving every port's bandwidth never shortens a GEMM; at low bandwidth it is DRAM-bound."""
    m, k, n = np.meshgrid([64, 200], [64, 300], [32, 128], indexing="ij")
    prev = None
    for bw in (16.0, 8.0, 4.0, 2.0, 1.0):
        mem = MemorySystem(1, 1, 1, bw, bw, bw)
        mc = memory_cost(m, k, n, array=(16, 16), dataflow="os", memory=mem)
        if prev is not None:
            assert (mc.total_cycles >= prev).all()
        prev = mc.total_cycles
    assert (mc.bound != "compute").all() and (mc.stall_cycles > 0).all()


def test_backend_counts_stalls_dram_traffic_and_energy():
    """The tpu backend with a memory system adds the stalls to its cycles and reports energy."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(200, 300)), rng.normal(size=(300, 100))
    fast = xai.get_backend("tpu", array=(16, 16), sram_kib=(512, 512, 512), dram_bw=64)
    slow = xai.get_backend("tpu", array=(16, 16), sram_kib=(2, 2, 2), dram_bw=1)
    assert np.array_equal(fast.matmul(a, b), slow.matmul(a, b))
    f, s = fast.counters, slow.counters
    assert f["stall_cycles"] == 0 and f["cycles"] == gemm_cost(200, 300, 100, array=(16, 16)).cycles
    mc = memory_cost(200, 300, 100, array=(16, 16), dataflow="ws", memory=slow.memory)
    assert s["stall_cycles"] == int(mc.stall_cycles) > 0
    assert s["cycles"] == f["cycles"] + s["stall_cycles"]
    assert s["dram_reads_a"] == int(mc.ifmap_dram_reads) > 200 * 300
    assert s["energy_dram_j"] > f["energy_dram_j"] > 0
    assert s["energy_j"] == pytest.approx(
        s["energy_mac_j"] + s["energy_vector_j"] + s["energy_sram_j"] + s["energy_dram_j"]
    )
    assert f["energy_mac_j"] == pytest.approx(200 * 300 * 100 * 2.0e-12)


def test_export_topology_lists_the_forward_pass_products(tmp_path):
    """A CNN exported as GEMM rows: the MACs the tpu backend counts in its forward pass."""
    net = xai.nn.cnn(channels=(4, 8), hidden=16)
    net.build((784,))
    path = tmp_path / "cnn.csv"
    text = export_topology(net, path, batch=3)
    topo = read_topology(path)
    assert text.splitlines()[0] == "Layer, M, N, K,"
    backend = xai.get_backend("tpu")
    xai.ModelRunner(net, backend).predict(np.zeros((3, 784), dtype=np.float32))
    assert (topo.M * topo.N * topo.K).sum() == backend.counters["macs"]
    assert len(topo) == backend.counters["matmuls"]
    conv = (
        read_topology(tmp_path / "c.csv")
        if export_topology(net, tmp_path / "c.csv", gemm=False)
        else None
    )
    assert (conv.M * conv.N * conv.K).sum() * 3 == backend.counters["macs"]


def test_bad_memory_settings_raise():
    """Missing or malformed memory settings name the argument."""
    with pytest.raises(xai.errors.ValidationError, match="sram_kib"):
        xai.get_backend("tpu", sram_kib=(1, 2))
    with pytest.raises(xai.errors.ValidationError, match="ifmap_bw"):
        MemorySystem(1, 1, 1, 0, 1, 1)
    with pytest.raises(xai.errors.ValidationError, match="sram_kib"):
        xai.get_backend("tpu", dram_bw=4)


def test_layer_report_sums_to_the_backend_counters():
    """Per-layer cycles and energy of a forward pass add up to what the backend counts."""
    from xai_core.backends.scalesim_io import layer_report

    net = xai.nn.mlp(30, [40, 20], 5, seed=0)
    backend = xai.get_backend("tpu", array=(8, 8), sram_kib=(1, 1, 1), dram_bw=1)
    report = layer_report(net, backend, batch=64)
    xai.ModelRunner(net, backend).predict(np.zeros((64, 30), dtype=np.float32))
    c = backend.counters
    assert len(report) == 3 and report["layer"].tolist() == ["dense0", "dense2", "dense4"]
    assert (report["Total Cycles"] + 1).sum() == c["matmul_cycles"]
    assert report["Stall Cycles"].sum() == c["stall_cycles"] > 0
    macs_j = (report.M * report.N * report.K).sum() * 2.0e-12
    assert c["energy_mac_j"] == pytest.approx(macs_j)
    dram = c["energy_dram_j"] + c["energy_sram_j"] + c["energy_mac_j"]
    assert report["energy_j"].sum() == pytest.approx(dram)
