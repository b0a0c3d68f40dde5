"""The TensorFlow Playground's six problems, checked against their geometry."""

from __future__ import annotations

import math

import numpy as np
import pytest

from xai_core.errors import UnknownNameError, ValidationError
from xai_datasets import playground

PROBLEMS = ["circle", "xor", "gauss", "spiral", "reg-plane", "reg-gauss"]


@pytest.mark.parametrize("name", PROBLEMS, ids=PROBLEMS)
def test_shapes_dtypes_and_determinism(name: str) -> None:
    """Each problem gives n 2-D float32 points, is reproducible by seed and varies with it."""
    ds = playground(name, n_samples=201, noise=20, seed=3)
    assert ds.X.shape == (201, 2) and ds.X.dtype == np.float32
    assert ds.feature_names == ("x1", "x2")
    np.testing.assert_array_equal(ds.X, playground(name, 201, 20, 3).X)
    assert not np.array_equal(ds.X, playground(name, 201, 20, 4).X)
    if name.startswith("reg-"):
        assert ds.task == "regression" and ds.y.dtype == np.float32
    else:
        assert ds.task == "classification" and ds.class_names == ("negative", "positive")
        assert ds.y.dtype == np.int64 and set(np.unique(ds.y)) <= {0, 1}


@pytest.mark.parametrize("name", ["gauss", "spiral"], ids=["gauss", "spiral"])
def test_generated_classes_are_balanced(name: str) -> None:
    """Generators that emit one half per class give ceil(n/2) positives, floor(n/2) negatives."""
    assert np.bincount(playground(name, 101).y).tolist() == [50, 51]


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("gaussian", "gauss"),
        ("plane", "reg-plane"),
        ("multi-gaussian", "reg-gauss"),
        ("Reg_Gauss", "reg-gauss"),
    ],
    ids=["gaussian", "plane", "multi-gaussian", "case-and-underscore"],
)
def test_aliases_give_the_same_data(alias: str, canonical: str) -> None:
    """Friendly names are aliases of the Playground's own names."""
    np.testing.assert_array_equal(playground(alias, 50).X, playground(canonical, 50).X)


def test_circle_geometry_without_noise() -> None:
    """Positives lie within radius 2.5, negatives between 3.5 and 5."""
    ds = playground("circle", 400)
    r = np.hypot(ds.X[:, 0], ds.X[:, 1])
    assert np.all(r[ds.y == 1] < 2.5) and np.all((r[ds.y == 0] >= 3.5) & (r[ds.y == 0] <= 5))
    assert ds.y.sum() == 200


def test_circle_labels_come_from_noisy_points() -> None:
    """With noise the label uses the jittered point, so some labels cross the geometry."""
    ds = playground("circle", 400, noise=50)
    r = np.hypot(ds.X[:, 0], ds.X[:, 1]).astype(np.float64)
    assert np.any((r < 2.5) != (ds.y == 1))


def test_xor_geometry_and_padding() -> None:
    """Labels are sign(x1 * x2) without noise; points keep 0.3 away from the axes."""
    ds = playground("xor", 500)
    x = ds.X.astype(np.float64)
    assert np.all(np.abs(x) >= 0.3 - 1e-6) and np.all(np.abs(x) <= 5.3 + 1e-6)
    np.testing.assert_array_equal(ds.y, (x[:, 0] * x[:, 1] >= 0).astype(int))


@pytest.mark.parametrize(("noise", "std"), [(0, math.sqrt(0.5)), (50, 2.0)], ids=["quiet", "noisy"])
def test_gauss_centres_and_spread(noise: float, std: float) -> None:
    """Blobs sit at (2, 2) and (-2, -2) with variance 0.5 + 7 * noise/100."""
    ds = playground("gauss", 4000, noise=noise)
    pos, neg = ds.X[ds.y == 1], ds.X[ds.y == 0]
    np.testing.assert_allclose(pos.mean(axis=0), [2, 2], atol=0.15)
    np.testing.assert_allclose(neg.mean(axis=0), [-2, -2], atol=0.15)
    np.testing.assert_allclose(pos.std(axis=0), [std, std], rtol=0.06)


def test_spiral_points_lie_on_the_arms_without_noise() -> None:
    """Without noise, radius i/n*5 and angle 3.5*pi*i/n (+pi for negatives) are exact."""
    n = 200
    ds = playground("spiral", n)
    x = ds.X.astype(np.float64)
    for label, delta in ((1, 0.0), (0, math.pi)):
        pts = x[ds.y == label]
        r = np.hypot(pts[:, 0], pts[:, 1])
        order = np.argsort(r)
        i = np.arange(n // 2) / (n // 2)
        np.testing.assert_allclose(r[order], i * 5, atol=1e-5)
        t = 1.75 * i * 2 * math.pi + delta
        np.testing.assert_allclose(
            pts[order], np.column_stack([5 * i * np.sin(t), 5 * i * np.cos(t)]), atol=1e-5
        )


def test_reg_plane_label_without_noise() -> None:
    """The plane's label is (x1 + x2) / 10."""
    ds = playground("plane", 300)
    x = ds.X.astype(np.float64)
    np.testing.assert_allclose(ds.y, (x[:, 0] + x[:, 1]) / 10, atol=1e-6)
    assert np.abs(x).max() <= 6


def _reg_gauss_oracle(x: float, y: float) -> float:
    """Transcription of getLabel in the Playground's regressGaussian, one point at a time."""
    gaussians = [
        (-4, 2.5, 1),
        (0, 2.5, -1),
        (4, 2.5, 1),
        (-4, -2.5, -1),
        (0, -2.5, 1),
        (4, -2.5, -1),
    ]
    label = 0.0
    for cx, cy, sign in gaussians:
        d = math.dist((x, y), (cx, cy))
        scaled = min(1.0, max(0.0, 1 - d / 2))
        new = sign * scaled
        if abs(new) > abs(label):
            label = new
    return label


def test_reg_gauss_matches_the_playground_rule() -> None:
    """Each label is the signed bump of largest magnitude, clamped to [-1, 1]."""
    ds = playground("multi-gaussian", 400)
    # recompute from the float32 points: the generator used float64 before rounding
    expected = [_reg_gauss_oracle(a, b) for a, b in ds.X.astype(np.float64)]
    np.testing.assert_allclose(ds.y, expected, atol=1e-5)
    assert np.any(ds.y > 0.5) and np.any(ds.y < -0.5) and np.any(ds.y == 0)


def test_unknown_problem_lists_the_known_ones() -> None:
    """An unknown name raises UnknownNameError listing all problems and aliases."""
    with pytest.raises(UnknownNameError, match="circle.*reg-gauss.*spiral.*xor"):
        playground("moons")


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"n_samples": 0}, "n_samples"),
        ({"n_samples": 2.5}, "n_samples"),
        ({"n_samples": True}, "n_samples"),
        ({"noise": -1}, "noise"),
        ({"noise": 51}, "noise"),
        ({"noise": float("nan")}, "noise"),
        ({"seed": 1.5}, "seed"),
    ],
    ids=[
        "n-zero",
        "n-float",
        "n-bool",
        "noise-negative",
        "noise-too-big",
        "noise-nan",
        "seed-float",
    ],
)
def test_bad_arguments_name_themselves(kwargs: dict, argument: str) -> None:
    """Out-of-range arguments raise ValidationError naming the argument."""
    with pytest.raises(ValidationError, match=argument):
        playground("xor", **kwargs)
