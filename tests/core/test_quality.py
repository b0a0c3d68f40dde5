"""Explanation quality: max-sensitivity against Captum, complexity, sparseness, randomisation, ROAD."""

import numpy as np
import pytest

import xai_core as xai
from xai_core.compare.quality import uniform_perturbations
from xai_core.compare.randomisation import attribution_ssim, randomised_layers
from xai_core.compare.road import noisy_linear_imputation

complexity, sparseness, sensitivity_max = xai.complexity, xai.sparseness, xai.sensitivity_max
road, model_parameter_randomisation = xai.road, xai.model_parameter_randomisation

torch = pytest.importorskip("torch")
captum_metrics = pytest.importorskip("captum.metrics")
captum_attr = pytest.importorskip("captum.attr")


def small_cnn():
    """A torch CNN on 1 x 8 x 8 images with 3 outputs, and its import."""
    torch.manual_seed(0)
    module = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1),
        torch.nn.Tanh(),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 8 * 8, 3),
    ).eval()
    return module, xai.from_torch(module, torch.zeros(2, 1, 8, 8))


def images(n, seed=0):
    return np.random.default_rng(seed).uniform(0, 1, size=(n, 1, 8, 8)).astype(np.float32)


@pytest.mark.parametrize(
    ("method", "captum_cls", "kwargs", "opts"),
    [
        ("saliency", "Saliency", {}, {}),
        (
            "ig",
            "IntegratedGradients",
            {"n_steps": 16, "method": "gausslegendre"},
            {"steps": 16, "integration": "gausslegendre"},
        ),
    ],
    ids=["saliency", "ig"],
)
def test_sensitivity_max_equals_captum_on_the_same_noise(method, captum_cls, kwargs, opts):
    """sensitivity_max equals captum.metrics.sensitivity_max when Captum adds the same noise."""
    module, net = small_cnn()
    X = images(4)
    target = np.array([0, 1, 2, 1])
    n_perturb, radius, seed = 5, 0.05, 7
    ours = sensitivity_max(
        net,
        X,
        method,
        target=target,
        perturb_radius=radius,
        n_perturb_samples=n_perturb,
        seed=seed,
        method_options=opts,
    )
    noise = uniform_perturbations(X.shape, n_perturb, radius, seed)
    # Captum repeats each row n_perturb times (repeat_interleave): row i, sample j at i*n+j
    replay = torch.from_numpy(noise.reshape(-1, *X.shape[1:]).astype(np.float32))

    def perturb(inputs):
        return inputs + replay

    attr = getattr(captum_attr, captum_cls)(module)
    want = captum_metrics.sensitivity_max(
        attr.attribute,
        torch.from_numpy(X),
        perturb_func=perturb,
        n_perturb_samples=n_perturb,
        target=torch.from_numpy(target),
        **kwargs,
    ).numpy()
    assert (want > 0).all()
    np.testing.assert_allclose(ours, want, rtol=1e-4)


def test_sensitivity_max_grows_with_the_radius_and_is_seeded():
    """A larger ball gives a larger sensitivity; the same seed gives the same figure."""
    _, net = small_cnn()
    X = images(3, seed=1)
    small = sensitivity_max(net, X, "saliency", perturb_radius=0.001, n_perturb_samples=4)
    large = sensitivity_max(net, X, "saliency", perturb_radius=0.5, n_perturb_samples=4)
    assert (large > small).all()
    again = sensitivity_max(net, X, "saliency", perturb_radius=0.001, n_perturb_samples=4)
    np.testing.assert_array_equal(small, again)
    with pytest.raises(xai.ValidationError, match="perturb_radius"):
        sensitivity_max(net, X, "saliency", perturb_radius=0)


