"""compare_backends and compare_methods: identical backends agree, hardware differences are measured."""

import base64
import re
import types

import numpy as np
import pytest

import xai_core as xai
from xai_core.backends.cpu import CPUBackend
from xai_core.plugin.manager import register_plugin
from xai_core.testing import LinearModel


@pytest.fixture
def linear():
    """A 3-output linear model over 16 features, and 6 rows."""
    rng = np.random.default_rng(0)
    return LinearModel(rng.normal(size=(16, 3))), rng.normal(size=(6, 16)).astype(np.float32)


def test_identical_backends_agree_perfectly(linear):
    """Two fp32 CPUs give identical attributions: cosine 1, no flips, no difference, ranks not reported."""
    model, X = linear
    c = xai.compare_backends(
        model, X, method="ig", backends=("cpu", xai.get_backend("cpu")), steps=8
    )
    assert list(c.explanations) == ["cpu", "cpu#2"]
    row = c.summary.loc["cpu#2"]
    assert row.mean_cosine == 1.0 and np.isnan(row.mean_top_k_overlap)
    assert np.isnan(row.mean_spearman)  # within noise: the ranks are not meaningful
    assert row.max_abs_diff == 0.0 and row.flipped == 0 and row.beyond_noise == 0
    assert c.formats == {"cpu": "fp32", "cpu#2": "fp32"}
    assert c.verdict.changed == () and "cpu#2 agrees with cpu within rounding" in str(c)


def test_tpu_differs_by_bf16_and_is_counted():
    """On the bf16 TPU a network's attributions differ a little from fp32, and the costs are counted."""
    rng = np.random.default_rng(0)
    net = xai.nn.mlp(16, hidden=(12,), n_outputs=3, activation="tanh", seed=0)
    X = rng.normal(size=(6, 16)).astype(np.float32)
    c = xai.compare_backends(net, X, method="ig", backends=("cpu", "tpu", "edgetpu"), steps=8)
    tpu = c.summary.loc["tpu"]
    assert 0.99 < tpu.mean_cosine < 1.0
    assert 0 < tpu.max_abs_diff < 0.05 * np.abs(c.explanations["cpu"].values).max()
    assert tpu.inference_cycles > 0 and tpu.explanation_cycles > tpu.inference_cycles
    assert c.rows.shape[0] == 3 * len(X) and "edgetpu" not in c.skipped
    assert c.notes == {"edgetpu": "straight-through (fake-quantised float backward)"}
    np.testing.assert_array_equal(c.explanations["tpu"].target, c.explanations["cpu"].target)


def test_black_box_method_runs_on_the_int8_edgetpu():
    """A prediction-only method runs on the quantised network on edgetpu; flips and energy are reported."""
    rng = np.random.default_rng(2)
    net = xai.nn.mlp(6, hidden=(8,), n_outputs=2, activation="relu", seed=1)
    X = rng.normal(size=(4, 6)).astype(np.float32)
    c = xai.compare_backends(net, X, method="shap", backends=("cpu", "edgetpu"), background=X)
    assert list(c.explanations) == ["cpu", "edgetpu"]
    edge = c.summary.loc["edgetpu"]
    assert edge.mean_cosine > 0.9 and edge.inference_energy_j > 0
    assert set(c.rows["flipped"].unique()) <= {True, False}


def test_gradient_method_skips_edgetpu_for_a_model_without_int8_gradients(linear):
    """IG on the inference-only Edge TPU needs an int8 model with straight-through gradients;
    a native model that cannot be quantised is skipped with the reason."""
    model, X = linear
    c = xai.compare_backends(model, X, method="ig", backends=("cpu", "edgetpu"), steps=4)
    assert list(c.explanations) == ["cpu"]
    assert "inference only" in c.skipped["edgetpu"]


def test_black_box_runs_only_on_the_host():
    """A black-box model is explained on the reference only; other backends say why they were skipped."""
    rng = np.random.default_rng(1)
    w = rng.normal(size=(5, 2))
    c = xai.compare_backends(
        lambda X: X @ w, rng.normal(size=(3, 5)), method="shap", backends=("cpu", "tpu")
    )
    assert list(c.explanations) == ["cpu"] and "black-box" in c.skipped["tpu"]


class _CpuTwin(CPUBackend):
    """The fp32 CPU under another name: a backend a plugin registers."""

    name = "cpu_twin_test"


class _NeedsSettings(CPUBackend):
    """A backend that cannot be built without settings."""

    name = "needs_settings_test"

    def __init__(self, board):
        super().__init__()


