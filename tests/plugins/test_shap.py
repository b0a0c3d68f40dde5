"""The shap plugin: exact Shapley values against the definition, convergence, shap's own explainers, errors."""

import math

import numpy as np
import pandas as pd
import pytest
import shap
from sklearn.datasets import make_classification
from sklearn.ensemble import (
    GradientBoostingClassifier,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.linear_model import LogisticRegression, Ridge

import xai_core as xai
from xai_core.testing import check_explainer
from xai_shap import ShapExplainer, shapley_kernel_design

RNG = np.random.default_rng(1234)


# -- oracle and models ------------------------------------------------------------------------------
def brute_force_shapley(f, x, background, labels=None):
    """Shapley values from their definition, v(S) = mean_b f(x_S, b_rest), for every output.

    Parameters
    ----------
    f : callable, (n_rows, n_features) -> (n_rows, n_outputs)
    x : ndarray of shape (n_features,)
    background : ndarray of shape (n_background, n_features)
    labels : ndarray of int of shape (n_features,), optional
        The player of each feature (default: each feature is a player).

    Returns
    -------
    ndarray of shape (n_players, n_outputs)
    """
    d = x.size
    labels = np.arange(d) if labels is None else np.asarray(labels)
    m = int(labels.max()) + 1
    codes = np.arange(2**m)
    coalitions = ((codes[:, None] >> np.arange(m)) & 1).astype(bool)
    inputs = np.where(coalitions[:, labels][:, None, :], x[None, None, :], background[None])
    v = np.asarray(f(inputs.reshape(-1, d)), dtype=np.float64).reshape(2**m, len(background), -1)
    v = v.mean(axis=1)
    sizes = coalitions.sum(axis=1)
    phi = np.zeros((m, v.shape[1]))
    for j in range(m):
        without = codes[~coalitions[:, j]]
        s = sizes[without]
        weight = np.array(
            [math.factorial(k) * math.factorial(m - k - 1) for k in s]
        ) / math.factorial(m)
        phi[j] = (weight[:, None] * (v[without | (1 << j)] - v[without])).sum(axis=0)
    return phi


def make_net(n_features, n_outputs=3, seed=0):
    """A float64 two-layer tanh network with a product term: interactions of every order."""
    rng = np.random.default_rng(seed)
    w1 = rng.normal(size=(n_features, 6))
    w2 = rng.normal(size=(6, n_outputs))

    def f(X):
        X = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
        return np.tanh(X @ w1) @ w2 + (X[:, :1] * X[:, -1:])

    return f


def f64():
    """A float64 CPU backend, so the oracle comparisons hold to 1e-8."""
    return xai.get_backend("cpu", dtype="float64")


def data(n_rows, n_features, n_background=6, seed=0):
    """Rows to explain and background rows."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n_rows, n_features)), rng.normal(size=(n_background, n_features))


class Counting:
    """A model function that counts its calls and rows."""

    def __init__(self, f):
        self.f = f
        self.calls = 0
        self.rows = 0

    def __call__(self, X):
        self.calls += 1
        self.rows += len(X)
        return self.f(X)


# -- registration and contract ------------------------------------------------------------------------
def test_registered_through_entry_point():
    """method='shap' resolves to ShapExplainer, registered by the plugin's entry point."""
    assert xai.get_registry().explainer("shap") is ShapExplainer


@pytest.mark.parametrize(
    "algorithm", ["exact", "permutation", "kernel"], ids=["exact", "perm", "kernel"]
)
def test_contract(algorithm):
    """check_explainer passes for each model-agnostic algorithm."""
    check_explainer(
        ShapExplainer, options={"algorithm": algorithm, "background": RNG.normal(size=(5, 4))}
    )


# -- exactness against the definition ---------------------------------------------------------------------
@pytest.mark.parametrize("n_features", [1, 3, 6, 9], ids=["m1", "m3", "m6", "m9"])
def test_exact_equals_brute_force(n_features):
    """algorithm='exact' equals Shapley values from the definition to 1e-8 in float64, per-row targets."""
    f = make_net(n_features)
    X, bg = data(4, n_features)
    target = np.array([0, 1, 2, 1])
    e = xai.explain(
        f, X, method="shap", backend=f64(), target=target, algorithm="exact", background=bg
    )
    expected = np.array([brute_force_shapley(f, x, bg)[:, t] for x, t in zip(X, target)])
    np.testing.assert_allclose(e.values, expected, rtol=0, atol=1e-8)
    np.testing.assert_allclose(e.base_values, f(bg).mean(axis=0)[target], atol=1e-12)
    assert e.meta["algorithm"] == "exact"


@pytest.mark.parametrize("n_features", [2, 5, 8], ids=["m2", "m5", "m8"])
def test_exact_equals_shaps_exact_explainer(n_features):
    """algorithm='exact' (computed here, nothing compiled) equals shap's own ``Exact``
    explainer with an ``Independent`` masker on the same rows and background, every output."""
    import shap

    f = make_net(n_features)
    X, bg = data(3, n_features, n_background=7, seed=n_features)
    oracle = shap.explainers.Exact(f, shap.maskers.Independent(bg, max_samples=len(bg)))
    want = oracle(X, max_evals=2**n_features, silent=True)
    for t in range(3):
        e = xai.explain(
            f, X, method="shap", backend=f64(), target=t, algorithm="exact", background=bg
        )
        np.testing.assert_allclose(e.values, want.values[:, :, t], rtol=0, atol=1e-10)
        np.testing.assert_allclose(e.base_values, want.base_values[:, t], rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("n_features", "max_evals", "same"),
    [(4, 90, ()), (7, 200, (2,)), (12, 500, (0, 5))],
    ids=["m4", "m7-one-unvarying", "m12-two-unvarying"],
)
def test_permutation_equals_shaps_permutation_explainer(n_features, max_evals, same):
    """algorithm='permutation' (computed here) equals shap's own ``Permutation`` explainer
    seeded per row as the plugin seeds it, every output; features equal to every background
    row are no player of the walk, as in shap, and get exactly 0."""
    import shap

    from xai_core.attribution.seeds import row_seeds

    f = make_net(n_features)
    X, bg = data(4, n_features, n_background=5, seed=n_features)
    for j in same:
        bg[:, j] = X[0, j]
        X[:, j] = X[0, j]
    e = [
        xai.explain(
            f, X, method="shap", backend=f64(), target=t, algorithm="permutation",
            background=bg, max_evals=max_evals, seed=3,
        )
        for t in range(3)
    ]  # fmt: skip
    oracle = shap.explainers.Permutation(f, shap.maskers.Independent(bg, max_samples=len(bg)))
    state = np.random.get_state()  # noqa: NPY002 - shap draws from the global generator
    try:
        for i, seed in enumerate(row_seeds(3, np.arange(len(X)))):
            np.random.seed(int(seed))  # noqa: NPY002
            want = oracle(X[i : i + 1], max_evals=max_evals, silent=True)
            for t in range(3):
                np.testing.assert_allclose(e[t].values[i], want.values[0, :, t], atol=1e-10)
                np.testing.assert_allclose(e[t].base_values[i], want.base_values[0, t], atol=1e-12)
    finally:
        np.random.set_state(state)  # noqa: NPY002
    for j in same:
        assert np.all(e[0].values[:, j] == 0.0)


def test_kernel_with_full_budget_is_exact():
    """algorithm='kernel' with 2**M - 2 coalitions enumerates all of them and equals the definition."""
    f = make_net(7)
    X, bg = data(5, 7)
    e = xai.explain(
        f,
        X,
        method="shap",
        backend=f64(),
        target=2,
        algorithm="kernel",
        background=bg,
        max_evals=2**7 - 2,
    )
    expected = np.array([brute_force_shapley(f, x, bg)[:, 2] for x in X])
    np.testing.assert_allclose(e.values, expected, rtol=0, atol=1e-8)


def test_kernel_design_matches_shap_kernel_explainer():
    """The coalition design follows shap's KernelExplainer: same enumerated coalitions and weights, same totals."""
    m, budget = 10, 300
    Z, w = shapley_kernel_design(m, budget, np.random.default_rng(0))
    Z, w = Z[0], w[0]
    reference = shap.KernelExplainer(lambda A: A.sum(axis=1), np.zeros((1, m)))
    reference.shap_values(np.ones((1, m)), nsamples=budget, l1_reg=False, silent=True)
    ref_z = reference.maskMatrix.astype(bool)
    ref_w = reference.kernelWeights
    assert Z.shape == ref_z.shape == (budget, m) and len(np.unique(Z, axis=0)) == budget
    np.testing.assert_allclose(w.sum(), ref_w.sum())
    for size in range(
        1, m
    ):  # enumerated sizes: identical coalitions and weights; sampled ones: same total
        mine, theirs = Z.sum(axis=1) == size, ref_z.sum(axis=1) == size
        if size in (1, 2, m - 2, m - 1):
            assert mine.sum() == theirs.sum() == math.comb(m, size)
            np.testing.assert_allclose(np.sort(w[mine]), np.sort(ref_w[theirs]))
    full = np.isin(Z.sum(axis=1), (1, 2, m - 2, m - 1))
    np.testing.assert_allclose(
        w[~full].sum(), ref_w[~np.isin(ref_z.sum(axis=1), (1, 2, m - 2, m - 1))].sum()
    )


def test_kernel_subsets_are_uniform_of_their_size():
    """Each coalition of a drawn size is equally likely (chi-square against the uniform law)."""
    from scipy.stats import chisquare

    from xai_shap.kernel import _uniform_subsets

    sizes = np.tile([2, 3], (4, 3000))  # 4 rows x 6000 draws, sizes 2 and 3 of 6 players
    drawn = _uniform_subsets(6, sizes, np.random.default_rng(0))
    np.testing.assert_array_equal(drawn.sum(axis=2), sizes)
    codes = (drawn * (1 << np.arange(6))).sum(axis=2)
    for size in (2, 3):
        counts = np.unique(codes[sizes == size], return_counts=True)[1]
        assert len(counts) == math.comb(6, size)
        assert chisquare(counts).pvalue > 1e-3


@pytest.mark.parametrize("n_players", [12, 100], ids=["m12", "m100"])
def test_kernel_design_is_drawn_per_row(n_players):
    """Each row gets its own distinct coalitions (shared enumerated sizes), weights summing to 1."""
    Z, w = shapley_kernel_design(n_players, 300, np.random.default_rng(0), n_rows=3)
    assert Z.shape == (3, 300, n_players) and w.shape == (3, 300)
    for row in range(3):
        assert len(np.unique(Z[row], axis=0)) == 300
        assert 1 <= Z[row].sum(axis=1).min() and Z[row].sum(axis=1).max() <= n_players - 1
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    assert not np.array_equal(Z[0], Z[1])


@pytest.mark.parametrize(
    ("algorithm", "budgets"),
    [("kernel", [24, 96, 600]), ("permutation", [21, 210, 2100])],
    ids=["kernel", "perm"],
)
def test_sampling_algorithms_converge(algorithm, budgets):
    """kernel and permutation approach the brute-force values as the budget grows."""
    f = make_net(10, n_outputs=1)
    X, bg = data(3, 10, n_background=4)
    exact = np.array([brute_force_shapley(f, x, bg)[:, 0] for x in X])
    errors = []
    for budget in budgets:
        err = [
            np.abs(
                xai.explain(
                    f,
                    X,
                    method="shap",
                    backend=f64(),
                    algorithm=algorithm,
                    background=bg,
                    max_evals=budget,
                    seed=seed,
                ).values
                - exact
            ).mean()
            for seed in range(3)
        ]
        errors.append(np.mean(err))
    assert errors[0] > errors[1] > errors[2], errors
    assert errors[2] < 0.25 * errors[0], errors


# -- additivity, shap's own explainers ------------------------------------------------------------------------
def _classification(n_classes=2, n_features=5):
    X, y = make_classification(
        240, n_features, n_informative=3, n_redundant=0, n_classes=n_classes, random_state=0
    )
    return X.astype(np.float32).astype(np.float64), y


@pytest.mark.parametrize(
    ("make_model", "algorithm"),
    [
        (lambda X, y: make_net(X.shape[1]), "exact"),
        (lambda X, y: RandomForestClassifier(12, max_depth=4, random_state=0).fit(X, y), "tree"),
        (
            lambda X, y: GradientBoostingClassifier(n_estimators=15, random_state=0).fit(X, y),
            "tree",
        ),
        (lambda X, y: Ridge().fit(X, y.astype(float)), "linear"),
        (lambda X, y: make_net(X.shape[1]), "kernel"),
        (lambda X, y: make_net(X.shape[1]), "permutation"),
    ],
    ids=["exact-net", "tree-rf", "tree-gbc", "linear-ridge", "kernel-net", "perm-net"],
)
def test_additivity(make_model, algorithm):
    """base + sum(values) = f(x)[target] to 1e-6 (relative), and meta reports the error per row."""
    X, y = _classification()
    model = make_model(X, y)
    e = xai.explain(
        model, X[:6], method="shap", algorithm=algorithm, background=X[100:130], backend=f64()
    )
    runner = xai.ModelRunner(model, backend=f64())
    fx = runner.predict(X[:6])[np.arange(6), e.target]
    if e.meta["output_space"] == "log_odds":  # a boosted classifier: the target's log-odds
        fx = np.log(fx) - np.log1p(-fx)
    reached = e.base_values + e.values.sum(axis=1)
    np.testing.assert_allclose(reached, fx, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(e.meta["additivity_error"], np.abs(reached - fx), atol=1e-12)
    assert e.meta["algorithm"] == algorithm and e.meta["additivity_error"].shape == (6,)


@pytest.mark.parametrize(
    "make_model",
    [
        lambda X, y: RandomForestClassifier(12, max_depth=4, random_state=0).fit(X, y),
        lambda X, y: GradientBoostingClassifier(n_estimators=15, random_state=0).fit(X, y),
        lambda X, y: RandomForestRegressor(10, max_depth=4, random_state=0).fit(X, y.astype(float)),
    ],
    ids=["rf-classifier", "gbc-binary", "rf-regressor"],
)
def test_tree_equals_shap_tree_explainer(make_model):
    """algorithm='tree' (and auto) gives the values of calling shap's TreeExplainer directly."""
    X, y = _classification()
    est = make_model(X, y)
    bg = X[100:120]
    e = xai.explain(est, X[:8], method="shap", background=bg, all_classes=True)
    assert e.meta["algorithm"] == "tree"
    proba = hasattr(est, "predict_proba") and e.meta["output_space"] != "log_odds"
    direct = shap.TreeExplainer(
        est,
        data=bg,
        feature_perturbation="interventional",
        model_output="probability" if proba else "raw",
    )
    values = np.asarray(direct.shap_values(X[:8], check_additivity=False))
    if values.ndim == 2:
        values = values[:, :, None]
    if values.shape[2] == 1 and hasattr(est, "classes_"):  # a binary GBC: class 1's log-odds
        values = np.concatenate([-values, values], axis=2)
    np.testing.assert_allclose(np.moveaxis(e.meta["all_values"], 1, 2), values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(e.values, values[np.arange(8), :, e.target], rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("make_model", "n_classes"),
    [
        (lambda X, y: RandomForestClassifier(8, max_depth=4, random_state=0).fit(X, y), 3),
        (lambda X, y: RandomForestRegressor(6, max_depth=4, random_state=0).fit(X, y * 1.5), 2),
    ],
    ids=["rf-3-classes", "rf-regressor"],
)
def test_tree_additivity_is_against_the_models_own_outputs(make_model, n_classes):
    """The tree case measures additivity against shap's checked copy of the trees: scikit-learn's outputs all the same."""
    X, y = _classification(n_classes=n_classes)
    model = make_model(X, y)
    e = xai.explain(model, X[:7], method="shap", algorithm="tree", background=X[100:120])
    assert e.meta["n_evals"] == 0
    raw = model.predict_proba(X[:7]) if n_classes == 3 else model.predict(X[:7])[:, None]
    fx = raw[np.arange(7), e.target]
    reached = e.base_values + e.values.sum(axis=1)
    np.testing.assert_allclose(e.meta["additivity_error"], np.abs(reached - fx), atol=1e-12)


def test_linear_equals_closed_form():
    """algorithm='linear': a regressor's values are coef * (x - mean(background)); a classifier's, its margin's."""
    X, y = _classification()
    bg = X[100:140]
    ridge = Ridge().fit(X, y.astype(float))
    e = xai.explain(ridge, X[:5], method="shap", background=bg)
    assert e.meta["algorithm"] == "linear"
    np.testing.assert_allclose(e.values, ridge.coef_ * (X[:5] - bg.mean(axis=0)), atol=1e-10)
    logit = LogisticRegression().fit(X, y)
    e = xai.explain(
        logit, X[:5], method="shap", algorithm="linear", background=bg, target=[0, 1, 0, 1, 1]
    )
    margin = logit.coef_[0] * (X[:5] - bg.mean(axis=0))
    sign = np.where(e.target == 1, 1.0, -1.0)[:, None]
    np.testing.assert_allclose(e.values, sign * margin, atol=1e-10)
    assert e.meta["output_space"] == "decision_function"
    assert e.meta["additivity_error"].max() < 1e-8


def test_auto_picks_by_model_and_size():
    """auto: tree for forests, linear for linear regressors, exact up to 10 features, permutation above."""
    X, y = _classification()
    forest = RandomForestClassifier(5, max_depth=3, random_state=0).fit(X, y)
    assert xai.explain(forest, X[:2], method="shap", background=X[:10]).meta["algorithm"] == "tree"
    ridge = Ridge().fit(X, y.astype(float))
    assert xai.explain(ridge, X[:2], method="shap", background=X[:10]).meta["algorithm"] == "linear"
    small, big = make_net(5), make_net(11)
    rows = RNG.normal(size=(2, 11))
    assert (
        xai.explain(small, rows[:, :5], method="shap", background=rows[:, :5]).meta["algorithm"]
        == "exact"
    )
    e = xai.explain(big, rows, method="shap", background=rows, max_evals=23 * 2)
    assert e.meta["algorithm"] == "permutation"


# -- determinism, batching, meta ------------------------------------------------------------------------------
@pytest.mark.parametrize("algorithm", ["kernel", "permutation"], ids=["kernel", "perm"])
def test_seeded_runs_are_identical(algorithm):
    """The same seed gives identical values; another seed gives other values."""
    f = make_net(8)
    X, bg = data(3, 8)

    def run(seed):
        options = dict(algorithm=algorithm, background=bg, max_evals=60, seed=seed)
        return xai.explain(f, X, method="shap", backend=f64(), **options).values

    np.testing.assert_array_equal(run(7), run(7))
    assert not np.array_equal(run(7), run(8))


def test_kernel_evaluates_in_a_few_large_batches():
    """Kernel SHAP calls the model once for X, once for the background and once per chunk; n_evals counts rows."""
    counting = Counting(make_net(5))
    X, bg = data(20, 5, n_background=7)
    e = xai.explain(
        counting,
        X,
        method="shap",
        algorithm="kernel",
        background=bg,
        target=0,
        backend=f64(),
        batch_size=100_000,
    )
    k = 2**5 - 2
    assert counting.calls <= 1 + 1 + 1 + 1  # target check, f(X), f(background), one chunk
    assert e.meta["n_evals"] == len(X) + len(bg) + len(X) * k * len(bg)
    assert e.meta["max_evals"] == k


def test_all_classes():
    """all_classes=True gives every output's values, each adding up to that output."""
    f = make_net(4, n_outputs=3)
    X, bg = data(5, 4)
    for algorithm in ("exact", "kernel"):
        e = xai.explain(
            f, X, method="shap", algorithm=algorithm, background=bg, all_classes=True, backend=f64()
        )
        all_v, all_b = e.meta["all_values"], e.meta["all_base_values"]
        assert all_v.shape == (5, 3, 4) and all_b.shape == (5, 3)
        np.testing.assert_allclose(all_v[np.arange(5), e.target], e.values, atol=1e-12)
        np.testing.assert_allclose(all_b + all_v.sum(axis=2), f(X), atol=1e-10)


def test_default_background_warns():
    """Without a background the plugin summarises X and says so in an XaiWarning."""
    X = RNG.normal(size=(30, 4))
    with pytest.warns(
        xai.XaiWarning, match="k-means summary of the 30 explained rows into 10 centres"
    ):
        e = xai.explain(make_net(4), X, method="shap", algorithm="kernel")
    assert e.meta["n_background"] == 10


def test_background_summary_is_kmeans():
    """n_background summarises a given background into that many seeded k-means centres."""
    X, bg = data(3, 4, n_background=200)
    e = xai.explain(
        make_net(4), X, method="shap", algorithm="kernel", background=bg, n_background=8
    )
    assert e.meta["n_background"] == 8 and "k-means" in e.meta["background"]


# -- images and groups -----------------------------------------------------------------------------------------
def test_image_patches_keep_shape_and_sum():
    """Flat 784-pixel rows with image_shape=(28, 28): 49 patches, values keep (n, 784), each patch sums to its value."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=(784, 4)) / 20
    f = lambda X: np.tanh(np.asarray(X, dtype=np.float64).reshape(len(X), -1) @ w)  # noqa: E731
    X, bg = rng.random((3, 784)), rng.random((4, 784))
    e = xai.explain(
        f, X, method="shap", algorithm="kernel", background=bg, image_shape=(28, 28), max_evals=400
    )
    assert e.values.shape == (3, 784) and e.meta["group_values"].shape == (3, 49)
    patches = e.values.reshape(3, 7, 4, 7, 4).sum(axis=(2, 4)).reshape(3, 49)
    np.testing.assert_allclose(patches, e.meta["group_values"], atol=1e-12)
    # each pixel holds its patch's value / 16
    corner = e.values.reshape(3, 28, 28)[:, :4, :4]
    np.testing.assert_allclose(corner, np.broadcast_to(patches[:, :1, None] / 16, (3, 4, 4)))
    assert e.meta["additivity_error"].max() < 1e-6


@pytest.mark.parametrize("shape", [(8, 8), (1, 8, 8), (8, 8, 2)], ids=["hw", "chw", "hwc"])
def test_grouped_exact_equals_brute_force_over_groups(shape):
    """Images with 4x4 patches (all channels): exact equals the definition over the patches."""
    rng = np.random.default_rng(3)
    d = int(np.prod(shape))
    w = rng.normal(size=(d, 2))
    f = lambda X: np.tanh(np.asarray(X, dtype=np.float64).reshape(len(X), -1) @ w) ** 2  # noqa: E731
    model = xai.as_model(f, input_shape=shape)
    X, bg = rng.random((2, *shape)), rng.random((3, *shape))
    e = xai.explain(
        model, X, method="shap", algorithm="exact", background=bg, target=1, backend=f64()
    )
    assert e.values.shape == (2, *shape) and e.meta["group_values"].shape == (2, 4)
    h, w_ = np.indices((8, 8))
    patch = (h // 4) * 2 + w_ // 4  # the 2 x 2 grid of 4 x 4 patches
    spatial = {(8, 8): patch, (1, 8, 8): patch[None], (8, 8, 2): np.stack([patch] * 2, axis=-1)}
    np.testing.assert_array_equal(e.meta["groups"], spatial[shape])
    flat = lambda a: a.reshape(len(a), -1)  # noqa: E731
    labels = spatial[shape].reshape(-1)
    expected = np.array([brute_force_shapley(f, x, flat(bg), labels)[:, 1] for x in flat(X)])
    np.testing.assert_allclose(e.meta["group_values"], expected, rtol=0, atol=1e-8)


def test_custom_groups_and_non_varying_players():
    """groups= makes players of any features; a group equal to every background row gets exactly 0."""
    f = make_net(6, n_outputs=1)
    X, bg = data(2, 6)
    bg[:, 4:] = X[0, 4:]  # row 0's last group equals the whole background
    groups = np.array([0, 0, 1, 1, 2, 2])
    e = xai.explain(
        f, X, method="shap", algorithm="kernel", background=bg, groups=groups, backend=f64()
    )
    expected = np.array([brute_force_shapley(f, x, bg, groups)[:, 0] for x in X])
    np.testing.assert_allclose(e.meta["group_values"], expected, atol=1e-8)
    assert e.meta["group_values"][0, 2] == 0.0


# -- native networks on the hardware backends --------------------------------------------------------------------
@pytest.mark.parametrize(
    "backend", [b for b in ("cpu", "gpu", "tpu", "edgetpu") if b in xai.list_backends()]
)
def test_native_network_on_backend(backend):
    """SHAP of a native network is the exact Shapley value of that backend's own outputs (its numerics)."""
    net = xai.nn.mlp(5, hidden=(8,), n_outputs=3, seed=0)
    X, bg = data(4, 5)
    if xai.get_backend(backend).requires_quantized:
        net = xai.quantize(net, np.concatenate([X, bg]).astype(np.float32))
    e = xai.explain(
        net, X, method="shap", backend=backend, algorithm="kernel", background=bg, max_evals=30
    )
    runner = xai.ModelRunner(net, backend=backend)
    expected = np.array(
        [brute_force_shapley(runner.predict, x, bg)[:, t] for x, t in zip(X, e.target)]
    )
    np.testing.assert_allclose(e.values, expected, atol=1e-6)
    assert e.backend == backend and e.meta["additivity_error"].max() < 1e-6
    if backend == "tpu":  # bf16 multiplies reach the attributions
        on_cpu = xai.explain(net, X, method="shap", algorithm="kernel", background=bg, max_evals=30)
        assert not np.array_equal(e.values, on_cpu.values)
        np.testing.assert_allclose(e.values, on_cpu.values, atol=0.05)


# -- bad input, before any work -------------------------------------------------------------------------------------
BAD_OPTIONS = {
    "bg-columns": (
        dict(background=np.zeros((4, 3))),
        xai.ShapeError,
        r"background must have shape \(n_rows, 5\)",
    ),
    "bg-nan": (dict(background=np.full((4, 5), np.nan)), xai.ValidationError, "NaN"),
    "unknown-algorithm": (
        dict(algorithm="fast"),
        xai.UnknownNameError,
        "Available: auto, exact, kernel, linear",
    ),
    "tree-on-function": (dict(algorithm="tree"), xai.CapabilityError, "scikit-learn tree model"),
    "linear-on-function": (dict(algorithm="linear"), xai.CapabilityError, "linear model"),
    "patch-on-tabular": (dict(patch_size=2), xai.ValidationError, "patch_size applies to images"),
    "perm-budget": (
        dict(algorithm="permutation", max_evals=5),
        xai.ValidationError,
        r"max_evals >= 2\*M \+ 1 = 11",
    ),
    "kernel-budget": (dict(algorithm="kernel", max_evals=3), xai.ValidationError, "M \\+ 1 = 6"),
    "seed": (dict(seed=-1), xai.ValidationError, "seed"),
    "max-evals": (dict(max_evals=0), xai.ValidationError, "max_evals"),
}


@pytest.mark.parametrize("case", list(BAD_OPTIONS), ids=list(BAD_OPTIONS))
def test_bad_options_fail_before_any_work(case):
    """Each bad option raises a clear error and the model is never evaluated."""
    options, error, match = BAD_OPTIONS[case]
    options = {"background": np.zeros((4, 5)), **options}
    counting = Counting(make_net(5, n_outputs=2))
    model = xai.BlackBoxModel(counting, input_shape=(5,), output_names=["a", "b"])
    with pytest.raises(error, match=match):
        xai.explain(model, RNG.normal(size=(3, 5)), method="shap", target=0, **options)
    assert counting.calls == 0


def test_too_many_features_for_exact():
    """exact on 30 features names the count and suggests permutation or kernel, before any work."""
    counting = Counting(make_net(30, n_outputs=1))
    model = xai.BlackBoxModel(counting, input_shape=(30,), output_names=["y"])
    with pytest.raises(
        xai.ValidationError, match=r"30 features .*2\*\*30.*algorithm='permutation' or 'kernel'"
    ):
        xai.explain(
            model,
            np.zeros((2, 30)),
            method="shap",
            target=0,
            algorithm="exact",
            background=np.ones((3, 30)),
        )
    assert counting.calls == 0


def test_tree_on_non_tree_estimator_and_target_out_of_range():
    """tree on a logistic regression is a CapabilityError; a target past the outputs is a ValidationError."""
    X, y = _classification()
    logit = LogisticRegression().fit(X, y)
    with pytest.raises(xai.CapabilityError, match="got LogisticRegression"):
        xai.explain(logit, X[:2], method="shap", algorithm="tree", background=X[:5])
    with pytest.raises(xai.ValidationError, match=r"target must be in \[0, 2\)"):
        xai.explain(logit, X[:2], method="shap", target=2, background=X[:5])


def test_dataframe_background_with_other_columns():
    """A DataFrame background whose columns differ from the model's is rejected, naming them."""
    X, y = _classification(n_features=3)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    forest = RandomForestClassifier(3, random_state=0).fit(frame, y)
    with pytest.raises(xai.ValidationError, match=r"missing \['c'\], unexpected \['d'\]"):
        xai.explain(
            forest, frame[:2], method="shap", background=frame.rename(columns={"c": "d"})[:5]
        )


@pytest.mark.parametrize("loader", ["load_mnist", "load_fashion_mnist"], ids=["mnist", "fashion"])
def test_real_images_on_a_native_network(loader):
    """Real 28x28 images through a native network: 49 patches, additivity, unvarying patches get exactly 0."""
    import xai_datasets

    train = getattr(xai_datasets, loader)("train")
    test = getattr(xai_datasets, loader)("test")
    X, bg = test.X[:4], train.X[:5]
    net = xai.nn.mlp(784, hidden=(32,), n_outputs=10, activation="relu", seed=0)
    options = dict(algorithm="kernel", background=bg, max_evals=300, image_shape=train.image_shape)
    e = xai.explain(net, X, method="shap", **options)
    assert e.values.shape == (4, 784) and e.meta["group_values"].shape == (4, 49)
    fx = net.predict(X)[np.arange(4), e.target]
    np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), fx, atol=1e-5)

    def patches(a):
        return a.reshape(len(a), 7, 4, 7, 4).transpose(0, 1, 3, 2, 4).reshape(len(a), 49, 16)

    same = (patches(X)[:, None] == patches(bg)[None]).all(axis=(1, 3))  # (rows, patches)
    assert same.any()  # blank borders: equal in every row and background image
    assert (e.meta["group_values"][same] == 0).all()


def test_report_draws_heatmaps_and_bars():
    """A report of image SHAP values draws one heatmap per row (image_shape in meta) and bar charts."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=(784, 3)) / 20
    f = lambda X: np.tanh(np.asarray(X).reshape(len(X), -1) @ w)  # noqa: E731
    X, bg = rng.random((2, 784)), rng.random((3, 784))
    options = dict(algorithm="kernel", background=bg, image_shape=(28, 28), max_evals=200)
    e = xai.explain(f, X, method="shap", **options)
    assert e.meta["image_shape"] == (28, 28)
    html = xai.Report("shap").add(e).to_html()
    assert html.count("data:image/png") >= 2 and "data:image/svg+xml" in html


def test_a_pasted_kernel_explainer_call_gives_shaps_values():
    """nsamples= (shap's spelling) is max_evals: with the full budget both give shap's exact values."""
    rng = np.random.default_rng(3)
    W = rng.normal(size=(5, 2))

    def f(A):
        return np.tanh(np.asarray(A, dtype=np.float64) @ W)

    X, bg = rng.normal(size=(4, 5)), rng.normal(size=(6, 5))
    e = xai.explain(
        xai.as_model(f),
        X,
        method="shap",
        algorithm="kernel",
        background=bg,
        nsamples=2**5 - 2,
        target=1,
        backend=xai.get_backend("cpu", dtype="float64"),
    )
    reference = shap.KernelExplainer(lambda A: f(A)[:, 1], bg)
    expected = reference.shap_values(X, nsamples=2**5 - 2, l1_reg=False, silent=True)
    np.testing.assert_allclose(e.values, expected, rtol=0, atol=1e-8)
    assert e.meta["max_evals"] == 2**5 - 2


@pytest.mark.parametrize("order", ["ct", "tc"])
def test_series_windows_are_the_players_and_exact_equals_brute_force(order):
    """A network reading series plays ten windows of steps, every channel of a step in its
    window; exact SHAP equals the definition over those windows."""
    nn = xai.nn
    conv = nn.Conv1D(3, 3, padding="same", layout="NCW" if order == "ct" else "NWC")
    layers = [conv, nn.Tanh(), *([nn.Transpose((1, 0))] if order == "ct" else [])]
    shape = (2, 23) if order == "ct" else (23, 2)
    layers += [nn.GRU(4, output="hidden"), nn.Flatten(), nn.Dense(2)]
    net = nn.Sequential(layers, input_shape=shape, seed=1, dtype="float64")
    rng = np.random.default_rng(5)
    X, bg = rng.normal(size=(2, *shape)), rng.normal(size=(3, *shape))
    e = xai.explain(net, X, method="shap", background=bg, target=1, backend=f64())
    assert e.meta["algorithm"] == "exact" and "image_shape" not in e.meta
    steps = (np.arange(23) * 10) // 23  # windows of 2 or 3 steps
    window = np.broadcast_to(steps[None] if order == "ct" else steps[:, None], shape)
    np.testing.assert_array_equal(e.meta["groups"], window)
    f = lambda rows: net.forward(rows.reshape(-1, *shape), f64())  # noqa: E731
    flat = lambda a: a.reshape(len(a), -1)  # noqa: E731
    expected = [brute_force_shapley(f, x, flat(bg), window.reshape(-1))[:, 1] for x in flat(X)]
    np.testing.assert_allclose(e.meta["group_values"], np.array(expected), rtol=0, atol=1e-10)
