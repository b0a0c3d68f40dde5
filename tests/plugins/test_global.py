"""Permutation importance against scikit-learn, ALE against its definition and a plain loop."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.inspection import permutation_importance as sk_permutation_importance
from sklearn.linear_model import LinearRegression, LogisticRegression

import xai_core as xai
import xai_global
from xai_core.plugin.manager import get_registry, register_plugin, reset_registry
from xai_core.testing import check_report_section


@pytest.fixture(scope="module", autouse=True)
def _registered():
    """The plugin as its entry point registers it (registered here when not installed)."""
    reset_registry()
    if "permutation_importance" not in get_registry().tools:
        register_plugin(xai_global)
    yield
    reset_registry()


def _regression(n=120, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X @ np.arange(1.0, d + 1) + np.sin(3 * X[:, 0]) + 0.3 * rng.normal(size=n)
    return X, y


def _classification(n=150, d=4, classes=3, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    score = X[:, 0] + 0.5 * X[:, 1] - 0.25 * X[:, 2]
    y = np.digitize(score + 0.3 * rng.normal(size=n), np.quantile(score, [1 / 3, 2 / 3]))
    return X, (y if classes == 3 else (y > 0).astype(int))


def _same(ours, sk):
    np.testing.assert_allclose(ours.importances, sk.importances, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours.importances_mean, sk.importances_mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours.importances_std, sk.importances_std, rtol=1e-12, atol=1e-12)


# -- permutation importance ----------------------------------------------------------------
@pytest.mark.parametrize(
    "estimator, scoring, n_repeats, seed",
    [
        (LinearRegression(), None, 5, 0),
        (LinearRegression(), "neg_mean_squared_error", 3, 7),
        (RandomForestRegressor(n_estimators=10, random_state=0), "r2", 4, 42),
        (RandomForestRegressor(n_estimators=10, random_state=0), "neg_mean_absolute_error", 1, 3),
    ],
    ids=["linear-default", "linear-mse", "forest-r2", "forest-mae-1repeat"],
)
def test_regression_equals_sklearn(estimator, scoring, n_repeats, seed):
    """The importances of every repeat are scikit-learn's for the same random_state."""
    X, y = _regression()
    est = estimator.fit(X, y)
    ours = xai.permutation_importance(est, X, y, scoring=scoring, n_repeats=n_repeats, seed=seed)
    sk = sk_permutation_importance(
        est, X, y, scoring=scoring, n_repeats=n_repeats, random_state=seed
    )
    _same(ours, sk)
    assert ours.scorer == (scoring or "r2") and ours.seed == seed


@pytest.mark.parametrize(
    "classes, scoring",
    [
        (3, None),
        (3, "neg_log_loss"),
        (3, "balanced_accuracy"),
        (3, "f1_macro"),
        (3, "roc_auc_ovr"),
        (2, "roc_auc"),
        (2, "f1"),
    ],
    ids=["3-accuracy", "3-log-loss", "3-balanced", "3-f1-macro", "3-auc-ovr", "2-auc", "2-f1"],
)
def test_classification_equals_sklearn(classes, scoring):
    """Classifier scorers, read from the probabilities, give scikit-learn's importances."""
    X, y = _classification(classes=classes)
    for est in (LogisticRegression(), RandomForestClassifier(n_estimators=10, random_state=0)):
        est.fit(X, y)
        ours = xai.permutation_importance(est, X, y, scoring=scoring, n_repeats=3, seed=5)
        sk = sk_permutation_importance(est, X, y, scoring=scoring, n_repeats=3, random_state=5)
        _same(ours, sk)


def test_several_scorers_equal_sklearns_dict():
    """A list of scorers gives one result per scorer, as scikit-learn's dict."""
    X, y = _regression()
    est = LinearRegression().fit(X, y)
    names = ["r2", "neg_mean_squared_error", "neg_max_error"]
    ours = xai.permutation_importance(est, X, y, scoring=names, n_repeats=3, seed=1)
    sk = sk_permutation_importance(est, X, y, scoring=names, n_repeats=3, random_state=1)
    assert list(ours) == names
    for name in names:
        _same(ours[name], sk[name])


