"""The CPU backend against the same arithmetic written directly in numpy, and training against scikit-learn.

Run from the repository root::

    python benchmarks/bench_cpu.py [--repeats 7] [--threads 1] [--clock cpu] [--data ../shared/data]

On the 10,000 MNIST images of ``<data>/mnist-sample`` (train and test together), in fp32:

1. ``forward``: ``ModelRunner(net, "cpu").predict(X)`` (validation, chunks of 4,096 rows,
   every matmul, elementwise op and reduction through the backend and counted; the
   network checks each chunk again) and ``net.predict(X, backend)`` (one check) against
   the same products, bias adds, ReLU and softmax written in numpy, for an MLP
   784-128-10 and a CNN (3x3 convolutions of 8 and 16 filters, 2x2 max pools, im2col).
2. ``gradient``: ``runner.gradient(X, target)``, d probability[target] / d X per row,
   against the hand-written numpy backward pass of the MLP.
3. ``training``: ``net.fit`` against ``sklearn.neural_network.MLPClassifier`` with the same
   hidden size (128), optimiser (Adam, learning rate 1e-3), batch size (200) and epochs,
   as samples per second.

Each pair runs alternately, one warm-up first, ``--repeats`` times; the script prints the
medians and the median of the paired ratios (ours / reference: below 1 is faster). The
goal for forward and gradient is a ratio of at most 1.15. ``--threads`` caps the BLAS
threads of both sides (a shared machine makes multithreaded BLAS timings erratic).
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

import xai_core as xai
from xai_core.backends.cpu import CPUBackend

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CHUNK = 4096


def read_idx(path: Path, header: int) -> np.ndarray:
    """The uint8 payload of a gzipped IDX file after its header."""
    return np.frombuffer(gzip.decompress(path.read_bytes()), dtype=np.uint8, offset=header)


def load_mnist_10k(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    """All 10,000 images of the sample as float32 (n, 784) in [0, 1], with int64 labels."""
    X, y = [], []
    for split in ("train", "t10k"):
        X.append(read_idx(folder / f"{split}-images-idx3-ubyte.gz", 16).reshape(-1, 784))
        y.append(read_idx(folder / f"{split}-labels-idx1-ubyte.gz", 8))
    return (np.concatenate(X).astype(np.float32) / 255).astype(np.float32), np.concatenate(
        y
    ).astype(np.int64)


# -- the references: the same arithmetic, straight numpy -------------------------------------


def numpy_softmax(z: np.ndarray) -> np.ndarray:
    """Row softmax, the same steps as the Softmax layer."""
    e = np.exp(z - z.max(axis=1)[:, None])
    return e / e.sum(axis=1)[:, None]


def numpy_mlp_forward(X, W1, b1, W2, b2):
    """784-128-10 ReLU MLP with softmax, in chunks of 4,096 rows like the runner."""
    out = []
    for s in range(0, len(X), CHUNK):
        h = np.maximum(X[s : s + CHUNK] @ W1 + b1, 0)
        out.append(numpy_softmax(h @ W2 + b2))
    return np.concatenate(out)


def numpy_mlp_gradient(X, target, W1, b1, W2, b2):
    """d softmax(...)[target] / d X by hand: one forward pass, one backward pass per chunk."""
    out = []
    for s in range(0, len(X), CHUNK):
        x, t = X[s : s + CHUNK], target[s : s + CHUNK]
        h = x @ W1 + b1
        a = np.maximum(h, 0)
        p = numpy_softmax(a @ W2 + b2)
        g = np.zeros_like(p)
        g[np.arange(len(t)), t] = 1
        gz = p * (g - (g * p).sum(axis=1)[:, None])
        ga = gz @ W2.T
        out.append((ga * (h > 0)) @ W1.T)
    return np.concatenate(out)


def numpy_im2col(x: np.ndarray, k: int, pad: int) -> np.ndarray:
    """Stride-1 k x k columns of NCHW images, one block copy per kernel offset."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - k + 1, w + 2 * pad - k + 1
    cols = np.empty((c, k, k, n, oh, ow), dtype=x.dtype)
    for i in range(k):
        for j in range(k):
            cols[:, i, j] = xp[:, :, i : i + oh, j : j + ow].transpose(1, 0, 2, 3)
    return cols.reshape(c * k * k, n * oh * ow).T


def numpy_max_pool2(x: np.ndarray) -> np.ndarray:
    """2x2 / stride 2 max pool as the maximum of the four strided slices."""
    return np.maximum(
        np.maximum(x[:, :, 0::2, 0::2], x[:, :, 0::2, 1::2]),
        np.maximum(x[:, :, 1::2, 0::2], x[:, :, 1::2, 1::2]),
    )


def numpy_cnn_forward(X, params):
    """Reshape, conv 8, ReLU, pool, conv 16, ReLU, pool, flatten, dense 10, softmax."""
    (C1, c1), (C2, c2), (W, b) = params
    out = []
    for s in range(0, len(X), CHUNK):
        x = X[s : s + CHUNK].reshape(-1, 1, 28, 28)
        for C, c in ((C1, c1), (C2, c2)):
            n, _, h, w = x.shape
            y = numpy_im2col(x, 3, 1) @ C.reshape(len(C), -1).T
            y = np.ascontiguousarray(y.reshape(n, h * w, len(C)).transpose(0, 2, 1)) + c[:, None]
            x = numpy_max_pool2(np.maximum(y.reshape(n, len(C), h, w), 0))
        out.append(numpy_softmax(x.reshape(len(x), -1) @ W + b))
    return np.concatenate(out)


