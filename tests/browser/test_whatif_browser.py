"""The offline what-if editor in headless Chromium: an edited value re-scores as the Python model does."""

from __future__ import annotations

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