def test_dataframe_input_equals_sklearn():
    """A DataFrame's columns name the features; an estimator fitted on it sees a DataFrame."""
    X, y = _regression()
    frame = pd.DataFrame(X, columns=["age", "<b>income</b>", "rooms", "zip"])
    est = RandomForestRegressor(n_estimators=8, random_state=0).fit(frame, y)
    ours = xai.permutation_importance(est, frame, y, n_repeats=2, seed=9)
    _same(ours, sk_permutation_importance(est, frame, y, n_repeats=2, random_state=9))
    assert ours.feature_names == tuple(frame.columns)


class _Wrapped(RegressorMixin, BaseEstimator):
    """A network behind scikit-learn's estimator interface, for scikit-learn's loop."""

    def __init__(self, runner=None):
        self.runner = runner

    def fit(self, X, y):
        return self

    def predict(self, X):
        return self.runner.predict(X)[:, 0]


@pytest.mark.parametrize("backend", ["cpu", "tpu"])
def test_native_network_equals_sklearns_loop(backend):
    """A native network on a backend: scikit-learn's loop over the same runner agrees."""
    X, y = _regression(n=60, d=3)
    net = xai.nn.mlp(3, hidden=(5,), n_outputs=1, output="linear", seed=2, dtype="float64")
    runner = xai.ModelRunner(net, backend=backend)
    ours = xai.permutation_importance(runner, X, y, n_repeats=3, seed=4)
    sk = sk_permutation_importance(_Wrapped(runner), X, y, n_repeats=3, random_state=4)
    np.testing.assert_allclose(ours.importances, sk.importances, rtol=1e-9, atol=1e-9)


def test_all_permutations_of_a_block_in_one_model_call(monkeypatch):
    """Every permuted copy goes in one model call; a smaller block gives the same values."""
    X, y = _regression(n=50, d=4)
    calls = []

    def f(batch):
        calls.append(len(batch))
        return batch @ np.array([1.0, -2.0, 0.5, 0.0]) + batch[:, 0] ** 2

    one = xai.permutation_importance(f, X, y, n_repeats=3, seed=0)
    assert calls == [50, 50 * 4 * 3]  # the baseline, then all 12 permuted copies
    monkeypatch.setattr("xai_global.permutation.BLOCK_FLOATS", 50 * 4 * 5)
    calls.clear()
    blocks = xai.permutation_importance(f, X, y, n_repeats=3, seed=0)
    assert calls == [50, 250, 250, 100]
    np.testing.assert_array_equal(one.importances, blocks.importances)
    assert np.all(one.importances_mean[3] == 0.0)  # a feature the model ignores


def test_callable_scoring_and_a_drawn_seed():
    """scoring may be f(y, outputs); seed=None draws a seed and records it."""
    X, y = _regression()
    est = LinearRegression().fit(X, y)

    def neg_sse(y_true, outputs):
        return -float(np.sum((y_true - outputs[:, 0]) ** 2))

    r = xai.permutation_importance(est, X, y, scoring=neg_sse, seed=None, n_repeats=2)
    assert r.scorer == "neg_sse"
    again = xai.permutation_importance(est, X, y, scoring=neg_sse, seed=r.seed, n_repeats=2)
    np.testing.assert_array_equal(r.importances, again.importances)


def test_permutation_importance_errors():
    """y of the wrong length, unknown scorers, n_repeats < 1 and bad labels fail clearly."""
    X, y = _regression()
    est = LinearRegression().fit(X, y)
    with pytest.raises(xai.ShapeError, match=r"y must have shape \(120,\).*\(119,\)"):
        xai.permutation_importance(est, X, y[:-1])
    with pytest.raises(xai.UnknownNameError, match=r"Unknown scorer.*'r3'.*Available: accuracy"):
        xai.permutation_importance(est, X, y, scoring="r3")
    with pytest.raises(xai.ValidationError, match="n_repeats"):
        xai.permutation_importance(est, X, y, n_repeats=0)
    with pytest.raises(xai.ValidationError, match="seed"):
        xai.permutation_importance(est, X, y, seed=-1)
    Xc, yc = _classification()
    clf = LogisticRegression().fit(Xc, yc)
    with pytest.raises(xai.ValidationError, match=r"the estimator's classes \[0, 1, 2\]"):
        xai.permutation_importance(clf, Xc, yc + 1)
    with pytest.raises(xai.ValidationError, match=r"class indices 0 \.\. 2"):
        xai.permutation_importance(lambda b: clf.predict_proba(b), Xc, yc + 1)
    with pytest.raises(xai.ValidationError, match=r"seed must be below 2\*\*32"):
        xai.permutation_importance(est, X, y, seed=2**32)
    with pytest.raises(xai.ValidationError, match="roc_auc_ovr"):
        xai.permutation_importance(clf, Xc, yc, scoring="roc_auc")


