"""Build a report from files: saved explanations, or a saved model and a data file (``xai report``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.attribution.explainer import explain
from xai_core.attribution.explanation import Explanation
from xai_core.errors import ValidationError
from xai_core.report._report import Report

__all__ = ["build_report", "load_data"]


def load_data(
    path: str | os.PathLike[str], target: str | None = None
) -> tuple[np.ndarray, Any, list[str] | None]:
    """Rows to explain from an ``.npz`` (arrays ``X``, optional ``y`` and ``feature_names``) or a ``.csv``.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,) or None
    feature_names : list of str or None
    """
    path = Path(path)
    if not path.is_file():
        raise ValidationError(f"data file {str(path)!r} does not exist.")
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

            ds = load_csv(path, target=target)
            return ds.X, ds.y, list(ds.feature_names)
        import pandas as pd

        frame = pd.read_csv(path)
        return frame.to_numpy(dtype=np.float64), None, [str(c) for c in frame.columns]
    raise ValidationError(f"data file must be .npz or .csv; got {path.name!r}.")


def build_report(
    *,
    model: str | os.PathLike[str] | None = None,
    data: str | os.PathLike[str] | None = None,
    results: Sequence[str | os.PathLike[str]] = (),
    methods: Sequence[str] | None = None,
    backend: str = "cpu",
    rows: int = 5,
    target: str | None = None,
    title: str | None = None,
) -> Report:
    """A report of saved explanations, and of ``model`` explained on the first ``rows`` of ``data``.

    Parameters
    ----------
    model : path, optional
        A native network saved with ``net.save`` (weights + JSON, never pickle).
    data : path, optional
        Rows for ``model``: see :func:`load_data`.
    results : sequence of path
        Explanations saved with :meth:`Explanation.save`.
    methods : sequence of str, optional
        Methods to run on ``model``; default ``["ig"]``.
    backend : str, default="cpu"
    rows : int, default=5
    target : str, optional
        The target column of a CSV data file (left out of the features).
    title : str, optional

    Returns
    -------
    Report
    """
    if (model is None) != (data is None):
        raise ValidationError("model and data go together: give both, or neither.")
    if model is None and not results:
        raise ValidationError("nothing to report: give saved results, or a model and a data file.")
    report = Report(title or "xai-core report")
    for path in results:
        report.add(Explanation.load(path), f"{Path(path).name}")
    if model is not None:
        from xai_core.nn import load_model

        net = load_model(model)
        X, _, names = load_data(data, target)
        X = X[:rows]
        report.add(
            {"rows": len(X), "features": int(np.prod(X.shape[1:]))}, f"Data: {Path(data).name}"
        )
        for method in methods or ["ig"]:
            e = explain(net, X, method=method, backend=backend, feature_names=names)
            report.add(e, f"{method} on {backend}: {Path(model).name}")
    return report
