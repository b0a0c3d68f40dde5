"""Image folders, Teachable-Machine style: one sub-folder per class, PNG and JPEG files."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from xai_core.attribution.cost import Cost, check_cost
from xai_core.errors import ValidationError

from ._class_folders import class_files
from ._dataset import Dataset

__all__ = ["load_image_folder"]

#: File endings read as images.
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
#: Most images read from one folder (a guard against pointing at a photo library).
MAX_IMAGES = 200_000


def _size(image_size: Any) -> tuple[int, int]:
    dims = (image_size, image_size) if np.ndim(image_size) == 0 else tuple(image_size)
    if len(dims) != 2 or any(
        isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 1
        for d in dims
    ):
        raise ValidationError(
            f"image_size must be a positive int or (height, width); got {image_size!r}."
        )
    return int(dims[0]), int(dims[1])


def load_image_folder(
    path: str | os.PathLike[str],
    *,
    image_size: int | Sequence[int] = 224,
    color: bool = True,
    classes: Sequence[str] | None = None,
) -> Dataset:
    """Images in ``path/<class>/*.png|jpg``, as a :class:`Dataset` of flat rows in [0, 1].

    Each image is centre-cropped to a square and resized (bilinear), as Teachable Machine
    does, and scaled by its mode's real range: 8-bit images by 255, 16-bit grey PNGs by
    65535 (:func:`xai_core.images.image_pixels`, which lists the modes read).

    Parameters
    ----------
    path : path-like
        A folder with one sub-folder per class; the sub-folder names are the class names.
    image_size : int or (int, int), default=224
        ``(height, width)`` of the resized images (224, Teachable Machine's size, by default).
    color : bool, default=True
        RGB (3 channels) or grey (1 channel).
    classes : sequence of str, optional
        The classes to read, in this order, each once; by default every sub-folder, sorted
        by name.

    Returns
    -------
    Dataset
        ``X`` float32 of shape (n_images, height * width * channels) in channels-last order,
        ``image_shape`` ``(height, width, 3)`` or ``(height, width)``, ``class_names`` the
        sub-folders.

    Raises
    ------
    DataError
        A missing folder, a class folder without images, a file that is not an image or
        not a regular file (a FIFO named ``x.png``), or a decompression bomb (named in the
        message).
    ValidationError
        A bad ``image_size``, or ``classes`` naming a folder twice.
    ResourceError
        The images at ``image_size`` would not fit the memory limit (checked before any
        is read).
    """
    from xai_core.images import image_pixels, open_image

    root, names, files = class_files(
        path, classes, IMAGE_SUFFIXES, "PNG or JPEG images", MAX_IMAGES
    )
    h, w = _size(image_size)
    channels = 3 if color else 1
    check_cost(
        Cost(
            0, len(files) * h * w * channels * 4, f"{len(files)} images of {h} x {w} x {channels}"
        ),
        f"load_image_folder({str(root)!r}, image_size={(h, w)})",
        advice="lower image_size",
    )
    X = np.empty((len(files), h * w * channels), np.float32)
    for i, (file, _) in enumerate(files):
        name = repr(str(file))
        pixels = image_pixels(
            open_image(file, what=name), channels=channels, size=(h, w), what=name
        )
        X[i] = pixels.ravel() / 255.0
    y = np.array([label for _, label in files], np.int64)
    return Dataset(
        X=X,
        y=y,
        class_names=tuple(names),
        image_shape=(h, w, 3) if color else (h, w),
        name=f"images from {root.name}",
        description=f"{len(files)} images in {len(names)} class folders of {str(root)!r}, resized to {h} x {w}.",
        source=str(root),
    )
