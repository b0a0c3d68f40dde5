"""The lime plugin: lime's neighbourhoods and surrogates, drawn in blocks, seeded, with stability figures."""

import warnings

import numpy as np
import pytest
import scipy.stats as st
from lime.lime_base import LimeBase
from lime.lime_image import LimeImageExplainer
from lime.lime_tabular import LimeTabularExplainer
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import pairwise_distances
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import xai_core as xai
from xai_core.testing import check_explainer
from xai_lime import LimeExplainer
from xai_lime.image import cosine_distances_to_all_on, perturb
from xai_lime.stability import pairwise_stability, spearman, top_k_jaccard
from xai_lime.surrogate import exponential_kernel, fit_surrogates
from xai_lime.tabular import TabularSampler
from xai_lime.truncnorm import truncnorm_ppf

# -- shared data ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cancer():
    """Breast-cancer rows (as float32 values, what the model sees) and a fitted logistic regression."""
    X, y = load_breast_cancer(return_X_y=True)
    X = X.astype(np.float32).astype(np.float64)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X, y)
    return X, y, model


@pytest.fixture(scope="module")
def mnist():
    """MNIST test digits (n, 28, 28) in [0, 1] and a nearest-centroid softmax classifier of their pixels."""
    from xai_datasets import load_mnist

    train, test = load_mnist("train"), load_mnist("test")
    centroids = np.stack([train.X[train.y == c].mean(axis=0) for c in range(10)]).astype(np.float64)
    offsets = 0.5 * (centroids**2).sum(axis=1)

    def predict(batch):
        logits = 5.0 * (
            np.asarray(batch, dtype=np.float64).reshape(len(batch), -1) @ centroids.T - offsets
        )
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    assert (predict(test.X).argmax(axis=1) == test.y).mean() > 0.7
    return test.X[:6].reshape(-1, 28, 28), predict


def lime_weights(local_exp, n_features):
    """A dense weight vector from lime's list of (feature, weight) pairs."""
    w = np.zeros(n_features)
    for j, v in local_exp:
        w[j] = v
    return w


def quiet(**options):
    """Options that keep the test output clean."""
    return {"progress": False, **options}


# -- contract and registration --------------------------------------------------------------------


def test_registered_and_keeps_the_explainer_contract():
    """LimeExplainer is registered as 'lime' and passes the published contract checks."""
    assert "lime" in xai.list_explainers()
    training = np.random.default_rng(1).normal(size=(300, 4))
    check_explainer(
        LimeExplainer,
        options={"background": training, "n_samples": 400, "progress": False},
    )


def test_constructor_stores_options_and_does_no_work():
    """Options are stored as given, even invalid ones; validation waits for explain."""
    e = LimeExplainer(mode="nonsense", n_samples=-3, seed=7)
    assert (e.mode, e.n_samples, e.seed) == ("nonsense", -3, 7)


# -- the truncated normal -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "a, b",
    [(-1.7, 1.7), (-0.3, 5.0), (-40.0, 0.2), (0.0, 1e-9), (-1e9, 1e9), (3.0, 8.0), (-12.0, -10.0)],
    ids=["central", "skewed", "far-lower", "tiny", "huge", "upper-tail", "lower-tail"],
)
def test_truncnorm_ppf_matches_scipy(a, b):
    """The vectorised quantile equals scipy.stats.truncnorm.ppf, tails included."""
    u = np.array([0.0, 1e-12, 1e-6, 0.1, 0.37, 0.5, 0.81, 1 - 1e-6, 1 - 1e-12])
    np.testing.assert_allclose(
        truncnorm_ppf(u, a, b), st.truncnorm.ppf(u, a, b), rtol=1e-9, atol=1e-12
    )


# -- the tabular sampler against lime's own ------------------------------------------------------


