"""Report size and render time for 100 explanations of 784-pixel images.

Run from the repository root::

    python benchmarks/bench_report.py [--repeats 7] [--rows 100]

1. Fits a logistic regression on the bundled MNIST sample and explains ``--rows`` test
   digits with the exact linear SHAP values ``coef[target] * (x - mean(x))`` (closed form,
   so the benchmark measures rendering, not explaining).
2. Renders them as one explanation of ``--rows`` rows and as ``--rows`` explanations of
   one row each (one section each), timing ``Report.to_html()`` as the median of
   ``--repeats`` runs after one warm-up, and printing the size of the HTML in bytes.
3. As anchors measured in the same run: ``json.dumps(e.to_dict())`` of the same
   explanation (the least any export that keeps the numbers does) and its size, and the
   raw float32 attributions (``rows * 784 * 4`` bytes). Ratios are printed against both.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

import xai_core as xai


def _median_seconds(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up: templates compiled, caches filled
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _explanation(rows: int) -> xai.Explanation:
    from sklearn.linear_model import LogisticRegression

    from xai_datasets import load_mnist

    ds = load_mnist()
    n_train = min(len(ds) - rows, 2000)
    X, y = ds.X.astype(np.float64), ds.y
    model = LogisticRegression(max_iter=200).fit(X[:n_train], y[:n_train])
    test = X[n_train : n_train + rows]
    target = model.predict(test)
    mean = X[:n_train].mean(axis=0)
    values = model.coef_[target] * (test - mean)
    base = model.intercept_[target] + model.coef_[target] @ mean
    return xai.Explanation(
        values=values.reshape(-1, 28, 28),
        base_values=base,
        target=target,
        data=test.reshape(-1, 28, 28),
        output_names=ds.class_names,
        method="shap",
        backend="cpu",
        meta={"seed": 0, "options": {"algorithm": "linear"}, "seconds": 0.0},
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rows", type=int, default=100)
    args = parser.parse_args(argv)

    e = _explanation(args.rows)
    one = xai.Report("one explanation", seed=0).add(e)
    many = xai.Report("one section per explanation", seed=0)
    for i in range(len(e)):
        many.add(e[i])

    t_json = _median_seconds(lambda: json.dumps(e.to_dict()), args.repeats)
    json_size = len(json.dumps(e.to_dict()).encode())
    raw_size = e.values.size * 4
    print(
        f"{len(e)} explanations of {e.values[0].size}-pixel images, median of {args.repeats} runs"
    )
    print(f"anchor json.dumps(e.to_dict()): {t_json * 1e3:8.1f} ms  {json_size:>10,d} bytes")
    print(f"anchor raw float32 attributions:            {raw_size:>10,d} bytes")
    for label, report in (("1 explanation x 100 rows", one), ("100 explanations x 1 row", many)):
        t = _median_seconds(report.to_html, args.repeats)
        size = len(report.to_html().encode())
        print(
            f"{label}: render {t * 1e3:8.1f} ms ({t / len(e) * 1e3:.2f} ms per image), "
            f"{size:>10,d} bytes ({size / len(e) / 1024:.1f} KiB per image); "
            f"time / json {t / t_json:.1f}x, size / json {size / json_size:.2f}x, "
            f"size / raw {size / raw_size:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
