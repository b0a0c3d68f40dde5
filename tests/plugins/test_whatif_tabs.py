"""The What-If Tool's other tabs: neighbours, feature distributions, two models, ROC/PR curves.

Oracles: scikit-learn's NearestNeighbors on the standardised data, pandas' describe and
numpy's histogram, the estimators' own predictions, scikit-learn's accuracy and ROC curves,
and xai.explain on each model alone.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, roc_curve
from sklearn.neighbors import NearestNeighbors
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

import xai_core as xai
from xai_datasets import load_breast_cancer


@pytest.fixture(scope="module")
def data():
    ds = load_breast_cancer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lr = make_pipeline(StandardScaler(), LogisticRegression(max_iter=200)).fit(
            ds.X[::2], ds.y[::2]
        )
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(ds.X[1::2], ds.y[1::2])
    return ds, lr, tree


def _session(data):
    ds, lr, _ = data
    return xai.what_if(
        lr, ds.X, ds.y, feature_names=ds.feature_names, output_names=ds.class_names, progress=False
    )


@pytest.mark.parametrize(("kind", "metric"), [("l1", "manhattan"), ("l2", "euclidean")])
def test_neighbors_equal_scikit_learns_on_the_standardised_data(data, kind, metric):
    """The What-If Tool's distance on numeric features is L1/L2 on features divided by their std."""
    w = _session(data)
    X = w.X / w.X.std(axis=0)
    nn = NearestNeighbors(n_neighbors=6, metric=metric).fit(X)
    dist, index = nn.kneighbors(X[[7]])
    assert index[0, 0] == 7  # the row itself, which neighbors() leaves out
    n = w.neighbors(7, k=5, distance=kind)
    np.testing.assert_array_equal(n.index, index[0, 1:])
    np.testing.assert_allclose(n.distances, dist[0, 1:], rtol=1e-10)
    np.testing.assert_array_equal(n.predicted, w.predicted[n.index])
    np.testing.assert_array_equal(n.table["true"].to_numpy(), w.y[n.index])
    assert "The 5 examples nearest row 7" in n._repr_html_()


def test_neighbors_follow_edits_and_check_k(data):
    """An edited row has new neighbours; k is capped by the data and checked."""
    w = _session(data)
    before = w.neighbors(0, k=3).index
    w.edit(0, dict(zip(w.feature_names, w.X[300])))
    after = w.neighbors(0, k=3)
    assert not np.array_equal(before, after.index) and after.distances[0] == 0.0
    assert after.index[0] == 300
    with pytest.raises(xai.ValidationError, match="k"):
        w.neighbors(0, k=0)
    small = xai.what_if(data[1], data[0].X[:3], progress=False)
    assert len(small.neighbors(0, k=10)) == 2


def test_feature_stats_equal_pandas_describe_and_numpy_histograms(data):
    """Per slice and feature: describe()'s statistics; histograms on shared edges sum to the whole."""
    w = _session(data)
    s = w.feature_stats("mean radius", bins=8, slice_bins=3)
    frame = pd.DataFrame(w.X, columns=w.feature_names)
    assert len(s.slices) == 3 and s.table.shape == (3 * 30, 9)
    total = np.zeros(8, dtype=np.int64)
    for k, label in enumerate(s.slices):
        rows = s.table.xs(label, level="slice")
        sel = frame.loc[_slice_rows(w, k, 3)]
        described = sel.describe().T
        for col in ("count", "mean", "std", "min", "25%", "50%", "75%", "max"):
            np.testing.assert_allclose(rows[col].to_numpy(), described[col].to_numpy(), rtol=1e-12)
        np.testing.assert_allclose(rows["zeros"], (sel == 0).mean().to_numpy())
        counts = s.histograms["mean texture"][label]
        np.testing.assert_array_equal(
            counts, np.histogram(sel["mean texture"], bins=s.edges["mean texture"])[0]
        )
        total += counts
    np.testing.assert_array_equal(total, np.histogram(frame["mean texture"], bins=8)[0])
    html = s._repr_html_()
    assert "Feature distributions by mean radius" in html and "more rows not shown" in html