def sampler_and_lime(X, **kw):
    """Our sampler and lime's explainer on the same training data and settings."""
    return TabularSampler(X, **kw), LimeTabularExplainer(X, random_state=0, **kw)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"discretizer": "decile"},
        {"categorical_features": [0, 5]},
        {"discretize_continuous": False},
        {"discretize_continuous": False, "categorical_features": [0, 5]},
        {"discretize_continuous": False, "sample_around_instance": True},
    ],
    ids=[
        "quartile",
        "decile",
        "quartile+categorical",
        "continuous",
        "continuous+categorical",
        "around-instance",
    ],
)
def test_sampler_draws_limes_neighbourhood(cancer, kw):
    """Per feature, our draws and lime's __data_inverse draws pass a two-sample KS test; sample 0 is the row."""
    X = cancer[0].copy()
    X[:, 0] = np.round(X[:, 0] / 5)  # a categorical column with ~7 values
    X[:, 5] = (X[:, 5] > 0.1).astype(float)  # a binary one
    sampler, lime_ex = sampler_and_lime(X, **kw)
    row, n = X[3], 20000
    data, inverse = lime_ex._LimeTabularExplainer__data_inverse(row, n)
    scaled = (data - lime_ex.scaler.mean_) / lime_ex.scaler.scale_
    interp, ours, dist = sampler.sample(row[None], n, [np.random.default_rng(11)])
    p_values = [st.ks_2samp(inverse[1:, f], ours[0, 1:, f]).pvalue for f in range(X.shape[1])]
    p_scaled = [st.ks_2samp(scaled[1:, f], interp[0, 1:, f]).pvalue for f in range(X.shape[1])]
    assert min(p_values) > 1e-3 and min(p_scaled) > 1e-3
    np.testing.assert_array_equal(ours[0, 0], row)
    np.testing.assert_allclose(interp[0, 0], scaled[0])
    lime_dist = pairwise_distances(scaled, scaled[:1]).ravel()
    assert abs(np.median(dist[0]) - np.median(lime_dist)) < 0.05 * np.median(lime_dist)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_sampled_bins_have_the_training_frequencies(cancer, dtype):
    """Each value lies in the bin it was drawn for, and bins come with their training frequencies."""
    X = cancer[0]
    sampler = TabularSampler(X)
    disc = sampler.discretizer
    row, n = X[10], 40000
    interp, inverse, _ = sampler.sample(row[None], n, [np.random.default_rng(3)], dtype=dtype)
    assert inverse.dtype == dtype
    bins = disc.discretize(inverse[0, 1:].astype(np.float64))
    own = disc.discretize(row[None])[0]
    # the 1/0 indicator says whether the value fell in the row's bin
    np.testing.assert_array_equal(interp[0, 1:] == 1, bins == own)
    for f in range(X.shape[1]):
        observed = np.array([(bins[:, f] == v).sum() for v in sampler.values[f]])
        expected = sampler.frequencies[f] * (n - 1)
        assert st.chisquare(observed, expected).pvalue > 1e-4, f


@pytest.mark.parametrize(
    "dtype, method",
    [(np.float64, "rejection"), (np.float32, "rejection"), (np.float64, "inversion")],
    ids=["float64", "float32", "inverse-cdf"],
)
def test_values_in_a_bin_follow_its_truncated_normal(cancer, dtype, method, monkeypatch):
    """Values drawn in one bin follow scipy's truncnorm with the bin's mean, std and bounds (one-sample KS)."""
    if method == "inversion":  # every bin below the acceptance threshold: the inverse-CDF path
        monkeypatch.setattr("xai_lime.tabular._MIN_ACCEPTANCE", 1.01)
    X = cancer[0]
    sampler = TabularSampler(X)
    assert sampler._any_invert == (method == "inversion")
    disc = sampler.discretizer
    _, inverse, _ = sampler.sample(X[:1], 60000, [np.random.default_rng(5)], dtype=dtype)
    values = inverse[0, 1:].astype(np.float64)
    bins = disc.discretize(values)
    for f, k in [(0, 0), (3, 2), (13, 3), (27, 1)]:
        x = values[bins[:, f] == k, f]
        mean, std, lo, hi = disc.means[f][k], disc.stds[f][k], disc.mins[f][k], disc.maxs[f][k]
        dist = st.truncnorm((lo - mean) / std, (hi - mean) / std, loc=mean, scale=std)
        assert len(x) > 5000
        assert st.kstest(x, dist.cdf).pvalue > 1e-3, (f, k)


def test_a_bin_that_is_a_point_gives_its_value():
    """A degenerate bin (all training values equal to its bound) yields that value, not a z-score."""
    rng = np.random.default_rng(0)
    X = np.column_stack([np.r_[np.full(60, 3.0), rng.uniform(4, 9, 40)], rng.normal(size=100)])
    sampler = TabularSampler(X)
    _, inverse, _ = sampler.sample(X[:1], 5000, [np.random.default_rng(1)])
    first_bin = sampler.discretizer.discretize(inverse[0])[:, 0] == 0
    assert first_bin.sum() > 1000
    np.testing.assert_array_equal(inverse[0, first_bin, 0], 3.0)


