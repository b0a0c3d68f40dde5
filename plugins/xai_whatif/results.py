"""The result objects of a what-if session; each renders in a notebook and in reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "Counterfactuals",
    "EditResult",
    "FeatureStats",
    "Neighbors",
    "PartialDependence",
    "SliceMetrics",
    "ThresholdChoice",
]


class _Renders:
    def _repr_html_(self) -> str:
        from xai_core.report import render_fragment

        return render_fragment(self)


@dataclass(frozen=True, eq=False)
class EditResult(_Renders):
    """One edit of one row and what the model made of it.

    Attributes
    ----------
    row : int
        The edited row.
    changes : tuple of (str, float, float)
        ``(feature name, value before, value after)`` for every feature that changed.
    x_before, x_after : ndarray of shape sample_shape
        The row before and after the edit.
    before, after, change : ndarray of shape (n_outputs,)
        The model's outputs before and after, and ``after - before``.
    predicted_before, predicted_after : int or float
        Predicted class (classification) or the first output (regression).
    """

    row: int
    changes: tuple[tuple[str, Any, Any], ...]
    x_before: np.ndarray
    x_after: np.ndarray
    before: np.ndarray
    after: np.ndarray
    predicted_before: Any
    predicted_after: Any
    output_names: tuple[str, ...]
    image_shape: tuple[int, ...] | None = None

    @property
    def change(self) -> np.ndarray:
        """``after - before`` per output, shape (n_outputs,)."""
        return self.after - self.before

    @property
    def flipped(self) -> bool:
        """Whether the predicted class (or value) changed."""
        return self.predicted_before != self.predicted_after

    def __repr__(self) -> str:
        return (
            f"EditResult(row={self.row}, {len(self.changes)} feature(s) changed, "
            f"predicted {self.predicted_before!r} -> {self.predicted_after!r})"
        )


@dataclass(frozen=True, eq=False)
class Counterfactuals(_Renders):
    """Counterfactuals of one row: the nearest example, or the result of a search.

    Attributes
    ----------
    method : {"nearest", "search"}
    row : int
    x : ndarray of shape (n_features,)
        The row, flattened.
    X : ndarray of shape (n_found, n_features)
        The counterfactuals, closest first (empty when none was found).
    distances : ndarray of shape (n_found,)
    index : ndarray of int of shape (n_found,)
        Data rows of the counterfactuals (``-1`` for synthetic ones).
    outputs_before : ndarray of shape (n_outputs,)
    outputs : ndarray of shape (n_found, n_outputs)
    predicted_before : int or float
    predicted : ndarray of shape (n_found,)
    distance : str
        ``"l1"``, ``"l2"`` or the custom function's name.
    """

    method: str
    row: int
    x: np.ndarray
    X: np.ndarray
    distances: np.ndarray
    index: np.ndarray
    outputs_before: np.ndarray
    outputs: np.ndarray
    predicted_before: Any
    predicted: np.ndarray
    distance: str
    feature_names: tuple[str, ...]
    output_names: tuple[str, ...]
    sample_shape: tuple[int, ...]
    labels: tuple[tuple[Any, ...], ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.X)

    @property
    def changed(self) -> list[list[str]]:
        """Names of the features each counterfactual changes."""
        return [[self.feature_names[j] for j in np.flatnonzero(c != self.x)] for c in self.X]

    @property
    def best(self) -> np.ndarray:
        """The closest counterfactual, in the shape of one row of the data."""
        if not len(self.X):
            raise LookupError("no counterfactual was found for this row.")
        return self.X[0].reshape(self.sample_shape)

    def __repr__(self) -> str:
        d = f", distance {self.distances[0]:.4g}" if len(self) else ""
        return f"Counterfactuals({self.method}, row={self.row}, {len(self)} found{d})"


@dataclass(frozen=True, eq=False)
class PartialDependence(_Renders):
    """Partial dependence and ICE curves of one or two features.

    Attributes
    ----------
    features : tuple of str
    grid : tuple of ndarray
        The values of each feature, shapes (g1,) and (g2,).
    ice : ndarray of shape (n_rows, g1[, g2], n_outputs) or None
        Each row's outputs with the feature(s) set to each grid value.
    average : ndarray of shape (g1[, g2], n_outputs)
        The partial dependence, the mean of the ICE curves over rows.
    rows : ndarray of int of shape (n_rows,)
    grid_labels : tuple of tuple
        Category labels of categorical features' grid values (numbers otherwise).
    """

    features: tuple[str, ...]
    grid: tuple[np.ndarray, ...]
    ice: np.ndarray | None
    average: np.ndarray
    rows: np.ndarray
    output_names: tuple[str, ...]
    grid_labels: tuple[tuple[Any, ...], ...]

    def __repr__(self) -> str:
        shape = " x ".join(str(len(g)) for g in self.grid)
        return f"PartialDependence({', '.join(self.features)}; grid {shape}, {len(self.rows)} rows)"


@dataclass(frozen=True, eq=False)
class SliceMetrics(_Renders):
    """Performance per slice of the data at one threshold.

    Attributes
    ----------
    features : tuple of str
        The slicing feature(s).
    table : pandas.DataFrame
        One row per slice: count, accuracy, positive_rate, tpr, fpr, fnr, precision and
        the confusion-matrix counts tn, fp, fn, tp (binary models).
    confusion : dict of str to ndarray of shape (n_classes, n_classes)
        Rows: true class; columns: predicted class.
    curves : dict of str to dict
        Per slice: ``roc`` (fpr, tpr, thresholds) and ``pr`` (precision, recall, thresholds).
    threshold : float or None
        Score at or above which a binary model predicts the positive class.
    grid : ndarray of shape (n_thresholds,) or None
        Binary models: the thresholds of :attr:`grid_counts` (101 in [0, 1]).
    grid_counts : dict of str to dict of str to ndarray of shape (n_thresholds,)
        Per slice: ``tn``, ``fp``, ``fn``, ``tp`` at each threshold of :attr:`grid` (what
        the report's threshold slider shows without a kernel).
    """

    features: tuple[str, ...]
    table: Any
    confusion: dict[str, np.ndarray]
    curves: dict[str, dict[str, np.ndarray]]
    threshold: float | None
    class_names: tuple[str, ...]
    grid: np.ndarray | None = None
    grid_counts: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"SliceMetrics(by {', '.join(self.features)}; {len(self.table)} slices)"


@dataclass(frozen=True, eq=False)
class ThresholdChoice(_Renders):
    """The per-slice thresholds a fairness strategy picks, and the metrics they give.

    Attributes
    ----------
    strategy : str
    features : tuple of str
    thresholds : dict of str to float
        Slice label to threshold (predict positive when the score is at or above it).
    table : pandas.DataFrame
        Per slice at its threshold: count, threshold, positive_rate, tpr, fpr, fnr,
        accuracy, cost.
    cost : float
        Total cost ``cost_ratio * false positives + false negatives``.
    constrained : str or None
        The metric the strategy equalises (``positive_rate``, ``tpr``, ``accuracy``).
    tolerance : float or None
        The spread allowed in the equalised metric; ``None``: the grid's resolution.
    target : float
        The common value of the equalised metric (NaN for ``single`` and ``group``).
    grid : ndarray of shape (n_thresholds,)
    gap : float
        The spread (max - min across slices) of the equalised metric at the chosen
        thresholds (NaN for ``single`` and ``group``).
    met : bool
        Whether the gap is within ``tolerance`` (default ``fairness.DEFAULT_GAP``); when
        not, ``thresholds`` warned that the constraint cannot be met on the grid.
    curves : dict of str to dict
        Per slice with both classes: ``roc`` and ``pr`` curves as in :class:`SliceMetrics`;
        the report draws each slice's chosen threshold on them.
    """

    strategy: str
    features: tuple[str, ...]
    thresholds: dict[str, float]
    table: Any
    cost: float
    cost_ratio: float
    constrained: str | None
    tolerance: float | None
    target: float
    grid: np.ndarray
    gap: float = float("nan")
    met: bool = True
    curves: dict[str, dict[str, dict[str, np.ndarray]]] = field(default_factory=dict)

    def __repr__(self) -> str:
        unmet = "" if self.met else f", NOT met: gap {self.gap:.4g}"
        return (
            f"ThresholdChoice({self.strategy}, cost {self.cost:g}, {len(self.thresholds)} slices"
            f"{unmet})"
        )


@dataclass(frozen=True, eq=False)
class Neighbors(_Renders):
    """The examples nearest one row, by the What-If Tool's distance.

    Attributes
    ----------
    row : int
    distance : str
        ``"l1"``, ``"l2"`` or a custom distance's name.
    index : ndarray of int of shape (k,)
        The neighbours' rows, nearest first.
    distances : ndarray of shape (k,)
    outputs : ndarray of shape (k, n_outputs)
    predicted : ndarray of shape (k,)
    y : ndarray of shape (k,) or None
        Their true labels, when the session has them.
    predicted_row : int or float
        The row's own prediction.
    """

    row: int
    distance: str
    index: np.ndarray
    distances: np.ndarray
    outputs: np.ndarray
    predicted: np.ndarray
    y: np.ndarray | None
    predicted_row: Any
    output_names: tuple[str, ...]
    task: str

    def __len__(self) -> int:
        return len(self.index)

    @property
    def table(self) -> Any:
        """A DataFrame indexed by neighbour row: distance, predicted (and true) label."""
        import pandas as pd

        columns: dict[str, Any] = {"distance": self.distances, "predicted": self.predicted}
        if self.y is not None:
            columns["true"] = self.y
        return pd.DataFrame(columns, index=pd.Index(self.index, name="row"))

    def __repr__(self) -> str:
        return f"Neighbors(row {self.row}: {len(self)} nearest by {self.distance})"


@dataclass(frozen=True, eq=False)
class FeatureStats(_Renders):
    """Every feature's distribution, overall or per slice (the What-If Tool's "Features" tab).

    Attributes
    ----------
    by : tuple of str or None
        The slicing feature(s).
    slices : tuple of str
        Slice labels (``("all",)`` without ``by``).
    table : pandas.DataFrame
        Indexed by (slice, feature): count, mean, std, min, 25%, 50%, 75%, max and
        zeros (the share of zero values); categorical features have the count only.
    histograms : dict of str to dict of str to ndarray of shape (bins,)
        Numeric feature -> slice -> counts on the feature's ``edges``.
    edges : dict of str to ndarray of shape (bins + 1,)
        Bin edges per numeric feature, shared by its slices.
    categories : dict of str to dict of str to dict of str to int
        Categorical feature -> slice -> category -> count.
    """

    by: tuple[str, ...] | None
    slices: tuple[str, ...]
    table: Any
    histograms: dict[str, dict[str, np.ndarray]]
    edges: dict[str, np.ndarray]
    categories: dict[str, dict[str, dict[str, int]]]

    def __repr__(self) -> str:
        n = len(self.histograms) + len(self.categories)
        by = "" if self.by is None else f" by {', '.join(self.by)}"
        return f"FeatureStats({n} features{by}; {len(self.slices)} slice(s))"