# -- ALE -------------------------------------------------------------------------------------
def brute_ale(predict, X, j, grid_size, output=0):
    """ALE of feature j written plainly: PyALE's quantiles, bins and centring, one row at a time."""
    values = sorted(float(v) for v in X[:, j])
    m = len(values) - 1
    quantiles = []
    for i in range(grid_size + 1):
        q = i / grid_size
        if i == 0:
            quantiles.append(values[0])
        elif i == grid_size:
            quantiles.append(values[-1])
        else:
            position = m * q
            k = int(position)
            quantiles.append(values[k - 1] if position == k else values[k])
    edges = sorted(set([values[0]] + quantiles))
    sums = [0.0] * (len(edges) - 1)
    counts = [0] * (len(edges) - 1)
    for row in X:
        v = row[j]
        b = 0
        while not (v <= edges[b + 1]):
            b += 1
        low, high = row.copy(), row.copy()
        low[j], high[j] = edges[b], edges[b + 1]
        sums[b] += predict(high[None])[0, output] - predict(low[None])[0, output]
        counts[b] += 1
    accumulated = [0.0]
    for s, c in zip(sums, counts):
        accumulated.append(accumulated[-1] + (s / c if c else 0.0))
    mean = sum(c * (accumulated[b] + accumulated[b + 1]) / 2 for b, c in enumerate(counts)) / sum(
        counts
    )
    return np.array(edges), np.array([a - mean for a in accumulated]), np.array(counts)


def _additive(X):
    return (np.sin(2 * X[:, 0]) + X[:, 1] ** 3 - 2 * X[:, 2])[:, None]


def test_ale_of_an_additive_model_is_each_term_centred():
    """f = sum g_j(x_j): the curve's steps are g_j's steps at the edges, and its mean is 0."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 3))
    X[:, 1] = rng.integers(-3, 4, 200)  # ties: repeated quantiles merge bins
    terms = [lambda v: np.sin(2 * v), lambda v: v**3, lambda v: -2 * v]
    a = xai.ale(_additive, X, grid_size=15)
    for j, g in enumerate(terms):
        edges, effect = a.edges[j], a.effects[j][:, 0]
        np.testing.assert_allclose(np.diff(effect), np.diff(g(edges)), atol=1e-12)
        mids = (effect[:-1] + effect[1:]) / 2
        assert abs(np.sum(a.counts[j] * mids)) < 1e-10
        assert a.counts[j].sum() == 200
    assert len(a.edges[1]) == 7  # the seven values -3 .. 3


def test_ale_of_a_linear_model_is_a_line_of_its_slope():
    """A linear regression's ALE is a straight line of slope w_j through every edge."""
    X, y = _regression(n=300, d=3)
    est = LinearRegression().fit(X, y)
    a = xai.ale(est, X, grid_size=10)
    for j in range(3):
        slopes = np.diff(a.effects[j][:, 0]) / np.diff(a.edges[j])
        np.testing.assert_allclose(slopes, est.coef_[j], rtol=1e-9)


