"""The SHAP algorithms: exact Shapley values, shap's Permutation, Tree and Linear explainers, and vectorised Kernel SHAP.

Each ``run_*`` function returns the Shapley values of every player for the outputs it
was asked for, ``values`` of shape (n_samples, n_players, n_outputs) and ``base`` of
shape (n_samples, n_outputs); the explainer picks each row's target. The ``check_*``
functions run before any model evaluation and raise what the user must change.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from xai_core import CapabilityError, ValidationError
from xai_core.progress import LONG_WORK_UNITS, progress_bar
from xai_shap.game import CountedModel
from xai_shap.groups import FeatureGroups
from xai_shap.kernel import (
    MAX_DESIGN_ELEMENTS,
    auto_n_samples,
    coalition_values,
    shapley_kernel_design,
    solve_constrained_wls,
    varying_groups,
)

__all__ = [
    "ALGORITHMS",
    "AUTO_EXACT_MAX_FEATURES",
    "EXACT_MAX_EVALS",
    "PERMUTATION_MAX_EVALS",
    "check_exact",
    "check_kernel",
    "check_partition",
    "check_permutation",
    "estimator_kind",
    "is_tree_model",
    "linear_explainer",
    "run_exact",
    "run_kernel",
    "run_linear",
    "run_permutation",
    "run_tree",
    "tree_explainer",
    "tree_predictions",
]

ALGORITHMS = ("auto", "exact", "permutation", "kernel", "tree", "linear", "partition")
#: ``auto`` uses the exact algorithm up to this many players.
AUTO_EXACT_MAX_FEATURES = 10
#: Default cap on the exact algorithm's coalitions per row (2**16: 16 players).
EXACT_MAX_EVALS = 2**16
#: Default evaluations per row of the permutation algorithm (shap's default).
PERMUTATION_MAX_EVALS = 500


# -- checks, before any work ---------------------------------------------------------------
def check_exact(n_players: int, max_evals: int | None) -> int:
    """The coalitions per row exact needs (``2**M``); raise if over ``max_evals`` or the default cap."""
    limit = EXACT_MAX_EVALS if max_evals is None else max_evals
    if n_players > 62 or 2**n_players > limit:
        cap = int(np.log2(limit)) if limit >= 1 else 0
        raise ValidationError(
            f"algorithm='exact' evaluates all 2**M coalitions per row; with {n_players} features "
            f"that is 2**{n_players} = {2**n_players:.3g} coalitions (each against every background "
            f"row), over the cap of {limit} (max_evals: at most {cap} features). Use "
            "algorithm='permutation' or 'kernel', or group the features (groups=, patch_size=)."
        )
    return 2**n_players


def check_partition(max_evals: int | None) -> int:
    """The budget per row of partition (shap's default 500); raise below 4."""
    from xai_shap.partition import check_partition as check

    return check(max_evals)


def check_permutation(n_players: int, max_evals: int | None) -> int:
    """The evaluations per row permutation uses; raise if ``max_evals`` allows no permutation."""
    need = 2 * n_players + 1
    if max_evals is None:
        return max(PERMUTATION_MAX_EVALS, 2 * need)  # shap's default, at least two permutations
    if max_evals < need:
        raise ValidationError(
            f"algorithm='permutation' needs max_evals >= 2*M + 1 = {need} for {n_players} features "
            f"(one forward and backward permutation); got max_evals={max_evals}."
        )
    return max_evals


def check_kernel(n_players: int, max_evals: int | None) -> int:
    """The coalitions per row kernel evaluates; raise if ``max_evals`` cannot determine M values."""
    full = 2**n_players - 2 if n_players <= 30 else None
    budget = auto_n_samples(n_players) if max_evals is None else max_evals
    if full is not None:
        budget = min(budget, full)
    need = min(n_players + 1, full) if full is not None else n_players + 1
    if budget < need:
        raise ValidationError(
            f"algorithm='kernel' needs max_evals >= M + 1 = {need} coalitions for {n_players} "
            f"features; got max_evals={max_evals}."
        )
    return budget


def estimator_kind(model: Any) -> tuple[Any, str | None]:
    """The scikit-learn estimator behind a black box and which method it predicts with.

    Returns
    -------
    estimator : object or None
    method : {"predict_proba", "predict", ...} or None
    """
    estimator = getattr(model, "estimator", None)
    fn = getattr(model, "fn", None)
    return estimator, getattr(fn, "__name__", None)


#: The libraries whose scikit-learn classes shap's TreeExplainer reads.
TREE_LIBRARIES = ("xgboost", "lightgbm", "catboost")
#: How far shap's copy of the trees may be from the model's own outputs.
TREE_TOLERANCE = 1e-5


def _library(estimator: Any) -> str:
    return type(estimator).__module__.split(".")[0]


def is_tree_model(estimator: Any) -> bool:
    """Whether ``estimator`` is built of decision trees (single, bagged or boosted):
    scikit-learn's, or XGBoost's, LightGBM's or CatBoost's scikit-learn classes."""
    if _library(estimator) in TREE_LIBRARIES:
        return True
    return any(hasattr(estimator, a) for a in ("tree_", "estimators_", "_predictors"))


def _boosted(estimator: Any) -> bool:
    """Whether the trees' sum goes through a link (boosting), so probabilities do not add."""
    return (
        _library(estimator) in TREE_LIBRARIES
        or hasattr(estimator, "_predictors")
        or (hasattr(estimator, "estimators_") and hasattr(estimator, "loss"))
    )


def _refuse(why: str) -> CapabilityError:
    return CapabilityError(
        f"algorithm='tree' {why} Use algorithm='exact', 'permutation' or 'kernel', which "
        "work for any model."
    )


def tree_explainer(runner: Any, background: np.ndarray, X: np.ndarray) -> tuple[Any, str]:
    """A ``shap.TreeExplainer`` for the runner's tree model and its output space, checked
    to reproduce the model's outputs on ``background`` and ``X`` (one model call), or
    :class:`CapabilityError`.

    A forest's probabilities are averages of its trees' and are explained as they are
    (``"model output"``). A boosted classifier's probability is the logistic of its trees'
    sum, which shap's interventional solver does not split exactly, so it is explained in
    the space where the trees add up, the log-odds of class 1 (``"log_odds"``): exact
    Shapley values of the margin, class 0 the negated ones.
    """
    import shap
    from sklearn.base import is_classifier

    model = runner.model
    estimator, method = estimator_kind(model)
    if estimator is None or not is_tree_model(estimator):
        got = repr(model) if estimator is None else type(estimator).__name__
        raise _refuse(
            "needs a fitted scikit-learn tree model (decision tree, random forest, extra "
            f"trees, gradient boosting) or an XGBoost, LightGBM or CatBoost one; got {got}."
        )
    if method not in ("predict_proba", "predict"):
        raise _refuse(f"explains predict_proba or predict; the model calls {method!r}.")
    classifier = is_classifier(estimator)
    if classifier and method == "predict":
        raise _refuse(
            f"cannot explain class labels ({type(estimator).__name__}.predict); pass the "
            "classifier itself (its predict_proba is explained)."
        )
    classes = getattr(estimator, "classes_", None) if classifier else None
    n_classes = 0 if classes is None else len(classes)
    if classifier and n_classes > 2 and _boosted(estimator):
        # a softmax over the classes' tree sums does not split over trees (and shap's reader
        # crashes the process on some of them): refused before shap sees the model
        raise _refuse(
            f"explains a boosted classifier's probabilities for two classes; "
            f"{type(estimator).__name__} has {n_classes}."
        )
    log_odds = classifier and _boosted(estimator)
    output = "probability" if method == "predict_proba" and not log_odds else "raw"
    space = "log_odds" if log_odds else "model output"
    try:
        explainer = shap.TreeExplainer(
            estimator,
            data=background.reshape(len(background), -1).astype(np.float64),
            feature_perturbation="interventional",
            model_output=output,
        )
    except Exception as exc:  # noqa: BLE001 - shap raises many types for unsupported models
        raise _refuse(f"cannot explain {type(estimator).__name__}: {exc}") from None
    rows = np.concatenate([background, X])
    copy = tree_predictions((explainer, space), model, rows)
    if copy is not None:
        own = np.asarray(runner.predict_validated(rows), dtype=np.float64)
        if log_odds:
            copy = 1.0 / (1.0 + np.exp(-copy))  # [-m, m] -> [1 - p, p]
        gap = float(np.max(np.abs(copy - own))) if own.size else 0.0
        if gap > TREE_TOLERANCE * max(1.0, float(np.max(np.abs(own)))):
            raise _refuse(
                f"cannot explain this {type(estimator).__name__}: shap's copy of its trees "
                f"predicts up to {gap:.3g} away from the model on the background and X "
                "(missing values routed differently, say)."
            )
        probe = np.concatenate([X[:8], background[:8]])
        n_outputs = copy.shape[1]
        values, base = run_tree((explainer, space), probe, n_outputs)
        reached = base + values.sum(axis=1)
        target = tree_predictions((explainer, space), model, probe)
        gap = float(np.max(np.abs(reached - target)))
        if gap > TREE_TOLERANCE * max(1.0, float(np.max(np.abs(target)))):
            raise _refuse(
                f"cannot explain this {type(estimator).__name__}: shap's tree values miss "
                f"the model's outputs by up to {gap:.3g} (missing values it does not follow "
                "through the trees, say)."
            )
    return explainer, space


def linear_explainer(model: Any, background: np.ndarray) -> tuple[Any, str]:
    """A ``shap.LinearExplainer`` and its output space (``"model output"`` or ``"decision_function"``)."""
    import shap
    from sklearn.base import is_classifier, is_regressor

    estimator, method = estimator_kind(model)
    coef = getattr(estimator, "coef_", None)
    if estimator is None or coef is None or not hasattr(estimator, "intercept_"):
        raise CapabilityError(
            f"algorithm='linear' needs a fitted scikit-learn linear model (with coef_ and "
            f"intercept_); got {model!r}. Use algorithm='exact', 'permutation' or 'kernel'."
        )
    if is_regressor(estimator) and method == "predict":
        space = "model output"
    elif is_classifier(estimator) and hasattr(estimator, "decision_function"):
        space = "decision_function"
    else:
        raise CapabilityError(
            f"algorithm='linear' cannot explain {type(estimator).__name__}.{method}; it explains "
            "a regressor's predict or a classifier's decision_function."
        )
    flat_bg = background.reshape(len(background), -1).astype(np.float64)
    masker = shap.maskers.Independent(flat_bg, max_samples=len(flat_bg))
    try:
        return shap.LinearExplainer(estimator, masker), space
    except Exception as exc:  # noqa: BLE001
        raise CapabilityError(
            f"algorithm='linear' cannot explain {type(estimator).__name__}: {exc}"
        ) from None


# -- shap's model-agnostic explainers --------------------------------------------------------
def _as_outputs(values: np.ndarray, base: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 2:
        values = values[:, :, None]
    base = (
        np.asarray(base, dtype=np.float64).reshape(n, -1)
        if np.ndim(base)
        else np.full((n, 1), float(base))
    )
    return values, base


def _all_coalitions(m: int) -> np.ndarray:
    """Every coalition of ``m`` players, shape (2**m, m): row ``s`` holds the bits of ``s``."""
    return ((np.arange(2**m)[:, None] >> np.arange(m)) & 1).astype(bool)


def _shapley_weights(members: np.ndarray) -> np.ndarray:
    """The matrix taking the values of the coalitions ``members`` (all ``2**m`` of them,
    shape (2**m, m)) to the Shapley values, of the same shape.

    Coalition ``S`` enters player ``i``'s value with weight ``w(|S| - 1)`` when ``i`` is
    in it and ``-w(|S|)`` when not, ``w(k) = k! (m - k - 1)! / m!``, so that ``v @ W`` is
    the sum over the coalitions ``S`` without ``i`` of ``w(|S|) (v(S + i) - v(S))``.
    """
    m = members.shape[1]
    size = members.sum(axis=1)
    w = np.zeros(m + 1)  # w(k) = 1 / (m * C(m - 1, k)) for k < m; w(m) is never used
    w[:m] = [1.0 / (m * math.comb(m - 1, k)) for k in range(m)]
    return np.where(members, w[np.maximum(size - 1, 0)][:, None], -w[size][:, None])


def run_exact(
    model: CountedModel,
    X: np.ndarray,
    background: np.ndarray,
    groups: FeatureGroups,
    *,
    progress: bool | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact Shapley values from all ``2**M`` coalitions of each row's ``M`` players.

    The value of a coalition is the mean over the background of the model's outputs with
    the coalition's features taken from the row (interventional, as shap's ``Exact``
    explainer with an ``Independent`` masker computes it, and equal to it: see
    tests/plugins/test_shap.py); the Shapley values are then one product of those values
    with fixed weights (:func:`_shapley_weights`). The model sees the same rows as
    shap's explainer would give it (``2**M`` per row and background row), in large calls;
    unlike shap's, nothing is compiled first (shap's numba kernels took 20 to 45 s on the
    first call of every process, measured on two busy cores). Rows go in chunks of bounded
    memory, with a bar over rows shown by the progress rule (long work being ``2**24``
    model rows or more).
    """
    n, m = len(X), groups.n_groups
    flat_x = X.reshape(n, -1)
    flat_bg = background.reshape(len(background), -1)
    fnull = model(flat_bg).mean(axis=0)
    n_out = fnull.shape[-1]
    members = _all_coalitions(m)
    weights = _shapley_weights(members)
    everything = np.broadcast_to(np.arange(n_out), (n, n_out))
    rows = max(1, MAX_DESIGN_ELEMENTS // (2**m * max(m, 1)))
    values = np.empty((n, m, n_out))
    long = n * 2**m * len(flat_bg) >= 2**24
    with progress_bar(n, progress=progress, desc="Exact SHAP", unit="row", long=long) as bar:
        for start in range(0, n, rows):
            sl = slice(start, min(start + rows, n))
            coalitions = np.broadcast_to(members, (sl.stop - start, *members.shape))
            with bar.part(sl.stop - start):
                v = coalition_values(
                    model,
                    flat_x[sl],
                    flat_bg,
                    coalitions,
                    groups.labels,
                    everything[sl],
                    progress=progress,
                    dtype=model.dtype,
                )
            values[sl] = np.einsum("sm,nsq->nmq", weights, v)
    return values, np.broadcast_to(fnull, (n, n_out)).copy()


def _permutations(seed: int, players: np.ndarray, n_permutations: int) -> np.ndarray:
    """The player orders shap's ``Permutation`` explainer draws for a row seeded ``seed``.

    shap seeds numpy's global generator and shuffles one index array in place, once per
    permutation (each order starts from the one before): the same calls on a
    ``RandomState`` of the same seed give the same orders, without touching the global
    generator. Returns an array of shape (n_permutations, len(players)).
    """
    rng = np.random.RandomState(seed)  # noqa: NPY002 - shap's own generator, for its orders
    order = players.copy()
    out = np.empty((n_permutations, len(players)), dtype=np.int64)
    for p in range(n_permutations):  # sequential by construction: each shuffles the last
        rng.shuffle(order)
        out[p] = order
    return out


def _walk_coalitions(orders: np.ndarray, n_players: int) -> np.ndarray:
    """The ``2d + 1`` coalitions of each order's antithetic walk, shape (..., 2d + 1, n_players).

    Forward from the empty coalition, adding the order's players one at a time up to all
    ``d`` of them, then back, removing them in the same order down to the empty one.
    """
    *lead, d = orders.shape
    rank = np.full((*lead, n_players), d + 1, dtype=np.int64)  # players not in the order
    np.put_along_axis(rank, orders, np.arange(1, d + 1), axis=-1)
    steps = np.arange(d + 1)[:, None]
    forward = rank[..., None, :] <= steps  # (..., d + 1, n): the first j players of the order
    backward = (rank[..., None, :] > steps[1:]) & (rank[..., None, :] <= d)
    return np.concatenate([forward, backward], axis=-2)


def run_permutation(
    model: CountedModel,
    X: np.ndarray,
    background: np.ndarray,
    groups: FeatureGroups,
    *,
    max_evals: int,
    seeds: np.ndarray,
    progress: bool | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Antithetic permutation sampling, as shap's ``Permutation`` explainer (additive by construction).

    Row ``i`` walks ``max_evals // (2d + 1)`` orders of its ``d`` varying players (those
    that differ from some background row), each forward and back, and a player's value is
    the mean of its ``2 * n_orders`` marginal contributions. The orders are the ones shap
    draws when its generator is seeded with ``seeds[i]`` (:func:`_permutations`), so the
    values equal shap's explainer's for the same seed (tests/plugins/test_shap.py) and do
    not depend on the other rows. Coalition values come from large model calls
    (:func:`~xai_shap.kernel.coalition_values`); unlike shap's, nothing is compiled first
    (its numba kernels took 20 to 45 s on the first call of every process on two busy
    cores). A bar over rows is shown by the progress rule, long work being 2**24 model
    rows or more.
    """
    n, m = len(X), groups.n_groups
    flat_x = X.reshape(n, -1)
    flat_bg = background.reshape(len(background), -1)
    fnull = model(flat_bg).mean(axis=0)
    n_out = fnull.shape[-1]
    everything = np.broadcast_to(np.arange(n_out), (n, n_out))
    varying = varying_groups(flat_x, flat_bg, groups.labels, m)
    values = np.zeros((n, m, n_out))
    long = n * max_evals * len(flat_bg) >= 2**24
    with progress_bar(n, progress=progress, desc="Permutation SHAP", unit="row", long=long) as bar:
        patterns, which = np.unique(varying, axis=0, return_inverse=True)
        for k, pattern in enumerate(patterns):  # rows alike in which players vary (most often one)
            members = np.flatnonzero(which.reshape(-1) == k)
            players = np.flatnonzero(pattern)
            d = len(players)
            if d == 0:  # the row equals every background row: every value is 0
                bar.update(len(members))
                continue
            n_perm = max_evals // (2 * d + 1)
            walk = n_perm * (2 * d + 1)
            rows = max(1, MAX_DESIGN_ELEMENTS // (walk * max(m, 1)))
            for start in range(0, len(members), rows):
                idx = members[start : start + rows]
                orders = np.stack([_permutations(int(seeds[i]), players, n_perm) for i in idx])
                coalitions = _walk_coalitions(orders, m).reshape(len(idx), walk, m)
                with bar.part(len(idx)):
                    v = coalition_values(
                        model,
                        flat_x[idx],
                        flat_bg,
                        coalitions,
                        groups.labels,
                        everything[idx],
                        progress=progress,
                        dtype=model.dtype,
                    ).reshape(len(idx), n_perm, 2 * d + 1, n_out)
                # forward: v(first j) - v(first j - 1); back: v(all but first j - 1) - v(all but first j)
                gains = v[:, :, 1 : d + 1] - v[:, :, :d] + v[:, :, d : 2 * d] - v[:, :, d + 1 :]
                per_player = np.zeros((len(idx), n_perm, m, n_out))
                np.put_along_axis(per_player, orders[..., None], gains, axis=2)
                values[idx] = per_player.sum(axis=1) / (2 * n_perm)
    return values, np.broadcast_to(fnull, (n, n_out)).copy()


def run_tree(
    helper: tuple[Any, str], X: np.ndarray, n_outputs: int
) -> tuple[np.ndarray, np.ndarray]:
    """shap's ``TreeExplainer`` (interventional, on the background), mapped to the model's
    outputs in the helper's output space (:func:`tree_explainer`)."""
    explainer, space = helper
    flat = X.reshape(len(X), -1).astype(np.float64)
    values = explainer.shap_values(flat, check_additivity=False)
    if isinstance(values, list):  # older shap: one array per output
        values = np.stack(values, axis=-1)
    values, base = _as_outputs(values, _tiled(explainer.expected_value, len(X)), len(X))
    if values.shape[2] == 1 and n_outputs == 2:
        # a binary classifier explained as P(class 1) or its log-odds: class 0 is the
        # complement, or the negated log-odds
        values = np.concatenate([-values, values], axis=2)
        base = np.concatenate([(0.0 if space == "log_odds" else 1.0) - base, base], axis=1)
    if values.shape[2] != n_outputs:
        raise CapabilityError(
            f"shap's TreeExplainer gave {values.shape[2]} output(s) for a model with {n_outputs}."
        )
    return values, base


def tree_predictions(helper: tuple[Any, str], model: Any, X: np.ndarray) -> np.ndarray | None:
    """The tree ensemble's outputs at ``X`` by shap's compiled copy of its trees.

    What :func:`run_tree`'s values add up to, and what shap's own additivity check
    compares them with: the same trees as the model's, evaluated in one compiled pass
    (for a random forest some 20x faster than ``predict_proba`` on a few hundred rows).

    Returns
    -------
    ndarray of float64 of shape (n_samples, n_outputs), or None
        None when shap's outputs do not map onto the model's (then call the model).
    """
    explainer, space = helper
    estimator, _ = estimator_kind(model)
    out = np.asarray(explainer.model.predict(X.reshape(len(X), -1).astype(np.float64)))
    out = out.astype(np.float64).reshape(len(X), -1)
    classes = getattr(estimator, "classes_", None)
    if classes is not None and len(classes) == 0:  # a regressor's empty classes_ (CatBoost)
        classes = None
    n_outputs = len(classes) if classes is not None else int(getattr(estimator, "n_outputs_", 1))
    if out.shape[1] == 1 and n_outputs == 2 and classes is not None:
        out = np.concatenate([(0.0 if space == "log_odds" else 1.0) - out, out], axis=1)
    return out if out.shape[1] == n_outputs else None


def run_linear(explainer: Any, X: np.ndarray, n_outputs: int) -> tuple[np.ndarray, np.ndarray]:
    """shap's ``LinearExplainer`` (interventional), mapped to the model's outputs.

    A binary classifier's single margin ``m`` explains class 1; class 0 gets ``-m``.
    """
    flat = X.reshape(len(X), -1).astype(np.float64)
    values, base = _as_outputs(
        explainer.shap_values(flat), _tiled(explainer.expected_value, len(X)), len(X)
    )
    if values.shape[2] == 1 and n_outputs == 2:
        values = np.concatenate([-values, values], axis=2)
        base = np.concatenate([-base, base], axis=1)
    if values.shape[2] != n_outputs:
        raise CapabilityError(
            f"shap's LinearExplainer gave {values.shape[2]} output(s) for a model with {n_outputs}."
        )
    return values, base


def _tiled(expected: Any, n: int) -> np.ndarray:
    expected = np.asarray(expected, dtype=np.float64).reshape(1, -1)
    return np.repeat(expected, n, axis=0)


# -- vectorised Kernel SHAP -----------------------------------------------------------------------
def run_kernel(
    model: CountedModel,
    X: np.ndarray,
    background: np.ndarray,
    groups: FeatureGroups,
    *,
    fx: np.ndarray,
    outputs: np.ndarray,
    n_samples: int,
    rngs: list[np.random.Generator],
    progress: bool | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Kernel SHAP for the ``outputs`` of each row (see :mod:`xai_shap.kernel`).

    Rows go in chunks (bounded memory): each chunk's coalitions are drawn at once, its
    masked inputs evaluated in few large model calls, its least squares solved at once.

    Parameters
    ----------
    fx : ndarray of shape (n_samples, n_outputs)
        The model's outputs on ``X``.
    outputs : ndarray of int of shape (n_samples, n_kept)
        The outputs to explain per row.
    n_samples : int
        Coalitions per row.
    rngs : list of numpy.random.Generator, one per row
        Row ``i``'s coalitions are drawn from ``rngs[i]`` only.

    Returns
    -------
    values : ndarray of shape (n_samples, n_players, n_kept)
    base : ndarray of shape (n_samples, n_kept)
    """
    n = len(X)
    m = groups.n_groups
    flat_x = X.reshape(n, -1)
    flat_bg = background.reshape(len(background), -1)
    fnull = model(flat_bg).mean(axis=0)
    base = fnull[outputs]
    total = np.take_along_axis(fx, outputs, axis=1) - base
    varying = varying_groups(flat_x, flat_bg, groups.labels, m)
    values = np.zeros((n, m, outputs.shape[1]))
    rows = max(1, MAX_DESIGN_ELEMENTS // (4 * max(n_samples, 1) * max(m, 1)))
    n_chunks = -(-n // rows)
    long = n_chunks >= LONG_WORK_UNITS
    with progress_bar(n, progress=progress, desc="Kernel SHAP", unit="row", long=long) as bar:
        for start in range(0, n, rows):  # chunks of rows; each is vectorised throughout
            sl = slice(start, min(start + rows, n))
            coalitions, weights = shapley_kernel_design(
                m, n_samples, rngs[sl], n_rows=sl.stop - start
            )
            with bar.part(sl.stop - start):  # the chunk's model calls move the bar over rows
                ey = coalition_values(
                    model,
                    flat_x[sl],
                    flat_bg,
                    coalitions,
                    groups.labels,
                    outputs[sl],
                    progress=progress,
                    dtype=model.dtype,
                )
            values[sl] = solve_constrained_wls(
                coalitions, weights, ey - base[sl][:, None, :], total[sl], varying[sl]
            )
    return values, base
