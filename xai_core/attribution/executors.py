"""Where chunks run: the serial loop, a caller's executor, an owned process pool, a Dask client.

Each chunk is submitted once and retried once (on a fresh pool when a worker of the owned
pool died); results come back in any order and are kept by chunk index.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
from collections.abc import Callable
from typing import Any

from xai_core.errors import ChunkError, ModelOutputError, ValidationError
from xai_core.progress import progress_bar
from xai_core.validation import check_positive_int

__all__ = ["START_METHOD", "Pool", "Serial", "check_parallel", "run_all"]

#: Start method of the ``executor="processes"`` pool: a fresh interpreter per worker, safe
#: when the caller has threads running (fork is not).
START_METHOD = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def _is_dask_client(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "distributed" and hasattr(obj, "get_executor")


class Pool:
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

    def submit(self, fn: Callable[..., Any], task: Any) -> cf.Future:
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
    pool: Any, fn: Callable[[Any], dict[str, Any]], tasks: list[Any], progress: bool | None
) -> list[dict[str, Any]]:
    """Run ``fn`` on every task through ``pool``; each failing task is retried once.

    A :class:`~xai_core.errors.ModelOutputError` (the model returned NaN) is raised as it
    is, without a retry: it names the rows, and the model would say the same again.

    Raises
    ------
    ChunkError
        When a task fails twice; it names the rows ``task.start:task.stop``.
    """

    results: list[dict[str, Any] | None] = [None] * len(tasks)
    pending: dict[cf.Future, tuple[int, int]] = {}
    bar = progress_bar(
        len(tasks), progress=progress, desc="explaining chunks", unit="chunk", leave=True
    )
    try:
        for task in tasks:
            pending[pool.submit(fn, task)] = (task.index, 0)
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
                if attempt >= 1 or isinstance(exc, ModelOutputError):  # NaN again on retry
                    for other in pending:
                        other.cancel()
                    if isinstance(exc, ModelOutputError):
                        raise exc  # it names the rows already
                    raise ChunkError(task.start, task.stop, exc) from exc
                pool.recover(exc)
                pending[pool.submit(fn, task)] = (index, attempt + 1)
    finally:
        bar.close()
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
