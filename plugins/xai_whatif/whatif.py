"""WhatIf: a model and a dataset to probe, the session every analysis works on.

The session holds the data as edited, the model's outputs and the edit history; each
analysis is a function of the session in its own module, and a method here:
:mod:`~xai_whatif.edits` (``edit``, ``revert``), :mod:`~xai_whatif.counterfactuals`
(``nearest_counterfactual``, ``counterfactual``), :mod:`~xai_whatif.dependence`
(``partial_dependence``) and :mod:`~xai_whatif.performance` (``slices``, ``thresholds``), :mod:`~xai_whatif.neighbors`
(``neighbors``), :mod:`~xai_whatif.features` (``feature_stats``) and
:mod:`~xai_whatif.compare` (``compare_models``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

import xai_core as xai
from xai_core import ShapeError, UnknownNameError, ValidationError
from xai_core.attribution.guard import check_outputs
from xai_core.validation import check_bool
from xai_whatif import compare, counterfactuals, dependence, edits, performance
from xai_whatif import features as feature_tab
from xai_whatif import neighbors as neighbor_search
from xai_whatif._data import Table, number_pair
from xai_whatif.distance import ScaledData
from xai_whatif.results import EditResult

__all__ = ["WhatIf", "what_if"]

TASKS = ("auto", "classification", "regression")


class WhatIf:
    """A model and a dataset to probe: edits, counterfactuals, partial dependence, fairness.

    Parameters
    ----------
    model : ModelRunner, Model, torch.nn.Module, keras.Model, str, path, estimator or callable
        Anything :class:`xai_core.ModelRunner` accepts (a torch module, a Keras model or a
        model file is imported as :func:`xai_core.explain` imports it, a torch module
        traced on rows of ``X``); every evaluation goes through
        ``runner.predict`` in large batches.
    X : array-like of shape (n_samples, n_features) or (n_samples, *image_shape), or DataFrame
        The data. DataFrame columns of ``category``, ``object`` or ``bool`` dtype are
        categorical: the model receives their codes ``0 .. k-1`` (in the order of the
        categories) and edits may name a category by its label.
    y : array-like of shape (n_samples,), optional
        True labels (class indices ``0 .. n_outputs-1``, or values for regression); needed
        for the fairness methods.
    feature_names : sequence of str, optional
        One per flattened feature.
    categorical_features : sequence of int or str, optional
        Categorical columns of a numeric array; their categories are the values that occur.
    output_names : sequence of str, optional
        Names of the model's outputs (class names).
    task : {"auto", "classification", "regression"}, default="auto"
        ``"auto"``: classification when the model has two or more outputs, regression for
        one. A one-output model under ``"classification"`` outputs the positive-class
        probability (class 1 when it is at least 0.5).
    backend : str or Backend, default="cpu"
        Where a native network runs.
    batch_size : int, default=4096
        Rows per model call inside the runner.
    progress : bool or None, default=None
        Progress bars: ``None`` for long computations only (each method may override it).

    Attributes
    ----------
    X : ndarray of float64 of shape (n_samples, n_features)
        The data as currently edited, flattened per row.
    outputs : ndarray of shape (n_samples, n_outputs)
        The model's outputs on ``X``.
    predicted : ndarray of shape (n_samples,)
        Predicted class (classification) or first output (regression).
    history : list of EditResult
        The edits applied, oldest first.
    """

    def __init__(
        self,
        model: Any,
        X: Any,
        y: Any = None,
        *,
        feature_names: Sequence[str] | None = None,
        categorical_features: Sequence[int | str] | None = None,
        output_names: Sequence[str] | None = None,
        task: str = "auto",
        backend: Any = "cpu",
        batch_size: int = 4096,
        progress: bool | None = None,
    ) -> None:
        if task not in TASKS:
            raise UnknownNameError("task", task, TASKS)
        self.table = Table(X, feature_names, categorical_features)
        self.runner = (
            model
            if isinstance(model, xai.ModelRunner)
            else xai.ModelRunner(
                model,
                backend=backend,
                batch_size=batch_size,
                example=self.table.X.reshape(len(self.table.X), *self.table.sample_shape),
            )
        )
        self.progress = check_bool(progress, "progress", allow_none=True)
        n, d = self.table.X.shape
        shape = self.runner.model.input_shape
        if shape is not None and int(np.prod(shape)) != d:
            raise ShapeError(
                f"X must have shape (n_samples, {', '.join(map(str, shape))}) for this model; "
                f"got {n} rows of shape {self.table.sample_shape}."
            )
        self.input_shape = tuple(shape) if shape is not None else self.table.sample_shape
        self.y = None if y is None else self._check_y(y, n)
        self.outputs = self._predict(self.table.X, of="X")
        k = self.outputs.shape[1]
        if task == "auto":
            task = "classification" if k >= 2 else "regression"
        self.task = task
        if self.y is not None and task == "classification":
            self._check_classes(self.y, max(2, k))
        names = output_names or self.runner.model.output_names
        if names is not None and len(names) != k and not (task == "classification" and k == 1):
            raise ShapeError(
                f"output_names must have {k} names (one per output); got {len(names)}."
            )
        self.output_names = (
            tuple(str(s) for s in names) if names else tuple(f"output {i}" for i in range(k))
        )
        self.predicted = self._classify(self.outputs)
        self.history: list[EditResult] = []
        self._undo: list[tuple[int, np.ndarray, np.ndarray]] = []
        self._X_original = self.table.X.copy()
        self._scaled: dict[str, ScaledData] = {}

    # -- basics ------------------------------------------------------------------------------
    @property
    def X(self) -> np.ndarray:
        """The data as currently edited, shape (n_samples, n_features)."""
        return self.table.X

    @property
    def feature_names(self) -> tuple[str, ...]:
        return self.table.feature_names

    @staticmethod
    def _check_y(y: Any, n: int) -> np.ndarray:
        arr = np.asarray(y)
        if arr.ndim != 1 or arr.shape[0] != n:
            raise ShapeError(f"y must have shape ({n},), one label per row of X; got {arr.shape}.")
        if arr.dtype.kind not in "biuf" or not np.isfinite(arr.astype(np.float64)).all():
            raise ValidationError("y must contain finite numbers (class indices or values).")
        return arr

    @staticmethod
    def _check_classes(y: np.ndarray, n_classes: int) -> None:
        """Raise unless every label is a class index of the model's outputs."""
        outside = (y != np.round(y)) | (y < 0) | (y >= n_classes)
        if outside.any():
            first = int(np.flatnonzero(outside)[0])
            raise ValidationError(
                f"y must hold class indices 0 .. {n_classes - 1}, one per output of this "
                f"classifier; {int(outside.sum())} label(s) are outside, the first {y[first].item()!r} "
                f"at row {first}. Encode the labels in the order of the model's outputs."
            )

    def _predict(self, F: np.ndarray, of: str = "the edited or searched rows") -> np.ndarray:
        """Outputs of shape (m, n_outputs) for flattened rows ``F`` of shape (m, n_features).

        Checked finite: a NaN output raises :class:`xai_core.ModelOutputError` naming the rows.
        """
        out = self.runner.predict_validated(
            self.runner.check_X(F.reshape(len(F), *self.input_shape))
        )
        return check_outputs(np.asarray(out, dtype=np.float64), "what_if", of=of)

    def predict(self, X: Any) -> np.ndarray:
        """The model's outputs for rows shaped like the data, shape (m, n_outputs)."""
        arr = np.asarray(X, dtype=np.float64)
        d = self.table.n_features
        if arr.ndim < 1 or arr.size % d or arr.reshape(-1, d).shape[1] != d:
            raise ShapeError(
                f"X must have shape (m, {', '.join(map(str, self.table.sample_shape))}); "
                f"got {arr.shape}."
            )
        return self._predict(arr.reshape(-1, d))

    def _classify(self, outputs: np.ndarray) -> np.ndarray:
        if self.task == "regression":
            return outputs[:, 0]
        if outputs.shape[1] == 1:
            return (outputs[:, 0] >= 0.5).astype(np.int64)
        return np.argmax(outputs, axis=1)

    def _prediction_differs(self, outputs: np.ndarray, reference: Any, target: Any) -> np.ndarray:
        """Which outputs count as another prediction than ``reference`` (or as ``target``)."""
        pred = self._classify(outputs)
        if self.task == "regression":
            if target is not None:
                lo, hi = target
                return (pred >= lo) & (pred <= hi)
            return np.abs(pred - reference) >= self.outputs[:, 0].std()
        if target is not None:
            return pred == target
        return pred != reference

    def _check_target(self, target: Any) -> Any:
        if target is None:
            return None
        if self.task == "regression":
            return number_pair(
                target, "target must be an interval (low, high) of outputs for regression"
            )
        n_classes = max(2, self.outputs.shape[1])
        if isinstance(target, str) and target in self.output_names:
            return self.output_names.index(target)
        if isinstance(target, bool) or not isinstance(target, (int, np.integer)):
            raise UnknownNameError("target class", target, self.output_names)
        if not 0 <= target < n_classes:
            raise ValidationError(f"target must be a class in [0, {n_classes}); got {target}.")
        return int(target)

    def _set_row(self, i: int, values: np.ndarray, outputs: np.ndarray) -> None:
        self.table.X[i] = values
        self.outputs[i] = outputs
        self.predicted[i] = self._classify(outputs[None])[0]
        for scaled in self._scaled.values():
            scaled.update_row(i)

    def clone(self) -> WhatIf:
        """An independent copy: its edits do not touch this session (the model is shared)."""
        other = copy.copy(self)
        other.table = copy.copy(self.table)
        other.table.X = self.table.X.copy()
        other.outputs = self.outputs.copy()
        other.predicted = self.predicted.copy()
        other.history = list(self.history)
        other._undo = list(self._undo)
        other._scaled = {}
        return other

    # -- the analyses: functions of the session, one module per analysis -------------------
    edit = edits.edit
    revert = edits.revert
    nearest_counterfactual = counterfactuals.nearest_counterfactual
    counterfactual = counterfactuals.counterfactual
    partial_dependence = dependence.partial_dependence
    slices = performance.slices
    thresholds = performance.thresholds
    neighbors = neighbor_search.neighbors
    feature_stats = feature_tab.feature_stats
    compare_models = compare.compare_models

    def performance(self, by: Any, **options: Any):
        """The live Performance & Fairness tab: a :class:`~xai_whatif.performance_view.PerformanceWidget`.

        ``options`` (``bins``, ``threshold``, ``cost_ratio``, ``strategy``) go to its state.
        """
        from xai_whatif.performance_view import performance

        return performance(self, by, **options)

    # -- the live editor ---------------------------------------------------------------------
    def editor(self, row: int = 0, **options: Any):
        """The datapoint editor, live in a notebook: an :class:`~xai_whatif.editor_widgets.EditorWidget`.

        ``options`` go to :class:`~xai_whatif.editor.EditorState` (``method``, ``axes``,
        ``colour_by``, ``pd_rows`` ...); ``editor.state`` drives it from Python.
        """
        from xai_whatif.editor import EditorState
        from xai_whatif.editor_widgets import EditorWidget

        return EditorWidget(EditorState(self, row, **options))

    show = editor

    # -- display -----------------------------------------------------------------------------
    def __repr__(self) -> str:
        return (
            f"WhatIf({self.runner.model!r}, {self.table.n_samples} rows x "
            f"{self.table.n_features} features, {self.task}, {len(self.history)} edit(s))"
        )

    def _repr_html_(self) -> str:
        from xai_core.report import render_fragment

        return render_fragment(self)


#: ``xai.what_if(model, X, y=None, ...)`` starts a session: the tool is the class itself.
what_if = WhatIf
