"""MNIST and Fashion-MNIST: the bundled samples and folders of official files."""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from xai_core.errors import DataError, UnknownNameError, ValidationError
from xai_datasets import load_fashion_mnist, load_mnist, read_idx, write_idx

FASHION_NAMES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)
LOADERS = {"mnist": load_mnist, "fashion-mnist": load_fashion_mnist}
FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


@pytest.mark.parametrize(
    ("key", "split", "n"),
    [
        ("mnist", "train", 2000),
        ("mnist", "test", 500),
        ("fashion-mnist", "train", 2000),
        ("fashion-mnist", "test", 500),
    ],
    ids=["mnist-train", "mnist-test", "fashion-train", "fashion-test"],
)
def test_bundled_sample_loads_offline(key: str, split: str, n: int) -> None:
    """With no path or download, a balanced sample loads from the package, no network."""
    ds = LOADERS[key](split)
    assert ds.X.shape == (n, 784) and ds.X.dtype == np.float32
    assert 0.0 <= ds.X.min() and ds.X.max() == 1.0
    assert ds.y.dtype == np.int64 and np.bincount(ds.y).tolist() == [n // 10] * 10
    assert ds.image_shape == (28, 28) and ds.images.shape == (n, 28, 28)
    assert ds.feature_names[0] == "pixel_0_0" and ds.feature_names[-1] == "pixel_27_27"
    assert ds.class_names == (FASHION_NAMES if key == "fashion-mnist" else tuple("0123456789"))
    assert "License:" in ds.description and "sample" in ds.description
    assert ds.license and ds.source


def test_bundled_files_are_small_verified_and_attributed() -> None:
    """The package data (found via importlib.resources) is under 3 MB, checksummed, credited."""
    data = resources.files("xai_datasets") / "data"
    total = 0
    for key in LOADERS:
        folder = data / key
        lines = (folder / "SHA256SUMS").read_text("utf-8").split("\n")
        sums = dict(reversed(line.split()) for line in lines if line.strip())
        assert len(sums) == 4
        for name, digest in sums.items():
            raw = (folder / name).read_bytes()
            total += len(raw)
            assert hashlib.sha256(raw).hexdigest() == digest
    assert total <= 3 * 2**20
    credit = (data / "ATTRIBUTION.md").read_text("utf-8")
    for who in ("LeCun", "Cortes", "Burges", "CC BY-SA 3.0", "Zalando", "MIT", "Juan Cazala"):
        assert who in credit


def test_bundled_train_and_test_samples_do_not_overlap() -> None:
    """No bundled test image also appears in the bundled training images."""
    for load in LOADERS.values():
        train = {row.tobytes() for row in load("train").X}
        assert not any(row.tobytes() in train for row in load("test").X)


@pytest.mark.slow
def test_make_sample_regenerates_the_bundled_files(shared_data: Path, tmp_path: Path) -> None:
    """datasets/make_sample.py rebuilds byte-identical sample files from ../shared/data."""
    script = Path(__file__).resolve().parents[2] / "datasets" / "make_sample.py"
    spec = importlib.util.spec_from_file_location("make_sample", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(["--source", str(shared_data), "--target", str(tmp_path)])
    bundled = resources.files("xai_datasets") / "data"
    for key in LOADERS:
        assert (tmp_path / key / "SHA256SUMS").read_text() == (
            bundled / key / "SHA256SUMS"
        ).read_text("utf-8")


@pytest.mark.slow
def test_path_reads_all_70000_fashion_images_with_checksums(shared_data: Path) -> None:
    """path= reads the four shared Fashion-MNIST files, verified against their SHA256SUMS."""
    folder = shared_data / "fashion-mnist"
    train = load_fashion_mnist("train", path=folder)
    test = load_fashion_mnist(split="test", path=folder)
    assert (len(train), len(test)) == (60000, 10000)
    assert np.bincount(train.y).tolist() == [6000] * 10
    assert np.bincount(test.y).tolist() == [1000] * 10
    assert train.class_names == FASHION_NAMES and test.X.dtype == np.float32
    raw = read_idx(folder / "t10k-images-idx3-ubyte.gz")
    np.testing.assert_array_equal(test.X[:50], raw[:50].reshape(50, -1) / np.float32(255))
    assert "sample" not in train.name


def _link_folder(src: Path, dst: Path, sums: str | None) -> Path:
    dst.mkdir()
    for f in src.glob("*.gz"):
        (dst / f.name).symlink_to(f)
    if sums is not None:
        (dst / "SHA256SUMS").write_text(sums)
    return dst


def test_path_checksum_mismatch_is_an_error(shared_data: Path, tmp_path: Path) -> None:
    """A file that disagrees with the folder's SHA256SUMS is refused, naming the file."""
    src = shared_data / "mnist-sample"
    lines = (src / "SHA256SUMS").read_text().splitlines()
    sums = "".join(
        f"{'0' * 64}  {line.split()[1]}\n" if "train-images" in line else line + "\n"
        for line in lines
    )
    folder = _link_folder(src, tmp_path / "m", sums)
    load_mnist("test", path=folder)  # the test files still verify
    with pytest.raises(DataError, match="train-images-idx3-ubyte.gz: SHA-256 checksum"):
        load_mnist("train", path=folder)


def test_path_with_explicit_sha256_mapping(shared_data: Path, tmp_path: Path) -> None:
    """sha256= checks files in a folder that has no SHA256SUMS."""
    folder = _link_folder(shared_data / "mnist-sample", tmp_path / "m", None)
    bad = {"t10k-labels-idx1-ubyte.gz": "f" * 64}
    with pytest.raises(DataError, match="t10k-labels-idx1-ubyte.gz: SHA-256"):
        load_mnist("test", path=folder, sha256=bad)
    assert len(load_mnist("test", path=folder)) == 2000


def _write_split(folder: Path, split: str, images: np.ndarray, labels: np.ndarray, gz: bool):
    folder.mkdir(exist_ok=True)
    img, lab = FILES[split]
    suffix = ".gz" if gz else ""
    write_idx(folder / (img + suffix), images)
    write_idx(folder / (lab + suffix), labels)


def test_path_reads_uncompressed_and_dotted_names(tmp_path: Path) -> None:
    """Raw IDX files, also named the 'train-images.idx3-ubyte' way, load too."""
    images = np.arange(5 * 784, dtype=np.uint32).astype(np.uint8).reshape(5, 28, 28)
    labels = np.array([0, 1, 2, 3, 9], np.uint8)
    _write_split(tmp_path, "train", images, labels, gz=False)
    (tmp_path / "train-images-idx3-ubyte").rename(tmp_path / "train-images.idx3-ubyte")
    ds = load_mnist(path=tmp_path)
    np.testing.assert_array_equal(ds.y, labels)
    np.testing.assert_array_equal(ds.X * 255, images.reshape(5, -1).astype(np.float32))


@pytest.mark.parametrize(
    ("labels", "field"),
    [
        (np.zeros(4, np.uint8), "label count"),
        (np.array([0, 1, 2, 10, 3], np.uint8), "labels: expected values in 0..9"),
        (np.zeros((5, 1), np.uint8), "IDX dimensions"),
    ],
    ids=["count", "range", "shape"],
)
def test_inconsistent_files_are_errors(tmp_path: Path, labels: np.ndarray, field: str) -> None:
    """Label count, range and shape are checked against the images; the file is named."""
    _write_split(tmp_path, "test", np.zeros((5, 28, 28), np.uint8), labels, gz=True)
    with pytest.raises(DataError, match=field) as info:
        load_fashion_mnist("test", path=tmp_path)
    assert "t10k-labels-idx1-ubyte" in str(info.value)


def test_truncated_official_file_is_never_short(shared_data: Path, tmp_path: Path) -> None:
    """A truncated gzip in the folder raises DataError instead of returning fewer images."""
    folder = tmp_path / "m"
    folder.mkdir()
    src = shared_data / "mnist-sample"
    for name in FILES["test"]:
        shutil.copy(src / f"{name}.gz", folder)
    cut = folder / "t10k-images-idx3-ubyte.gz"
    cut.write_bytes(cut.read_bytes()[:-5000])
    with pytest.raises(DataError, match="t10k-images-idx3-ubyte.gz: gzip stream"):
        load_mnist("test", path=folder)


def test_missing_file_lists_what_was_looked_for(tmp_path: Path) -> None:
    """A folder without the files raises DataError listing the names tried."""
    with pytest.raises(DataError, match="train-images-idx3-ubyte.gz, train-images-idx3-ubyte"):
        load_mnist(path=tmp_path)
    with pytest.raises(DataError, match="must be a folder"):
        load_mnist(path=tmp_path / "nowhere")


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"split": "validation"}, UnknownNameError, "Available: test, train"),
        ({"path": ".", "download": True}, ValidationError, "exclude each other"),
        ({"cache_dir": "."}, ValidationError, "only with download=True"),
        ({"base_url": "http://127.0.0.1:9/"}, ValidationError, "only with download=True"),
        ({"sha256": {}}, ValidationError, "sha256 is used only"),
    ],
    ids=["split", "path-and-download", "cache-dir-alone", "base-url-alone", "sha256-alone"],
)
def test_contradictory_arguments_are_refused(
    kwargs: dict, error: type[Exception], message: str
) -> None:
    """Unknown splits and argument combinations that cannot mean anything raise early."""
    with pytest.raises(error, match=message):
        load_mnist(**kwargs)
