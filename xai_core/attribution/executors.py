"""Where chunks run: the serial loop, a caller's executor, the shared process pool, a Dask client.

Each chunk is submitted once and retried once (on a fresh pool when a worker of the shared
pool died); results come back in any order and are kept by chunk index.

``executor="processes"`` runs on one process pool per interpreter, started on first use and
kept for the calls after it (its workers keep the models they have built, see
:mod:`xai_core.attribution.transport`), so only the first call pays for starting the
workers; :func:`shutdown_process_pool` stops it (it also stops at exit).
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import multiprocessing
import os
import threading
from collections.abc import Callable
from typing import Any

from xai_core.errors import ChunkError, ModelOutputError, ValidationError
from xai_core.progress import Bar
from xai_core.validation import check_positive_int

__all__ = [
    "START_METHOD",
    "Pool",
    "Serial",
    "check_parallel",
    "process_pool",
    "run_all",
    "shutdown_process_pool",
]

#: Start method of the ``executor="processes"`` pool: a fresh interpreter per worker, safe
#: when the caller has threads running (fork is not).
START_METHOD = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


_POOL_LOCK = threading.Lock()
_POOL: cf.ProcessPoolExecutor | None = None


def _new_process_pool() -> cf.ProcessPoolExecutor:
    context = multiprocessing.get_context(START_METHOD)
    if START_METHOD == "forkserver":
        context.set_forkserver_preload(["xai_core"])
    return cf.ProcessPoolExecutor(max_workers=os.cpu_count() or 1, mp_context=context)


def process_pool(replace_broken: cf.Executor | None = None) -> cf.ProcessPoolExecutor:
    """The interpreter's ``executor="processes"`` pool, started on first use.

    Parameters
    ----------
    replace_broken : Executor, optional
        A pool a worker of which died: if it is still the shared one it is replaced by a
        fresh pool (and shut down without waiting), so that a retry has workers.
    """
    global _POOL
    with _POOL_LOCK:
        if replace_broken is not None and replace_broken is _POOL:
            _POOL = None
            replace_broken.shutdown(wait=False, cancel_futures=True)
        if _POOL is None:
            _POOL = _new_process_pool()
        return _POOL


def shutdown_process_pool() -> None:
    """Stop the shared ``executor="processes"`` pool's workers (the next call starts new ones)."""
    global _POOL
    with _POOL_LOCK:
        pool, _POOL = _POOL, None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


atexit.register(shutdown_process_pool)  # before the interpreter tears modules down


def _is_dask_client(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "distributed" and hasattr(obj, "get_executor")


class Pool:
    """The executor to submit to; for ``"processes"`` the shared pool (replaced when broken)."""

    def __init__(self, executor: Any) -> None:
        check_parallel(executor, None)
        self.owned = isinstance(executor, str)
        if self.owned:
            self.executor = process_pool()
            self.label = f"processes ({os.cpu_count() or 1} workers, {START_METHOD})"
        elif _is_dask_client(executor):
            self.executor = executor.get_executor()
            self.label = f"dask {type(executor).__name__}"
        else:
            self.executor = executor
            self.label = type(executor).__name__

    def submit(self, fn: Callable[..., Any], task: Any) -> cf.Future:
        """Submit; a submission that raises (a broken pool) gives a failed future."""
        try:
            return self.executor.submit(fn, task)
        except Exception as exc:
            future: cf.Future = cf.Future()
            future.set_exception(exc)
            return future

    def recover(self, exc: BaseException) -> None:
        """Replace the shared pool after a worker died, so that the retry has workers."""
        if self.owned and isinstance(exc, cf.BrokenExecutor):
            if getattr(self.executor, "_broken", False):
                self.executor = process_pool(replace_broken=self.executor)

    def close(self) -> None:
        """Nothing to release: the shared pool lives on for the next call."""


class Serial:
    """The serial loop: same tasks, same worker function, in this thread."""

    owned = False
    label = "serial"

    def submit(self, fn: Callable[..., Any], task: Any) -> cf.Future:
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


def run_all(
    pool: Any, fn: Callable[[Any], dict[str, Any]], tasks: list[Any], bar: Bar
) -> list[dict[str, Any]]:
    """Run ``fn`` on every task through ``pool``; each failing task is retried once.

    ``bar`` counts the rows ``task.stop - task.start`` of each task as it completes, in
    this thread, whatever the order the results come back in.

    A :class:`~xai_core.errors.ModelOutputError` (the model returned NaN) is raised as it
    is, without a retry: it names the rows, and the model would say the same again.

    Raises
    ------
    ChunkError
        When a task fails twice; it names the rows ``task.start:task.stop``.
    """

    results: list[dict[str, Any] | None] = [None] * len(tasks)
    pending: dict[cf.Future, tuple[int, int]] = {}

    def settle(future: cf.Future) -> None:
        """Keep a finished task's result and count its rows, or retry it once, or raise."""
        index, attempt = pending.pop(future)
        exc = future.exception()
        task = tasks[index]
        if exc is None:
            results[index] = future.result()
            bar.update(task.stop - task.start)
            return
        if attempt >= 1 or isinstance(exc, ModelOutputError):  # NaN again on retry
            for other in pending:
                other.cancel()
            if isinstance(exc, ModelOutputError):
                raise exc  # it names the rows already
            raise ChunkError(task.start, task.stop, exc) from exc
        pool.recover(exc)
        pending[pool.submit(fn, task)] = (index, attempt + 1)

    for task in tasks:
        future = pool.submit(fn, task)
        pending[future] = (task.index, 0)
        if future.done():  # the serial loop: count it, retry it or stop now
            settle(future)
    while pending:
        done, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
        for future in sorted(done, key=lambda f: pending[f][0]):
            settle(future)
    return results  # type: ignore[return-value]


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