def _slice_rows(w, k, bins):
    """Rows of quantile bin ``k`` of "mean radius": [low, high), the last bin closed (the docs' rule)."""
    x = w.X[:, w.feature_names.index("mean radius")]
    edges = np.quantile(x, np.linspace(0, 1, bins + 1))
    upper = x <= edges[k + 1] if k == bins - 1 else x < edges[k + 1]
    return np.flatnonzero((x >= edges[k]) & upper)


def test_feature_stats_count_categories_and_refuse_images():
    """A categorical column is counted per category and slice; image sessions are refused."""
    frame = pd.DataFrame(
        {"size": [1.0, 2.0, 3.0, 4.0], "colour": pd.Categorical(["red", "blue", "red", "red"])}
    )
    w = xai.what_if(lambda X: np.c_[1 - X[:, :1] / 5, X[:, :1] / 5], frame, progress=False)
    s = w.feature_stats()
    assert s.categories["colour"]["all"] == {"blue": 1, "red": 3}
    assert s.table.loc[("all", "colour"), "count"] == 4
    assert np.isnan(s.table.loc[("all", "colour"), "mean"])
    images = xai.what_if(lambda X: np.c_[X.mean(axis=(1, 2)), 1 - X.mean(axis=(1, 2))],
                         np.zeros((3, 8, 8)), progress=False)  # fmt: skip
    with pytest.raises(xai.CapabilityError, match="images"):
        images.feature_stats()


def test_two_models_side_by_side(data):
    """Each session's predictions are its model's; disagreement, accuracy as scikit-learn's."""
    ds, lr, tree = data
    w = _session(data)
    c = w.compare_models(tree, names=("logistic", "tree"))
    X32 = ds.X.astype(np.float32)
    pred_lr, pred_tree = lr.predict(X32), tree.predict(X32)
    np.testing.assert_array_equal(c.predicted, np.stack([pred_lr, pred_tree]))
    np.testing.assert_array_equal(c.disagree, pred_lr != pred_tree)
    assert c.accuracy == pytest.approx(
        (accuracy_score(ds.y, pred_lr), accuracy_score(ds.y, pred_tree))
    )
    table = c.table()
    np.testing.assert_array_equal(table.index, np.flatnonzero(pred_lr != pred_tree))
    assert list(table.columns) == ["logistic predicted", "tree predicted", "true"]
    html = c._repr_html_()
    assert f"they disagree on {int((pred_lr != pred_tree).sum())}" in html
    with pytest.raises(xai.ValidationError, match="names"):
        w.compare_models(tree, names=("same", "same"))


def test_an_edit_reaches_both_models_and_both_explain_it(data):
    """compare.edit changes the row in both sessions; explain gives each model's own attributions."""
    ds, lr, tree = data
    w = _session(data)
    c = w.compare_models(tree, names=("logistic", "tree"))
    first, second = c.edit(3, {"worst radius": 30.0, "mean texture": 10.0})
    x = ds.X[3].copy()
    x[list(ds.feature_names).index("worst radius")] = 30.0
    x[list(ds.feature_names).index("mean texture")] = 10.0
    np.testing.assert_allclose(
        first.after, lr.predict_proba(x[None].astype(np.float32))[0], rtol=1e-6
    )
    np.testing.assert_allclose(second.after, tree.predict_proba(x[None].astype(np.float32))[0])
    assert np.array_equal(c.sessions[0].X[3], c.sessions[1].X[3])
    background = ds.X[:50]
    e_lr, e_tree = c.explain(3, method="shap", background=background, seed=0, progress=False)
    direct = xai.explain(tree, x[None], method="shap", background=background, seed=0,
                         feature_names=ds.feature_names, progress=False)  # fmt: skip
    np.testing.assert_allclose(e_tree.values, direct.values)
    assert e_lr.values.shape == e_tree.values.shape and not np.allclose(e_lr.values, e_tree.values)
    c.revert()
    np.testing.assert_array_equal(c.sessions[1].X[3], ds.X[3])
    np.testing.assert_array_equal(c.sessions[0].X[3], ds.X[3])


