"""Every built-in explainer, backend and report section keeps the contract in xai_core.testing."""

import secrets
import warnings

import numpy as np
import pandas as pd
import pytest

import xai_core as xai
from xai_core.testing import (
    HOSTILE,
    LinearModel,
    check_backend,
    check_explainer,
    check_report_section,
)

#: Options that keep each first-party explainer's contract check fast.
FAST_OPTIONS = {
    "shap": {"background": np.zeros((3, 4))},
    "lime": {"n_samples": 300, "background": np.random.default_rng(0).normal(size=(50, 4))},
    "ig": {"steps": 8},
    "occlusion": {"sliding_window_shapes": (2,)},
    # one row has nothing to be permuted with: rows to draw the values from
    "feature_permutation": {"data": np.random.default_rng(0).normal(size=(6, 4))},
    "gradient_shap": {"baselines": np.zeros((2, 4))},
}


#: The methods that attribute to a network's layers: run on a small native network, the
#: first layer's input (the network's input) as the layer, so values have the input's shape.
_TO_LAYER_INPUT = {"layer": 0, "attribute_to_layer_input": True, "n_steps": 4}
LAYERED_OPTIONS = {
    "gradcam": {"layer": 0, "attribute_to_layer_input": True},
    "guided_gradcam": {"layer": 0, "attribute_to_layer_input": True},
    "guided_backprop": {},
    "deconvolution": {},
    "layer_ig": _TO_LAYER_INPUT,
    "layer_conductance": _TO_LAYER_INPUT,
    "internal_influence": _TO_LAYER_INPUT,
    "neuron_conductance": {"layer": 0, "neuron_selector": 2, "n_steps": 4},
    "deeplift": {},
    "deeplift_shap": {"baselines": np.random.default_rng(0).normal(size=(2, 4))},
    "lrp": {},
}


def _layered_net():
    """4 features -> Dense(5) -> ReLU -> Dense(3), float64."""
    return xai.nn.Sequential(
        [xai.nn.Dense(5), xai.nn.ReLU(), xai.nn.Dense(3)], input_shape=(4,), dtype="float64"
    )


@pytest.mark.parametrize("name", xai.list_explainers())
def test_registered_explainer_keeps_contract(name):
    """check_explainer passes for each registered explainer."""
    cls = xai.get_registry().explainer(name)
    valid = set(cls.option_names())
    if name in LAYERED_OPTIONS:
        options = {k: v for k, v in LAYERED_OPTIONS[name].items() if k in valid or k == "n_steps"}
        options = {("steps" if k == "n_steps" else k): v for k, v in options.items()}
        check_explainer(cls, options=options, model=_layered_net())
        return
    options = {k: v for k, v in FAST_OPTIONS.get(name, {}).items() if k in valid}
    check_explainer(cls, options=options)


@pytest.mark.parametrize("name", xai.list_backends())
def test_registered_backend_keeps_contract(name):
    """check_backend passes for each registered backend, as an instance and as its class."""
    check_backend(xai.get_backend(name))
    check_backend(xai.get_registry().backend(name))


# -- report sections -----------------------------------------------------------------------
def _names(name):
    return [f"{name} {i}" for i in range(4)], [f"{name} no", f"{name} yes"]


def _table(name):
    rng = np.random.default_rng(0)
    features, classes = _names(name)
    X = rng.normal(size=(40, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    return X, y, features, classes


def _net(name):
    _, classes = _names(name)
    return xai.nn.mlp(4, (5,), 2, activation="relu", output_names=classes, seed=0)


def _explanation(name, image=False):
    rng = np.random.default_rng(0)
    shape = (3, 8, 8) if image else (3, 4)
    features = [f"{name} {i}" for i in range(int(np.prod(shape[1:])))]
    return xai.Explanation(
        values=rng.normal(size=shape),
        base_values=np.zeros(3),
        target=np.array([0, 1, 0]),
        data=rng.uniform(size=shape),
        feature_names=features,
        output_names=_names(name)[1],
        method=name,
        backend=name,
        meta={"seed": 0, "options": {name: name}, name: name},
    )


def _dataset(name, image=False):
    from xai_datasets import Dataset

    X, y, features, classes = _table(name)
    if image:
        X = np.random.default_rng(0).uniform(size=(40, 48))
        features = [f"{name} {i}" for i in range(48)]
    return Dataset(
        X=X,
        y=y,
        feature_names=tuple(features),
        class_names=tuple(classes),
        image_shape=(4, 4, 3) if image else None,
        name=name,
        description=name,
        source=name,
    )


def _whatif(name):
    from sklearn.linear_model import LogisticRegression

    X, y, features, classes = _table(name)
    est = LogisticRegression().fit(X, y)
    w = xai.what_if(est, X, y, feature_names=features, output_names=classes, progress=False)
    w.edit(0, {features[0]: 2.0})
    return w


def _compare(name):
    w = _whatif(name)
    return w.compare_models(w.runner, names=(f"{name} A", f"{name} B"))


def _projection(name):
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(30, 5))
    labels = [f"{name} {i % 3}" for i in range(30)]
    return xai.project(
        vectors, labels=labels, metadata={name: labels}, images=rng.uniform(size=(30, 4, 4))
    )


def _playground(name):
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (40, 2))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    net = xai.nn.mlp(2, hidden=(3,), n_outputs=2)
    view = xai.playground_view(net, (X, y), (X[:10], y[:10]), resolution=8)
    net.fit(X, y, epochs=2, progress=False, callbacks=view)
    return view


