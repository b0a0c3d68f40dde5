"""Data-parallel training across pod sizes: compute, communication and scaling efficiency."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from xai_core.backends.presets import TPU_POD_PRESETS
from xai_core.errors import UnknownNameError, ValidationError
from xai_core.validation import check_positive_int

__all__ = ["one_device", "training_scaling"]


def one_device(preset: str):
    """The single data-parallel device of a pod preset, as a ``tpu`` backend."""
    from xai_core.backends.tpu import TPUBackend

    if preset not in TPU_POD_PRESETS:
        raise UnknownNameError("tpu_pod preset", preset, list(TPU_POD_PRESETS))
    spec = TPU_POD_PRESETS[preset]
    return TPUBackend(preset=spec["chip"], mxus=spec["mxus_per_core"] * spec["cores"])


def _step(net: Any, X: np.ndarray, y: np.ndarray, backend: Any, problem: str) -> dict:
    trial = copy.deepcopy(net)
    backend.reset_counters()
    trial.fit(X, y, batch_size=len(X), epochs=1, backend=backend, problem=problem, progress=False)
    return backend.counters


def training_scaling(
    net: Any,
    batch_size: int,
    presets: Sequence[str] = ("v3-8", "v3-32", "v3-128", "v3-512", "v3-2048"),
    *,
    per_device: bool = False,
    problem: str = "classification",
    seed: int = 0,
):
    """One training step of ``net`` on each pod: compute, communication, scaling efficiency.

    Strong scaling (default): a global batch of ``batch_size`` rows, the same on every
    pod, sharded over its devices; each step runs for real on the pod backend
    (:class:`~xai_core.backends.pod.TPUPodBackend`). Weak scaling (``per_device=True``):
    ``batch_size`` rows on every device; one device's step is run for real on that many
    rows and the pod adds its infeed and gradient all-reduce (closed forms), which is what
    the pod backend counts for a global batch of ``batch_size * devices`` rows. Random rows
    of the network's input shape are used; ``net`` is not changed.

    Parameters
    ----------
    net : xai.nn.Sequential
        A built network.
    batch_size : int
        Global batch (strong scaling) or rows per device (weak scaling).
    presets : sequence of str
        Pod presets, smallest first.
    per_device : bool, default=False
    problem : {"classification", "regression"}, default="classification"
    seed : int, default=0

    Returns
    -------
    pandas.DataFrame
        One row per preset: ``preset``, ``devices``, ``global_batch``, ``rows_per_device``
        (the largest shard), ``compute_seconds`` (slowest device), ``allreduce_seconds``,
        ``infeed_seconds``, ``step_seconds``, ``allreduce_bytes``,
        ``one_device_seconds`` (one device on the global batch: strong; on its rows:
        weak), ``speedup`` and ``efficiency``. Strong: speed-up over one device, divided
        by the devices. Weak: ``one_device_seconds / step_seconds``, the share of the
        step spent computing what one device alone would.
    """
    import pandas as pd

    batch_size = check_positive_int(batch_size, "batch_size")
    if not getattr(net, "built", False) or net.input_shape is None:
        raise ValidationError("net must be a built xai.nn network (call build or fit first).")
    presets = list(presets)
    if not presets:
        raise ValidationError("presets must name at least one pod preset.")
    from xai_core.backends.pod import TPUPodBackend

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(batch_size, *net.input_shape)).astype(np.float32)
    n_out = int(net.n_outputs)
    if problem == "classification":
        y = np.arange(batch_size) % max(n_out, 2)
    else:
        y = rng.normal(size=(batch_size, n_out)).astype(np.float32)
    singles: dict[str, dict] = {}  # one device's step, per chip
    rows = []
    for preset in presets:
        pod = TPUPodBackend(preset=preset)  # raises on an unknown preset
        chip = pod.spec["chip"]
        if chip not in singles:
            singles[chip] = _step(net, X, y, one_device(preset), problem)
        single = singles[chip]
        if per_device:
            n_rows = batch_size * pod.devices
            pod.begin_batch(np.empty((n_rows, *net.input_shape), dtype=np.float32))
            pod.all_reduce([np.empty(_n_params(net), dtype=np.float32)])
            c = pod.counters
            compute = single["est_seconds"]
            step = compute + c["communication_seconds"]
            c = {**c, "compute_seconds": compute, "est_seconds": step}
        else:
            n_rows = batch_size
            c = _step(net, X, y, pod, problem)
        rows.append(
            {
                "preset": preset,
                "devices": pod.devices,
                "global_batch": n_rows,
                "rows_per_device": int(pod.shard_rows(n_rows).max()),
                "compute_seconds": c["compute_seconds"],
                "allreduce_seconds": c["allreduce_seconds"],
                "infeed_seconds": c["infeed_seconds"],
                "step_seconds": c["est_seconds"],
                "allreduce_bytes": c["allreduce_bytes"],
                "one_device_seconds": single["est_seconds"],
            }
        )
    table = pd.DataFrame(rows)
    table["speedup"] = table["one_device_seconds"] / table["step_seconds"]
    if per_device:
        table["speedup"] *= table["devices"]
    table["efficiency"] = table["speedup"] / table["devices"]
    return table


def _n_params(net: Any) -> int:
    return int(sum(np.asarray(w).size for w in net.get_weights()))
