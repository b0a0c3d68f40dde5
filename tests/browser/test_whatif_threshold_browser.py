"""The report's threshold slider in headless Chromium: moving it shows scikit-learn's confusion counts."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import confusion_matrix
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import xai_core as xai
from xai_datasets import load_breast_cancer

pytestmark = pytest.mark.browser


def test_the_threshold_slider_shows_each_slices_counts(tmp_path, open_page):
    """Slide to 0.7: every slice's TN/FP/FN/TP are scikit-learn's at that threshold; no JS, no slider."""
    ds = load_breast_cancer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = make_pipeline(StandardScaler(), LogisticRegression(max_iter=200)).fit(ds.X, ds.y)
    w = xai.what_if(est, ds.X, ds.y, feature_names=ds.feature_names, progress=False)
    s = w.slices("mean radius", bins=2)
    path = xai.Report("slider", seed=0).add(s).save(tmp_path / "slider.html")
    _, page, events = open_page(path.as_uri())
    root = page.locator(".xai-whatif-threshold")
    slider = root.locator("input.xai-whatif-threshold-input")
    slider.evaluate("(el) => { el.value = '70'; el.dispatchEvent(new Event('input')); }")
    assert root.locator(".xai-whatif-threshold-value").text_content() == "0.70"
    x = w.X[:, w.feature_names.index("mean radius")]
    edges = np.quantile(x, [0, 0.5, 1])
    score = w.outputs[:, 1]
    for i, rows in enumerate([np.flatnonzero(x < edges[1]), np.flatnonzero(x >= edges[1])]):
        cells = root.locator(f"tr[data-slice='{i}'] td")
        shown = [int(cells.nth(j).text_content()) for j in range(1, 5)]
        expected = confusion_matrix(w.y[rows], score[rows] >= 0.7, labels=[0, 1]).ravel()
        assert shown == expected.tolist()
    assert events == {"console": [], "dialogs": [], "network": [], "page_errors": []}
    _, page, _ = open_page(path.as_uri(), javascript=False)
    assert page.locator("input.xai-whatif-threshold-input").count() == 0
