"""Explaining many rows on many cores or machines: chunks, executors, retries, reassembly.

Rows are split into fixed-size chunks; each chunk is explained with the same options and
the same seed, and knows the global index of its rows, from which every random draw is
made (:mod:`xai_core.attribution.seeds`). Defaults that depend on all of ``X`` (a
background summarised from it) are fixed once, before the split
(:meth:`Explainer.prepare`). The chunks' results are put back together in row order. So
the result depends on the seed only: one call, the serial loop over chunks of any size, a
thread pool, a process pool and a Dask cluster give bit-identical values (the BLAS runs
with the same thread count everywhere, :mod:`xai_core.attribution.blas`).

What travels to a worker: see :mod:`xai_core.attribution.transport`. Where chunks run:
:mod:`xai_core.attribution.executors`. A worker rebuilds the model and backend and runs
:func:`xai_core.attribution.run.run_explainer`.
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from xai_core.attribution.blas import blas_threads as limit_blas
from xai_core.attribution.executors import START_METHOD, Pool, Serial, check_parallel, run_all
from xai_core.attribution.explanation import Explanation
from xai_core.attribution.run import ExplainJob, read_only, run_explainer
from xai_core.attribution.transport import backend_spec, model_spec
from xai_core.errors import ChunkError
from xai_core.model.runner import ModelRunner
from xai_core.progress import LONG_WORK_UNITS, job_label, progress_bar
from xai_core.validation import check_positive_int

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "START_METHOD",
    "ChunkError",
    "ChunkTask",
    "check_parallel",
    "chunk_seeds",
    "explain_chunked",
    "run_chunk",
]

#: Rows per chunk when ``executor=`` is given without ``chunk_size=``.
DEFAULT_CHUNK_SIZE = 128


# -- the worker ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkTask:
    """One chunk of rows and everything a worker needs to explain it.

    Attributes
    ----------
    index : int
        Position of the chunk.
    start, stop : int
        The rows ``X[start:stop]`` of the caller's data (their global indices).
    model, backend : ModelSpec, BackendSpec
        How the worker rebuilds them (:mod:`xai_core.attribution.transport`).
    X : ndarray of shape (stop - start, *input_shape)
    target : ndarray of int64 of shape (stop - start,)
    job : ExplainJob
        The method and its options, with what :meth:`Explainer.prepare` fixed from all rows.
    batch_size : int
        Rows per model call.
    """

    index: int
    start: int
    stop: int
    model: Any
    backend: Any
    X: np.ndarray
    target: np.ndarray
    job: ExplainJob
    batch_size: int


def run_chunk(task: ChunkTask) -> dict[str, Any]:
    """Explain one chunk: the worker's entry point (top level, so any pool can import it).

    Returns
    -------
    dict
        ``values``, ``base_values``, ``target``, ``data`` (``None`` when it equals
        the chunk's rows), ``meta``, ``method``,
        ``backend``, ``output_names``, ``feature_names`` and ``counters`` (plain types:
        an :class:`Explanation` holds a read-only mapping, which does not pickle).
    """
    backend = task.backend.build()
    runner = ModelRunner(task.model.build(), backend, batch_size=task.batch_size)
    e = run_explainer(
        runner, task.X, task.target, task.job, np.arange(task.start, task.stop, dtype=np.int64)
    )
    return {
        "values": np.asarray(e.values),
        "base_values": np.asarray(e.base_values),
        "target": np.asarray(e.target),
        # the caller has the rows already: send them back only if the method changed them
        "data": None if e.data is None or np.array_equal(e.data, task.X) else np.asarray(e.data),
        "meta": dict(e.meta),
        "method": e.method,
        "backend": e.backend,
        "output_names": e.output_names,
        "feature_names": e.feature_names,
        "counters": backend.counters,
    }


def chunk_seeds(seed: int | None, n_chunks: int) -> tuple[int, list[int]]:
    """Deprecated: chunks no longer get seeds of their own (rows draw from per-row streams).

    Returns what it used to: the seed (drawn for ``None``) and
    ``SeedSequence([seed, i])``'s first 32-bit word for chunk ``i``.
    """
    import warnings

    from xai_core.attribution.seeds import resolve_seed

    warnings.warn(
        "chunk_seeds is deprecated: every chunk now runs with the caller's seed and draws per "
        "row (xai_core.attribution.seeds.rngs_for_rows).",
        DeprecationWarning,
        stacklevel=2,
    )
    seed = resolve_seed(seed)
    words = [
        int(np.random.SeedSequence([seed, i]).generate_state(1, dtype=np.uint32)[0])
        for i in range(n_chunks)
    ]
    return seed, words


# -- merging ------------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    try:
        return bool(a == b) or (a != a and b != b)  # NaN equals NaN here
    except Exception:  # an object whose comparison fails is not the same
        return False


def _merge(values: list[Any], lengths: list[int]) -> Any:
    """Chunks' meta values as one: per-row arrays joined, equal values kept, others listed."""
    first = values[0]
    if all(isinstance(v, np.ndarray) and v.ndim >= 1 for v in values) and all(
        v.shape[0] == n for v, n in zip(values, lengths)
    ):
        return np.concatenate(values, axis=0)
    if all(isinstance(v, dict) for v in values) and all(v.keys() == first.keys() for v in values):
        return {k: _merge([v[k] for v in values], lengths) for k in first}
    if all(_same(first, v) for v in values[1:]):
        return first
    return list(values)


def _assemble(
    parts: list[dict[str, Any]],
    tasks: list[ChunkTask],
    meta_extra: dict[str, Any],
) -> Explanation:
    lengths = [t.stop - t.start for t in tasks]
    keys = list(parts[0]["meta"])
    for p in parts[1:]:
        keys += [k for k in p["meta"] if k not in keys]
    meta: dict[str, Any] = {}
    for key in keys:
        if key in ("seconds", "options", "seed"):
            continue
        present = [p["meta"].get(key) for p in parts]
        meta[key] = _merge(present, lengths)
    meta.update(meta_extra)
    data = [t.X if p["data"] is None else p["data"] for p, t in zip(parts, tasks)]
    return Explanation(
        values=np.concatenate([p["values"] for p in parts], axis=0),
        base_values=np.concatenate([p["base_values"] for p in parts], axis=0),
        target=np.concatenate([p["target"] for p in parts], axis=0),
        data=np.concatenate(data, axis=0),
        feature_names=parts[0]["feature_names"],
        output_names=parts[0]["output_names"],
        method=parts[0]["method"],
        backend=parts[0]["backend"],
        meta=meta,
    )


# -- the entry point ----------------------------------------------------------------------


def explain_chunked(
    runner: ModelRunner,
    X: np.ndarray,
    target: np.ndarray,
    job: ExplainJob,
    *,
    executor: Any = None,
    chunk_size: int | None = None,
) -> Explanation:
    """Explain ``X`` chunk by chunk, serially or on ``executor``; called by :func:`xai_core.explain`.

    Parameters
    ----------
    runner : ModelRunner
        The model on its backend; workers get a rebuilt copy of each.
    X : ndarray of shape (n_samples, *input_shape)
        Validated rows.
    target : ndarray of int64 of shape (n_samples,)
        Output index per row.
    job : ExplainJob
        The method and its resolved options; every chunk gets them, with what
        :meth:`Explainer.prepare` fixed from all rows; ``progress`` shows one bar over the
        rows, advanced as chunks complete (with ``None``: from
        :data:`~xai_core.progress.LONG_WORK_UNITS` chunks on).
    executor : concurrent.futures.Executor, distributed.Client, "processes" or None
        Where chunks run; ``None`` runs them one after the other here.
    chunk_size : int, optional
        Rows per chunk; :data:`DEFAULT_CHUNK_SIZE` by default.

    Returns
    -------
    Explanation
        In row order; ``meta`` joins the chunks' per-row arrays, keeps values every chunk
        agrees on and lists the others per chunk, and adds ``seed``, ``chunk_size``,
        ``chunks`` (row ranges), ``chunk_seconds``, ``chunk_counters``, ``executor`` and
        ``seconds``.

    Raises
    ------
    ChunkError
        When a chunk fails twice; it names the rows.
    CapabilityError
        When the model cannot travel to the executor's workers (an unpicklable function).
    """
    cls, options = job.method, job.options
    chunk_size = check_positive_int(
        DEFAULT_CHUNK_SIZE if chunk_size is None else chunk_size, "chunk_size"
    )
    starts = list(range(0, len(X), chunk_size))
    valid = cls.option_names()
    progress = options.get("progress")
    chunk_options = dict(options)
    if "progress" in valid:
        chunk_options["progress"] = False

    start_time = time.perf_counter()
    # Nothing is serialised by the serial loop and thread pools; everything else pickles.
    shared = executor is None or isinstance(executor, cf.ThreadPoolExecutor)
    model = model_spec(runner.model, shared)
    backend = backend_spec(runner.backend)
    # The limit is set here, in the caller's thread, for the whole run: OpenBLAS does not
    # apply a limit set from a pool's worker thread to the products of that thread.
    bar = progress_bar(
        len(X),
        progress=progress,
        desc=job_label(cls.name, len(X)),
        unit="row",
        long=len(starts) >= LONG_WORK_UNITS,
    )
    with limit_blas(job.blas_threads), bar:
        chunk_options.update(cls(**options).prepare(runner, read_only(X)))
        chunk_job = replace(job, options=chunk_options)
        tasks = [
            ChunkTask(
                index=i,
                start=s,
                stop=min(s + chunk_size, len(X)),
                model=model,
                backend=backend,
                X=X[s : s + chunk_size],
                target=target[s : s + chunk_size],
                job=chunk_job,
                batch_size=runner.batch_size,
            )
            for i, s in enumerate(starts)
        ]
        pool = Serial() if executor is None else Pool(executor)
        try:
            parts = run_all(pool, run_chunk, tasks, bar)
        finally:
            pool.close()
    extra: dict[str, Any] = {
        "seconds": time.perf_counter() - start_time,
        "options": cls(**options).get_options(),
        "chunk_size": chunk_size,
        "chunks": [(t.start, t.stop) for t in tasks],
        "chunk_seconds": [p["meta"].get("seconds") for p in parts],
        "chunk_counters": [p["counters"] for p in parts],
        "executor": pool.label,
    }
    image_shape = getattr(runner.model, "image_shape", None)
    if image_shape is not None and not any("image_shape" in p["meta"] for p in parts):
        extra["image_shape"] = tuple(image_shape)  # as explain() records it
    if "seed" in options:
        extra["seed"] = options["seed"]
    return _assemble(parts, tasks, extra)
