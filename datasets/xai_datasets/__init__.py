"""Datasets for xai-core: MNIST, Fashion-MNIST, tabular data, image and sound folders, the Playground.

Every loader returns a :class:`Dataset` and works offline by default::

    from xai_datasets import load_mnist, load_fashion_mnist, playground

    ds = load_fashion_mnist()                       # bundled sample, no network
    ds = load_fashion_mnist("test", path="data/")   # the official IDX files in a folder
    ds = load_fashion_mnist(download=True)          # fetched once into the cache, verified
    ds = playground("spiral", n_samples=500, noise=10)

See docs/datasets.md for sources, licenses, the cache and the bundled samples.
"""

from ._audio_folder import load_audio_folder
from ._dataset import Dataset
from ._idx import read_idx, write_idx
from ._image_folder import load_image_folder
from ._images import load_fashion_mnist, load_mnist
from ._playground import playground
from ._tabular import load_breast_cancer, load_csv, load_digits

__all__ = [
    "Dataset",
    "load_mnist",
    "load_fashion_mnist",
    "load_digits",
    "load_breast_cancer",
    "load_csv",
    "load_image_folder",
    "load_audio_folder",
    "playground",
    "read_idx",
    "write_idx",
]
