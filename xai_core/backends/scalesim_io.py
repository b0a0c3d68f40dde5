"""SCALE-Sim's own inputs and reports: ``.cfg`` architectures, topology CSVs, native networks.

- :func:`read_config` reads a SCALE-Sim architecture file (``[architecture_presets]``,
  ``[layout]``, ``[run_presets]``) into the settings of the closed form.
- :func:`read_topology` reads a topology CSV, GEMM (``Layer, M, N, K,``) or convolution
  (``Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num
  Filter, Strides,``), into GEMM sizes the way SCALE-Sim lowers them: ``M`` ofmap pixels,
  ``N`` filters, ``K`` the window ``R * S * C``.
- :func:`run_scalesim` costs every layer and returns SCALE-Sim's COMPUTE_REPORT and
  BANDWIDTH_REPORT columns (plus DRAM traffic and energy per layer).
- :func:`export_topology` writes a native network (``xai.nn.Sequential``) as a topology
  CSV, one row per matrix product its forward pass runs.
"""

from __future__ import annotations

import configparser
import io
import os
from typing import Any

import numpy as np

from xai_core.backends.energy import ENERGY_PJ
from xai_core.backends.memory import REPLAY_LIMIT, MemorySystem, memory_cost
from xai_core.backends.scalesim_replay import replay
from xai_core.backends.systolic import gemm_cost
from xai_core.errors import ValidationError

__all__ = ["export_topology", "layer_report", "read_config", "read_topology", "run_scalesim"]

COMPUTE_COLUMNS = (
    "LayerID",
    "Total Cycles (incl. prefetch)",
    "Total Cycles",
    "Stall Cycles",
    "Overall Util %",
    "Mapping Efficiency %",
    "Compute Util %",
)
CONV_COLUMNS = (
    "ifmap_h",
    "ifmap_w",
    "filter_h",
    "filter_w",
    "channels",
    "filters",
    "stride",
)
BANDWIDTH_COLUMNS = (
    "LayerID",
    "Avg IFMAP SRAM BW",
    "Avg FILTER SRAM BW",
    "Avg OFMAP SRAM BW",
    "Avg IFMAP DRAM BW",
    "Avg FILTER DRAM BW",
    "Avg OFMAP DRAM BW",
)