# -- the surrogate ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "selection, k",
    [("auto", 10), ("highest_weights", 4), ("none", 10), ("auto", 3), ("lasso_path", 5)],
    ids=["auto-10", "highest-4", "none", "auto-forward", "lasso"],
)
def test_batched_surrogate_equals_limebase(selection, k):
    """The batched closed-form fits give LimeBase.explain_instance_with_data's numbers, row by row."""
    rng = np.random.default_rng(0)
    R, n, F = 3, 800, 12
    Z = (rng.random((R, n, F)) > 0.4).astype(float)
    Z[:, 0] = 1
    y = np.tanh(Z @ rng.normal(size=F) * 0.3) + 0.05 * rng.normal(size=(R, n))
    d = np.sqrt(((Z - 1) ** 2).sum(-1))
    width = 0.75 * np.sqrt(F)
    fit = fit_surrogates(Z, y, d, kernel_width=width, n_features=k, feature_selection=selection)
    base = LimeBase(exponential_kernel(width), random_state=0)
    for r in range(R):
        b0, pairs, score, pred = base.explain_instance_with_data(
            Z[r], y[r][:, None], d[r], 0, k, feature_selection=selection
        )
        np.testing.assert_allclose(fit.coef[r], lime_weights(pairs, F), rtol=1e-8, atol=1e-11)
        np.testing.assert_allclose(
            [fit.intercept[r], fit.score[r], fit.local_pred[r]], [b0, score, pred[0]], rtol=1e-8
        )


