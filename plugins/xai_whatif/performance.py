"""Performance per slice and the fairness threshold strategies of a what-if session.

The functions take the session first; :class:`~xai_whatif.WhatIf` has them as methods
(``w.thresholds(by)`` is ``thresholds(w, by)``). The threshold algorithms are in
:mod:`xai_whatif.fairness`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core import CapabilityError, Cost, UnknownNameError, ValidationError, XaiWarning
from xai_core.attribution.cost import check_cost
from xai_core.validation import check_positive_int
from xai_whatif import fairness as _fair
from xai_whatif.results import SliceMetrics, ThresholdChoice

if TYPE_CHECKING:
    from xai_whatif.whatif import WhatIf

__all__ = ["SLIDER_GRID", "slices", "thresholds"]

#: The thresholds at which ``slices`` counts each slice's confusion matrix for the slider.
SLIDER_GRID = np.linspace(0.0, 1.0, 101)


def _binary_scores(w: WhatIf, positive_class: int) -> tuple[np.ndarray, np.ndarray]:
    if w.y is None:
        raise ValidationError("fairness needs true labels: pass y to what_if(model, X, y).")
    if w.task != "classification" or w.outputs.shape[1] > 2:
        raise CapabilityError(
            "thresholds apply to binary classifiers (one probability output or two outputs); "
            f"this model is a {w.task} model with {w.outputs.shape[1]} outputs."
        )
    if positive_class not in (0, 1) or (w.outputs.shape[1] == 1 and positive_class != 1):
        raise ValidationError(f"positive_class must be 0 or 1; got {positive_class!r}.")
    score = w.outputs[:, positive_class] if w.outputs.shape[1] == 2 else w.outputs[:, 0]
    return score, (w.y == positive_class).astype(np.int64)


def _slices(w: WhatIf, by: Any, bins: int) -> tuple[list[int], np.ndarray, list[str]]:
    cols = w.table.features(by, "by")
    if not 1 <= len(cols) <= 2:
        raise ValidationError(f"by must name one or two features; got {len(cols)}.")
    bins = check_positive_int(bins, "bins")
    ids, labels = _fair.slice_ids(w.table, cols, bins)
    return cols, ids, labels


def _curves(truth: np.ndarray, score: np.ndarray) -> dict[str, dict[str, np.ndarray]] | None:
    """ROC and precision-recall curves of one slice (scikit-learn's), None without both classes."""
    from sklearn.metrics import precision_recall_curve, roc_curve

    if not 0 < truth.sum() < len(truth):
        return None
    fpr, tpr, thr = roc_curve(truth, score)
    precision, recall, thr_pr = precision_recall_curve(truth, score)
    return {
        "roc": {"fpr": fpr, "tpr": tpr, "thresholds": thr},
        "pr": {"precision": precision, "recall": recall, "thresholds": thr_pr},
    }


def slices(
    w: WhatIf, by: Any, *, bins: int = 4, threshold: float = 0.5, positive_class: int = 1
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
    from sklearn.metrics import confusion_matrix

    if w.y is None:
        raise ValidationError("slices need true labels: pass y to what_if(model, X, y).")
    if w.task != "classification":
        raise CapabilityError("slices report classification metrics; this is a regression model.")
    cols, ids, labels = _slices(w, by, bins)
    binary = w.outputs.shape[1] <= 2
    if binary:
        score, truth = _binary_scores(w, positive_class)
        if not 0.0 <= float(threshold) <= 1.0:
            raise ValidationError(f"threshold must be in [0, 1]; got {threshold!r}.")
        pred = (score >= threshold).astype(np.int64)
        classes = [0, 1]
    else:
        truth, pred = w.y.astype(np.int64), w.predicted.astype(np.int64)
        classes = list(range(w.outputs.shape[1]))
    records, confusion, curves, grid_counts = [], {}, {}, {}
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
            rec.update({"tn": int(tn), "fp": int(fp), "fn": int(fn), "tp": int(tp)})
            curve = _curves(truth[rows], score[rows])
            if curve is not None:
                curves[label] = curve
            grid_counts[label] = _fair.counts_on_grid(score[rows], truth[rows], SLIDER_GRID)
        records.append(rec)
    return SliceMetrics(
        features=tuple(w.feature_names[j] for j in cols),
        table=pd.DataFrame.from_records(records).set_index("slice"),
        confusion=confusion,
        curves=curves,
        threshold=float(threshold) if binary else None,
        grid=SLIDER_GRID.copy() if binary else None,
        grid_counts=grid_counts,
        class_names=tuple(w.output_names)
        if not binary or len(w.output_names) == 2
        else (
            "negative",
            "positive",
        ),
    )


def threshold_cost(n_thresholds: int, n_slices: int) -> Cost:
    """Memory of a threshold search: per slice and threshold, four counts, a cost and five rates."""
    return Cost(
        0,
        8 * n_thresholds * (1 + 12 * n_slices),
        f"{n_thresholds:,} thresholds x {n_slices} slices",
        "pass a smaller grid",
    )


def thresholds(
    w: WhatIf,
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
    score, truth = _binary_scores(w, positive_class)
    if (
        isinstance(cost_ratio, bool)
        or not isinstance(cost_ratio, (int, float, np.number))
        or not (np.isfinite(cost_ratio) and cost_ratio > 0)
    ):
        raise ValidationError(f"cost_ratio must be a positive number; got {cost_ratio!r}.")
    cols, ids, labels = _slices(w, by, bins)
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, bool):
        count = check_positive_int(grid, "grid")
        check_cost(threshold_cost(count, len(labels)), "thresholds")
        values = np.linspace(0.0, 1.0, count)
    else:
        values = np.sort(np.asarray(grid, dtype=np.float64).ravel())
        if values.size == 0 or not np.isfinite(values).all():
            raise ValidationError("grid must be a positive int or finite threshold values.")
        check_cost(threshold_cost(values.size, len(labels)), "thresholds")
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
                XaiWarning,
                stacklevel=3,
            )
    return ThresholdChoice(
        gap=gap,
        met=met,
        strategy=strategy,
        features=tuple(w.feature_names[j] for j in cols),
        thresholds={lab: float(values[index[s]]) for s, lab in enumerate(labels)},
        table=table,
        cost=total,
        cost_ratio=float(cost_ratio),
        constrained=_fair.STRATEGIES[strategy],
        tolerance=tolerance,
        target=target,
        grid=values,
        curves={
            lab: c
            for s, lab in enumerate(labels)
            if (c := _curves(truth[ids == s], score[ids == s])) is not None
        },
    )
