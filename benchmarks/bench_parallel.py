"""Rows explained per second: serial against 2 worker processes against a 2-worker Dask cluster.

Run from the repository root::

    python benchmarks/bench_parallel.py [--repeats 3] [--ig-rows 10000] [--steps 32]
        [--shap-rows 569] [--max-evals 1024]

1. Integrated gradients (``--steps`` Gauss-Legendre steps, zero baseline) of a 784-64-10 MLP over
   up to 10,000 MNIST digits: the 8,000 + 2,000 digits of ``shared/data/mnist-sample``
   beside the repository when present, else the 2,500 bundled ones.
2. Kernel SHAP (a 20-row background, ``--max-evals`` model evaluations per row) of a
   30-16-2 MLP over the breast-cancer rows.

Each is timed serially (one call, no chunks), serially in chunks, on a process pool of 2
workers (made and warmed once, as a user keeps one), once cold with
``executor="processes"`` (the first call starts the interpreter's shared pool), then again
on that pool, which lives across calls (median of ``--repeats``), and then, with only the
cluster alive (its idle processes take CPU from the others on a small machine), on a
2-worker Dask ``LocalCluster`` (skipped when the ``dask`` extra is missing). Printed: the median seconds of ``--repeats`` rounds,
rows per second, the speed-up over the serial run against the ideal of 2x, and the busy
cores: seconds spent explaining chunks per second of wall time (at most 2; when the
parallel runs keep 2 cores busy and still gain nothing, other work shares the cores).
Every parallel result is checked to equal the serial chunked one.

BLAS runs single-threaded everywhere (``OMP_NUM_THREADS=1`` and friends, set before numpy
loads, inherited by the workers), so the serial run uses one core and 2x is the ceiling.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402 - the BLAS settings above must precede numpy
import concurrent.futures as cf  # noqa: E402
import multiprocessing  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

import xai_core as xai  # noqa: E402
import xai_core.attribution.parallel as parallel  # noqa: E402

SHARED_MNIST = (
    Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "mnist-sample"
).resolve()


def busy(result: Any, seconds: float) -> float:
    """Seconds spent explaining chunks per second of wall time: the cores that did the work."""
    return sum(result.meta.get("chunk_seconds", [result.meta["seconds"]])) / seconds


def median_seconds(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, tuple]:
    """Median wall time and median busy cores of each function over ``repeats`` rounds.

    Every function runs once to warm up; then each round calls them one after the other,
    so a change of machine load during the run touches all of them alike. Returns
    ``(median seconds, median busy, last result)`` per name.
    """
    results = {name: fn() for name, fn in fns.items()}
    times: dict[str, list[float]] = {name: [] for name in fns}
    cores: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            results[name] = fn()
            times[name].append(time.perf_counter() - start)
            cores[name].append(busy(results[name], times[name][-1]))
    return {
        name: (statistics.median(times[name]), statistics.median(cores[name]), results[name])
        for name in fns
    }


def compare(result: Any, reference: np.ndarray) -> str:
    """Whether ``result``'s values equal the serial chunked run's, and by how much they differ."""
    if np.array_equal(result.values, reference):
        return "identical to serial: True"
    diff = np.abs(result.values - reference)
    rows = int(np.count_nonzero(diff.reshape(len(diff), -1).max(axis=1)))
    return f"identical to serial: False (max |diff| {diff.max():.3g} in {rows} rows)"


def mnist_rows(n: int) -> tuple[np.ndarray, np.ndarray, str]:
    """Up to ``n`` MNIST digits (float32 in [0, 1]), their labels, and where they came from."""
    from xai_datasets import load_mnist

    if SHARED_MNIST.is_dir():
        parts = [load_mnist(split, path=SHARED_MNIST) for split in ("train", "test")]
        source = "shared/data/mnist-sample (8,000 + 2,000 digits)"
    else:
        parts = [load_mnist(split) for split in ("train", "test")]
        source = "the bundled sample (2,000 + 500 digits)"
    X = np.concatenate([p.X for p in parts])[:n]
    y = np.concatenate([p.y for p in parts])[:n]
    return X.reshape(len(X), -1).astype(np.float32), y, source


def workload(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The two explanations to time: model, rows, method, options, chunk size."""
    from xai_datasets import load_breast_cancer

    X, y, source = mnist_rows(args.ig_rows)
    net = xai.nn.Sequential(
        [xai.nn.Dense(64), xai.nn.ReLU(), xai.nn.Dense(10), xai.nn.Softmax()],
        input_shape=(784,),
        seed=0,
    ).fit(X[:2000], y[:2000], epochs=2, batch_size=64, learning_rate=0.1, progress=False)

    bc = load_breast_cancer()
    Xb = ((bc.X - bc.X.mean(0)) / bc.X.std(0)).astype(np.float32)
    small = xai.nn.mlp(30, (16,), 2, seed=0).fit(Xb, bc.y, epochs=5, progress=False)
    rows = Xb[np.arange(args.shap_rows) % len(Xb)]
    return [
        {
            "label": f"IG ({args.steps} steps), MNIST {len(X)} rows from {source}",
            "model": net,
            "X": X,
            "method": "ig",
            "options": {"steps": args.steps},
            "chunk_size": args.ig_chunk,
        },
        {
            "label": f"Kernel SHAP, breast cancer {len(rows)} rows, max_evals={args.max_evals}",
            "model": small,
            "X": rows,
            "method": "shap",
            "options": {
                "algorithm": "kernel",
                "background": Xb[::29][:20],
                "max_evals": args.max_evals,
            },
            "chunk_size": args.shap_chunk,
        },
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ig-rows", type=int, default=10_000)
    parser.add_argument("--ig-chunk", type=int, default=500)
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--shap-rows", type=int, default=569)
    parser.add_argument("--shap-chunk", type=int, default=32)
    parser.add_argument("--max-evals", type=int, default=1024)
    args = parser.parse_args(argv)

    jobs = workload(args)
    print(
        f"cores: {os.cpu_count()}, process start method: {parallel.START_METHOD}, "
        f"load average at start: {os.getloadavg()[0]:.2f} (speed-ups need idle cores)"
    )
    calls = [_caller(job) for job in jobs]
    # Phase 1, no Dask cluster alive (its idle processes cost CPU on a small machine).
    timed: list[dict[str, tuple]] = []
    colds = []
    context = multiprocessing.get_context(parallel.START_METHOD)
    with cf.ProcessPoolExecutor(2, mp_context=context) as pool:
        for call in calls:
            runs = {
                "serial, one call": lambda call=call: call(chunk_size=None),
                "serial, chunked": call,
                "2 processes": lambda call=call: call(pool),
            }
            timed.append(median_seconds(runs, args.repeats))
    for call, times in zip(calls, timed):
        start = time.perf_counter()
        cold = call("processes")
        colds.append((time.perf_counter() - start, cold))
        kept = {'"processes", kept': lambda call=call: call("processes")}
        times.update(median_seconds(kept, args.repeats))
    # Phase 2, the Dask cluster alone.
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        print("dask is not installed (pip install 'xai-core[dask]'): the Dask rows are skipped.")
    else:
        with (
            LocalCluster(
                n_workers=2,
                processes=True,
                threads_per_worker=1,
                dashboard_address=None,
                host="127.0.0.1",
            ) as cluster,
            Client(cluster) as client,
        ):
            for call, times in zip(calls, timed):
                times.update(
                    median_seconds({"2-worker Dask": lambda call=call: call(client)}, args.repeats)
                )

    for job, times, (cold_seconds, cold) in zip(jobs, timed, colds):
        n = len(job["X"])
        print(f"\n{job['label']}, chunks of {job['chunk_size']}, median of {args.repeats}")
        reference = times["serial, chunked"][2].values
        base = times["serial, one call"][0]
        for name, (seconds, cores, result) in times.items():
            same = "" if name.startswith("serial") else "  " + compare(result, reference)
            speedup = base / seconds
            print(
                f"  {name:18s} {seconds:8.2f} s  {n / seconds:9.1f} rows/s  "
                f"speed-up {speedup:4.2f}x of 2x ideal ({speedup / 2:4.0%})  "
                f"busy cores {cores:4.2f}{same}"
            )
        print(
            f"  {'processes, cold':18s} {cold_seconds:8.2f} s  {n / cold_seconds:9.1f} rows/s  "
            f"(the first call, which starts the shared pool) {compare(cold, reference)}"
        )
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")


def _caller(job: dict[str, Any]) -> Callable[..., Any]:
    """``explain`` of one job on an executor, in the job's chunks unless told otherwise."""

    def call(executor: Any = None, chunk_size: int | None = job["chunk_size"]) -> Any:
        return xai.explain(
            job["model"],
            job["X"],
            method=job["method"],
            executor=executor,
            chunk_size=chunk_size,
            progress=False,
            **job["options"],
        )

    return call


if __name__ == "__main__":
    main()
