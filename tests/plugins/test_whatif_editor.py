"""The datapoint editor driven from Python: controls change the row, the panels follow, the state round-trips."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier

import xai_core as xai
from xai_datasets import load_breast_cancer
from xai_whatif.editor import EditorState


@pytest.fixture(scope="module")
def cancer():
    ds = load_breast_cancer()
    X = (ds.X - ds.X.mean(0)) / ds.X.std(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlp = MLPClassifier((8,), max_iter=300, random_state=0).fit(X, ds.y)
    return X, ds.y, list(ds.feature_names), mlp


def _session(cancer):
    X, y, names, mlp = cancer
    net = xai.from_sklearn(mlp)
    return xai.what_if(net, X, y, feature_names=names, output_names=("malignant", "benign"))


def _shown(html):
    return [float(v) for v in re.findall(r'data-output="\d+">([^<]+)<', html)]


def test_slider_edit_updates_prediction_and_explanation(cancer):
    """Moving a slider re-scores the row (scikit-learn's predict_proba) and re-explains it."""
    X, _, names, mlp = cancer
    ed = _session(cancer).editor(3)
    before = ed.state.explanation.values.copy()
    ed.controls["worst radius"].value = 2.5
    edited = X[3].copy()
    edited[names.index("worst radius")] = 2.5
    expected = mlp.predict_proba(edited[None])[0]
    np.testing.assert_allclose(ed.state.outputs, expected, rtol=1e-5)
    np.testing.assert_allclose(_shown(ed.panels["prediction"].value), expected, rtol=1e-3)
    e = ed.state.explanation
    assert not np.allclose(e.values, before)
    direct = xai.explain(ed.state.w.runner, edited[None], method="ig", progress=False)
    np.testing.assert_allclose(e.values, direct.values, rtol=1e-6)
    assert ed.state.feature == "worst radius" and ed.feature.value == "worst radius"
    value, _ = ed.state.marker()
    assert value == pytest.approx(2.5) and "current value 2.5" in ed.panels["dependence"].value
    assert "worst radius" in ed.panels["history"].value


def test_row_curve_is_the_model_over_the_pd_grid(cancer):
    """The row's dashed PD curve is the model on the row with the feature set to each grid value."""
    X, _, names, mlp = cancer
    s = EditorState(_session(cancer), 7)
    s.set_feature("mean texture")
    grid = s.dependence.grid[0]
    rows = np.repeat(X[7][None], len(grid), axis=0)
    rows[:, names.index("mean texture")] = grid
    np.testing.assert_allclose(s.row_curve(), mlp.predict_proba(rows), rtol=1e-5)


def test_picking_rows_by_click_index_and_search(cancer):
    """A click on a scatter point, the index box and a search match each select a row."""
    X, _, _, _ = cancer
    ed = _session(cancer).editor(0)
    ed.scatter.picked = 11
    assert ed.state.row == 11 and ed.row.value == 11 and 'data-row="11" ' in ed.scatter.html
    ed.row.value = 4
    assert ed.state.row == 4
    ed.search.value = "`mean radius` > 3"
    expected = np.flatnonzero(X[:, 0] > 3)
    assert [v for _, v in ed.matches.options] == expected.tolist()
    ed.matches.value = int(expected[0])
    assert ed.state.row == expected[0]
    ed.x_axis.value = "projection"
    xy, colour, names = ed.state.scatter()
    assert names == ("PC 1", "PC 2") and xy.shape == (len(X), 2)
    ed.colour_by.value = "correctness"
    _, colour, _ = ed.state.scatter()
    np.testing.assert_array_equal(colour, ed.state.w.predicted == ed.state.w.y)
    ed.search.value = "nonsense >"
    assert "ValidationError" in ed.message.value


def test_counterfactual_beside_the_row_highlights_what_differs(cancer):
    """The nearest counterfactual is brute-force nearest in the scaled L1 distance; differing cells marked."""
    X, _, _, _ = cancer
    ed = _session(cancer).editor(5)
    w = ed.state.w
    other = w.predicted != w.predicted[5]
    d = (np.abs(X - X[5]) / X.std(0)).sum(1)
    d[~other] = np.inf
    c = ed.state.counterfactual
    assert c.index[0] == int(np.argmin(d))
    html = ed.panels["counterfactual"].value
    assert html.count('data-changed="1"') == int(np.count_nonzero(X[c.index[0]] != X[5]))


def test_the_editor_lists_the_rows_nearest_the_edited_row(cancer):
    """Beside the row: its nearest examples by brute-force scaled L2, following an edit."""
    X, _, names, _ = cancer
    ed = _session(cancer).editor(5, n_neighbors=3, distance="l2")
    d = np.sqrt(((X - X[5]) ** 2 / X.std(0) ** 2).sum(1))
    d[5] = np.inf
    np.testing.assert_array_equal(ed.state.neighbors.index, np.argsort(d, kind="stable")[:3])
    assert "The 3 examples nearest row 5" in ed.panels["neighbors"].value
    assert ed.state.counterfactual.distance == "l2"
    ed.controls[names[0]].value = float(X[100, 0])
    edited = ed.state.w.X[5]
    d = np.sqrt(((X - edited) ** 2 / X.std(0) ** 2).sum(1))
    d[5] = np.inf
    np.testing.assert_array_equal(ed.state.neighbors.index, np.argsort(d, kind="stable")[:3])
    with pytest.raises(xai.UnknownNameError, match="distance"):
        _session(cancer).editor(0, distance="cosine")


def test_undo_reset_and_clone(cancer):
    """Undo reverts the last edit, reset restores the loaded row, a clone edits its own copy."""
    X, _, _, _ = cancer
    ed = _session(cancer).editor(2)
    ed.controls["mean area"].value = 1.0
    ed.controls["mean smoothness"].value = -1.0
    ed.buttons["undo"].click()
    assert len(ed.state.history) == 1 and ed.controls["mean smoothness"].value == pytest.approx(
        X[2, 4], abs=ed.controls["mean smoothness"].step
    )
    ed.buttons["reset row"].click()
    np.testing.assert_array_equal(ed.state.values, X[2])
    clone = ed.state.clone()
    clone.set_value("mean area", 2.0)
    np.testing.assert_array_equal(ed.state.values, X[2])
    assert clone.values[3] == 2.0 and clone.w is not ed.state.w


def test_state_round_trips_through_json(cancer):
    """to_dict -> JSON -> from_dict on a fresh session gives the same row, outputs and explanation."""
    s = EditorState(_session(cancer), 9)
    s.set_value("mean radius", 1.5)
    s.set_value("worst texture", -0.5)
    s.select(12).set_value("mean area", 0.7)
    s.set_axes("projection").set_colour("label")
    state = json.loads(json.dumps(s.to_dict()))
    t = EditorState.from_dict(_session(cancer), state)
    assert t.to_dict() == s.to_dict()
    np.testing.assert_array_equal(t.w.X, s.w.X)
    np.testing.assert_allclose(t.outputs, s.outputs)
    np.testing.assert_allclose(t.explanation.values, s.explanation.values)
    with pytest.raises(xai.ValidationError):
        EditorState.from_dict(_session(cancer), {"nope": 1})


def test_categorical_features_get_dropdowns_and_black_boxes_shap():
    """A category column is a dropdown of its labels; a black box is explained by SHAP (efficiency)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 80, 300),
            "income": rng.normal(50, 10, 300),
            "city": pd.Categorical(rng.choice(["Oslo", "Lima", "<b>Pune</b>"], 300)),
        }
    )
    codes = frame.assign(city=frame.city.cat.codes).to_numpy(float)
    y = ((codes[:, 1] > 50) ^ (codes[:, 2] == 1)).astype(int)
    est = LogisticRegression(max_iter=1000).fit(codes, y)
    w = xai.what_if(est, frame, y)
    ed = w.editor(0, explain_options={"max_evals": 200})
    city = ed.controls["city"]
    assert type(city).__name__ == "Dropdown" and type(ed.controls["age"]).__name__ == "IntSlider"
    assert [label for label, _ in city.options] == list(frame.city.cat.categories)
    target = next(c for c in frame.city.cat.categories if c != frame.city[0])
    city.value = target
    row = codes[0].copy()
    row[2] = list(frame.city.cat.categories).index(target)
    np.testing.assert_allclose(ed.state.outputs, est.predict_proba(row[None])[0], rtol=1e-6)
    e = ed.state.explanation
    assert e.method == "shap"
    k = int(e.target[0])
    assert e.values.sum() + e.base_values[0] == pytest.approx(ed.state.outputs[k], abs=1e-6)
    panel = ed.panels["counterfactual"].value
    assert "<b>Pune" not in panel and "city" in panel  # category labels are escaped


def test_editor_sits_beside_its_results_with_whole_names():
    """Two wrapping columns: controls (each under its whole name) beside the prediction and the PD."""
    rng = np.random.default_rng(0)
    long = "number of previous admissions to this hospital in the last five years"
    frame = pd.DataFrame(
        {
            long: rng.integers(0, 9, 200),
            "temperature": np.round(rng.normal(37.0, 0.6, 200), 1),
            "score": rng.normal(size=200),
        }
    )
    y = (frame["temperature"] > 37).astype(int).to_numpy()
    est = LogisticRegression(max_iter=1000).fit(frame.to_numpy(), y)
    ed = xai.what_if(est, frame, y).editor(0, explain_options={"max_evals": 100})
    assert ed.columns.layout.flex_flow == "row wrap"
    assert list(ed.columns.children) == [ed.editor_column, ed.results_column]
    controls = ed.editor_column.children[-1].children
    assert [box.children[1] for box in controls] == list(ed.controls.values())
    assert long in ed.labels[long].value and not ed.controls[long].description
    results = list(ed.results_column.children)
    assert results.index(ed.panels["prediction"]) < results.index(ed.panels["dependence"]) < 3
    assert type(ed.controls[long]).__name__ == "IntSlider"
    temp = ed.controls["temperature"]
    assert temp.readout_format == ".1f" and temp.step == pytest.approx(0.1)
    assert ed.controls["score"].readout_format == ".3f"