def test_complexity_is_scipy_entropy_of_normalised_abs():
    """Complexity equals scipy.stats.entropy of |a| / sum |a| per row."""
    from scipy.stats import entropy

    a = np.random.default_rng(0).normal(size=(5, 3, 4))
    want = [entropy(np.abs(r).ravel() / np.abs(r).sum()) for r in a]
    np.testing.assert_allclose(complexity(a), want, rtol=1e-12)
    one_hot = np.zeros((1, 10))
    one_hot[0, 3] = -2.0
    np.testing.assert_allclose(complexity(one_hot), [0.0])
    np.testing.assert_allclose(complexity(np.ones((1, 10))), [np.log(10)])


def test_sparseness_is_the_gini_index_of_mean_absolute_differences():
    """Sparseness equals the Gini index sum|x_i - x_j| / (2 n^2 mean) of |a|/max|a| + 1e-7."""
    a = np.random.default_rng(1).normal(size=(4, 20))
    x = np.abs(a) / np.abs(a).max(axis=1, keepdims=True) + 1e-7
    want = np.abs(x[:, :, None] - x[:, None, :]).sum(axis=(1, 2)) / (2 * 20 * x.sum(axis=1))
    np.testing.assert_allclose(sparseness(a), want, rtol=1e-10)
    assert sparseness(np.ones((1, 20)))[0] == pytest.approx(0.0, abs=1e-12)
    spike = np.zeros((1, 20))
    spike[0, 0] = 1.0
    assert sparseness(spike)[0] > 0.94


def test_imputation_solves_the_neighbour_equations():
    """Without noise every imputed pixel is the weighted mean of its in-image neighbours."""
    rng = np.random.default_rng(2)
    image = rng.normal(size=(2, 6, 7))
    removed = rng.random((6, 7)) < 0.4
    removed[0, 0] = removed[5, 6] = True  # corners: neighbours outside the image
    out = noisy_linear_imputation(image, removed, noise=0.0)
    np.testing.assert_array_equal(out[:, ~removed], image[:, ~removed])
    weights = {
        (dr, dc): 1 / 6 if dr == 0 or dc == 0 else 1 / 12 for dr in (-1, 0, 1) for dc in (-1, 0, 1)
    }
    for r, c in zip(*np.nonzero(removed)):
        total, acc = 0.0, np.zeros(2)
        for (dr, dc), w in weights.items():
            if (dr, dc) != (0, 0) and 0 <= r + dr < 6 and 0 <= c + dc < 7:
                total += w
                acc += w * out[:, r + dr, c + dc]
        np.testing.assert_allclose(out[:, r, c], acc / total, atol=1e-10)
    noisy = noisy_linear_imputation(image, removed, 0.5, np.random.default_rng(0))
    assert np.std(noisy[:, removed] - out[:, removed]) == pytest.approx(0.5, rel=0.25)


def test_road_on_a_linear_model_orders_the_curves():
    """Tabular ROAD: removing by exact attribution lowers the output below removing the least relevant."""
    rng = np.random.default_rng(0)
    model = xai.testing.LinearModel(rng.normal(size=(10, 2)))
    X = rng.normal(size=(6, 10))
    target = np.zeros(6, dtype=int)
    mean = X.mean(axis=0)
    e = xai.Explanation(
        values=(X - mean) * model.weight[:, 0],
        base_values=np.zeros(6),
        target=target,
        data=X,
        method="exact",
    )
    r = road(
        model, e, percentages=[0, 30, 60, 100], backend=xai.get_backend("cpu", dtype="float64")
    )
    assert r.imputation == "background_mean"
    np.testing.assert_allclose(r.morf[:, 0], model.predict(X)[:, 0])
    np.testing.assert_allclose(r.morf[:, -1], model.predict(mean[None])[0, 0])
    assert (r.morf[:, 1:-1] < r.lerf[:, 1:-1]).all()
    assert r.morf_kept[:, 0].all()


