"""What the perturbation methods switch off: sliding windows, or groups of a feature mask.

A set of features is a boolean mask over one sample's shape. :class:`Windows` are Captum's
occlusion windows: a window of ``sliding_window_shapes`` at every multiple of ``strides``
along each axis, ``ceil((size - window) / stride) + 1`` positions per axis, the last one cut
at the edge. :class:`Groups` are the distinct values of an integer feature mask (one group
per feature without a mask). Both hand out their masks a block at a time, so memory stays
bounded however many sets there are.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from xai_core import ShapeError, ValidationError

__all__ = ["Windows", "Groups"]


def _per_axis(value: Any, name: str, ndim: int, low: int) -> tuple[int, ...]:
    """An int for every axis, or a tuple of ``ndim`` ints, each ``>= low``."""
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * ndim
    if len(values) != ndim or any(
        isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low for v in values
    ):
        raise ValidationError(
            f"{name} must be an integer >= {low} or a tuple of {ndim} of them (one per axis "
            f"of a sample); got {value!r}."
        )
    return tuple(int(v) for v in values)


class Windows:
    """Captum's sliding occlusion windows over samples of ``input_shape``.

    Parameters
    ----------
    input_shape : tuple of int
    window : tuple of int
        ``sliding_window_shapes``: the window's extent along every axis of a sample.
    strides : int or tuple of int

    Attributes
    ----------
    count : int
        Windows in all.
    """

    def __init__(self, input_shape: tuple[int, ...], window: Any, strides: Any) -> None:
        ndim = len(input_shape)
        if not isinstance(window, (tuple, list)):
            raise ValidationError(
                f"sliding_window_shapes must be a tuple with one extent per axis of a sample "
                f"{tuple(input_shape)}, e.g. {(1,) * (ndim - 2) + (8, 8)}; got {window!r}."
            )
        window = _per_axis(window, "sliding_window_shapes", ndim, 1)
        strides = _per_axis(strides, "strides", ndim, 1)
        for axis, (size, w, s) in enumerate(zip(input_shape, window, strides)):
            if w > size:
                raise ShapeError(
                    f"sliding_window_shapes {window} is larger than a sample {tuple(input_shape)} "
                    f"along axis {axis}."
                )
            if w < size and s > w:
                raise ValidationError(
                    f"strides {strides} skip features: along axis {axis} the stride {s} is "
                    f"larger than the window {w}."
                )
        self.shape = tuple(input_shape)
        counts = [math.ceil((size - w) / s) + 1 for size, w, s in zip(input_shape, window, strides)]
        self.counts = tuple(counts)
        self.count = math.prod(counts)
        self._axes = []  # per axis, (positions, size) booleans: which features each covers
        for size, w, s, k in zip(input_shape, window, strides, counts):
            start = np.arange(k)[:, None] * s
            pos = np.arange(size)[None, :]
            self._axes.append((pos >= start) & (pos < start + w))

    def masks(self, start: int, stop: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Windows ``start`` to ``stop``: bool of shape (1, stop - start, *input_shape), the
        same for every row (``rows`` is ignored)."""
        index = np.unravel_index(np.arange(start, stop), self.counts)
        ndim = len(self.shape)
        out = None
        for axis, (table, which) in enumerate(zip(self._axes, index)):
            part = table[which].reshape(
                (len(which),) + (1,) * axis + (-1,) + (1,) * (ndim - 1 - axis)
            )
            out = part if out is None else out & part
        return out[None]

    def coverage(self) -> np.ndarray:
        """How many windows cover each feature: float64 of shape ``input_shape``."""
        out = np.ones(self.shape)
        for axis, table in enumerate(self._axes):
            per = table.sum(axis=0).astype(np.float64)
            out = out * per.reshape((1,) * axis + (-1,) + (1,) * (len(self.shape) - 1 - axis))
        return out


class Groups:
    """The groups of an integer feature mask (every feature its own group without one).

    Parameters
    ----------
    input_shape : tuple of int
    feature_mask : array-like of int, optional
        Of shape ``input_shape`` (shared by every row, or ``(1, *input_shape)``), or
        ``(n_rows, *input_shape)``: one mask per row of the data, rows picked by
        :meth:`for_rows`. Features with the same value form a group.
    n_rows : int or None
        Rows of the whole request, which a per-row mask must match; None in a chunk
        (which picks its rows by global index).

    Attributes
    ----------
    count : int
        Groups in all (distinct values over every row's mask).
    """

    def __init__(self, input_shape: tuple[int, ...], feature_mask: Any, n_rows: int) -> None:
        self.shape = tuple(input_shape)
        d = math.prod(input_shape)
        if feature_mask is None:
            self._mask = np.arange(d, dtype=np.int64).reshape(1, *input_shape)
        else:
            mask = np.asarray(feature_mask)
            if mask.dtype.kind not in "iub":
                raise ValidationError(
                    f"feature_mask must hold integers (a group id per feature); got {mask.dtype}."
                )
            if mask.shape == self.shape:
                mask = mask[None]
            if mask.shape[1:] != self.shape or (
                n_rows is not None and len(mask) not in (1, n_rows)
            ):
                rows = "n_samples" if n_rows is None else n_rows
                raise ShapeError(
                    f"feature_mask must have a sample's shape {self.shape}, or (1 or "
                    f"{rows}, *{self.shape}) for one mask per row; got {mask.shape}."
                )
            self._mask = mask.astype(np.int64)
        self.values = np.unique(self._mask)
        self.count = len(self.values)

    def masks(self, start: int, stop: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Groups ``start`` to ``stop``: bool of shape (1 or len(rows), stop - start,
        *input_shape); ``rows`` (global row indices) pick the rows' own masks, if any."""
        mask = self._mask
        if len(mask) > 1 and rows is not None:
            if rows.max(initial=0) >= len(mask):
                raise ShapeError(
                    f"feature_mask has {len(mask)} rows; row {rows.max()} is explained."
                )
            mask = mask[rows]
        values = self.values[start:stop].reshape((1, -1) + (1,) * len(self.shape))
        return mask[:, None] == values
