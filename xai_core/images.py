"""The one rule for how an image is laid out, for every explainer, report and dataset.

An image sample has one of three shapes:

- ``(H, W)``: one channel;
- ``(H, W, C)``: channels last (scikit-image, Pillow, TensorFlow, the datasets);
- ``(C, H, W)``: channels first (PyTorch, ONNX, the native CNNs).

A three-axis shape is channels-last when its last axis has at most
:data:`MAX_CHANNELS` entries, else channels-first when its first axis has; a shape
whose both ends are that small, such as ``(3, 4, 4)``, is read as channels-last, and an
explicit ``order=`` settles it. Flat rows carry their layout as ``image_shape``: the row's
values in C (row-major) order of that shape.

Examples
--------
>>> from xai_core.images import image_layout
>>> layout = image_layout((3, 28, 28))
>>> layout.order, layout.channel_axis, layout.channels
('chw', 0, 3)
>>> layout.to_hwc(rows).shape          # rows of shape (n, 2352) or (n, 3, 28, 28)
(n, 28, 28, 3)

Image files are read by one pair of functions too, for the datasets and the importers
alike: :func:`open_image` opens only regular files (a FIFO named ``x.png`` is refused, not
waited on) and refuses Pillow's decompression bombs with a :class:`~xai_core.errors.DataError`
naming the file; :func:`image_pixels` centre-crops and resizes an image and scales it by
its mode's real range, so a 16-bit PNG's 0..65535 becomes 0..255 (not 0, 255, 255, ...).
"""

from __future__ import annotations

import os
import struct
import warnings
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core.errors import DataError, ShapeError, ValidationError

__all__ = [
    "EIGHT_BIT_MODES",
    "MAX_CHANNELS",
    "ORDERS",
    "SIXTEEN_BIT_MODES",
    "ImageLayout",
    "image_layout",
    "image_pixels",
    "is_image_shape",
    "open_image",
    "sample_layout",
    "value_span",
]

#: The most channels an image may have (grey, grey + alpha, RGB, RGBA).
MAX_CHANNELS = 4
#: Axis orders: one channel, channels last, channels first.
ORDERS = ("hw", "hwc", "chw")


def _as_shape(shape: Any, name: str) -> tuple[int, ...]:
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__"):
        raise ValidationError(f"{name} must be a tuple of ints such as (28, 28); got {shape!r}.")
    dims = []
    for d in shape:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 1:
            raise ValidationError(
                f"{name} must be a tuple of positive ints such as (28, 28); got {tuple(shape)!r}."
            )
        dims.append(int(d))
    return tuple(dims)


