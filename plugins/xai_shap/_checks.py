"""Cheap checks of option values, run before any model call. Messages name the option."""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core import ShapeError, ValidationError
from xai_core.validation import check_bool, check_int, check_seed

__all__ = ["check_bool", "check_int", "check_max_evals", "check_rows", "check_seed"]


def check_max_evals(value: Any) -> int | None:
    """Return ``max_evals`` as a positive int, or ``None`` for ``"auto"``; otherwise raise."""
    if isinstance(value, str) and value == "auto":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValidationError(f"max_evals must be 'auto' or an integer >= 1; got {value!r}.")
    return int(value)


def check_rows(value: Any, name: str, sample_shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Return ``value`` as a finite array of shape (n_rows, *sample_shape) of ``dtype``, or raise.

    Accepts numpy arrays, nested lists and pandas DataFrames with numeric columns.
    """
    expected = "(n_rows" + "".join(f", {d}" for d in sample_shape) + ")"
    if hasattr(value, "columns") and hasattr(value, "dtypes"):
        bad = [str(c) for c, dt in zip(value.columns, value.dtypes) if dt.kind not in "biuf"]
        if bad:
            raise ValidationError(f"{name} must have numeric columns only; columns {bad} are not.")
        value = value.to_numpy()
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{name} must be an array of shape {expected}; {exc}.") from None
    if arr.dtype.kind not in "biuf":
        raise ValidationError(f"{name} must be numeric; got an array of dtype {arr.dtype}.")
    n_features = int(np.prod(sample_shape))
    if arr.ndim < 2 or tuple(arr.shape[1:]) != tuple(sample_shape):
        # one row per sample, with the sample's shape (a flat row of as many features is accepted)
        if not (arr.ndim == 2 and arr.shape[1] == n_features):
            raise ShapeError(
                f"{name} must have shape {expected}, the shape of the rows explained; "
                f"got an array of shape {arr.shape}."
            )
        arr = arr.reshape((len(arr), *sample_shape))
    if len(arr) == 0:
        raise ValidationError(f"{name} must contain at least one row; got shape {arr.shape}.")
    arr = np.asarray(arr, dtype=dtype)
    if not np.isfinite(arr).all():
        first = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise ValidationError(f"{name} contains NaN or infinite values; the first is at {first}.")
    return arr