def _permutation_importance(name):
    from sklearn.linear_model import LogisticRegression

    X, y, features, _ = _table(name)
    est = LogisticRegression().fit(X, y)
    return xai.permutation_importance(est, X, y, feature_names=features, n_repeats=2)


def _ale(name):
    from sklearn.linear_model import LogisticRegression

    X, y, features, classes = _table(name)
    est = LogisticRegression().fit(X, y)
    return xai.ale(est, X, grid_size=4, feature_names=features, output_names=classes)


def _teachable(name, export=True):
    import tempfile
    from pathlib import Path

    rng = np.random.default_rng(8)
    X = np.concatenate([rng.normal(0, 1, (4, 5)), rng.normal(2, 1, (4, 5))])
    trainer = xai.teachable_trainer((X, np.repeat([0, 1], 4), (name, "b")), kind="pose")
    if export:
        trainer.train(epochs=2, seed=0)
        with tempfile.TemporaryDirectory() as tmp:
            trainer.export(Path(tmp) / name)
    return trainer


#: One or more results per built-in section, each built around a name to be escaped.
RESULTS = {
    "explanation": [_explanation, lambda name: _explanation(name, image=True)],
    "dataset": [_dataset, lambda name: _dataset(name, image=True)],
    "counters": [lambda name: {name: 3, "macs": 12}, lambda name: xai.ModelRunner(_net(name))],
    "table": [
        lambda name: pd.DataFrame(
            {name: [1.0, np.nan], "b": [name, "x"]}, index=pd.Index([name, "r"], name=name)
        )
    ],
    "backend_comparison": [
        lambda name: xai.compare_backends(
            _net(name),
            _table(name)[0][:4],
            method="ig",
            backends=("cpu", "tpu"),
            feature_names=_names(name)[0],
            steps=4,
        )
    ],
    "method_comparison": [
        lambda name: xai.compare_methods(
            _net(name), _table(name)[0][:4], methods=("ig", "saliency", "gradient_x_input")
        )
    ],
    "faithfulness": [
        lambda name: xai.faithfulness(
            _net(name),
            xai.explain(_net(name), _table(name)[0][:4], method="ig", steps=4),
            steps=4,
            n_random=2,
            infidelity_samples=5,
        )
    ],
    "projection": [_projection],
    "playground": [_playground],
    "whatif": [
        _whatif,
        lambda name: xai.what_if(
            _net(name), _table(name)[0], feature_names=_names(name)[0], progress=False
        ),
    ],
    "whatif_edit": [lambda name: _whatif(name).history[0]],
    "whatif_counterfactuals": [lambda name: _whatif(name).nearest_counterfactual(0)],
    "whatif_partial_dependence": [
        lambda name: _whatif(name).partial_dependence(_names(name)[0][0], grid_resolution=3),
        lambda name: _whatif(name).partial_dependence(list(_names(name)[0][:2]), grid_resolution=3),
    ],
    "whatif_slices": [lambda name: _whatif(name).slices(_names(name)[0][1])],
    "whatif_thresholds": [
        lambda name: _whatif(name).thresholds(_names(name)[0][1], "demographic_parity")
    ],
    "whatif_neighbors": [lambda name: _whatif(name).neighbors(0, k=3)],
    "whatif_features": [
        lambda name: _whatif(name).feature_stats(),
        lambda name: _whatif(name).feature_stats(_names(name)[0][1]),
    ],
    "whatif_compare": [lambda name: _compare(name)],
    "global_permutation_importance": [_permutation_importance],
    "global_ale": [_ale],
    "teachable": [_teachable, lambda name: _teachable(name, export=False)],
}
CASES = [(s, i) for s in RESULTS for i in range(len(RESULTS[s]))]


def test_every_registered_section_has_a_contract_case():
    """A newly registered built-in section fails here until it gets a case in RESULTS."""
    assert {s.name for s in xai.get_registry().report_sections} == set(RESULTS)


