"""The worked example of docs/tpu_pods.md: IG on a v2-8 against one v2 core, and training scaling.

1. Trains the small MNIST CNN (``xai.nn.cnn(hidden=32)``) for one epoch on cpu.
2. Explains 10,000 digits with integrated gradients (16 steps) on a ``tpu_pod`` v2-8 and
   on one v2 TensorCore; checks that the attributions are bit-identical and prints both
   backends' counters.
3. Costs one training step of the CNN on v3-8 ... v3-2048: strong scaling (a global batch
   of 1,024) and weak scaling (128 rows per device).

Prints the Markdown tables of docs/tpu_pods.md::

    python docs/scripts/tpu_pods.py --path PATH_TO_MNIST_IDX_FOLDER

``--path``: a folder of MNIST IDX files (the project's 8,000 + 2,000 digit sample, or the
official files; train and test are concatenated and the first 10,000 digits are used).
Without it the bundled 2,500-digit sample is repeated to 10,000 rows (the costs depend on
the number of rows, not on which digits they are).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import xai_core as xai
from xai_core import nn
from xai_core.backends.scaling import one_device, training_scaling
from xai_datasets import load_mnist

PRESETS = ("v3-8", "v3-32", "v3-64", "v3-128", "v3-256", "v3-512", "v3-1024", "v3-2048")
COUNTERS = (
    "compute_seconds",
    "infeed_seconds",
    "gather_seconds",
    "est_seconds",
    "macs",
    "utilization",
    "energy_j",
)


def digits(path: str | None, n: int = 10_000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Training rows and labels, and ``n`` rows to explain."""
    train, test = load_mnist("train", path=path), load_mnist("test", path=path)
    X = np.concatenate([train.X, test.X])
    reps = -(-n // len(X))
    return train.X, train.y, np.tile(X, (reps, 1))[:n]


def table(rows: list[dict], columns: list[str]) -> str:
    """A Markdown table."""
    out = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for r in rows:
        cells = []
        for c in columns:
            v = r[c]
            cells.append(f"{v:.4g}" if isinstance(v, (float, np.floating)) else str(v))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", default=None, help="folder of MNIST IDX files")
    parser.add_argument("--steps", type=int, default=16)
    args = parser.parse_args()

    start = time.perf_counter()
    X_train, y_train, X = digits(args.path)
    net = nn.cnn(hidden=32, seed=0)
    net.fit(X_train, y_train, optimizer="adam", learning_rate=2e-3, batch_size=32, epochs=1,
            progress=False)  # fmt: skip
    print(f"trained in {time.perf_counter() - start:.0f} s", file=sys.stderr)

    target = np.argmax(xai.ModelRunner(net, "cpu").predict(X), axis=1)
    results = {}
    for label, backend in (("v2-8", xai.get_backend("tpu_pod", preset="v2-8")),
                           ("one v2 core", one_device("v2-8"))):  # fmt: skip
        t0 = time.perf_counter()
        e = xai.explain(net, X, method="ig", backend=backend, target=target, steps=args.steps)
        results[label] = (e.values, backend.counters)
        print(f"IG on {label}: {time.perf_counter() - t0:.0f} s wall", file=sys.stderr)
    same = np.array_equal(results["v2-8"][0], results["one v2 core"][0])
    print(f"## IG on {len(X):,} digits, {args.steps} steps\n")
    print(f"attributions bit-identical on v2-8 and one v2 core: {same}\n")
    one = results["one v2 core"][1]
    one.setdefault("compute_seconds", one["est_seconds"])  # one device: compute is the time
    rows = [
        {"counter": k, **{lab: float(c.get(k, 0.0)) for lab, (_, c) in results.items()}}
        for k in COUNTERS
    ]
    print(table(rows, ["counter", "v2-8", "one v2 core"]))
    speed = results["one v2 core"][1]["est_seconds"] / results["v2-8"][1]["est_seconds"]
    print(f"\nsimulated speed-up of the v2-8 over one core: {speed:.2f}x\n")

    cols = ["preset", "devices", "global_batch", "rows_per_device", "compute_seconds",
            "allreduce_seconds", "infeed_seconds", "step_seconds", "speedup", "efficiency"]  # fmt: skip
    for title, kwargs in (
        ("strong scaling, global batch 1,024", {"batch_size": 1024}),
        ("weak scaling, 128 rows per device", {"batch_size": 128, "per_device": True}),
    ):
        t0 = time.perf_counter()
        frame = training_scaling(net, presets=PRESETS, **kwargs)
        print(f"{title}: {time.perf_counter() - t0:.0f} s wall", file=sys.stderr)
        print(f"## One training step, {title}\n")
        print(f"gradient all-reduced per step: {frame['allreduce_bytes'].iloc[0]:,.0f} bytes\n")
        print(table(frame.to_dict("records"), cols) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
