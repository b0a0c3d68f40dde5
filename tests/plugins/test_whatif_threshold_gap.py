"""Fairness thresholds say when their constraint cannot be met on the grid, and by how much."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import xai_core as xai
from xai_datasets import load_breast_cancer


@pytest.fixture(scope="module")
def w():
    """Breast cancer and an MLP trained on every other row, over all 569 rows."""
    ds = load_breast_cancer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = make_pipeline(
            StandardScaler(), MLPClassifier((16,), max_iter=60, random_state=0)
        ).fit(ds.X[::2], ds.y[::2])
    return xai.what_if(
        est, ds.X, ds.y, feature_names=ds.feature_names, output_names=ds.class_names, progress=False
    )


def test_unmet_constraint_warns_and_reports_the_gap(w):
    """One threshold per slice (a one-point grid) cannot equalise positive rates: said, measured, warned."""
    with pytest.warns(xai.XaiWarning, match="demographic_parity cannot be met on this grid"):
        t = w.thresholds("worst texture", "demographic_parity", bins=3, grid=[0.5])
    rates = t.table["positive_rate"].to_numpy()
    assert t.gap == pytest.approx(rates.max() - rates.min()) and t.gap > 0.05
    assert not t.met and "NOT met" in repr(t)
    html = t._repr_html_()
    assert "cannot be met on this grid" in html and f"{t.gap:.4g}" in html
    assert " near " not in html  # no claim of a common value the table contradicts


def test_met_constraint_reports_its_gap_quietly(w):
    """On the default grid the rates agree within 0.05: no warning, the gap in the heading."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", xai.XaiWarning)
        t = w.thresholds("worst texture", "demographic_parity", bins=3)
    rates = t.table["positive_rate"].to_numpy()
    assert t.met and t.gap == pytest.approx(np.ptp(rates)) and t.gap <= 0.05
    assert "cannot be met" not in t._repr_html_()
    tight = w.thresholds("mean radius", "demographic_parity", bins=4, tolerance=0.02)
    assert tight.met and tight.gap <= 0.02 + 1e-12  # a tolerance is met by construction
    assert "within" in tight._repr_html_() and "the tolerance 0.02" in tight._repr_html_()
    unconstrained = w.thresholds("worst texture", "group", bins=3)
    assert unconstrained.met and np.isnan(unconstrained.gap)
