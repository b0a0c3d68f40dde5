"""The offline what-if editor in headless Chromium: an edited value re-scores as the Python model does."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import xai_core as xai
from xai_datasets import load_breast_cancer

pytestmark = pytest.mark.browser

HOSTILE = ["</script><img src=x onerror=alert(1)>", '" onmouseover="alert(1)']


@pytest.fixture(scope="module")
def session():
    ds = load_breast_cancer()
    X = ((ds.X - ds.X.mean(0)) / ds.X.std(0)).astype(np.float32)
    net = xai.nn.mlp(X.shape[1], hidden=(8, 4), n_outputs=2, activation="relu")
    net.fit(X, ds.y, learning_rate=0.05, epochs=3, progress=False)
    names = HOSTILE + list(ds.feature_names[2:])
    return xai.what_if(net, X, ds.y, feature_names=names, output_names=("malignant", "benign"))


def _report(tmp_path, w):
    return xai.Report("offline what-if", seed=0).add(w).save(tmp_path / "whatif.html")


def test_edited_value_rescores_like_the_python_model(session, tmp_path, open_page):
    """Pick row 7, set a feature; the page's outputs equal net.predict on that edited row."""
    _, page, events = open_page(_report(tmp_path, session).as_uri())
    root = page.locator(".xai-whatif-offline")
    root.locator("select.xai-whatif-offline-row").select_option("7")
    box = root.locator("input[data-feature='5']")
    box.fill("2.75")
    box.dispatch_event("change")
    shown = [float(t) for t in root.locator("[data-output]").all_text_contents()]
    row = session.X[7].copy()
    row[5] = 2.75
    expected = session.runner.model.predict(row[None].astype(np.float32))[0]
    np.testing.assert_allclose(shown, expected, rtol=2e-5, atol=1e-6)
    label = root.locator(".xai-whatif-offline-predicted").text_content()
    assert label.endswith(f"({int(np.argmax(expected))})")
    assert "Re-scored in the page" in root.locator(".xai-whatif-offline-status").text_content()
    assert events == {"console": [], "dialogs": [], "network": [], "page_errors": []}


def test_without_javascript_the_panel_shows_python_values(session, tmp_path, open_page):
    """JavaScript off: row 0's outputs as Python computed them, the inputs disabled."""
    _, page, events = open_page(_report(tmp_path, session).as_uri(), javascript=False)
    root = page.locator(".xai-whatif-offline")
    shown = [float(t) for t in root.locator("[data-output]").all_text_contents()]
    np.testing.assert_allclose(shown, session.outputs[0], rtol=1e-5)
    assert root.locator("input[data-feature='0']").is_disabled()
    assert not events["dialogs"] and not events["network"]


def test_black_boxes_get_the_static_section(tmp_path):
    """A scikit-learn model cannot run in the page: no offline panel, no weights exported."""
    from sklearn.linear_model import LogisticRegression

    ds = load_breast_cancer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = LogisticRegression(max_iter=200).fit(ds.X, ds.y)
    html = xai.Report("bb").add(xai.what_if(est, ds.X, ds.y)).to_html()
    assert 'class="xai-whatif-offline-data"' not in html and 'class="xai-whatif"' in html


def _box(locator):
    return locator.bounding_box()


def test_editor_and_pd_chart_share_the_first_viewport(session, tmp_path, open_page):
    """At 1280 x 800 the feature boxes and the PD chart are side by side in one screen; at 390 they stack."""
    _, page, events = open_page(_report(tmp_path, session).as_uri())
    page.set_viewport_size({"width": 1280, "height": 800})
    root = page.locator(".xai-whatif-offline")
    root.evaluate("e => e.scrollIntoView()")
    first, chart = (
        root.locator("input[data-feature='0']"),
        root.locator(".xai-whatif-offline-pd-chart"),
    )
    a, c = _box(first), _box(chart)
    for b in (a, c):
        assert b["y"] >= 0 and b["y"] + b["height"] <= 800, b
    assert c["x"] > a["x"] + a["width"]  # two columns: the results beside the editor
    names = root.locator("label[for]").evaluate_all(
        "ls => ls.map(l => l.scrollWidth <= l.clientWidth + 1 && l.offsetWidth > 0)"
    )
    assert all(names)  # full names: nothing clipped
    page.set_viewport_size({"width": 390, "height": 800})
    a, c = _box(first), _box(chart)
    assert c["y"] > a["y"] + a["height"]  # stacked: the results follow the editor
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert events == {"console": [], "dialogs": [], "network": [], "page_errors": []}


def test_out_of_range_values_are_marked(session, tmp_path, open_page):
    """A value above the data's maximum marks its box and says so beside the outputs; back in range, no mark."""
    _, page, _ = open_page(_report(tmp_path, session).as_uri())
    root = page.locator(".xai-whatif-offline")
    box = root.locator("input[data-feature='3']")
    hi = float(session.table.maximum[3])
    box.fill(str(hi + 5))
    box.dispatch_event("input")
    assert box.get_attribute("aria-invalid") == "true"
    assert root.locator("[data-flag='3']").is_visible()
    warning = root.locator(".xai-whatif-offline-warning")
    assert warning.is_visible() and "1 value is outside the range" in warning.text_content()
    assert session.feature_names[3] in warning.text_content()
    assert root.locator("input[aria-invalid]").count() == 1
    box.fill(str(hi))
    box.dispatch_event("input")
    assert box.get_attribute("aria-invalid") is None and not warning.is_visible()
    assert not root.locator("[data-flag='3']").is_visible()


def test_page_formats_values_and_draws_the_edited_features_pd(session, tmp_path, open_page):
    """Row 7's values in the columns' decimals; editing feature 5 redraws its PD as the model computes it."""
    _, page, _ = open_page(_report(tmp_path, session).as_uri())
    root = page.locator(".xai-whatif-offline")
    root.locator("select.xai-whatif-offline-row").select_option("7")
    t = session.table
    shown = root.locator("input[data-feature]").evaluate_all("bs => bs.map(b => b.value)")
    assert shown == [t.text(j, t.X[7, j]) for j in range(len(shown))]
    box = root.locator("input[data-feature='5']")
    box.focus()
    box.fill("1.5")
    box.dispatch_event("input")
    chart = root.locator(".xai-whatif-offline-pd-chart")
    assert chart.get_attribute("data-feature") == "5"
    curve = np.array(json.loads(chart.get_attribute("data-row-curve")))
    mean = np.array(json.loads(chart.get_attribute("data-mean-curve")))
    grid = np.linspace(t.minimum[5], t.maximum[5], 21)
    row = t.X[7].copy()
    row[5] = 1.5
    rows = np.repeat(row[None], len(grid), axis=0)
    rows[:, 5] = grid
    net = session.runner.model
    np.testing.assert_allclose(curve, net.predict(rows.astype(np.float32))[:, 1], atol=2e-6)
    page_rows = np.repeat(t.X[:50], len(grid), axis=0)
    page_rows[:, 5] = np.tile(grid, 50)
    expected = net.predict(page_rows.astype(np.float32))[:, 1].reshape(50, -1).mean(0)
    np.testing.assert_allclose(mean, expected, atol=2e-6)
    assert (
        root.locator(".xai-whatif-offline-pd-name").text_content().strip("\u2068\u2069")
        == (session.feature_names[5])
    )
