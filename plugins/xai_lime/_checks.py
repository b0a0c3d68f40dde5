"""Checks of option values, run before any model call. Messages name the option."""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core import ShapeError, ValidationError
from xai_core.validation import check_bool, check_choice, check_float, check_int

__all__ = ["check_bool", "check_choice", "check_int", "check_float", "check_matrix"]


def check_matrix(value: Any, name: str, n_columns: int) -> np.ndarray:
    """Return ``value`` as a finite float64 array of shape (n_rows, n_columns), or raise.

    Parameters
    ----------
    value : array-like of shape (n_rows, n_columns) or (n_rows, *sample_shape)
        Extra dimensions are flattened into columns.
    name : str
        The option's name, for messages.
    n_columns : int
        Columns required (features of one sample of ``X``).
    """
    if hasattr(value, "to_numpy"):  # a pandas DataFrame
        value = value.to_numpy()
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ValidationError(
            f"{name} must be an array of shape (n_rows, {n_columns}); {exc}."
        ) from exc
    if arr.dtype.kind not in "biuf":
        raise ValidationError(
            f"{name} must be numeric, of shape (n_rows, {n_columns}); got dtype {arr.dtype}."
        )
    if arr.ndim < 2 or int(np.prod(arr.shape[1:])) != n_columns:
        raise ShapeError(
            f"{name} must have shape (n_rows, {n_columns}), one column per feature of X; "
            f"got an array of shape {arr.shape}."
        )
    if len(arr) == 0:
        raise ValidationError(f"{name} must have at least one row; got shape {arr.shape}.")
    arr = arr.reshape(len(arr), n_columns).astype(np.float64)
    if not np.isfinite(arr).all():
        first = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise ValidationError(f"{name} contains NaN or infinite values; the first is at {first}.")
    return arr