def test_solvers_give_the_same_explanation(cancer):
    """solver='batched' and solver='lime' explain the same neighbourhoods identically."""
    X, _, model = cancer
    runs = [
        xai.explain(
            model,
            X[:4],
            method="lime",
            background=X,
            n_samples=1500,
            solver=s,
            **quiet(stability_seeds=0),
        )
        for s in ("batched", "lime")
    ]
    np.testing.assert_allclose(runs[0].values, runs[1].values, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(runs[0].meta["score"], runs[1].meta["score"], rtol=1e-7)


# -- what LIME recovers -----------------------------------------------------------------------------


def test_linear_model_weights_are_its_coefficients_times_the_scale():
    """Without discretisation, a linear model's LIME weight of feature j is w_j * std_j: signs and order recovered."""
    rng = np.random.default_rng(0)
    w = np.array([3.0, -2.0, 1.2, -0.6, 0.25])
    scale = np.array([1.0, 2.0, 0.5, 1.5, 1.0])
    train = rng.normal(size=(4000, 5)) * scale + 1.0
    e = xai.explain(
        lambda X: X @ w,
        train[:8],
        method="lime",
        background=train,
        discretize_continuous=False,
        max_features=5,
        n_samples=3000,
        **quiet(stability_seeds=0),
    )
    expected = w * train.std(axis=0)
    # equal up to the ridge penalty (alpha=1 against kernel weights summing to thousands)
    np.testing.assert_allclose(e.values, np.broadcast_to(expected, e.values.shape), rtol=1e-2)
    assert (np.sign(e.values) == np.sign(w)).all()
    order = np.argsort(-np.abs(expected))
    assert (np.argsort(-np.abs(e.values), axis=1) == order).all()
    np.testing.assert_allclose(e.meta["score"], 1.0, atol=1e-4)
    np.testing.assert_allclose(e.meta["local_pred"], e.meta["prediction"], rtol=1e-2)


@pytest.mark.parametrize("discretize", [True, False], ids=["quartiles", "continuous"])
def test_a_model_of_one_feature_ranks_it_first(cancer, discretize):
    """A model that reads only feature 7 gets feature 7 as the top LIME feature on every row."""
    X = cancer[0]
    z = (X[:, 7] - X[:, 7].mean()) / X[:, 7].std()

    def model(batch):
        return 1 / (1 + np.exp(-((np.asarray(batch)[:, 7] - X[:, 7].mean()) / X[:, 7].std())))

    assert np.isfinite(z).all()
    e = xai.explain(
        model,
        X[:10],
        method="lime",
        background=X,
        discretize_continuous=discretize,
        n_samples=2000,
        **quiet(stability_seeds=0),
    )
    assert (np.argmax(np.abs(e.values), axis=1) == 7).all()
    if not discretize:  # the weight of a standardised value: the others are only noise
        others = np.delete(np.abs(e.values), 7, axis=1).max(axis=1)
        assert (others < 0.1 * np.abs(e.values[:, 7])).all()


def test_weights_agree_with_lime_as_lime_agrees_with_itself(cancer):
    """On breast-cancer rows, plugin-vs-lime agreement of the weights is within lime's own seed-to-seed spread."""
    X, _, model = cancer
    rows = X[:6]
    e = xai.explain(model, rows, method="lime", background=X, target=1, **quiet(stability_seeds=0))

    def lime_run(seed):
        ex = LimeTabularExplainer(X, random_state=seed)
        return np.array(
            [
                lime_weights(
                    ex.explain_instance(r, model.predict_proba, labels=(1,)).local_exp[1], 30
                )
                for r in rows
            ]
        )

    a, b = lime_run(1), lime_run(2)
    ours_vs_lime = np.mean([np.corrcoef(e.values[i], a[i])[0, 1] for i in range(len(rows))])
    lime_vs_lime = np.mean([np.corrcoef(b[i], a[i])[0, 1] for i in range(len(rows))])
    assert ours_vs_lime > lime_vs_lime - 0.05
    assert top_k_jaccard(e.values, a, 5).mean() > top_k_jaccard(b, a, 5).mean() - 0.15


# -- seeds and the leaks of the lime library --------------------------------------------------------


def test_lime_library_reads_global_random_state(cancer):
    """lime without random_state draws from numpy's global state: the leak the plugin closes at its boundary."""
    X, _, model = cancer

    def weights(global_seed):
        np.random.seed(global_seed)  # noqa: NPY002 - the global state is what is tested
        ex = LimeTabularExplainer(X)
        return lime_weights(
            ex.explain_instance(X[0], model.predict_proba, num_samples=500).local_exp[1], 30
        )

    np.testing.assert_array_equal(weights(1), weights(1))
    assert not np.array_equal(weights(1), weights(2))


@pytest.mark.parametrize("mode", ["tabular", "image"], ids=["tabular", "image"])
def test_seeded_runs_are_identical_whatever_the_global_state(cancer, mode):
    """The same seed gives the same explanation twice, even when numpy's global state changes; another seed differs."""
    X, _, model = cancer
    rng = np.random.default_rng(0)
    if mode == "tabular":
        args = (model, X[:5])
        opts = {"background": X, "n_samples": 800, "stability_seeds": 1}
    else:
        imgs = rng.random((3, 12, 12))
        args = (lambda b: np.asarray(b).reshape(len(b), -1)[:, :40].mean(1), imgs)
        opts = {
            "n_samples": 300,
            "segmentation": "quickshift",
            "stability_seeds": 1,
            "segmentation_params": {"kernel_size": 1, "max_dist": 3},
        }
    runs = []
    for global_seed in (1, 2):
        np.random.seed(global_seed)  # noqa: NPY002 - the global state is what is tested
        runs.append(xai.explain(*args, method="lime", **quiet(**opts)))
    other = xai.explain(*args, method="lime", **quiet(**opts, seed=5))
    np.testing.assert_array_equal(runs[0].values, runs[1].values)
    np.testing.assert_array_equal(runs[0].meta["score"], runs[1].meta["score"])
    np.testing.assert_array_equal(
        runs[0].meta["stability_jaccard"], runs[1].meta["stability_jaccard"]
    )
    assert not np.array_equal(runs[0].values, other.values)


# -- meta and the stability figure ------------------------------------------------------------------


def test_stability_metrics_against_hand_and_scipy():
    """Top-k Jaccard on hand-made sets and Spearman against scipy.stats.spearmanr."""
    a = np.array([[5.0, -4.0, 3.0, 0.1, 0.0]])
    b = np.array([[0.2, -4.0, 3.0, 9.0, 0.0]])
    assert top_k_jaccard(a, b, 3)[0] == pytest.approx(2 / 4)  # {0,1,2} vs {3,1,2}
    assert top_k_jaccard(a, a, 3)[0] == 1.0
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(4, 9)), rng.normal(size=(4, 9))
    y[0] = x[0]
    x[1, :3] = x[1, 3:6]  # ties
    expected = [st.spearmanr(x[i], y[i]).statistic for i in range(4)]
    np.testing.assert_allclose(spearman(x, y), expected)
    assert np.isnan(spearman(np.ones((1, 4)), x[:1, :4]))[0]
    jac, rho = pairwise_stability([x, x, x], 3)
    np.testing.assert_allclose(jac, 1.0)
    np.testing.assert_allclose(rho, 1.0)


def test_breast_cancer_meta_and_stability(cancer):
    """Breast-cancer rows report score, local prediction, intercept, seeds and a stability figure in range."""
    X, _, model = cancer
    e = xai.explain(
        model, X[:5], method="lime", background=X, n_samples=1000, **quiet(stability_seeds=3)
    )
    m = e.meta
    for key in (
        "score",
        "local_pred",
        "intercept",
        "prediction",
        "stability_jaccard",
        "stability_spearman",
    ):
        assert m[key].shape == (5,), key
    np.testing.assert_array_equal(e.base_values, m["intercept"])
    assert ((m["score"] > 0) & (m["score"] <= 1)).all()
    assert m["n_samples"] == 1000 and m["seed"] == 0 and m["n_features"] == 10
    s = m["stability"]
    assert s["seeds"] == [0, 1, 2, 3] and s["top_k"] == 5
    assert 0 <= s["jaccard"] <= 1 and -1 <= s["spearman"] <= 1
    assert ((m["stability_jaccard"] >= 0) & (m["stability_jaccard"] <= 1)).all()
    assert s["jaccard"] == pytest.approx(m["stability_jaccard"].mean())
    e0 = xai.explain(model, X[:5], method="lime", background=X, n_samples=1000, **quiet())
    assert e0.meta["stability"] is None and "stability_jaccard" not in e0.meta
    np.testing.assert_array_equal(e0.values, e.values)  # reruns never touch the main explanation


