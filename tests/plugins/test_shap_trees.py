"""Tree SHAP for XGBoost, LightGBM and CatBoost, and rows with missing values."""

from __future__ import annotations

import itertools
import math
import warnings

import catboost
import lightgbm
import numpy as np
import pytest
import xgboost
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression

import xai_core as xai
from xai_core.errors import CapabilityError, ValidationError


def _data(n=240, d=4, missing=0.0, classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    score = X[:, 0] + 0.5 * X[:, 1] - X[:, 2] * X[:, 3]
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1]))
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    return X, y, score


def _brute_force_shapley(f, x, background):
    """Interventional Shapley values by the definition: every coalition, every order weight."""
    d = len(x)

    def value(coalition):
        rows = background.copy()
        rows[:, list(coalition)] = x[list(coalition)]
        return f(rows).mean(axis=0)

    phi = np.zeros((d, np.shape(f(x[None]))[1]))
    for i in range(d):
        others = [j for j in range(d) if j != i]
        for k in range(d):
            for s in itertools.combinations(others, k):
                w = math.factorial(k) * math.factorial(d - k - 1) / math.factorial(d)
                phi[i] += w * (value((*s, i)) - value(s))
    return phi


MODELS = {
    "xgboost": lambda: xgboost.XGBClassifier(n_estimators=20, max_depth=3, random_state=0),
    "lightgbm": lambda: lightgbm.LGBMClassifier(n_estimators=20, verbose=-1, random_state=0),
    "catboost": lambda: catboost.CatBoostClassifier(
        iterations=20, verbose=0, random_seed=0, allow_writing_files=False
    ),
    "xgboost-regressor": lambda: xgboost.XGBRegressor(n_estimators=20, random_state=0),
    "lightgbm-regressor": lambda: lightgbm.LGBMRegressor(n_estimators=20, verbose=-1),
}


@pytest.mark.parametrize("name", MODELS)
def test_tree_shap_of_boosted_libraries_equals_brute_force(name):
    """auto picks shap's TreeExplainer, whose values are the exact interventional Shapley values."""
    X, y, score = _data(missing=0.1 if "catboost" not in name else 0.0)
    est = MODELS[name]().fit(X, score if "regressor" in name else y)
    bg = X[200:216]
    e = xai.explain(
        est, X[:3], method="shap", background=bg, target=0 if "regressor" in name else 1
    )
    assert e.meta["algorithm"] == "tree"
    model = xai.as_model(est)
    f = model.predict
    if "regressor" not in name:  # a boosted classifier is explained in log-odds
        assert e.meta["output_space"] == "log_odds"

        def f(rows):
            p = model.predict(rows)[:, 1]
            m = np.log(p) - np.log1p(-p)
            return np.stack([-m, m], axis=1)

    for row in range(3):
        expected = _brute_force_shapley(f, X[row], bg)[:, e.target[row]]
        np.testing.assert_allclose(e.values[row], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(e.meta["additivity_error"], 0, atol=1e-5)


def test_a_boosted_classifier_of_three_classes_is_refused_by_tree_and_left_to_auto():
    X, y, _ = _data(classes=3)
    for make in (MODELS["xgboost"], MODELS["lightgbm"], MODELS["catboost"]):
        est = make().fit(X, y)
        with pytest.raises(CapabilityError, match="two classes"):
            xai.explain(est, X[:2], method="shap", algorithm="tree", background=X[200:210])
        e = xai.explain(est, X[:2], method="shap", background=X[200:210])
        assert e.meta["algorithm"] == "exact"
        np.testing.assert_allclose(e.meta["additivity_error"], 0, atol=1e-9)


def test_a_tree_copy_that_routes_missing_values_differently_is_refused():
    """shap's copy of a CatBoost regressor on rows with NaN is off from the model's outputs:
    checked first, refused, and left to exact by auto."""
    X, _, score = _data(missing=0.15)
    est = catboost.CatBoostRegressor(
        iterations=20, verbose=0, random_seed=0, allow_writing_files=False
    ).fit(X, score)
    with pytest.raises(CapabilityError, match="shap's copy of its trees"):
        xai.explain(est, X[:3], method="shap", algorithm="tree", background=X[200:216])
    e = xai.explain(est, X[:3], method="shap", background=X[200:216])
    assert e.meta["algorithm"] == "exact"


def test_rows_with_missing_values_are_explained_for_models_that_handle_them():
    X, y, _ = _data(missing=0.2)
    est = HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(X, y)
    assert xai.as_model(est).allow_nan
    rows = X[:4]
    assert np.isnan(rows).any()
    bg = X[200:212]
    e = xai.explain(est, rows, method="shap", algorithm="exact", background=bg, target=1)
    for row in range(4):
        expected = _brute_force_shapley(xai.as_model(est).predict, rows[row], bg)[:, 1]
        np.testing.assert_allclose(e.values[row], expected, rtol=1e-9, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", xai.XaiWarning)
        e = xai.explain(est, X[:30], method="shap", n_background=8)  # a sampled background
    assert np.isfinite(e.values).all()


def test_methods_that_compute_with_the_values_refuse_missing_ones_naming_those_that_can():
    X, y, _ = _data(missing=0.2)
    est = HistGradientBoostingClassifier(max_iter=10).fit(X, y)
    with pytest.raises(ValidationError, match=r"missing values \(NaN\).*'lime'.*shap"):
        xai.explain(est, X[:5], method="lime", background=X[100:150])


def test_missing_values_stay_refused_where_the_model_cannot_take_them():
    X, y, _ = _data()
    est = LogisticRegression().fit(X, y)
    assert not xai.as_model(est).allow_nan
    rows = X[:3].copy()
    rows[1, 2] = np.nan
    with pytest.raises(ValidationError, match="NaN"):
        xai.explain(est, rows, method="shap", background=X[100:110])
    hgb = HistGradientBoostingClassifier(max_iter=5).fit(X, y)
    rows[1, 2] = np.inf
    with pytest.raises(ValidationError, match="infinity"):
        xai.explain(hgb, rows, method="shap", background=X[100:110])