def read_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A SCALE-Sim ``.cfg`` file as settings.

    Returns
    -------
    dict
        ``array`` (rows, columns), ``dataflow``, ``memory`` (a
        :class:`~xai_core.backends.memory.MemorySystem` with SCALE-Sim's 1-byte words),
        ``bandwidth_mode`` (``"USER"`` or ``"CALC"``) and ``run_name``.
    """
    if not os.path.isfile(path):
        raise ValidationError(
            f"config must be a SCALE-Sim .cfg file; {os.fspath(path)!r} is not a file."
        )
    cp = configparser.ConfigParser()
    cp.read(path)
    try:
        arch = cp["architecture_presets"]
        rows, cols = int(arch["ArrayHeight"]), int(arch["ArrayWidth"])
        kib = [float(arch[k]) for k in ("IfmapSramSzkB", "FilterSramSzkB", "OfmapSramSzkB")]
        dataflow = arch["Dataflow"].strip().lower()
        mode = cp.get("run_presets", "InterfaceBandwidth", fallback="CALC").strip().upper()
        if mode == "USER":
            ofmap_bw = float(arch["Bandwidth"].split(",")[0])
            ifmap_bw = float(cp.get("layout", "IfmapSRAMBankBandwidth", fallback=ofmap_bw))
            filter_bw = float(cp.get("layout", "FilterSRAMBankBandwidth", fallback=ofmap_bw))
        else:  # SCALE-Sim's CALC mode: 10 words per cycle in, a column's width out
            ifmap_bw = filter_bw = 10.0
            ofmap_bw = float(cols)
    except (KeyError, ValueError, configparser.Error) as exc:
        raise ValidationError(f"{os.fspath(path)!r} is not a SCALE-Sim config: {exc}") from None
    if dataflow not in ("ws", "os", "is"):
        raise ValidationError(
            f"Dataflow must be ws, os or is in {os.fspath(path)!r}; got {dataflow!r}."
        )
    return {
        "run_name": cp.get("general", "run_name", fallback=""),
        "array": (rows, cols),
        "dataflow": dataflow,
        "bandwidth_mode": mode,
        "memory": MemorySystem(*kib, ifmap_bw, filter_bw, ofmap_bw, word_bytes=1),
    }


def _cells(line: str) -> list[str]:
    cells = [c.strip() for c in line.strip().split(",")]
    return cells[:-1] if cells and cells[-1] == "" else cells


def read_topology(path: str | os.PathLike[str], gemm: bool | None = None):
    """A SCALE-Sim topology CSV as GEMM sizes.

    Parameters
    ----------
    path : path-like
    gemm : bool, optional
        GEMM (``M, N, K``) or convolution rows; by default guessed from the header.

    Returns
    -------
    pandas.DataFrame
        ``name``, ``M``, ``N``, ``K`` per layer (convolution layers: ofmap pixels, filters,
        window size, as SCALE-Sim computes them), then SCALE-Sim's convolution fields
        (:data:`CONV_COLUMNS`; a GEMM row is the convolution ``M x K`` by ``1 x K``, one
        channel, ``N`` filters, stride 1, as SCALE-Sim reads it).
    """
    import pandas as pd

    if not os.path.isfile(path):
        raise ValidationError(f"topology must be a CSV file; {os.fspath(path)!r} is not a file.")
    with open(path, encoding="utf-8") as f:
        lines = [line for line in f if line.strip()]
    if not lines:
        raise ValidationError(f"topology {os.fspath(path)!r} is empty.")
    header = [h.lower() for h in _cells(lines[0])]
    if gemm is None:
        gemm = header[1:4] == ["m", "n", "k"]
    rows = []
    for i, line in enumerate(lines[1:], start=2):
        cells = _cells(line)
        try:
            if gemm:
                name, m, n, k = cells[0], int(cells[1]), int(cells[2]), int(cells[3])
                conv = (m, k, 1, k, 1, n, 1)
            else:
                name = cells[0]
                h, w, fh, fw, ch, nf, s = (int(c) for c in cells[1:8])
                oh, ow = -(-(h - fh + s) // s), -(-(w - fw + s) // s)
                m, n, k = oh * ow, nf, fh * fw * ch
                conv = (h, w, fh, fw, ch, nf, s)
        except (IndexError, ValueError):
            raise ValidationError(
                f"line {i} of {os.fspath(path)!r} is not a {'GEMM' if gemm else 'convolution'} "
                f"layer: {line.strip()!r}."
            ) from None
        if min(m, n, k) < 1:
            raise ValidationError(
                f"line {i} of {os.fspath(path)!r} gives an empty GEMM {m}x{n}x{k}."
            )
        if min(conv) < 1 or conv[2] > conv[0] or conv[3] > conv[1]:
            raise ValidationError(
                f"line {i} of {os.fspath(path)!r}: the filter must fit the ifmap and every "
                f"field be >= 1; got {line.strip()!r}."
            )
        rows.append({"name": name, "M": m, "N": n, "K": k, **dict(zip(CONV_COLUMNS, conv))})
    return pd.DataFrame(rows, columns=["name", "M", "N", "K", *CONV_COLUMNS])


def run_scalesim(config: Any, topology: Any):
    """SCALE-Sim's compute and bandwidth reports, from its memory system replayed.

    In USER bandwidth mode every layer is replayed on SCALE-Sim's own addresses
    (:mod:`xai_core.backends.scalesim_replay`: its total and stall cycles, cycles incl.
    prefetch and DRAM traffic, exactly); CALC mode, fractional bandwidths and layers beyond
    :data:`~xai_core.backends.memory.REPLAY_LIMIT` use the closed form of
    :func:`~xai_core.backends.memory.memory_cost`.

    Parameters
    ----------
    config : path-like or dict
        A ``.cfg`` file or the result of :func:`read_config`.
    topology : path-like or DataFrame
        A topology CSV or the result of :func:`read_topology`.

    Returns
    -------
    compute : pandas.DataFrame
        SCALE-Sim's COMPUTE_REPORT columns; "Total Cycles" is its count (the last cycle's
        index plus stalls); "incl. prefetch" runs from the first DRAM read to the last
        DRAM write.
    bandwidth : pandas.DataFrame
        BANDWIDTH_REPORT columns (words per cycle; DRAM averages over the total cycles),
        then ``ifmap_dram_reads``, ``filter_dram_reads``, ``ofmap_dram_writes``, ``bound``
        and ``energy_j`` (:mod:`xai_core.backends.energy`; int8 MACs for SCALE-Sim's 1-byte
        words, bf16 MACs for 2-byte words).
    """
    import pandas as pd

    cfg = config if isinstance(config, dict) else read_config(config)
    topo = topology if isinstance(topology, pd.DataFrame) else read_topology(topology)
    m, n, k = (topo[c].to_numpy(dtype=np.int64) for c in ("M", "N", "K"))
    rows, cols = cfg["array"]
    df = cfg["dataflow"]
    user = cfg.get("bandwidth_mode", "USER") == "USER"  # CALC mode: the closed form
    conv_rows = user and set(CONV_COLUMNS) <= set(topo.columns)
    mem = memory_cost(
        m,
        k,
        n,
        array=(rows, cols),
        dataflow=df,
        memory=cfg["memory"],
        method="closed" if conv_rows or not user else "auto",
    )
    total = mem.total_cycles - 1  # SCALE-Sim counts the last cycle's index
    stall, incl = np.array(mem.stall_cycles), total + mem.prefetch_cycles
    dram = [
        np.array(v) for v in (mem.ifmap_dram_reads, mem.filter_dram_reads, mem.ofmap_dram_writes)
    ]
    bound = np.array(mem.bound)
    if conv_rows:
        # every layer replayed on SCALE-Sim's own addresses (a convolution's repeated pixels)
        for i, conv in enumerate(topo[list(CONV_COLUMNS)].to_numpy(dtype=np.int64).tolist()):
            r = _replay(conv, (rows, cols), df, cfg["memory"])
            if r is not None:
                total[i], stall[i], incl[i] = r.total_cycles, r.stall_cycles, r.overall_cycles
                dram[0][i], dram[1][i], dram[2][i] = (
                    r.ifmap_dram_reads,
                    r.filter_dram_reads,
                    r.ofmap_dram_writes,
                )
                ports = list(r.port_stalls)
                bound[i] = (
                    ("ifmap", "filter", "ofmap")[ports.index(max(ports))]
                    if max(ports)
                    else "compute"
                )
    costs = [
        gemm_cost(int(a), int(b), int(c), array=(rows, cols), dataflow=df)
        for a, b, c in zip(m, k, n)
    ]
    reports = [c.scalesim_report() for c in costs]
    macs = m * n * k
    sram = np.array(
        [[r["ifmap_sram_reads"], r["filter_sram_reads"], r["ofmap_sram_writes"]] for r in reports]
    )
    compute = pd.DataFrame(
        {
            "LayerID": np.arange(len(topo)),
            "Total Cycles (incl. prefetch)": incl,
            "Total Cycles": total,
            "Stall Cycles": stall,
            "Overall Util %": 100.0 * macs / (total * rows * cols),
            "Mapping Efficiency %": [r["mapping_efficiency"] for r in reports],
            "Compute Util %": [r["compute_util"] for r in reports],
        },
        columns=list(COMPUTE_COLUMNS),
    )
    pj = ENERGY_PJ
    word = cfg["memory"].word_bytes
    energy = (
        macs * (pj["mac_int8"] if word == 1 else pj["mac_bf16"])
        + (sram[:, :2].sum(axis=1) * word + sram[:, 2] * 4) * pj["sram_byte"]
        + ((dram[0] + dram[1]) * word + dram[2] * 4) * pj["dram_byte"]
    ) * 1e-12
    bandwidth = pd.DataFrame(
        {
            "LayerID": np.arange(len(topo)),
            "Avg IFMAP SRAM BW": sram[:, 0] / total,
            "Avg FILTER SRAM BW": sram[:, 1] / total,
            "Avg OFMAP SRAM BW": sram[:, 2] / total,
            "Avg IFMAP DRAM BW": dram[0] / total,
            "Avg FILTER DRAM BW": dram[1] / total,
            "Avg OFMAP DRAM BW": dram[2] / total,
            "ifmap_dram_reads": dram[0],
            "filter_dram_reads": dram[1],
            "ofmap_dram_writes": dram[2],
            "bound": bound,
            "energy_j": energy,
        }
    )
    return compute, bandwidth


def _replay(conv: list[int], array: tuple[int, int], dataflow: str, memory: MemorySystem):
    """SCALE-Sim's counts for one convolution layer, or None where the replay does not apply
    (fractional bandwidths, or operands beyond the replay's size limit)."""
    bws = (memory.ifmap_bw, memory.filter_bw, memory.ofmap_bw)
    h, w, fh, fw, ch, nf, s = conv
    oh, ow = -(-(h - fh + s) // s), -(-(w - fw + s) // s)
    size = oh * ow * fh * fw * ch + fh * fw * ch * nf
    whole = all(float(b).is_integer() for b in bws)
    if not whole or size > REPLAY_LIMIT or min(memory.words()) < 2:
        return None
    return replay(
        tuple(conv),
        array=array,
        dataflow=dataflow,
        sram_words=memory.words(),
        bandwidth=tuple(int(b) for b in bws),
    )


def export_topology(
    net: Any, path: str | os.PathLike[str] | None = None, *, batch: int = 1, gemm: bool = True
) -> str:
    """A native network as a SCALE-Sim topology CSV: one row per Dense or Conv2D layer.

    Parameters
    ----------
    net : xai.nn.Sequential
        A built network.
    path : path-like, optional
        Where to write; the CSV text is returned either way.
    batch : int, default=1
        Rows of the forward pass (GEMM format only: M is ``batch * output pixels``).
    gemm : bool, default=True
        GEMM rows (``M, N, K``: exactly the products the forward pass runs) or convolution
        rows (one image; a Dense layer as a 1 x 1 convolution over ``in`` channels,
        padding folded into the ifmap size).

    Returns
    -------
    str
        The CSV text, with SCALE-Sim's trailing commas.
    """
    if not getattr(net, "built", False):
        raise ValidationError("net must be a built xai.nn network (call build or fit first).")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValidationError(f"batch must be an integer >= 1; got {batch!r}.")
    if gemm:
        lines = ["Layer, M, N, K,"]
    else:
        lines = [
            "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
            "Num Filter, Strides,"
        ]
    for i, layer in enumerate(net.layers):
        name = f"{type(layer).__name__.lower()}{i}"
        if _is_kind(layer, "conv2d"):
            lines.append(_conv_row(layer, name, batch, gemm))
        elif _is_kind(layer, "dense"):
            shape = tuple(layer.input_shape)
            rows, n_in = batch * int(np.prod(shape[:-1], dtype=np.int64)), shape[-1]
            lines.append(
                f"{name}, {rows}, {layer.units}, {n_in},"
                if gemm
                else f"{name}, 1, 1, 1, 1, {n_in}, {layer.units}, 1,"
            )
    text = "\n".join(lines) + "\n"
    if path is not None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return text


def layer_report(net: Any, backend: Any, *, batch: int = 1):
    """Cycles, stalls, DRAM traffic and energy of each matrix product of ``net``'s forward pass.

    Parameters
    ----------
    net : xai.nn.Sequential
        A built network.
    backend : TPUBackend
        A systolic backend (``tpu``, ``tpu_pod``: one device); its array, dataflow and
        memory system are used (without one, SRAMs large enough for every operand).
    batch : int, default=1
        Rows of the forward pass.

    Returns
    -------
    pandas.DataFrame
        ``layer``, ``M``, ``N``, ``K``, then the compute and bandwidth columns of
        :func:`run_scalesim` for each layer.
    """
    import pandas as pd

    if not hasattr(backend, "array") or not hasattr(backend, "dataflow"):
        raise ValidationError(
            f"backend must be a systolic backend (tpu, tpu_pod); got {backend!r}."
        )
    topo = pd.read_csv(io.StringIO(export_topology(net, batch=batch)), skipinitialspace=True)
    topo = topo.iloc[:, :4]
    topo.columns = ["name", "M", "N", "K"]
    mem = backend.memory
    if mem is None:
        big = float(2 * (topo[["M", "N", "K"]].prod(axis=1).max() + 1) * 4 / 1024)
        word = 1 if backend.int8 else 2
        mem = MemorySystem(big, big, big, 1e9, 1e9, 1e9, word_bytes=word)
    cfg = {"array": backend.array, "dataflow": backend.dataflow, "memory": mem}
    compute, bandwidth = run_scalesim(cfg, topo)
    out = pd.concat(
        [topo.rename(columns={"name": "layer"}), compute.drop(columns="LayerID")], axis=1
    )
    return pd.concat([out, bandwidth.drop(columns="LayerID")], axis=1)


def _is_kind(layer: Any, kind: str) -> bool:
    """Whether ``layer`` is the native layer ``kind`` or a subclass (``"conv2d"``: a Conv2D).

    Read off the ``kind`` each native layer class declares, along the class's MRO: the same
    answer as ``isinstance(layer, Conv2D)``, without importing :mod:`xai_core.nn` (backends
    sit below the networks that run on them).
    """
    return any(vars(cls).get("kind") == kind for cls in type(layer).__mro__)


def _conv_row(layer: Any, name: str, batch: int, gemm: bool) -> str:
    """One Conv2D as a topology row: its im2col GEMM, or SCALE-Sim's convolution fields."""
    groups = int(getattr(layer, "groups", 1))
    dilation = tuple(getattr(layer, "dilation", (1, 1)))
    if groups != 1 or dilation != (1, 1):
        raise ValidationError(
            f"layer {name} ({layer!r}) is a grouped or dilated convolution: not one GEMM, and "
            "SCALE-Sim's topology has no field for it."
        )
    weight = np.asarray(layer.params["weight"])
    filters, window = weight.shape[0], int(np.prod(weight.shape[1:]))
    pixels = int(np.prod(layer.output_shape)) // filters
    if gemm:
        return f"{name}, {batch * pixels}, {filters}, {window},"
    kh, kw = layer.kernel_size
    strides = tuple(getattr(layer, "strides", (layer.stride, layer.stride)))
    if strides[0] != strides[1]:
        raise ValidationError(f"layer {name} has strides {strides}: SCALE-Sim takes one stride.")
    pads = getattr(layer, "pads", None) or (layer.padding,) * 4
    c = window // (kh * kw)
    shape = tuple(layer.input_shape)
    h, w = shape[:2] if getattr(layer, "layout", "NCHW") == "NHWC" else shape[1:3]
    return (
        f"{name}, {h + pads[0] + pads[1]}, {w + pads[2] + pads[3]}, {kh}, {kw}, {c}, "
        f"{filters}, {strides[0]},"
    )
