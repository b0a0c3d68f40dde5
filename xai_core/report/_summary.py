"""Options and metadata summarised for people: arrays by shape, dtype and a few values.

A SHAP background of 50 rows is 300 KB of floats; shown raw it buries the page. Every
place that shows options or metadata (report sections, their JSON blocks, provenance)
goes through :func:`summarize` (JSON-ready) or :func:`describe` (one line of text).
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real
from typing import Any

import numpy as np

from xai_core.report._html import format_number, isolate, plain

__all__ = ["HEAD", "describe", "format_column", "summarize"]

#: Leading values shown of an array.
HEAD = 4
_MAX_TEXT = 200
_MAX_ITEMS = 20


def _array(value: Any) -> np.ndarray | None:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)) and len(value) > _MAX_ITEMS:
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError):
            return None
        return arr if arr.dtype.kind in "biufc" else None
    return None


def _stats(arr: np.ndarray) -> dict[str, Any]:
    out: dict[str, Any] = {
        "shape": list(arr.shape),
        "dtype": str(arr.dtype),
        "head": plain(arr.reshape(-1)[:HEAD]),
    }
    if arr.dtype.kind in "biuf" and arr.size:
        v = arr.astype(np.float64)
        finite = v[np.isfinite(v)]
        if finite.size:
            out["min"], out["max"] = float(finite.min()), float(finite.max())
            out["mean"] = float(finite.mean())
    return out


def summarize(value: Any) -> Any:
    """``value`` as JSON-ready Python, every array of more than one value summarised.

    Arrays (and long numeric lists) become ``{"array": {"shape", "dtype", "head", "min",
    "max", "mean"}}``; mappings and short sequences are summarised item by item; long
    strings are cut to 200 characters.
    """
    arr = _array(value)
    if arr is not None and arr.size > 1:
        return {"array": _stats(arr)}
    if isinstance(value, np.ndarray):
        return plain(value.reshape(-1)[0]) if value.size == 1 else []
    if isinstance(value, Mapping):
        return {str(k): summarize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [summarize(v) for v in value]
    if isinstance(value, str) and len(value) > _MAX_TEXT:
        return value[: _MAX_TEXT - 1] + "…"
    if callable(value):
        return getattr(value, "__qualname__", None) or type(value).__name__
    return plain(value)


def describe(value: Any) -> str:
    """One line for a person: ``array float64 (3, 784): 0.5488, 0.7152, … (min 0, max 1)``."""
    arr = _array(value)
    if arr is not None and arr.size > 1:
        s = _stats(arr)
        shape = " × ".join(map(str, arr.shape))
        head = ", ".join(format_number(v) for v in arr.reshape(-1)[:HEAD].tolist())
        more = ", …" if arr.size > HEAD else ""
        text = f"array {s['dtype']} ({shape}): {head}{more}"
        if "min" in s and arr.size > HEAD:
            text += (
                f" (min {format_number(s['min'])}, mean {format_number(s['mean'])},"
                f" max {format_number(s['max'])})"
            )
        return text
    if isinstance(value, np.ndarray):
        return describe(value.reshape(-1)[0].item()) if value.size == 1 else "empty array"
    if isinstance(value, (bool, np.bool_)) or value is None:
        return str(value)
    if isinstance(value, (Real, np.number)):
        return format_number(value)
    if isinstance(value, str):
        return isolate(value if len(value) <= _MAX_TEXT else value[: _MAX_TEXT - 1] + "…")
    if isinstance(value, Mapping):
        items = [f"{isolate(k)}={describe(v)}" for k, v in list(value.items())[:_MAX_ITEMS]]
        more = ", …" if len(value) > _MAX_ITEMS else ""
        return "{" + ", ".join(items) + more + "}"
    if isinstance(value, (list, tuple)):
        items = [describe(v) for v in value[:_MAX_ITEMS]]
        return "[" + ", ".join(items) + (", …" if len(value) > _MAX_ITEMS else "") + "]"
    if callable(value):
        return getattr(value, "__qualname__", None) or type(value).__name__
    text = str(value)
    return isolate(text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…")


def format_column(values: Any, digits: int = 4) -> list[str] | None:
    """One number format for a whole table column, or None if it is not all numbers.

    Integers exactly, with thousands separators; other numbers with the same count of
    decimals, enough for ``digits`` significant figures of the largest magnitude (at most
    6), or all in scientific notation when the column spans below 0.001 or from 1e7 up. A
    non-zero number those decimals would show with fewer than two significant figures
    (``2.6e-09`` beside ``0.05``) keeps ``digits`` significant figures of its own, so that
    no difference reads as zero. NaN is ``NaN`` and None ``–``.
    """
    vals = list(values)
    if not vals or not all(
        v is None or (isinstance(v, (Real, np.number)) and not isinstance(v, (bool, np.bool_)))
        for v in vals
    ):
        return None
    nums = [v for v in vals if v is not None]
    if all(isinstance(v, (int, np.integer)) for v in nums):
        return [format_number(v) for v in vals]
    arr = np.asarray(nums, dtype=np.float64)
    finite = np.abs(arr[np.isfinite(arr)])
    if finite.size and np.all(np.isclose(finite, np.round(finite))) and finite.max() < 1e15:
        decimals, sci = 0, False
    elif finite.size == 0:
        decimals, sci = 0, False
    else:
        top = float(finite.max())
        nonzero = finite[finite > 0]
        sci = top >= 1e7 or (nonzero.size > 0 and top < 1e-3)
        decimals = min(6, max(0, digits - 1 - int(np.floor(np.log10(top))))) if top > 0 else 0

    def one(v: Any) -> str:
        if v is None:
            return "–"
        f = float(v)
        if np.isnan(f):
            return "NaN"
        if not np.isfinite(f):
            return "∞" if f > 0 else "−∞"
        if sci:
            return f"{f:.{digits - 1}e}"
        if f != 0 and abs(f) < 10.0 ** (1 - decimals):
            return format_number(f, digits)
        return f"{f:,.{decimals}f}"

    return [one(v) for v in vals]
