"""Colour bars drawn into the picture: a heatmap and its scale as one PNG, readable anywhere.

An untrusted notebook's sanitiser drops the style sheet that lays out a colour bar and its
labels, and a host rule such as JupyterLab's ``img {height: auto}`` squeezes a 64 x 1
colour bar into a line; ``image-rendering: pixelated`` does not survive either. So the
bar, its three labels (``-vmax``, ``0``, ``+vmax``) and the heatmap, enlarged by whole
pixels, are drawn into one image (Pillow), which every viewer shows as it is.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from xai_core.errors import ShapeError, ValidationError
from xai_core.report._colormap import colorbar_rgb
from xai_core.report._html import format_number

__all__ = [
    "BAR_HEIGHT",
    "LABEL_HEIGHT",
    "enlarge",
    "heatmap_with_scale",
    "scale_bar",
    "scale_width",
]

#: Height in pixels of the colour band (its 1-pixel frame included).
BAR_HEIGHT = 12
#: Height in pixels of the label line beneath the band.
LABEL_HEIGHT = 15
_GAP = 4  # white pixels between the heatmap and the band, and around the labels
_INK = (27, 27, 27)
_FRAME = (136, 136, 136)
_FONT_SIZE = 11


@cache
def _font() -> Any:
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=_FONT_SIZE)  # FreeType: a scalable font
    except (TypeError, OSError, ImportError):  # Pillow without FreeType: the bitmap font
        return ImageFont.load_default()


def enlarge(pixels: Any, factor: int) -> np.ndarray:
    """``pixels`` enlarged ``factor`` times by repeating each pixel (nearest neighbour).

    Parameters
    ----------
    pixels : array-like of shape (height, width) or (height, width, channels)
    factor : int
        At least 1.

    Returns
    -------
    numpy.ndarray of shape (height * factor, width * factor[, channels]), same dtype
    """
    if isinstance(factor, bool) or not isinstance(factor, (int, np.integer)) or factor < 1:
        raise ValidationError(f"factor must be an int of at least 1; got {factor!r}.")
    arr = np.asarray(pixels)
    if arr.ndim not in (2, 3):
        raise ShapeError(
            f"pixels must have shape (height, width) or (height, width, channels); got {arr.shape}."
        )
    return np.repeat(np.repeat(arr, int(factor), axis=0), int(factor), axis=1)


def _text_width(text: str) -> int:
    left, _, right, _ = _font().getbbox(text)
    return int(np.ceil(right - left))


def _labels(low: float, high: float) -> tuple[str, str, str]:
    # + 0.0: a zero scale reads "0", not "-0"
    return format_number(float(low) + 0.0, 3), "0", format_number(float(high) + 0.0, 3)


def scale_width(low: float, high: float, width: int) -> int:
    """The width a :func:`scale_bar` of at least ``width`` pixels needs for its labels."""
    texts = _labels(low, high)
    return max(int(width), sum(_text_width(t) for t in texts) + 6 * _GAP)


def scale_bar(low: float, high: float, width: int = 192) -> np.ndarray:
    """The diverging colour bar from ``low`` (blue) through 0 (white) to ``high`` (red), labelled.

    The three labels (3 significant figures) are drawn beneath the band: ``low`` at the
    left end, ``0`` in the middle, ``high`` at the right end, never touching each other
    (the picture is widened when they would).

    Parameters
    ----------
    low, high : float
        The values at the two ends (``-vmax`` and ``+vmax`` for a heatmap).
    width : int, default=192
        Width in pixels, at least 32.

    Returns
    -------
    numpy.ndarray of uint8 of shape (BAR_HEIGHT + LABEL_HEIGHT, width', 3)
        ``width' >= width``: RGB, on white.
    """
    from PIL import Image, ImageDraw

    if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 32:
        raise ValidationError(f"width must be an int of at least 32; got {width!r}.")
    w = scale_width(low, high, int(width))
    out = np.full((BAR_HEIGHT + LABEL_HEIGHT, w, 3), 255, dtype=np.uint8)
    out[:BAR_HEIGHT] = _FRAME
    out[1 : BAR_HEIGHT - 1, 1 : w - 1] = colorbar_rgb(w - 2, BAR_HEIGHT - 2)
    image = Image.fromarray(out)
    draw = ImageDraw.Draw(image)
    font = _font()
    lo, mid, hi = _labels(low, high)
    y = BAR_HEIGHT + 1
    for text, x in ((lo, 0), (mid, (w - _text_width(mid)) // 2), (hi, w - _text_width(hi))):
        left = font.getbbox(text)[0]
        draw.text((x - left, y), text, fill=_INK, font=font)
    return np.asarray(image, dtype=np.uint8)


def heatmap_with_scale(rgb: Any, zoom: int, low: float, high: float) -> np.ndarray:
    """A heatmap enlarged ``zoom`` times, its labelled colour bar (:func:`scale_bar`) beneath.

    Parameters
    ----------
    rgb : array-like of uint8 of shape (height, width, 3)
        The heatmap (see :func:`~xai_core.report.heatmap_rgb`).
    zoom : int
        Whole pixels per heatmap pixel (nearest neighbour: no blur in any viewer).
    low, high : float
        The values of the colour bar's ends.

    Returns
    -------
    numpy.ndarray of uint8 of shape (height * zoom + gap + BAR_HEIGHT + LABEL_HEIGHT, width', 3)
        The heatmap at the top left, on white; ``width'`` is the enlarged heatmap's width,
        or the colour bar's when its labels need more.
    """
    arr = np.asarray(rgb)
    if arr.ndim != 3 or arr.shape[2] != 3 or 0 in arr.shape:
        raise ShapeError(f"rgb must have shape (height, width, 3); got shape {arr.shape}.")
    big = enlarge(arr.astype(np.uint8), zoom)
    bar = scale_bar(low, high, max(32, big.shape[1]))
    width = max(big.shape[1], bar.shape[1])
    out = np.full((big.shape[0] + _GAP + bar.shape[0], width, 3), 255, dtype=np.uint8)
    out[: big.shape[0], : big.shape[1]] = big
    out[big.shape[0] + _GAP :, : bar.shape[1]] = bar
    return out
