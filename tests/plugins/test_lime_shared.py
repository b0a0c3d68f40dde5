"""LIME's tabular neighbourhood shared by every row: lime's distribution per row, seeded, chunk-invariant."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st
from lime.lime_tabular import LimeTabularExplainer
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import pairwise_distances
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import xai_core as xai
from xai_core.attribution.seeds import shared_rng
from xai_lime.shared import draw_shared, shared_views
from xai_lime.tabular import TabularSampler


@pytest.fixture(scope="module")
def cancer():
    """Breast-cancer rows (float32 values), two categorical columns, and a fitted logistic regression."""
    X, y = load_breast_cancer(return_X_y=True)
    X = X.astype(np.float32).astype(np.float64)
    X[:, 0] = np.round(X[:, 0] / 5)  # a categorical column with ~7 values
    X[:, 5] = (X[:, 5] > 0.1).astype(float)  # a binary one
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X, y)
    return X, model


SETTINGS = [
    {},
    {"discretizer": "decile"},
    {"categorical_features": [0, 5]},
    {"discretize_continuous": False},
    {"discretize_continuous": False, "categorical_features": [0, 5]},
]
IDS = ["quartile", "decile", "quartile+categorical", "continuous", "continuous+categorical"]


@pytest.mark.parametrize("kw", SETTINGS, ids=IDS)
def test_each_row_sees_limes_neighbourhood(cancer, kw):
    """Per feature, the shared draws and lime's __data_inverse pass a two-sample KS test, and so do
    each row's surrogate inputs and distances; sample 0 is the row itself."""
    X, _ = cancer
    sampler = TabularSampler(X, **kw)
    lime_ex = LimeTabularExplainer(X, random_state=0, **kw)
    rows, n = X[[3, 40]], 20000
    alpha = 0.01 / (3 * len(rows) * X.shape[1])  # Bonferroni over every comparison made here
    indices, standard, inverse = draw_shared(sampler, n - 1, shared_rng(11))
    interp, dist = shared_views(sampler, rows, indices, standard)
    assert interp.shape == (2, n, X.shape[1]) and dist.shape == (2, n)
    p_inverse = []
    for r, row in enumerate(rows):
        data, theirs = lime_ex._LimeTabularExplainer__data_inverse(row, n)
        scaled = (data - lime_ex.scaler.mean_) / lime_ex.scaler.scale_
        p_inverse += [st.ks_2samp(theirs[1:, f], inverse[:, f]).pvalue for f in range(X.shape[1])]
        p_scaled = [st.ks_2samp(scaled[1:, f], interp[r, 1:, f]).pvalue for f in range(X.shape[1])]
        assert min(p_scaled) > alpha
        np.testing.assert_allclose(interp[r, 0], scaled[0])
        lime_dist = pairwise_distances(scaled, scaled[:1]).ravel()
        assert abs(np.median(dist[r]) - np.median(lime_dist)) < 0.05 * np.median(lime_dist)
    assert min(p_inverse) > alpha


@pytest.mark.parametrize("kw", SETTINGS, ids=IDS)
def test_a_rows_view_is_limes_representation_of_the_shared_samples(cancer, kw):
    """Drawn features: 1 where the sample falls in the row's bin (lime's discretizer) or category;
    continuous ones: the standardised value; distances: euclidean to the row's sample 0."""
    X, _ = cancer
    sampler = TabularSampler(X, **kw)
    rows = X[[7, 8, 300]]
    indices, standard, inverse = draw_shared(sampler, 500, shared_rng(2))
    interp, dist = shared_views(sampler, rows, indices, standard)
    disc = sampler.discretizer
    as_bins = disc.discretize(inverse) if disc is not None else inverse
    row_bins = disc.discretize(rows) if disc is not None else rows
    for r in range(len(rows)):
        for f in sampler.drawn:
            np.testing.assert_array_equal(interp[r, 1:, f], as_bins[:, f] == row_bins[r, f])
        for f in sampler.continuous:
            expected = (inverse[:, f] - sampler.mean[f]) / sampler.scale[f]
            np.testing.assert_allclose(interp[r, 1:, f], expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(
            dist[r], np.sqrt(((interp[r] - interp[r, 0]) ** 2).sum(axis=1)), rtol=1e-6
        )


def test_weights_agree_with_lime_as_lime_agrees_with_itself(cancer):
    """Shared and per-row neighbourhoods both agree with lime as closely as lime agrees with itself."""
    X, model = cancer
    rows = X[:8]

    def lime_run(seed):
        ex = LimeTabularExplainer(X, random_state=seed)
        weights = np.zeros(rows.shape)
        for i, r in enumerate(rows):
            for j, v in ex.explain_instance(r, model.predict_proba, labels=(1,)).local_exp[1]:
                weights[i, j] = v
        return weights

    a, b = lime_run(1), lime_run(2)
    lime_vs_lime = np.mean([np.corrcoef(b[i], a[i])[0, 1] for i in range(len(rows))])
    for neighbourhood in ("shared", "per_row"):
        e = xai.explain(
            model, rows, method="lime", background=X, target=1, progress=False,
            neighbourhood=neighbourhood,
        )  # fmt: skip
        assert e.meta["neighbourhood"] == neighbourhood
        ours = np.mean([np.corrcoef(e.values[i], a[i])[0, 1] for i in range(len(rows))])
        assert ours > lime_vs_lime - 0.05


@pytest.mark.parametrize("neighbourhood", ["shared", "per_row"])
def test_seeded_and_invariant_to_chunks_and_executors(cancer, neighbourhood):
    """The same seed gives bit-identical values in one call, in chunks of any size and on threads."""
    from concurrent.futures import ThreadPoolExecutor

    X, model = cancer
    rows = X[10:17]
    opts = dict(
        method="lime", background=X, target=1, n_samples=600, progress=False,
        neighbourhood=neighbourhood,
    )  # fmt: skip
    whole = xai.explain(model, rows, **opts)
    again = xai.explain(model, rows, **opts)
    np.testing.assert_array_equal(whole.values, again.values)
    for chunk_size in (1, 3):
        part = xai.explain(model, rows, chunk_size=chunk_size, **opts)
        np.testing.assert_array_equal(part.values, whole.values)
    with ThreadPoolExecutor(2) as pool:
        threaded = xai.explain(model, rows, executor=pool, chunk_size=2, **opts)
    np.testing.assert_array_equal(threaded.values, whole.values)
    other = xai.explain(model, rows, seed=3, **opts)
    assert not np.array_equal(other.values, whole.values)


def test_shared_is_the_default_and_rows_keep_their_own_sample(cancer):
    """By default the rows share one draw (a row explained alone or with others gets the same
    values); centred on the instance, each row gets its own whatever was asked."""
    X, model = cancer
    opts = dict(method="lime", background=X, target=1, n_samples=400, progress=False)
    both = xai.explain(model, X[[20, 21]], **opts)
    assert both.meta["neighbourhood"] == "shared"
    alone = xai.explain(model, X[[21]], **opts)
    np.testing.assert_array_equal(both.values[1], alone.values[0])
    np.testing.assert_allclose(both.meta["prediction"], model.predict_proba(X[[20, 21]])[:, 1])
    around = xai.explain(
        model, X[[20, 21]], discretize_continuous=False, sample_around_instance=True, **opts
    )
    assert around.meta["neighbourhood"] == "per_row"
