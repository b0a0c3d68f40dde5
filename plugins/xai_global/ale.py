"""First-order accumulated local effects (ALE) of numeric features, over quantile bins.

The bins are PyALE's (``aleplot_1D_continuous``): the edges are the feature's minimum and
its quantiles at ``0, 1/grid_size, ..., 1`` (PyALE's ``quantile_ied``, which picks data
values), without repeats; bin ``i`` holds the values in ``(edge[i], edge[i+1]]`` (the
first bin also its lower edge). Each row's feature is set to its bin's two edges, the
differences of the model's outputs are averaged per bin and accumulated from 0 at the
lowest edge, and the curve is centred so its mean over the rows is 0 (each bin counted by
its rows at the midpoint of its two edges' values), as Apley and Zhu define it and PyALE
and alibi compute it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from xai_core import Cost, ValidationError
from xai_core.attribution.cost import check_cost
from xai_core.attribution.guard import check_outputs
from xai_core.progress import LONG_WORK_UNITS, progress_bar
from xai_core.validation import check_bool, check_int
from xai_global.inputs import BLOCK_FLOATS, prepare, resolve_output_names
from xai_global.results import AccumulatedLocalEffects

__all__ = ["ale", "ale_edges", "centred_effect"]


def ale_edges(values: np.ndarray, grid_size: int) -> np.ndarray:
    """The bin edges of one feature, as PyALE draws them.

    Parameters
    ----------
    values : ndarray of shape (n_samples,)
    grid_size : int
        The number of quantile steps; fewer bins remain when quantiles repeat.

    Returns
    -------
    ndarray of float64 of shape (n_bins + 1,), increasing
    """
    s = np.sort(values)
    q = np.linspace(0, 1, grid_size + 1, endpoint=True)
    m = len(s) - 1
    position = m * q
    j = position.astype(int)
    exact = (position - j) == 0
    previous = np.where(j > 0, s[np.maximum(j - 1, 0)], 0.0)  # pandas' shift(1, fill_value=0)
    quantiles = np.where(exact, previous, s[j])
    quantiles[q == 0] = s[0]
    quantiles[q == 1] = s[-1]
    return np.unique(np.concatenate([[s[0]], quantiles]))


def bin_codes(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The bin of each value: ``i`` for ``edges[i] < v <= edges[i+1]``, 0 for the lowest edge."""
    return np.maximum(np.searchsorted(edges, values, side="left") - 1, 0)


def centred_effect(
    deltas: np.ndarray, codes: np.ndarray, n_bins: int
) -> tuple[np.ndarray, np.ndarray]:
    """The centred ALE curve at the edges from each row's output difference across its bin.

    Parameters
    ----------
    deltas : ndarray of shape (n_samples, n_outputs)
        ``f(x with the feature at its bin's upper edge) - f(... lower edge)``.
    codes : ndarray of int of shape (n_samples,)
    n_bins : int

    Returns
    -------
    effect : ndarray of shape (n_bins + 1, n_outputs)
    counts : ndarray of int64 of shape (n_bins,)
    """
    counts = np.bincount(codes, minlength=n_bins)
    sums = np.zeros((n_bins, deltas.shape[1]))
    np.add.at(sums, codes, deltas)
    means = np.divide(sums, counts[:, None], out=np.zeros_like(sums), where=counts[:, None] > 0)
    accumulated = np.concatenate([np.zeros((1, deltas.shape[1])), np.cumsum(means, axis=0)])
    mids = (accumulated[:-1] + accumulated[1:]) / 2
    return accumulated - (counts[:, None] * mids).sum(axis=0) / counts.sum(), counts