def test_instability_is_shown_not_hidden(cancer):
    """Fewer samples make LIME less stable, and the figure says so."""
    X, _, model = cancer
    small, large = (
        xai.explain(
            model, X[:8], method="lime", background=X, n_samples=n, **quiet(stability_seeds=3)
        )
        for n in (100, 4000)
    )
    assert small.meta["stability"]["jaccard"] < large.meta["stability"]["jaccard"]
    assert small.meta["stability"]["spearman"] < large.meta["stability"]["spearman"]


def test_default_training_data_warns(cancer):
    """Without training_data the explained rows become the statistics, with a warning saying so."""
    X, _, model = cancer
    with pytest.warns(xai.XaiWarning, match="background"):
        e = xai.explain(model, X[:50], method="lime", n_samples=300, **quiet(stability_seeds=0))
    assert e.meta["training_rows"] == 50


# -- images -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, opts",
    [
        ((4, 28, 28), {}),
        ((4, 784), {"image_shape": (28, 28)}),
        ((4, 784), {"mode": "image"}),
        ((4, 1, 28, 28), {}),
        ((4, 16, 16, 3), {}),
        ((4, 3, 16, 16), {"segmentation": "felzenszwalb"}),
    ],
    ids=["hw", "flat+image_shape", "flat-square", "chw-1", "hwc-rgb", "chw-rgb"],
)
def test_image_values_keep_the_input_shape(shape, opts):
    """values has X's shape and every pixel of a superpixel carries that superpixel's weight."""
    rng = np.random.default_rng(0)
    X = rng.random(shape).astype(np.float32)
    e = xai.explain(
        lambda b: np.asarray(b).reshape(len(b), -1).mean(1),
        X,
        method="lime",
        n_samples=200,
        **quiet(stability_seeds=0, **opts),
    )
    assert e.values.shape == X.shape
    segs = e.meta["segments"]
    assert segs.shape[0] == 4 and segs.ndim == 3
    for i in range(4):
        v = e.values[i]
        if v.ndim == 1:
            v = v.reshape(segs.shape[1:])
        elif v.shape[0] in (1, 3) and v.ndim == 3:
            v = np.moveaxis(v, 0, -1)
        v = v.reshape(*segs.shape[1:], -1)
        for k in range(e.meta["n_segments"][i]):
            assert np.ptp(v[segs[i] == k]) == 0


def test_the_superpixel_the_model_reads_ranks_first():
    """A model of the top-left 4x4 cell's brightness puts that grid superpixel first on every image."""
    rng = np.random.default_rng(0)
    X = rng.random((5, 16, 16))
    e = xai.explain(
        lambda b: np.asarray(b)[:, :4, :4].mean(axis=(1, 2)),
        X,
        method="lime",
        segmentation="grid",
        segmentation_params={"size": 4},
        n_samples=500,
        hide_color=0.0,
        **quiet(stability_seeds=0),
    )
    assert (e.meta["segments"][:, :4, :4] == 0).all()
    top = np.argmax(np.abs(e.values.reshape(5, -1)), axis=1)
    assert (e.meta["segments"].reshape(5, -1)[np.arange(5), top] == 0).all()
    np.testing.assert_allclose(e.values[:, 8:, 8:], 0, atol=1e-3)


def test_perturbed_images_and_distances_are_limes():
    """Off superpixels take their mean colour (or hide_color), on ones the image; cosine distances as scikit-learn's."""
    rng = np.random.default_rng(0)
    image = rng.random((10, 10, 3))
    segments = np.repeat(np.arange(5), 20).reshape(10, 10)
    mask, imgs = perturb(image, segments, 50, np.random.default_rng(1), dtype=np.float64)
    assert (mask[0] == 1).all()
    for s in range(50):
        for k in range(5):
            region = segments == k
            expected = image[region] if mask[s, k] else image[region].mean(axis=0)
            np.testing.assert_allclose(
                imgs[s][region], np.broadcast_to(expected, image[region].shape)
            )
    _, hidden = perturb(
        image, segments, 5, np.random.default_rng(1), hide_color=0.0, dtype=np.float64
    )
    assert ((hidden == 0) | (hidden == image)).all()
    mask[3] = 0
    np.testing.assert_allclose(
        cosine_distances_to_all_on(mask),
        pairwise_distances(mask, mask[:1], metric="cosine").ravel(),
        atol=1e-12,
    )


