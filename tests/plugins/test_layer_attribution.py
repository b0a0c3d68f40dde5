"""Layer and neuron attribution equal Captum's on the same imported network: layer
integrated gradients, layer conductance, internal influence, neuron conductance."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
captum_attr = pytest.importorskip("captum.attr")

import xai_core as xai  # noqa: E402
from xai_core.errors import CapabilityError, UnknownNameError, ValidationError  # noqa: E402

TOL = {"float64": 1e-10, "float32": 1e-5}
TARGET = np.array([0, 3, 1])


class _Residual(torch.nn.Module):
    """A CNN with a connection around its second convolution."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(2, 3, 3, padding=1)
        self.relu1 = torch.nn.ReLU()
        self.conv2 = torch.nn.Conv2d(3, 3, 3, padding=1)
        self.relu2 = torch.nn.ReLU()
        self.pool = torch.nn.MaxPool2d(2)
        self.flat = torch.nn.Flatten()
        self.fc = torch.nn.Linear(3 * 3 * 3, 5)

    def forward(self, x):
        h = self.relu1(self.conv1(x))
        h = self.relu2(self.conv2(h) + h)
        return self.fc(self.flat(self.pool(h)))


def _setup(dtype: str, residual: bool = False):
    torch.manual_seed(0)
    if residual:
        module = _Residual().eval()
    else:
        module = torch.nn.Sequential(
            torch.nn.Conv2d(2, 3, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Flatten(),
            torch.nn.Linear(3 * 3 * 3, 6),
            torch.nn.Tanh(),
            torch.nn.Linear(6, 5),
        ).eval()
    X = torch.randn(3, 2, 6, 6, generator=torch.Generator().manual_seed(2))
    net = xai.from_torch(module, X, dtype=dtype)
    if dtype == "float64":
        module, X = module.double(), X.double()
    return module, net, xai.get_backend("cpu", dtype=dtype), X


def _captum(cls, module, layer, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = cls(module, layer).attribute(**kw)
    return (out[0] if isinstance(out, tuple) else out).detach().numpy()


CASES = {
    "layer_ig": captum_attr.LayerIntegratedGradients,
    "layer_conductance": captum_attr.LayerConductance,
    "internal_influence": captum_attr.InternalInfluence,
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("method", list(CASES))
@pytest.mark.parametrize("index", [0, 4, 6])
def test_layer_methods_equal_captum(method, index, dtype):
    """Attributions to a hidden layer's units equal Captum's, conv and dense layers."""
    module, net, backend, X = _setup(dtype)
    baseline = 0.1 * np.ones((2, 6, 6))
    e = xai.explain(
        net, X.numpy(), method=method, backend=backend, target=TARGET, layer=index,
        baselines=baseline, n_steps=12,
    )  # fmt: skip
    ref = _captum(
        CASES[method], module, module[index], inputs=X, target=torch.tensor(TARGET),
        baselines=torch.tensor(baseline, dtype=X.dtype)[None], n_steps=12,
    )  # fmt: skip
    assert e.values.shape == ref.shape
    np.testing.assert_allclose(e.values, ref, atol=TOL[dtype] * max(1.0, np.abs(ref).max()))
    assert e.data.shape == e.values.shape and len(e.feature_names) == ref[0].size


@pytest.mark.parametrize("method", list(CASES))
def test_layer_methods_to_the_layer_input_equal_captum(method):
    """attribute_to_layer_input attributes to the layer's input, as in Captum."""
    module, net, backend, X = _setup("float64")
    e = xai.explain(
        net, X.numpy(), method=method, backend=backend, target=TARGET, layer=4,
        attribute_to_layer_input=True, n_steps=8, integration="riemann_middle",
    )  # fmt: skip
    ref = _captum(
        CASES[method], module, module[4], inputs=X, target=torch.tensor(TARGET), n_steps=8,
        method="riemann_middle", attribute_to_layer_input=True,
    )  # fmt: skip
    np.testing.assert_allclose(e.values, ref, atol=1e-10)


@pytest.mark.parametrize("method", list(CASES))
def test_layer_methods_around_a_residual_connection_equal_captum(method):
    """A layer bypassed by a residual connection: the bypass still reads the input."""
    module, net, backend, X = _setup("float64", residual=True)
    names = [node.name for node in net.nodes]
    conv2 = next(n for n in names if "conv2" in n)
    e = xai.explain(
        net, X.numpy(), method=method, backend=backend, target=TARGET, layer=conv2, n_steps=10
    )
    ref = _captum(
        CASES[method], module, module.conv2, inputs=X, target=torch.tensor(TARGET), n_steps=10
    )
    np.testing.assert_allclose(e.values, ref, atol=1e-10)


def test_layer_ig_is_complete():
    """Layer IG's attributions sum to f(x) - f(b), to quadrature error."""
    _, net, backend, X = _setup("float64")
    e = xai.explain(
        net, X.numpy(), method="layer_ig", backend=backend, target=TARGET, layer=4, n_steps=64
    )
    assert np.abs(e.meta["convergence_delta"]).max() < 1e-6


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("index, neuron", [(0, (1, 2, 3)), (4, 2), (5, (4,))])
def test_neuron_conductance_equals_captum(index, neuron, dtype):
    """Conductance of the inputs through one hidden unit equals Captum's."""
    module, net, backend, X = _setup(dtype)
    # one baseline array (not a number), as Captum takes it
    baseline = 0.2 * np.random.default_rng(3).normal(size=(2, 6, 6))
    e = xai.explain(
        net, X.numpy(), method="neuron_conductance", backend=backend, target=TARGET,
        layer=index, neuron_selector=neuron, n_steps=10, baselines=baseline,
    )  # fmt: skip
    ref = _captum(
        captum_attr.NeuronConductance, module, module[index], inputs=X,
        neuron_selector=neuron, target=torch.tensor(TARGET), n_steps=10,
        baselines=torch.tensor(baseline, dtype=X.dtype)[None],
    )  # fmt: skip
    assert e.values.shape == X.shape
    np.testing.assert_allclose(e.values, ref, atol=TOL[dtype] * max(1.0, np.abs(ref).max()))


def test_neuron_conductance_needs_a_valid_unit_before_any_model_call():
    """A missing or out-of-range neuron_selector is refused up front."""
    _, net, backend, X = _setup("float64")
    backend.reset_counters()
    with pytest.raises(ValidationError, match="neuron_selector"):
        xai.explain(net, X.numpy(), method="neuron_conductance", backend=backend, layer=4)
    with pytest.raises(ValidationError, match="out of range"):
        xai.explain(
            net, X.numpy(), method="neuron_conductance", backend=backend, layer=4,
            neuron_selector=9,
        )  # fmt: skip
    assert backend.counters.get("macs", 0) == 0


@pytest.mark.parametrize("method", [*CASES, "neuron_conductance"])
def test_chunked_runs_equal_one_call_and_repeat(method):
    """chunk_size= and internal_batch_size= give one call's values; two runs are equal."""
    _, net, backend, X = _setup("float64")
    kw = dict(method=method, backend=backend, target=TARGET, layer=4, n_steps=6)
    if method == "neuron_conductance":
        kw["neuron_selector"] = 1
    one = xai.explain(net, X.numpy(), **kw)
    chunked = xai.explain(net, X.numpy(), chunk_size=2, **kw)
    small = xai.explain(net, X.numpy(), internal_batch_size=5, **kw)
    np.testing.assert_allclose(chunked.values, one.values, atol=1e-12)
    np.testing.assert_allclose(small.values, one.values, atol=1e-12)
    np.testing.assert_array_equal(xai.explain(net, X.numpy(), **kw).values, one.values)


def test_layer_is_required_and_bad_names_list_the_layers():
    """No layer, or an unknown one, is refused with the network's node names."""
    _, net, backend, X = _setup("float64")
    with pytest.raises(ValidationError, match="needs layer="):
        xai.explain(net, X.numpy(), method="layer_ig", backend=backend)
    with pytest.raises(UnknownNameError) as info:
        xai.explain(net, X.numpy(), method="layer_conductance", backend=backend, layer="fc9")
    assert all(node.name in str(info.value) for node in net.nodes)


@pytest.mark.parametrize("method", [*CASES, "neuron_conductance"])
def test_black_boxes_and_the_edgetpu_are_refused(method):
    """A black box and an inference-only backend are refused before any model call."""
    _, net, _, X = _setup("float32")
    calls = []

    def f(x):
        calls.append(len(x))
        return np.asarray(net.predict(x))

    box = xai.as_model(f, input_shape=(2, 6, 6))
    with pytest.raises(CapabilityError, match="black box"):
        xai.explain(box, X.numpy(), method=method, layer=0)
    assert calls == []
    with pytest.raises(CapabilityError):
        xai.explain(
            xai.quantize(net, X.numpy()), X.numpy(), method=method, backend="edgetpu", layer=0
        )


def test_replacing_an_input_other_nodes_read_is_refused():
    """Layer IG on the input of a node whose input is also read by the bypass is refused."""
    _, net, backend, X = _setup("float64", residual=True)
    conv2 = next(i for i, node in enumerate(net.nodes) if "conv2" in node.name)
    with pytest.raises(ValidationError, match="also read by"):
        xai.explain(
            net, X.numpy(), method="layer_ig", backend=backend, layer=conv2,
            attribute_to_layer_input=True,
        )  # fmt: skip


@pytest.mark.parametrize("method", ["layer_ig", "neuron_conductance"])
def test_threads_give_one_calls_values(method):
    """On a thread pool, chunks of rows share the network and give one call's values."""
    from concurrent.futures import ThreadPoolExecutor

    _, net, backend, X = _setup("float64", residual=True)
    kw = dict(method=method, backend=backend, target=TARGET, layer=1, n_steps=5)
    if method == "neuron_conductance":
        kw["neuron_selector"] = (0, 2, 2)
    one = xai.explain(net, X.numpy(), **kw)
    with ThreadPoolExecutor(2) as pool:
        par = xai.explain(net, X.numpy(), executor=pool, chunk_size=1, **kw)
    np.testing.assert_allclose(par.values, one.values, atol=1e-12)