def test_default_backends_are_every_registered_one(linear, fresh_registry):
    """With no backends given, every registered backend is compared: a newly registered one too."""
    plugin = types.ModuleType("twin_backends")
    plugin.xai_register_backends = xai.hookimpl(lambda: [_CpuTwin, _NeedsSettings])
    register_plugin(plugin)
    model, X = linear
    c = xai.compare_backends(model, X, method="ig", steps=4)
    assert list(c.explanations) == ["cpu", "gpu", "tpu", "tpu_pod", "cpu_twin_test"]
    assert "inference only" in c.skipped["edgetpu"]
    assert "cannot build with its defaults" in c.skipped["needs_settings_test"]
    twin = c.summary.loc["cpu_twin_test"]
    assert twin.max_abs_diff == 0.0 and twin.mean_cosine == 1.0


def test_compare_methods_on_a_linear_model(linear):
    """IG and exact SHAP agree on a linear model (both equal (x - baseline) * w up to the baseline)."""
    model, X = linear
    background = np.zeros((1, 16), dtype=np.float32)
    c = xai.compare_methods(
        model,
        X[:3],
        methods=("ig", "shap"),
        method_options={
            "ig": {"steps": 8},
            "shap": {"background": background, "algorithm": "permutation"},
        },
    )
    assert c.matrices["cosine"].loc["ig", "shap"] > 0.999
    assert c.matrices["cosine"].loc["shap", "shap"] == 1.0


def test_bad_arguments():
    """Unknown methods and backends, too few methods and unknown method options fail first."""
    model = LinearModel(np.eye(2))
    with pytest.raises(xai.UnknownNameError):
        xai.compare_backends(model, np.ones((1, 2)), method="nope")
    with pytest.raises(xai.UnknownNameError):
        xai.compare_backends(model, np.ones((1, 2)), backends=("cpu", "abacus"))
    with pytest.raises(xai.ValidationError, match="non-empty sequence"):
        xai.compare_backends(model, np.ones((1, 2)), backends="tpu")
    with pytest.raises(xai.ValidationError, match="at least two"):
        xai.compare_methods(model, np.ones((1, 2)), methods=("ig",))
    with pytest.raises(xai.ValidationError, match="not compared"):
        xai.compare_methods(
            model, np.ones((1, 2)), methods=("ig", "shap"), method_options={"lime": {}}
        )


def test_analyses_render_in_reports():
    """Backend and method comparisons and faithfulness render as report sections, images side by side."""
    rng = np.random.default_rng(3)
    model = LinearModel(rng.normal(size=(64, 2)), input_shape=(8, 8))
    X = rng.random((3, 8, 8)).astype(np.float32)
    backends = xai.compare_backends(model, X, method="ig", backends=("cpu", "gpu"), steps=4)
    methods = xai.compare_methods(
        model, X, methods=("ig", "gradient_x_input"), method_options={"ig": {"steps": 4}}
    )
    faith = xai.faithfulness(model, backends.explanations["cpu"], steps=4, n_random=2)
    html = xai.Report("analyses").add(backends).add(methods).add(faith).to_html()
    assert "ig: gpu agrees with cpu within rounding. No prediction flips." in html
    assert "ig and gradient_x_input agree on cpu" in html
    assert "deletion AUC" in html
    charts = [  # the curves are an SVG drawn as an image, so sanitisers keep them
        base64.b64decode(uri).decode()
        for uri in re.findall(r'class="xai-lines" src="data:image/svg\+xml;base64,([^"]+)"', html)
    ]
    assert len(charts) == 1 and "<polyline" in charts[0]
    assert html.count('class="xai-heatmap"') >= 2 * 3 * 2
    for result in (backends, methods, faith):
        assert 'class="xai-analysis"' in result._repr_html_()


@pytest.fixture(scope="module")
def mnist_mlp():
    """An MLP trained briefly on the bundled MNIST sample, and 8 test digits."""
    from xai_datasets import load_mnist

    train, test = load_mnist("train"), load_mnist("test")
    net = xai.nn.mlp(784, hidden=(32,), n_outputs=10, activation="relu", seed=0)
    net.fit(
        train.X,
        train.y,
        optimizer="adam",
        learning_rate=3e-3,
        batch_size=64,
        epochs=3,
        progress=False,
    )
    return net, train.X, test.X[:8]


@pytest.mark.slow
def test_mnist_deletion_beats_random_for_ig_and_shap(mnist_mlp):
    """On an MNIST network the deletion curves of IG and SHAP fall faster than a random ranking's."""
    net, _, X = mnist_mlp
    ig = xai.explain(net, X, method="ig", steps=16)
    shap = xai.explain(
        net,
        X,
        method="shap",
        algorithm="kernel",
        max_evals=300,
        patch_size=4,
        image_shape=(28, 28),
        background=np.zeros((1, 784), np.float32),
        progress=False,
    )
    for e in (ig, shap):
        s = xai.faithfulness(net, e, steps=10, n_random=3).summary.mean()
        assert s.deletion_auc < s.random_deletion_auc, e.method
        assert s.insertion_auc > s.random_insertion_auc, e.method