def ale(
    model: Any,
    X: Any,
    features: Any = None,
    *,
    grid_size: int = 20,
    feature_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    backend: Any = "cpu",
    batch_size: int = 4096,
    progress: bool | None = None,
) -> AccumulatedLocalEffects:
    """First-order accumulated local effects of numeric features, for every model output.

    Equals PyALE's ``ale(X, model, [feature], grid_size=grid_size)`` (its
    ``aleplot_1D_continuous``) on a regression model, per output; a classifier's outputs
    are its class probabilities, each with its own curve.

    Parameters
    ----------
    model : ModelRunner, Model, torch.nn.Module, keras.Model, str, path, estimator or callable
        Anything :class:`xai_core.ModelRunner` accepts.
    X : array-like of shape (n_samples, n_features), or DataFrame
        Numeric data; a DataFrame with a non-numeric column is refused.
    features : feature or sequence of features, optional
        Names or indices; default: every feature.
    grid_size : int, default=20
        Quantile steps per feature (PyALE's ``grid_size``).
    feature_names, output_names : sequence of str, optional
    backend : str or Backend, default="cpu"
    batch_size : int, default=4096
    progress : bool or None, default=None

    Returns
    -------
    AccumulatedLocalEffects
        Per feature: ``edges`` (n_bins + 1,), ``effects`` (n_bins + 1, n_outputs) and
        ``counts`` (n_bins,).
    """
    grid = check_int(grid_size, "grid_size", minimum=1)
    show = check_bool(progress, "progress", allow_none=True)
    data = prepare(
        model,
        X,
        feature_names=feature_names,
        backend=backend,
        batch_size=batch_size,
        what="ALE",
    )
    n, d = data.X.shape
    if features is None:
        cols = list(range(d))
    else:
        keys = [features] if isinstance(features, (str, int, np.integer)) else list(features)
        if not keys:
            raise ValidationError("features must name at least one feature; got none.")
        cols = list(dict.fromkeys(data.feature_index(key, "features") for key in keys))
    edges, codes = [], []
    for j in cols:
        e = ale_edges(data.X[:, j], grid)
        if len(e) < 2:
            raise ValidationError(
                f"feature {data.feature_names[j]!r} has one value ({e[0]:g}) in X; ALE needs "
                "at least two (leave it out with features=)."
            )
        edges.append(e)
        codes.append(bin_codes(data.X[:, j], e))
    per_block = max(1, min(len(cols), BLOCK_FLOATS // max(1, 2 * n * d)))
    check_cost(
        Cost(
            2 * n * len(cols),
            8 * 2 * per_block * n * d,
            f"{n:,} rows x {len(cols):,} features x 2 edges",
            "pass fewer features or rows",
        ),
        "ale",
    )
    effects: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    names: tuple[str, ...] | None = None
    long = -(-len(cols) // per_block) >= LONG_WORK_UNITS
    with progress_bar(len(cols), progress=show, desc="ALE", unit="feature", long=long) as bar:
        for start in range(0, len(cols), per_block):
            block = range(start, min(start + per_block, len(cols)))
            B = len(block)
            edited = np.empty((2, B, n, d), dtype=np.float64)
            edited[...] = data.X
            for b, c in enumerate(block):  # one column per feature, all rows at once
                edited[0, b, :, cols[c]] = edges[c][codes[c]]
                edited[1, b, :, cols[c]] = edges[c][codes[c] + 1]
            out = check_outputs(
                data.predict(edited.reshape(2 * B * n, d)), "ale", of="the rows at bin edges"
            ).reshape(2, B, n, -1)
            if names is None:
                names = resolve_output_names(output_names, data.runner, out.shape[-1])
            for b, c in enumerate(block):
                effect, count = centred_effect(out[1, b] - out[0, b], codes[c], len(edges[c]) - 1)
                effects.append(effect)
                counts.append(count)
            bar.update(B)
    return AccumulatedLocalEffects(
        features=tuple(data.feature_names[j] for j in cols),
        edges=tuple(edges),
        effects=tuple(effects),
        counts=tuple(counts),
        output_names=names or (),
        grid_size=grid,
        n_samples=n,
    )
