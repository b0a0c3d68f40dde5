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
    """Seeded layers (GEMM for odd seeds, convolution for even ones) and an architecture
    whose small SRAMs and DRAM ports stall the array: streamed ifmap and filter operands,
    ofmap drains; dataflow ws, is, os in turn."""
    rng = np.random.default_rng(seed)
    gemm = bool(seed % 2)
    layers = []
    for _ in range(n_layers):
        if gemm:
            layers.append(tuple(int(v) for v in rng.integers(16, 100, 3)))
        else:
            f, s = int(rng.choice([1, 2, 3])), int(rng.choice([1, 1, 2]))
            h, w = (int(v) for v in rng.integers(f + 3, 16, 2))
            layers.append((h, w, f, f, int(rng.integers(1, 9)), int(rng.integers(4, 40)), s))
    arch = {
        "rows": int(rng.choice([4, 8, 16])),
        "cols": int(rng.choice([4, 8, 16])),
        "dataflow": ["ws", "is", "os"][seed % 3],
        "ifmap_kb": int(rng.choice([1, 2, 4])),
        "filter_kb": int(rng.choice([1, 2, 4])),
        "ofmap_kb": int(rng.choice([1, 2])),
        "ifmap_bw": int(rng.choice([1, 2, 4, 8])),
        "filter_bw": int(rng.choice([1, 2, 4, 8])),
        "ofmap_bw": int(rng.choice([1, 2, 4])),
    }
    return layers, gemm, arch


def _agree(folder, seed, n_layers, monkeypatch):
    """SCALE-Sim and the replay on one seeded grid point: (ours, SCALE-Sim's) reports."""
    layers, gemm, arch = _grid(seed, n_layers)
    cfg, topo, ss = _scalesim(folder, layers, monkeypatch, gemm=gemm, **arch)
    compute, bandwidth = run_scalesim(read_config(cfg), read_topology(topo))
    return compute, bandwidth, ss


def _assert_exact(compute, bandwidth, ss):
    """Total cycles, stalls, cycles incl. prefetch and DRAM traffic equal SCALE-Sim's."""
    want = np.array(ss["COMPUTE_REPORT"])
    got = compute[["Total Cycles", "Stall Cycles", "Total Cycles (incl. prefetch)"]]
    assert got.to_numpy().tolist() == want[:, [2, 3, 1]].tolist()
    detail = np.array(ss["DETAILED_ACCESS_REPORT"])
    traffic = bandwidth[["ifmap_dram_reads", "filter_dram_reads", "ofmap_dram_writes"]]
    assert traffic.to_numpy().tolist() == detail[:, [12, 15, 18]].tolist()
    # the SRAM bandwidth columns: SCALE-Sim's access counts over the same cycles
    ss_bw = np.array(ss["BANDWIDTH_REPORT"])[:, 1:4]
    assert np.allclose(bandwidth.iloc[:, 1:4].to_numpy(), ss_bw, rtol=1e-9)


@pytest.mark.parametrize("seed", [1, 3, 4, 11, 18, 68])  # ws, is, os x GEMM, conv
def test_cycles_and_dram_traffic_with_stalls_equal_scalesims(tmp_path, monkeypatch, seed):
    """SCALE-Sim's USER-bandwidth-mode counts, from its own .cfg and topology files, on
    layers with streamed operands that stall the array: equal, layer by layer."""
    compute, bandwidth, ss = _agree(tmp_path, seed, 2, monkeypatch)
    assert (np.array(ss["COMPUTE_REPORT"])[:, 3] > 0).all()
    assert (bandwidth["bound"] != "compute").all()
    _assert_exact(compute, bandwidth, ss)


def test_memory_cost_replays_scalesim_and_the_closed_form_differs(tmp_path, monkeypatch):
    """memory_cost on a GEMM gives SCALE-Sim's cycles plus one (its last cycle's index);
    the closed form, one stream per pass, undercounts a streamed operand's re-reads."""
    arch = dict(rows=8, cols=8, dataflow="os", ifmap_kb=1, filter_kb=1, ofmap_kb=1)
    arch.update(ifmap_bw=4, filter_bw=4, ofmap_bw=2)
    _, _, ss = _scalesim(tmp_path, [(64, 33, 50)], monkeypatch, **arch)
    mem = MemorySystem(1, 1, 1, 4, 4, 2)
    mc = memory_cost(64, 50, 33, array=(8, 8), dataflow="os", memory=mem)
    closed = memory_cost(64, 50, 33, array=(8, 8), dataflow="os", memory=mem, method="closed")
    want = ss["COMPUTE_REPORT"][0][2]
    assert int(mc.total_cycles) - 1 == want
    assert int(mc.ifmap_dram_reads) == ss["DETAILED_ACCESS_REPORT"][0][12]
    assert int(closed.total_cycles) < 0.8 * want
    assert int(mc.stall_cycles) == int(mc.total_cycles) - int(mc.compute_cycles) > 0
    with pytest.raises(xai.errors.ValidationError, match="whole words"):
        memory_cost(
            64,
            50,
            33,
            array=(8, 8),
            dataflow="os",
            memory=MemorySystem(1, 1, 1, 1.5, 4, 2),
            method="replay",
        )


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
    """Twenty-four seeded architectures of three layers each: every count equal."""
    for seed in range(100, 124):
        folder = tmp_path / str(seed)
        folder.mkdir()
        _assert_exact(*_agree(folder, seed, 3, monkeypatch))


