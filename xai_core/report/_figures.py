"""Figures shared by the sections: heatmaps of image rows, signed bar charts, beeswarm offsets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from xai_core.images import ImageLayout
from xai_core.report._colormap import NEGATIVE, POSITIVE, diverging, heatmap_rgb
from xai_core.report._html import format_number, isolate
from xai_core.report._png import png_data_uri
from xai_core.report._scalebar import heatmap_with_scale

__all__ = ["bar_chart", "heatmaps", "series_chart", "shorten", "swarm_offsets"]

_LABEL_CHARS = 30


def shorten(text: str, limit: int = _LABEL_CHARS) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut.

    A directional isolate (:func:`~xai_core.report.isolate`) cut open keeps its closing PDI.
    """
    if len(text) <= limit:
        return text
    cut = text[: limit - 1] + "…"
    opened = sum(cut.count(c) for c in "\u2066\u2067\u2068") - cut.count("\u2069")
    return cut + "\u2069" * max(opened, 0)


def heatmaps(
    values: np.ndarray, data: np.ndarray | None, layout: ImageLayout, side: int = 192
) -> tuple[list[str], np.ndarray, tuple[int, int]]:
    """Each row's attributions as one PNG: its heatmap over the grey input, its colour bar beneath.

    The heatmap is enlarged by whole pixels (nearest neighbour) to about ``side`` pixels,
    and the colour bar with its labels (``-vmax``, ``0``, ``+vmax``) is drawn into the
    same picture (:func:`~xai_core.report.heatmap_with_scale`), so the figure needs no
    style sheet: it reads the same in an untrusted notebook, whose sanitiser drops styles.

    Parameters
    ----------
    values : ndarray of shape (n, ...) holding ``layout.size`` values per row
    data : ndarray of the same shape, optional
        The inputs, drawn beneath (channels averaged).
    layout : ImageLayout
    side : int, default=192
        The enlarged heatmap's longer side, about (a whole multiple of its pixels).

    Returns
    -------
    uris : list of str
        ``n`` PNG data URIs, each of shape ``size``.
    vmax : ndarray of float64 of shape (n,)
        Each row's full-colour magnitude.
    size : (int, int)
        ``(height, width)`` of every picture, in pixels (its colour bar included).
    """
    inputs = None if data is None else layout.grey(np.asarray(data, dtype=np.float64))
    rgb, vmax = heatmap_rgb(layout.grey(values), inputs)
    zoom = max(1, round(side / max(layout.height, layout.width)))
    pictures = [heatmap_with_scale(img, zoom, -v, v) for img, v in zip(rgb, vmax, strict=True)]
    height = max((p.shape[0] for p in pictures), default=0)
    width = max((p.shape[1] for p in pictures), default=0)
    uris = [png_data_uri(_pad(p, height, width)) for p in pictures]
    return uris, vmax, (height, width)


def _pad(pixels: np.ndarray, height: int, width: int) -> np.ndarray:
    """``pixels`` on a white ground of ``(height, width)``, at the top left."""
    if pixels.shape[:2] == (height, width):
        return pixels
    out = np.full((height, width, 3), 255, dtype=np.uint8)
    out[: pixels.shape[0], : pixels.shape[1]] = pixels
    return out


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


#: Most channels a series chart draws, and most columns (steps are averaged into them).
SERIES_PANELS, SERIES_COLUMNS = 4, 200


def series_chart(values: np.ndarray, data: np.ndarray | None) -> dict[str, Any]:
    """Geometry of one row's series chart (macro ``series_chart``): a panel per channel (at
    most :data:`SERIES_PANELS`), each step's attribution as the colour behind it on one
    symmetric scale for the row, and the input as a line over it.

    Parameters
    ----------
    values : ndarray of shape (steps, channels)
    data : ndarray of shape (steps, channels), optional
        The input; steps beyond :data:`SERIES_COLUMNS` are averaged into that many columns.
    """
    label_width, plot_width, panel_height, gap = 74, 360, 44, 6
    steps, channels = values.shape
    shown = min(channels, SERIES_PANELS)
    columns = min(steps, SERIES_COLUMNS)
    edges = np.linspace(0, steps, columns + 1).round().astype(int)

    def binned(a: np.ndarray) -> np.ndarray:  # (columns, channels): each column's mean
        a = np.nan_to_num(np.asarray(a, dtype=np.float64)[:, :shown], posinf=0.0, neginf=0.0)
        return np.add.reduceat(a, edges[:-1], axis=0) / np.diff(edges)[:, None]

    v = binned(values)
    d_all = None if data is None else binned(data)
    vmax = float(np.max(np.abs(v))) if v.size else 0.0
    colours = diverging(v, vmax if vmax > 0 else 1.0)
    step_w = plot_width / columns
    panels = []
    for c in range(shown):
        top = c * (panel_height + gap)
        cells = [
            {
                "x": round(label_width + j * step_w, 2),
                "w": round(step_w + 0.05, 2),  # overlap a hair: no seams between cells
                "fill": "rgb({},{},{})".format(*np.rint(colours[j, c]).astype(int)),
            }
            for j in range(columns)
        ]
        line = ""
        if d_all is not None:
            d = d_all[:, c]
            lo, hi = float(d.min()), float(d.max())
            y = (d - lo) / (hi - lo) if hi > lo else np.full_like(d, 0.5)
            xs = label_width + (np.arange(columns) + 0.5) * step_w
            ys = top + 3 + (1 - y) * (panel_height - 6)
            line = " ".join(f"{x:.1f},{yy:.1f}" for x, yy in zip(xs, ys))
        panels.append({"label": f"channel {c}", "y": top, "cells": cells, "line": line})
    height = shown * (panel_height + gap) - gap
    more = channels - shown
    alt = (
        f"{shown} of {channels} channel(s) over {steps} steps, attributions up to "
        f"{format_number(vmax, 3)} in magnitude as the colour behind each step"
    )
    return {
        "alt": alt,
        "width": label_width + plot_width + 4,
        "height": height,
        "label_width": label_width,
        "plot_width": plot_width,
        "panel_height": panel_height,
        "panels": panels,
        "more": more,
        "vmax": vmax,
    }


def swarm_offsets(v: np.ndarray, bins: int = 60) -> np.ndarray:
    """Vertical offsets in [-1, 1] that spread the points of a beeswarm sharing a bin of ``v``.

    Points alternate above and below their line (0, +1, -1, +2, ...), in the order given,
    scaled by the fullest bin; vectorised.

    Parameters
    ----------
    v : ndarray of shape (n,)
        The points' positions along the line (finite).
    bins : int, default=60
        Bins across the range of ``v``.

    Returns
    -------
    ndarray of float64 of shape (n,)
    """
    n = v.size
    if n < 2:
        return np.zeros(n)
    lo, hi = float(v.min()), float(v.max())
    b = np.floor((v - lo) / ((hi - lo) or 1.0) * (bins - 1)).astype(int)
    order = np.lexsort((np.arange(n), b))
    sorted_b = b[order]
    starts = np.searchsorted(sorted_b, sorted_b, side="left")
    rank = np.arange(n) - starts  # rank within the bin
    counts = np.bincount(b, minlength=bins)[sorted_b]
    # alternate above and below the line: 0, +1, -1, +2, -2, ...
    signed = np.where(rank % 2 == 1, (rank + 1) // 2, -(rank // 2))
    offsets = np.empty(n)
    offsets[order] = signed / np.maximum(counts.max() // 2, 1)
    return np.clip(offsets, -1, 1)
