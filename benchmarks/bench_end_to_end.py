"""The whole job on a zoo CNN at 224 px: import, explain, compare across hardware, report.

Run from the repository root::

    python benchmarks/bench_end_to_end.py [--models resnet18 mobilenet_v2] [--rows 2]

For each torchvision classifier (random weights, 1,000 classes) on ``--rows`` RGB images
of 224 x 224, timed stage by stage in one process, with every library at ``--threads``:

1. ``import``: ``xai.from_torch``;
2. ``explain``: IG (``--steps`` steps) on the ``cpu`` backend;
3. ``compare ig``: ``xai.compare_backends(method="ig")`` over ``cpu``, ``gpu``, ``tpu``
   and ``edgetpu`` (which quantises the network to int8 first, calibrated on the rows);
4. ``compare lime``: the same with LIME (``--samples`` perturbations);
5. ``report``: ``xai.Report`` with the three results, saved to a temporary file.

Prints each stage's wall time, the total, and the process's peak resident memory (the
issue's goal: the whole job in at most 60 s and 1.5 GB on 2 cores).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from _pinning import machine_note, pinned

import xai_core as xai

BACKENDS = ("cpu", "gpu", "tpu", "edgetpu")


def peak_gib() -> float:
    """This process's peak resident memory so far, in GiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def run(name: str, rows: int, steps: int, samples: int) -> dict[str, float]:
    import torch
    import torchvision

    times: dict[str, float] = {}

    def stage(label, fn):
        start = time.perf_counter()
        out = fn()
        times[label] = time.perf_counter() - start
        return out

    torch.manual_seed(0)
    module = getattr(torchvision.models, name)(weights=None).eval()
    X = torch.rand(rows, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    x = X.numpy()
    net = stage("import", lambda: xai.from_torch(module, X[:1]))
    target = np.zeros(rows, dtype=np.int64)
    e = stage(
        "explain",
        lambda: xai.explain(net, x, method="ig", steps=steps, target=target, progress=False),
    )
    ig = stage(
        "compare ig",
        lambda: xai.compare_backends(
            net, x, method="ig", backends=BACKENDS, target=target, steps=steps, progress=False
        ),
    )
    lime = stage(
        "compare lime",
        lambda: xai.compare_backends(
            net,
            x,
            method="lime",
            backends=BACKENDS,
            target=target,
            n_samples=samples,
            progress=False,
        ),  # fmt: skip
    )
    with tempfile.TemporaryDirectory() as tmp:
        report = xai.Report(f"{name} end to end").add(e).add(ig).add(lime)
        stage("report", lambda: report.save(Path(tmp) / "report.html"))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["resnet18", "mobilenet_v2"])
    parser.add_argument("--rows", type=int, default=2)
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    print(f"end to end, {args.rows} rows at 224 px, IG {args.steps} steps, LIME "
          f"{args.samples} samples, backends {', '.join(BACKENDS)}; {args.threads} "
          f"thread(s); {machine_note()}")  # fmt: skip
    for name in args.models:
        with pinned(args.threads), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            times = run(name, args.rows, args.steps, args.samples)
        stages = "  ".join(f"{label} {seconds:.1f} s" for label, seconds in times.items())
        print(f"  {name}: {stages}  | total {sum(times.values()):.1f} s, "
              f"peak {peak_gib():.2f} GiB (process so far)")  # fmt: skip


if __name__ == "__main__":
    main()
