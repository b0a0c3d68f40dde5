"""Names are resolved once, at the top; defaults come from what the explainers declare."""

import ast
import pathlib
import types

import numpy as np
import pytest

import xai_core as xai
from xai_core.attribution.transport import backend_spec
from xai_core.backends.cpu import CPUBackend
from xai_core.errors import ContractError
from xai_core.plugin import resolve
from xai_core.plugin.manager import get_plugin_manager, register_plugin
from xai_core.plugin.registry import Registry
from xai_core.testing import LinearModel, check_explainer

ROOT = pathlib.Path(xai.__file__).resolve().parent.parent


class Inputs(xai.Explainer):
    """Attributes each input to itself: a method whose defaults a test declares."""

    name = "inputs_test"

    def explain(self, runner, X, target):
        return xai.Explanation(
            values=np.array(X, float), base_values=np.zeros(len(X)), target=target
        )


def _explainer(name, default_for, requires=frozenset({"predict"})):
    """An Inputs subclass named ``name`` that declares ``default_for``."""
    return type(name, (Inputs,), {"name": name, "default_for": default_for, "requires": requires})


def _session_with(monkeypatch, *explainers):
    """A registry of the built-ins and ``explainers`` only, as the session's default."""
    pm = get_plugin_manager(autoload=False)
    module = types.ModuleType("declared_defaults")
    module.xai_register_explainers = xai.hookimpl(lambda: list(explainers))
    pm.register(module, name="declared_defaults")
    monkeypatch.setattr("xai_core.plugin.manager._DEFAULT", Registry.from_plugin_manager(pm))


def _calls_get_registry(path: pathlib.Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == "get_registry") or (
                isinstance(f, ast.Attribute) and f.attr == "get_registry"
            ):
                return True
    return False


def test_get_registry_is_called_only_at_the_top():
    """The registry is consulted by the manager, the resolver and the facade, and nowhere else."""
    callers = {
        str(p.relative_to(ROOT))
        for folder in ("xai_core", "plugins", "datasets")
        for p in (ROOT / folder).rglob("*.py")
        if _calls_get_registry(p)
    }
    assert callers == {
        "xai_core/__init__.py",
        "xai_core/plugin/manager.py",
        "xai_core/plugin/resolve.py",
    }


def test_objects_handed_down_never_touch_the_registry(monkeypatch):
    """With a class and a Backend instance, explain, chunks and the runner look no name up."""
    saliency = xai.get_registry().explainer("saliency")
    net = xai.nn.mlp(4, (3,), 2, seed=0)
    X = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    expected = xai.explain(net, X, method="saliency", target=1, chunk_size=2).values

    def no_registry():
        raise AssertionError("the registry was consulted")

    monkeypatch.setattr("xai_core.plugin.manager.get_registry", no_registry)
    runner = xai.ModelRunner(net, CPUBackend())
    assert runner.predict(X).shape == (5, 2)
    e = xai.explain(net, X, method=saliency, backend=CPUBackend(), target=1, chunk_size=2)
    np.testing.assert_array_equal(e.values, expected)
    with pytest.raises(AssertionError, match="consulted"):  # a name still needs the registry
        xai.ModelRunner(net, "cpu")


def test_first_party_defaults_are_declared():
    """auto picks IG for gradients and SHAP for black boxes; compare_methods compares SHAP, LIME, IG."""
    assert resolve.default_explainer(frozenset({"predict", "gradient"})).name == "ig"
    assert resolve.default_explainer(frozenset({"predict"})).name == "shap"
    assert resolve.default_methods("compare") == ["shap", "lime", "ig"]


def test_auto_follows_what_is_registered(monkeypatch):
    """A registered explainer with a better rank becomes method="auto"; with no gradient default the black-box one serves."""
    lead = _explainer("lead_test", {"gradient": -1}, frozenset({"predict", "gradient"}))
    box = _explainer("box_test", {"black_box": 5})
    _session_with(monkeypatch, box, lead)
    net = xai.nn.mlp(4, (3,), 2, seed=0)
    X = np.zeros((2, 4), dtype=np.float32)
    assert xai.explain(net, X, method="auto", target=0).method == "lead_test"
    assert xai.explain(lambda Z: Z[:, :2], X, method="auto", target=0).method == "box_test"
    _session_with(monkeypatch, box)
    assert xai.explain(net, X, method="auto", target=0).method == "box_test"


