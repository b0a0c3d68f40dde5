"""Occlusion and feature ablation on an imported CNN: xai-core against Captum, and the floor.

Run from the repository root::

    python benchmarks/bench_perturb.py [--repeats 5] [--size 64] [--window 8] [--stride 4]

1. Builds torchvision's ``resnet18`` (random weights; a small CNN when torchvision is not
   installed) and imports it with ``xai.from_torch``.
2. ``[headline]``: occludes one ``3 x size x size`` image with ``3 x window x window``
   windows every ``stride`` pixels, on the ``cpu`` backend, and the same with Captum's
   ``Occlusion`` on the torch module, both evaluating every window's copy in one batch
   (``perturbations_per_eval`` = all windows), at 1 and at 2 threads, interleaved, medians
   of ``--repeats``. Then feature ablation of the same image by a grid of ``window``-pixel
   patches through all channels (``feature_mask``), against Captum's ``FeatureAblation``.
   The floor is the unavoidable work on this engine: one forward pass of the perturbed
   copies (and of the image).
3. The largest difference between the attributions.

Captum runs its own torch forward passes, xai-core its imported network: the ratio is
the one a user sees between the two tools on the same request.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from _pinning import THREADS, headline_header, headline_row, interleaved, pinned

import xai_core as xai


def build_model():
    """torchvision's resnet18 with random weights, or a small CNN without torchvision."""
    import torch

    torch.manual_seed(0)
    try:
        import torchvision

        return torchvision.models.resnet18(num_classes=10).eval(), "resnet18"
    except ImportError:
        module = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10),
        )  # fmt: skip
        return module.eval(), "small CNN"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--window", type=int, default=8)
    parser.add_argument("--stride", type=int, default=4)
    args = parser.parse_args()

    import torch
    from captum.attr import FeatureAblation, Occlusion

    module, label = build_model()
    s, w, st = args.size, args.window, args.stride
    X = np.random.default_rng(0).random((1, 3, s, s), dtype=np.float32)
    net = xai.from_torch(module, torch.tensor(X))
    cpu = xai.get_backend("cpu")
    target = int(net.predict(X).argmax())
    windows = (math.ceil((s - w) / st) + 1) ** 2
    cells = np.arange(s) // w
    mask = np.broadcast_to(cells[:, None] * (s // w + 1) + cells[None, :], (3, s, s)).copy()
    groups = len(np.unique(mask))
    xt = torch.tensor(X)

    def ours_occlusion():
        return xai.explain(
            net, X, method="occlusion", backend=cpu, target=target,
            sliding_window_shapes=(3, w, w), strides=(3, st, st),
            perturbations_per_eval=windows, progress=False,
        ).values  # fmt: skip

    def captum_occlusion():
        with torch.no_grad():
            return Occlusion(module).attribute(
                xt, sliding_window_shapes=(3, w, w), strides=(3, st, st), target=target,
                baselines=0.0, perturbations_per_eval=windows,
            ).numpy()  # fmt: skip

    def ours_ablation():
        return xai.explain(
            net, X, method="feature_ablation", backend=cpu, target=target, feature_mask=mask,
            perturbations_per_eval=groups, progress=False,
        ).values  # fmt: skip

    def captum_ablation():
        with torch.no_grad():
            return FeatureAblation(module).attribute(
                xt, target=target, feature_mask=torch.tensor(mask)[None],
                perturbations_per_eval=groups,
            ).numpy()  # fmt: skip

    def floor_of(k):
        copies = np.repeat(X, k + 1, axis=0)
        return lambda: net.predict(copies, cpu)

    headline_header(f"perturbation methods on {label}, one 3x{s}x{s} image (cpu backend)")
    for threads in THREADS:
        with pinned(threads):
            rows = [
                (f"occlusion, {windows} windows of 3x{w}x{w}", captum_occlusion, ours_occlusion,
                 floor_of(windows)),
                (f"feature ablation, {groups} patches", captum_ablation, ours_ablation,
                 floor_of(groups)),
            ]  # fmt: skip
            for work, anchor, ours, floor in rows:
                (t_anchor, a), (t_ours, o), (t_floor, _) = interleaved(
                    anchor, ours, floor, repeats=args.repeats
                )
                gap = float(np.max(np.abs(a - o)) / max(1e-12, np.max(np.abs(a))))
                headline_row(work, threads, t_anchor, t_ours, t_floor, f"max diff {gap:.1e}")


if __name__ == "__main__":
    main()
