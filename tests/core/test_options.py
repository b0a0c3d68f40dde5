"""Options as data: aliases, constraints checked before any model call, method="auto", read-only X."""

import warnings
from typing import ClassVar

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import xai_core as xai
from xai_core.attribution.options import Choice, Float, ImageShape, Int, resolve_options
from xai_core.backends.cpu import CPUBackend
from xai_core.plugin.manager import get_registry

RNG = np.random.default_rng(1)
X = RNG.normal(size=(40, 4)).astype(np.float32)
Y = (X[:, 0] + X[:, 1] > 0).astype(int)


class Counted(xai.Model):
    """A smooth 2-output model with gradients that counts its calls."""

    capabilities: ClassVar[frozenset[str]] = frozenset({"predict", "gradient"})
    input_shape = (4,)
    n_outputs = 2

    def __init__(self):
        self.calls = 0

    def predict(self, X, backend=None):
        self.calls += 1
        s = np.tanh(np.asarray(X, dtype=np.float64) * [1.0, -0.5, 2.0, 0.3]).sum(1)
        return np.stack([s, -s], axis=1).astype(X.dtype)

    def gradient(self, X, target, backend=None):
        self.calls += 1
        w = np.array([1.0, -0.5, 2.0, 0.3])
        g = w * (1 - np.tanh(np.asarray(X, dtype=np.float64) * w) ** 2)
        sign = np.where(np.asarray(target) == 0, 1.0, -1.0)[:, None]
        return (g * sign).astype(X.dtype)


# -- the anchors' spellings -------------------------------------------------------------------

ANCHOR_ALIASES = [
    ("shap", {"algorithm": "kernel", "nsamples": 30}, {"algorithm": "kernel", "max_evals": 30}),
    ("lime", {"num_samples": 50, "num_features": 2}, {"n_samples": 50, "max_features": 2}),
    ("ig", {"n_steps": 7}, {"steps": 7}),
    ("ig", {"baselines": 0.5}, {"baseline": 0.5}),
    ("smoothgrad", {"nt_samples": 4}, {"n_samples": 4}),
]


