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
    from xai_core.model.runner import get_backend

    if preset not in TPU_POD_PRESETS:
        raise UnknownNameError("tpu_pod preset", preset, list(TPU_POD_PRESETS))
    spec = TPU_POD_PRESETS[preset]
    return get_backend("tpu", preset=spec["chip"], mxus=spec["mxus_per_core"] * spec["cores"])


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
    problem: str = "classification",
    seed: int = 0,
):
    """One training step of ``net`` with a global batch of ``batch_size`` rows on each pod.

    Strong scaling: the batch is the same on every pod and is sharded over its devices.
    Each step runs for real on the pod backend (:class:`~xai_core.backends.pod.TPUPodBackend`)
    with random rows of the network's input shape; ``net`` is not changed.

    Parameters
    ----------
    net : xai.nn.Sequential
        A built network.
    batch_size : int
        Global batch.
    presets : sequence of str
        Pod presets, smallest first.
    problem : {"classification", "regression"}, default="classification"
    seed : int, default=0

    Returns
    -------
    pandas.DataFrame
        One row per preset: ``preset``, ``devices``, ``rows_per_device`` (the largest
        shard), ``compute_seconds`` (slowest device), ``allreduce_seconds``,
        ``infeed_seconds``, ``step_seconds``, ``allreduce_bytes``, ``speedup`` over one
        device and ``efficiency`` (speed-up over devices).
    """
    import pandas as pd

    batch_size = check_positive_int(batch_size, "batch_size")
    if not getattr(net, "built", False) or net.input_shape is None:
        raise ValidationError("net must be a built xai.nn network (call build or fit first).")
    presets = list(presets)
    if not presets:
        raise ValidationError("presets must name at least one pod preset.")
    from xai_core.model.runner import get_backend

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(batch_size, *net.input_shape)).astype(np.float32)
    n_out = int(net.n_outputs)
    if problem == "classification":
        y = np.arange(batch_size) % max(n_out, 2)
    else:
        y = rng.normal(size=(batch_size, n_out)).astype(np.float32)
    rows = []
    for preset in presets:
        pod = get_backend("tpu_pod", preset=preset)  # raises on an unknown preset
        single = _step(net, X, y, one_device(preset), problem)["est_seconds"]
        c = _step(net, X, y, pod, problem)
        rows.append(
            {
                "preset": preset,
                "devices": pod.devices,
                "rows_per_device": int(pod.shard_rows(batch_size).max()),
                "compute_seconds": c["compute_seconds"],
                "allreduce_seconds": c["allreduce_seconds"],
                "infeed_seconds": c["infeed_seconds"],
                "step_seconds": c["est_seconds"],
                "allreduce_bytes": c["allreduce_bytes"],
                "one_device_seconds": single,
            }
        )
    table = pd.DataFrame(rows)
    table["speedup"] = table["one_device_seconds"] / table["step_seconds"]
    table["efficiency"] = table["speedup"] / table["devices"]
    return table