def test_road_on_images_imputes_and_is_seeded():
    """Image ROAD uses neighbour imputation; IG's MoRF curve ends below its LeRF curve."""
    _, net = small_cnn()
    X = images(3, seed=4)
    e = xai.explain(net, X, method="ig", steps=16, progress=False)
    a = road(net, e, percentages=[0, 20, 50], seed=1)
    b = road(net, e, percentages=[0, 20, 50], seed=1)
    assert a.imputation == "noisy_linear"
    np.testing.assert_array_equal(a.morf, b.morf)
    np.testing.assert_allclose(a.morf[:, 0], a.lerf[:, 0])
    assert a.morf[:, -1].mean() < a.lerf[:, -1].mean()
    assert list(a.curve.columns)[:3] == ["percentage", "morf_output", "lerf_output"]


def test_randomisation_changes_the_attribution_layer_by_layer():
    """Randomising from the output down makes saliency's ranks drift from the original."""
    _, net = small_cnn()
    X = images(4, seed=5)
    before = net.get_weights()
    r = model_parameter_randomisation(net, X, "saliency", seed=0)
    assert r.layers == randomised_layers(net) and len(r.layers) == 2
    assert r.spearman.shape == (2, 4) and r.ssim.shape == (2, 4)
    assert r.spearman[-1].mean() < 0.5 and r.ssim[-1].mean() < 0.9
    for w0, w1 in zip(before, net.get_weights()):
        np.testing.assert_array_equal(w0, w1)  # the original is untouched
    again = model_parameter_randomisation(net, X, "saliency", seed=0)
    np.testing.assert_array_equal(r.spearman, again.spearman)
    assert list(r.curve["layer"]) == r.layers


def test_randomisation_of_an_unchanged_copy_is_perfect_similarity():
    """The similarity figures give 1 for identical attributions: the check can fail."""
    from xai_core.compare.metrics import spearman
    from xai_core.images import sample_layout

    a = np.random.default_rng(0).normal(size=(3, 1, 8, 8))
    np.testing.assert_allclose(spearman(np.abs(a), np.abs(a)), 1.0)
    np.testing.assert_allclose(attribution_ssim(a, a, sample_layout((1, 8, 8))), 1.0)


def test_randomisation_refuses_a_black_box():
    """A black box has no layers to randomise."""
    model = xai.testing.LinearModel(np.ones((4, 2)))
    with pytest.raises(xai.CapabilityError, match="native network"):
        model_parameter_randomisation(model, np.ones((2, 4)), "shap")


def test_compare_methods_reports_quality_with_seed_noise():
    """compare_methods(quality=True) puts every figure beside its seed spread and renders it."""
    _, net = small_cnn()
    X = images(3, seed=6)
    c = xai.compare_methods(
        net,
        X,
        methods=("ig", "smoothgrad"),
        method_options={"ig": {"steps": 8}, "smoothgrad": {"n_samples": 4}},
        quality=True,
        n_seeds=2,
        quality_options={"n_perturb_samples": 2, "road_percentages": (20, 60)},
    )
    q = c.quality
    assert list(q.index) == ["ig", "smoothgrad"]
    assert (q["seeds"] == 2).all()  # both take a seed; IG's (for sampled baselines) is idle here
    assert q.loc["ig", "complexity_seed_std"] == 0.0
    assert q.loc["smoothgrad", "complexity_seed_std"] > 0.0
    ig = c.explanations["ig"].values
    assert q.loc["ig", "complexity"] == pytest.approx(complexity(ig).mean())
    assert q.loc["ig", "sparseness"] == pytest.approx(sparseness(ig).mean())
    assert np.isfinite(q[["sensitivity_max", "road_morf", "randomisation_all"]].to_numpy()).all()
    assert set(c.randomisation) == {"ig", "smoothgrad"}
    html = xai.Report("quality").add(c).to_html()
    assert "randomisation_all_seed_std" in html and "layers are randomised" in html