def test_memory_model_is_the_compute_cycles_when_everything_fits():
    """Operands that fit in the active halves and no ofmap overflow: no stalls at all."""
    mem = MemorySystem(64, 64, 64, 1, 1, 1)
    mc = memory_cost(30, 40, 50, array=(8, 8), dataflow="ws", memory=mem)
    assert int(mc.stall_cycles) == 0
    assert int(mc.total_cycles) == gemm_cost(30, 40, 50, array=(8, 8)).cycles
    # SCALE-Sim loads each operand's prefetch order once, padding of partial folds included
    # (ws: A as ceil(k/8) folds of 30 x 8, B as ceil(n/8) folds of 40 x 8)
    assert int(mc.ifmap_dram_reads) == 5 * 30 * 8 and int(mc.filter_dram_reads) == 7 * 40 * 8
    closed = memory_cost(30, 40, 50, array=(8, 8), dataflow="ws", memory=mem, method="closed")
    assert int(closed.total_cycles) == int(mc.total_cycles)
    assert int(closed.ifmap_dram_reads) == 30 * 40 and int(closed.filter_dram_reads) == 40 * 50


def test_auto_falls_back_to_the_closed_form_where_the_replay_does_not_apply():
    """Fractional words per cycle or operands beyond REPLAY_LIMIT: the closed form's values."""
    from xai_core.backends.memory import REPLAY_LIMIT

    frac = MemorySystem(1, 1, 1, 2.5, 2, 1)
    for mem, (m, k, n) in ((frac, (64, 50, 33)), (MemorySystem(1, 1, 1, 2, 2, 1), (5000, 500, 8))):
        auto = memory_cost(m, k, n, array=(8, 8), dataflow="ws", memory=mem)
        closed = memory_cost(m, k, n, array=(8, 8), dataflow="ws", memory=mem, method="closed")
        assert int(auto.total_cycles) == int(closed.total_cycles)
        assert int(auto.ifmap_dram_reads) == int(closed.ifmap_dram_reads)
    assert 5000 * 500 + 500 * 8 > REPLAY_LIMIT
    # arrays of sizes: the replay element by element, the shape kept
    mem = MemorySystem(1, 1, 1, 2, 2, 1)
    grid = memory_cost([[64], [40]], 50, [33, 20], array=(8, 8), dataflow="is", memory=mem)
    assert grid.total_cycles.shape == (2, 2) and grid.bound.shape == (2, 2)
    one = memory_cost(40, 50, 20, array=(8, 8), dataflow="is", memory=mem)
    assert grid.total_cycles[1, 1] == one.total_cycles and grid.bound[1, 1] == one.bound


def test_memory_model_stalls_grow_as_bandwidth_falls():
    """Halving every port's bandwidth never shortens a GEMM (replayed: whole words per
    cycle); at low bandwidth it is DRAM-bound."""
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
    from xai_core.backends.scalesim_replay import replay

    good = dict(array=(8, 8), dataflow="ws", sram_words=(1024, 1024, 1024), bandwidth=(4, 4, 2))
    for bad, match in (
        ({"sram_words": (1024, 1, 1024)}, "sram_words"),
        ({"bandwidth": (4, 0, 2)}, "bandwidth"),
        ({"dataflow": "rs"}, "dataflow"),
        ({"array": (8,)}, "array"),
    ):
        with pytest.raises(xai.errors.ValidationError, match=match):
            replay((64, 50, 1, 50, 1, 33, 1), **{**good, **bad})
    with pytest.raises(xai.errors.ValidationError, match="conv"):
        replay((4, 4, 5, 5, 1, 2, 1), **good)
    with pytest.raises(xai.errors.ValidationError, match="method"):
        memory_cost(
            8, 8, 8, array=(8, 8), dataflow="ws", memory=MemorySystem(1, 1, 1, 1, 1, 1), method="x"
        )


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


