"""The data a what-if session edits: a numeric table, its feature names, categories and statistics."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from xai_core import ShapeError, UnknownNameError, ValidationError, XaiWarning
from xai_core.images import is_image_shape
from xai_core.validation import check_array, check_unique_columns

__all__ = ["Table", "column_decimals", "number_pair"]

#: Most decimals a column's values are shown with.
MAX_DECIMALS = 6


class Table:
    """Rows of numeric features with names, categorical features and per-feature statistics.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features) or (n_samples, *image_shape), or DataFrame
        Numeric data. DataFrame columns of ``category``, ``object`` or ``bool`` dtype become
        categorical features coded ``0 .. k-1`` in the order of their categories.
    feature_names : sequence of str, optional
        One name per (flattened) feature; defaults to the DataFrame's columns, ``pixel_r_c``
        for images, ``x0, x1, ...`` otherwise.
    categorical_features : sequence of int or str, optional
        Further categorical features of a numeric array; their categories are the values
        that occur (the codes the model receives).

    Attributes
    ----------
    X : ndarray of float64, shape (n_samples, n_features)
        The data, flattened per row.
    n_samples, n_features : int
        Its shape.
    sample_shape : tuple of int
        The shape of one row as the caller passed it (``(28, 28)`` for images).
    categories : dict of int to tuple
        For each categorical feature, its category labels; label ``i`` has code ``i`` for
        DataFrame categories, otherwise the label is the code itself.
    decimals : ndarray of int, shape (n_features,)
        Decimals each feature's values are shown with (:func:`column_decimals`).
    stepped : ndarray of bool, shape (n_features,)
        Whether every loaded value of the feature is a multiple of ``10**-decimals`` (an
        integer column, a column measured to 0.1); if not, the decimals only round.
    """

    def __init__(
        self,
        X: Any,
        feature_names: Sequence[str] | None = None,
        categorical_features: Sequence[int | str] | None = None,
    ) -> None:
        self.categories: dict[int, tuple[Any, ...]] = {}
        self._label_coded: set[int] = set()
        columns = None
        if hasattr(X, "dtypes") and hasattr(X, "columns"):
            X, columns = self._from_frame(X)
        arr = check_array(X, "X", dtype=np.float64)  # a frame's categories are codes by now
        if arr.size == 0:
            raise ShapeError(
                f"X must have shape (n_samples, n_features) with at least one feature; got an "
                f"array of shape {arr.shape}."
            )
        self.sample_shape = tuple(int(s) for s in arr.shape[1:])
        self.X = np.array(arr.reshape(arr.shape[0], -1), dtype=np.float64)  # a copy: edits write it
        self.n_samples, self.n_features = self.X.shape  # edits change values, never the shape
        self.feature_names = self._names(feature_names, columns, self.n_features)
        self._index = {name: j for j, name in enumerate(self.feature_names)}
        for key in categorical_features or ():
            j = self.feature_index(key, "categorical_features")
            if j not in self.categories:
                self.categories[j] = tuple(np.unique(self.X[:, j]).tolist())
        self._stats()

    # -- construction ------------------------------------------------------------------------
    def _from_frame(self, frame: Any) -> tuple[np.ndarray, list[str]]:
        import pandas as pd

        check_unique_columns(frame.columns)
        columns = [str(c) for c in frame.columns]
        out = np.empty((len(frame), len(columns)), dtype=np.float64)
        for j, (name, dtype) in enumerate(zip(frame.columns, frame.dtypes)):
            col = frame[name]
            if isinstance(dtype, pd.CategoricalDtype) or dtype.kind in "OSUb":
                cat = col.astype("category") if not isinstance(dtype, pd.CategoricalDtype) else col
                if cat.isna().any():
                    raise ValidationError(
                        f"X column {str(name)!r} has missing values; fill or drop them first."
                    )
                self.categories[j] = tuple(cat.cat.categories.tolist())
                self._label_coded.add(j)
                out[:, j] = cat.cat.codes.to_numpy()
            elif dtype.kind in "iuf":
                out[:, j] = col.to_numpy(dtype=np.float64)
            else:
                raise ValidationError(
                    f"X column {str(name)!r} has dtype {dtype}; expected numbers or categories."
                )
        return out, columns

    @staticmethod
    def _names(names: Any, columns: list[str] | None, n_features: int) -> tuple[str, ...]:
        if names is None:
            names = columns
        if names is None:
            return tuple(f"x{j}" for j in range(n_features))
        names = tuple(str(n) for n in names)
        if len(names) != n_features:
            raise ShapeError(
                f"feature_names must have {n_features} names (one per feature); got {len(names)}."
            )
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ValidationError(f"feature_names must be unique; repeated: {dup}.")
        return names

    def _stats(self) -> None:
        X = self.X
        self.minimum = X.min(axis=0)
        self.maximum = X.max(axis=0)
        self.std = X.std(axis=0)
        self.decimals, self.stepped = column_decimals(X)
        self.is_categorical = np.zeros(X.shape[1], dtype=bool)
        # p_same[j]: probability that two examples drawn at random share feature j's value.
        self.p_same = np.zeros(X.shape[1])
        for j in self.categories:
            self.is_categorical[j] = True
            _, counts = np.unique(X[:, j], return_counts=True)
            p = counts / counts.sum()
            self.p_same[j] = float(np.sum(p * p))

    # -- lookups -----------------------------------------------------------------------------
    @property
    def is_image(self) -> bool:
        return is_image_shape(self.sample_shape)  # the rule of xai_core.images

    def feature_index(self, key: Any, argument: str = "feature") -> int:
        """The column of ``key``: a feature name, an index, or a pixel ``(row, col[, channel])``."""
        if isinstance(key, str):
            if key not in self._index:
                raise UnknownNameError(f"feature (in {argument})", key, self.feature_names)
            return self._index[key]
        if isinstance(key, tuple) and self.is_image:
            if len(key) != len(self.sample_shape) or not all(
                isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in key
            ):
                raise ValidationError(
                    f"{argument}: a pixel must be a tuple of {len(self.sample_shape)} integers "
                    f"indexing an image of shape {self.sample_shape}; got {key!r}."
                )
            if any(not 0 <= k < s for k, s in zip(key, self.sample_shape)):
                raise ValidationError(
                    f"{argument}: pixel {key!r} is outside the image of shape {self.sample_shape}."
                )
            return int(np.ravel_multi_index(key, self.sample_shape))
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if not 0 <= key < self.n_features:
                raise ValidationError(
                    f"{argument}: feature index must be in [0, {self.n_features}); got {key}."
                )
            return int(key)
        raise UnknownNameError(f"feature (in {argument})", key, self.feature_names)

    def features(self, keys: Any, argument: str) -> list[int]:
        """Columns of one key or a sequence of keys, without repeats."""
        if isinstance(keys, (str, int, np.integer)) or (isinstance(keys, tuple) and self.is_image):
            keys = [keys]
        out: list[int] = []
        for key in keys:
            j = self.feature_index(key, argument)
            if j not in out:
                out.append(j)
        return out

    def row_index(self, row: Any, argument: str = "row") -> int:
        """``row`` checked to be a valid row index."""
        if isinstance(row, bool) or not isinstance(row, (int, np.integer)):
            raise ValidationError(f"{argument} must be an integer row index; got {row!r}.")
        if not 0 <= row < self.n_samples:
            raise ValidationError(
                f"{argument} must be in [0, {self.n_samples}) for data of {self.n_samples} rows; "
                f"got {row}."
            )
        return int(row)

    def code(self, j: int, value: Any) -> float:
        """``value`` for feature ``j`` as the number the model receives; checked, warned when unusual."""
        name = self.feature_names[j]
        if j in self.categories:
            labels = self.categories[j]
            if self._coded(j):
                if value in labels:
                    return float(labels.index(value))
            elif isinstance(value, (int, float, np.integer, np.floating)) and value in labels:
                return float(value)
            raise UnknownNameError(f"category of feature {name!r}", value, [str(c) for c in labels])
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValidationError(f"value of feature {name!r} must be a number; got {value!r}.")
        v = float(value)
        if not np.isfinite(v):
            raise ValidationError(f"value of feature {name!r} must be finite; got {v}.")
        lo, hi = self.minimum[j], self.maximum[j]
        if v < lo or v > hi:
            warnings.warn(
                f"value {v:g} of feature {name!r} is outside the observed range "
                f"[{lo:g}, {hi:g}]; the model has not seen such values.",
                XaiWarning,
                stacklevel=4,
            )
        return v

    def _coded(self, j: int) -> bool:
        """Whether feature ``j``'s categories are labels coded 0..k-1 (DataFrame categories)."""
        return j in self._label_coded

    def label(self, j: int, value: float) -> Any:
        """The human-readable value of feature ``j`` (its category label when categorical)."""
        if j in self.categories and self._coded(j):
            k = int(round(value))
            labels = self.categories[j]
            return labels[k] if 0 <= k < len(labels) else value
        return value

    def text(self, j: int, value: Any) -> str:
        """``value`` of feature ``j`` as the column shows it: its category label, or the number
        with the column's :attr:`decimals` and no thousands separator (``"3"``, ``"0.1"``),
        so that the text reads back as the number."""
        if j in self.categories and self._coded(j):
            return str(self.label(j, value))
        v = float(value)
        if not np.isfinite(v):
            return str(v)
        text = f"{v:.{int(self.decimals[j])}f}"
        return text.lstrip("-") if float(text) == 0 else text

    def ranges(self, ranges: Mapping[Any, Any] | None) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds per feature: observed range, overridden by ``ranges``."""
        lo, hi = self.minimum.copy(), self.maximum.copy()
        if ranges is None:
            return lo, hi
        if not isinstance(ranges, Mapping):
            raise ValidationError(
                f"ranges must be a mapping of feature to (low, high); got {type(ranges).__name__}."
            )
        for key, bounds in ranges.items():
            j = self.feature_index(key, "ranges")
            a, b = number_pair(bounds, f"ranges[{key!r}] must be a pair (low, high) of numbers")
            if not (np.isfinite(a) and np.isfinite(b)) or a > b:
                raise ValidationError(
                    f"ranges[{key!r}] must be finite with low <= high; got ({a}, {b})."
                )
            lo[j], hi[j] = a, b
        return lo, hi


def column_decimals(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decimals per column that show its values as the data has them, and whether they are exact.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)

    Returns
    -------
    decimals : ndarray of int, shape (n_features,)
        The fewest decimals ``d`` (at most :data:`MAX_DECIMALS`) at which every finite value
        is a multiple of ``10**-d`` up to float32 rounding: 0 for integers, 1 for a column
        in steps of 0.1. A column on no such grid (measurements, z-scores) gets the decimals
        that show its range to four significant figures.
    stepped : ndarray of bool, shape (n_features,)
        True where the values are on the ``10**-decimals`` grid.
    """
    X = np.asarray(X, dtype=np.float64)
    n_features = X.shape[1]
    decimals = np.zeros(n_features, dtype=np.int64)
    stepped = np.zeros(n_features, dtype=bool)
    # float32 data carries about 7 significant digits: 0.1f is 0.10000000149
    tol = 4 * np.finfo(np.float32).eps
    for j in range(n_features):
        col = X[:, j][np.isfinite(X[:, j])]
        if not col.size:
            stepped[j] = True
            continue
        scale = np.maximum(np.abs(col), 1e-12)
        for d in range(MAX_DECIMALS + 1):
            if np.all(np.abs(np.round(col, d) - col) <= tol * scale):
                decimals[j], stepped[j] = d, True
                break
        else:
            span = float(col.max() - col.min()) or float(np.abs(col).max()) or 1.0
            decimals[j] = int(np.clip(3 - np.floor(np.log10(span)), 0, MAX_DECIMALS))
    return decimals, stepped


def number_pair(value: Any, what: str) -> tuple[float, float]:
    """``value`` as two floats; otherwise a ValidationError saying ``what`` and what arrived."""
    try:
        a, b = (float(v) for v in value)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{what}; got {value!r}.") from exc
    return a, b