def test_mnist_weights_agree_with_lime_image(mnist):
    """On MNIST digits, the plugin's superpixel weights agree with LimeImageExplainer's (same superpixels) as lime with itself."""
    from skimage.segmentation import slic

    images, predict = mnist
    e = xai.explain(predict, images[:3], method="lime", **quiet(stability_seeds=0))

    def segment(img):
        return slic(
            img[..., 0], n_segments=50, compactness=0.1, sigma=0, start_label=0, channel_axis=None
        )

    def lime_run(seed, i):
        ex = LimeImageExplainer(random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = ex.explain_instance(
                images[i].astype(np.float64),
                lambda b: predict(np.asarray(b)[..., 0]),
                labels=(e.target[i],),
                top_labels=None,
                num_samples=1000,
                segmentation_fn=segment,
            )
        return lime_weights(out.local_exp[e.target[i]], e.meta["n_segments"][i])

    for i in range(3):
        ours = np.array(
            [e.values[i][e.meta["segments"][i] == k][0] for k in range(e.meta["n_segments"][i])]
        )
        a, b = lime_run(1, i), lime_run(2, i)
        assert np.corrcoef(ours, a)[0, 1] > np.corrcoef(b, a)[0, 1] - 0.03
        np.testing.assert_array_equal(e.meta["segments"][i], segment(images[i][..., None]))


def test_mnist_stability_figure(mnist):
    """MNIST digits report per-image stability in range and about 40 superpixels each."""
    images, predict = mnist
    e = xai.explain(predict, images, method="lime", n_samples=500, **quiet(stability_seeds=2))
    assert ((e.meta["n_segments"] > 25) & (e.meta["n_segments"] < 60)).all()
    assert e.meta["stability_jaccard"].shape == (6,)
    assert 0 <= e.meta["stability"]["jaccard"] <= 1
    assert -1 <= e.meta["stability"]["spearman"] <= 1
    assert e.meta["n_samples"] == 500 and e.meta["mode"] == "image"


# -- native networks -----------------------------------------------------------------------------------


def test_native_network_equals_its_black_box_and_runs_on_the_tpu(cancer):
    """A native net explained directly equals the same net as a black box; on the TPU it stays close (bf16)."""
    X = cancer[0]
    Xs = ((X - X.mean(0)) / X.std(0)).astype(np.float32)
    net = xai.nn.mlp(30, hidden=(8,), n_outputs=2, seed=0)
    opts = {"background": Xs, "n_samples": 1000, "target": 1, **quiet(stability_seeds=0)}
    native = xai.explain(net, Xs[:4], method="lime", **opts)
    black = xai.explain(lambda b: net.predict(b), Xs[:4], method="lime", **opts)
    np.testing.assert_allclose(native.values, black.values, rtol=1e-5, atol=1e-7)
    if "tpu" in xai.list_backends():
        tpu = xai.explain(net, Xs[:4], method="lime", backend="tpu", **opts)
        assert tpu.backend == "tpu"
        for i in range(4):
            assert np.corrcoef(tpu.values[i], native.values[i])[0, 1] > 0.95


# -- bad input -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "opts, error, match",
    [
        (
            {"background": np.zeros((10, 29))},
            xai.ShapeError,
            r"background must have shape \(n_rows, 30\)",
        ),
        ({"background": np.full((10, 30), np.nan)}, xai.ValidationError, "NaN"),
        (
            {"mode": "audio"},
            xai.UnknownNameError,
            "Unknown mode 'audio'. Available: auto, image, series, tabular",
        ),
        ({"n_samples": 0}, xai.ValidationError, "n_samples must be an integer >= 2"),
        ({"n_samples": 1}, xai.ValidationError, "n_samples"),
        ({"n_samples": 100.5}, xai.ValidationError, "n_samples"),
        ({"n_samples": True}, xai.ValidationError, "n_samples"),
        ({"max_features": 0}, xai.ValidationError, "max_features"),
        ({"kernel_width": -1.0}, xai.ValidationError, "kernel_width"),
        ({"feature_selection": "best"}, xai.UnknownNameError, "feature_selection"),
        ({"discretizer": "octile"}, xai.UnknownNameError, "discretizer"),
        ({"discretizer": "entropy"}, xai.ValidationError, "training_labels"),
        ({"training_labels": np.zeros(3)}, xai.ShapeError, "training_labels"),
        ({"categorical_features": [30]}, xai.ValidationError, r"\[0, 30\)"),
        ({"categorical_features": [1, 1]}, xai.ValidationError, "repeat"),
        ({"seed": -1}, xai.ValidationError, "seed"),
        ({"stability_seeds": -1}, xai.ValidationError, "stability_seeds"),
        ({"top_k": 0}, xai.ValidationError, "top_k"),
        ({"solver": "fast"}, xai.UnknownNameError, "solver"),
        ({"image_shape": (5, 5)}, xai.ShapeError, "image_shape"),
        ({"mode": "image"}, xai.ShapeError, "not a square image"),
        ({"bogus": 1}, xai.UnknownNameError, "bogus"),
    ],
    ids=[
        "training-columns",
        "training-nan",
        "mode",
        "n-samples-0",
        "n-samples-1",
        "n-samples-float",
        "n-samples-bool",
        "n-features",
        "kernel-width",
        "feature-selection",
        "discretizer",
        "entropy-needs-labels",
        "labels-shape",
        "categorical-range",
        "categorical-repeat",
        "seed",
        "stability-seeds",
        "top-k",
        "solver",
        "image-shape",
        "not-square",
        "unknown-option",
    ],
)
def test_bad_tabular_input_fails_before_any_model_call(cancer, opts, error, match):
    """Every bad option is rejected with a message naming it, before any perturbed sample reaches the model."""
    X = cancer[0]
    calls = []

    def model(batch):
        calls.append(len(batch))
        return np.column_stack([np.zeros(len(batch)), np.ones(len(batch))])

    base = {"background": X, "n_samples": 100, **quiet(stability_seeds=0)}
    with pytest.raises(error, match=match):
        xai.explain(model, X[:3], method="lime", target=1, **{**base, **opts})
    assert all(n <= 3 for n in calls)  # at most the explained rows, to learn the output width