@pytest.mark.parametrize(
    ("method", "anchor", "own"),
    ANCHOR_ALIASES,
    ids=["shap-nsamples", "lime-num", "ig-n_steps", "ig-baselines", "smoothgrad-nt_samples"],
)
def test_anchor_spellings_are_the_same_computation(method, anchor, own):
    """shap's, lime's and Captum's option names give the values of this project's names, silently."""
    reference = {"background": X} if method in ("shap", "lime") else {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        a = xai.explain(Counted(), X[:5], method=method, progress=False, **reference, **anchor)
    b = xai.explain(Counted(), X[:5], method=method, progress=False, **reference, **own)
    np.testing.assert_array_equal(a.values, b.values)
    assert a.meta["options"] == b.meta["options"] or method == "ig"


@pytest.mark.parametrize(
    ("method", "old", "new"),
    [
        ("lime", {"training_data": X}, {"background": X}),
        ("lime", {"background": X, "n_features": 2}, {"background": X, "max_features": 2}),
        ("ig", {"baseline": "mean", "baseline_data": X}, {"baseline": "mean", "background": X}),
    ],
    ids=["lime-training_data", "lime-n_features", "ig-baseline_data"],
)
def test_old_names_warn_and_keep_working(method, old, new):
    """Renamed options still work, with a DeprecationWarning naming the new name."""
    name = next(k for k in old if k not in new)
    with pytest.warns(DeprecationWarning, match=rf"{name}' is deprecated; use "):
        a = xai.explain(Counted(), X[:4], method=method, progress=False, **old)
    b = xai.explain(Counted(), X[:4], method=method, progress=False, **new)
    np.testing.assert_array_equal(a.values, b.values)


def test_an_option_given_under_two_names_is_an_error():
    """nsamples and max_evals together are ambiguous: an error before any model call."""
    model = Counted()
    with pytest.raises(xai.ValidationError, match="given twice, as max_evals= and nsamples="):
        xai.explain(model, X[:2], method="shap", background=X, max_evals=20, nsamples=30)
    assert model.calls == 0


def test_unknown_option_lists_options_and_aliases():
    """An unknown name lists the valid names, aliases included."""
    with pytest.raises(xai.UnknownNameError, match="n_steps.*steps") as info:
        xai.explain(Counted(), X[:2], method="ig", nsteps=3)
    assert "baseline_data" in str(info.value)


# -- constraints: checked by the core, before any model call ---------------------------------

BAD = {
    "shap-max_evals": ("shap", {"max_evals": 0}, "max_evals must be an integer >= 1 or 'auto'"),
    "shap-algorithm": ("shap", {"algorithm": "fast"}, "Available: auto, exact"),
    "shap-seed": ("shap", {"seed": -1}, "seed must be an integer >= 0 or None"),
    "lime-n_samples": ("lime", {"num_samples": 1}, "n_samples must be an integer >= 2"),
    "lime-kernel_width": ("lime", {"kernel_width": -1.0}, "kernel_width must be a finite number"),
    "lime-image_shape": ("lime", {"image_shape": (2, 0)}, "image_shape must be"),
    "lime-progress": ("lime", {"progress": "yes"}, "progress must be True, False or None"),
    "ig-steps": ("ig", {"n_steps": 0}, "steps must be an integer >= 1 or 'auto'"),
    "ig-tolerance": ("ig", {"tolerance": 0}, "tolerance must be a finite number > 0"),
    "smoothgrad-stdev": ("smoothgrad", {"stdev": -0.1}, "stdev must be a finite number >= 0"),
    "smoothgrad-base_options": ("smoothgrad", {"base_options": 3}, "base_options must be a dict"),
    "saliency-abs": ("saliency", {"abs": 1}, "abs must be True or False"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_option_values_fail_before_any_model_call(case):
    """The constraints every explainer declares are checked by explain(), before the model runs."""
    method, options, message = BAD[case]
    model = Counted()
    with pytest.raises(xai.XaiError, match=message.replace("(", r"\(").replace(")", r"\)")):
        xai.explain(model, X[:3], method=method, **options)
    assert model.calls == 0


def test_constraint_objects_check_and_describe():
    """Each constraint accepts what it says, rejects the rest with the option's name, and describes itself."""
    assert Int(1, also=("auto",)).check("auto", "steps") == "auto"
    assert Int(0, allow_none=True).check(None, "k") is None
    with pytest.raises(xai.ValidationError, match="k must be an integer >= 0"):
        Int(0).check(-1, "k")
    assert Float(low=-np.inf).check(-3, "v") == -3.0
    assert Choice(("a", "b"), types=(dict,)).check({}, "c") == {}
    assert ImageShape().check([28, 28], "image_shape") == (28, 28)
    assert Int(1, also=("auto",)).describe() == "int >= 1 or 'auto'"


def test_every_registered_explainer_declares_constraints_for_real_options():
    """Declared constraints and aliases name options the constructor really takes."""
    for name in xai.list_explainers():
        cls = get_registry().explainer(name)
        options = set(cls.option_names())
        assert set(cls.constraints) <= options, name
        assert all(a.name in options for a in cls.aliases.values()), name
        assert not set(cls.aliases) & options, name


def test_resolve_options_maps_aliases_once():
    """resolve_options is the one place aliases become names."""
    from xai_ig import IntegratedGradients

    assert resolve_options(IntegratedGradients, {"n_steps": 5}) == {"steps": 5}
    with pytest.warns(DeprecationWarning):
        assert resolve_options(IntegratedGradients, {"baseline_data": 1}) == {"background": 1}


# -- method="auto", backends, the caller's X ------------------------------------------------------


def test_auto_explains_a_fitted_logistic_regression_with_shap():
    """xai.explain(fitted_logistic_regression, X) works: SHAP for black boxes."""
    model = LogisticRegression().fit(X, Y)
    e = xai.explain(model, X[:5], background=X)
    assert e.method == "shap" and e.values.shape == (5, 4)
    prob = model.predict_proba(X[:5])[np.arange(5), e.target]
    np.testing.assert_allclose(e.base_values + e.values.sum(1), prob, atol=1e-6)


def test_auto_uses_gradients_when_the_model_has_them():
    """A model with gradients gets integrated gradients; on an inference-only backend, SHAP."""
    assert xai.explain(Counted(), X[:3]).method == "ig"
    net = xai.nn.mlp(4, (3,), 2, seed=0)
    assert xai.explain(net, X[:3]).method == "ig"

    class InferenceOnly(CPUBackend):
        supports_gradients = False

    e = xai.explain(Counted(), X[:3], backend=InferenceOnly(), background=X[:8])
    assert e.method == "shap"


class WritesX(xai.Explainer):
    """A misbehaving explainer that tries to change the rows it is given."""

    name = "writes_x"

    def explain(self, runner, X, target):
        X[0, 0] = 99.0
        return xai.Explanation(values=X, base_values=np.zeros(len(X)), target=target)


def test_an_explainer_cannot_change_the_callers_X():
    """Explainers get a read-only view: writing fails and the caller's array is unchanged."""
    rows = X[:3].copy()
    before = rows.copy()
    model = xai.as_model(lambda A: A[:, :2] * 1.0)
    with pytest.raises(ValueError, match="read-only"):
        xai.explain(model, rows, method=WritesX)
    with pytest.raises(xai.XaiError, match="read-only"):  # a ChunkError naming the rows
        xai.explain(model, rows, method=WritesX, chunk_size=2)
    np.testing.assert_array_equal(rows, before)


def test_explain_and_runner_accept_backend_instances():
    """A Backend instance is used as it is, by explain() and by ModelRunner."""
    backend = CPUBackend(dtype="float64")
    net = xai.nn.mlp(4, (3,), 2, seed=0)
    e = xai.explain(net, X[:3], method="saliency", backend=backend)
    assert e.backend == "cpu" and backend.counters["matmuls"] > 0
    runner = xai.ModelRunner(net, backend=backend)
    assert runner.backend is backend
    np.testing.assert_allclose(
        runner.predict(X[:3]), xai.ModelRunner(net).predict(X[:3]), atol=1e-6
    )


@pytest.mark.parametrize("method", ["lime", "shap", "ig", "smoothgrad"])
def test_short_work_shows_no_progress_bar_by_default(method, capsys):
    """progress=None (every method's default): no bar for a few rows."""
    options = {"background": X} if method in ("lime", "shap") else {}
    xai.explain(Counted(), X[:3], method=method, chunk_size=2, **options)
    assert capsys.readouterr().err == ""
