"""The what-if plugin: edits, counterfactuals, partial dependence and fairness against oracles."""

from __future__ import annotations

import base64
import io
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import accuracy_score, confusion_matrix
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import xai_core as xai
from xai_datasets import load_breast_cancer

STRATEGIES = ["single", "group", "demographic_parity", "equal_opportunity", "equal_accuracy"]


@pytest.fixture(scope="module")
def data():
    """Breast cancer and an MLP trained on every other row (so it makes some mistakes)."""
    ds = load_breast_cancer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = make_pipeline(
            StandardScaler(), MLPClassifier((16,), max_iter=60, random_state=0)
        ).fit(ds.X[::2], ds.y[::2])
    return ds, est


@pytest.fixture
def w(data):
    """A fresh session over all 569 rows."""
    ds, est = data
    return xai.what_if(
        est, ds.X, ds.y, feature_names=ds.feature_names, output_names=ds.class_names, progress=False
    )


def proba(est, X):
    """The estimator's probabilities on float32 inputs, as the runner passes them."""
    return est.predict_proba(np.asarray(X, dtype=np.float32))


def brute_distance(X, x, std, kind):
    """The What-If Tool's distance from ``x`` to each row of ``X`` (numeric features)."""
    scaled = np.abs(X - x) / np.where(std > 0, std, 1.0)
    return scaled.sum(axis=1) if kind == "l1" else np.sqrt((scaled**2).sum(axis=1))


def test_tool_is_registered(w):
    """xai.what_if reaches the plugin's tool and returns a WhatIf session."""
    assert type(w).__name__ == "WhatIf"
    assert xai.tool("what_if").function.__module__.startswith("xai_whatif")