@pytest.mark.parametrize(
    "opts, error, match",
    [
        ({"segmentation": "watershed"}, xai.UnknownNameError, "Unknown segmentation 'watershed'"),
        ({"segmentation_params": {"n_segmentz": 5}}, xai.UnknownNameError, "n_segmentz"),
        (
            {"segmentation": "grid", "segmentation_params": {"size": 0}},
            xai.ValidationError,
            "grid size",
        ),
        ({"background": np.zeros((5, 64))}, xai.ValidationError, "tabular mode"),
        ({"hide_color": "black"}, xai.ValidationError, "hide_color"),
        ({"segmentation": lambda im: np.zeros(3)}, xai.ShapeError, "labels of shape"),
    ],
    ids=["segmentation", "params", "grid-size", "training-data", "hide-color", "callable-shape"],
)
def test_bad_image_input(opts, error, match):
    """Bad image options are rejected with a message naming them."""
    X = np.random.default_rng(0).random((2, 8, 8))
    with pytest.raises(error, match=match):
        xai.explain(
            lambda b: np.asarray(b).reshape(len(b), -1).mean(1),
            X,
            method="lime",
            target=0,
            n_samples=50,
            **quiet(stability_seeds=0, **opts),
        )


# -- reports and notebooks ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "hostile",
    ["</script><img src=x onerror=alert(1)>", "<script>alert('x')</script>"],
    ids=["img-onerror", "script"],
)
def test_lime_explanations_render_in_reports_and_notebooks(cancer, hostile, tmp_path):
    """Tabular and image LIME explanations render in a saved report and in a notebook, names escaped."""
    X, _, model = cancer
    names = [hostile] + [f"f{i}" for i in range(29)]
    e = xai.explain(
        model,
        X[:3],
        method="lime",
        background=X,
        n_samples=300,
        feature_names=names,
        **quiet(stability_seeds=1),
    )
    images = np.random.default_rng(0).random((2, 12, 12))
    ei = xai.explain(
        lambda b: np.asarray(b).reshape(len(b), -1)[:, :20].mean(1),
        images,
        method="lime",
        n_samples=100,
        **quiet(stability_seeds=1),
    )
    report = xai.Report(hostile)
    report.add(e)
    report.add(ei)
    path = tmp_path / "lime.html"
    report.save(path)
    html = path.read_text(encoding="utf-8")
    for fragment in (html, e._repr_html_(), ei._repr_html_()):
        assert "<img src=x" not in fragment and "<script>alert(" not in fragment
    assert "stability" in html


