"""Deletion, insertion and infidelity against closed forms on linear models."""

import numpy as np
import pytest

import xai_core as xai
from xai_core.compare.faithfulness import faithfulness
from xai_core.testing import LinearModel


def exact_linear(model, X, target):
    """The exact attribution of a linear model at baseline 0: x * w[:, target]."""
    return xai.Explanation(
        values=X * model.weight[:, target].T,
        base_values=np.zeros(len(X)),
        target=target,
        data=X,
        method="exact",
    )


@pytest.fixture
def linear_case():
    """A 2-output linear model over 12 features and 5 rows."""
    rng = np.random.default_rng(0)
    model = LinearModel(rng.normal(size=(12, 2)))
    X = rng.normal(size=(5, 12))
    return model, X, np.array([0, 1, 0, 1, 1])


def test_exact_attribution_beats_random_everywhere(linear_case):
    """For a linear model, deleting by exact attribution lowers the output at least as fast as any order."""
    model, X, target = linear_case
    e = exact_linear(model, X, target)
    f = faithfulness(
        model, e, backend=xai.get_backend("cpu", dtype="float64"), steps=12, n_random=3
    )
    assert np.all(f.deletion <= f.random_deletion + 1e-9)
    assert np.all(f.insertion >= f.random_insertion - 1e-9)
    s = f.summary
    assert (s.deletion_auc < s.random_deletion_auc).all() and (
        s.insertion_auc > s.random_insertion_auc
    ).all()


def test_curve_end_points(linear_case):
    """Deletion starts at f(x) and ends at f(baseline); insertion the other way round."""
    model, X, target = linear_case
    f = faithfulness(
        model, exact_linear(model, X, target), backend=xai.get_backend("cpu", dtype="float64")
    )
    fx = model.predict(X)[np.arange(5), target]
    np.testing.assert_allclose(f.deletion[:, 0], fx)
    np.testing.assert_allclose(f.deletion[:, -1], 0.0, atol=1e-12)
    np.testing.assert_allclose(f.insertion[:, -1], fx)


def test_linear_infidelity_is_zero_for_exact_and_positive_for_random(linear_case):
    """On a linear model the exact attribution explains every perturbation: infidelity 0."""
    model, X, target = linear_case
    f = faithfulness(
        model, exact_linear(model, X, target), backend=xai.get_backend("cpu", dtype="float64")
    )
    np.testing.assert_allclose(f.infidelity, 0.0, atol=1e-20)
    assert (f.random_infidelity > 1e-6).all()


def test_deterministic_and_validated(linear_case):
    """The same seed gives the same figures; an explanation without data is refused."""
    model, X, target = linear_case
    e = exact_linear(model, X, target)
    a, b = faithfulness(model, e, seed=3), faithfulness(model, e, seed=3)
    np.testing.assert_array_equal(a.random_deletion, b.random_deletion)
    no_data = xai.Explanation(values=e.values, base_values=e.base_values, target=e.target)
    with pytest.raises(xai.ValidationError, match="with data"):
        faithfulness(model, no_data)
    with pytest.raises(xai.ValidationError, match="steps must be a positive integer"):
        faithfulness(model, e, steps=0)


def test_seed_none_is_drawn_and_recorded():
    """faithfulness(seed=None) draws a seed and records it; passing it back repeats the figures."""

    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 4)).astype(np.float32)
    net = xai.nn.mlp(4, (5,), 2, seed=0)
    e = xai.explain(net, X, method="saliency")
    f = xai.faithfulness(net, e, seed=None, n_random=2, infidelity_samples=5)
    seed = f.options["seed"]
    assert isinstance(seed, int)
    again = xai.faithfulness(net, e, seed=seed, n_random=2, infidelity_samples=5)
    np.testing.assert_array_equal(f.infidelity, again.infidelity)
