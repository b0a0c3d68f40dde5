"""Integrated gradients: exactness, convergence, baselines, adaptive steps, batching and errors."""

from __future__ import annotations

import itertools
from typing import ClassVar

import numpy as np
import pytest
from scipy import integrate, ndimage

import xai_core as xai
from xai_core.testing import LinearModel, check_explainer

RULES = ["gausslegendre", "riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid"]
W_TANH = np.array([0.7, -1.3, 0.4])


class Curved(xai.Model):
    """Three outputs of three inputs with closed-form gradients; counts backward passes.

    out0 = sum(sin(x)); out1 = x0 * sin(x1) + x2**2 * x0; out2 = tanh(w . x).
    """

    capabilities: ClassVar[frozenset[str]] = frozenset({"predict", "gradient"})
    input_shape = (3,)
    n_outputs = 3

    def __init__(self) -> None:
        self.gradient_calls = 0

    @staticmethod
    def outputs(X: np.ndarray) -> np.ndarray:
        x0, x1, x2 = np.asarray(X, dtype=np.float64).T
        return np.stack(
            [np.sin(X).sum(1), x0 * np.sin(x1) + x2**2 * x0, np.tanh(X @ W_TANH)], axis=1
        )

    @staticmethod
    def jacobian(X: np.ndarray) -> np.ndarray:
        """Shape (n, 3 outputs, 3 inputs)."""
        x0, x1, x2 = np.asarray(X, dtype=np.float64).T
        row1 = np.stack([np.sin(x1) + x2**2, x0 * np.cos(x1), 2 * x2 * x0], axis=1)
        row2 = (1 - np.tanh(X @ W_TANH) ** 2)[:, None] * W_TANH
        return np.stack([np.cos(X), row1, row2], axis=1)

    def predict(self, X, backend=None):
        return self.outputs(X).astype(X.dtype)

    def gradient(self, X, target, backend=None):
        self.gradient_calls += 1
        return self.jacobian(X)[np.arange(len(X)), target].astype(X.dtype)


class NoGradients(xai.Backend):
    """An inference-only float backend, as an int8 accelerator is."""

    name = "inference_only"
    supports_gradients = False

    def matmul(self, a, b):
        return np.asarray(a) @ np.asarray(b)


def cpu64():
    return xai.get_backend("cpu", dtype="float64")


@pytest.fixture
def rows():
    return np.random.default_rng(3).uniform(-1.5, 1.5, size=(6, 3))


def exact_tanh_ig(X, b):
    """IG of tanh(w . x): the gradient is parallel to w, so the path integral is closed form."""
    d = X - b
    f = np.tanh(X @ W_TANH) - np.tanh(b @ W_TANH)
    return W_TANH * d * (f / (d @ W_TANH))[:, None]


def test_contract():
    """IntegratedGradients keeps the explainer contract checked for every plugin."""
    from xai_ig import IntegratedGradients

    check_explainer(IntegratedGradients, options={"steps": 8})
    assert "ig" in xai.list_explainers()


BASELINE_CASES = {
    "zeros": lambda X: ("zeros", np.zeros_like(X)),
    "constant": lambda X: (0.25, np.full_like(X, 0.25)),
    "shared-row": lambda X: (X[0] * 0.5, np.broadcast_to(X[0] * 0.5, X.shape)),
    "per-row": lambda X: (X[::-1] * 0.3, X[::-1] * 0.3),
}