@pytest.mark.parametrize("grid_size", [1, 4, 20, 80], ids=lambda g: f"grid{g}")
def test_ale_equals_a_plain_loop_for_regression(grid_size):
    """Edges, counts and the centred curve equal a row-by-row loop."""
    X, y = _regression(n=60, d=3, seed=4)
    X[:, 2] = np.round(X[:, 2])
    est = RandomForestRegressor(n_estimators=5, random_state=0).fit(X, y)
    a = xai.ale(est, X, grid_size=grid_size)

    def predict(rows):
        return est.predict(rows)[:, None]

    for j in range(3):
        edges, effect, counts = brute_ale(predict, X, j, grid_size)
        np.testing.assert_array_equal(a.edges[j], edges)
        np.testing.assert_array_equal(a.counts[j], counts)
        np.testing.assert_allclose(a.effects[j][:, 0], effect, atol=1e-12)


def test_ale_equals_a_plain_loop_for_each_class_probability():
    """A classifier: one curve per class probability; the curves sum to zero."""
    X, y = _classification(n=80)
    est = RandomForestClassifier(n_estimators=6, random_state=0).fit(X, y)
    a = xai.ale(est, X, ["x0", 2], grid_size=8)
    assert a.features == ("x0", "x2") and a.output_names == ("0", "1", "2")
    for f, j in enumerate((0, 2)):
        for c in range(3):
            _, effect, _ = brute_ale(est.predict_proba, X, j, 8, output=c)
            np.testing.assert_allclose(a.effects[f][:, c], effect, atol=1e-12)
        np.testing.assert_allclose(a.effects[f].sum(axis=1), 0.0, atol=1e-12)


def test_ale_runs_every_feature_in_one_model_call():
    """Both edges of every feature go to the model in one call."""
    X = np.random.default_rng(0).normal(size=(40, 3))
    calls = []

    def f(batch):
        calls.append(len(batch))
        return _additive(batch)

    xai.ale(f, X)
    assert calls == [2 * 3 * 40]


def test_ale_on_a_native_network_on_two_backends():
    """A float64 network: the cpu curve equals the plain loop; the tpu's is close (bf16)."""
    X = np.random.default_rng(5).normal(size=(30, 2))
    net = xai.nn.mlp(2, hidden=(4,), n_outputs=2, seed=1, dtype="float64")
    cpu = xai.ale(net, X, grid_size=5)
    tpu = xai.ale(net, X, grid_size=5, backend="tpu")
    _, effect, _ = brute_ale(net.predict, X, 1, 5, output=1)
    np.testing.assert_allclose(cpu.effects[1][:, 1], effect, atol=1e-12)
    np.testing.assert_allclose(tpu.effects[1], cpu.effects[1], atol=0.05)


def test_ale_errors():
    """Non-numeric columns, constant features, unknown features and a bad grid fail clearly."""
    X = np.random.default_rng(0).normal(size=(20, 2))
    frame = pd.DataFrame({"a": X[:, 0], "colour": ["red", "blue"] * 10})
    with pytest.raises(xai.ValidationError, match="'colour' has dtype .*numeric"):
        xai.ale(lambda b: b[:, :1], frame)
    with pytest.raises(xai.ValidationError, match="numbers"):
        xai.ale(lambda b: b[:, :1], np.array([["a", "b"]] * 3))
    X[:, 1] = 2.0
    with pytest.raises(xai.ValidationError, match=r"feature 'x1' has one value \(2\)"):
        xai.ale(lambda b: b[:, :1], X)
    with pytest.raises(xai.UnknownNameError, match=r"'nope'.*Available: x0, x1"):
        xai.ale(lambda b: b[:, :1], X, "nope")
    with pytest.raises(xai.ValidationError, match="grid_size"):
        xai.ale(lambda b: b[:, :1], X, 0, grid_size=0)


# -- results, reports, the facade ------------------------------------------------------------
def _results(name):
    X, y = _classification(n=60)
    frame = pd.DataFrame(X, columns=[f"{name} {j}" for j in range(4)])
    est = LogisticRegression().fit(X, y)
    pi = xai.permutation_importance(est, frame.to_numpy(), y, feature_names=frame.columns, seed=0)
    a = xai.ale(est, frame, grid_size=5, output_names=[f"{name} class {c}" for c in range(3)])
    return pi, a


