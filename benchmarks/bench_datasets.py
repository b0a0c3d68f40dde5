"""Loading all 70,000 Fashion-MNIST images against gzip alone inflating the same files.

Run from the repository root::

    python benchmarks/bench_datasets.py [--repeats 9] [--data ../shared/data]

Times, as the median of ``--repeats`` runs after one warm-up run, all in this one process,
the two runs alternating so that both see the same machine load:

1. ``gzip``: reading the four gzipped IDX files of ``<data>/fashion-mnist`` and inflating
   each with ``gzip.decompress``: the least any loader must do.
2. ``load``: ``load_fashion_mnist("train", path=...)`` plus ``("test", path=...)``, which
   also verifies each file's SHA-256 against the folder's SHA256SUMS, checks every IDX
   header field and converts the pixels to float32 in [0, 1] (188 MB for the train split).

and prints the median of the paired ratios ``load / gzip``, with the time of the extra steps measured alone
for reference. It skips, with a message, when the shared data is not there.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
FILES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)


def _seconds(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median_seconds(fn: Callable[[], Any], repeats: int) -> float:
    """Median wall time of ``repeats`` calls after one warm-up call."""
    fn()
    return statistics.median(_seconds(fn) for _ in range(repeats))


def paired_medians(
    a: Callable[[], Any], b: Callable[[], Any], repeats: int
) -> tuple[float, float, float]:
    """Median times of ``a`` and ``b`` run alternately, and the median of the ratios b / a.

    Alternating keeps both under the same machine load, which matters on shared machines.
    """
    a(), b()
    pairs = [(_seconds(a), _seconds(b)) for _ in range(repeats)]
    return (
        statistics.median(p[0] for p in pairs),
        statistics.median(p[1] for p in pairs),
        statistics.median(p[1] / p[0] for p in pairs),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)
    folder = args.data / "fashion-mnist"
    if not all((folder / f).is_file() for f in FILES):
        print(f"SKIP bench_datasets: Fashion-MNIST IDX files not found in {folder}")
        return 0

    from xai_datasets import load_fashion_mnist

    def inflate_only() -> None:
        for name in FILES:
            gzip.decompress((folder / name).read_bytes())

    def load_both() -> None:
        train = load_fashion_mnist("train", path=folder)
        test = load_fashion_mnist("test", path=folder)
        assert len(train) + len(test) == 70_000

    raws = [(folder / name).read_bytes() for name in FILES]
    pixels = np.frombuffer(gzip.decompress(raws[0]), np.uint8, offset=16)

    def sha256_only() -> None:
        for raw in raws:
            hashlib.sha256(raw).hexdigest()

    def convert_only() -> None:
        np.divide(pixels, np.float32(255.0), dtype=np.float32)

    t_gzip, t_load, ratio = paired_medians(inflate_only, load_both, args.repeats)
    t_sha = median_seconds(sha256_only, args.repeats)
    t_conv = median_seconds(convert_only, args.repeats)
    mb_in = sum(len(r) for r in raws) / 1e6
    print(f"Fashion-MNIST, 70,000 images, {mb_in:.1f} MB gzipped; median of {args.repeats}")
    print(f"  gzip.decompress of the 4 files (read + inflate): {t_gzip:8.3f} s")
    print(f"  load_fashion_mnist train + test (path=):        {t_load:8.3f} s")
    print(f"  ratio load / gzip (median of paired runs):      {ratio:8.2f}")
    print("  for reference, measured alone:")
    print(f"    SHA-256 of the 4 gzipped files:               {t_sha:8.3f} s")
    print(f"    uint8 -> float32 / 255, train images:         {t_conv:8.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
