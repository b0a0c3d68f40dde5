"""Figures shared by the built-in sections: attribution heatmaps of image rows, signed bar charts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from xai_core.images import ImageLayout, sample_layout
from xai_core.report._colormap import NEGATIVE, POSITIVE, heatmap_rgb
from xai_core.report._html import format_number, isolate
from xai_core.report._png import png_data_uri

__all__ = ["bar_chart", "explanation_layout", "heatmaps", "shorten"]

_LABEL_CHARS = 30
_MIN_PIXEL_SIDE = 8


def shorten(text: str, limit: int = _LABEL_CHARS) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut.

    A directional isolate (:func:`~xai_core.report.isolate`) cut open keeps its closing PDI.
    """
    if len(text) <= limit:
        return text
    cut = text[: limit - 1] + "…"
    opened = sum(cut.count(c) for c in "\u2066\u2067\u2068") - cut.count("\u2069")
    return cut + "\u2069" * max(opened, 0)


def explanation_layout(e: Any) -> ImageLayout | None:
    """The image layout of an explanation's rows (:mod:`xai_core.images`), or None.

    From ``meta["image_shape"]`` when it holds a row's values; else the rows' own shape
    when it is an image shape; else a square grey image when every feature is named
    ``pixel_...`` (at least 8 x 8).
    """
    sample = tuple(e.values.shape[1:])
    declared = e.meta.get("image_shape")
    if declared is not None and np.asarray(declared).dtype.kind not in "iu":
        declared = None  # not a shape: draw what the values show
    layout = sample_layout(
        sample, None if declared is None else tuple(np.ravel(declared)), strict=False
    )
    if layout is not None:
        return layout
    names = e.feature_names
    if names and all(n.startswith("pixel_") for n in names):
        layout = sample_layout(sample, square=True)
        if layout is not None and layout.height >= _MIN_PIXEL_SIDE:
            return layout
    return None


def heatmaps(
    values: np.ndarray, data: np.ndarray | None, layout: ImageLayout
) -> tuple[list[str], np.ndarray]:
    """Each row's attributions as a PNG heatmap over its grey input image.

    Parameters
    ----------
    values : ndarray of shape (n, ...) holding ``layout.size`` values per row
    data : ndarray of the same shape, optional
        The inputs, drawn beneath (channels averaged).
    layout : ImageLayout

    Returns
    -------
    uris : list of str
        ``n`` PNG data URIs of shape (H, W, 3).
    vmax : ndarray of float64 of shape (n,)
        Each row's full-colour magnitude.
    """
    inputs = None if data is None else layout.grey(np.asarray(data, dtype=np.float64))
    rgb, vmax = heatmap_rgb(layout.grey(values), inputs)
    return [png_data_uri(img) for img in rgb], vmax


def _value_text(value: Any) -> str:
    """A feature's value for a label: 3 significant figures, ``1,650`` rather than ``1.65e+03``."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        return str(value)
    if 1e3 <= abs(f) < 1e7:
        return f"{f:,.0f}"
    return format_number(value, 3)


def bar_chart(
    names: Sequence[str], values: np.ndarray, data: np.ndarray | None, signed: bool = True
) -> dict[str, Any]:
    """Geometry of a horizontal bar chart (macro ``bar_chart``), bars in the given order.

    ``signed``: the axis in the middle, positive bars to the right and negative ones to
    the left; else (values >= 0, e.g. mean |attribution|) the axis at the left.
    """
    label_width, bar_width, row_height = 190, 220, 18
    centre = label_width + (bar_width / 2 if signed else 2)
    finite = np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    scale = float(np.max(np.abs(finite))) if finite.size else 0.0
    span = bar_width / 2 - 2 if signed else bar_width - 4
    widths = np.abs(finite) / (scale if scale > 0 else 1.0) * span
    xs = np.where(finite >= 0, centre, centre - widths)
    bars = []
    for j, name in enumerate(names):
        label = name if data is None else f"{isolate(name)} = {_value_text(data[j])}"
        bars.append(
            {
                "name": name,
                "label": shorten(label),
                "value": float(values[j]),
                "x": round(float(xs[j]), 2),
                "w": round(float(widths[j]), 2),
                "y": j * row_height,
                "fill": "rgb({},{},{})".format(
                    *(POSITIVE if finite[j] >= 0 else NEGATIVE).astype(int)
                ),
            }
        )
    alt = "; ".join(f"{isolate(b['label'])} {format_number(b['value'], 3)}" for b in bars)
    return {
        "alt": alt,
        "width": label_width + bar_width + 70,
        "height": len(bars) * row_height + 4,
        "label_width": label_width,
        "centre": centre,
        "value_x": label_width + bar_width + 6,
        "bar_height": 12,
        "bars": bars,
    }