def test_edit_changes_prediction_as_the_model_says(w, data):
    """An edit's before/after outputs are the model's outputs on the original and edited rows."""
    ds, est = data
    row = 7
    r = w.edit(row, {"mean radius": 11.0, "worst concave points": 0.02})
    edited = ds.X[row].astype(np.float64).copy()
    edited[list(ds.feature_names).index("mean radius")] = 11.0
    edited[list(ds.feature_names).index("worst concave points")] = 0.02
    np.testing.assert_allclose(r.before, proba(est, ds.X[row : row + 1])[0], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(r.after, proba(est, edited[None])[0], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(r.change, r.after - r.before)
    assert r.predicted_after == int(np.argmax(proba(est, edited[None])[0]))
    assert {c[0] for c in r.changes} == {"mean radius", "worst concave points"}
    np.testing.assert_array_equal(w.X[row], edited)
    np.testing.assert_allclose(w.outputs[row], r.after)
    assert w.history == [r]


def test_revert_and_clone(w):
    """Revert restores the row and its outputs exactly; a clone's edits leave the original alone."""
    x0, out0 = w.X[3].copy(), w.outputs[3].copy()
    w.edit(3, {"mean texture": 20.0})
    w.edit(3, {"mean area": 900.0})
    other = w.clone()
    other.edit(3, {"mean smoothness": 0.1})
    assert len(w.history) == 2 and len(other.history) == 3
    smooth = list(w.feature_names).index("mean smoothness")
    assert w.X[3, smooth] == x0[smooth] and other.X[3, smooth] == 0.1
    w.revert(2)
    np.testing.assert_array_equal(w.X[3], x0)
    np.testing.assert_array_equal(w.outputs[3], out0)
    assert w.history == []
    with pytest.raises(xai.ValidationError, match="at most 0"):
        w.revert()


def test_edit_validation(w):
    """Unknown names list the known ones; out-of-range values warn; bad rows and values raise."""
    with pytest.raises(xai.UnknownNameError, match="mean radius"):
        w.edit(0, {"mean radiu": 1.0})
    with pytest.raises(xai.ValidationError, match=r"\[0, 569\)"):
        w.edit(569, {"mean radius": 12.0})
    with pytest.raises(xai.ValidationError, match="must be a number"):
        w.edit(0, {"mean radius": "big"})
    with pytest.raises(xai.ValidationError, match="changes"):
        w.edit(0, [("mean radius", 1.0)])
    with pytest.warns(xai.XaiWarning, match="outside the observed range"):
        w.edit(0, {"mean radius": 1000.0})


def test_categorical_features_from_a_dataframe():
    """DataFrame categories are coded 0..k-1, edited by label, and unknown labels are refused."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "colour": pd.Categorical(rng.choice(["red", "green", "blue"], 200)),
            "size": rng.normal(size=200),
        }
    )
    codes = frame["colour"].cat.codes.to_numpy()

    def model(X):
        p = 1 / (1 + np.exp(-(X[:, 1] + (X[:, 0] == 2) * 2.0 - 1.0)))
        return np.stack([1 - p, p], axis=1)

    w = xai.what_if(model, frame, progress=False)
    np.testing.assert_array_equal(w.X[:, 0], codes)
    r = w.edit(0, {"colour": "red"})
    assert w.X[0, 0] == list(frame["colour"].cat.categories).index("red")
    np.testing.assert_allclose(r.after, model(w.X[:1])[0], rtol=1e-6)
    with pytest.raises(xai.UnknownNameError, match="blue, green, red"):
        w.edit(0, {"colour": "purple"})
    # distance: a category mismatch costs the probability that two examples share the value
    p = np.bincount(codes) / len(codes)
    x = w.X[5]
    expected = (w.X[:, 0] != x[0]) * np.sum(p**2) + np.abs(w.X[:, 1] - x[1]) / w.X[:, 1].std()
    other = w.predicted != w.predicted[5]
    other[5] = False
    c = w.nearest_counterfactual(5)
    j = np.flatnonzero(other)[np.argmin(expected[other])]
    assert c.index[0] == j
    np.testing.assert_allclose(c.distances[0], expected[j], rtol=1e-9)


@pytest.mark.parametrize("kind", ["l1", "l2", "custom"], ids=["l1", "l2", "custom"])
def test_nearest_counterfactual_equals_brute_force(w, data, kind):
    """The nearest counterfactual is the brute-force nearest row with another predicted class."""
    ds, est = data
    X = ds.X.astype(np.float64)
    pred = np.argmax(proba(est, X), axis=1)
    std = X.std(axis=0)

    def custom(x, C):
        return np.abs(C - x).max(axis=1)

    for row in (0, 19, 100, 300, 568):
        if kind == "custom":
            d = custom(X[row], X)
            c = w.nearest_counterfactual(row, distance=custom)
        else:
            d = brute_distance(X, X[row], std, kind)
            c = w.nearest_counterfactual(row, distance=kind)
        d[(pred == pred[row]) | (np.arange(len(X)) == row)] = np.inf
        assert c.index[0] == int(np.argmin(d))
        np.testing.assert_allclose(c.distances[0], d.min(), rtol=1e-9)
        assert c.predicted[0] != c.predicted_before


def test_nearest_counterfactual_regression_threshold(data):
    """For regression the counterfactual's prediction differs by at least the predictions' std."""
    ds, _ = data
    reg = make_pipeline(StandardScaler(), Ridge()).fit(ds.X, ds.y)
    w = xai.what_if(reg, ds.X, progress=False)
    pred = reg.predict(ds.X.astype(np.float32))
    d = brute_distance(ds.X.astype(np.float64), ds.X[10].astype(np.float64), ds.X.std(0), "l1")
    d[np.abs(pred - pred[10]) < pred.std()] = np.inf
    c = w.nearest_counterfactual(10)
    assert w.task == "regression" and c.index[0] == int(np.argmin(d))


def test_searched_counterfactual_flips_and_beats_the_nearest(w, data):
    """The searched counterfactual flips the model's prediction and is no farther than the nearest."""
    ds, est = data
    X = ds.X.astype(np.float64)
    for row in (0, 19, 300):
        for kind in ("l1", "l2"):
            near = w.nearest_counterfactual(row, distance=kind)
            s = w.counterfactual(row, distance=kind, seed=1)
            cf = s.X[0]
            assert np.argmax(proba(est, cf[None])[0]) != np.argmax(proba(est, X[row : row + 1])[0])
            d = brute_distance(cf[None], X[row], X.std(0), kind)[0]
            np.testing.assert_allclose(s.distances[0], d, rtol=1e-9)
            assert s.distances[0] <= near.distances[0] + 1e-9


def test_counterfactual_constraints_diversity_and_seed(w, data):
    """Immutable features stay, ranges hold, sparsity holds, n diverse results, seeds reproduce."""
    ds, est = data
    row = 19
    names = list(ds.feature_names)
    immutable = ["mean radius", "worst radius", "worst perimeter"]
    x = ds.X[row].astype(np.float64)
    ranges = {"worst area": (x[names.index("worst area")] * 0.8, x[names.index("worst area")])}
    s = w.counterfactual(row, immutable=immutable, ranges=ranges, max_features=3, n=3, seed=5)
    assert len(s) == 3
    flips = np.argmax(proba(est, s.X), axis=1) != w.predicted[row]
    assert flips.all()
    for cf in s.X:
        assert np.count_nonzero(cf != x) <= 3
        for f in immutable:
            assert cf[names.index(f)] == x[names.index(f)]
        lo, hi = ranges["worst area"]
        assert lo - 1e-9 <= cf[names.index("worst area")] <= hi + 1e-9
    assert len({frozenset(c) for c in s.changed}) == 3
    assert np.all(np.diff(s.distances) >= 0)
    again = w.counterfactual(row, immutable=immutable, ranges=ranges, max_features=3, n=3, seed=5)
    np.testing.assert_array_equal(again.X, s.X)


def test_partial_dependence_is_the_mean_of_ice(w, data):
    """ICE values are the model on rows with the feature set; PD is their mean."""
    ds, est = data
    p = w.partial_dependence("mean texture", grid_resolution=7)
    j = list(ds.feature_names).index("mean texture")
    assert p.ice.shape == (569, 7, 2)
    np.testing.assert_allclose(p.grid[0], np.linspace(ds.X[:, j].min(), ds.X[:, j].max(), 7))
    edited = ds.X.astype(np.float64).copy()
    edited[:, j] = p.grid[0][3]
    # float32 probabilities from differently blocked products: within two ulps of 1.0
    np.testing.assert_allclose(p.ice[:, 3], proba(est, edited), rtol=1e-6, atol=2.5e-7)
    np.testing.assert_allclose(p.average, p.ice.mean(axis=0))
    p2 = w.partial_dependence(["mean texture", "mean radius"], grid=[[10, 20], [8, 12, 16]])
    assert p2.ice.shape == (569, 2, 3, 2)
    np.testing.assert_allclose(p2.average, p2.ice.mean(axis=0))
    edited[:, j], edited[:, 0] = 20.0, 12.0
    np.testing.assert_allclose(p2.ice[:, 1, 1], proba(est, edited), rtol=1e-6, atol=2.5e-7)


def slice_counts(score, truth, grid):
    """Brute force: (T,) counts of tp, fp, fn, tn for each threshold."""
    pred = score[:, None] >= grid[None, :]
    pos = truth[:, None] == 1
    return {
        "tp": (pred & pos).sum(0),
        "fp": (pred & ~pos).sum(0),
        "fn": (~pred & pos).sum(0),
        "tn": (~pred & ~pos).sum(0),
    }


@pytest.mark.parametrize("strategy", STRATEGIES, ids=STRATEGIES)
def test_threshold_strategies_meet_their_constraint(w, data, strategy):
    """Each strategy's thresholds minimise cost and equalise its metric within the grid's resolution."""
    ds, est = data
    t = w.thresholds("worst texture", strategy, cost_ratio=2.0, bins=3)
    score = proba(est, ds.X)[:, 1]
    j = list(ds.feature_names).index("worst texture")
    edges = np.unique(np.quantile(ds.X[:, j], np.linspace(0, 1, 4)))
    sl = np.clip(np.searchsorted(edges, ds.X[:, j], side="right") - 1, 0, len(edges) - 2)
    grid = t.grid
    per_slice = [slice_counts(score[sl == s], ds.y[sl == s], grid) for s in range(3)]
    cost = np.stack([2.0 * c["fp"] + c["fn"] for c in per_slice])
    chosen = np.array([np.flatnonzero(grid == v)[0] for v in t.thresholds.values()])
    assert len(chosen) == 3 and t.table["count"].sum() == 569
    np.testing.assert_allclose(t.cost, cost[np.arange(3), chosen].sum())
    if strategy == "single":
        assert len(set(chosen)) == 1 and t.cost == cost.sum(axis=0).min()
    elif strategy == "group":
        np.testing.assert_array_equal(cost[np.arange(3), chosen], cost.min(axis=1))
    else:
        name = {"demographic_parity": "positive_rate", "equal_opportunity": "tpr"}.get(
            strategy, "accuracy"
        )

        def metric(c):
            n = c["tp"] + c["fp"] + c["fn"] + c["tn"]
            return {
                "positive_rate": (c["tp"] + c["fp"]) / n,
                "tpr": c["tp"] / (c["tp"] + c["fn"]),
                "accuracy": (c["tp"] + c["tn"]) / n,
            }[name]

        r = t.target
        for s in range(3):
            curve = metric(per_slice[s])
            got = curve[chosen[s]]
            np.testing.assert_allclose(t.table[name].iloc[s], got)
            lo, hi = min(got, r), max(got, r)
            # nothing the grid reaches lies strictly between this slice's value and the target
            assert not np.any((curve > lo + 1e-12) & (curve < hi - 1e-12))


def test_slices_match_sklearn(w, data):
    """Per-slice confusion matrices and accuracy equal scikit-learn's on the same rows."""
    ds, est = data
    s = w.slices("mean radius", bins=2, threshold=0.4)
    j = 0
    median = np.quantile(ds.X[:, j], 0.5)
    pred = (proba(est, ds.X)[:, 1] >= 0.4).astype(int)
    for label, rows in zip(s.table.index, (ds.X[:, j] < median, ds.X[:, j] >= median)):
        np.testing.assert_array_equal(
            s.confusion[label], confusion_matrix(ds.y[rows], pred[rows], labels=[0, 1])
        )
        np.testing.assert_allclose(
            s.table.loc[label, "accuracy"], accuracy_score(ds.y[rows], pred[rows])
        )
        assert "roc" in s.curves[label] and "pr" in s.curves[label]


def test_image_edits_and_masks():
    """Pixel edits and masks on image rows reach the model; the panel shows both images."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = digits.images[:300] / 16.0
    clf = LogisticRegression(max_iter=300).fit(images.reshape(300, -1), digits.target[:300])
    w = xai.what_if(clf, images, progress=False)
    mask = np.zeros((8, 8), dtype=bool)
    mask[2:6, 2:6] = True
    r = w.edit(4, {(1, 3): 1.0}, mask=mask, fill=0.0)
    edited = images[4].copy()
    edited[1, 3] = 1.0
    edited[mask] = 0.0
    np.testing.assert_allclose(r.after, proba(clf, edited.reshape(1, -1))[0], rtol=1e-6)
    np.testing.assert_array_equal(r.x_after, edited)
    html = r._repr_html_()
    assert html.count("data:image/png;base64,") == 2
    # each picture enlarged by whole pixels to its drawn size: sharp without image-rendering
    found = re.findall(r'src="data:image/png;base64,([^"]+)" width="(\d+)"', html)
    assert len(found) == 2
    for uri, width in found:
        picture = np.asarray(Image.open(io.BytesIO(base64.b64decode(uri))))
        assert picture.shape[:2] == (int(width), int(width)) and int(width) >= 84
        zoom = int(width) // 8
        np.testing.assert_array_equal(
            picture, np.kron(picture[::zoom, ::zoom], np.ones((zoom, zoom)))
        )
    with pytest.raises(xai.ValidationError, match="outside the image"):
        w.edit(4, {(8, 0): 1.0})
    with pytest.raises(xai.ShapeError, match="mask"):
        w.edit(4, mask=np.ones(5, dtype=bool))


def test_counterfactual_to_a_target_class_on_images():
    """A multi-class image model: the search reaches the requested class; the panel shows images."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    X = digits.data[:400] / 16.0
    clf = LogisticRegression(max_iter=300).fit(X, digits.target[:400])
    w = xai.what_if(clf, X.reshape(-1, 8, 8), progress=False)
    row = int(np.flatnonzero(w.predicted == 1)[0])
    s = w.counterfactual(row, target=7, seed=0)
    assert np.argmax(proba(clf, s.X[:1])) == 7
    near = w.nearest_counterfactual(row)
    assert s.best.shape == (8, 8) and near.best.shape == (8, 8)
    assert "data:image/png;base64," in s._repr_html_()
    with pytest.raises(xai.ValidationError, match="already predicted"):
        w.counterfactual(row, target=1)


def test_regression_counterfactual_moves_by_a_standard_deviation(data):
    """For regression the searched edit moves the prediction by at least the predictions' std."""
    ds, _ = data
    reg = make_pipeline(StandardScaler(), Ridge()).fit(ds.X, ds.y)
    w = xai.what_if(reg, ds.X, progress=False)
    pred = reg.predict(ds.X.astype(np.float32))
    s = w.counterfactual(10, seed=0)
    moved = reg.predict(s.X[:1].astype(np.float32))[0]
    assert abs(moved - pred[10]) >= pred.std()
    assert s.distances[0] <= w.nearest_counterfactual(10).distances[0] + 1e-9


def test_slices_by_two_features(w):
    """Two features slice into the combinations that occur; counts add up to every row."""
    s = w.slices(["mean radius", "mean texture"], bins=2)
    assert 2 < len(s.table) <= 4 and s.table["count"].sum() == 569
    assert all(", mean texture" in label for label in s.table.index)


def test_native_network(data):
    """A native network converted from the MLP gives the same session results."""
    ds, est = data
    X = StandardScaler().fit(ds.X[::2]).transform(ds.X).astype(np.float32)
    mlp = est[-1]
    net = xai.from_sklearn(mlp)
    w = xai.what_if(net, X, ds.y, progress=False)
    np.testing.assert_allclose(w.outputs, mlp.predict_proba(X), atol=1e-5)
    s = w.counterfactual(0, seed=0)
    assert np.argmax(mlp.predict_proba(s.X[:1].astype(np.float32))) != w.predicted[0]


BAD = [
    ("distance", lambda w: w.nearest_counterfactual(0, distance="cosine"), xai.UnknownNameError),
    ("row", lambda w: w.nearest_counterfactual(-1), xai.ValidationError),
    ("immutable", lambda w: w.counterfactual(0, immutable=["nope"]), xai.UnknownNameError),
    ("max_features", lambda w: w.counterfactual(0, max_features=0), xai.ValidationError),
    ("seed", lambda w: w.counterfactual(0, seed="x"), xai.ValidationError),
    ("ranges", lambda w: w.counterfactual(0, ranges={"mean radius": (3, 1)}), xai.ValidationError),
    ("pd3", lambda w: w.partial_dependence([0, 1, 2]), xai.ValidationError),
    ("pd_kind", lambda w: w.partial_dependence(0, kind="mean"), xai.UnknownNameError),
    ("strategy", lambda w: w.thresholds(0, "parity"), xai.UnknownNameError),
    ("cost_ratio", lambda w: w.thresholds(0, cost_ratio=-1), xai.ValidationError),
    ("slice_by", lambda w: w.slices("nope"), xai.UnknownNameError),
]


@pytest.mark.parametrize("call,error", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_raises_clear_errors(w, call, error):
    """Bad arguments raise the matching xai error before any work."""
    with pytest.raises(error):
        call(w)


def test_constructor_validation(data):
    """Mismatched names, labels and shapes are refused with the expected shapes in the message."""
    ds, est = data
    with pytest.raises(xai.ShapeError, match="30 names"):
        xai.what_if(est, ds.X, feature_names=["a", "b"])
    with pytest.raises(xai.ShapeError, match=r"\(569,\)"):
        xai.what_if(est, ds.X, ds.y[:10])
    with pytest.raises(xai.ShapeError, match="n_samples, 30"):
        xai.what_if(est, ds.X[:, :5])
    w = xai.what_if(est, ds.X, progress=False)
    with pytest.raises(xai.ValidationError, match="pass y"):
        w.thresholds(0)


def test_html_escapes_hostile_names(data):
    """Feature and class names are escaped in every rendering, and a report holds them all."""
    ds, est = data
    evil = "<script>alert(1)</script>"
    names = [evil] + list(ds.feature_names[1:])
    w = xai.what_if(est, ds.X, ds.y, feature_names=names, output_names=[evil, "b"], progress=False)
    w.edit(0, {evil: 15.0})
    results = [
        w,
        w.history[0],
        w.nearest_counterfactual(0),
        w.counterfactual(0, n=2, max_rounds=3),
        w.partial_dependence(evil, grid_resolution=5),
        w.partial_dependence([evil, 1], grid_resolution=3),
        w.slices(evil),
        w.thresholds(evil, "demographic_parity"),
    ]
    report = xai.Report("what-if")
    for result in results:
        html = result._repr_html_()
        assert evil not in html and "&lt;script&gt;" in html
        report.add(result)
    assert evil not in report.to_html()


def test_analyses_are_functions_of_the_session():
    """Each analysis is a function of the session in its own module, and the same as the method."""
    from xai_whatif.counterfactuals import nearest_counterfactual
    from xai_whatif.dependence import partial_dependence
    from xai_whatif.edits import edit, revert

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    w = xai.what_if(lambda A: np.stack([A[:, 0], -A[:, 0]], axis=1), X, progress=False)
    np.testing.assert_array_equal(nearest_counterfactual(w, 0).X, w.nearest_counterfactual(0).X)
    np.testing.assert_array_equal(partial_dependence(w, 0).average, w.partial_dependence(0).average)
    result = edit(w, 1, {0: 1.0})
    assert result.predicted_after == 0 and w.X[1, 0] == 1.0
    revert(w)
    np.testing.assert_array_equal(w.X, X)


def test_seeded_report_with_whatif_results_renders_the_same_bytes(data, monkeypatch):
    """Report(seed=0) with what-if results renders byte-identically, twice and in a second report."""
    ds, est = data
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    names = list(ds.feature_names)
    w = xai.what_if(est, ds.X[:60], ds.y[:60], feature_names=names, progress=False)
    w.edit(0, {names[0]: 15.0})
    results = [w, w.history[0], w.nearest_counterfactual(0), w.slices(names[1])]

    def render(seed):
        report = xai.Report("what-if", seed=seed)
        for result in results:
            report.add(result)
        return report

    first = render(0)
    html = first.to_html()
    assert html == first.to_html() == render(0).to_html()
    assert "2023-11-14T22:13:20+00:00" in html
    assert html != render(1).to_html()
