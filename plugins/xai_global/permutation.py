"""Permutation importance with scikit-learn's semantics and permutation draws.

``sklearn.inspection.permutation_importance(est, X, y, random_state=seed)`` draws one int
from ``RandomState(seed)``, then for every feature starts a fresh ``RandomState`` from
that int and, ``n_repeats`` times, shuffles an index array in place and applies it to the
feature's column of a copy of ``X`` (so repeat ``r`` sees the composition of the first
``r`` shuffles). Every feature therefore sees the same sequence of permutations; this
module draws that sequence once and applies it to all features, with the permuted copies
of a block of (feature, repeat) pairs in one model call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from xai_core import Cost, ShapeError, ValidationError
from xai_core.attribution.cost import check_cost
from xai_core.attribution.guard import check_outputs
from xai_core.progress import LONG_WORK_UNITS, progress_bar
from xai_core.validation import check_bool, check_int, check_seed
from xai_global.inputs import BLOCK_FLOATS, prepare
from xai_global.results import PermutationImportance
from xai_global.scoring import Scorer, resolve_scorers

__all__ = ["permutation_draws", "permutation_importance"]


def permutation_draws(seed: int, n_samples: int, n_repeats: int) -> np.ndarray:
    """The row order of each repeat, as scikit-learn draws them for ``random_state=seed``.

    Returns
    -------
    ndarray of int64 of shape (n_repeats, n_samples)
        Row ``r``: the permuted column of repeat ``r`` is ``X[draws[r], j]``.
    """
    random_seed = np.random.RandomState(seed).randint(np.iinfo(np.int32).max + 1)
    state = np.random.RandomState(random_seed)
    shuffling = np.arange(n_samples)
    order = np.arange(n_samples)
    out = np.empty((n_repeats, n_samples), dtype=np.int64)
    for r in range(n_repeats):  # one shuffle per repeat (not per sample)
        state.shuffle(shuffling)
        order = order[shuffling]
        out[r] = order
    return out


def permutation_importance(
    model: Any,
    X: Any,
    y: Any,
    *,
    scoring: Any = None,
    n_repeats: int = 5,
    seed: int | None = 0,
    feature_names: Sequence[str] | None = None,
    backend: Any = "cpu",
    batch_size: int = 4096,
    progress: bool | None = None,
) -> PermutationImportance | dict[str, PermutationImportance]:
    """The drop in a score when each feature's column is shuffled across the rows.

    Equals ``sklearn.inspection.permutation_importance(model, X, y, scoring=scoring,
    n_repeats=n_repeats, random_state=seed)`` for an estimator and the same data: the same
    permutations, the same scores (scikit-learn's metrics, read from the model's outputs).

    Parameters
    ----------
    model : ModelRunner, Model, torch.nn.Module, keras.Model, str, path, estimator or callable
        Anything :class:`xai_core.ModelRunner` accepts.
    X : array-like of shape (n_samples, n_features) or (n_samples, *input_shape), or DataFrame
        Numeric data (a DataFrame's columns must be numeric).
    y : array-like of shape (n_samples,)
        True values (regression), or for classification the estimator's labels (its
        ``classes_``) or, for other models, class indices ``0 .. n_classes-1``.
    scoring : str, callable or list of them, optional
        A scorer name (``"r2"``, ``"neg_mean_squared_error"``, ``"accuracy"``,
        ``"neg_log_loss"``, ``"roc_auc"``, ...: :func:`xai_global.scorers` lists them), a
        function ``f(y, outputs) -> float`` of outputs of shape (n_samples, n_outputs),
        larger being better, or a list of them. Default: ``"accuracy"`` for a model of two
        or more outputs, ``"r2"`` for one.
    n_repeats : int, default=5
        Shuffles per feature.
    seed : int or None, default=0
        scikit-learn's ``random_state``; ``None`` draws one (recorded in the result).
    feature_names : sequence of str, optional
        One per flattened feature; default: a DataFrame's columns, else ``x0, x1, ...``.
    backend : str or Backend, default="cpu"
        Where a native network runs.
    batch_size : int, default=4096
        Rows per model call inside the runner.
    progress : bool or None, default=None
        A progress bar over the (feature, repeat) pairs; ``None``: for long work only.

    Returns
    -------
    PermutationImportance
        With ``importances`` of shape (n_features, n_repeats); a dict of them by scorer
        name when ``scoring`` is a list.
    """
    repeats = check_int(n_repeats, "n_repeats", minimum=1)
    seed = check_seed(seed, allow_none=True)
    if seed is not None and seed >= 2**32:
        raise ValidationError(f"seed must be below 2**32 (numpy's RandomState); got {seed}.")
    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    show = check_bool(progress, "progress", allow_none=True)
    data = prepare(
        model,
        X,
        feature_names=feature_names,
        backend=backend,
        batch_size=batch_size,
        what="permutation importance",
    )
    n, d = data.X.shape
    baseline_outputs = check_outputs(data.predict(data.X), "permutation_importance")
    k = baseline_outputs.shape[1]
    scorers = resolve_scorers(scoring, k)
    classes = getattr(getattr(data.runner.model, "estimator", None), "classes_", None)
    y_true = _check_y(y, n, k, scorers, classes)
    baseline = np.array([s.score(y_true, baseline_outputs) for s in scorers])

    pairs = max(1, BLOCK_FLOATS // max(1, n * d))
    pairs = min(pairs, d * repeats)
    check_cost(
        Cost(
            n * d * repeats,
            8 * pairs * n * (d + k),
            f"{n:,} rows x {d:,} features x {repeats} repeats",
            "lower n_repeats or pass fewer rows",
        ),
        "permutation_importance",
    )
    draws = permutation_draws(seed, n, repeats)
    scores = _permuted_scores(data, y_true, scorers, draws, pairs, show)
    results = {
        s.name: PermutationImportance(
            feature_names=data.feature_names,
            scorer=s.name,
            baseline=float(baseline[i]),
            importances=baseline[i] - scores[i],
            seed=seed,
            n_samples=n,
        )
        for i, s in enumerate(scorers)
    }
    if isinstance(scoring, (list, tuple)):
        return results
    return next(iter(results.values()))


def _permuted_scores(
    data: Any,
    y: np.ndarray,
    scorers: list[Scorer],
    draws: np.ndarray,
    pairs: int,
    progress: bool | None,
) -> np.ndarray:
    """Scores of every (feature, repeat) permuted copy: shape (n_scorers, n_features, n_repeats)."""
    X = data.X
    n, d = X.shape
    repeats = len(draws)
    feature = np.repeat(np.arange(d), repeats)
    repeat = np.tile(np.arange(repeats), d)
    out = np.empty((len(scorers), d * repeats))
    with progress_bar(
        d * repeats,
        progress=progress,
        desc="permutation importance",
        unit="permutation",
        long=-(-d * repeats // pairs) >= LONG_WORK_UNITS,
    ) as bar:
        for start in range(0, d * repeats, pairs):
            js = feature[start : start + pairs]
            rs = repeat[start : start + pairs]
            P = len(js)
            edited = np.empty((P, n, d), dtype=np.float64)
            edited[...] = X[None]
            columns = X[:, js].T  # (P, n)
            edited[np.arange(P), :, js] = np.take_along_axis(columns, draws[rs], axis=1)
            outputs = check_outputs(
                data.predict(edited.reshape(P * n, d)),
                "permutation_importance",
                of="the permuted rows",
            ).reshape(P, n, -1)
            for p in range(P):
                for i, s in enumerate(scorers):
                    out[i, start + p] = s.score(y, outputs[p])
            bar.update(P)
    return out.reshape(len(scorers), d, repeats)


def _check_y(y: Any, n: int, k: int, scorers: list[Scorer], classes: Any = None) -> np.ndarray:
    """``y`` as float64 values, or as class indices for classification scorers.

    An estimator's labels (its ``classes_``, the order of its probabilities) map to their
    indices, as scikit-learn's scorers compare them.
    """
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1 or len(arr) != n:
        raise ShapeError(
            f"y must have shape ({n},): one value per row of X; got an array of shape {arr.shape}."
        )
    classify = any(s.kind == "classification" for s in scorers)
    if classify and classes is not None and len(classes) == max(2, k):
        labels = list(np.asarray(classes).tolist())
        index = {label: i for i, label in enumerate(labels)}
        unknown = sorted({str(v) for v in arr.tolist() if v not in index})
        if unknown:
            raise ValidationError(
                f"y must hold the estimator's classes {labels}; got {unknown[:5]} as well."
            )
        return np.array([index[v] for v in arr.tolist()], dtype=np.int64)
    if arr.dtype.kind not in "biuf":
        raise ValidationError(
            f"y must hold numbers (class indices or values); got dtype {arr.dtype}."
        )
    values = arr.astype(np.float64)
    if not np.all(np.isfinite(values)):
        raise ValidationError("y must be finite; got NaN or infinity.")
    if classify:
        classes = max(2, k)
        if np.any(values != np.round(values)) or values.min() < 0 or values.max() >= classes:
            raise ValidationError(
                f"y must hold class indices 0 .. {classes - 1} for a classification scorer and a "
                f"model of {k} output(s); got values in [{values.min():g}, {values.max():g}]."
            )
        return values.astype(np.int64)
    return values
