"""Image folders, Teachable-Machine style: one sub-folder per class, PNG and JPEG files."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from xai_core.errors import DataError, ValidationError

from ._dataset import Dataset

__all__ = ["load_image_folder"]

#: File endings read as images.
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
#: Most images read from one folder (a guard against pointing at a photo library).
MAX_IMAGES = 200_000


def load_image_folder(
    path: str | os.PathLike[str],
    *,
    image_size: int | Sequence[int] = 224,
    color: bool = True,
    classes: Sequence[str] | None = None,
) -> Dataset:
    """Images in ``path/<class>/*.png|jpg``, as a :class:`Dataset` of flat rows in [0, 1].

    Each image is centre-cropped to a square and resized (bilinear), as Teachable Machine does.

    Parameters
    ----------
    path : path-like
        A folder with one sub-folder per class; the sub-folder names are the class names.
    image_size : int or (int, int), default=224
        ``(height, width)`` of the resized images (224, Teachable Machine's size, by default).
    color : bool, default=True
        RGB (3 channels) or grey (1 channel).
    classes : sequence of str, optional
        The classes to read, in this order; by default every sub-folder, sorted by name.

    Returns
    -------
    Dataset
        ``X`` float32 of shape (n_images, height * width * channels) in channels-last order,
        ``image_shape`` ``(height, width, 3)`` or ``(height, width)``, ``class_names`` the
        sub-folders.

    Raises
    ------
    DataError
        A missing folder, a class folder without images, or a file that is not an image
        (named in the message).
    """
    from PIL import Image, UnidentifiedImageError

    root = Path(path)
    if not root.is_dir():
        raise DataError(
            f"path must be a folder with one sub-folder per class; {str(root)!r} is not a folder."
        )
    size = (
        (int(image_size), int(image_size))
        if np.ndim(image_size) == 0
        else tuple(int(v) for v in image_size)
    )
    if len(size) != 2 or min(size) < 1:
        raise ValidationError(
            f"image_size must be a positive int or (height, width); got {image_size!r}."
        )
    found = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    names = list(found if classes is None else classes)
    missing = [c for c in names if c not in found]
    if missing or not names:
        raise DataError(
            f"class folders {missing or '(none)'} not found in {str(root)!r}; found {found}."
        )
    files: list[tuple[Path, int]] = []
    for label, name in enumerate(names):
        images = sorted(p for p in (root / name).iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if not images:
            raise DataError(f"class folder {name!r} holds no PNG or JPEG images.")
        files += [(p, label) for p in images]
    if len(files) > MAX_IMAGES:
        raise DataError(
            f"{str(root)!r} holds {len(files):,} images; at most {MAX_IMAGES:,} are read."
        )
    h, w = size
    channels = 3 if color else 1
    X = np.empty((len(files), h * w * channels), np.float32)
    for i, (file, _) in enumerate(files):
        try:
            with Image.open(file) as image:
                image = image.convert("RGB" if color else "L")
                side = min(image.size)
                left, top = (image.size[0] - side) // 2, (image.size[1] - side) // 2
                image = image.crop((left, top, left + side, top + side)).resize(
                    (w, h), Image.BILINEAR
                )
                X[i] = np.asarray(image, np.float32).ravel() / 255.0
        except (UnidentifiedImageError, OSError) as exc:
            raise DataError(f"{str(file)!r} is not a readable image: {exc}") from exc
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
