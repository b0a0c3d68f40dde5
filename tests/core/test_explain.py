"""xai.explain dispatches by name, checks capabilities and options first, and fills in the Explanation."""

import types

import numpy as np
import pandas as pd
import pytest

import xai_core as xai
from xai_core.plugin.manager import Registry, get_plugin_manager
from xai_core.testing import LinearModel


class GradTimesInput(xai.Explainer):
    """gradient x input: a tiny gradient explainer for dispatch tests."""

    name = "gxi_test"
    requires = frozenset({"predict", "gradient"})

    def __init__(self, scale=1.0):
        self.scale = scale
        self.calls = 0

    def explain(self, runner, X, target):
        values = self.scale * runner.gradient(X, target) * X
        return xai.Explanation(
            values=values, base_values=np.zeros(len(X)), target=target, meta={"k": 1}
        )


@pytest.fixture
def registry(monkeypatch):
    """A registry with the test explainer registered by a temporary plugin."""
    mod = types.ModuleType("tmp_plugin")
    mod.xai_register_explainers = xai.hookimpl(lambda: [GradTimesInput])
    pm = get_plugin_manager()
    pm.register(mod, name="tmp_plugin")
    reg = Registry.from_plugin_manager(pm)
    monkeypatch.setattr("xai_core.plugin.manager._DEFAULT", reg)
    return reg


@pytest.fixture
def linear():
    """A 3-feature, 2-output linear model with known gradients."""
    return LinearModel(np.array([[1.0, 0.0], [2.0, -1.0], [0.0, 3.0]]))


def test_explain_dispatches_and_fills_fields(registry, linear):
    """The result carries method, backend, data, options, timing and the explainer's meta."""
    X = np.array([[1.0, 1.0, 1.0], [2.0, 0.0, 1.0]])
    e = xai.explain(
        linear, X, method="gxi_test", target=[0, 1], feature_names=["a", "b", "c"], scale=2.0
    )
    np.testing.assert_allclose(e.values, [[2.0, 4.0, 0.0], [0.0, 0.0, 6.0]])
    assert e.method == "gxi_test" and e.backend == "cpu"
    assert e.feature_names == ("a", "b", "c")
    np.testing.assert_array_equal(e.data, X)
    assert e.meta["options"] == {"scale": 2.0} and e.meta["k"] == 1 and e.meta["seconds"] >= 0


def test_default_target_is_predicted_class(registry, linear):
    """Without a target each row explains its largest output."""
    X = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    e = xai.explain(linear, X, method="gxi_test")
    np.testing.assert_array_equal(e.target, [0, 1])


def test_feature_names_from_dataframe(registry, linear):
    """A DataFrame's columns become the feature names."""
    X = pd.DataFrame({"age": [1.0], "income": [2.0], "debt": [3.0]})
    assert xai.explain(linear, X, method="gxi_test").feature_names == ("age", "income", "debt")


def test_unknown_option_lists_valid_ones(registry, linear):
    """An option the method does not take is rejected, listing the ones it does."""
    with pytest.raises(
        xai.UnknownNameError,
        match=r"Unknown option of method 'gxi_test' 'steps'\. Available: scale",
    ):
        xai.explain(linear, np.ones((1, 3)), method="gxi_test", steps=5)


def test_black_box_cannot_use_gradient_method(registry):
    """A method needing gradients on a black box fails before any model call."""
    calls = []

    def f(X):
        calls.append(len(X))
        return X.sum(1)

    with pytest.raises(xai.CapabilityError, match="black box"):
        xai.explain(f, np.ones((2, 3)), method="gxi_test")
    assert calls == []


def test_bad_input_is_rejected_before_work(registry, linear):
    """Wrong feature count, NaN, bad target and wrong feature_names fail with clear messages."""
    with pytest.raises(
        xai.ShapeError, match=r"X must have shape \(n_samples, 3\); got an array of shape \(2, 4\)"
    ):
        xai.explain(linear, np.ones((2, 4)), method="gxi_test")
    with pytest.raises(xai.ValidationError, match="NaN"):
        xai.explain(linear, np.array([[np.nan, 1.0, 1.0]]), method="gxi_test")
    with pytest.raises(xai.ValidationError, match=r"target must be in \[0, 2\)"):
        xai.explain(linear, np.ones((1, 3)), method="gxi_test", target=2)
    with pytest.raises(xai.ValidationError, match="feature_names must have 3 names"):
        xai.explain(linear, np.ones((1, 3)), method="gxi_test", feature_names=["a"])


def test_runner_can_be_passed(registry, linear):
    """A ModelRunner is used as it is, with its backend."""
    runner = xai.ModelRunner(linear, backend=xai.get_backend("cpu", dtype="float64"))
    e = xai.explain(runner, np.ones((1, 3)), method="gxi_test", target=1)
    assert e.backend == "cpu" and runner.counters["matmuls"] >= 0


def test_image_networks_record_their_image_shape():
    """A CNN over flattened pixels records (28, 28) in meta, so reports draw heatmaps."""
    net = xai.nn.Sequential(
        [
            xai.nn.Reshape((1, 28, 28)),
            xai.nn.Conv2D(2, 3),
            xai.nn.ReLU(),
            xai.nn.Flatten(),
            xai.nn.Dense(3),
            xai.nn.Softmax(),
        ],
        input_shape=(784,),
    )
    assert net.image_shape == (28, 28) and xai.nn.mlp(4).image_shape is None
    e = xai.explain(net, np.random.default_rng(0).random((1, 784)), method="saliency")
    assert e.meta["image_shape"] == (28, 28)
    assert 'class="xai-heatmap"' in e._repr_html_()


def test_chunked_execution_does_not_import_explain():
    """No import cycle: parallel execution and its helpers never import the explain() module."""
    import ast
    import pathlib

    import xai_core.attribution as attribution

    folder = pathlib.Path(attribution.__file__).parent
    for name in ("parallel", "run", "executors", "transport", "blas", "seeds", "options"):
        tree = ast.parse((folder / f"{name}.py").read_text())
        runtime = [n for n in tree.body if not isinstance(n, ast.If)]  # skip `if TYPE_CHECKING:`
        imported = set()
        for node in ast.walk(ast.Module(body=runtime, type_ignores=[])):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
        assert "xai_core.attribution.explainer" not in imported, name
