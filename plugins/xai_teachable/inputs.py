"""What a Teachable Machine project trains on: its classes' samples, and one new sample read the same way.

Three kinds, as Teachable Machine's three projects: ``"image"`` (a folder of class folders
of PNG/JPEG files, :func:`xai_datasets.load_image_folder`), ``"audio"`` (class folders of
WAV files as speech-commands' spectrograms, :func:`xai_datasets.load_audio_folder`) and
``"pose"`` (PoseNet feature vectors, :mod:`xai_core.pose`, given as a dataset: there is no
pose estimator here to read a folder of photos).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core.errors import ShapeError, UnknownNameError, ValidationError

__all__ = ["KINDS", "Samples", "read_one", "read_samples"]

#: The kinds of project, as Teachable Machine names them.
KINDS = ("image", "audio", "pose")


@dataclass(frozen=True)
class Samples:
    """A project's samples as the network reads them.

    Attributes
    ----------
    X : ndarray of float32, shape (n_samples, *input_shape)
        Images ``(height, width, channels)`` in [0, 1], spectrograms ``(frames, bins, 1)``
        or pose vectors ``(n_features,)``.
    y : ndarray of int64, shape (n_samples,)
        Class indices.
    class_names : tuple of str
    kind : {"image", "audio", "pose"}
    source : str
        Where the samples came from (a folder, or a dataset's name).
    """

    X: np.ndarray
    y: np.ndarray
    class_names: tuple[str, ...]
    kind: str
    source: str

    @property
    def input_shape(self) -> tuple[int, ...]:
        """The shape of one sample."""
        return tuple(self.X.shape[1:])


def _check_kind(kind: Any) -> str:
    if kind not in KINDS:
        raise UnknownNameError("kind", str(kind), KINDS)
    return str(kind)


def _shape_of(ds: Any, kind: str) -> tuple[int, ...]:
    shape = getattr(ds, "image_shape", None)
    if kind == "pose" or shape is None:
        if kind != "pose":
            raise ValidationError(
                f"kind={kind!r} needs a dataset with image_shape (load_image_folder or "
                f"load_audio_folder give one); got {getattr(ds, 'name', type(ds).__name__)!r} "
                "without one."
            )
        return (int(np.prod(np.shape(ds.X)[1:])),)
    shape = tuple(int(d) for d in shape)
    return (*shape, 1) if len(shape) == 2 else shape


def read_samples(data: Any, kind: str, *, image_size: Any = 224, color: bool = True) -> Samples:
    """A folder or a dataset as :class:`Samples`.

    Parameters
    ----------
    data : path-like, Dataset or (X, y, class_names)
        A folder of class folders (``"image"`` and ``"audio"``), an ``xai_datasets.Dataset``
        with ``y`` and ``class_names``, or the three arrays.
    kind : {"image", "audio", "pose"}
    image_size : int or (int, int), default=224
        Images read from a folder are resized to it (Teachable Machine's 224 by default).
    color : bool, default=True
        RGB or grey, for images read from a folder.

    Returns
    -------
    Samples
    """
    kind = _check_kind(kind)
    if isinstance(data, (str, os.PathLike)):
        import xai_datasets

        if kind == "image":
            ds = xai_datasets.load_image_folder(data, image_size=image_size, color=color)
        elif kind == "audio":
            ds = xai_datasets.load_audio_folder(data)
        else:
            raise ValidationError(
                "kind='pose' reads PoseNet feature vectors, not a folder: pass a dataset or "
                f"(X, y, class_names) built with xai_core.pose.posenet_features; got the path "
                f"{str(data)!r}."
            )
        X, y, names, source = ds.X, ds.y, ds.class_names, str(data)
        shape = _shape_of(ds, kind)
    elif isinstance(data, tuple) and len(data) == 3:
        X, y, names = data
        X = np.asarray(X, dtype=np.float32)
        if X.ndim < 2:
            raise ShapeError(
                f"X must have shape (n_samples, ...); got an array of shape {X.shape}."
            )
        shape = X.shape[1:] if kind != "pose" else (int(np.prod(X.shape[1:])),)
        if kind != "pose" and len(shape) == 2:
            shape = (*shape, 1)
        source = "arrays"
    elif hasattr(data, "X") and hasattr(data, "y"):
        X, y, names = data.X, data.y, getattr(data, "class_names", None)
        shape, source = _shape_of(data, kind), str(getattr(data, "name", "dataset"))
    else:
        raise ValidationError(
            f"data must be a folder, a Dataset or (X, y, class_names); got {type(data).__name__}."
        )
    if y is None or names is None:
        raise ValidationError("data must carry class labels y and class_names; got none.")
    names = tuple(str(n) for n in names)
    X = np.asarray(X, dtype=np.float32)
    y = np.asarray(y)
    if len(X) != len(y) or y.ndim != 1:
        raise ShapeError(
            f"y must have shape ({len(X)},), one label per sample; got an array of shape {y.shape}."
        )
    if y.dtype.kind not in "iu" or len(y) and (y.min() < 0 or y.max() >= len(names)):
        raise ValidationError(
            f"y must hold class indices in 0..{len(names) - 1} (one per class name); got "
            f"{y.dtype} values {np.unique(y)[:10].tolist()}."
        )
    if len(names) < 2:
        raise ValidationError(f"a project needs at least 2 classes; got {len(names)}: {names}.")
    return Samples(X.reshape(len(X), *shape), y.astype(np.int64), names, kind, source)


def _image(item: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
    from PIL import Image

    from xai_core.images import image_pixels, open_image

    h, w, c = shape
    if isinstance(item, (bytes, bytearray)):
        image = Image.open(io.BytesIO(bytes(item)))
        image.load()
    elif isinstance(item, (str, os.PathLike)):
        image = open_image(item, what=what)
    elif isinstance(item, Image.Image):
        image = item
    else:
        return _array(item, shape, what)
    # the same steps as load_image_folder: centre crop, resize, scale by 255
    return (image_pixels(image, channels=c, size=(h, w), what=what).ravel() / 255.0).reshape(shape)


def _sound(item: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
    from xai_core.audio import (
        BROWSER_FFT,
        browser_fft_spectrogram,
        normalize_spectrogram,
        read_wav,
        snippet,
    )

    if not isinstance(item, (bytes, bytearray, str, os.PathLike)):
        return _array(item, shape, what)
    frames, bins = shape[0], shape[1]
    rate = BROWSER_FFT["sample_rate"]
    wave = snippet(read_wav(item, sample_rate=rate), what, frames=frames, sample_rate=rate)
    spec = normalize_spectrogram(browser_fft_spectrogram(wave[None], frames=frames, bins=bins))
    return np.asarray(spec, dtype=np.float32).reshape(shape)


def _array(item: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
    arr = np.asarray(item, dtype=np.float32)
    if arr.size != int(np.prod(shape)):
        raise ShapeError(
            f"{what} must have shape {shape} (or {int(np.prod(shape))} values); got an array "
            f"of shape {arr.shape}."
        )
    return arr.reshape(shape)


def read_one(item: Any, kind: str, shape: tuple[int, ...], what: str = "sample") -> np.ndarray:
    """One new sample as the project's samples were read.

    Parameters
    ----------
    item : path-like, bytes, PIL image or array-like
        An image file (or its bytes, or a PIL image) for ``"image"``; a WAV file (or its
        bytes) for ``"audio"``; otherwise an array of ``shape`` (or as many values).
    kind : {"image", "audio", "pose"}
    shape : tuple of int
        The network's input shape.

    Returns
    -------
    ndarray of float32 of shape ``shape``
    """
    if kind == "image":
        return _image(item, shape, what)
    if kind == "audio":
        return _sound(item, shape, what)
    return _array(item, shape, what)
