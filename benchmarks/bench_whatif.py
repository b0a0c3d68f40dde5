"""What-if on Fashion-MNIST: nearest counterfactuals over 70,000 rows and partial dependence over 10,000.

Run from the repository root::

    python benchmarks/bench_whatif.py [--repeats 5] [--queries 5] [--grid 20]

1. Loads the full Fashion-MNIST (train + test, 70,000 images) from ``../shared/data/
   fashion-mnist`` beside the repository (skipped, with a message, when absent) and
   trains a small MLP (784-32-10) with scikit-learn on 10,000 images, converted to a
   native network (``xai.from_sklearn``) that the session runs on the ``cpu`` backend.
2. Nearest counterfactual (L1 and L2, the What-If Tool's scaled distance) of
   ``--queries`` rows over all 70,000 rows: ``WhatIf.nearest_counterfactual`` against a
   straightforward numpy version (scale the differences by the standard deviations, sum,
   mask rows with the same prediction, argmin) given the same predictions and the
   standard deviations computed beforehand. Medians of
   ``--repeats`` rounds; the answers are checked to be the same row.
3. Partial dependence of one pixel over 10,000 rows on a ``--grid``-point grid:
   ``WhatIf.partial_dependence`` (rows x grid points in large batches through the runner)
   against a numpy loop over the grid (copy the rows, set the pixel, predict, average).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from _pinning import interleaved

import xai_core as xai

DATA = (Path(__file__).resolve().parents[1].parent / "shared" / "data" / "fashion-mnist").resolve()


def numpy_nearest(
    X: np.ndarray, std: np.ndarray, pred: np.ndarray, row: int, kind: str
) -> tuple[int, float]:
    """The straightforward version: scaled differences to every row, masked argmin."""
    scaled = np.abs(X - X[row]) / std
    d = scaled.sum(axis=1) if kind == "l1" else np.sqrt((scaled**2).sum(axis=1))
    d[pred == pred[row]] = np.inf
    d[row] = np.inf
    j = int(np.argmin(d))
    return j, float(d[j])


def numpy_partial_dependence(runner: Any, X: np.ndarray, j: int, grid: np.ndarray) -> np.ndarray:
    """The straightforward version: one prediction of all rows per grid value."""
    out = []
    for v in grid:
        edited = X.copy()
        edited[:, j] = v
        out.append(runner.predict(edited).mean(axis=0))
    return np.stack(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--queries", type=int, default=5)
    parser.add_argument("--grid", type=int, default=20)
    args = parser.parse_args(argv)
    if not DATA.is_dir():
        print(f"skipped: Fashion-MNIST not found at {DATA}")
        return 0
    from sklearn.neural_network import MLPClassifier

    from xai_datasets import load_fashion_mnist

    train = load_fashion_mnist("train", path=DATA)
    test = load_fashion_mnist("test", path=DATA)
    X = np.concatenate([train.X, test.X]).reshape(-1, 784).astype(np.float32)
    y = np.concatenate([train.y, test.y])
    print(f"Fashion-MNIST: {X.shape[0]:,} rows x {X.shape[1]} features")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlp = MLPClassifier((32,), max_iter=15, random_state=0).fit(X[:10000], y[:10000])
    net = xai.from_sklearn(mlp)
    start = time.perf_counter()
    w = xai.what_if(net, X, y, progress=False)
    print(f"session (predicting all rows once): {time.perf_counter() - start:.2f} s")
    X64 = X.astype(np.float64)
    pred = w.predicted.copy()
    std = X64.std(axis=0)
    std[std == 0] = 1.0  # computed once, outside the timed baseline
    rows = np.random.default_rng(0).choice(len(X), size=args.queries, replace=False)

    print("\nnearest counterfactual over 70,000 rows (median per query)")
    for kind in ("l1", "l2"):
        start = time.perf_counter()
        w.nearest_counterfactual(int(rows[0]), distance=kind)
        first = time.perf_counter() - start
        ours = lambda kind=kind: [w.nearest_counterfactual(int(r), distance=kind) for r in rows]  # noqa: E731
        base = lambda kind=kind: [numpy_nearest(X64, std, pred, int(r), kind) for r in rows]  # noqa: E731
        (t_ours, r_ours), (t_base, r_base) = interleaved(ours, base, repeats=args.repeats)
        same = all(c.index[0] == b[0] for c, b in zip(r_ours, r_base))
        gap = max(abs(c.distances[0] - b[1]) / b[1] for c, b in zip(r_ours, r_base))
        print(
            f"  {kind}: xai-whatif {t_ours / len(rows) * 1e3:8.1f} ms   numpy {t_base / len(rows) * 1e3:8.1f} ms"
            f"   speed-up x{t_base / t_ours:5.2f}   same rows: {same}, max rel. distance gap {gap:.1e}"
            f"   (first call: {first * 1e3:.0f} ms; the first query of a session scales the data once)"
        )

    print(f"\npartial dependence of one pixel over 10,000 rows, {args.grid}-point grid")
    j = 14 * 28 + 14
    sub = X[:10000]
    w10 = xai.what_if(net, sub, progress=False)
    grid = np.linspace(sub[:, j].min(), sub[:, j].max(), args.grid)
    ours = lambda: w10.partial_dependence(j, grid=grid).average  # noqa: E731
    base = lambda: numpy_partial_dependence(w10.runner, sub, j, grid)  # noqa: E731
    (t_ours, pd_ours), (t_base, pd_base) = interleaved(ours, base, repeats=args.repeats)
    print(
        f"  xai-whatif {t_ours:.3f} s   numpy loop {t_base:.3f} s   speed-up x{t_base / t_ours:5.2f}"
        f"   max |PD difference| {np.abs(pd_ours - pd_base).max():.1e}"
        f"   ({10000 * args.grid / t_ours:,.0f} model rows/s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
