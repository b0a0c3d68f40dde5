"""Build a report from files: saved explanations, or a saved model and a data file (``xai report``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xai_core import Explanation, Report, ValidationError, explain
from xai_core.errors import closest_names
from xai_demo._args import existing_file, parse_rows, select_rows

__all__ = ["build_report", "check_label_column", "load_data"]

#: Column names taken for a label when a CSV has one column more than the model has inputs
#: (``label`` is what ``Dataset.to_frame()`` writes for the bundled image sets).
LABEL_NAMES = ("label", "target", "y", "class")


def _check_target(path: Path, target: str, argument: str, target_argument: str) -> None:
    """A ValidationError naming ``target_argument`` if ``target`` is not a column of the CSV."""
    import pandas as pd

    try:
        columns = [str(c) for c in pd.read_csv(path, nrows=0).columns]
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ValidationError(f"{argument} {str(path)!r} cannot be read as CSV: {exc}") from exc
    if target in columns or not columns:
        return
    close = closest_names(target, columns)
    if close:
        hint = f"closest: {', '.join(close)}"
    else:
        hint = f"the last, where Dataset.to_frame() writes the target, is {columns[-1]!r}"
    raise ValidationError(
        f"{target_argument} {target!r} is not a column of {path.name} "
        f"({len(columns)} columns; {hint})"
    )


def load_data(
    path: str | os.PathLike[str],
    target: str | None = None,
    argument: str = "data",
    target_argument: str = "target",
) -> tuple[np.ndarray, Any, list[str] | None]:
    """Rows to explain from an ``.npz`` (arrays ``X``, optional ``y`` and ``feature_names``) or a ``.csv``.

    Parameters
    ----------
    path : path
        The data file.
    target : str, optional
        The label column of a CSV (left out of the features); ``label`` for a CSV written
        by ``Dataset.to_frame().to_csv(...)`` from the bundled image sets.
    argument, target_argument : str
        How error messages name the file and the target (the command line's ``--data``
        and ``--target``).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,) or None
    feature_names : list of str or None
    """
    path = existing_file(path, argument)
    if path.suffix == ".npz":
        try:
            with np.load(path, allow_pickle=False) as f:
                if "X" not in f:
                    raise ValidationError(
                        f"{path}: an .npz data file needs an array 'X'; it has {sorted(f.files)}."
                    )
                names = [str(n) for n in f["feature_names"]] if "feature_names" in f else None
                return f["X"], (f["y"] if "y" in f else None), names
        except (OSError, ValueError) as exc:
            if isinstance(exc, ValidationError):
                raise
            raise ValidationError(f"{path}: not a readable .npz file ({exc}).") from exc
    if path.suffix == ".csv":
        if target is not None:
            from xai_datasets import load_csv

            _check_target(path, target, argument, target_argument)
            ds = load_csv(path, target=target)
            return ds.X, ds.y, list(ds.feature_names)
        import pandas as pd

        try:
            frame = pd.read_csv(path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise ValidationError(f"{argument} {str(path)!r} cannot be read as CSV: {exc}") from exc
        text = [str(c) for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
        if text:
            raise ValidationError(
                f"{argument} {str(path)!r}: column {text[0]!r} holds text, and every column of a "
                f"CSV without a target is a feature; name the target column with {target_argument} "
                "(text features are then coded as categories), or remove the column"
            )
        return frame.to_numpy(dtype=np.float64), None, [str(c) for c in frame.columns]
    raise ValidationError(f"data file must be .npz or .csv; got {path.name!r}.")


def check_label_column(
    model: Any,
    X: np.ndarray,
    names: list[str] | None,
    path: str | os.PathLike[str],
    argument: str = "data",
    target_argument: str = "target",
) -> None:
    """A ValidationError when a CSV read without a target still holds its label column.

    Said when ``X`` has one column more than ``model`` has inputs: the column named
    ``label``, ``target``, ``y`` or ``class`` (in any case), else the last one, is named
    as the likely label.

    Parameters
    ----------
    model : Model
        The imported model; its ``input_shape`` is compared.
    X : ndarray of shape (n_samples, n_columns)
    names : list of str or None
        The columns' names.
    path : path
        The data file, named in the message.
    """
    shape = getattr(model, "input_shape", None)
    if names is None or shape is None or X.ndim != 2:
        return
    n_inputs = int(np.prod(shape))
    if X.shape[1] != n_inputs + 1:
        return
    lower = [n.lower() for n in names]
    column = next((names[lower.index(n)] for n in LABEL_NAMES if n in lower), names[-1])
    raise ValidationError(
        f"{argument} {Path(path).name!r} has {X.shape[1]} columns and the model takes "
        f"{n_inputs} inputs: is {column!r} its label column? Name it with "
        f"{target_argument} {column} to leave it out of the features"
    )


def build_report(
    *,
    model: str | os.PathLike[str] | None = None,
    data: str | os.PathLike[str] | None = None,
    results: Sequence[str | os.PathLike[str]] = (),
    methods: Sequence[str] | None = None,
    backend: str = "cpu",
    rows: int | str | Sequence[int] = 5,
    target: str | None = None,
    title: str | None = None,
    data_argument: str = "data",
    target_argument: str = "target",
) -> Report:
    """A report of saved explanations, and of ``model`` explained on the first ``rows`` of ``data``.

    Parameters
    ----------
    model : path, optional
        A model file, imported by :func:`xai_core.import_model`: a native network saved
        with ``net.save`` (weights + JSON, never pickle), an ``.onnx``, ``.tflite``,
        ``.keras`` or ``.h5`` file, a TF.js ``model.json`` or a Teachable Machine ``.zip``.
    data : path, optional
        Rows for ``model``: see :func:`load_data`.
    results : sequence of path
        Explanations saved with :meth:`Explanation.save`.
    methods : sequence of str, optional
        Methods to run on ``model``; default ``["ig"]``.
    backend : str, default="cpu"
    rows : int, str or sequence of int, default=5
        A count N for the first N rows, or row indices and inclusive ranges such as
        ``"0,3,10-19"`` or ``[0, 3]``; an index past the last row is an error.
    target : str, optional
        The target column of a CSV data file (left out of the features).
    title : str, optional
    data_argument, target_argument : str
        How error messages name the data file and the target (the command line's
        ``--data`` and ``--target``).

    Returns
    -------
    Report
    """
    if (model is None) != (data is None):
        raise ValidationError("model and data go together: give both, or neither.")
    if model is None and not results:
        raise ValidationError("nothing to report: give saved results, or a model and a data file.")
    for path in results:
        existing_file(path, "results")
    if model is not None:
        existing_file(model, "model")
        existing_file(data, "data")  # type: ignore[arg-type]
    selection = parse_rows(rows, "rows")
    report = Report(title or "xai-core report")
    for path in results:
        report.add(Explanation.load(path), f"{Path(path).name}")
    if model is not None:
        from xai_core import import_model

        X, _, names = load_data(data, target, data_argument, target_argument)  # type: ignore[arg-type]
        X = select_rows(X, selection, "rows")
        net = import_model(model, X)
        if target is None:
            check_label_column(net, X, names, data, data_argument, target_argument)  # type: ignore[arg-type]
        report.add(
            {"rows": len(X), "features": int(np.prod(X.shape[1:]))}, f"Data: {Path(data).name}"
        )
        for method in methods or ["ig"]:
            e = explain(net, X, method=method, backend=backend, feature_names=names)
            report.add(e, f"{method} on {backend}: {Path(model).name}")
    return report
