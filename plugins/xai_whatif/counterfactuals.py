"""Counterfactuals of a what-if session: the nearest example with another prediction, or a searched edit.

The functions take the session first; :class:`~xai_whatif.WhatIf` has them as methods
(``w.counterfactual(row)`` is ``counterfactual(w, row)``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core import ValidationError, XaiWarning
from xai_core.attribution.cost import check_cost
from xai_core.attribution.seeds import resolve_seed
from xai_core.validation import check_int, check_positive_int
from xai_whatif.distance import Distance, ScaledData
from xai_whatif.results import Counterfactuals
from xai_whatif.search import SearchProblem, refine_count, search, search_cost

if TYPE_CHECKING:
    from xai_whatif.whatif import WhatIf

__all__ = ["counterfactual", "nearest_counterfactual"]


def nearest_counterfactual(
    w: WhatIf, row: int, distance: str | Callable[..., Any] = "l1"
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
    i = w.table.row_index(row)
    dist = Distance(w.table, distance)
    eligible = w._prediction_differs(w.outputs, w.predicted[i], None)
    eligible[i] = False
    if dist.fn is None:
        if "data" not in w._scaled:  # one scaled copy serves L1 and L2
            w._scaled["data"] = ScaledData(w.table.X, dist)
        j, d = w._scaled["data"].nearest(w.table.X[i], eligible, dist)
    else:
        candidates = np.flatnonzero(eligible)
        j, d = -1, float("inf")
        if candidates.size:
            all_d = dist(w.table.X[i], w.table.X[candidates])
            k = int(np.argmin(all_d))
            j, d = int(candidates[k]), float(all_d[k])
    idx = np.array([j] if j >= 0 else [], dtype=np.int64)
    return _result(w, "nearest", i, w.table.X[idx], np.array([d])[: idx.size], idx, dist, {})


def _result(
    w: WhatIf,
    method: str,
    i: int,
    C: np.ndarray,
    distances: np.ndarray,
    index: np.ndarray,
    dist: Distance,
    meta: dict[str, Any],
) -> Counterfactuals:
    outputs = (
        w.outputs[index]
        if method == "nearest"
        else (w._predict(C) if len(C) else np.zeros((0, w.outputs.shape[1])))
    )
    return Counterfactuals(
        method=method,
        row=i,
        x=w.table.X[i].copy(),
        X=np.array(C, dtype=np.float64),
        distances=np.asarray(distances, dtype=np.float64),
        index=np.asarray(index, dtype=np.int64),
        outputs_before=w.outputs[i].copy(),
        outputs=outputs,
        predicted_before=w.predicted[i].item(),
        predicted=w._classify(outputs) if len(outputs) else np.zeros(0),
        distance=dist.kind,
        feature_names=w.feature_names,
        output_names=w.output_names,
        sample_shape=w.table.sample_shape,
        labels=tuple(tuple(w.table.label(j, v) for j, v in enumerate(c)) for c in C[:10])
        if not w.table.is_image
        else (),
        meta=meta,
    )


def counterfactual(
    w: WhatIf,
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
    seed: int | None = 0,
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
    seed : int or None, default=0
        Seeds the search; the same seed gives the same counterfactuals. ``None`` draws a
        seed, recorded in ``meta["seed"]``.
    progress : bool, optional
        Show a progress bar (default: the session's setting).

    Returns
    -------
    Counterfactuals
        Up to ``n``, closest first; none when no candidate changed the prediction.
    """
    i = w.table.row_index(row)
    n = check_positive_int(n, "n")
    n_samples = check_positive_int(n_samples, "n_samples")
    max_rounds = check_positive_int(max_rounds, "max_rounds")
    n_donors = check_int(n_donors, "n_donors", 0)
    seed = resolve_seed(seed)
    target = w._check_target(target)
    dist = Distance(w.table, distance)
    mutable = _mutable(w, immutable)
    k = (
        int(mutable.sum())
        if max_features is None
        else check_positive_int(max_features, "max_features")
    )
    check_cost(
        search_cost(
            w.table.n_features,
            len(w.output_names),
            n=n,
            n_samples=n_samples,
            n_donors=min(n_donors, w.table.n_samples),
            max_rounds=max_rounds,
        ),
        "counterfactual",
    )
    problem = _search_problem(w, i, target, dist, mutable, k, ranges, n_donors)
    C, d, evaluations = search(
        problem,
        n=n,
        n_samples=n_samples,
        n_refine=refine_count(n),
        max_rounds=max_rounds,
        rng=np.random.default_rng(int(seed)),
        progress=w.progress if progress is None else progress,
    )
    if not len(C):
        warnings.warn(
            f"no counterfactual found for row {i}: no candidate changed the prediction. "
            "Loosen the constraints (ranges, immutable, max_features) or raise n_samples.",
            XaiWarning,
            stacklevel=2,
        )
    meta = {"seed": int(seed), "evaluations": evaluations, "max_features": k}
    return _result(w, "search", i, C, d, np.full(len(C), -1, dtype=np.int64), dist, meta)


def _mutable(w: WhatIf, immutable: Sequence[Any]) -> np.ndarray:
    """Boolean mask of shape (n_features,): the features the search may change."""
    mutable = np.ones(w.table.n_features, dtype=bool)
    mutable[w.table.features(immutable, "immutable") if len(immutable) else []] = False
    if not mutable.any():
        raise ValidationError("immutable lists every feature; nothing is left to change.")
    return mutable


def _search_problem(
    w: WhatIf,
    i: int,
    target: Any,
    dist: Distance,
    mutable: np.ndarray,
    k: int,
    ranges: Mapping[Any, Any] | None,
    n_donors: int,
) -> SearchProblem:
    """Row ``i``'s search: its bounds, the mutable features and the nearest donors.

    Donors are the ``n_donors`` examples closest to the row whose prediction already
    differs (reaches ``target`` when one is given).
    """
    lo, hi = w.table.ranges(ranges)
    x = w.table.X[i].copy()
    reference = w.predicted[i]
    if target is not None and w.task != "regression" and target == reference:
        raise ValidationError(f"row {i} is already predicted as target class {target}.")
    eligible = w._prediction_differs(w.outputs, reference, target)
    eligible[i] = False
    donors = w.table.X[eligible]
    if len(donors):
        order = np.argsort(dist(x, donors), kind="stable")[:n_donors]
        donors = donors[order]
    return SearchProblem(
        x=x,
        evaluate=lambda C: w._prediction_differs(w._predict(C), reference, target),
        distance=dist,
        contributions=dist.contributions,
        mutable=mutable,
        categorical=w.table.is_categorical,
        category_codes={j: np.unique(w.table.X[:, j]) for j in w.table.categories if mutable[j]},
        lo=lo,
        hi=hi,
        donors=donors,
        max_features=k,
    )
