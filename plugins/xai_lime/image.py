"""Superpixels of small images, and lime's image neighbourhood built in one block.

``lime.lime_image.LimeImageExplainer`` splits an image into superpixels, switches each
off at random (replaced by its mean colour, or ``hide_color``) in ``num_samples``
perturbed copies, and fits the surrogate on the on/off pattern with cosine distances to
the all-on pattern. It builds the copies one at a time in a Python loop and calls the
model on batches of 10. :func:`perturb` builds all copies with one indexed ``where``.

Segmentation. lime's default, quickshift with ``kernel_size=4, max_dist=200, ratio=0.2``,
finds two or three segments in a 28x28 digit (background and stroke), too few to explain
anything. The default here is SLIC with ``n_segments=50, compactness=0.1`` on the image
scaled to [0, 1], which follows the strokes and gives about 40 superpixels on MNIST;
SLIC is deterministic. ``"quickshift"`` (lime's parameters, seeded), ``"felzenszwalb"``,
a regular ``"grid"`` of square cells, or any callable are available.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core import ShapeError, UnknownNameError, ValidationError
from xai_core.images import MAX_CHANNELS, ImageLayout, sample_layout
from xai_core.series import SeriesLayout
from xai_core.validation import check_int

__all__ = [
    "SeriesImage",
    "SEGMENTATIONS",
    "image_layout_of",
    "cosine_distances_to_all_on",
    "perturb",
    "segment",
    "segmentation_function",
]

SEGMENTATIONS = ("slic", "quickshift", "felzenszwalb", "grid")

_DEFAULTS: dict[str, dict[str, Any]] = {
    "slic": {"n_segments": 50, "compactness": 0.1, "sigma": 0.0, "start_label": 0},
    "quickshift": {"kernel_size": 4, "max_dist": 200, "ratio": 0.2},
    "felzenszwalb": {"scale": 1.0, "sigma": 0.5, "min_size": 5},
    "grid": {"size": 4},
}


def image_layout_of(input_shape: tuple[int, ...], image_shape: Any = None) -> ImageLayout:
    """The layout of samples of ``input_shape`` (:mod:`xai_core.images`), flat ones read as ``image_shape``.

    Parameters
    ----------
    input_shape : tuple of int
        ``(H, W)``, ``(H, W, C)``, ``(C, H, W)`` or flat ``(H * W * C,)``.
    image_shape : tuple of int, optional
        For flat samples: ``(H, W)``, ``(H, W, C)`` or ``(C, H, W)``; a square
        single-channel image is assumed when it is omitted.

    Raises
    ------
    ShapeError
        The samples are not images.
    """
    layout = sample_layout(input_shape, image_shape, square=True)
    if layout is not None:
        return layout
    if len(input_shape) == 1:
        raise ShapeError(
            f"flat samples of {int(input_shape[0])} values are not a square image; pass "
            "image_shape=(height, width) or (height, width, channels)."
        )
    raise ShapeError(
        "image mode needs samples of shape (height, width), (height, width, channels) "
        f"or (channels, height, width) with at most {MAX_CHANNELS} channels; got {tuple(input_shape)}."
    )


def segmentation_function(
    segmentation: str | Callable[[np.ndarray], np.ndarray], params: Mapping[str, Any] | None
) -> Callable[[np.ndarray, int], np.ndarray]:
    """Check ``segmentation`` and its ``params``; return ``fn(image, seed) -> labels``.

    Parameters
    ----------
    segmentation : {"slic", "quickshift", "felzenszwalb", "grid"} or callable
        A callable takes an image of shape (height, width, channels) and returns integer
        labels of shape (height, width).
    params : mapping, optional
        Keyword arguments of the scikit-image function (or ``size`` of grid cells),
        over the defaults of :data:`_DEFAULTS`.

    Returns
    -------
    callable
        ``fn(image of shape (H, W, C), seed) -> labels of shape (H, W)``.
    """
    params = dict(params or {})
    if callable(segmentation):
        if params:
            raise ValidationError(
                "segmentation_params apply to a named segmentation; a callable segmentation "
                f"takes none, got {sorted(params)}."
            )
        return lambda image, seed: np.asarray(segmentation(image))
    if segmentation not in SEGMENTATIONS:
        raise UnknownNameError("segmentation", segmentation, SEGMENTATIONS)
    options = {**_DEFAULTS[segmentation], **params}
    if segmentation == "grid":
        unknown = sorted(set(options) - {"size"})
        if unknown:
            raise UnknownNameError("grid segmentation parameter", unknown[0], ["size"])
        size = check_int(options["size"], "grid size")
        return lambda image, seed: _grid(image.shape[:2], int(size))

    from skimage import segmentation as skseg

    fn = getattr(skseg, segmentation)
    known = [p for p in inspect.signature(fn).parameters if p not in ("image", "channel_axis")]
    for key in options:
        if key not in known:
            raise UnknownNameError(f"{segmentation} parameter", key, known)

    def run(image: np.ndarray, seed: int) -> np.ndarray:
        img = _unit_range(image)
        kwargs = dict(options)
        if segmentation == "quickshift":
            if img.shape[-1] == 1:
                img = np.repeat(img, 3, axis=-1)  # lime's gray2rgb
            kwargs.setdefault("rng", seed)
            return fn(img, **kwargs)
        if img.shape[-1] == 1:
            return fn(img[..., 0], channel_axis=None, **kwargs)
        if segmentation == "slic":
            kwargs.setdefault("convert2lab", False)
        return fn(img, channel_axis=-1, **kwargs)

    return run


def _unit_range(image: np.ndarray) -> np.ndarray:
    lo, hi = float(image.min()), float(image.max())
    img = image.astype(np.float64)
    return (img - lo) / (hi - lo) if hi > lo else np.zeros_like(img)


@dataclass(frozen=True)
class SeriesImage:
    """A series seen as an image one row high: its steps the columns, its channels the
    colours, so superpixels are windows of steps (the ``"grid"`` segmentation) and a
    switched-off window hides every channel of it.

    Attributes
    ----------
    layout : xai_core.series.SeriesLayout
    """

    layout: SeriesLayout

    @property
    def height(self) -> int:
        return 1

    @property
    def width(self) -> int:
        return self.layout.steps

    @property
    def channels(self) -> int:
        return self.layout.channels

    def to_hwc(self, X: Any) -> np.ndarray:
        """Rows as images of shape (n, 1, steps, channels)."""
        return self.layout.to_tc(X)[:, None]

    def from_hwc(self, images: Any, sample_shape: Any = None) -> np.ndarray:
        """Images of shape (n, 1, steps, channels) back as rows of the series' layout."""
        return self.layout.from_tc(np.asarray(images)[:, 0])


