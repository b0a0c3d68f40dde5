"""Per-thread records of the last forward pass, left out when an object is pickled."""

from __future__ import annotations

import threading
from typing import Any


class ThreadLocalRecord:
    """Mixin of layers and networks: ``self._local`` holds each thread's last record.

    A ``threading.local`` cannot be pickled (and a record belongs to one thread), so
    a pickled copy, such as one sent to a worker process, starts with an empty one.
    """

    _local: threading.local

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_local", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()
