"""Partial dependence and ICE curves, evaluated in large batches (rows x grid points per call).

:func:`partial_dependence` takes a what-if session first; :class:`~xai_whatif.WhatIf` has it
as a method (``w.partial_dependence(f)`` is ``partial_dependence(w, f)``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core import Cost, UnknownNameError, ValidationError, XaiWarning
from xai_core.attribution.cost import check_cost
from xai_core.progress import LONG_WORK_UNITS, progress_bar
from xai_core.validation import check_positive_int
from xai_whatif.results import PartialDependence

if TYPE_CHECKING:
    from xai_whatif.whatif import WhatIf

__all__ = ["ice_curves", "partial_dependence"]

#: Upper bound on the floats of one batch of edited rows (rows x grid points x features).
BATCH_FLOATS = 1 << 23


def ice_curves(
    predict: Callable[[np.ndarray], np.ndarray],
    X: np.ndarray,
    features: list[int],
    grids: list[np.ndarray],
    *,
    dtype: type = np.float32,
    progress: bool | None = False,
) -> np.ndarray:
    """Each row's outputs with ``features`` set to every grid point.

    Parameters
    ----------
    predict : callable
        Maps rows of shape (m, n_features) to outputs of shape (m, n_outputs).
    X : ndarray of shape (n_rows, n_features)
    features : list of int
        One or two columns.
    grids : list of ndarray
        The values of each feature, shapes (g1,) [and (g2,)].
    dtype : numpy dtype, default=float32
        The dtype of the edited rows passed to ``predict`` (the model's input dtype).

    Returns
    -------
    ndarray of shape (n_rows, g1[, g2], n_outputs)
    """
    mesh = np.meshgrid(*grids, indexing="ij")
    points = np.stack([m.ravel() for m in mesh], axis=1)  # (G, len(features))
    G = len(points)
    n, d = X.shape
    rows_per_batch = max(1, BATCH_FLOATS // max(1, G * d))
    parts = []
    starts = range(0, n, rows_per_batch)
    long = len(starts) >= LONG_WORK_UNITS
    with progress_bar(
        n, progress=progress, desc="partial dependence", unit="row", long=long
    ) as bar:
        for start in starts:
            block = X[start : start + rows_per_batch].astype(dtype, copy=False)
            edited = np.empty((len(block), G, d), dtype=dtype)
            edited[...] = block[:, None, :]
            edited[:, :, features] = points[None, :, :]
            out = predict(edited.reshape(-1, d))
            parts.append(out.reshape(len(block), G, -1))
            bar.update(len(block))
    ice = np.concatenate(parts, axis=0)
    return ice.reshape(n, *(len(g) for g in grids), ice.shape[-1])


def dependence_cost(n_rows: int, n_points: int, n_features: int, n_outputs: int) -> Cost:
    """Work and memory of ICE curves: every row at every grid point, in blocks of rows.

    The peak holds the curves (``n_rows * n_points * n_outputs`` float64 values) and one
    block of edited rows with its outputs.
    """
    block = min(n_rows * n_points, max(n_points, BATCH_FLOATS // max(1, n_features)))
    return Cost(
        n_rows * n_points,
        8 * n_rows * n_points * n_outputs + 8 * block * (n_features + n_outputs),
        f"{n_rows:,} rows x {n_points:,} grid points",
        "lower grid_resolution, pass a shorter grid or fewer rows",
    )


def partial_dependence(
    w: WhatIf,
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
    cols = w.table.features(features, "features")
    if not 1 <= len(cols) <= 2:
        raise ValidationError(f"features must name one or two features; got {len(cols)}.")
    resolution = check_positive_int(grid_resolution, "grid_resolution")
    if grid is not None and len(cols) == 1 and not _is_pair_of_sequences(grid, 1):
        grid = [grid]
    if grid is not None and not _is_pair_of_sequences(grid, len(cols)):
        raise ValidationError(
            f"grid must be a sequence of values per feature ({len(cols)} sequence(s)); got {grid!r}."
        )
    grids = [_grid(w, j, None if grid is None else grid[g], resolution) for g, j in enumerate(cols)]
    if rows is None:
        idx = np.arange(w.table.n_samples)
    else:
        idx = np.array([w.table.row_index(r, "rows") for r in np.ravel(rows).tolist()])
        if idx.size == 0:
            raise ValidationError("rows must name at least one row; got none.")
    n_points = int(np.prod([len(g) for g in grids]))
    cost = dependence_cost(len(idx), n_points, w.table.n_features, len(w.output_names))
    check_cost(cost, "partial_dependence")
    ice = ice_curves(
        w._predict,
        w.table.X[idx],
        cols,
        grids,
        dtype=np.float64 if getattr(w.runner.backend, "dtype", None) == np.float64 else np.float32,
        progress=w.progress if progress is None else progress,
    )
    return PartialDependence(
        features=tuple(w.feature_names[j] for j in cols),
        grid=tuple(grids),
        ice=None if kind == "average" else ice,
        average=ice.mean(axis=0),
        rows=idx,
        output_names=w.output_names,
        grid_labels=tuple(tuple(w.table.label(j, v) for v in g) for j, g in zip(cols, grids)),
    )


def _grid(w: WhatIf, j: int, values: Any, resolution: int) -> np.ndarray:
    name = w.feature_names[j]
    if values is None:
        col = w.table.X[:, j]
        distinct = np.unique(col)
        if j in w.table.categories or distinct.size <= resolution:
            return distinct
        return np.linspace(col.min(), col.max(), resolution)
    values = list(values)
    if not values:
        raise ValidationError(f"grid for feature {name!r} must not be empty.")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = np.array([w.table.code(j, v) for v in values], dtype=np.float64)
    if caught:
        warnings.warn(
            f"grid values of feature {name!r} leave its observed range "
            f"[{w.table.minimum[j]:g}, {w.table.maximum[j]:g}].",
            XaiWarning,
            stacklevel=3,
        )
    return out


def _is_pair_of_sequences(grid: Any, count: int) -> bool:
    if isinstance(grid, (str, bytes)) or not hasattr(grid, "__len__") or len(grid) != count:
        return False
    return all(hasattr(g, "__len__") and not isinstance(g, (str, bytes)) for g in grid)