def test_roc_and_pr_curves_are_drawn_with_each_slices_threshold(data):
    """Slices and thresholds draw scikit-learn's curves, one line per slice, a dot at its threshold."""
    w = _session(data)
    s = w.slices("mean radius", bins=2, threshold=0.4)
    html = s._repr_html_()
    assert html.count('aria-label="ROC per slice"') == 1
    assert html.count("<polyline") == 2 * len(s.curves) and html.count("threshold 0.4<") == 2 * len(
        s.curves
    )
    t = w.thresholds("mean radius", "equal_opportunity", bins=2)
    score = w.outputs[:, 1]
    for k, curve in enumerate(t.curves.values()):
        rows = _slice_rows(w, k, 2)
        fpr, tpr, _ = roc_curve(w.y[rows] == 1, score[rows])
        np.testing.assert_array_equal(curve["roc"]["fpr"], fpr)
        np.testing.assert_array_equal(curve["roc"]["tpr"], tpr)
    assert "Precision-recall" in t._repr_html_() and "each slice&#39;s threshold" in t._repr_html_()


def test_the_performance_tab_follows_the_threshold_slider_and_the_strategies(data):
    """The slider redraws each slice's confusion matrix (scikit-learn's at that threshold);
    a strategy sets its thresholds and the cost; custom uses the slider again."""
    from sklearn.metrics import confusion_matrix

    w = _session(data)
    tab = w.performance("mean radius", bins=2)
    state = tab.state
    tab.threshold.value = 0.8
    score = w.outputs[:, 1]
    for k, cm in enumerate(state.slices.confusion.values()):
        rows = _slice_rows(w, k, 2)
        np.testing.assert_array_equal(cm, confusion_matrix(w.y[rows], score[rows] >= 0.8))
    t = state.slices.table
    tab.cost_ratio.value = 3.0
    assert state.cost == pytest.approx(3.0 * t["fp"].sum() + t["fn"].sum())
    assert "threshold 0.8<" in tab.panel.value
    tab.strategy.value = "demographic_parity"
    assert tab.threshold.disabled and state.choice.strategy == "demographic_parity"
    expected = w.thresholds("mean radius", "demographic_parity", cost_ratio=3.0, bins=2)
    assert state.choice.thresholds == expected.thresholds and state.cost == expected.cost
    assert "Strategy demographic_parity" in tab.panel.value
    tab.strategy.value = "custom"
    assert not tab.threshold.disabled and state.choice is None
    with pytest.raises(xai.UnknownNameError, match="strategy"):
        state.update(strategy="fairest")


def test_the_reports_threshold_slider_carries_scikit_learns_counts(data):
    """The slider's data: each slice's confusion counts at every grid threshold, as scikit-learn's."""
    import json

    from sklearn.metrics import confusion_matrix

    w = _session(data)
    s = w.slices("mean radius", bins=2, threshold=0.3)
    html = s._repr_html_()
    block = html.split('class="xai-whatif-threshold-data">', 1)[1].split("</script>", 1)[0]
    payload = json.loads(block)
    score = w.outputs[:, 1]
    for k in (0, 17, 30, 50, 99, 100):
        t = payload["grid"][k]
        for i, counts in enumerate(payload["slices"]):
            rows = _slice_rows(w, i, 2)
            tn, fp, fn, tp = confusion_matrix(w.y[rows], score[rows] >= t, labels=[0, 1]).ravel()
            assert [counts[key][k] for key in ("tn", "fp", "fn", "tp")] == [tn, fp, fn, tp]
    assert 'value="30"' in html and '<script type="text/html" class="xai-live">' in html
