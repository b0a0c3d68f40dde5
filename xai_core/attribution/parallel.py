"""Explaining many rows on many cores or machines: chunks, executors, retries, reassembly.

Rows are split into fixed-size chunks. Each chunk is explained with the same options and,
for methods with a ``seed`` option, its own seed derived from ``(seed, chunk index)``; the
chunks' results are put back together in row order. The result depends on ``chunk_size``
and the seed, never on the executor: the serial loop, a thread pool, a process pool and a
Dask cluster give bit-identical values.

What travels to a worker: a native network as its saved form (the ``.npz`` bytes of
:func:`xai_core.nn.io.save_model`: weights plus JSON, never pickle), the backend as its
registry name and constructor settings (:meth:`Backend.config`), a black-box model by
pickle when it can be pickled. A worker rebuilds them and calls :func:`xai_core.explain`.
"""

from __future__ import annotations

import concurrent.futures as cf
import inspect
import multiprocessing
import os
import pickle
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.attribution.explanation import Explanation
from xai_core.backends.base import Backend
from xai_core.errors import CapabilityError, ChunkError, ValidationError
from xai_core.model.base import Model
from xai_core.model.runner import ModelRunner, get_backend
from xai_core.validation import check_positive_int

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "ChunkError",
    "ChunkTask",
    "check_parallel",
    "chunk_seeds",
    "explain_chunked",
    "run_chunk",
]

#: Rows per chunk when ``executor=`` is given without ``chunk_size=``. A constant, so that
#: results do not depend on the executor or the number of workers.
DEFAULT_CHUNK_SIZE = 128

#: Start method of the ``executor="processes"`` pool: a fresh interpreter per worker, safe
#: when the caller has threads running (fork is not).
START_METHOD = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


# -- what travels -------------------------------------------------------------------------


@dataclass(frozen=True)
class _NativeBytes:
    """A native network as the bytes of its saved ``.npz`` file."""

    data: bytes

    def build(self) -> Model:
        from xai_core.nn.io import load_model

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "model.npz"
            path.write_bytes(self.data)
            return load_model(path)


@dataclass(frozen=True)
class _Shared:
    """An object used as it is (serial runs and thread pools: nothing is serialised)."""

    obj: Any

    def build(self) -> Any:
        return self.obj


@dataclass(frozen=True)
class _BackendByName:
    """A backend as its registry name and constructor settings."""

    name: str
    settings: dict[str, Any]

    def build(self) -> Backend:
        return get_backend(self.name, **self.settings)


def _native_bytes(net: Any) -> _NativeBytes:
    from xai_core.nn.io import save_model

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.npz"
        save_model(net, path)
        return _NativeBytes(path.read_bytes())


def _picklable(obj: Any, what: str) -> _Shared:
    """``obj`` itself, once it is known to pickle: the executor pickles it with the task."""
    try:
        pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # pickle raises many types: PicklingError, AttributeError, TypeError
        raise CapabilityError(
            f"{what} cannot be sent to worker processes: it cannot be pickled "
            f"({type(exc).__name__}: {exc}). A lambda, a closure or a function defined in a "
            "notebook cell cannot travel; define it at module level, or use threads: "
            "executor=concurrent.futures.ThreadPoolExecutor()."
        ) from exc
    return _Shared(obj)


def _model_spec(model: Model, shared: bool) -> Any:
    from xai_core.nn.network import Network

    if isinstance(model, Network):
        # Threads share the network (its passes keep no state on it); processes rebuild it
        # from its saved bytes: nothing is unpickled from a model.
        return _Shared(model) if shared else _native_bytes(model)
    if shared:
        return _Shared(model)
    if model.is_quantized:
        raise CapabilityError(
            f"{model!r} is an int8 model, which has no saved form to send to worker processes; "
            "use threads (executor=concurrent.futures.ThreadPoolExecutor()), or run the float "
            "network on the workers and quantise there."
        )
    return _picklable(model, f"model {model!r}")


def _backend_spec(backend: Backend) -> Any:
    from xai_core.plugin.manager import get_registry

    config = backend.config()
    registered = get_registry().backends.get(config["name"])
    if registered is type(backend):
        return _BackendByName(config["name"], config["settings"])
    # An unregistered backend class: a copy of the instance itself.
    return _picklable(backend, f"backend {backend!r}")