def test_compare_methods_quality_on_a_black_box_skips_randomisation():
    """On a black box the randomisation figures are NaN; unknown quality options are refused."""
    rng = np.random.default_rng(0)
    model = xai.testing.LinearModel(rng.normal(size=(5, 2)))
    X = rng.normal(size=(4, 5))
    opts = {"shap": {"nsamples": 64, "background": X}, "lime": {"n_samples": 64, "background": X}}
    c = xai.compare_methods(
        model,
        X,
        methods=("shap", "lime"),
        method_options=opts,
        quality=True,
        n_seeds=2,
        quality_options={"n_perturb_samples": 2, "road_percentages": (40,)},
    )
    assert c.quality["randomisation_all"].isna().all() and not c.randomisation
    assert (c.quality["seeds"] == 2).all()
    with pytest.raises(xai.ValidationError, match="quality_options"):
        xai.compare_methods(
            model, X, methods=("shap", "lime"), quality=True, quality_options={"x": 1}
        )


def test_bad_arguments_are_named():
    """Wrong percentages, norms and shapes name the argument."""
    rng = np.random.default_rng(0)
    model = xai.testing.LinearModel(rng.normal(size=(4, 2)))
    X = rng.normal(size=(3, 4))
    e = xai.Explanation(values=X, base_values=np.zeros(3), target=np.zeros(3, int), data=X)
    with pytest.raises(xai.ValidationError, match="percentages"):
        road(model, e, percentages=[150])
    with pytest.raises(xai.ValidationError, match="with data"):
        road(model, xai.Explanation(values=X, base_values=np.zeros(3), target=np.zeros(3, int)))
    with pytest.raises(xai.ShapeError, match="n_samples"):
        complexity(np.ones(4))
    _, net = small_cnn()
    with pytest.raises(xai.ValidationError, match="norm_ord"):
        sensitivity_max(net, images(1), "saliency", norm_ord="nuc", n_perturb_samples=1)


def test_sensitivity_max_with_another_norm_equals_captum():
    """norm_ord=inf gives Captum's figure for the same norm, on the same noise."""
    module, net = small_cnn()
    X = images(2, seed=8)
    ours = sensitivity_max(net, X, "saliency", n_perturb_samples=3, norm_ord=np.inf, seed=2)
    replay = torch.from_numpy(
        uniform_perturbations(X.shape, 3, 0.02, 2).reshape(-1, *X.shape[1:]).astype(np.float32)
    )
    target = torch.from_numpy(net.predict(X).argmax(axis=1))
    want = captum_metrics.sensitivity_max(
        captum_attr.Saliency(module).attribute,
        torch.from_numpy(X),
        perturb_func=lambda inputs: inputs + replay,
        n_perturb_samples=3,
        norm_ord=float("inf"),
        target=target,
    ).numpy()
    np.testing.assert_allclose(ours, want, rtol=1e-4)


def test_randomised_networks_are_cumulative_from_the_output():
    """Step j changes exactly the last j + 1 parameterised layers, at each parameter's own scale."""
    from xai_core.compare.randomisation import randomised_networks

    net = xai.nn.mlp(6, (16, 8), 3, seed=0)
    names = randomised_layers(net)
    assert len(names) == 3 and names[0] == net.nodes[-2].name  # the output Dense first
    for j, (name, work) in enumerate(randomised_networks(net, seed=1)):
        assert name == names[j]
        for layer_name in names:
            a, b = net.node(layer_name).layer.params, work.node(layer_name).layer.params
            changed = any(not np.array_equal(a[k], b[k]) for k in a)
            assert changed == (layer_name in names[: j + 1]), (j, layer_name)
        w0, w1 = net.node(name).layer.params["weight"], work.node(name).layer.params["weight"]
        if w0.size >= 96:  # enough draws for the spread to be near the original's
            assert w1.std() == pytest.approx(w0.std(), rel=0.25)


def test_randomisation_on_a_native_mlp_lowers_the_correlation():
    """On an xai.nn network and tabular rows, saliency's rank correlation falls; no SSIM."""
    rng = np.random.default_rng(0)
    net = xai.nn.mlp(12, (16,), 2, seed=0)
    X = rng.normal(size=(6, 12)).astype(np.float32)
    r = model_parameter_randomisation(net, X, "saliency", seed=0)
    assert r.ssim is None and r.spearman.shape == (2, 6)
    assert r.spearman[0].mean() < 0.5 and r.spearman[-1].mean() < 0.5
