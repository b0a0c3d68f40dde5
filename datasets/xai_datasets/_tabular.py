"""Tabular data: scikit-learn's bundled digits and breast cancer sets, and any CSV file."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.errors import DataError, UnknownNameError, ValidationError, XaiWarning

from ._dataset import Dataset

__all__ = ["load_digits", "load_breast_cancer", "load_csv"]

_TASKS = ("classification", "regression")
#: A numeric target with at most this many distinct integral values is taken as classes.
MAX_INTEGER_CLASSES = 20


def load_digits() -> Dataset:
    """Load scikit-learn's bundled 8x8 handwritten digits (no network).

    Returns
    -------
    Dataset
        1,797 images: ``X`` float32 of shape ``(1797, 64)`` scaled from 0..16 to [0, 1],
        ``y`` int64 in 0..9, ``image_shape=(8, 8)``, ``class_names`` ``"0"``...``"9"``.
    """
    from sklearn import datasets

    bunch = datasets.load_digits()
    return Dataset(
        X=np.divide(bunch.data, 16.0, dtype=np.float32),
        y=bunch.target.astype(np.int64),
        feature_names=tuple(bunch.feature_names),
        class_names=tuple(str(t) for t in bunch.target_names),
        image_shape=(8, 8),
        name="digits",
        description=(
            "Optical recognition of handwritten digits: 1,797 8x8 images, 0-16 ink counts "
            "scaled to [0, 1], about 180 per class (E. Alpaydin, C. Kaynak). The copy bundled "
            "with scikit-learn. Source: UCI Machine Learning Repository, "
            "https://archive.ics.uci.edu/dataset/80. License: CC BY 4.0."
        ),
        source="scikit-learn's bundled copy of the UCI optical digits test set",
        license="CC BY 4.0",
        target_name="digit",
    )


def load_breast_cancer() -> Dataset:
    """Load scikit-learn's bundled Breast Cancer Wisconsin (Diagnostic) table (no network).

    Returns
    -------
    Dataset
        569 tumours: ``X`` float32 of shape ``(569, 30)`` (raw, unscaled measurements),
        ``y`` int64 with ``class_names=("malignant", "benign")``.
    """
    from sklearn import datasets

    bunch = datasets.load_breast_cancer()
    return Dataset(
        X=bunch.data.astype(np.float32),
        y=bunch.target.astype(np.int64),
        feature_names=tuple(str(f) for f in bunch.feature_names),
        class_names=tuple(str(t) for t in bunch.target_names),
        name="breast-cancer",
        description=(
            "Breast Cancer Wisconsin (Diagnostic): 569 tumours, 30 features computed from "
            "digitised images of fine needle aspirates (212 malignant, 357 benign); "
            "W. H. Wolberg, W. N. Street, O. L. Mangasarian. The copy bundled with "
            "scikit-learn. Source: UCI Machine Learning Repository, "
            "https://archive.ics.uci.edu/dataset/17. License: CC BY 4.0."
        ),
        source="scikit-learn's bundled copy of the UCI Breast Cancer Wisconsin (Diagnostic) set",
        license="CC BY 4.0",
        target_name="diagnosis",
    )


def _name_of(value: object) -> str:
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _encode(values: np.ndarray) -> tuple[tuple[str, ...], np.ndarray]:
    """Sorted category names and int64 codes of non-missing ``values``."""
    if values.dtype.kind in "biuf":
        uniq, codes = np.unique(values, return_inverse=True)
        return tuple(_name_of(v) for v in uniq), codes.astype(np.int64)
    strings = np.array([str(v) for v in values], dtype=object)
    uniq, codes = np.unique(strings, return_inverse=True)
    return tuple(uniq.tolist()), codes.astype(np.int64)


def _rows(index: np.ndarray, bad: np.ndarray, values: np.ndarray) -> str:
    """``row 4 ('abc'), row 9 ('1e400')``: data rows numbered from 1 after the header."""
    where = np.flatnonzero(bad)
    cells = [v if isinstance(v, str) else float(v) for v in (values[i] for i in where[:5])]
    shown = ", ".join(f"row {int(index[i]) + 1} ({v!r})" for i, v in zip(where, cells))
    return shown + (f" and {len(where) - 5} more" if len(where) > 5 else "")


def _check_not_mixed(path: Path, col: str, series: object, isna: np.ndarray) -> None:
    """Refuse a text column whose cells are mostly numbers: a numeric column with typos."""
    import pandas as pd

    cells = series.to_numpy(dtype=object)  # type: ignore[attr-defined]
    parsed = pd.to_numeric(pd.Series(cells[~isna]), errors="coerce").to_numpy()
    numbers = ~np.isnan(parsed)
    if not numbers.any() or numbers.all() or numbers.sum() * 2 < len(numbers):
        return
    index = np.asarray(series.index)[~isna]  # type: ignore[attr-defined]
    raise DataError(
        f"{path.name}: column {col!r} is mixed: {int(numbers.sum())} of {len(numbers)} cells "
        f"are numbers but {int((~numbers).sum())} are not: "
        f"{_rows(index, ~numbers, cells[~isna])} (rows counted from 1 after the header). "
        f"Fix those cells, leave them empty to mark them missing, or list {col!r} in "
        "categorical=[...] to read every cell as a category name"
    )


def _check_finite(path: Path, col: str, values: np.ndarray, index: object) -> None:
    """Refuse infinite cells and cells beyond float32's range (they would become infinite)."""
    big = np.abs(values) > np.finfo(np.float32).max
    if big.any():
        raise DataError(
            f"{path.name}: column {col!r}: {int(big.sum())} cells are infinite or beyond "
            f"float32's range (about 3.4e38): {_rows(np.asarray(index), big, values)} "
            "(rows counted from 1 after the header). Fix them, leave them empty to mark them "
            "missing, or pass allow_infinite=True to keep them as infinities"
        )


