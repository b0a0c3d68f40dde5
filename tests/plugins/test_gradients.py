"""The gradient family beside IG: saliency, gradient x input and SmoothGrad."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

import xai_core as xai
import xai_ig
from xai_core.testing import LinearModel, check_explainer


class Quadratic(xai.Model):
    """out0 = sum(x**2), out1 = x0 * x1 * ... (product of the first two), with closed-form gradients."""

    capabilities: ClassVar[frozenset[str]] = frozenset({"predict", "gradient"})
    n_outputs = 2

    def __init__(self, input_shape=(4,)) -> None:
        self.input_shape = tuple(input_shape)
        self.gradient_calls = 0

    @staticmethod
    def outputs(X):
        flat = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
        return np.stack([(flat**2).sum(1), flat[:, 0] * flat[:, 1]], axis=1)

    @staticmethod
    def jacobian(X):
        flat = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
        prod = np.zeros_like(flat)
        prod[:, 0], prod[:, 1] = flat[:, 1], flat[:, 0]
        return np.stack([2 * flat, prod], axis=1)

    def predict(self, X, backend=None):
        return self.outputs(X).astype(X.dtype)

    def gradient(self, X, target, backend=None):
        self.gradient_calls += 1
        g = self.jacobian(X)[np.arange(len(X)), target]
        return g.reshape(X.shape).astype(X.dtype)


def cpu64():
    return xai.get_backend("cpu", dtype="float64")


@pytest.fixture
def rows():
    return np.random.default_rng(11).normal(size=(5, 4))


@pytest.mark.parametrize(
    "cls",
    [xai_ig.Saliency, xai_ig.GradientXInput, xai_ig.SmoothGrad],
    ids=["saliency", "gradient_x_input", "smoothgrad"],
)
def test_contract(cls):
    """Each companion keeps the explainer contract and is registered under its name."""
    check_explainer(cls, options={"n_samples": 4} if cls is xai_ig.SmoothGrad else None)
    assert cls.name in xai.list_explainers()


@pytest.mark.parametrize("take_abs", [True, False], ids=["abs", "signed"])
def test_saliency_is_the_gradient(rows, take_abs):
    """Saliency equals the analytic gradient (or its magnitude); base_values is f(x)."""
    target = np.array([0, 1, 0, 1, 1])
    e = xai.explain(
        Quadratic(), rows, method="saliency", backend=cpu64(), target=target, abs=take_abs
    )
    grad = Quadratic.jacobian(rows)[np.arange(5), target]
    np.testing.assert_allclose(e.values, np.abs(grad) if take_abs else grad, atol=1e-15)
    np.testing.assert_allclose(e.base_values, Quadratic.outputs(rows)[np.arange(5), target])
    assert e.meta["abs"] is take_abs


def test_saliency_in_chunks_is_one_gradient_per_chunk():
    """Rows are batched: one backward pass per internal_batch_size rows, same values."""
    X = np.random.default_rng(0).normal(size=(10, 4))
    model = Quadratic()
    one = xai.explain(model, X, method="saliency", backend=cpu64(), target=0)
    assert model.gradient_calls == 1
    model = Quadratic()
    split = xai.explain(
        model, X, method="saliency", backend=cpu64(), target=0, internal_batch_size=3
    )
    assert model.gradient_calls == 4
    np.testing.assert_array_equal(split.values, one.values)


def test_gradient_x_input_and_its_additivity(rows):
    """gradient_x_input is x * gradient, and base_values + sum(values) = f(x)."""
    e = xai.explain(Quadratic(), rows, method="gradient_x_input", backend=cpu64(), target=0)
    np.testing.assert_allclose(e.values, rows * 2 * rows, atol=1e-15)
    f = Quadratic.outputs(rows)[:, 0]
    np.testing.assert_allclose(e.base_values + e.values.sum(1), f, atol=1e-13)
    np.testing.assert_allclose(
        e.base_values, -f, atol=1e-13
    )  # the Taylor line of x**2 at x reaches -x**2 at 0


def test_gradient_x_input_equals_ig_on_a_linear_model_without_bias(rows):
    """With no bias and a zero baseline, gradient x input and IG coincide exactly."""
    model = LinearModel(np.random.default_rng(1).normal(size=(4, 3)))
    gxi = xai.explain(model, rows, method="gradient_x_input", backend=cpu64(), target=2)
    ig = xai.explain(model, rows, method="ig", backend=cpu64(), target=2, steps=3)
    np.testing.assert_allclose(gxi.values, ig.values, atol=1e-15)
    np.testing.assert_allclose(gxi.base_values, ig.base_values, atol=1e-15)


def test_smoothgrad_is_seeded(rows):
    """The same seed gives identical SmoothGrad; another seed different values."""
    kwargs = dict(method="smoothgrad", backend=cpu64(), target=1, n_samples=8)
    a = xai.explain(Quadratic(), rows, seed=1, **kwargs)
    np.testing.assert_array_equal(xai.explain(Quadratic(), rows, seed=1, **kwargs).values, a.values)
    assert not np.array_equal(xai.explain(Quadratic(), rows, seed=2, **kwargs).values, a.values)
    assert a.meta["seed"] == 1


def test_smoothgrad_without_noise_is_the_base_method(rows):
    """stdev=0 reduces SmoothGrad to its base method, for saliency and for IG."""
    for base, options in [("saliency", {"abs": False}), ("ig", {"steps": 8})]:
        sg = xai.explain(
            Quadratic(),
            rows,
            method="smoothgrad",
            backend=cpu64(),
            target=1,
            stdev=0.0,
            n_samples=3,
            base=base,
            base_options=options,
        )
        ref = xai.explain(Quadratic(), rows, method=base, backend=cpu64(), target=1, **options)
        np.testing.assert_allclose(sg.values, ref.values, atol=1e-14)
        np.testing.assert_allclose(sg.base_values, ref.base_values, atol=1e-14)


@pytest.mark.parametrize(
    "nt_type",
    ["smoothgrad", "smoothgrad_sq", "vargrad"],
    ids=["smoothgrad", "smoothgrad_sq", "vargrad"],
)
def test_smoothgrad_statistics_on_a_quadratic(nt_type):
    """For f = sum(x**2) the noisy gradient is 2(x + e): mean 2x, second moment 4(x**2 + s**2), variance 4 s**2."""
    x = np.array([[0.0, 1.0, -2.0, 3.0]])
    m = 4000
    e = xai.explain(
        Quadratic(),
        x,
        method="smoothgrad",
        backend=cpu64(),
        target=0,
        n_samples=m,
        stdev=0.1,
        nt_type=nt_type,
        base_options={"abs": False},
    )
    s = 0.1 * (3.0 - -2.0)
    np.testing.assert_allclose(e.meta["sigma"], [s])
    expected = {
        "smoothgrad": 2 * x,
        "smoothgrad_sq": 4 * (x**2 + s**2),
        "vargrad": np.full_like(x, 4 * s**2),
    }
    # five standard errors of each statistic over m Gaussian draws
    stderr = {
        "smoothgrad": 2 * s / np.sqrt(m),
        "smoothgrad_sq": np.sqrt((64 * x**2 * s**2 + 32 * s**4) / m),
        "vargrad": 4 * s**2 * np.sqrt(2 / m),
    }
    assert np.all(np.abs(e.values - expected[nt_type]) <= 5 * stderr[nt_type])


def test_smoothgrad_groups_and_chunks_do_not_change_results(rows, monkeypatch):
    """Noise is drawn in one stream: splitting rows into groups or points into chunks changes nothing."""
    kwargs = dict(
        method="smoothgrad", backend=cpu64(), target=0, n_samples=6, base_options={"abs": False}
    )
    whole = xai.explain(Quadratic(), rows, **kwargs)
    chunked = xai.explain(Quadratic(), rows, internal_batch_size=4, **kwargs)
    np.testing.assert_array_equal(chunked.values, whole.values)
    monkeypatch.setattr(xai_ig.smoothgrad, "MAX_CHUNK_ELEMENTS", 2 * 6 * 4)  # two rows per group
    model = Quadratic()
    grouped = xai.explain(model, rows, **kwargs)
    assert model.gradient_calls == 3
    np.testing.assert_allclose(grouped.values, whole.values, rtol=1e-15, atol=0)


def test_noise_tunnel_over_ig_keeps_each_sample_delta(rows):
    """base='ig' is a noise tunnel: per-copy convergence deltas of shape (n, n_samples), near zero at 32 steps."""
    e = xai.explain(
        Quadratic(),
        rows,
        method="smoothgrad",
        backend=cpu64(),
        target=1,
        n_samples=5,
        base="ig",
        base_options={"steps": 32},
    )
    assert e.meta["sample_convergence_delta"].shape == (5, 5)
    np.testing.assert_allclose(e.meta["sample_convergence_delta"], 0, atol=1e-12)
    assert e.meta["sample_output"].shape == (5, 5)
    # IG of the product x0 * x1 from zero is half of it to each factor, so the average is half the mean output
    np.testing.assert_allclose(e.values[:, 0], e.meta["sample_output"].mean(1) / 2, atol=1e-12)
    assert e[1:3].meta["sample_convergence_delta"].shape == (2, 5)


BAD = {
    "base": (
        dict(method="smoothgrad", base="lime"),
        xai.UnknownNameError,
        "gradient_x_input, ig, saliency",
    ),
    "base-option": (
        dict(method="smoothgrad", base_options={"steps": 4}),
        xai.UnknownNameError,
        "option of base method 'saliency'",
    ),
    "base-options-type": (
        dict(method="smoothgrad", base_options=[1]),
        xai.ValidationError,
        "base_options must",
    ),
    "n-samples": (dict(method="smoothgrad", n_samples=0), xai.ValidationError, "n_samples must be"),
    "stdev": (dict(method="smoothgrad", stdev=-0.1), xai.ValidationError, "stdev must be"),
    "nt-type": (dict(method="smoothgrad", nt_type="median"), xai.UnknownNameError, "smoothgrad_sq"),
    "abs": (dict(method="saliency", abs="yes"), xai.ValidationError, "abs must be"),
    "chunk": (
        dict(method="gradient_x_input", internal_batch_size=-2),
        xai.ValidationError,
        "internal_batch_size must be",
    ),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_options_fail_before_any_gradient(rows, case):
    """Bad option values raise clear errors naming them, before any backward pass."""
    options, error, message = BAD[case]
    model = Quadratic()
    with pytest.raises(error, match=message):
        xai.explain(model, rows, backend=cpu64(), target=0, **options)
    assert model.gradient_calls == 0


@pytest.mark.parametrize(
    "method",
    ["saliency", "gradient_x_input", "smoothgrad"],
    ids=["saliency", "gradient_x_input", "smoothgrad"],
)
def test_black_box_gets_a_capability_error(rows, method):
    """A model without gradients is refused with a CapabilityError before any work."""
    box = xai.as_model(lambda X: np.asarray(X).sum(1), input_shape=(4,))
    with pytest.raises(xai.CapabilityError, match="black box"):
        xai.explain(box, rows, method=method)


@pytest.mark.parametrize("nt_type", ["smoothgrad", "smoothgrad_sq", "vargrad"])
def test_smoothgrad_with_stdevs_equals_captum_noise_tunnel_fed_the_same_noise(nt_type, monkeypatch):
    """``stdevs`` is Captum's absolute noise: fed the draws SmoothGrad made (row ``r``'s
    stream ``[seed, r, 1]``), ``NoiseTunnel(Saliency)`` gives the same values."""
    torch = pytest.importorskip("torch")
    captum_attr = pytest.importorskip("captum.attr")
    from xai_core.attribution.seeds import rngs_for_rows

    torch.manual_seed(0)
    module = torch.nn.Sequential(
        torch.nn.Conv2d(2, 3, 3), torch.nn.Tanh(), torch.nn.Flatten(), torch.nn.Linear(12, 3)
    )
    X = np.random.default_rng(4).normal(size=(3, 2, 4, 4))
    net = xai.from_torch(module, torch.zeros(1, 2, 4, 4), dtype="float64")
    module = module.double()
    m, stdevs, target = 5, 0.3, np.array([0, 2, 1])
    e = xai.explain(
        net,
        X,
        method="smoothgrad",
        backend=cpu64(),
        target=target,
        n_samples=m,
        stdevs=stdevs,
        nt_type=nt_type,
        seed=3,
    )
    np.testing.assert_array_equal(e.meta["sigma"], np.full(3, stdevs))
    draws = np.concatenate([r.standard_normal((m, 2, 4, 4)) for r in rngs_for_rows(3, range(3), 1)])
    # Captum scales its draws by stdevs held in float32; these are scaled in float64
    monkeypatch.setattr(torch, "normal", lambda mean, std: torch.tensor(draws) * stdevs)
    want = captum_attr.NoiseTunnel(captum_attr.Saliency(module)).attribute(
        torch.tensor(X), nt_type=nt_type, nt_samples=m, stdevs=stdevs, target=torch.tensor(target)
    )
    np.testing.assert_allclose(e.values, want.numpy(), rtol=1e-10, atol=1e-12)