# -- timing ------------------------------------------------------------------------------------


CLOCK = time.perf_counter


def paired(
    ours: Callable[[], object], ref: Callable[[], object], repeats: int
) -> tuple[float, float, float]:
    """Median seconds of each and the median of the paired ratios, alternating runs after a warm-up."""
    ours(), ref()
    t_ours, t_ref, ratios = [], [], []
    for _ in range(repeats):
        t0 = CLOCK()
        ours()
        t1 = CLOCK()
        ref()
        t2 = CLOCK()
        t_ours.append(t1 - t0)
        t_ref.append(t2 - t1)
        ratios.append((t1 - t0) / (t2 - t1))
    return statistics.median(t_ours), statistics.median(t_ref), statistics.median(ratios)


def report(name: str, ours: float, ref: float, ratio: float, ref_name: str = "numpy") -> None:
    print(
        f"{name:<22} ours {ours * 1000:9.1f} ms   {ref_name} {ref * 1000:9.1f} ms   ratio {ratio:5.3f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--threads", type=int, default=None, help="cap BLAS threads (default: library's)"
    )
    parser.add_argument("--epochs", type=int, default=3, help="training epochs per timed run")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall time, or this process's CPU time (steadier on a busy machine; use with --threads 1)",
    )
    args = parser.parse_args(argv)
    global CLOCK
    CLOCK = time.perf_counter if args.clock == "wall" else time.process_time
    folder = args.data.resolve() / "mnist-sample"
    if not folder.is_dir():
        print(f"skipped: MNIST sample not found at {folder}")
        return 0
    if args.threads is not None:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads)
    X, y = load_mnist_10k(folder)
    print(
        f"{len(X):,} MNIST images, fp32, BLAS threads: {args.threads or 'default'}, "
        f"repeats: {args.repeats}, clock: {args.clock}"
    )
    nn = xai.nn

    mlp = nn.mlp(784, (128,), 10, activation="relu")
    runner = xai.ModelRunner(mlp, backend=CPUBackend())
    W1, b1, W2, b2 = (p for layer in mlp if layer.params for p in layer.params.values())
    np.testing.assert_allclose(
        runner.predict(X[:100]), numpy_mlp_forward(X[:100], W1, b1, W2, b2), rtol=1e-5, atol=1e-6
    )
    report(
        "MLP forward",
        *paired(
            lambda: runner.predict(X), lambda: numpy_mlp_forward(X, W1, b1, W2, b2), args.repeats
        ),
    )
    report(
        "  net.predict",  # without the runner: X is validated once instead of twice
        *paired(
            lambda: mlp.predict(X, runner.backend),
            lambda: numpy_mlp_forward(X, W1, b1, W2, b2),
            args.repeats,
        ),
    )
    target = mlp.predict(X).argmax(axis=1)
    np.testing.assert_allclose(
        runner.gradient(X[:100], target[:100]),
        numpy_mlp_gradient(X[:100], target[:100], W1, b1, W2, b2),
        rtol=1e-4,
        atol=1e-6,
    )
    report(
        "MLP gradient",
        *paired(
            lambda: runner.gradient(X, target),
            lambda: numpy_mlp_gradient(X, target, W1, b1, W2, b2),
            args.repeats,
        ),
    )
    runner.reset_counters()
    runner.predict(X)
    c = runner.counters
    print(
        f"{'':<22} counted per forward pass: {c['macs']:,.0f} MACs, {c['bytes_read'] / 1e9:.2f} GB read, "
        f"{c['cycles']:,.0f} cycles = {c['est_seconds'] * 1000:.1f} ms at 3 GHz x 8 lanes"
    )

    cnn = nn.cnn()
    cnn_runner = xai.ModelRunner(cnn, backend=CPUBackend())
    params = [(layer.weight, layer.bias) for layer in cnn if layer.params]
    np.testing.assert_allclose(
        cnn_runner.predict(X[:50]), numpy_cnn_forward(X[:50], params), rtol=1e-4, atol=1e-6
    )
    report(
        "CNN forward",
        *paired(lambda: cnn_runner.predict(X), lambda: numpy_cnn_forward(X, params), args.repeats),
    )

    from sklearn.neural_network import MLPClassifier

    epochs = args.epochs

    def ours_fit():
        nn.mlp(784, (128,), 10, activation="relu").fit(
            X,
            y,
            optimizer="adam",
            learning_rate=1e-3,
            batch_size=200,
            epochs=epochs,
            progress=False,
        )

    def sklearn_fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            MLPClassifier(
                hidden_layer_sizes=(128,),
                solver="adam",
                learning_rate_init=1e-3,
                batch_size=200,
                max_iter=epochs,
                alpha=0.0,
                tol=0.0,
                n_iter_no_change=epochs + 1,
                shuffle=True,
                random_state=0,
            ).fit(X, y)

    t_ours, t_sk, ratio = paired(ours_fit, sklearn_fit, max(3, args.repeats // 2))
    rate_ours, rate_sk = len(X) * epochs / t_ours, len(X) * epochs / t_sk
    print(
        f"{'MLP training':<22} ours {rate_ours:9,.0f} samples/s   sklearn {rate_sk:9,.0f} samples/s   "
        f"time ratio {ratio:5.3f} ({epochs} epochs, batch 200, Adam)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
