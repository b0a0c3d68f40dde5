"""The zoo's CNNs at 224 px on every backend: the forward pass a perturbation method runs.

Run from the repository root::

    python benchmarks/bench_zoo_backends.py [--models resnet18 mobilenet_v2] [--rows 50]

LIME, SHAP and occlusion explain an image by running the network on many perturbed copies;
``compare_backends`` does so on each backend. This times that forward pass: torchvision's
classifiers (random weights, 1,000 classes) imported with ``xai.from_torch``, on ``--rows``
RGB images of 224 x 224 in one call, on ``cpu`` (float32), ``gpu`` (fp32 in K-tile order),
``tpu`` (bf16 operands) and ``edgetpu`` (the int8 network ``xai.quantize`` makes,
calibrated on the rows), against torch's own forward of the module (the anchor) at 1 and 2
threads, interleaved, medians of ``--repeats``. The floor is the network's multiply-adds
at the rate this machine's BLAS reaches on a large float32 product at the same thread
count. The simulated backends do what their hardware does on top of that (rounding every
operand, summing in tile order, exact integer products and requantisation) and count it.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _pinning import THREADS, headline_header, headline_row, interleaved, pinned
from bench_zoo_gradients import build, gemm_rate

import xai_core as xai

BACKENDS = ("cpu", "gpu", "tpu", "edgetpu")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", type=int, default=50)
    parser.add_argument("--models", nargs="+", default=["resnet18", "mobilenet_v2"])
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS))
    args = parser.parse_args()
    import torch

    rates = {threads: gemm_rate(threads) for threads in THREADS}
    headline_header(
        f"forward of {args.rows} images at 224 px on each backend against torch's forward "
        "(the anchor)"
    )
    for name in args.models:
        module, net, X = build(name, args.rows, 224)
        x = X.numpy()
        int8 = xai.quantize(net, x) if "edgetpu" in args.backends else None
        for threads in THREADS:
            runners = {
                b: xai.ModelRunner(int8 if b == "edgetpu" else net, b) for b in args.backends
            }

            def torch_forward(module=module, X=X):
                with torch.no_grad():
                    return module(X).numpy()

            calls = [torch_forward] + [
                (lambda r=r, x=x: r.predict(x)) for r in runners.values()
            ]  # fmt: skip
            with pinned(threads), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                timed = interleaved(*calls, repeats=args.repeats)
            (anchor, reference), rest = timed[0], timed[1:]
            floor = net.macs_per_sample * len(x) / rates[threads]
            for backend, (seconds, out) in zip(runners, rest):
                diff = np.abs(out - reference).max() / np.abs(reference).max()
                note = f"{1e3 * seconds / len(x):.0f} ms a row; max |diff| {diff:.1e}"
                headline_row(f"{name} on {backend}", threads, anchor, seconds, floor, note)


if __name__ == "__main__":
    main()