@dataclass(frozen=True)
class ImageLayout:
    """How the values of one sample form an image.

    Attributes
    ----------
    shape : tuple of int
        The image shape: ``(H, W)``, ``(H, W, C)`` or ``(C, H, W)``.
    order : {"hw", "hwc", "chw"}
        Its axis order.
    """

    shape: tuple[int, ...]
    order: str

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise ValidationError(f"order must be one of {', '.join(ORDERS)}; got {self.order!r}.")
        if len(self.shape) != len(self.order):
            raise ShapeError(
                f"an image of order {self.order!r} has {len(self.order)} axes; got shape {self.shape}."
            )

    @property
    def height(self) -> int:
        """Rows of pixels."""
        return self.shape[self.order.index("h")]

    @property
    def width(self) -> int:
        """Columns of pixels."""
        return self.shape[self.order.index("w")]

    @property
    def channels(self) -> int:
        """Channels per pixel (1 for ``(H, W)``)."""
        return 1 if self.channel_axis is None else self.shape[self.channel_axis]

    @property
    def channel_axis(self) -> int | None:
        """The channel axis of :attr:`shape` (0 or 2), or None for ``(H, W)``."""
        return self.order.index("c") if "c" in self.order else None

    @property
    def spatial_axes(self) -> tuple[int, int]:
        """The (height, width) axes of :attr:`shape`."""
        return self.order.index("h"), self.order.index("w")

    @property
    def size(self) -> int:
        """Values per image: ``H * W * C``."""
        return self.height * self.width * self.channels

    def pixel_names(self) -> tuple[str, ...]:
        """Names of the flattened values by position: ``pixel_<row>_<col>`` (``_<channel>`` too).

        In C (row-major) order of :attr:`shape`, row, column, then channel, as
        ``xai_datasets.pixel_names`` names a dataset's features.
        """
        idx = np.indices(self.shape).reshape(len(self.shape), -1)
        axes = [*self.spatial_axes] + ([] if self.channel_axis is None else [self.channel_axis])
        return tuple("pixel_" + "_".join(map(str, row)) for row in idx[axes].T.tolist())

    def _images(self, X: Any) -> np.ndarray:
        arr = np.asarray(X)
        if arr.ndim < 1 or int(np.prod(arr.shape[1:])) != self.size:
            raise ShapeError(
                f"rows must hold the {self.size} values of images of shape {self.shape}; got an "
                f"array of shape {arr.shape}."
            )
        return arr.reshape((arr.shape[0], *self.shape))

    def to_hwc(self, X: Any) -> np.ndarray:
        """Rows as channels-last images.

        Parameters
        ----------
        X : array-like of shape (n, ...) with ``H * W * C`` values per row

        Returns
        -------
        ndarray of shape (n, H, W, C)
            A view where the layout allows one.
        """
        images = self._images(X)
        if self.order == "chw":
            return images.transpose(0, 2, 3, 1)
        return images.reshape(len(images), self.height, self.width, self.channels)

    def to_chw(self, X: Any) -> np.ndarray:
        """Rows as channels-first images, ndarray of shape (n, C, H, W)."""
        return self.to_hwc(X).transpose(0, 3, 1, 2)

    def from_hwc(self, images: Any, sample_shape: Sequence[int] | None = None) -> np.ndarray:
        """Channels-last images back as rows of this layout.

        Parameters
        ----------
        images : array-like of shape (n, H, W, C)
        sample_shape : tuple of int, optional
            The shape of one row to return (flat, or :attr:`shape`, the default).

        Returns
        -------
        ndarray of shape (n, *sample_shape)
        """
        arr = np.asarray(images)
        expected = (self.height, self.width, self.channels)
        if arr.ndim != 4 or arr.shape[1:] != expected:
            raise ShapeError(
                f"images must have shape (n, {expected[0]}, {expected[1]}, {expected[2]}); got {arr.shape}."
            )
        if self.order == "chw":
            arr = arr.transpose(0, 3, 1, 2)
        return arr.reshape((len(arr), *(self.shape if sample_shape is None else sample_shape)))

    def from_chw(self, images: Any, sample_shape: Sequence[int] | None = None) -> np.ndarray:
        """Channels-first images of shape (n, C, H, W) back as rows (see :meth:`from_hwc`)."""
        arr = np.asarray(images)
        if arr.ndim != 4:
            raise ShapeError(f"images must have shape (n, C, H, W); got {arr.shape}.")
        return self.from_hwc(arr.transpose(0, 2, 3, 1), sample_shape)

    def grey(self, X: Any) -> np.ndarray:
        """Rows as one-channel images (the mean over channels), float64 of shape (n, H, W)."""
        return self.to_hwc(X).mean(axis=-1, dtype=np.float64)


def image_layout(
    shape: Sequence[int], *, order: str | None = None, name: str = "image_shape"
) -> ImageLayout:
    """The layout of an image shape.

    Parameters
    ----------
    shape : tuple of int
        ``(H, W)``, ``(H, W, C)`` or ``(C, H, W)`` with ``C <= MAX_CHANNELS``.
    order : {"hw", "hwc", "chw"}, optional
        The axis order, when the rule of this module should not decide it.
    name : str, default="image_shape"
        The argument named in errors.

    Returns
    -------
    ImageLayout

    Raises
    ------
    ShapeError
        ``shape`` is not an image shape.
    """
    dims = _as_shape(shape, name)
    if order is not None:
        return ImageLayout(dims, order)
    if len(dims) == 2:
        return ImageLayout(dims, "hw")
    if len(dims) == 3 and dims[2] <= MAX_CHANNELS:
        return ImageLayout(dims, "hwc")
    if len(dims) == 3 and dims[0] <= MAX_CHANNELS:
        return ImageLayout(dims, "chw")
    raise ShapeError(
        f"{name} must be (H, W), (H, W, C) or (C, H, W) with at most {MAX_CHANNELS} channels; "
        f"got {dims}."
    )