# -- the worker ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkTask:
    """One chunk of rows and everything a worker needs to explain it.

    Attributes
    ----------
    index : int
        Position of the chunk.
    start, stop : int
        The rows ``X[start:stop]`` of the caller's data.
    """

    index: int
    start: int
    stop: int
    model: Any
    backend: Any
    X: np.ndarray
    target: np.ndarray
    method: str
    options: dict[str, Any]
    feature_names: tuple[str, ...] | None
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
    from xai_core.attribution.explainer import explain

    backend = task.backend.build()
    e = explain(
        task.model.build(),
        task.X,
        method=task.method,
        backend=backend,
        target=task.target,
        feature_names=task.feature_names,
        batch_size=task.batch_size,
        **task.options,
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


# -- seeds, merging -----------------------------------------------------------------------


def chunk_seeds(seed: int | None, n_chunks: int) -> tuple[int, list[int]]:
    """The seed of each chunk, derived from ``seed`` and the chunk's index.

    Parameters
    ----------
    seed : int or None
        The caller's seed; ``None`` draws one (returned, so the run can be repeated).
    n_chunks : int

    Returns
    -------
    seed : int
        The seed used.
    seeds : list of int
        ``numpy.random.SeedSequence([seed, i])``'s first 32-bit word for chunk ``i``.
    """
    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0])
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValidationError(f"seed must be a non-negative int or None; got {seed!r}.")
    seeds = [
        int(np.random.SeedSequence([int(seed), i]).generate_state(1, dtype=np.uint32)[0])
        for i in range(n_chunks)
    ]
    return int(seed), seeds


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


# -- executors ----------------------------------------------------------------------------