def test_auto_with_no_declared_default_lists_the_explainers(monkeypatch):
    """When no registered explainer declares a default, "auto" fails and names what is there."""
    _session_with(monkeypatch, _explainer("plain_test", {}))
    with pytest.raises(
        xai.UnknownNameError, match=r"Unknown explainer 'auto'\. Available: plain_test"
    ):
        xai.explain(lambda Z: Z, np.zeros((2, 3)), method="auto", target=0)


def test_ranks_order_the_defaults(monkeypatch):
    """Lower ranks come first; equal ranks keep registration order; compare_methods uses that order."""
    first = _explainer("first_test", {"compare": 0})
    tie_a = _explainer("tie_a_test", {"compare": 3})
    tie_b = _explainer("tie_b_test", {"compare": 3})
    _session_with(monkeypatch, tie_b, tie_a, first, _explainer("other_test", {"gradient": 0}))
    assert resolve.default_methods("compare") == ["first_test", "tie_b_test", "tie_a_test"]
    rng = np.random.default_rng(0)
    c = xai.compare_methods(LinearModel(rng.normal(size=(4, 2))), rng.normal(size=(3, 4)))
    assert list(c.explanations) == ["first_test", "tie_b_test", "tie_a_test"]


def test_compare_backends_auto_picks_per_model():
    """compare_backends' default method is "auto": IG for a native network, SHAP for a black box."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3, 5)).astype(np.float32)
    w = rng.normal(size=(5, 2))
    assert xai.compare_backends(LinearModel(w), X, backends=("cpu",), steps=4).method == "ig"
    c = xai.compare_backends(lambda Z: Z @ w, X, backends=("cpu",), background=X[:1])
    assert c.method == "shap" and list(c.explanations) == ["cpu"]


class _HostTwin(CPUBackend):
    """Another host CPU, under another name."""

    name = "host_twin_test"


class _SimulatedCpu(CPUBackend):
    """Simulated hardware that happens to be called "cpu"."""

    runs_black_boxes = False


def test_black_boxes_run_where_the_backend_says_so():
    """Whether a black box runs is the backend's runs_black_boxes, whatever its name."""
    rng = np.random.default_rng(1)
    w = rng.normal(size=(5, 2))
    c = xai.compare_backends(
        lambda Z: Z @ w,
        rng.normal(size=(3, 5)),
        method="shap",
        backends=(_HostTwin(), _SimulatedCpu()),
    )
    assert list(c.explanations) == ["cpu", "host_twin_test"]
    assert "black-box" in c.skipped["cpu#2"]


def test_backend_travels_as_its_class_and_settings(monkeypatch):
    """A chunk's backend is a fresh one of the same class and settings, built without the registry."""
    monkeypatch.setattr("xai_core.plugin.manager.get_registry", lambda: 1 / 0)
    for backend in (CPUBackend(dtype="float64", simd_width=4), _HostTwin(clock_ghz=2.0)):
        built = backend_spec(backend).build()
        assert type(built) is type(backend) and built is not backend
        assert built.config() == backend.config()

    class Local(CPUBackend):
        name = "local_test"

    with pytest.raises(xai.CapabilityError, match="cannot be pickled"):
        backend_spec(Local())


def test_a_session_backend_runs_in_chunks(fresh_registry):
    """A backend registered for the session only is rebuilt for each chunk from its class."""
    plugin = types.ModuleType("twin_session")
    plugin.xai_register_backends = xai.hookimpl(lambda: [_HostTwin])
    register_plugin(plugin)
    net = xai.nn.mlp(4, (3,), 2, seed=0)
    X = np.random.default_rng(2).normal(size=(5, 4)).astype(np.float32)
    kwargs = dict(method="saliency", target=0, chunk_size=2)
    on_cpu = xai.explain(net, X, backend="cpu", **kwargs)
    chunked = xai.explain(net, X, backend="host_twin_test", **kwargs)
    np.testing.assert_array_equal(chunked.values, on_cpu.values)
    assert chunked.backend == "host_twin_test"


@pytest.mark.parametrize(
    "default_for",
    [{"auto": 0}, {"gradient": "first"}, {"compare": True}, ["compare"]],
    ids=["unknown-role", "str-rank", "bool-rank", "not-a-mapping"],
)
def test_check_explainer_rejects_a_bad_default_for(default_for):
    """default_for must map known roles to integer ranks."""
    with pytest.raises(ContractError, match="default_for"):
        check_explainer(_explainer("bad_defaults_test", default_for))