def load_csv(
    path: str | os.PathLike[str],
    target: str,
    *,
    task: str | None = None,
    categorical: Sequence[str] = (),
    drop: Sequence[str] = (),
    sep: str = ",",
    name: str | None = None,
    allow_infinite: bool = False,
) -> Dataset:
    """Load a Kaggle-style CSV table: one row per sample, one column the target.

    Parameters
    ----------
    path : str or path-like
        The CSV file (read with ``pandas.read_csv``).
    target : str
        The target column's name.
    task : {"classification", "regression"}, optional
        Default: classification when the target is text or boolean, or numeric with only
        integral values and at most 20 of them; regression otherwise.
    categorical : sequence of str
        Numeric columns to treat as categories too (e.g. ``"Pclass"``). Text and
        categorical columns always are.
    drop : sequence of str
        Columns to leave out, e.g. identifiers such as ``"PassengerId"``.
    sep : str
        Field separator.
    name : str, optional
        The dataset's name; default: the file's stem.
    allow_infinite : bool, default=False
        Keep infinite cells (``inf``, ``-inf``, and numbers such as ``1e400`` or ``1e39``
        beyond float32's range) as infinities in ``X`` (and a regression ``y``). By
        default they are refused: attributions of infinite inputs are NaN or meaningless.

    Returns
    -------
    Dataset
        ``X`` float32 of shape ``(n_rows, n_columns - 1 - len(drop))``. Numeric columns
        keep their values. Categorical columns hold ordinal codes 0..k-1 of their sorted
        category names, listed in ``categories[column]``, and are named in
        ``categorical_features`` (one-hot encoding is left to the model pipeline, so
        attributions stay one per column). Missing feature values stay NaN and are
        counted in ``missing``. For classification ``y`` holds int64 codes of the
        target's sorted values, named in ``class_names``; for regression float32 values.

    Warns
    -----
    XaiWarning
        When values are missing (counts per column; rows whose target is missing are
        dropped), or a categorical column has nearly one category per row.

    Raises
    ------
    DataError
        If the file is missing, cannot be parsed or has no rows; if a column that is not
        listed in ``categorical`` holds numbers in most cells and text in others (a typo
        in a numeric column), naming the column, the rows and the cells; or if a numeric
        cell is infinite or beyond float32's range and ``allow_infinite`` is False.
    UnknownNameError
        If ``target``, a ``categorical`` or a ``drop`` column is not in the file; the
        message lists the columns.
    ValidationError
        If no feature column remains, or a regression target is not numeric.
    """
    path = Path(path).expanduser()
    frame = _read_table(path, sep)
    frame, features = _check_columns(path, frame, target, task, categorical, drop)
    frame, missing, lost = _drop_rows_without_target(path, frame, target)
    X, categories, notes = _feature_matrix(
        path, frame, features, categorical, allow_infinite, missing
    )
    _warn_about(path, target, missing, lost, notes)
    task, class_names, y = _target_values(path, frame, target, task, allow_infinite)

    n = len(frame)
    cat_cols = tuple(c for c in features if c in categories)
    summary = f"{len(class_names)} classes" if task == "classification" else "regression"
    return Dataset(
        X=X,
        y=y,
        feature_names=tuple(features),
        class_names=class_names,
        task=task,
        name=name or path.stem,
        description=(
            f"Table read from {path.name}: {n} rows, {len(features)} features "
            f"({len(cat_cols)} categorical, ordinal-coded), target {target!r} ({summary})."
            + (f" Missing values: {dict(missing)}." if missing else "")
            + " License: as given by the file's source."
        ),
        source=path.name,
        license="as given by the file's source",
        target_name=target,
        categorical_features=cat_cols,
        categories=categories,
        missing=missing,
    )


