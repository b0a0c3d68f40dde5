"""The diverging colour map of attribution heatmaps, centred at zero.

Zero is white, ``+vmax`` is :data:`POSITIVE` (red: pushes the output up) and ``-vmax`` is
:data:`NEGATIVE` (blue: pushes it down); in between the colour is blended linearly with
the weight ``|value| / vmax``. The input image is drawn beneath in grey at reduced
opacity, so where the attribution is zero the image shows through.
"""

from __future__ import annotations

import numpy as np

__all__ = ["NEGATIVE", "POSITIVE", "IMAGE_OPACITY", "diverging", "heatmap_rgb", "colorbar_rgb"]

#: RGB of the largest positive attribution.
POSITIVE = np.array([178.0, 24.0, 43.0])
#: RGB of the most negative attribution.
NEGATIVE = np.array([33.0, 102.0, 172.0])
#: Opacity of the input image beneath the heatmap (ink drawn dark on white).
IMAGE_OPACITY = 0.35


def _to_uint8(rgb: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(rgb), 0, 255).astype(np.uint8)


def _weights(values: np.ndarray, vmax: float) -> np.ndarray:
    v = np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    scale = float(vmax) if np.isfinite(vmax) and vmax > 0 else 1.0
    return np.clip(v / scale, -1.0, 1.0)


def diverging(values: np.ndarray, vmax: float, background: np.ndarray | None = None) -> np.ndarray:
    """Colour ``values`` on the diverging map, over ``background``.

    Parameters
    ----------
    values : array-like of shape (...)
        Attributions; NaN and infinities are drawn as zero.
    vmax : float
        The magnitude drawn in full colour; larger magnitudes are clipped to it. A
        non-positive or non-finite ``vmax`` is treated as 1.
    background : array-like of shape (..., 3), optional
        RGB in [0, 255] beneath the colours; white by default.

    Returns
    -------
    numpy.ndarray of float64, shape (..., 3)
        RGB in [0, 255].
    """
    w = _weights(values, vmax)[..., None]
    if background is None:
        background = np.full(w.shape[:-1] + (3,), 255.0)
    colour = np.where(w >= 0, POSITIVE, NEGATIVE)
    a = np.abs(w)
    return np.asarray(background, dtype=np.float64) * (1.0 - a) + colour * a


def heatmap_rgb(
    values: np.ndarray, image: np.ndarray | None = None, vmax: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Attribution heatmaps over the grey input images, each on its own scale (or ``vmax``).

    Parameters
    ----------
    values : array-like of shape (..., height, width)
        Attributions of one image or of a batch of images.
    image : array-like of shape (..., height, width), optional
        The inputs in [0, 1] (larger is more ink); drawn dark on white at
        :data:`IMAGE_OPACITY`.
    vmax : array-like of shape (...), optional
        The full-colour magnitude of each image, to draw several on one shared scale;
        by default each image's own largest absolute attribution.

    Returns
    -------
    rgb : numpy.ndarray of uint8, shape (..., height, width, 3)
    vmax : numpy.ndarray of float64, shape (...)
        Each image's largest finite absolute attribution: its full-colour magnitude.
    """
    v = np.asarray(values, dtype=np.float64)
    finite = np.where(np.isfinite(v), np.abs(v), 0.0)
    own = finite.max(axis=(-2, -1)) if v.size else np.zeros(v.shape[:-2])
    vmax = own if vmax is None else np.broadcast_to(np.asarray(vmax, dtype=np.float64), own.shape)
    background = np.full(v.shape + (3,), 255.0)
    if image is not None:
        ink = np.clip(np.nan_to_num(np.asarray(image, dtype=np.float64)), 0.0, 1.0)
        background = background * (1.0 - IMAGE_OPACITY * ink)[..., None]
    scale = np.where(vmax > 0, vmax, 1.0)[..., None, None]
    return _to_uint8(diverging(v / scale, 1.0, background)), vmax


def colorbar_rgb(width: int = 64, height: int = 1) -> np.ndarray:
    """The colour bar from ``-vmax`` (left) through 0 to ``+vmax`` (right).

    Returns
    -------
    numpy.ndarray of uint8, shape (height, width, 3)
    """
    ramp = np.linspace(-1.0, 1.0, width)
    return _to_uint8(np.broadcast_to(diverging(ramp, 1.0), (height, width, 3)))