def test_a_pasted_lime_call_selects_as_many_features_as_lime(cancer):
    """num_samples= and num_features= (lime's spellings) mean what they mean in lime.

    lime's explain_instance(num_features=4, num_samples=800) returns 4 weights per row; the
    plugin, called with the same spellings, draws 800 samples and keeps 4 features, and its
    top features overlap lime's as lime's overlap its own across seeds.
    """
    X, _, model = cancer
    rows = X[:4]
    e = xai.explain(
        model,
        rows,
        method="lime",
        background=X,
        target=1,
        num_samples=800,
        num_features=4,
        **quiet(stability_seeds=0),
    )
    assert e.meta["n_samples"] == 800 and e.meta["n_selected"] == 4
    assert ((e.values != 0).sum(axis=1) == 4).all()

    def lime_run(seed):
        ex = LimeTabularExplainer(X, random_state=seed)
        found = [
            ex.explain_instance(
                r, model.predict_proba, labels=(1,), num_features=4, num_samples=800
            ).local_exp[1]
            for r in rows
        ]
        assert all(len(f) == 4 for f in found)
        return np.array([lime_weights(f, 30) for f in found])

    a, b = lime_run(1), lime_run(2)
    assert top_k_jaccard(e.values, a, 4).mean() >= top_k_jaccard(b, a, 4).mean() - 0.25


def _series_net(order: str):
    """A Conv1D - LSTM network reading 3 channels of 30 steps in ``order``."""
    nn = xai.nn
    layers = [nn.Conv1D(4, 5, padding="same", layout="NCW" if order == "ct" else "NWC"), nn.Tanh()]
    if order == "ct":
        layers.append(nn.Transpose((1, 0)))
    layers += [nn.LSTM(5, output="hidden"), nn.Flatten(), nn.Dense(2)]
    shape = (3, 30) if order == "ct" else (30, 3)
    return nn.Sequential(layers, input_shape=shape, seed=0)


@pytest.mark.parametrize("order", ["ct", "tc"])
def test_series_are_explained_per_window_of_steps(order):
    """A network reading series gets windows of steps as superpixels (ten of near-equal
    length by default, or ``size`` steps), every channel of a window sharing its weight;
    seeded."""
    net = _series_net(order)
    X = np.random.default_rng(3).normal(size=(2, *net.input_shape)).astype(np.float32)
    e = xai.explain(net, X, method="lime", target=1, **quiet(n_samples=200))
    assert e.meta["mode"] == "series" and e.meta["series_order"] == order
    assert e.meta["segmentation"] == "windows" and e.meta["n_segments"].tolist() == [10, 10]
    np.testing.assert_array_equal(e.meta["segments"][0], np.arange(30)[None] // 3)
    tc = e.values if order == "tc" else e.values.transpose(0, 2, 1)
    assert np.all(tc == tc[:, :, :1]) and not np.all(tc == 0)  # one weight per window
    np.testing.assert_array_equal(
        xai.explain(net, X, method="lime", target=1, **quiet(n_samples=200)).values, e.values
    )
    five = xai.explain(
        net, X, method="lime", target=1, segmentation_params={"size": 5}, **quiet(n_samples=50)
    )
    assert five.meta["segmentation"] == "grid" and five.meta["n_segments"].tolist() == [6, 6]
    again = xai.explain(net, X, method="lime", target=1, segmentation="windows", **quiet())
    np.testing.assert_array_equal(
        again.values, xai.explain(net, X, method="lime", target=1, **quiet()).values
    )
    with pytest.raises(xai.ValidationError, match="takes no segmentation_params"):
        xai.explain(net, X, method="lime", segmentation="windows", segmentation_params={"size": 2})
    with pytest.raises(xai.UnknownNameError, match="Unknown segmentation 'windows'"):
        xai.explain(net, X, method="lime", mode="image", segmentation="windows", **quiet())


def test_series_weights_agree_with_lime_image_on_the_same_windows():
    """On a series seen as an image one row high (lime's three colours its channels),
    the weights agree with LimeImageExplainer's on the same windows as lime with itself."""
    net = _series_net("tc")
    X = np.random.default_rng(4).normal(size=(3, 30, 3)).astype(np.float32)
    e = xai.explain(net, X, method="lime", target=0, **quiet(n_samples=1000))

    def lime_run(seed, i):
        ex = LimeImageExplainer(random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = ex.explain_instance(
                X[i][None].astype(np.float64),
                lambda b: net.predict(np.asarray(b, np.float32)[:, 0]),
                labels=(0,),
                top_labels=None,
                num_samples=1000,
                segmentation_fn=lambda img: np.arange(30)[None] // 3,
            )
        return lime_weights(out.local_exp[0], 10)

    for i in range(3):
        ours = e.values[i, ::3, 0]
        a, b = lime_run(1, i), lime_run(2, i)
        assert np.corrcoef(ours, a)[0, 1] > np.corrcoef(b, a)[0, 1] - 0.03
