"""Shared by the benchmarks: thread pinning, interleaved medians, and the machine's state.

Every headline row is measured at 1 and at 2 threads in the same run: numpy's BLAS (and
any other pool threadpoolctl knows) and torch are limited to that many threads around
each measurement, the contestants run one after the other in every round, in a shuffled order (so a change
of load touches them alike, and none always follows the same other), and the medians are reported with the BLAS kernel and the
load average.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

THREADS = (1, 2)


@contextlib.contextmanager
def pinned(threads: int) -> Iterator[None]:
    """numpy's BLAS, OpenMP pools and torch limited to ``threads`` inside the block."""
    from threadpoolctl import threadpool_limits

    torch = _torch()
    before = torch.get_num_threads() if torch is not None else None
    with threadpool_limits(threads):
        if torch is not None:
            torch.set_num_threads(threads)
        try:
            yield
        finally:
            if torch is not None:
                torch.set_num_threads(before)


def _torch() -> Any:
    """torch if it is already imported (pinning never imports it)."""
    import sys

    return sys.modules.get("torch")


def interleaved(*fns: Callable[[], Any], repeats: int) -> list[tuple[float, Any]]:
    """Median wall time of each function over ``repeats`` rounds (after one warm-up), and its last result.

    Every round runs each function once, in an order drawn afresh (seeded, so runs repeat):
    a function finds the caches holding whatever ran just before it, and a fixed order
    would always hand the same function the same predecessor.
    """
    import random

    results = [fn() for fn in fns]
    times: list[list[float]] = [[] for _ in fns]
    order = list(range(len(fns)))
    shuffle = random.Random(0).shuffle
    for _ in range(repeats):
        shuffle(order)
        for i in order:
            start = time.perf_counter()
            results[i] = fns[i]()
            times[i].append(time.perf_counter() - start)
    return [(statistics.median(t), r) for t, r in zip(times, results)]


def machine_note() -> str:
    """The BLAS kernel numpy uses, the CPU count and the load average, on one line."""
    from threadpoolctl import threadpool_info

    blas = [
        f"{p.get('internal_api')} {p.get('version')} ({p.get('architecture') or '?'})"
        for p in threadpool_info()
        if p.get("user_api") == "blas"
    ]
    load = os.getloadavg()
    return (
        f"BLAS: {', '.join(blas) or 'unknown'}; {os.cpu_count()} CPU(s); load average "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min)"
    )


def headline_header(title: str) -> None:
    """Print the column heads of a headline table."""
    print(f"\n[headline] {title}")
    print(f"  {machine_note()}")
    print(
        f"  {'work':<44} {'threads':>7} {'anchor ms':>10} {'ours ms':>9} {'anchor/ours':>12} "
        f"{'floor ms':>9} {'ours/floor':>11}"
    )


def headline_row(
    work: str,
    threads: int,
    anchor: float,
    ours: float,
    floor: float | None = None,
    note: str = "",
) -> None:
    """One row: times in seconds; the ratio anchor / ours, and ours / floor when a floor is known."""
    floor_ms = f"{floor * 1e3:9.2f}" if floor else f"{'-':>9}"
    over = f"{ours / floor:10.2f}x" if floor else f"{'-':>11}"
    print(
        f"  {work:<44} {threads:>7} {anchor * 1e3:10.2f} {ours * 1e3:9.2f} "
        f"{anchor / ours:11.2f}x {floor_ms} {over}  {note}".rstrip()
    )
