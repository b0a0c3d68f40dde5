"""Occlusion, feature ablation and feature permutation against Captum, on every backend."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from captum.attr import FeatureAblation, FeaturePermutation, Occlusion

import xai_core as xai
from xai_core import nn
from xai_core.errors import ShapeError, ValidationError


def _cnn(seed=0):
    """A small CNN in torch and its import (float64: Captum's values to 1e-10)."""
    torch.manual_seed(seed)
    module = torch.nn.Sequential(
        torch.nn.Conv2d(2, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AvgPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 3 * 4, 3),
    ).eval()
    net = xai.from_torch(module, torch.zeros(2, 2, 6, 8), dtype="float64")
    return module.double(), net


CPU64 = {"backend": xai.get_backend("cpu", dtype="float64")}


def _X(n=3, seed=1):
    return np.random.default_rng(seed).standard_normal((n, 2, 6, 8))


@pytest.mark.parametrize(
    "window, strides, baselines",
    [((1, 3, 3), 1, 0.0), ((2, 4, 3), (1, 2, 3), 0.5), ((1, 2, 8), (1, 2, 8), "sample")],
)
def test_occlusion_equals_captum(window, strides, baselines):
    module, net = _cnn()
    X = _X()
    if baselines == "sample":
        baselines = np.random.default_rng(2).standard_normal(X.shape[1:])
    target = np.array([0, 2, 1])
    got = xai.explain(
        net,
        X,
        method="occlusion",
        target=target,
        sliding_window_shapes=window,
        strides=strides,
        baselines=baselines,
        **CPU64,
    )
    base = torch.tensor(baselines)[None] if np.ndim(baselines) else float(baselines)
    expected = Occlusion(module).attribute(
        torch.tensor(X),
        sliding_window_shapes=window,
        strides=strides,
        baselines=base,
        target=torch.tensor(target),
    )
    # Captum divides by the window counts in float32 (``single_attrib.float() / weight``)
    np.testing.assert_allclose(got.values, expected.numpy(), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got.base_values, net.predict(X)[np.arange(3), target])


def test_feature_ablation_equals_captum_with_and_without_a_mask():
    module, net = _cnn()
    X = _X()
    rows = np.random.default_rng(3).standard_normal(X.shape)  # one baseline per row
    mask = np.repeat(np.arange(12).reshape(1, 3, 4), 2, axis=1).repeat(2, axis=2)
    mask = np.broadcast_to(mask, X.shape[1:]).copy()  # 2x2 patches through both channels
    for feature_mask in (None, mask):
        got = xai.explain(
            net,
            X,
            method="feature_ablation",
            target=1,
            feature_mask=feature_mask,
            baselines=rows,
            **CPU64,
        )
        expected = FeatureAblation(module).attribute(
            torch.tensor(X),
            baselines=torch.tensor(rows),
            target=1,
            feature_mask=None if feature_mask is None else torch.tensor(feature_mask)[None],
        )
        np.testing.assert_allclose(got.values, expected.numpy(), rtol=1e-10, atol=1e-12)
    assert got.meta["groups"] == 12


def test_feature_permutation_equals_captum_with_the_same_permutations():
    module, net = _cnn()
    X = _X(n=5)
    mask = np.arange(2 * 6 * 8).reshape(2, 6, 8) // 16  # 6 groups of 16 features
    got = xai.explain(
        net, X, method="feature_permutation", target=0, feature_mask=mask, seed=7, **CPU64
    )
    perms = [np.random.default_rng([7, k]).permutation(5) for k in range(6)]

    def perm_func(x, group):  # Captum's hook: the group's features take the permuted rows
        k = int(torch.tensor(mask)[group[0]].unique().item())
        return torch.where(group, x[torch.tensor(perms[k])], x)

    expected = FeaturePermutation(module, perm_func=perm_func).attribute(
        torch.tensor(X), target=0, feature_mask=torch.tensor(mask)[None]
    )
    np.testing.assert_allclose(got.values, expected.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "method, options",
    [
        ("occlusion", {"sliding_window_shapes": (2, 2, 2), "strides": 2}),
        ("feature_ablation", {}),
        ("feature_permutation", {"seed": 3}),
    ],
)
def test_seeded_results_are_the_same_in_chunks_and_blocks(method, options):
    _, net = _cnn()
    X = _X(n=6)
    whole = xai.explain(net, X, method=method, target=0, **options)
    chunked = xai.explain(
        net, X, method=method, target=0, chunk_size=2, perturbations_per_eval=5, **options
    )
    np.testing.assert_allclose(chunked.values, whole.values, rtol=1e-12, atol=1e-14)


def test_black_boxes_and_the_edge_tpu_run_them():
    w = np.array([1.0, -2.0, 3.0])
    e = xai.explain(lambda X: X @ w[:, None], np.ones((2, 3)), method="feature_ablation")
    np.testing.assert_allclose(e.values, np.tile(w, (2, 1)))  # linear: the drop is w * x
    net = nn.Sequential(
        [nn.Reshape((1, 8, 8)), nn.Conv2D(4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Dense(3)],
        input_shape=(64,),
    )
    X = np.random.default_rng(4).random((4, 64)).astype(np.float32)
    q = xai.quantize(net, X)
    e = xai.explain(
        q, X[:2], method="occlusion", backend="edgetpu", sliding_window_shapes=(8,), strides=8
    )
    assert e.values.shape == (2, 64) and e.backend == "edgetpu"
    result = xai.compare_backends(
        net,
        X[:2],
        method="occlusion",
        backends=["cpu", "edgetpu"],
        sliding_window_shapes=(8,),
        strides=8,
        calibration=X,
    )
    assert "edgetpu" in result.explanations


@pytest.mark.parametrize(
    "options, error, words",
    [
        ({}, ValidationError, "needs sliding_window_shapes"),
        ({"sliding_window_shapes": 3}, ValidationError, "one extent per axis"),
        ({"sliding_window_shapes": (1, 9, 3)}, ShapeError, "larger than a sample"),
        ({"sliding_window_shapes": (1, 2, 2), "strides": 3}, ValidationError, "skip features"),
        ({"sliding_window_shapes": (1, 2, 2), "baselines": np.zeros(5)}, ShapeError, "baselines"),
        ({"sliding_window_shapes": (1, 2, 2), "baselines": np.nan}, ValidationError, "finite"),
    ],
)
def test_occlusion_refuses_bad_options_before_any_model_call(options, error, words):
    calls = []
    _, net = _cnn()

    def model(X):
        calls.append(len(X))
        return net.predict(X)

    with pytest.raises(error, match=words):
        xai.explain(
            xai.BlackBoxModel(model, input_shape=(2, 6, 8)),
            _X(),
            method="occlusion",
            target=0,
            **options,
        )
    assert calls == []


def test_feature_masks_and_permutation_data_are_checked():
    _, net = _cnn()
    X = _X()
    with pytest.raises(ShapeError, match="feature_mask"):
        xai.explain(net, X, method="feature_ablation", target=0, feature_mask=np.zeros((2, 6), int))
    with pytest.raises(ValidationError, match="integers"):
        xai.explain(net, X, method="feature_ablation", target=0, feature_mask=np.zeros((2, 6, 8)))
    with pytest.raises(ValidationError, match="at least 2"):
        xai.explain(net, X[:1], method="feature_permutation", target=0)


def test_rows_with_missing_values_of_a_model_that_takes_them_are_ablated_as_defined():
    """A model that handles NaN (scikit-learn's HistGradientBoosting) is explained on rows
    with missing values: each feature's drop is f(x) - f(x with it set to the baseline),
    computed here call by call (Captum's ablation multiplies the input by its mask, which
    turns a NaN kept by the mask into NaN, so it is no oracle here); occlusion by windows
    of one feature is the same."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    X[rng.random(X.shape) < 0.2] = np.nan
    est = HistGradientBoostingClassifier(max_iter=15, random_state=0).fit(X, y)
    rows = X[:5]
    assert np.isnan(rows).any()
    e = xai.explain(est, rows, method="feature_ablation", baselines=0.5, target=1)
    f = lambda a: est.predict_proba(a)[:, 1]  # noqa: E731
    want = np.empty_like(rows)
    for j in range(4):
        ablated = rows.copy()
        ablated[:, j] = 0.5
        want[:, j] = f(rows) - f(ablated)
    np.testing.assert_allclose(e.values, want, rtol=1e-9, atol=1e-12)
    o = xai.explain(
        est, rows, method="occlusion", sliding_window_shapes=(1,), baselines=0.5, target=1
    )
    np.testing.assert_allclose(o.values, want, rtol=1e-9, atol=1e-12)
