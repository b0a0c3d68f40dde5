"""Gradient methods on the zoo's CNNs at their real sizes: xai-core against Captum, and the floor.

Run from the repository root::

    python benchmarks/bench_zoo_gradients.py [--repeats 3] [--models resnet18 mobilenet_v2 ...]

torchvision's classifiers with random weights (1,000 classes), built in torch and imported
with ``xai.from_torch``; each method runs on ``--rows`` RGB images with xai-core on the
``cpu`` backend (float32) and with Captum on the torch module, on the same points, at 1
and 2 threads, interleaved, medians of ``--repeats``:

- ``ig``: integrated gradients, ``--steps`` Gauss-Legendre nodes from a zero baseline,
  ``--chunk`` path points per backward pass on both sides (Captum's
  ``internal_batch_size``); the largest difference between the two attributions is
  printed relative to their scale;
- ``smoothgrad``: SmoothGrad over saliency with ``--samples`` noisy copies per row in
  one batch, against Captum's ``NoiseTunnel(Saliency)`` (the noise differs: times only).

resnet18 runs at 224 px, the others at 128 px (``--size`` for all). The floor is the
time of the products every path point needs, a forward and an input-gradient pass
(``2 * macs_per_sample`` multiply-adds per point), at the rate this machine's BLAS reaches
on a large square product (4096 x 4096, float32) at the same thread count. Captum's
backward pass also computes the weights' gradients (the module's parameters require
them, as they do by default); xai-core computes only what the input gradient needs. At
2 threads xai-core runs with ``blas_threads=2`` (its default, 1, keeps values bit-identical
across executors).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _pinning import THREADS, headline_header, headline_row, interleaved, pinned

import xai_core as xai

#: Image side per model (the issue's sizes: resnet18 at 224 px, the others at 128).
SIZES = {"resnet18": 224}
DEFAULT_MODELS = ("resnet18", "mobilenet_v2", "efficientnet_b0", "densenet121")


def gemm_rate(threads: int) -> float:
    """Multiply-adds per second of a 4096 x 4096 float32 product at ``threads``."""
    a = np.random.default_rng(0).random((4096, 4096), dtype=np.float32)
    with pinned(threads):
        a @ a
        start = time.perf_counter()
        a @ a
        seconds = time.perf_counter() - start
    return 4096**3 / seconds


def build(name: str, rows: int, size: int):
    """The torch module, its import and the rows."""
    import torch
    import torchvision

    torch.manual_seed(0)
    module = getattr(torchvision.models, name)(weights=None).eval()
    X = torch.rand(rows, 3, size, size, generator=torch.Generator().manual_seed(1))
    return module, xai.from_torch(module, X[:1]), X


def contenders(method: str, module, net, X, args, threads: int):
    """``(ours, theirs, points)``: the two calls of ``method`` on the same rows, and the model
    points each evaluates (forward and backward)."""
    import torch
    from captum import attr

    x, target = X.numpy(), np.arange(len(X)) % 1000
    t = torch.tensor(target)
    backend = xai.get_backend("cpu")
    if method == "ig":
        ig = attr.IntegratedGradients(module)

        def ours():
            return xai.explain(
                net, x, method="ig", backend=backend, target=target, steps=args.steps,
                internal_batch_size=args.chunk, progress=False, blas_threads=threads,
            ).values  # fmt: skip

        def theirs():
            with torch.enable_grad():
                return ig.attribute(
                    X, target=t, n_steps=args.steps, method="gausslegendre",
                    internal_batch_size=args.chunk,
                ).detach().numpy()  # fmt: skip

        return ours, theirs, len(X) * args.steps
    tunnel = attr.NoiseTunnel(attr.Saliency(module))

    def ours():
        return xai.explain(
            net, x, method="smoothgrad", backend=backend, target=target,
            n_samples=args.samples, stdev=0.15, progress=False, blas_threads=threads,
        ).values  # fmt: skip

    def theirs():
        with torch.enable_grad():
            return tunnel.attribute(
                X, target=t, nt_type="smoothgrad", nt_samples=args.samples,
                nt_samples_batch_size=args.samples, stdevs=0.15,
            ).detach().numpy()  # fmt: skip

    return ours, theirs, len(X) * args.samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", type=int, default=2)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--chunk", type=int, default=16)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--size", type=int, default=None)
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS))
    parser.add_argument("--methods", nargs="+", default=["ig", "smoothgrad"])
    args = parser.parse_args()
    rates = {threads: gemm_rate(threads) for threads in THREADS}
    headline_header(
        f"gradient methods on the zoo, {args.rows} rows, float32 cpu backend against Captum "
        f"(IG: {args.steps} steps, chunks of {args.chunk}; SmoothGrad: {args.samples} samples)"
    )
    for name in args.models:
        size = args.size or SIZES.get(name, 128)
        module, net, X = build(name, args.rows, size)
        for method in args.methods:
            for threads in THREADS:
                ours, theirs, points = contenders(method, module, net, X, args, threads)
                with pinned(threads), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    (t_ours, e), (t_theirs, ref) = interleaved(ours, theirs, repeats=args.repeats)
                floor = 2 * net.macs_per_sample * points / rates[threads]
                note = ""
                if method == "ig":
                    diff = np.abs(e - ref).max() / np.abs(ref).max()
                    note = f"max |diff| {diff:.1e} of the scale"
                else:
                    note = "(times only: other noise)"
                work = f"{method} {name} {size}px"
                headline_row(work, threads, t_theirs, t_ours, floor, note)


if __name__ == "__main__":
    main()