def test_sections_keep_the_report_contract():
    """Both sections escape every name, render deterministically and self-contained."""
    sections = {s.name: s for s in xai_global.xai_register_report_sections()}
    check_report_section(sections["global_permutation_importance"], lambda n: _results(n)[0])
    check_report_section(sections["global_ale"], lambda n: _results(n)[1])


@pytest.mark.filterwarnings("ignore:Glyph")  # CJK names in DejaVu Sans
def test_frames_plots_and_a_report(tmp_path, hostile):
    """to_frame, plot and Report.add work, and a hostile name is escaped in notebooks."""
    pi, a = _results(hostile)
    frame = pi.to_frame()
    assert list(frame.columns[:2]) == ["importance_mean", "importance_std"]
    assert frame["importance_mean"].is_monotonic_decreasing and len(frame) == 4
    long = a.to_frame()
    assert set(long["output"]) == set(a.output_names) and len(long) == 3 * sum(
        len(e) for e in a.edges
    )
    curve = a.curve(0, output=2)
    np.testing.assert_array_equal(curve["eff"].to_numpy(), a.effects[0][:, 2])
    for html in (pi._repr_html_(), a._repr_html_()):
        assert "<script>alert(" not in html and "<img src=x" not in html
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    assert pi.plot().get_xlabel() == "decrease in accuracy"
    assert a.plot(0).get_xlabel() == a.features[0]
    assert len(a.plot().axes) >= 4
    plt.close("all")
    path = xai.Report("global", seed=0).add(pi).add(a).save(tmp_path / "r.html")
    page = path.read_text()
    assert "Permutation importance" in page and "Accumulated local effects" in page


def test_facade_shows_the_tools_signatures():
    """xai.permutation_importance and xai.ale are the registered tools."""
    for name in ("permutation_importance", "ale"):
        facade = getattr(xai, name)
        assert inspect.signature(facade) == inspect.signature(xai.tool(name).function)
        assert facade.__doc__ == xai.tool(name).function.__doc__
    assert {"scoring", "n_repeats", "seed"} <= set(
        inspect.signature(xai.permutation_importance).parameters
    )


def test_scorer_names_are_sklearns():
    """Every scorer name is one scikit-learn accepts for the same score."""
    from sklearn.metrics import get_scorer_names

    assert set(xai_global.scorers()) <= set(get_scorer_names())


@pytest.mark.parametrize(
    "labels", [np.array(["cat", "dog", "eel"]), np.array([3, 5, 9])], ids=["strings", "ints"]
)
def test_an_estimators_own_labels_equal_sklearn(labels):
    """y in the estimator's classes_ (strings, or ints other than 0..k-1) as scikit-learn reads it."""
    X, y = _classification()
    named = labels[y]
    est = LogisticRegression().fit(X, named)
    for scoring in ("accuracy", "neg_log_loss", "f1_macro"):
        ours = xai.permutation_importance(est, X, named, scoring=scoring, n_repeats=2, seed=3)
        sk = sk_permutation_importance(est, X, named, scoring=scoring, n_repeats=2, random_state=3)
        _same(ours, sk)
    with pytest.raises(xai.ValidationError, match="the estimator's classes"):
        xai.permutation_importance(est, X, np.where(y == 0, labels[1], "fox"), n_repeats=1)


def test_int8_network_on_the_edge_tpu_equals_sklearns_loop():
    """A quantised network on the Edge TPU: scikit-learn's loop over the same runner agrees."""
    X, y = _regression(n=60, d=3)
    net = xai.nn.mlp(3, hidden=(5,), n_outputs=1, output="linear", seed=2)
    runner = xai.ModelRunner(xai.quantize(net, X.astype(np.float32)), backend="edgetpu")
    ours = xai.permutation_importance(runner, X, y, n_repeats=2, seed=1)
    sk = sk_permutation_importance(_Wrapped(runner), X, y, n_repeats=2, random_state=1)
    np.testing.assert_allclose(ours.importances, sk.importances, rtol=1e-9, atol=1e-9)
    a = xai.ale(runner, X, grid_size=4)
    _, effect, _ = brute_ale(lambda rows: runner.predict(rows).astype(np.float64), X, 0, 4)
    np.testing.assert_allclose(a.effects[0][:, 0], effect, atol=1e-12)