# -- the steps of load_csv -------------------------------------------------------------------
def _read_table(path: Path, sep: str) -> Any:
    """The file as a DataFrame with text column names, or a DataError."""
    import pandas as pd

    if not path.is_file():
        raise DataError(f"{path}: no such file")
    try:
        frame = pd.read_csv(path, sep=sep)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot be read as CSV: {exc}") from exc
    frame.columns = [str(c) for c in frame.columns]
    return frame


def _check_columns(
    path: Path,
    frame: Any,
    target: str,
    task: str | None,
    categorical: Sequence[str],
    drop: Sequence[str],
) -> tuple[Any, list[str]]:
    """The frame without the ``drop`` columns, and its feature columns; every name checked."""
    columns = list(frame.columns)
    if task is not None and task not in _TASKS:
        raise UnknownNameError("task", task, _TASKS)
    for col in [target, *categorical, *drop]:
        if col not in columns:
            raise UnknownNameError("column", col, columns)
    if target in drop or target in categorical:
        raise ValidationError(f"target {target!r} must not be listed in drop or categorical")
    frame = frame.drop(columns=list(drop))
    if len(frame) == 0:
        raise DataError(f"{path}: the file has a header but no data rows")
    features = [c for c in frame.columns if c != target]
    if not features:
        raise ValidationError(
            f"the table must keep at least one feature column besides target {target!r}; "
            f"got columns {columns} with drop={list(drop)}"
        )
    return frame, features


def _drop_rows_without_target(
    path: Path, frame: Any, target: str
) -> tuple[Any, dict[str, int], int]:
    """The rows with a target; the missing counts so far (the target's) and how many rows went."""
    missing: dict[str, int] = {}
    target_col = frame[target]
    lost = int(target_col.isna().sum())
    if lost:
        missing[target] = lost
        frame = frame.loc[target_col.notna().to_numpy()]
        if len(frame) == 0:
            raise DataError(f"{path}: target {target!r} has no values")
    return frame, missing, lost