@pytest.mark.parametrize("name, case", CASES, ids=[f"{s}-{i}" for s, i in CASES])
def test_registered_section_keeps_contract(name, case):
    """check_report_section passes for each built-in section on each of its results."""
    (section,) = [s for s in xai.get_registry().report_sections if s.name == name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence and backend notes are not the point here
        check_report_section(section, RESULTS[name][case])


# -- the checks catch what they should -----------------------------------------------------
class Note:
    """A third party's result type: one user-supplied label."""

    def __init__(self, label):
        self.label = label


def _section(render, script=""):
    return xai.ReportSection("note", Note, render, "Note", script=script)


def _good(note):
    env = xai.report.environment({"note.html.j2": '<p id="{{ uid }}">{{ label }}</p>'})
    return env.get_template("note.html.j2").render(uid=xai.report.new_id("note"), label=note.label)


def test_check_report_section_passes_a_third_party_section_without_registering_it():
    """A section built on the toolkit passes before (and without) being registered."""
    assert "note" not in {s.name for s in xai.get_registry().report_sections}
    check_report_section(_section(_good), Note)


@pytest.mark.parametrize(
    "render, script, match",
    [
        (lambda n: f"<p>{n.label}</p>", "", "must be escaped"),
        (lambda n: f'<p id="n-{secrets.token_hex(4)}">x</p>', "", "same bytes"),
        (lambda n: '<p id="fixed">x</p>', "", "must not share ids"),
        (lambda n: '<img src="https://example.com/a.png" alt="">', "", "data: URI"),
        (lambda n: '<p id="a"></p><p id="a"></p>', "", "unique"),
        (lambda n: "<script>document.title = 1</script>", "", "application/json"),
        (lambda n: '<a href="#elsewhere">x</a>', "", "links to an id"),
        (lambda n: '<p style="background:url(https://x.org/i.png)">x</p>', "", "from outside"),
        (lambda n: "<p>x</p>", "fetch('/beacon')", "network"),
        (lambda n: "<p>x</p>", "", None),
    ],
    ids=[
        "unescaped",
        "random-ids",
        "fixed-ids",
        "external-image",
        "repeated-id",
        "inline-script",
        "dangling-link",
        "external-style",
        "network-script",
        "fine",
    ],
)
def test_check_report_section_catches_broken_sections(render, script, match):
    """Each broken section fails the check with a message naming what is wrong."""
    if match is None:
        check_report_section(_section(render, script), Note)
        return
    with pytest.raises(xai.errors.ContractError, match=match):
        check_report_section(_section(render, script), Note)


def test_hostile_name_is_hostile():
    """HOSTILE closes a script, opens a script and a handler, and breaks out of attributes."""
    assert "</script>" in HOSTILE and "onerror=" in HOSTILE and '"' in HOSTILE and "'" in HOSTILE


# -- explainers and backends ---------------------------------------------------------------
class GradientTimesInput(xai.Explainer):
    """A third party's explainer, never registered: gradient x input."""

    name = "third_party_gxi"
    requires = frozenset({"predict", "gradient"})

    def explain(self, runner, X, target):
        values = runner.gradient(X, target) * X
        return xai.Explanation(values=values, base_values=np.zeros(len(X)), target=target)


def test_check_explainer_runs_an_unregistered_class():
    """check_explainer needs no registration: a third party's class is checked as it is."""
    assert GradientTimesInput.name not in xai.list_explainers()
    check_explainer(GradientTimesInput)


def test_check_explainer_catches_writes_to_x():
    """An explainer that writes into the caller's X fails the contract."""

    class Scribbler(GradientTimesInput):
        def explain(self, runner, X, target):
            X[:] = 0.0
            return super().explain(runner, X, target)

    with pytest.raises(xai.errors.ContractError, match="must not write to X"):
        check_explainer(Scribbler)


def test_check_explainer_catches_a_cost_that_is_not_a_cost():
    """An estimate_cost that returns anything but an xai.Cost or None fails the contract."""

    class Boastful(GradientTimesInput):
        def estimate_cost(self, runner, X):
            return 10**6

    with pytest.raises(xai.errors.ContractError, match="estimate_cost must return an xai.Cost"):
        check_explainer(Boastful)


def test_check_backend_catches_a_wrong_matmul():
    """A backend whose matmul is off fails the contract, naming the problem; classes are accepted."""
    from xai_core.backends.cpu import CPUBackend

    class Sloppy(CPUBackend):
        name = "sloppy"

        def matmul(self, a, b):
            return super().matmul(a, b) * 1.01

    with pytest.raises(xai.errors.ContractError, match="differs from float64"):
        check_backend(Sloppy())
    with pytest.raises(xai.errors.ContractError, match="differs from float64"):
        check_backend(Sloppy)
    with pytest.raises(xai.errors.ContractError, match="subclass of xai_core.Backend"):
        check_backend(int)


def test_check_explainer_catches_nondeterminism():
    """An explainer whose values change between runs fails the contract, unregistered."""

    class Noisy(xai.Explainer):
        name = "noisy"

        def explain(self, runner, X, target):
            return xai.Explanation(
                values=np.random.default_rng().normal(size=X.shape),
                base_values=np.zeros(len(X)),
                target=target,
            )

    with pytest.raises(xai.errors.ContractError, match="identical values"):
        check_explainer(Noisy)


def test_linear_model_reference():
    """The reference linear model predicts X @ W + b and its gradient is W's column."""
    m = LinearModel(np.array([[1.0, 2.0], [3.0, 4.0]]), [0.5, -0.5])
    np.testing.assert_allclose(m.predict(np.array([[1.0, 1.0]])), [[4.5, 5.5]])
    np.testing.assert_allclose(
        m.gradient(np.ones((2, 2)), np.array([0, 1])), [[1.0, 3.0], [2.0, 4.0]]
    )
