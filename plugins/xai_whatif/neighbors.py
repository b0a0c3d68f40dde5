"""Nearest neighbours of a datapoint in a what-if session, by the What-If Tool's L1 or L2 distance.

``w.neighbors(row, k=5)`` is ``neighbors(w, row, k=5)``: the ``k`` other examples closest to
the row as it is now (edits included), whatever their prediction; the distance is the one
:meth:`~xai_whatif.WhatIf.nearest_counterfactual` uses (:mod:`xai_whatif.distance`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core.validation import check_positive_int
from xai_whatif.distance import Distance
from xai_whatif.results import Neighbors

if TYPE_CHECKING:
    from xai_whatif.whatif import WhatIf

__all__ = ["neighbors"]


def neighbors(
    w: WhatIf, row: int, k: int = 5, distance: str | Callable[..., Any] = "l1"
) -> Neighbors:
    """The ``k`` examples nearest ``row`` (itself excluded), nearest first.

    Parameters
    ----------
    row : int
    k : int, default=5
        At most ``n_samples - 1``; fewer rows are returned when the data has fewer.
    distance : {"l1", "l2"} or callable, default="l1"
        As for :meth:`~xai_whatif.WhatIf.nearest_counterfactual`.

    Returns
    -------
    Neighbors
        ``index`` and ``distances`` of shape (k,), their outputs, predictions and labels.
        Ties are broken by row index.
    """
    i = w.table.row_index(row)
    k = check_positive_int(k, "k")
    dist = Distance(w.table, distance)
    d = np.asarray(dist(w.table.X[i], w.table.X), dtype=np.float64)
    d[i] = np.inf
    k = min(k, len(d) - 1)
    order = np.lexsort((np.arange(len(d)), d))[:k]  # by distance, then by row
    return Neighbors(
        row=i,
        distance=dist.kind,
        index=order,
        distances=d[order],
        outputs=w.outputs[order].copy(),
        predicted=w.predicted[order].copy(),
        y=None if w.y is None else w.y[order].copy(),
        predicted_row=w.predicted[i].item(),
        output_names=w.output_names,
        task=w.task,
    )