@pytest.mark.slow
def test_mnist_int8_figures_and_flips_are_reported(mnist_mlp):
    """On MNIST the tpu and edgetpu figures are reported against cpu, with a per-row flip flag."""
    net, train_X, X = mnist_mlp
    c = xai.compare_backends(
        net,
        X,
        method="shap",
        backends=("cpu", "tpu", "edgetpu"),
        calibration=train_X[:300],
        algorithm="kernel",
        max_evals=200,
        patch_size=7,
        image_shape=(28, 28),
        background=np.zeros((1, 784), np.float32),
        progress=False,
    )
    assert list(c.summary.index) == ["cpu", "tpu", "edgetpu"]
    for name in ("tpu", "edgetpu"):
        assert 0.5 < c.summary.loc[name, "mean_cosine"] <= 1.0
    runner = xai.ModelRunner(xai.quantize(net, train_X[:300], progress=False), "edgetpu")
    flips = runner.predict(X).argmax(1) != net.predict(X).argmax(1)
    np.testing.assert_array_equal(c.rows[c.rows.backend == "edgetpu"]["flipped"].to_numpy(), flips)


def test_flipped_rows_are_flagged_in_the_report(linear):
    """A row whose prediction flips on a backend is flagged beside its heatmaps."""
    import dataclasses

    rng = np.random.default_rng(4)
    model = LinearModel(rng.normal(size=(64, 2)), input_shape=(8, 8))
    c = xai.compare_backends(
        model, rng.random((2, 8, 8)), method="ig", backends=("cpu", "gpu"), steps=4
    )
    rows = c.rows.copy()
    rows.loc[(rows.backend == "gpu") & (rows.row == 1), "flipped"] = True
    flagged = dataclasses.replace(c, rows=rows)
    assert flagged.flipped_rows[["backend", "row"]].values.tolist() == [["gpu", 1]]
    html = flagged._repr_html_()
    assert html.count("(prediction flipped)") == 1 and "Predictions flip on gpu (1 of 2)." in html


def test_seed_noise_sets_the_bar_for_stochastic_methods():
    """With n_seeds, a stochastic method's own spread decides which backend differences count."""
    rng = np.random.default_rng(5)
    net = xai.nn.mlp(6, hidden=(8,), n_outputs=2, activation="tanh", seed=2)
    X = rng.normal(size=(3, 6)).astype(np.float32)
    train = rng.normal(size=(100, 6)).astype(np.float32)
    c = xai.compare_backends(
        net,
        X,
        method="lime",
        backends=("cpu", "tpu"),
        n_seeds=3,
        n_samples=300,
        background=train,
        stability_seeds=0,
        progress=False,
    )
    assert c.noise is not None and sorted(c.noise["seed"].unique()) == [1, 2]
    spread = c.noise.groupby("row")["max_rel_diff"].max().to_numpy()
    tpu = c.rows[c.rows.backend == "tpu"]
    threshold = np.maximum(spread, 16 * 2.0**-8)  # the seed spread, or bf16 rounding
    np.testing.assert_array_equal(tpu["threshold"].to_numpy(), threshold)
    np.testing.assert_array_equal(
        tpu["beyond_noise"].to_numpy(), tpu["max_rel_diff"].to_numpy() > threshold
    )
    assert c.summary.loc["cpu", "beyond_noise"] == 0
    decision = c.verdict.decisions[0]
    assert decision.basis == "seed noise" and decision.threshold == threshold.max()


def test_backend_grid_shows_difference_maps_on_shared_scales():
    """Per-backend heatmaps of a row share one scale; each backend minus cpu follows on its own."""
    rng = np.random.default_rng(4)
    model = LinearModel(rng.normal(size=(64, 2)), input_shape=(8, 8))
    X = rng.random((2, 8, 8)).astype(np.float32)
    c = xai.compare_backends(model, X, method="ig", backends=("cpu", "gpu", "tpu"), steps=4)
    assert list(c.explanations) == ["cpu", "gpu", "tpu"]
    html = xai.report.render_fragment(c)
    assert html.count('alt="difference map of row') == 2 * 2
    assert "tpu − cpu" in html and "gpu − cpu" in html
    assert re.search(r'class="xai-heatmap" src="[^"]+" width="168" height="168"', html)
    # each row's two labelled colour bars, their ends said in the alt text
    labels = re.findall(
        r'class="xai-scale" src="[^"]+" width="\d+" height="\d+" alt="Colour bar of the '
        r'(heatmaps|difference maps) from ([^ ]+) \(blue\) through 0 \(white\) to ([^ ]+) \(red\)"',
        html,
    )
    grey = {k: e.values.reshape(2, -1) for k, e in c.explanations.items()}
    for row in range(2):
        shared = max(np.abs(v[row]).max() for v in grey.values())
        diff = max(np.abs(grey[k][row] - grey["cpu"][row]).max() for k in ("gpu", "tpu"))
        (_, _, top_maps), (_, _, top_diffs) = labels[2 * row : 2 * row + 2]
        assert float(top_maps) == pytest.approx(shared, rel=1e-2)
        assert float(top_diffs) == pytest.approx(diff, rel=1e-2)
