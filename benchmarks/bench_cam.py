"""Grad-CAM, guided backpropagation and layer attribution: xai-core against Captum on the same imported CNN.

Run from the repository root::

    python benchmarks/bench_cam.py [--repeats 7] [--rows 32] [--steps 16]

A small CNN (Conv 8 3x3 - ReLU - MaxPool - Conv 16 3x3 - ReLU - MaxPool - Linear 10) on
28x28 single-channel images, built in torch and imported with ``xai.from_torch``; each
method runs on ``--rows`` rows with xai-core on the ``cpu`` backend (float32) and with
Captum on the torch module, at 1 thread, interleaved, medians of ``--repeats``. Prints
each method's times, the ratio (Captum's time over ours: above 1 is faster than Captum)
and the largest difference between the two attributions.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _pinning import interleaved, pinned

import xai_core as xai


def build(rows: int):
    """The torch CNN, its imported network and inputs."""
    import torch

    torch.manual_seed(0)
    module = torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(16 * 7 * 7, 10),
    ).eval()
    X = torch.rand(rows, 1, 28, 28, generator=torch.Generator().manual_seed(1))
    return module, xai.from_torch(module, X), X


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rows", type=int, default=32)
    parser.add_argument("--steps", type=int, default=16)
    args = parser.parse_args()
    import torch
    from captum import attr

    module, net, X = build(args.rows)
    target = np.arange(args.rows) % 10
    t = torch.tensor(target)
    x = X.numpy()
    backend = xai.get_backend("cpu")
    conv2 = module[3]
    cases = {
        "gradcam": (
            dict(layer=3),
            lambda: attr.LayerGradCam(module, conv2).attribute(X, target=t),
            lambda e: e.meta["layer_attribution"],
        ),
        "guided_backprop": (
            {},
            lambda: attr.GuidedBackprop(module).attribute(X, target=t),
            lambda e: e.values,
        ),
        "guided_gradcam": (
            dict(layer=3),
            lambda: attr.GuidedGradCam(module, conv2).attribute(X, target=t),
            lambda e: e.values,
        ),
        "layer_ig": (
            dict(layer=3, n_steps=args.steps),
            lambda: attr.LayerIntegratedGradients(module, conv2).attribute(
                X, target=t, n_steps=args.steps
            ),
            lambda e: e.values,
        ),
        "layer_conductance": (
            dict(layer=3, n_steps=args.steps),
            lambda: attr.LayerConductance(module, conv2).attribute(X, target=t, n_steps=args.steps),
            lambda e: e.values,
        ),
        "neuron_conductance": (
            dict(layer=3, neuron_selector=(2, 5, 5), n_steps=args.steps),
            lambda: attr.NeuronConductance(module, conv2).attribute(
                X, (2, 5, 5), target=t, n_steps=args.steps
            ),
            lambda e: e.values,
        ),
    }
    print(f"{args.rows} rows of 1x28x28, {args.steps} steps, 1 thread, medians of {args.repeats}")
    print(f"{'method':<20}{'xai-core s':>12}{'Captum s':>12}{'ratio':>8}{'max |diff|':>13}")
    with pinned(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method, (options, captum, pick) in cases.items():

            def ours(method=method, options=options):
                return xai.explain(net, x, method=method, backend=backend, target=target, **options)

            def theirs(captum=captum):
                with torch.enable_grad():
                    return captum()

            (t_ours, e), (t_theirs, ref) = interleaved(ours, theirs, repeats=args.repeats)
            diff = float(np.abs(pick(e) - ref.detach().numpy()).max())
            print(
                f"{method:<20}{t_ours:>12.4f}{t_theirs:>12.4f}{t_theirs / t_ours:>8.2f}"
                f"{diff:>13.2e}"
            )


if __name__ == "__main__":
    main()