def _is_dask_client(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "distributed" and hasattr(obj, "get_executor")


class _Pool:
    """The executor to submit to; owns (and replaces when broken) the ``"processes"`` pool."""

    def __init__(self, executor: Any) -> None:
        check_parallel(executor, None)
        self.owned = isinstance(executor, str)
        if self.owned:
            self.executor = self._new_pool()
            self.label = f"processes ({os.cpu_count() or 1} workers, {START_METHOD})"
        elif _is_dask_client(executor):
            self.executor = executor.get_executor()
            self.label = f"dask {type(executor).__name__}"
        else:
            self.executor = executor
            self.label = type(executor).__name__

    @staticmethod
    def _new_pool() -> cf.ProcessPoolExecutor:
        context = multiprocessing.get_context(START_METHOD)
        if START_METHOD == "forkserver":
            context.set_forkserver_preload(["xai_core"])
        return cf.ProcessPoolExecutor(max_workers=os.cpu_count() or 1, mp_context=context)

    def submit(self, fn: Callable[..., Any], task: ChunkTask) -> cf.Future:
        """Submit; a submission that raises (a broken pool) gives a failed future."""
        try:
            return self.executor.submit(fn, task)
        except Exception as exc:
            future: cf.Future = cf.Future()
            future.set_exception(exc)
            return future

    def recover(self, exc: BaseException) -> None:
        """Replace the owned pool after a worker died, so that the retry has workers."""
        if self.owned and isinstance(exc, cf.BrokenExecutor):
            broken = self.executor
            if getattr(broken, "_broken", False):
                self.executor = self._new_pool()
                broken.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        if self.owned:
            self.executor.shutdown(wait=True, cancel_futures=True)


class _Serial:
    """The serial loop: same tasks, same worker function, in this thread."""

    owned = False
    label = "serial"

    def submit(self, fn: Callable[..., Any], task: ChunkTask) -> cf.Future:
        future: cf.Future = cf.Future()
        try:
            future.set_result(fn(task))
        except Exception as exc:
            future.set_exception(exc)
        return future

    def recover(self, exc: BaseException) -> None:
        pass

    def close(self) -> None:
        pass


def _run_all(pool: Any, tasks: list[ChunkTask], progress: bool) -> list[dict[str, Any]]:
    from tqdm.auto import tqdm

    results: list[dict[str, Any] | None] = [None] * len(tasks)
    pending: dict[cf.Future, tuple[int, int]] = {}
    bar = tqdm(total=len(tasks), desc="explaining chunks", unit="chunk", disable=not progress)
    try:
        for task in tasks:
            pending[pool.submit(run_chunk, task)] = (task.index, 0)
        while pending:
            done, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
            for future in done:
                index, attempt = pending.pop(future)
                exc = future.exception()
                if exc is None:
                    results[index] = future.result()
                    bar.update(1)
                    continue
                task = tasks[index]
                if attempt >= 1:
                    for other in pending:
                        other.cancel()
                    raise ChunkError(task.start, task.stop, exc) from exc
                pool.recover(exc)
                pending[pool.submit(run_chunk, task)] = (index, attempt + 1)
    finally:
        bar.close()
    return results  # type: ignore[return-value]


# -- the entry point ----------------------------------------------------------------------


def check_parallel(executor: Any, chunk_size: Any) -> None:
    """Check ``executor=`` and ``chunk_size=`` of :func:`xai_core.explain` before any work."""
    if chunk_size is not None:
        check_positive_int(chunk_size, "chunk_size")
    if executor is None or _is_dask_client(executor) or isinstance(executor, cf.Executor):
        return
    if isinstance(executor, str) and executor == "processes":
        return
    got = f"the string {executor!r}" if isinstance(executor, str) else type(executor).__name__
    raise ValidationError(
        "executor must be a concurrent.futures.Executor, a dask.distributed Client or "
        f'"processes"; got {got}.'
    )


def explain_chunked(
    runner: ModelRunner,
    X: np.ndarray,
    target: np.ndarray,
    *,
    method: str,
    options: dict[str, Any],
    feature_names: Sequence[str] | None,
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
    method : str
        A registered explainer.
    options : dict
        Options of the method, as given; ``seed`` (if the method has one) is replaced per
        chunk by :func:`chunk_seeds`, ``progress`` shows a bar over chunks.
    feature_names : sequence of str, optional
    executor : concurrent.futures.Executor, distributed.Client, "processes" or None
        Where chunks run; ``None`` runs them one after the other here.
    chunk_size : int, optional
        Rows per chunk; :data:`DEFAULT_CHUNK_SIZE` by default.

    Returns
    -------
    Explanation
        In row order; ``meta`` joins the chunks' per-row arrays, keeps values every chunk
        agrees on and lists the others per chunk, and adds ``seed`` (the caller's),
        ``chunk_seeds``, ``chunk_size``, ``chunks`` (row ranges), ``chunk_seconds``,
        ``chunk_counters``, ``executor`` and ``seconds``.

    Raises
    ------
    ChunkError
        When a chunk fails twice; it names the rows.
    CapabilityError
        When the model cannot travel to the executor's workers (an unpicklable function).
    """
    from xai_core.plugin.manager import get_registry

    cls = get_registry().explainer(method)
    chunk_size = check_positive_int(
        DEFAULT_CHUNK_SIZE if chunk_size is None else chunk_size, "chunk_size"
    )
    starts = list(range(0, len(X), chunk_size))
    valid = cls.option_names()
    progress = bool(options.get("progress", True))
    chunk_options = dict(options)
    if "progress" in valid:
        chunk_options["progress"] = False
    seed = None
    seeds: list[int | None] = [None] * len(starts)
    if "seed" in valid:
        default = inspect.signature(cls.__init__).parameters["seed"].default
        seed, seeds = chunk_seeds(options.get("seed", default), len(starts))

    start_time = time.perf_counter()
    # Nothing is serialised by the serial loop and thread pools; everything else pickles.
    shared = executor is None or isinstance(executor, cf.ThreadPoolExecutor)
    model = _model_spec(runner.model, shared)
    backend = _backend_spec(runner.backend)
    pool = _Serial() if executor is None else _Pool(executor)
    try:
        tasks = [
            ChunkTask(
                index=i,
                start=s,
                stop=min(s + chunk_size, len(X)),
                model=model,
                backend=backend,
                X=X[s : s + chunk_size],
                target=target[s : s + chunk_size],
                method=cls.name,
                options=chunk_options if seeds[i] is None else {**chunk_options, "seed": seeds[i]},
                feature_names=None if feature_names is None else tuple(feature_names),
                batch_size=runner.batch_size,
            )
            for i, s in enumerate(starts)
        ]
        parts = _run_all(pool, tasks, progress)
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
    if seed is not None:
        extra["seed"] = seed
        extra["chunk_seeds"] = seeds
        extra["options"]["seed"] = seed
    return _assemble(parts, tasks, extra)
