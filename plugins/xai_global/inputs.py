"""The data and model of a global method: numeric columns with names, and a runner."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import xai_core as xai
from xai_core import ShapeError, ValidationError
from xai_core.validation import check_array, check_unique_columns

__all__ = ["Data", "prepare", "resolve_output_names"]

#: Upper bound on the floats of one block of edited rows handed to the model in one call.
BLOCK_FLOATS = 1 << 23


class Data:
    """Rows of numeric features, their names, and the runner the model runs in.

    Attributes
    ----------
    X : ndarray of float64 of shape (n_samples, n_features)
    feature_names : tuple of str
    runner : xai_core.ModelRunner
    sample_shape : tuple of int
        The shape of one row as the model takes it.
    """

    def __init__(self, X: np.ndarray, names: tuple[str, ...], runner: Any, shape: tuple) -> None:
        self.X = X
        self.feature_names = names
        self.runner = runner
        self.sample_shape = shape

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    def predict(self, rows: np.ndarray) -> np.ndarray:
        """Model outputs of flat rows of shape (m, n_features): shape (m, n_outputs), float64."""
        batch = rows.reshape(len(rows), *self.sample_shape)
        return np.asarray(self.runner.predict_validated(batch), dtype=np.float64)

    def feature_index(self, key: Any, argument: str) -> int:
        if isinstance(key, str):
            if key not in self.feature_names:
                raise xai.UnknownNameError(f"feature (in {argument})", key, self.feature_names)
            return self.feature_names.index(key)
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if not 0 <= key < self.n_features:
                raise ValidationError(
                    f"{argument}: feature index must be in [0, {self.n_features}); got {key}."
                )
            return int(key)
        raise ValidationError(f"{argument} must name features by name or index; got {key!r}.")


def _columns(X: Any, what: str) -> tuple[Any, list[str] | None]:
    """A DataFrame's values as float64 (non-numeric columns refused), and its column names."""
    if not (hasattr(X, "dtypes") and hasattr(X, "columns")):
        arr = np.asarray(X)
        if arr.dtype.kind not in "biuf":
            raise ValidationError(
                f"X must hold numbers for {what}; got an array of dtype {arr.dtype}."
            )
        return X, None
    check_unique_columns(X.columns)
    for name, dtype in zip(X.columns, X.dtypes):
        if getattr(dtype, "kind", "O") not in "biuf":
            raise ValidationError(
                f"X column {str(name)!r} has dtype {dtype}; {what} needs numeric features "
                "(encode categories as numbers first)."
            )
    return X.to_numpy(dtype=np.float64), [str(c) for c in X.columns]


def prepare(
    model: Any,
    X: Any,
    *,
    feature_names: Sequence[str] | None,
    backend: Any,
    batch_size: int,
    what: str,
) -> Data:
    """``X`` checked and flattened, its feature names, and ``model`` in a runner."""
    values, columns = _columns(X, what)
    arr = check_array(values, "X", dtype=np.float64)
    if arr.ndim < 2 or arr.shape[0] == 0 or arr.size == 0:
        raise ShapeError(
            f"X must have shape (n_samples, n_features) with at least one row and one feature; "
            f"got an array of shape {arr.shape}."
        )
    shape = tuple(int(s) for s in arr.shape[1:])
    flat = np.array(arr.reshape(arr.shape[0], -1), dtype=np.float64)
    d = flat.shape[1]
    names = feature_names if feature_names is not None else columns
    if names is None:
        names = tuple(f"x{j}" for j in range(d))
    names = tuple(str(n) for n in names)
    if len(names) != d:
        raise ShapeError(f"feature_names must have {d} names (one per feature); got {len(names)}.")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValidationError(f"feature_names must be unique; repeated: {dup}.")
    runner = (
        model
        if isinstance(model, xai.ModelRunner)
        else xai.ModelRunner(
            model, backend=backend, batch_size=batch_size, example=flat.reshape(len(flat), *shape)
        )
    )
    if not runner.is_native and isinstance(backend, str) and backend == "cpu":
        # a black box runs on the host: it sees the data as given, in float64
        runner = xai.ModelRunner(
            runner.model, backend=xai.get_backend("cpu", dtype="float64"), batch_size=batch_size
        )
    model_shape = runner.model.input_shape
    if model_shape is not None and int(np.prod(model_shape)) != d:
        raise ShapeError(
            f"X must have shape (n_samples, {', '.join(map(str, model_shape))}) for this model; "
            f"got {len(flat)} rows of shape {shape}."
        )
    sample_shape = tuple(model_shape) if model_shape is not None else shape
    return Data(flat, names, runner, sample_shape)


def resolve_output_names(names: Sequence[str] | None, runner: Any, k: int) -> tuple[str, ...]:
    """One name per model output: given, the model's own, or ``output i``."""
    names = names if names is not None else runner.model.output_names
    if names is None:
        return tuple(f"output {i}" for i in range(k))
    if len(names) != k:
        raise ShapeError(f"output_names must have {k} names (one per output); got {len(names)}.")
    return tuple(str(n) for n in names)
