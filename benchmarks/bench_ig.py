"""Integrated gradients on an MNIST MLP: xai-core against Captum, the floor, and attributions per second per backend.

Run from the repository root::

    python benchmarks/bench_ig.py [--repeats 9] [--rows 100] [--steps 64]

1. Trains scikit-learn's ``MLPClassifier`` 784-64-32-10 (ReLU, softmax) on the bundled
   MNIST sample and converts it with ``xai.from_sklearn``.
2. ``[headline]``: explains ``--rows`` test digits with ``--steps`` Gauss-Legendre steps
   from a zero baseline on the ``cpu`` backend, and the same computation with Captum on a
   PyTorch network holding the same weights, at the same nodes, at 1 and at 2 threads
   (numpy's BLAS and torch pinned), interleaved, medians of ``--repeats``. The floor is
   the time of the products IG cannot avoid on the affine-first-layer path: the first
   layer at the rows and the baseline, every later layer forward and backward at every
   path point, and one backward product through the first layer per path.
3. The largest difference between the attributions, in float32 and in float64.
4. Times the same explanation on every registered backend with gradients, printing
   attributions (rows) per second, gradient points per second and the convergence
   delta each backend reports.

The Captum part is skipped, with a message, when torch or captum is not installed
(``pip install -e '.[bench]'`` installs them).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from _pinning import THREADS, headline_header, headline_row, interleaved, pinned

import xai_core as xai


def train_mlp(seed: int = 0):
    """scikit-learn's MLP 784-64-32-10 on the bundled MNIST sample, as a native network; also test rows."""
    from sklearn.neural_network import MLPClassifier

    from xai_datasets import load_mnist

    train, test = load_mnist("train"), load_mnist("test")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short fit: the convergence warning is expected
        clf = MLPClassifier((64, 32), max_iter=30, random_state=seed).fit(train.X, train.y)
    net = xai.from_sklearn(clf, dtype="float32")
    accuracy = float((net.predict(test.X).argmax(1) == test.y).mean())
    return net, test.X, accuracy


def dense_weights(net) -> list[tuple[np.ndarray, np.ndarray]]:
    """(weight, bias) of each Dense layer, weight of shape (n_in, units)."""
    return [
        (np.asarray(layer.weight), np.asarray(layer.bias))
        for layer in net.layers
        if hasattr(layer, "units")
    ]


def torch_copy(net) -> Any:
    """The network in torch: Linear layers with the same weights, ReLU between, softmax last."""
    import torch

    layers: list[Any] = []
    weights = dense_weights(net)
    for i, (w, b) in enumerate(weights):
        linear = torch.nn.Linear(w.shape[0], w.shape[1])
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(np.ascontiguousarray(w.T, dtype=np.float32)))
            linear.bias.copy_(torch.from_numpy(np.asarray(b, dtype=np.float32)))
        last = i == len(weights) - 1
        layers += [linear, torch.nn.Softmax(dim=1) if last else torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).eval()


def floor_products(net, n: int, steps: int) -> Callable[[], None]:
    """The products IG cannot avoid on the affine path, in float32 numpy into preallocated outputs.

    The first layer at the ``n`` rows and the baseline, each later layer forward and
    backward (input gradient) at the ``n * steps`` path points, and one backward product
    through the first layer per path.
    """
    rng = np.random.default_rng(0)
    (w1, _), *rest = dense_weights(net)
    w1 = w1.astype(np.float32)
    points = n * steps
    jobs = [
        (rng.random((n, w1.shape[0]), dtype=np.float32), w1),
        (rng.random((1, w1.shape[0]), dtype=np.float32), w1),
    ]
    for w, _ in rest:
        w = w.astype(np.float32)
        jobs.append((rng.random((points, w.shape[0]), dtype=np.float32), w))
        jobs.append((rng.random((points, w.shape[1]), dtype=np.float32), np.ascontiguousarray(w.T)))
    jobs.append((rng.random((n, w1.shape[1]), dtype=np.float32), np.ascontiguousarray(w1.T)))
    outs = [np.empty((a.shape[0], b.shape[1]), dtype=np.float32) for a, b in jobs]

    def run() -> None:
        for (a, b), out in zip(jobs, outs):
            np.matmul(a, b, out=out)

    return run


def captum_section(net, X: np.ndarray, target: np.ndarray, steps: int, repeats: int) -> None:
    """xai-core's IG against Captum's at the same nodes and weights, and the floor, at 1 and 2 threads."""
    try:
        import captum
        import torch
        from captum.attr import IntegratedGradients as CaptumIG
    except ImportError as exc:
        print(
            f"\n[captum] skipped: {exc}. Install torch and captum to compare (pip install -e '.[bench]')."
        )
        return
    model = torch_copy(net)
    headline_header(
        f"torch {torch.__version__}, captum {captum.__version__}; IG of {len(X)} MNIST digits, "
        f"MLP 784-64-32-10 (from_sklearn), {steps} Gauss-Legendre steps, zero baseline, float32; "
        f"medians of {repeats}, interleaved"
    )
    work = f"IG {len(X)} rows x {steps} steps vs Captum"
    floor = floor_products(net, len(X), steps)
    accuracy: list[str] = []
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

        if dtype_name == "float32":
            for threads in THREADS:
                with pinned(threads):
                    (t_ours, e), (t_captum, (attr, delta)), (t_floor, _) = interleaved(
                        run_ours, run_captum, floor, repeats=repeats
                    )
                headline_row(work, threads, t_captum, t_ours, t_floor)
        else:
            with pinned(1):
                (t_ours, e), (t_captum, (attr, delta)) = interleaved(
                    run_ours, run_captum, repeats=max(1, repeats // 3)
                )
        diff = np.abs(e.values - attr).max()
        accuracy.append(
            f"  {dtype_name}: max |xai-core - captum| = {diff:.2e} (max |attribution| "
            f"{np.abs(attr).max():.3f}; {'within' if diff <= 1e-5 else 'NOT within'} 1e-5); median "
            f"|delta| xai-core {np.median(np.abs(e.meta['convergence_delta'])):.2e}, captum "
            f"{np.median(np.abs(delta)):.2e}; {threads if dtype_name == 'float32' else 1} thread(s): "
            f"xai-core {t_ours * 1e3:.2f} ms, captum {t_captum * 1e3:.2f} ms"
        )
    print(
        "  ('floor': the unavoidable products alone, numpy float32 matmuls into preallocated outputs)"
    )
    print("\n[accuracy] the same attributions in float32 and float64")
    print("\n".join(accuracy))


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

        [(seconds, e)] = interleaved(run, repeats=repeats)
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
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--steps", type=int, default=64)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    net, X_test, accuracy = train_mlp()
    X = np.ascontiguousarray(X_test[: args.rows], dtype=np.float32)
    target = net.predict(X).argmax(1).astype(np.int64)
    print(
        f"MLP 784-64-32-10 (scikit-learn, via from_sklearn) trained in {time.perf_counter() - start:.1f} s, "
        f"test accuracy {accuracy:.3f}; IG of {len(X)} digits, {args.steps} Gauss-Legendre steps, "
        "zero baseline"
    )

    captum_section(net, X, target, args.steps, args.repeats)
    with pinned(1):
        backends_section(net, X, target, args.steps, max(1, args.repeats // 3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
