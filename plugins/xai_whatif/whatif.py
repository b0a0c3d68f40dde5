"""WhatIf: edit datapoints, find counterfactuals, probe the model, check fairness, for any model."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

import xai_core as xai
from xai_core import CapabilityError, ShapeError, UnknownNameError, ValidationError
from xai_whatif import fairness as _fair
from xai_whatif._data import Table
from xai_whatif.dependence import ice_curves
from xai_whatif.distance import Distance, ScaledData
from xai_whatif.results import (
    Counterfactuals,
    EditResult,
    PartialDependence,
    SliceMetrics,
    ThresholdChoice,
)
from xai_whatif.search import SearchProblem, search

__all__ = ["WhatIf", "what_if"]

TASKS = ("auto", "classification", "regression")


class WhatIf:
    """A model and a dataset to probe: edits, counterfactuals, partial dependence, fairness.

    Parameters
    ----------
    model : ModelRunner, Model, estimator or callable
        Anything :class:`xai_core.ModelRunner` accepts; every evaluation goes through
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
    progress : bool, default=True
        Progress bars for long computations (each method may override it).

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
        progress: bool = True,
    ) -> None:
        if task not in TASKS:
            raise UnknownNameError("task", task, TASKS)
        self.runner = (
            model
            if isinstance(model, xai.ModelRunner)
            else xai.ModelRunner(model, backend=backend, batch_size=batch_size)
        )
        self.table = Table(X, feature_names, categorical_features)
        self.progress = bool(progress)
        n, d = self.table.X.shape
        shape = self.runner.model.input_shape
        if shape is not None and int(np.prod(shape)) != d:
            raise ShapeError(
                f"X must have shape (n_samples, {', '.join(map(str, shape))}) for this model; "
                f"got {n} rows of shape {self.table.sample_shape}."
            )
        self.input_shape = tuple(shape) if shape is not None else self.table.sample_shape
        self.y = None if y is None else self._check_y(y, n)
        self.outputs = self._predict(self.table.X)
        k = self.outputs.shape[1]
        if task == "auto":
            task = "classification" if k >= 2 else "regression"
        self.task = task
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

    def _predict(self, F: np.ndarray) -> np.ndarray:
        """Outputs of shape (m, n_outputs) for flattened rows ``F`` of shape (m, n_features)."""
        out = self.runner.predict(F.reshape(len(F), *self.input_shape))
        return np.asarray(out, dtype=np.float64)

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
            try:
                lo, hi = (float(v) for v in target)
            except (TypeError, ValueError) as exc:
                raise ValidationError(
                    f"target must be an interval (low, high) of outputs for regression; got {target!r}."
                ) from exc
            return lo, hi
        n_classes = max(2, self.outputs.shape[1])
        if isinstance(target, str) and target in self.output_names:
            return self.output_names.index(target)
        if isinstance(target, bool) or not isinstance(target, (int, np.integer)):
            raise UnknownNameError("target class", target, self.output_names)
        if not 0 <= target < n_classes:
            raise ValidationError(f"target must be a class in [0, {n_classes}); got {target}.")
        return int(target)

    # -- editing -----------------------------------------------------------------------------
    def edit(
        self,
        row: int,
        changes: Mapping[Any, Any] | None = None,
        *,
        mask: Any = None,
        fill: float = 0.0,
    ) -> EditResult:
        """Change features of one row, re-run the model and record the edit.

        Parameters
        ----------
        row : int
            Row index in ``[0, n_samples)``.
        changes : mapping, optional
            Feature (name, index, or pixel ``(r, c[, ch])`` for images) to its new value;
            a categorical feature takes one of its categories.
        mask : array-like of bool of shape image_shape or (n_features,), optional
            Features (pixels) set to ``fill``.
        fill : float, default=0.0
            The value masked features take.

        Returns
        -------
        EditResult
        """
        i = self.table.row_index(row)
        if changes is not None and not isinstance(changes, Mapping):
            raise ValidationError(
                f"changes must be a mapping of feature to value; got {type(changes).__name__}."
            )
        new = self.table.X[i].copy()
        for key, value in (changes or {}).items():
            j = self.table.feature_index(key, "changes")
            new[j] = self.table.code(j, value)
        if mask is not None:
            m = np.asarray(mask)
            if m.dtype != bool or m.size != new.size:
                raise ShapeError(
                    f"mask must be a boolean array of shape {self.table.sample_shape} or "
                    f"({new.size},); got dtype {m.dtype} and shape {m.shape}."
                )
            cols = np.flatnonzero(m.ravel())
            for j in cols[: min(1, cols.size)]:
                self.table.code(int(j), fill)  # validates and warns once
            new[cols] = float(fill)
        if not changes and mask is None:
            raise ValidationError("edit needs changes={feature: value} or a mask; got neither.")
        old = self.table.X[i].copy()
        after = self._predict(new[None])[0]
        before = self.outputs[i].copy()
        diff = np.flatnonzero(new != old)
        result = EditResult(
            row=i,
            changes=tuple(
                (self.feature_names[j], self.table.label(j, old[j]), self.table.label(j, new[j]))
                for j in diff
            ),
            x_before=old.reshape(self.table.sample_shape),
            x_after=new.reshape(self.table.sample_shape),
            before=before,
            after=after,
            predicted_before=self.predicted[i].item(),
            predicted_after=self._classify(after[None])[0].item(),
            output_names=self.output_names,
            image_shape=self.table.sample_shape if self.table.is_image else None,
        )
        self._undo.append((i, old, before))
        self._set_row(i, new, after)
        self.history.append(result)
        return result

    def _set_row(self, i: int, values: np.ndarray, outputs: np.ndarray) -> None:
        self.table.X[i] = values
        self.outputs[i] = outputs
        self.predicted[i] = self._classify(outputs[None])[0]
        for scaled in self._scaled.values():
            scaled.update_row(i)

    def revert(self, steps: int = 1) -> None:
        """Undo the last ``steps`` edits (all with ``steps=len(w.history)``)."""
        steps = _positive_int(steps, "steps")
        if steps > len(self._undo):
            raise ValidationError(
                f"steps must be at most {len(self._undo)} (the edits made); got {steps}."
            )
        for _ in range(steps):
            i, values, outputs = self._undo.pop()
            self._set_row(i, values, outputs)
            self.history.pop()

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

    # -- counterfactuals ---------------------------------------------------------------------
    def _distance(self, distance: str | Callable[..., Any]) -> Distance:
        return Distance(self.table, distance)

    def nearest_counterfactual(
        self, row: int, distance: str | Callable[..., Any] = "l1"
    ) -> Counterfactuals:
        """The closest other example in the data with a different prediction.

        Classification: another predicted class. Regression: a prediction that differs by at
        least the standard deviation of the predictions. Distance as in the What-If Tool
        (see :mod:`xai_whatif.distance`).

        Parameters
        ----------
        row : int
        distance : {"l1", "l2"} or callable, default="l1"
            A callable gets ``(x, X)``, ``x`` of shape (n_features,) and ``X`` of shape
            (m, n_features), and returns m distances.

        Returns
        -------
        Counterfactuals
            With one counterfactual, or none when every example has the same prediction.
        """
        i = self.table.row_index(row)
        dist = self._distance(distance)
        eligible = self._prediction_differs(self.outputs, self.predicted[i], None)
        eligible[i] = False
        if dist.fn is None:
            if "data" not in self._scaled:  # one scaled copy serves L1 and L2
                self._scaled["data"] = ScaledData(self.table.X, dist)
            j, d = self._scaled["data"].nearest(self.table.X[i], eligible, dist)
        else:
            candidates = np.flatnonzero(eligible)
            j, d = -1, float("inf")
            if candidates.size:
                all_d = dist(self.table.X[i], self.table.X[candidates])
                k = int(np.argmin(all_d))
                j, d = int(candidates[k]), float(all_d[k])
        idx = np.array([j] if j >= 0 else [], dtype=np.int64)
        return self._counterfactuals(
            "nearest", i, self.table.X[idx], np.array([d])[: idx.size], idx, dist, {}
        )

    def _counterfactuals(
        self,
        method: str,
        i: int,
        C: np.ndarray,
        distances: np.ndarray,
        index: np.ndarray,
        dist: Distance,
        meta: dict[str, Any],
    ) -> Counterfactuals:
        outputs = (
            self.outputs[index]
            if method == "nearest"
            else (self._predict(C) if len(C) else np.zeros((0, self.outputs.shape[1])))
        )
        return Counterfactuals(
            method=method,
            row=i,
            x=self.table.X[i].copy(),
            X=np.array(C, dtype=np.float64),
            distances=np.asarray(distances, dtype=np.float64),
            index=np.asarray(index, dtype=np.int64),
            outputs_before=self.outputs[i].copy(),
            outputs=outputs,
            predicted_before=self.predicted[i].item(),
            predicted=self._classify(outputs) if len(outputs) else np.zeros(0),
            distance=dist.kind,
            feature_names=self.feature_names,
            output_names=self.output_names,
            sample_shape=self.table.sample_shape,
            labels=tuple(tuple(self.table.label(j, v) for j, v in enumerate(c)) for c in C[:10])
            if not self.table.is_image
            else (),
            meta=meta,
        )

    def counterfactual(
        self,
        row: int,
        *,
        distance: str | Callable[..., Any] = "l1",
        immutable: Sequence[Any] = (),
        ranges: Mapping[Any, Any] | None = None,
        max_features: int | None = None,
        n: int = 1,
        target: Any = None,
        n_samples: int = 2000,
        n_donors: int = 256,
        max_rounds: int = 30,
        seed: int = 0,
        progress: bool | None = None,
    ) -> Counterfactuals:
        """Search for the smallest edit of one row that changes the model's prediction.

        See :mod:`xai_whatif.search` for the algorithm. Every candidate stays within the
        allowed ranges, leaves the immutable features as they are and changes at most
        ``max_features`` features.

        Parameters
        ----------
        row : int
        distance : {"l1", "l2"} or callable, default="l1"
            The distance minimised (as in :meth:`nearest_counterfactual`).
        immutable : sequence of feature names or indices, default=()
            Features the search may not change.
        ranges : mapping of feature to (low, high), optional
            Allowed values; by default each feature's observed range.
        max_features : int, optional
            The most features one counterfactual may change.
        n : int, default=1
            How many counterfactuals; several are chosen to change different features.
        target : int, str or (low, high), optional
            The class to reach (classification) or the interval of outputs (regression);
            by default any other class, or a change of at least one standard deviation.
        n_samples : int, default=2000
            Random sparse edits evaluated at the start.
        n_donors : int, default=256
            Nearest examples with another prediction used as starting points.
        max_rounds : int, default=30
            Refinement rounds at most.
        seed : int, default=0
            Seeds the search; the same seed gives the same counterfactuals.
        progress : bool, optional
            Show a progress bar (default: the session's setting).

        Returns
        -------
        Counterfactuals
            Up to ``n``, closest first; none when no candidate changed the prediction.
        """
        i = self.table.row_index(row)
        n = _positive_int(n, "n")
        n_samples = _positive_int(n_samples, "n_samples")
        max_rounds = _positive_int(max_rounds, "max_rounds")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ValidationError(f"seed must be an integer; got {seed!r}.")
        target = self._check_target(target)
        dist = self._distance(distance)
        mutable = np.ones(self.table.n_features, dtype=bool)
        mutable[self.table.features(immutable, "immutable") if len(immutable) else []] = False
        if not mutable.any():
            raise ValidationError("immutable lists every feature; nothing is left to change.")
        k = (
            int(mutable.sum())
            if max_features is None
            else _positive_int(max_features, "max_features")
        )
        lo, hi = self.table.ranges(ranges)
        x = self.table.X[i].copy()
        reference = self.predicted[i]
        if target is not None and self.task != "regression" and target == reference:
            raise ValidationError(f"row {i} is already predicted as target class {target}.")
        eligible = self._prediction_differs(self.outputs, reference, target)
        eligible[i] = False
        donors = self.table.X[eligible]
        if len(donors):
            order = np.argsort(dist(x, donors), kind="stable")[:n_donors]
            donors = donors[order]
        problem = SearchProblem(
            x=x,
            evaluate=lambda C: self._prediction_differs(self._predict(C), reference, target),
            distance=dist,
            contributions=dist.contributions,
            mutable=mutable,
            categorical=self.table.is_categorical,
            category_codes={
                j: np.unique(self.table.X[:, j]) for j in self.table.categories if mutable[j]
            },
            lo=lo,
            hi=hi,
            donors=donors,
            max_features=k,
        )
        C, d, evaluations = search(
            problem,
            n=n,
            n_samples=n_samples,
            n_refine=max(32, 8 * n),
            max_rounds=max_rounds,
            rng=np.random.default_rng(int(seed)),
            progress=self.progress if progress is None else bool(progress),
        )
        if not len(C):
            warnings.warn(
                f"no counterfactual found for row {i}: no candidate changed the prediction. "
                "Loosen the constraints (ranges, immutable, max_features) or raise n_samples.",
                xai.XaiWarning,
                stacklevel=2,
            )
        meta = {"seed": int(seed), "evaluations": evaluations, "max_features": k}
        return self._counterfactuals(
            "search", i, C, d, np.full(len(C), -1, dtype=np.int64), dist, meta
        )

    # -- partial dependence ------------------------------------------------------------------
    def partial_dependence(
        self,
        features: Any,
        grid: Any = None,
        *,
        grid_resolution: int = 20,
        rows: Any = None,
        kind: str = "both",
        progress: bool | None = None,
    ) -> PartialDependence:
        """Partial dependence and ICE curves of one or two features.

        Parameters
        ----------
        features : feature or sequence of one or two features
        grid : sequence of values, or a pair of them for two features, optional
            By default the categories of a categorical feature, the distinct values when
            there are at most ``grid_resolution``, else ``grid_resolution`` evenly spaced
            values over the observed range.
        grid_resolution : int, default=20
        rows : sequence of int, optional
            Rows averaged over (default: all).
        kind : {"both", "average", "individual"}, default="both"
            ``"average"`` drops the ICE curves from the result after averaging them.
        progress : bool, optional

        Returns
        -------
        PartialDependence
        """
        if kind not in ("both", "average", "individual"):
            raise UnknownNameError("kind", kind, ("both", "average", "individual"))
        cols = self.table.features(features, "features")
        if not 1 <= len(cols) <= 2:
            raise ValidationError(f"features must name one or two features; got {len(cols)}.")
        resolution = _positive_int(grid_resolution, "grid_resolution")
        if grid is not None and len(cols) == 1 and not _is_pair_of_sequences(grid, 1):
            grid = [grid]
        if grid is not None and not _is_pair_of_sequences(grid, len(cols)):
            raise ValidationError(
                f"grid must be a sequence of values per feature ({len(cols)} sequence(s)); got {grid!r}."
            )
        grids = [
            self._grid(j, None if grid is None else grid[g], resolution) for g, j in enumerate(cols)
        ]
        if rows is None:
            idx = np.arange(self.table.n_samples)
        else:
            idx = np.array([self.table.row_index(r, "rows") for r in np.ravel(rows).tolist()])
            if idx.size == 0:
                raise ValidationError("rows must name at least one row; got none.")
        ice = ice_curves(
            self._predict,
            self.table.X[idx],
            cols,
            grids,
            dtype=np.float64
            if getattr(self.runner.backend, "dtype", None) == np.float64
            else np.float32,
            progress=self.progress if progress is None else bool(progress),
        )
        return PartialDependence(
            features=tuple(self.feature_names[j] for j in cols),
            grid=tuple(grids),
            ice=None if kind == "average" else ice,
            average=ice.mean(axis=0),
            rows=idx,
            output_names=self.output_names,
            grid_labels=tuple(
                tuple(self.table.label(j, v) for v in g) for j, g in zip(cols, grids)
            ),
        )

    def _grid(self, j: int, values: Any, resolution: int) -> np.ndarray:
        name = self.feature_names[j]
        if values is None:
            col = self.table.X[:, j]
            distinct = np.unique(col)
            if j in self.table.categories or distinct.size <= resolution:
                return distinct
            return np.linspace(col.min(), col.max(), resolution)
        values = list(values)
        if not values:
            raise ValidationError(f"grid for feature {name!r} must not be empty.")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = np.array([self.table.code(j, v) for v in values], dtype=np.float64)
        if caught:
            warnings.warn(
                f"grid values of feature {name!r} leave its observed range "
                f"[{self.table.minimum[j]:g}, {self.table.maximum[j]:g}].",
                xai.XaiWarning,
                stacklevel=3,
            )
        return out

    # -- performance and fairness ------------------------------------------------------------
    def _binary_scores(self, positive_class: int) -> tuple[np.ndarray, np.ndarray]:
        if self.y is None:
            raise ValidationError("fairness needs true labels: pass y to what_if(model, X, y).")
        if self.task != "classification" or self.outputs.shape[1] > 2:
            raise CapabilityError(
                "thresholds apply to binary classifiers (one probability output or two outputs); "
                f"this model is a {self.task} model with {self.outputs.shape[1]} outputs."
            )
        if positive_class not in (0, 1) or (self.outputs.shape[1] == 1 and positive_class != 1):
            raise ValidationError(f"positive_class must be 0 or 1; got {positive_class!r}.")
        score = (
            self.outputs[:, positive_class] if self.outputs.shape[1] == 2 else self.outputs[:, 0]
        )
        return score, (self.y == positive_class).astype(np.int64)

    def _slices(self, by: Any, bins: int) -> tuple[list[int], np.ndarray, list[str]]:
        cols = self.table.features(by, "by")
        if not 1 <= len(cols) <= 2:
            raise ValidationError(f"by must name one or two features; got {len(cols)}.")
        bins = _positive_int(bins, "bins")
        ids, labels = _fair.slice_ids(self.table, cols, bins)
        return cols, ids, labels

    def slices(
        self, by: Any, *, bins: int = 4, threshold: float = 0.5, positive_class: int = 1
    ) -> SliceMetrics:
        """Performance per slice of the data (by one or two features).

        Parameters
        ----------
        by : feature or pair of features
            Categorical and few-valued features slice by value, others by quantile bins.
        bins : int, default=4
        threshold : float, default=0.5
            Binary models predict the positive class at scores at or above it.
        positive_class : int, default=1

        Returns
        -------
        SliceMetrics
            Per slice: confusion matrix, accuracy, positive rate, TPR, FPR, FNR, precision,
            ROC and precision-recall curves (binary models; multi-class: accuracy and the
            confusion matrix).
        """
        import pandas as pd
        from sklearn.metrics import confusion_matrix, precision_recall_curve, roc_curve

        if self.y is None:
            raise ValidationError("slices need true labels: pass y to what_if(model, X, y).")
        if self.task != "classification":
            raise CapabilityError(
                "slices report classification metrics; this is a regression model."
            )
        cols, ids, labels = self._slices(by, bins)
        binary = self.outputs.shape[1] <= 2
        if binary:
            score, truth = self._binary_scores(positive_class)
            if not 0.0 <= float(threshold) <= 1.0:
                raise ValidationError(f"threshold must be in [0, 1]; got {threshold!r}.")
            pred = (score >= threshold).astype(np.int64)
            classes = [0, 1]
        else:
            truth, pred = self.y.astype(np.int64), self.predicted.astype(np.int64)
            classes = list(range(self.outputs.shape[1]))
        records, confusion, curves = [], {}, {}
        for s, label in enumerate(labels):
            rows = ids == s
            cm = confusion_matrix(truth[rows], pred[rows], labels=classes)
            confusion[label] = cm
            rec = {"slice": label, "count": int(rows.sum()), "accuracy": np.trace(cm) / cm.sum()}
            if binary:
                tn, fp, fn, tp = cm.ravel()
                m = _fair.metrics(
                    {k: np.array([v]) for k, v in zip(("tn", "fp", "fn", "tp"), (tn, fp, fn, tp))}
                )
                rec.update({k: float(v[0]) for k, v in m.items() if k != "accuracy"})
                rec["precision"] = tp / (tp + fp) if tp + fp else float("nan")
                rec.update({"tn": int(tn), "fp": int(fp), "fn": int(fn), "tp": int(tp)})
                if 0 < truth[rows].sum() < rows.sum():
                    fpr, tpr, thr = roc_curve(truth[rows], score[rows])
                    prec, rec_, thr_pr = precision_recall_curve(truth[rows], score[rows])
                    curves[label] = {
                        "roc": {"fpr": fpr, "tpr": tpr, "thresholds": thr},
                        "pr": {"precision": prec, "recall": rec_, "thresholds": thr_pr},
                    }
            records.append(rec)
        return SliceMetrics(
            features=tuple(self.feature_names[j] for j in cols),
            table=pd.DataFrame.from_records(records).set_index("slice"),
            confusion=confusion,
            curves=curves,
            threshold=float(threshold) if binary else None,
            class_names=tuple(self.output_names)
            if not binary or len(self.output_names) == 2
            else (
                "negative",
                "positive",
            ),
        )

    def thresholds(
        self,
        by: Any,
        strategy: str = "single",
        *,
        cost_ratio: float = 1.0,
        grid: int | Sequence[float] = 101,
        tolerance: float | None = None,
        bins: int = 4,
        positive_class: int = 1,
    ) -> ThresholdChoice:
        """Per-slice thresholds chosen by one of the What-If Tool's strategies.

        Parameters
        ----------
        by : feature or pair of features
        strategy : {"single", "group", "demographic_parity", "equal_opportunity", "equal_accuracy"}
        cost_ratio : float, default=1.0
            Cost of a false positive relative to a false negative.
        grid : int or sequence of float, default=101
            Thresholds tried: that many evenly spaced in [0, 1], or the given values.
        tolerance : float, optional
            Spread allowed in the equalised metric; by default each slice's metric is the
            nearest its grid reaches to a common value (see :mod:`xai_whatif.fairness`).
        bins : int, default=4
        positive_class : int, default=1

        Returns
        -------
        ThresholdChoice
        """
        import pandas as pd

        if strategy not in _fair.STRATEGIES:
            raise UnknownNameError("threshold strategy", strategy, list(_fair.STRATEGIES))
        score, truth = self._binary_scores(positive_class)
        if (
            isinstance(cost_ratio, bool)
            or not isinstance(cost_ratio, (int, float, np.number))
            or not (np.isfinite(cost_ratio) and cost_ratio > 0)
        ):
            raise ValidationError(f"cost_ratio must be a positive number; got {cost_ratio!r}.")
        if isinstance(grid, (int, np.integer)) and not isinstance(grid, bool):
            values = np.linspace(0.0, 1.0, _positive_int(grid, "grid"))
        else:
            values = np.sort(np.asarray(grid, dtype=np.float64).ravel())
            if values.size == 0 or not np.isfinite(values).all():
                raise ValidationError("grid must be a positive int or finite threshold values.")
        cols, ids, labels = self._slices(by, bins)
        index, target = _fair.choose_thresholds(
            score, truth, ids, len(labels), strategy, values, float(cost_ratio), tolerance
        )
        records = []
        total = 0.0
        for s, label in enumerate(labels):
            rows = ids == s
            c = _fair.counts_on_grid(score[rows], truth[rows], values[index[s] : index[s] + 1])
            m = _fair.metrics(c)
            cost = float(cost_ratio * c["fp"][0] + c["fn"][0])
            total += cost
            records.append(
                {
                    "slice": label,
                    "count": int(rows.sum()),
                    "threshold": float(values[index[s]]),
                    **{k: float(v[0]) for k, v in m.items()},
                    "cost": cost,
                }
            )
        table = pd.DataFrame.from_records(records).set_index("slice")
        gap, met = float("nan"), True
        name = _fair.STRATEGIES[strategy]
        if name is not None:
            achieved = table[name].to_numpy(dtype=np.float64)
            achieved = achieved[np.isfinite(achieved)]
            gap = float(np.ptp(achieved)) if achieved.size else float("nan")
            allowed = _fair.DEFAULT_GAP if tolerance is None else float(tolerance)
            met = not gap > allowed + 1e-12
            if not met:
                warnings.warn(
                    f"{strategy} cannot be met on this grid: {name} ranges from "
                    f"{achieved.min():.4g} to {achieved.max():.4g} across the slices (gap "
                    f"{gap:.4g} > {allowed:g}); the thresholds are the cheapest nearest to equal. "
                    "Pass a finer grid, a larger tolerance or other slices.",
                    xai.XaiWarning,
                    stacklevel=2,
                )
        return ThresholdChoice(
            gap=gap,
            met=met,
            strategy=strategy,
            features=tuple(self.feature_names[j] for j in cols),
            thresholds={lab: float(values[index[s]]) for s, lab in enumerate(labels)},
            table=table,
            cost=total,
            cost_ratio=float(cost_ratio),
            constrained=_fair.STRATEGIES[strategy],
            tolerance=tolerance,
            target=target,
            grid=values,
        )

    # -- display -----------------------------------------------------------------------------
    def __repr__(self) -> str:
        return (
            f"WhatIf({self.runner.model!r}, {self.table.n_samples} rows x "
            f"{self.table.n_features} features, {self.task}, {len(self.history)} edit(s))"
        )

    def _repr_html_(self) -> str:
        from xai_core.report import render_fragment

        return render_fragment(self)


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValidationError(f"{name} must be a positive integer; got {value!r}.")
    return int(value)


def _is_pair_of_sequences(grid: Any, count: int) -> bool:
    if isinstance(grid, (str, bytes)) or not hasattr(grid, "__len__") or len(grid) != count:
        return False
    return all(hasattr(g, "__len__") and not isinstance(g, (str, bytes)) for g in grid)


#: ``xai.what_if(model, X, y=None, ...)`` starts a session: the tool is the class itself.
what_if = WhatIf