def _feature_matrix(
    path: Path,
    frame: Any,
    features: list[str],
    categorical: Sequence[str],
    allow_infinite: bool,
    missing: dict[str, int],
) -> tuple[np.ndarray, dict[str, tuple[str, ...]], list[str]]:
    """``X`` float32 of shape (n_rows, n_features), the categories of the coded columns and notes.

    Adds each feature's count of missing values to ``missing``; a note names each
    categorical column with nearly one category per row.
    """
    n = len(frame)
    X = np.empty((n, len(features)), dtype=np.float32)
    categories: dict[str, tuple[str, ...]] = {}
    notes: list[str] = []
    for j, col in enumerate(features):
        series = frame[col]
        isna = series.isna().to_numpy()
        if isna.any():
            missing[col] = int(isna.sum())
        names = _fill_column(path, X, j, col, series, isna, col in categorical, allow_infinite)
        if names is None:
            continue
        categories[col] = names
        if len(names) > 20 and len(names) > 0.5 * n:
            notes.append(f"{col} ({len(names)} categories in {n} rows)")
    return X, categories, notes


def _fill_column(
    path: Path,
    X: np.ndarray,
    j: int,
    col: str,
    series: Any,
    isna: np.ndarray,
    listed: bool,
    allow_infinite: bool,
) -> tuple[str, ...] | None:
    """Write column ``col`` into ``X[:, j]``: numbers as they are, categories as codes (NaN missing).

    Returns the sorted category names of a categorical column (text, boolean or
    ``listed`` in ``categorical``), None for a numeric one.
    """
    import pandas as pd

    numeric = pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)
    if not numeric and not listed:
        _check_not_mixed(path, col, series, isna)
    if numeric and not listed:
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
        if not allow_infinite:
            _check_finite(path, col, values, series.index)
        with np.errstate(over="ignore"):  # only when allowed: 1e39 -> inf
            X[:, j] = values
        return None
    raw = series.to_numpy(dtype=object)[~isna]
    if numeric:
        raw = raw.astype(np.float64)
    names, codes = _encode(raw)
    X[:, j] = np.nan
    X[~isna, j] = codes
    return names


def _warn_about(
    path: Path, target: str, missing: dict[str, int], lost: int, notes: list[str]
) -> None:
    """Warn, from the caller of :func:`load_csv`, of missing values and near-identifier columns."""
    if missing:
        feats = [f"{c} {k}" for c, k in missing.items() if c != target]
        parts = []
        if feats:
            parts.append(f"kept as NaN in X: {', '.join(feats)}")
        if lost:
            parts.append(f"{lost} rows without a target {target!r} dropped")
        warnings.warn(XaiWarning(f"{path.name}: missing values: {'; '.join(parts)}"), stacklevel=3)
    if notes:
        warnings.warn(
            XaiWarning(
                f"{path.name}: nearly one category per row in {', '.join(notes)}; "
                "identifiers and free text explain little, consider drop=[...]"
            ),
            stacklevel=3,
        )


def _target_values(
    path: Path, frame: Any, target: str, task: str | None, allow_infinite: bool
) -> tuple[str, tuple[str, ...], np.ndarray]:
    """The task (inferred when None), the class names and ``y`` of shape (n_rows,).

    Classification: int64 codes of the sorted target values; regression: float32 values.
    """
    import pandas as pd

    target_col = frame[target]
    numeric_target = pd.api.types.is_numeric_dtype(target_col) and not (
        pd.api.types.is_bool_dtype(target_col)
    )
    values = target_col.to_numpy(dtype=object)
    if task is None:
        task = "classification"
        if numeric_target:
            floats = values.astype(np.float64)
            integral = bool(np.all(floats == np.round(floats)))
            if not integral or len(np.unique(floats)) > MAX_INTEGER_CLASSES:
                task = "regression"
    if task == "classification":
        class_names, y = _encode(values.astype(np.float64) if numeric_target else values)
        return task, class_names, y
    if not numeric_target:
        raise ValidationError(
            f"target {target!r} must be numeric for regression; got dtype {target_col.dtype}"
        )
    floats = values.astype(np.float64)
    if not allow_infinite:
        _check_finite(path, target, floats, frame.index)
    with np.errstate(over="ignore"):
        return task, (), floats.astype(np.float32)