def is_image_shape(shape: Sequence[int]) -> bool:
    """Whether ``shape`` is ``(H, W)``, ``(H, W, C)`` or ``(C, H, W)`` by :func:`image_layout`."""
    try:
        image_layout(shape)
    except (ShapeError, ValidationError):
        return False
    return True


def sample_layout(
    sample_shape: Sequence[int],
    image_shape: Any = None,
    *,
    square: bool = False,
    strict: bool = True,
) -> ImageLayout | None:
    """The image layout of samples of ``sample_shape``, or None when they are not images.

    Parameters
    ----------
    sample_shape : tuple of int
        Shape of one sample as the model takes it: an image shape, or flat ``(n_features,)``.
    image_shape : tuple of int, optional
        The image shape of flat (or otherwise shaped) samples; it must hold their values.
    square : bool, default=False
        Read flat samples without ``image_shape`` as one square grey image when their
        length is a square.
    strict : bool, default=True
        Raise on an ``image_shape`` that is not an image shape or does not hold a
        sample's values; with False, ignore it (for renderers, which draw what they can).

    Returns
    -------
    ImageLayout or None

    Raises
    ------
    ShapeError
        ``image_shape`` is not an image shape or does not hold a sample's values.
    """
    sample = tuple(int(d) for d in sample_shape)
    size = int(np.prod(sample))
    if image_shape is not None and not strict:
        try:
            return sample_layout(sample, image_shape, square=square)
        except (ShapeError, ValidationError):
            image_shape = None
    if image_shape is not None:
        layout = image_layout(image_shape)
        if layout.size != size:
            raise ShapeError(
                f"image_shape must be an image shape holding the {size} values of one sample of "
                f"shape {sample}; got {layout.shape}, which holds {layout.size}."
            )
        return layout
    if len(sample) in (2, 3) and is_image_shape(sample):
        return image_layout(sample)
    if square and len(sample) == 1:
        side = int(round(size**0.5))
        if side * side == size and side > 1:
            return ImageLayout((side, side), "hw")
    return None


# -- image files ----------------------------------------------------------------------------
#: Pillow modes of 8-bit channels, converted by Pillow to RGB or L (alpha is dropped).
EIGHT_BIT_MODES = frozenset(
    {"1", "L", "LA", "La", "P", "PA", "RGB", "RGBA", "RGBa", "RGBX", "CMYK", "YCbCr", "HSV"}
)
#: Pillow modes of one 16-bit channel: values 0..65535.
SIXTEEN_BIT_MODES = frozenset({"I;16", "I;16L", "I;16B", "I;16N"})
#: What Pillow raises on a damaged or truncated image file.
_DECODE_ERRORS = (OSError, SyntaxError, ValueError, EOFError, struct.error, zlib.error, IndexError)


def value_span(arr: np.ndarray) -> str:
    """``"span -5 .. 300"`` (and how many are NaN or infinite), for messages."""
    finite = arr[np.isfinite(arr)] if arr.dtype.kind == "f" else arr
    bad = arr.size - finite.size
    span = (
        f"span {finite.min():g} .. {finite.max():g}" if finite.size else "are all NaN or infinite"
    )
    return span + (f" ({bad} NaN or infinite)" if bad and finite.size else "")