def _grid(shape: tuple[int, int], size: int) -> np.ndarray:
    rows = np.arange(shape[0]) // size
    cols = np.arange(shape[1]) // size
    return rows[:, None] * (-(-shape[1] // size)) + cols[None, :]


def segment(
    fn: Callable[[np.ndarray, int], np.ndarray], image: np.ndarray, seed: int
) -> np.ndarray:
    """Segment labels 0..K-1 of one image of shape (height, width, channels).

    Returns
    -------
    ndarray of int64 of shape (height, width)
    """
    labels = np.asarray(fn(image, seed))
    if labels.shape != image.shape[:2]:
        raise ShapeError(
            f"segmentation must return labels of shape {image.shape[:2]}; got {labels.shape}."
        )
    _, inverse = np.unique(labels, return_inverse=True)
    return inverse.reshape(labels.shape).astype(np.int64)


def perturb(
    image: np.ndarray,
    segments: np.ndarray,
    n_samples: int,
    rng: np.random.Generator,
    hide_color: float | None = None,
    dtype: Any = np.float32,
) -> tuple[np.ndarray, np.ndarray]:
    """lime's image neighbourhood: random superpixels switched off, all copies at once.

    Parameters
    ----------
    image : ndarray of shape (height, width, channels)
    segments : ndarray of int of shape (height, width)
        Labels 0..K-1.
    n_samples : int
        Copies; copy 0 has every superpixel on.
    rng : numpy.random.Generator
        Source of the on/off pattern (``rng.integers(0, 2, (n_samples, K))``).
    hide_color : float, optional
        Value of a switched-off superpixel; by default its mean colour (lime's default).
    dtype : numpy dtype, default=float32
        Dtype of the copies.

    Returns
    -------
    mask : ndarray of float64 of shape (n_samples, K)
        1 where a superpixel is on.
    images : ndarray of shape (n_samples, height, width, channels)
    """
    k = int(segments.max()) + 1
    mask = rng.integers(0, 2, size=(n_samples, k), dtype=np.int8)
    mask[0] = 1
    if hide_color is None:
        counts = np.bincount(segments.ravel(), minlength=k).astype(np.float64)
        flat = image.reshape(-1, image.shape[-1]).astype(np.float64)
        means = (
            np.stack(
                [
                    np.bincount(segments.ravel(), weights=flat[:, c], minlength=k)
                    for c in range(flat.shape[1])
                ],
                axis=-1,
            )
            / counts[:, None]
        )
        fudged = means[segments]
    else:
        fudged = np.full(image.shape, float(hide_color))
    on = mask.astype(bool)[:, segments]  # (n, H, W)
    images = np.where(on[..., None], image.astype(dtype), fudged.astype(dtype))
    return mask.astype(np.float64), images


def cosine_distances_to_all_on(mask: np.ndarray) -> np.ndarray:
    """Cosine distance of each on/off pattern to the all-on pattern (sample 0).

    ``1 - sqrt(on / K)`` for a pattern with ``on`` of ``K`` superpixels on; 1 for the
    all-off pattern, as scikit-learn's ``pairwise_distances(metric="cosine")`` gives.

    Parameters
    ----------
    mask : ndarray of shape (..., n_samples, K), entries 0 or 1

    Returns
    -------
    ndarray of float64 of shape (..., n_samples)
    """
    k = mask.shape[-1]
    return 1.0 - np.sqrt(mask.sum(axis=-1) / k)
