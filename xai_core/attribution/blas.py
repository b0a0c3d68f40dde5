"""BLAS threads during an explanation: the same count everywhere, so values are bit-identical.

OpenBLAS (numpy's and scipy's) splits a matrix product over its threads in a way that
changes the last bits of float64 results with the thread count: Kernel SHAP's least
squares on this project's test data differ by about 1e-9 between 2 threads and 1. Dask
workers start with one BLAS thread (``OMP_NUM_THREADS=1`` and friends) while the caller's
process has one per core, so a Dask run and a serial run disagreed in the last bits.
:func:`xai_core.explain` therefore runs the computation with ``blas_threads`` threads (one
by default) through threadpoolctl, in the caller's process and in every worker alike.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["blas_threads"]

_lock = threading.Lock()
_depth = 0
_restore: list[tuple[Any, int]] = []
_controller: Any = None
_modules_seen = -1


def _get_controller() -> Any:
    """threadpoolctl's view of the loaded libraries, rescanned only after new imports.

    Scanning the process's libraries costs milliseconds; a BLAS arrives only with an import
    (numpy, scipy, scikit-learn...), so the scan is redone when ``sys.modules`` has grown.
    """
    global _controller, _modules_seen
    if _controller is None or len(sys.modules) != _modules_seen:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
        _modules_seen = len(sys.modules)
    return _controller


@contextmanager
def blas_threads(n: int | None) -> Iterator[None]:
    """Limit the BLAS libraries to ``n`` threads inside the block (``None``: leave them).

    The limit is process-wide (BLAS has no per-thread setting): nested and concurrent blocks
    (chunks on a thread pool) share the first block's limit, and the original settings come
    back when the last block ends. Each BLAS threadpoolctl found is asked its thread count
    and set only when it differs (``threadpool_limits`` would also read every library's
    version and configuration, on every call).
    """
    global _depth, _restore
    if n is None:
        yield
        return
    n = int(n)
    with _lock:
        if _depth == 0:
            _restore = []
            for lib in _get_controller().lib_controllers:
                if lib.user_api != "blas":
                    continue
                before = lib.get_num_threads()
                if before != n:
                    lib.set_num_threads(n)
                    _restore.append((lib, before))
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                for lib, before in _restore:
                    if before is not None:
                        lib.set_num_threads(before)
                _restore = []
