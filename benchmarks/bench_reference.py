"""DeepLift, DeepLiftShap, GradientShap, InputXGradient and LRP: xai-core against Captum on resnet18.

Run from the repository root::

    python benchmarks/bench_reference.py [--repeats 5] [--rows 4] [--size 64]

torchvision's resnet18 with random weights (10 classes) on ``--size`` px RGB images, built
in torch and imported with ``xai.from_torch``; each method runs on ``--rows`` rows with
xai-core on the ``cpu`` backend (float32) and with Captum on the torch module, at 1 and 2
threads, interleaved, medians of ``--repeats``. Prints each method's times, the ratio
(Captum's time over ours: above 1 is faster than Captum) and the largest difference
between the two attributions.

Captum's DeepLift needs each nonlinear module used once and not in place, so every basic
block gets its second ReLU module (the same function), and a ``x + 0`` module separates
the stem's ReLU from its max pooling (Captum issue #1104: a nonlinear module feeding
another directly sees a stale gradient). Captum's LRP gives the batch norms their own
rule, which the import folds into the convolutions, so its row compares times only.
"""

from __future__ import annotations

import argparse
import types
import warnings

import numpy as np
from _pinning import THREADS, interleaved, machine_note, pinned

import xai_core as xai


def _block_forward(self, x):
    """torchvision's BasicBlock.forward with its second ReLU a module of its own."""
    identity = x
    out = self.relu(self.bn1(self.conv1(x)))
    out = self.bn2(self.conv2(out))
    if self.downsample is not None:
        identity = self.downsample(x)
    return self.relu2(out + identity)


def build(rows: int, size: int):
    """resnet18 made Captum-ready, its imported network and inputs."""
    import torch
    import torchvision

    class Plus0(torch.nn.Module):
        def forward(self, x):
            return x + 0

    torch.manual_seed(0)
    module = torchvision.models.resnet18(weights=None, num_classes=10).eval()
    module.relu = torch.nn.ReLU()
    module.maxpool = torch.nn.Sequential(Plus0(), module.maxpool)
    for block in module.modules():
        if isinstance(block, torchvision.models.resnet.BasicBlock):
            block.relu = torch.nn.ReLU()
            block.relu2 = torch.nn.ReLU()
            block.forward = types.MethodType(_block_forward, block)
    X = torch.rand(rows, 3, size, size, generator=torch.Generator().manual_seed(1))
    return module, xai.from_torch(module, X), X


def _captum_lrp(attr, module, X, t):
    """Captum's LRP, the ``x + 0`` module passing relevance through (IdentityRule)."""
    from captum.attr._utils.lrp_rules import IdentityRule

    module.maxpool[0].rule = IdentityRule()
    return attr.LRP(module).attribute(X, target=t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rows", type=int, default=4)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--samples", type=int, default=5)
    args = parser.parse_args()
    import torch
    from captum import attr

    module, net, X = build(args.rows, args.size)
    target = np.arange(args.rows) % 10
    t = torch.tensor(target)
    x = X.numpy()
    backend = xai.get_backend("cpu")
    B = 0.1 * torch.randn(3, *X.shape[1:], generator=torch.Generator().manual_seed(2))
    zero = torch.zeros_like(X)
    n = args.samples
    cases = {
        "input_x_gradient": ({}, lambda: attr.InputXGradient(module).attribute(X, target=t)),
        "deeplift": ({}, lambda: attr.DeepLift(module).attribute(X, zero, target=t)),
        "deeplift_shap": (
            dict(baselines=B.numpy()),
            lambda: attr.DeepLiftShap(module).attribute(X, B, target=t),
        ),
        "gradient_shap": (
            dict(baselines=B.numpy(), n_samples=n, stdevs=0.1),
            lambda: attr.GradientShap(module).attribute(X, B, target=t, n_samples=n, stdevs=0.1),
        ),
        "lrp": ({}, lambda: _captum_lrp(attr, module, X, t)),
    }
    print(f"resnet18 (random weights), {args.rows} rows of 3x{args.size}x{args.size}, "
          f"medians of {args.repeats}; {machine_note()}")  # fmt: skip
    print(
        f"{'method':<18}{'threads':>8}{'xai-core s':>12}{'Captum s':>12}{'ratio':>8}"
        f"{'max |diff|':>13}"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method, (options, captum) in cases.items():
            for threads in THREADS:

                def ours(method=method, options=options):
                    return xai.explain(
                        net, x, method=method, backend=backend, target=target, **options
                    )

                def theirs(captum=captum):
                    with torch.enable_grad():
                        return captum()

                with pinned(threads):
                    (t_ours, e), (t_theirs, ref) = interleaved(ours, theirs, repeats=args.repeats)
                diff = float(np.abs(e.values - ref.detach().numpy()).max())
                note = "" if method not in ("lrp", "gradient_shap") else "  (times only)"
                print(
                    f"{method:<18}{threads:>8}{t_ours:>12.4f}{t_theirs:>12.4f}"
                    f"{t_theirs / t_ours:>8.2f}{diff:>13.2e}{note}"
                )


if __name__ == "__main__":
    main()
