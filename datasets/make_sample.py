"""Regenerate the samples bundled in xai_datasets/data/ from the shared IDX files.

Usage (from the repository root, with xai-core installed)::

    python datasets/make_sample.py [--source ../shared/data] [--target DIR]

For MNIST (``mnist-sample/``) and Fashion-MNIST (``fashion-mnist/``) it verifies the
source files against their SHA256SUMS, keeps the first 200 training and the first 50 test
images of each class in file order (the source files are already shuffled with a fixed
seed, so this is a balanced, deterministic sample), writes them with ``write_idx`` as
gzip (no time stamp, so reruns give identical bytes) and writes a new SHA256SUMS.
This script is not part of the installed package.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np

from xai_datasets import read_idx, write_idx

HERE = Path(__file__).resolve().parent
DEFAULT_SOURCE = HERE.parent.parent / "shared" / "data"
TARGET = HERE / "xai_datasets" / "data"
#: bundled folder -> source folder
DATASETS = {"mnist": "mnist-sample", "fashion-mnist": "fashion-mnist"}
PER_CLASS = {"train": 200, "t10k": 50}
N_CLASSES = 10


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def verify(folder: Path) -> None:
    for line in (folder / "SHA256SUMS").read_text().splitlines():
        if line.strip():
            digest, name = line.split()
            if sha256(folder / name) != digest:
                sys.exit(f"{folder / name}: SHA-256 does not match SHA256SUMS")


def pick(labels: np.ndarray, per_class: int) -> np.ndarray:
    """Indices of the first ``per_class`` rows of each class, in file order."""
    keep = np.concatenate([np.flatnonzero(labels == c)[:per_class] for c in range(N_CLASSES)])
    if len(keep) != per_class * N_CLASSES:
        sys.exit(f"not enough images: need {per_class} per class")
    return np.sort(keep)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--target", type=Path, default=TARGET)
    args = parser.parse_args(argv)
    for key, src_name in DATASETS.items():
        src, dst = args.source / src_name, args.target / key
        verify(src)
        names = []
        for prefix, per_class in PER_CLASS.items():
            images = read_idx(src / f"{prefix}-images-idx3-ubyte.gz")
            labels = read_idx(src / f"{prefix}-labels-idx1-ubyte.gz")
            keep = pick(labels, per_class)
            for kind, arr in (("images-idx3", images[keep]), ("labels-idx1", labels[keep])):
                name = f"{prefix}-{kind}-ubyte.gz"
                write_idx(dst / name, arr)
                names.append(name)
        sums = "".join(f"{sha256(dst / n)}  {n}\n" for n in sorted(names))
        (dst / "SHA256SUMS").write_text(sums)
        size = sum((dst / n).stat().st_size for n in names)
        print(f"{key}: {len(names)} files, {size:,} bytes -> {dst}")


if __name__ == "__main__":
    main()
