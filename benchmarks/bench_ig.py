"""Integrated gradients on an MNIST MLP: xai-core against Captum, and attributions per second per backend.

Run from the repository root::

    python benchmarks/bench_ig.py [--repeats 7] [--rows 100] [--steps 64] [--threads N]

1. Trains a small MLP (784-128-64-10, ReLU, softmax) on the bundled MNIST sample.
2. Explains ``--rows`` test digits with ``--steps`` Gauss-Legendre steps from a zero
   baseline, on the ``cpu`` backend, and the same computation with Captum on a PyTorch
   network holding the same weights, at the same nodes: both timed in this one run
   (median of ``--repeats``), printed as a ratio, with the largest difference between
   the attributions, in float32 and in float64.
3. Times the same explanation on every registered backend with gradients, printing
   attributions (rows) per second, gradient points per second and the convergence
   delta each backend reports.

The Captum part is skipped, with a message, when torch or captum is not installed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import xai_core as xai


def median_seconds(*fns: Callable[[], Any], repeats: int) -> list[tuple[float, Any]]:
    """Median wall time of each function over ``repeats`` rounds, and its last result.

    Every function runs once to warm up; then each round calls them one after the other,
    so a change of machine load during the run touches all of them alike.
    """
    results = [fn() for fn in fns]
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            results[i] = fn()
            times[i].append(time.perf_counter() - start)
    return [(statistics.median(t), r) for t, r in zip(times, results)]


def train_mlp(seed: int = 0):
    """A 784-128-64-10 MLP trained briefly on the bundled MNIST sample; also returns test rows."""
    from xai_core import nn
    from xai_datasets import load_mnist

    train, test = load_mnist("train"), load_mnist("test")
    net = nn.Sequential(
        [nn.Dense(128), nn.ReLU(), nn.Dense(64), nn.ReLU(), nn.Dense(10), nn.Softmax()],
        input_shape=(784,),
        seed=seed,
    )
    net.fit(
        train.X,
        train.y,
        optimizer="adam",
        learning_rate=1e-3,
        batch_size=32,
        epochs=5,
        seed=seed,
        progress=False,
    )
    accuracy = float((net.predict(test.X).argmax(1) == test.y).mean())
    return net, test.X, accuracy


def dense_weights(net) -> list[tuple[np.ndarray, np.ndarray]]:
    """(weight, bias) of each Dense layer, weight of shape (n_in, units)."""
    return [
        (np.asarray(layer.weight), np.asarray(layer.bias))
        for layer in net.layers
        if hasattr(layer, "units")
    ]


def captum_section(net, X: np.ndarray, target: np.ndarray, steps: int, repeats: int) -> None:
    """xai-core's IG against Captum's at the same nodes, same weights, timed in alternation."""
    try:
        import captum
        import torch
        from captum.attr import IntegratedGradients as CaptumIG
    except ImportError as exc:
        print(
            f"\n[captum] skipped: {exc}. Install torch and captum to compare (pip install torch captum)."
        )
        return
    layers: list[Any] = []
    weights = dense_weights(net)
    for i, (w, b) in enumerate(weights):
        linear = torch.nn.Linear(w.shape[0], w.shape[1])
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(np.ascontiguousarray(w.T, dtype=np.float32)))
            linear.bias.copy_(torch.from_numpy(np.asarray(b, dtype=np.float32)))
        last = i == len(weights) - 1
        layers += [linear, torch.nn.Softmax(dim=1) if last else torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).eval()
    print(
        f"\n[captum] torch {torch.__version__}, captum {captum.__version__}, "
        f"{torch.get_num_threads()} torch thread(s); median of {repeats}, run in alternation"
    )
    for dtype_name, torch_dtype in [("float32", torch.float32), ("float64", torch.float64)]:
        ig = CaptumIG(model.to(torch_dtype))
        inputs = torch.from_numpy(X).to(torch_dtype)
        tgt = torch.from_numpy(target)
        backend = xai.get_backend("cpu", dtype=dtype_name)

        def run_ours(backend=backend):
            return xai.explain(net, X, method="ig", backend=backend, steps=steps, target=target)

        def run_captum(ig=ig, inputs=inputs, tgt=tgt):
            attr, delta = ig.attribute(
                inputs,
                baselines=torch.zeros_like(inputs),
                target=tgt,
                n_steps=steps,
                method="gausslegendre",
                return_convergence_delta=True,
            )
            return attr.detach().numpy(), delta.detach().numpy()

        (t_ours, e), (t_captum, (attr, delta)) = median_seconds(
            run_ours, run_captum, repeats=repeats
        )
        diff = np.abs(e.values - attr).max()
        scale = np.abs(attr).max()
        print(
            f"  {dtype_name}: xai-core {t_ours * 1e3:8.1f} ms   captum {t_captum * 1e3:8.1f} ms   "
            f"captum / xai-core = {t_captum / t_ours:5.2f}x"
        )
        print(
            f"           max |xai-core - captum| = {diff:.2e} (max |attribution| {scale:.3f}; "
            f"{'within' if diff <= 1e-5 else 'NOT within'} 1e-5)   "
            f"median |delta| xai-core {np.median(np.abs(e.meta['convergence_delta'])):.2e}, "
            f"captum {np.median(np.abs(delta)):.2e}"
        )


def backends_section(net, X: np.ndarray, target: np.ndarray, steps: int, repeats: int) -> None:
    print(
        f"\n[backends] {len(X)} rows x {steps} Gauss-Legendre steps, median of {repeats}; rows/s and "
        "points/s are wall-clock rates of the simulation here, 'simulated s' the backend's estimate "
        "of one run on its hardware"
    )
    print(
        f"  {'backend':<10} {'rows/s':>9} {'points/s':>10} {'median|delta|':>14} {'max|delta|':>11} "
        f"{'max|attr - cpu|':>16} {'simulated s':>12}"
    )
    reference = None
    for name in xai.list_backends():
        try:
            backend = xai.get_backend(name)
        except Exception as exc:  # noqa: BLE001 - one backend's failure is reported, the rest still run
            print(f"  {name:<10} could not be built: {exc}")
            continue
        if not backend.supports_gradients:
            print(f"  {name:<10} no gradients (inference only)")
            continue
        runner = xai.ModelRunner(net, backend=backend)

        def run(runner=runner):
            runner.reset_counters()
            return xai.explain(runner, X, method="ig", steps=steps, target=target)

        [(seconds, e)] = median_seconds(run, repeats=repeats)
        if reference is None:
            reference = e.values
        delta = np.abs(e.meta["convergence_delta"])
        print(
            f"  {name:<10} {len(X) / seconds:9.0f} {len(X) * steps / seconds:10.0f} {np.median(delta):14.2e} "
            f"{delta.max():11.2e} {np.abs(e.values - reference).max():16.2e} "
            f"{runner.counters.get('est_seconds', float('nan')):12.4g}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="BLAS and torch threads for both sides (default: each library's own choice)",
    )
    args = parser.parse_args(argv)
    if args.threads is not None:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads)
        try:
            import torch

            torch.set_num_threads(args.threads)
        except ImportError:
            pass
    try:
        from xai_core.nn import Sequential  # noqa: F401
    except ImportError as exc:
        print(f"bench_ig: skipped, the native networks (xai_core.nn) are not available: {exc}")
        return 0
    start = time.perf_counter()
    net, X_test, accuracy = train_mlp()
    X = np.ascontiguousarray(X_test[: args.rows], dtype=np.float32)
    target = net.predict(X).argmax(1).astype(np.int64)
    print(
        f"MLP 784-128-64-10 trained in {time.perf_counter() - start:.1f} s, test accuracy {accuracy:.3f}; "
        f"IG of {len(X)} digits, {args.steps} Gauss-Legendre steps, zero baseline"
    )

    captum_section(net, X, target, args.steps, args.repeats)
    backends_section(net, X, target, args.steps, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