@pytest.mark.parametrize("rule", RULES, ids=RULES)
@pytest.mark.parametrize("case", list(BASELINE_CASES), ids=list(BASELINE_CASES))
def test_linear_model_is_exact(rule, case):
    """On a linear model IG equals (x - baseline) * w for every rule and baseline, to fp64 precision."""
    rng = np.random.default_rng(0)
    W = rng.normal(size=(5, 3))
    model = LinearModel(W, rng.normal(size=3))
    X = rng.normal(size=(7, 5))
    spec, b = BASELINE_CASES[case](X)
    target = np.array([0, 1, 2, 0, 1, 2, 0])
    e = xai.explain(
        model,
        X,
        method="ig",
        backend=cpu64(),
        target=target,
        integration=rule,
        steps=5,
        baseline=spec,
    )
    np.testing.assert_allclose(e.values, (X - b) * W[:, target].T, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(e.meta["convergence_delta"], 0, atol=1e-12)


def test_sum_of_sines_closed_form(rows):
    """For sum(sin(x)) IG_i = sin(x_i) - sin(b_i), reached by Gauss-Legendre to machine precision."""
    b = np.random.default_rng(4).uniform(-1, 1, size=rows.shape)
    e = xai.explain(Curved(), rows, method="ig", backend=cpu64(), target=0, baseline=b, steps=24)
    np.testing.assert_allclose(e.values, np.sin(rows) - np.sin(b), atol=1e-13)
    np.testing.assert_allclose(e.base_values, np.sin(b).sum(1), atol=1e-14)


@pytest.mark.parametrize("target", [1, 2], ids=["product", "tanh"])
def test_nonseparable_function_matches_quadrature(rows, target):
    """For non-separable functions each attribution matches the path integral computed by scipy's quad."""
    b = np.full(3, 0.2)
    e = xai.explain(
        Curved(), rows, method="ig", backend=cpu64(), target=target, baseline=b, steps=32
    )
    expected = np.empty_like(rows)
    for r, i in itertools.product(range(len(rows)), range(3)):

        def integrand(a, r=r, i=i):
            return Curved.jacobian((b + a * (rows[r] - b))[None])[0, target, i]

        expected[r, i] = (rows[r, i] - b[i]) * integrate.quad(
            integrand, 0, 1, epsabs=1e-14, epsrel=1e-13
        )[0]
    np.testing.assert_allclose(e.values, expected, atol=1e-12)
    completeness = Curved.outputs(rows)[:, target] - Curved.outputs(b[None])[0, target]
    np.testing.assert_allclose(e.values.sum(1), completeness, atol=1e-12)


def test_convergence_delta_is_the_completeness_gap(rows):
    """meta convergence_delta is sum(values) - (f(x) - f(b)) per row, from independent outputs."""
    b = np.zeros(3)
    e = xai.explain(
        Curved(), rows, method="ig", backend=cpu64(), target=2, steps=3, integration="riemann_left"
    )
    gap = Curved.outputs(rows)[:, 2] - Curved.outputs(b[None])[0, 2]
    np.testing.assert_allclose(e.meta["convergence_delta"], e.values.sum(1) - gap, atol=1e-15)
    assert np.abs(e.meta["convergence_delta"]).max() > 1e-3  # three left steps really are coarse
    np.testing.assert_allclose(
        e.meta["relative_convergence_delta"], e.meta["convergence_delta"] / np.abs(gap)
    )
    np.testing.assert_allclose(e.meta["output"], Curved.outputs(rows)[:, 2])
    assert e.meta["steps"] == 3 and e.meta["gradient_points"] == 3 * len(rows)


def test_gausslegendre_converges_faster_than_riemann(rows):
    """Gauss-Legendre beats every Riemann rule by orders of magnitude; the Riemann rules show their orders."""
    b = np.full(3, -0.9)
    exact = exact_tanh_ig(rows, b)

    def error(rule, steps):
        e = xai.explain(
            Curved(),
            rows,
            method="ig",
            backend=cpu64(),
            target=2,
            baseline=b,
            integration=rule,
            steps=steps,
        )
        return np.abs(e.values - exact).max()

    gl = error("gausslegendre", 8)
    for rule in RULES[1:]:
        assert gl < error(rule, 8) / 1e3, rule
    for rule, order in [
        ("riemann_left", 2),
        ("riemann_right", 2),
        ("riemann_middle", 4),
        ("riemann_trapezoid", 4),
    ]:
        ratio = error(rule, 32) / error(rule, 64)
        assert order * 0.85 < ratio < order * 1.15, (rule, ratio)
    assert error("gausslegendre", 16) < 1e-10


@pytest.mark.parametrize("chunk", [1, 5, 17, 1000, None], ids=["1", "5", "17", "1000", "default"])
def test_chunk_size_does_not_change_results(rows, chunk):
    """Any internal_batch_size gives the same attributions, including chunks that split a row's steps."""
    b = np.random.default_rng(9).uniform(-1, 1, size=(len(rows), 2, 3))
    kwargs = dict(method="ig", backend=cpu64(), target=1, baseline=b, steps=7)
    reference = xai.explain(Curved(), rows, internal_batch_size=len(rows) * 14, **kwargs)
    e = xai.explain(Curved(), rows, internal_batch_size=chunk, **kwargs)
    np.testing.assert_allclose(e.values, reference.values, rtol=1e-13, atol=1e-15)


def test_all_rows_and_steps_go_in_one_backward_pass(rows):
    """By default the n * steps path points are one gradient call; internal_batch_size splits them."""
    model = Curved()
    xai.explain(model, rows, method="ig", backend=cpu64(), target=0, steps=50)
    assert model.gradient_calls == 1
    model = Curved()
    xai.explain(
        model, rows, method="ig", backend=cpu64(), target=0, steps=50, internal_batch_size=100
    )
    assert model.gradient_calls == 3  # 300 points in chunks of 100


def test_targets_per_row_and_predicted_class_by_default(rows):
    """Without a target the predicted class is explained; a per-row target is honoured."""
    e = xai.explain(Curved(), rows, method="ig", backend=cpu64(), steps=16)
    predicted = Curved.outputs(rows).argmax(1)
    np.testing.assert_array_equal(e.target, predicted)
    per_row = np.arange(len(rows)) % 3
    e2 = xai.explain(Curved(), rows, method="ig", backend=cpu64(), steps=16, target=per_row)
    single = [
        xai.explain(
            Curved(),
            rows[i : i + 1],
            method="ig",
            backend=cpu64(),
            steps=16,
            target=int(per_row[i]),
        ).values[0]
        for i in range(len(rows))
    ]
    np.testing.assert_allclose(e2.values, np.array(single), atol=1e-15)


def test_mean_baseline_is_the_data_mean(rows):
    """baseline='mean' is IG from the mean row of background."""
    data = np.random.default_rng(1).normal(size=(20, 3))
    e = xai.explain(
        Curved(), rows, method="ig", backend=cpu64(), target=1, baseline="mean", background=data
    )
    ref = xai.explain(Curved(), rows, method="ig", backend=cpu64(), target=1, baseline=data.mean(0))
    np.testing.assert_allclose(e.values, ref.values, atol=1e-15)
    assert e.meta["baseline"]["kind"] == "mean"


def test_expected_gradients_average_single_baselines(rows):
    """baseline='data' averages IG over every reference row, and its completeness uses the mean f(b)."""
    data = np.random.default_rng(2).normal(size=(4, 3))
    e = xai.explain(
        Curved(), rows, method="ig", backend=cpu64(), target=2, baseline="data", background=data
    )
    singles = [
        xai.explain(Curved(), rows, method="ig", backend=cpu64(), target=2, baseline=d).values
        for d in data
    ]
    np.testing.assert_allclose(e.values, np.mean(singles, axis=0), atol=1e-14)
    np.testing.assert_allclose(e.base_values, Curved.outputs(data)[:, 2].mean(), atol=1e-15)
    np.testing.assert_allclose(e.meta["convergence_delta"], 0, atol=1e-12)
    assert e.meta["baseline"]["n_baselines"] == 4


def test_drawn_baselines_are_subsets_and_seeded(rows):
    """n_baselines draws distinct reference rows per row; the same seed repeats them, another changes them."""
    data = np.random.default_rng(5).normal(size=(5, 3))
    W = np.random.default_rng(6).normal(size=(3, 1))
    model = LinearModel(W)
    kwargs = dict(
        method="ig", backend=cpu64(), baseline="data", background=data, n_baselines=2, steps=2
    )
    e = xai.explain(model, rows, seed=7, **kwargs)
    implied = rows - e.values / W[:, 0]  # the mean baseline of each row
    means = {pair: data[list(pair)].mean(0) for pair in itertools.combinations(range(5), 2)}
    for r in range(len(rows)):
        assert any(np.allclose(implied[r], m, atol=1e-12) for m in means.values()), r
    np.testing.assert_array_equal(xai.explain(model, rows, seed=7, **kwargs).values, e.values)
    assert not np.array_equal(xai.explain(model, rows, seed=8, **kwargs).values, e.values)


def test_uniform_baselines_are_seeded_noise_in_the_data_range(rows):
    """baseline='uniform' draws n_baselines noise rows per row within X's range, repeatably."""
    W = np.random.default_rng(6).normal(size=(3, 1))
    kwargs = dict(method="ig", backend=cpu64(), baseline="uniform", n_baselines=1, steps=2)
    e = xai.explain(LinearModel(W), rows, seed=3, **kwargs)
    implied = rows - e.values / W[:, 0]
    assert rows.min() <= implied.min() and implied.max() <= rows.max()
    assert implied.std() > 0.3
    np.testing.assert_array_equal(
        xai.explain(LinearModel(W), rows, seed=3, **kwargs).values, e.values
    )
    assert not np.array_equal(xai.explain(LinearModel(W), rows, seed=4, **kwargs).values, e.values)


@pytest.mark.parametrize("layout", [(9, 11), (2, 9, 11)], ids=["HW", "CHW"])
def test_blur_baseline_is_a_gaussian_blur_of_each_image(layout):
    """baseline='blur' blurs each image spatially (channels apart); flattened images need image_shape."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(3, *layout))
    W = rng.normal(size=(int(np.prod(layout)), 1))
    sigma = (0,) * (len(layout) - 1) + (1.5, 1.5)
    blurred = ndimage.gaussian_filter(X, sigma=sigma, mode="nearest")
    e = xai.explain(
        LinearModel(W, input_shape=layout),
        X,
        method="ig",
        backend=cpu64(),
        baseline="blur",
        blur_sigma=1.5,
        steps=2,
    )
    np.testing.assert_allclose(e.values, (X - blurred) * W[:, 0].reshape(layout), atol=1e-13)
    flat = xai.explain(
        LinearModel(W),
        X.reshape(3, -1),
        method="ig",
        backend=cpu64(),
        baseline="blur",
        blur_sigma=1.5,
        image_shape=layout,
        steps=2,
    )
    np.testing.assert_allclose(flat.values, e.values.reshape(3, -1), atol=1e-15)


def test_blur_baseline_reads_the_image_shape_the_network_records():
    """A CNN on flat rows records its image shape: baseline='blur' blurs those images, as LIME and SHAP read them."""
    rng = np.random.default_rng(1)
    net = xai.nn.Sequential(
        [xai.nn.Reshape((1, 9, 11)), xai.nn.Flatten(), xai.nn.Dense(1)],
        input_shape=(99,),
        dtype="float64",
        seed=0,
    )
    assert tuple(net.image_shape) == (9, 11)
    X = rng.uniform(size=(3, 99))
    e = xai.explain(net, X, method="ig", backend=cpu64(), baseline="blur", blur_sigma=1.5, steps=2)
    blurred = ndimage.gaussian_filter(X.reshape(3, 9, 11), sigma=(0, 1.5, 1.5), mode="nearest")
    w = net.layers[-1].weight[:, 0]
    np.testing.assert_allclose(e.values, (X - blurred.reshape(3, -1)) * w, atol=1e-12)
    assert e.meta["baseline"]["image_shape"] == (9, 11)
    zeros = xai.explain(net, X, method="ig", backend=cpu64(), steps=2)  # other baselines: no shape
    np.testing.assert_allclose(zeros.values, X * w, atol=1e-12)


BAD_BASELINES = {
    "unknown-name": (
        dict(baseline="black"),
        xai.UnknownNameError,
        "Available: blur, data, mean, uniform, zeros",
    ),
    "wrong-shape": (dict(baseline=np.zeros(4)), xai.ShapeError, r"baseline must have shape \(3,\)"),
    "wrong-rows": (
        dict(baseline=np.zeros((4, 3))),
        xai.ShapeError,
        r"got an array of shape \(4, 3\)",
    ),
    "nan": (dict(baseline=np.array([0.0, np.nan, 0.0])), xai.ValidationError, "NaN"),
    "text-array": (dict(baseline=np.array(["a", "b", "c"])), xai.ValidationError, "numeric"),
    "bool": (dict(baseline=True), xai.ValidationError, "baseline must be"),
    "inf": (dict(baseline=float("inf")), xai.ValidationError, "baseline must be a finite"),
    "mean-without-data": (dict(baseline="mean"), xai.ValidationError, "needs background="),
    "data-wrong-shape": (
        dict(baseline="data", background=np.zeros((5, 2))),
        xai.ShapeError,
        r"background must have shape \(m, 3\)",
    ),
    "too-many-draws": (
        dict(baseline="data", background=np.zeros((2, 3)), n_baselines=3),
        xai.ValidationError,
        "at most the 2 rows",
    ),
    "data-unused": (
        dict(background=np.zeros((2, 3))),
        xai.ValidationError,
        "background is used only with baseline='data' or 'mean'",
    ),
    "n-baselines-unused": (dict(n_baselines=2), xai.ValidationError, "n_baselines is used only"),
    "blur-tabular": (dict(baseline="blur"), xai.ValidationError, "needs images"),
    "blur-bad-image-shape": (
        dict(baseline="blur", image_shape=(2, 2)),
        xai.ShapeError,
        "image_shape must be",
    ),
    "blur-bad-sigma": (
        dict(baseline="blur", image_shape=(1, 3), blur_sigma=0),
        xai.ValidationError,
        "blur_sigma must be",
    ),
}


@pytest.mark.parametrize("case", list(BAD_BASELINES), ids=list(BAD_BASELINES))
def test_bad_baselines_are_rejected_before_any_gradient(rows, case):
    """Every malformed baseline raises a clear error naming the option, before a backward pass."""
    options, error, message = BAD_BASELINES[case]
    model = Curved()
    with pytest.raises(error, match=message):
        xai.explain(model, rows, method="ig", backend=cpu64(), target=0, **options)
    assert model.gradient_calls == 0


BAD_OPTIONS = {
    "steps-zero": (dict(steps=0), xai.ValidationError, "steps must be an integer >= 1"),
    "steps-text": (
        dict(steps="many"),
        xai.ValidationError,
        "steps must be an integer >= 1 or 'auto'",
    ),
    "steps-float": (dict(steps=2.5), xai.ValidationError, "steps must be"),
    "trapezoid-one-step": (
        dict(steps=1, integration="riemann_trapezoid"),
        xai.ValidationError,
        ">= 2",
    ),
    "unknown-rule": (
        dict(integration="simpson"),
        xai.UnknownNameError,
        "gausslegendre, riemann_left",
    ),
    "tolerance": (dict(steps="auto", tolerance=-1), xai.ValidationError, "tolerance must be"),
    "max-steps": (dict(steps="auto", max_steps=0), xai.ValidationError, "max_steps must be"),
    "seed": (dict(seed=-1), xai.ValidationError, "seed must be"),
    "batch": (dict(internal_batch_size=0), xai.ValidationError, "internal_batch_size must be"),
    "progress": (dict(progress="yes"), xai.ValidationError, "progress must be"),
    "unknown-option": (dict(nsteps=4), xai.UnknownNameError, "option of method 'ig'"),
}


@pytest.mark.parametrize("case", list(BAD_OPTIONS), ids=list(BAD_OPTIONS))
def test_bad_options_are_rejected_before_any_gradient(rows, case):
    """Every bad option value raises a clear error naming it, before a backward pass."""
    options, error, message = BAD_OPTIONS[case]
    model = Curved()
    with pytest.raises(error, match=message):
        xai.explain(model, rows, method="ig", backend=cpu64(), target=0, **options)
    assert model.gradient_calls == 0


def test_adaptive_steps_double_until_each_row_converges(rows):
    """steps='auto' doubles steps per row until |relative delta| <= tolerance and keeps the trace."""
    b = np.full(3, -1.0)
    X = np.vstack([rows, [[0.5, 0.5, 0.5]], [[3.0, -3.0, 2.0]]])
    e = xai.explain(
        Curved(),
        X,
        method="ig",
        backend=cpu64(),
        target=2,
        baseline=b,
        steps="auto",
        tolerance=1e-6,
        integration="riemann_middle",
        max_steps=4096,
    )
    trace = e.meta["steps_trace"]
    assert [t["steps"] for t in trace] == [8 * 2**i for i in range(len(trace))]
    assert [t["rows"] for t in trace][0] == len(X)
    assert all(a["rows"] - a["converged"] == b["rows"] for a, b in itertools.pairwise(trace))
    assert e.meta["converged"].all()
    assert np.all(np.abs(e.meta["relative_convergence_delta"]) <= 1e-6)
    assert len(set(e.meta["steps"].tolist())) > 1  # rows stop at different levels
    for r in range(len(X)):  # each row is exactly the fixed-step result at its own steps
        fixed = xai.explain(
            Curved(),
            X[r : r + 1],
            method="ig",
            backend=cpu64(),
            target=2,
            baseline=b,
            steps=int(e.meta["steps"][r]),
            integration="riemann_middle",
        )
        np.testing.assert_allclose(e.values[r], fixed.values[0], atol=1e-15)
    assert e.meta["gradient_points"] == sum(t["steps"] * t["rows"] for t in trace)


def test_adaptive_steps_warn_at_the_cap(rows):
    """When max_steps is reached before the tolerance the result is kept, flagged and warned about."""
    with pytest.warns(xai.XaiWarning, match="reached max_steps=16"):
        e = xai.explain(
            Curved(),
            rows,
            method="ig",
            backend=cpu64(),
            target=2,
            steps="auto",
            tolerance=1e-14,
            integration="riemann_left",
            max_steps=16,
        )
    assert [t["steps"] for t in e.meta["steps_trace"]] == [8, 16]
    assert not e.meta["converged"].any()
    np.testing.assert_array_equal(e.meta["steps"], 16)


def test_relative_delta_has_a_floor_where_the_output_does_not_move():
    """A row equal to its baseline has zero attributions and a finite relative delta."""
    X = np.array([[0.3, -0.2, 0.1], [1.0, 1.0, 1.0]])
    e = xai.explain(Curved(), X, method="ig", backend=cpu64(), target=2, baseline=X[0])
    np.testing.assert_array_equal(e.values[0], 0)
    assert np.isfinite(e.meta["relative_convergence_delta"]).all()


def test_black_box_and_inference_only_backends_get_a_capability_error(rows):
    """No gradients: a CapabilityError that says why and names the backends that do have them."""
    box = xai.as_model(lambda X: np.asarray(X).sum(1), input_shape=(3,))
    with pytest.raises(xai.CapabilityError, match="black box"):
        xai.explain(box, rows, method="ig")
    model = Curved()
    with pytest.raises(xai.CapabilityError, match="cpu") as info:
        xai.explain(model, rows, method="ig", backend=NoGradients())
    assert "inference_only" in str(info.value)
    assert model.gradient_calls == 0


def test_progress_bar_only_when_asked_or_long(rows, capsys, monkeypatch):
    """progress=True shows a bar, False none; by default one shows from ten chunks on (on a terminal)."""
    from xai_core import progress as progress_module

    monkeypatch.setattr(progress_module, "interactive", lambda: True)
    cases = [
        (True, 24, True),
        (False, 1, False),
        (None, 4, False),
        (None, 2, True),
    ]  # 6, 24, 6, 12 passes
    for progress, chunk, shown in cases:
        xai.explain(
            Curved(),
            rows,
            method="ig",
            backend=cpu64(),
            target=0,
            steps=4,
            internal_batch_size=chunk,
            progress=progress,
        )
        err = capsys.readouterr().err
        assert (f"IG {len(rows)} rows:" in err and f"/{len(rows)} " in err) is shown, (
            progress
        )  # a bar over rows


def test_float32_backend_delta_reflects_its_precision(rows):
    """On the default fp32 CPU the result matches fp64 to fp32 precision and the delta says so."""
    e32 = xai.explain(Curved(), rows, method="ig", target=2, steps=32)
    e64 = xai.explain(Curved(), rows, method="ig", backend=cpu64(), target=2, steps=32)
    np.testing.assert_allclose(e32.values, e64.values, atol=1e-5)
    assert 1e-12 < np.abs(e32.meta["convergence_delta"]).max() < 1e-5
    assert np.abs(e64.meta["convergence_delta"]).max() < 1e-13


# -- native networks on MNIST, and the hardware backends ------------------------------------------


class Bf16Reference(xai.Backend):
    """The TPU's numerics written out: matmul operands rounded to bfloat16, products and sums in fp32."""

    name = "bf16_reference"

    def matmul(self, a, b):
        import ml_dtypes

        def bf16(m):
            return np.asarray(m, dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)

        return bf16(a) @ bf16(b)


@pytest.fixture(scope="module")
def mnist_mlp():
    """A 784-32-10 softmax MLP trained for a few seconds on the bundled MNIST sample, and 20 test digits."""
    from xai_core import nn
    from xai_datasets import load_mnist

    train, test = load_mnist("train"), load_mnist("test")
    net = nn.Sequential(
        [nn.Dense(32), nn.ReLU(), nn.Dense(10), nn.Softmax()], input_shape=(784,), seed=0
    )
    net.fit(
        train.X[:1000],
        train.y[:1000],
        optimizer="adam",
        learning_rate=3e-3,
        batch_size=32,
        epochs=3,
        seed=0,
        progress=False,
    )
    assert (net.predict(test.X).argmax(1) == test.y).mean() > 0.8
    return net, test.X[:20]


def test_mnist_delta_is_small_and_shrinks_with_steps(mnist_mlp):
    """On an MNIST MLP the median |relative delta| falls as Gauss-Legendre steps grow, below 0.05% at 256."""
    net, X = mnist_mlp
    medians = []
    for steps in (4, 16, 64, 256):
        e = xai.explain(net, X, method="ig", backend=cpu64(), steps=steps)
        medians.append(np.median(np.abs(e.meta["relative_convergence_delta"])))
    assert all(a > b for a, b in itertools.pairwise(medians)), medians
    assert medians[-1] < 5e-4, medians


def test_mnist_adaptive_steps_reach_the_tolerance(mnist_mlp):
    """steps='auto' on an MNIST MLP brings every row within 0.1% and spends fewer points than the cap."""
    net, X = mnist_mlp
    e = xai.explain(
        net, X, method="ig", backend=cpu64(), steps="auto", tolerance=1e-3, max_steps=1024
    )
    assert e.meta["converged"].all()
    assert np.abs(e.meta["relative_convergence_delta"]).max() <= 1e-3
    assert e.meta["gradient_points"] < len(X) * 1024


def test_tpu_differs_from_cpu_by_bf16_rounding(mnist_mlp):
    """IG on the tpu backend is the CPU's IG in bf16 matmul numerics: it matches a bf16 emulation, not fp32."""
    net, X = mnist_mlp
    runs = {
        name: xai.explain(net, X, method="ig", backend=backend, steps=32)
        for name, backend in [
            ("cpu", "cpu"),
            ("tpu", "tpu"),
            ("bf16", Bf16Reference()),
            ("cpu64", cpu64()),
        ]
    }
    scale = np.abs(runs["cpu64"].values).max()

    def gap(a, b):
        return np.abs(runs[a].values - runs[b].values).max() / scale

    assert gap("tpu", "bf16") < 1e-5  # what bf16 explains, it explains entirely
    assert 2**-12 < gap("tpu", "cpu") < 2**-4  # a difference of bf16's size (unit roundoff 2**-9)
    assert gap("cpu", "cpu64") < 1e-5  # fp32 alone does not make it
    assert runs["tpu"].backend == "tpu" and runs["cpu"].backend == "cpu"
    tpu_delta = np.median(np.abs(runs["tpu"].meta["convergence_delta"]))
    cpu_delta = np.median(np.abs(runs["cpu"].meta["convergence_delta"]))
    assert tpu_delta > cpu_delta  # the delta each backend reports shows its precision


def test_gradient_backends_agree_with_cpu(mnist_mlp):
    """Every registered backend with gradients gives IG close to the CPU's, each with its own delta."""
    net, X = mnist_mlp
    reference = xai.explain(net, X[:5], method="ig", backend=cpu64(), steps=16).values
    for name in xai.list_backends():
        if not xai.get_backend(name).supports_gradients:
            continue
        e = xai.explain(net, X[:5], method="ig", backend=name, steps=16)
        assert e.backend == name and e.meta["convergence_delta"].shape == (5,)
        assert np.abs(e.values - reference).max() < 2**-4 * np.abs(reference).max(), name


def test_edgetpu_refuses_float_gradients_naming_the_backends_that_have_them(mnist_mlp):
    """IG on edgetpu of a float network is a CapabilityError that names backends with gradients;
    its int8 model runs there, with straight-through gradients."""
    net, X = mnist_mlp
    with pytest.raises(xai.CapabilityError, match="gradient") as info:
        xai.explain(net, X[:2], method="ig", backend="edgetpu")
    assert "cpu" in str(info.value) and "tpu" in str(info.value)
    e = xai.explain(xai.quantize(net, X), X[:2], method="ig", backend="edgetpu", steps=8)
    assert e.meta["gradient"].startswith("straight-through")


def test_a_pasted_captum_call_is_integrated_gradients():
    """n_steps=, baselines= and internal_batch_size= (Captum's spellings) compute IG as Captum does.

    On a linear model IG from a baseline b is exactly (x - b) * w, whatever the steps and
    the batching.
    """
    rng = np.random.default_rng(5)
    weight = rng.normal(size=(6, 3))
    X = rng.normal(size=(7, 6))
    e = xai.explain(
        LinearModel(weight),
        X,
        method="ig",
        backend=cpu64(),
        target=2,
        n_steps=16,
        baselines=0.25,
        internal_batch_size=5,
    )
    np.testing.assert_allclose(e.values, (X - 0.25) * weight[:, 2], rtol=1e-10, atol=1e-12)
    assert e.meta["steps"] == 16 and e.meta["internal_batch_size"] == 5


@pytest.mark.parametrize("flat", [False, True], ids=["HWC", "flat-HWC"])
def test_blur_baseline_keeps_channels_last_images_apart(flat):
    """baseline='blur' on (H, W, C) images blurs each channel spatially: a zero channel stays zero."""
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(2, 8, 8, 3))
    X[..., 2] = 0.0
    W = rng.uniform(0.5, 1.5, size=(192, 1))
    blurred = ndimage.gaussian_filter(X, sigma=(0, 1.2, 1.2, 0), mode="nearest")
    rows = X.reshape(2, -1) if flat else X
    e = xai.explain(
        LinearModel(W, input_shape=rows.shape[1:]),
        rows,
        method="ig",
        backend=cpu64(),
        baseline="blur",
        blur_sigma=1.2,
        steps=2,
        **({"image_shape": (8, 8, 3)} if flat else {}),
    )
    baseline = X - e.values.reshape(X.shape) / W[:, 0].reshape(8, 8, 3)
    np.testing.assert_allclose(baseline, blurred, atol=1e-12)
    assert np.abs(baseline[..., 2]).max() < 1e-12
