"""Colouring the view by a column: a palette with a legend, or a continuous scale with a bar.

A column is *numeric* when every value that is not missing (empty, ``nan``, ``none``) reads
as a finite number and either some value is not an integer or there are more distinct values
than the palette has colours; anything else (words, a handful of class ids) is *categorical*.
The view's script and the static picture read the same encoding: categorical columns as
codes into their sorted distinct values, numeric ones quantised to the 256 steps of
:data:`SCALE` (``-1`` for a missing value).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "MISSING_COLOR",
    "PALETTE",
    "SCALE",
    "column_colors",
    "encode_column",
]

#: Categorical colours (matplotlib's tab20 order); they repeat beyond 20 values.
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
    "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
)  # fmt: skip
#: Points whose value is missing, in a numeric column.
MISSING_COLOR = "#b0b0b0"
#: Legend entries shown for a categorical column (the rest are counted).
MAX_LEGEND = 2 * len(PALETTE)
_MISSING = frozenset({"", "nan", "none", "null", "na", "n/a"})
# Viridis (perceptually uniform, readable by most colour-blind viewers) at nine even stops.
_VIRIDIS = (
    (68, 1, 84), (71, 44, 122), (59, 81, 139), (44, 113, 142), (33, 144, 141),
    (39, 173, 129), (92, 200, 99), (170, 220, 50), (253, 231, 37),
)  # fmt: skip


def _scale() -> tuple[str, ...]:
    stops = np.asarray(_VIRIDIS, dtype=np.float64)
    t = np.linspace(0.0, 1.0, 256)
    at = np.linspace(0.0, 1.0, len(stops))
    rgb = np.rint(np.stack([np.interp(t, at, stops[:, c]) for c in range(3)], axis=1))
    return tuple(f"#{r:02x}{g:02x}{b:02x}" for r, g, b in rgb.astype(int).tolist())


#: The continuous scale: 256 colours from low (dark violet) to high (yellow).
SCALE = _scale()


def _numbers(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``values`` (str) as floats and a mask of the missing ones, or None if not all numbers."""
    text = np.char.strip(np.asarray(values, dtype=str))
    missing = np.isin(np.char.lower(text), sorted(_MISSING))
    if missing.all():
        return None
    try:
        nums = text[~missing].astype(np.float64)
    except ValueError:
        return None
    if not np.isfinite(nums).all():
        return None
    out = np.full(text.shape[0], np.nan)
    out[~missing] = nums
    return out, missing


def _number_text(v: float) -> str:
    """``v`` in 4 significant figures, for the colour bar's ends."""
    return f"{float(f'{v:.4g}'):g}"


def encode_column(
    name: str, values: np.ndarray, short: Any = str, *, categorical: bool = False
) -> dict[str, Any]:
    """One column's colouring, as the view's JSON carries it.

    Parameters
    ----------
    name : str
    values : ndarray of shape (n_samples,) of str
    short : callable, optional
        Shortens the text of a value for the legend.
    categorical : bool, default=False
        Always a palette (labels are classes even when they are numbers).

    Returns
    -------
    dict
        ``{"name", "kind": "cat", "classes", "codes", "counts"}`` or
        ``{"name", "kind": "num", "t", "min", "max", "min_text", "max_text", "missing"}``; ``codes`` index
        ``classes`` (sorted distinct values), ``t`` are steps of :data:`SCALE` (-1: missing).
    """
    parsed = None if categorical else _numbers(values)
    if parsed is not None:
        nums, missing = parsed
        present = nums[~missing]
        distinct = np.unique(present)
        if distinct.size > len(PALETTE) or not np.all(distinct == np.rint(distinct)):
            lo, hi = float(present.min()), float(present.max())
            span = hi - lo
            t = np.zeros(nums.shape[0], dtype=np.int64)
            if span > 0:
                t[~missing] = np.rint((present - lo) / span * (len(SCALE) - 1)).astype(np.int64)
            t[missing] = -1
            return {
                "name": name,
                "kind": "num",
                "t": t.tolist(),
                "min": lo,
                "max": hi,
                "min_text": _number_text(lo),
                "max_text": _number_text(hi),
                "missing": int(missing.sum()),
            }
    classes, codes = np.unique(np.asarray(values, dtype=str), return_inverse=True)
    codes = codes.ravel()
    return {
        "name": name,
        "kind": "cat",
        "classes": [short(str(c)) for c in classes.tolist()],
        "codes": codes.tolist(),
        "counts": np.bincount(codes, minlength=len(classes)).tolist(),
    }


def column_colors(encoded: dict[str, Any]) -> np.ndarray:
    """Each point's colour (``#rrggbb``) under an :func:`encode_column` result, as the script draws it."""
    if encoded["kind"] == "cat":
        codes = np.asarray(encoded["codes"], dtype=np.int64)
        return np.asarray(PALETTE, dtype=object)[codes % len(PALETTE)]
    t = np.asarray(encoded["t"], dtype=np.int64)
    return np.where(t >= 0, np.asarray(SCALE, dtype=object)[np.maximum(t, 0)], MISSING_COLOR)