@pytest.mark.parametrize("seed", [0, 1])
def test_sets_per_address_and_demand_runs_follow_their_definition(seed):
    """Each address's sets are the positions it holds in the prefetch order // set size,
    and a tile's demand runs are its demands with runs of the same one set merged."""
    from xai_core.backends.scalesim_kernels import set_table, tile_runs

    rng = np.random.default_rng(seed)
    tiles = rng.integers(-1, 40, size=(3, 6, 5)).astype(np.int32)  # repeats and padding
    tiles[0, 0, 0] = 41  # an address held once
    pre = tiles.reshape(-1)[rng.permutation(tiles.size)]
    eps, depth = 4, tiles.size
    kept = pre[pre != -1]
    sets_of = {int(x): sorted(set((np.flatnonzero(kept == x) // eps).tolist())) for x in kept}
    lo = int(kept.min())
    span = int(kept.max()) - lo + 1
    for mat, diagonal, order in (
        (pre.reshape(1, 6, 15), False, pre),
        # stacked (2 * 3, 15) read by anti-diagonals, bottom row first
        (
            pre.reshape(2, 3, 15),
            True,
            [pre.reshape(6, 15)[d - c, c] for d in range(20) for c in range(15) if 0 <= d - c < 6],
        ),
    ):
        kept = np.array([x for x in order if x != -1])
        want = {int(x): sorted(set((np.flatnonzero(kept == x) // eps).tolist())) for x in kept}
        cnt, table = set_table(mat, diagonal, eps, depth, lo, span)
        for x, sets in want.items():
            r = x - lo
            assert table[r * depth : r * depth + cnt[r]].tolist() == sets
        assert cnt.sum() == sum(len(v) for v in want.values())
    cnt, table = set_table(pre.reshape(1, 6, 15), False, eps, depth, lo, span)
    keys, rows, starts = tile_runs(tiles, False, 0, lo, cnt, table, depth)
    for u in range(3):
        # rows upside down: demand row 0 is the tile's last row
        demands = [(int(x), 5 - r) for r in range(5, -1, -1) for x in tiles[u, r] if x != -1]
        key = [sets_of[x][0] if len(sets_of[x]) == 1 else -1 - (x - lo) for x, _ in demands]
        runs = [
            (k, row)
            for i, (k, (_, row)) in enumerate(zip(key, demands))
            if i == 0 or k != key[i - 1]
        ]
        got = list(
            zip(keys[starts[u] : starts[u + 1]].tolist(), rows[starts[u] : starts[u + 1]].tolist())
        )
        assert got == runs


@pytest.mark.parametrize("last_cols", [5, 2])
def test_set_ranks_in_closed_form_equal_the_anti_diagonal_walk(last_cols):
    """An operand given by its im2col parts (address row part + column part), blocks full
    but the last: each element's own set from its anti-diagonal's start equals its rank in
    the anti-diagonal order // set size, and every address keeps its sets."""
    from xai_core.backends.scalesim_kernels import set_table, set_table_parts

    rng = np.random.default_rng(last_cols)
    row = rng.integers(0, 15, 4).astype(np.int32)
    col = rng.integers(0, 15, (3, 5)).astype(np.int32)
    col[-1, last_cols:] = -1
    mat = (row[None, :, None] + col[:, None, :]).astype(np.int32)
    mat[-1, :, last_cols:] = -1
    eps, depth = 3, mat.size
    stacked = mat.reshape(12, 5)
    order = [(i, c) for d in range(16) for c in range(5) if 0 <= (i := d - c) < 12]
    order = [(i, c) for i, c in order if stacked[i, c] != -1]
    cnt, table, own = set_table_parts(row, col, last_cols, eps, depth, 0, 30)
    ref_cnt, ref_table = set_table(mat, True, eps, depth, 0, 30)
    for rank, (i, c) in enumerate(order):
        assert own.reshape(12, 5)[i, c] == rank // eps
    for r in range(30):
        got = set(table[r * depth : r * depth + cnt[r]].tolist())
        assert got == set(ref_table[r * depth : r * depth + ref_cnt[r]].tolist())
    assert cnt.sum() == len(order)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_skewed_walk_by_own_sets_equals_the_walk_over_every_demand(seed):
    """The walk that skips the demands whose own set is in the window prefetches at the
    same rows, as often, as the walk that tests every demand on all its sets."""
    from xai_core.backends.scalesim_kernels import (
        set_table,
        set_table_parts,
        tile_runs,
        walk,
        walk_skew,
    )

    rng = np.random.default_rng(seed)
    blocks, rows, width, last_cols = 4, 9, 6, 4
    row = rng.integers(0, 30, rows).astype(np.int32)  # addresses repeat
    col = rng.integers(0, 30, (blocks, width)).astype(np.int32)
    col[-1, last_cols:] = -1
    mat = (row[None, :, None] + col[:, None, :]).astype(np.int32)
    mat[-1, :, last_cols:] = -1
    q = int((mat >= 0).sum())
    eps, depth = 3, mat.size
    n, a, p = q // eps + 1, 4, 3
    fold_tile = rng.integers(0, blocks, 12).astype(np.int64)  # tiles repeated, out of order
    per_fold = rows + width + 5
    cnt, table, own = set_table_parts(row, col, last_cols, eps, depth, 0, 60)
    args = (row, col, own, last_cols, 2, fold_tile, per_fold, 0, cnt, table, depth, n, a, p)
    got = walk_skew(*args)
    cnt, table = set_table(mat, True, eps, depth, 0, 60)
    keys, rows_, starts = tile_runs(mat, True, 2, 0, cnt, table, depth)
    want = walk(keys, rows_, starts, fold_tile, per_fold, cnt, table, depth, n, a, p)
    assert len(want[0]) > 5
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
