"""The distribution of every feature, over the data and per slice: the What-If Tool's "Features" tab.

``w.feature_stats(by=None, bins=10)`` is ``feature_stats(w, ...)``: per numeric feature the
count, mean, standard deviation, minimum, quartiles, maximum and share of
zeros, and a histogram on edges shared by every slice (so slices compare bin by bin); per
categorical feature the count of each category.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core import CapabilityError
from xai_core.validation import check_positive_int
from xai_whatif import fairness as _fair
from xai_whatif.results import FeatureStats

if TYPE_CHECKING:
    from xai_whatif.whatif import WhatIf

__all__ = ["feature_stats"]

#: The statistics of a numeric feature, in the table's column order.
STATISTICS = ("count", "mean", "std", "min", "25%", "50%", "75%", "max", "zeros")


def _numeric(column: np.ndarray) -> dict[str, float]:
    """The statistics of one feature's values in one slice (a slice is never empty)."""
    q = np.quantile(column, [0.25, 0.5, 0.75])
    return {
        "count": int(column.size),
        "mean": float(column.mean()),
        "std": float(column.std(ddof=1)) if column.size > 1 else np.nan,
        "min": float(column.min()),
        "25%": float(q[0]),
        "50%": float(q[1]),
        "75%": float(q[2]),
        "max": float(column.max()),
        "zeros": float(np.mean(column == 0)),
    }


def feature_stats(
    w: WhatIf, by: Any = None, *, bins: int = 10, slice_bins: int = 4
) -> FeatureStats:
    """Statistics and histograms of every feature of the data as edited, overall or per slice.

    Parameters
    ----------
    by : feature or pair of features, optional
        Slice the data as :meth:`~xai_whatif.WhatIf.slices` does; ``None``: one slice, "all".
    bins : int, default=10
        Equal-width histogram bins per numeric feature, over its whole range.
    slice_bins : int, default=4
        Quantile bins of a numeric slicing feature.

    Returns
    -------
    FeatureStats
        ``table`` indexed by (slice, feature) with :data:`STATISTICS` as columns (pandas'
        ``describe`` quartiles, the sample standard deviation), ``histograms`` and
        ``edges`` per numeric feature, ``categories`` per categorical one.

    Raises
    ------
    CapabilityError
        Image data: pixels have no per-feature distribution worth a table.
    """
    import pandas as pd

    t = w.table
    if t.is_image:
        raise CapabilityError(
            "feature_stats describes tabular features; this session holds images "
            f"of shape {t.sample_shape}."
        )
    bins = check_positive_int(bins, "bins")
    if by is None:
        ids, labels = np.zeros(t.n_samples, dtype=np.int64), ["all"]
    else:
        cols = t.features(by, "by")
        ids, labels = _fair.slice_ids(t, cols, check_positive_int(slice_bins, "slice_bins"))
    X = t.X
    records, histograms, edges, categories = [], {}, {}, {}
    for j, name in enumerate(t.feature_names):
        column = X[:, j]
        if j in t.categories:
            values = np.unique(column)
            categories[name] = {
                label: {str(t.label(j, v)): int(np.sum(column[ids == s] == v)) for v in values}
                for s, label in enumerate(labels)
            }
            for s, label in enumerate(labels):
                records.append({"slice": label, "feature": name, "count": int(np.sum(ids == s))})
            continue
        edges[name] = np.histogram_bin_edges(column, bins=bins)
        histograms[name] = {}
        for s, label in enumerate(labels):
            part = column[ids == s]
            records.append({"slice": label, "feature": name, **_numeric(part)})
            histograms[name][label] = np.histogram(part, bins=edges[name])[0]
    table = pd.DataFrame.from_records(records).set_index(["slice", "feature"])
    table = table.reindex(columns=list(STATISTICS))
    return FeatureStats(
        by=None if by is None else tuple(t.feature_names[j] for j in cols),
        slices=tuple(labels),
        table=table,
        histograms=histograms,
        edges=edges,
        categories=categories,
    )