def open_image(path: str | os.PathLike[str], *, what: str | None = None) -> Any:
    """Open and decode an image file: a regular file only, decompression bombs refused.

    Parameters
    ----------
    path : str or path-like
    what : str, optional
        How messages name the file (default the path, quoted).

    Returns
    -------
    PIL.Image.Image
        Decoded (its pixels loaded; the file is closed).

    Raises
    ------
    DataError
        The file is missing, not a regular file (a FIFO, a folder), not an image, damaged,
        or declares more pixels than Pillow's ``PIL.Image.MAX_IMAGE_PIXELS`` (a guard
        against decompression bombs; raise it for a genuine huge image).
    """
    from PIL import Image

    from xai_core.files import open_regular_file

    name = what or repr(str(path))
    with open_regular_file(path, what=name, error=DataError) as fh:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                image = Image.open(fh)
                image.load()
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise DataError(
                f"{name} is refused as a possible decompression bomb: {exc} Raise "
                "PIL.Image.MAX_IMAGE_PIXELS if the image is genuine."
            ) from None
        except _DECODE_ERRORS as exc:  # UnidentifiedImageError is an OSError
            raise DataError(f"{name} is not a readable image: {exc}") from exc
    return image


def _crop_resize(image: Any, size: tuple[int, int]) -> Any:
    """The centre square of ``image``, resized (bilinear) to ``size`` = (height, width)."""
    from PIL import Image

    side = min(image.size)
    left, top = (image.size[0] - side) // 2, (image.size[1] - side) // 2
    image = image.crop((left, top, left + side, top + side))
    return image.resize((size[1], size[0]), Image.BILINEAR)


def image_pixels(image: Any, *, channels: int, size: tuple[int, int], what: str) -> np.ndarray:
    """An image centre-cropped, resized and scaled by its mode's range to 0..255.

    8-bit modes (:data:`EIGHT_BIT_MODES`: grey, palette, RGB, RGBA, CMYK, ...) are converted
    by Pillow to RGB or grey and keep their values; 16-bit grey (:data:`SIXTEEN_BIT_MODES`)
    is scaled by 255 / 65535; mode ``I`` (32-bit integers) must hold 0..65535 and is read as
    16-bit; mode ``F`` (floats) must hold fractions in [0, 1]. One-channel images given
    ``channels=3`` are repeated into RGB.

    Parameters
    ----------
    image : PIL.Image.Image
    channels : {1, 3}
        Grey or RGB.
    size : (int, int)
        ``(height, width)`` of the result.
    what : str
        The image, for messages.

    Returns
    -------
    ndarray of float32 of shape (height, width, channels)
        Values in [0, 255].

    Raises
    ------
    DataError
        A mode that cannot be converted (``LAB`` needs colour management), or ``I`` / ``F``
        values outside the range they are read in.
    """
    from PIL import Image

    mode = image.mode
    h, w = size
    if mode in SIXTEEN_BIT_MODES or mode in ("I", "F"):
        arr = np.asarray(image)
        if mode == "F":
            if arr.size and not (np.isfinite(arr).all() and arr.min() >= 0 and arr.max() <= 1):
                raise DataError(
                    f"{what}: a float (mode F) image must hold fractions in [0, 1]; its values "
                    f"{value_span(arr)}."
                )
            scale = 255.0
        else:
            if mode == "I" and arr.size and (arr.min() < 0 or arr.max() > 65535):
                raise DataError(
                    f"{what}: a 32-bit integer (mode I) image is read as 16-bit, 0..65535; its "
                    f"values span {arr.min()} .. {arr.max()}."
                )
            scale = 255.0 / 65535.0
        grey = Image.fromarray((arr.astype(np.float64) * scale).astype(np.float32), mode="F")
        out = np.asarray(_crop_resize(grey, size), dtype=np.float32).reshape(h, w, 1)
        return np.repeat(out, channels, axis=2) if channels > 1 else out
    if mode not in EIGHT_BIT_MODES:
        raise DataError(
            f"{what}: image mode {mode!r} is not read (supported: 8-bit modes "
            f"{', '.join(sorted(EIGHT_BIT_MODES))}, 16-bit grey, I and F); save it as RGB."
        )
    try:
        image = image.convert("RGB" if channels == 3 else "L")
    except ValueError as exc:
        raise DataError(f"{what}: image mode {mode!r} cannot be converted: {exc}") from None
    return np.asarray(_crop_resize(image, size), dtype=np.float32).reshape(h, w, channels)
