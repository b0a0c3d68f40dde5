"""The CNN family equals Captum's on the same imported network: Grad-CAM, guided
backpropagation, deconvolution, guided Grad-CAM."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
captum_attr = pytest.importorskip("captum.attr")

import xai_core as xai  # noqa: E402
from xai_core.errors import CapabilityError, UnknownNameError  # noqa: E402

TOL = {"float64": 1e-10, "float32": 1e-5}


def _module() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(4, 6, 3),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(6 * 3 * 3, 5),
    ).eval()


def _setup(dtype: str):
    """The torch module, its imported network, the backend and inputs, in ``dtype``."""
    module = _module()
    X = torch.randn(4, 3, 10, 10, generator=torch.Generator().manual_seed(1))
    net = xai.from_torch(module, X, dtype=dtype)
    if dtype == "float64":
        module, X = module.double(), X.double()
    return module, net, xai.get_backend("cpu", dtype=dtype), X


def _captum(cls, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(*args).attribute(**kw).detach().numpy()


@pytest.fixture(params=["float64", "float32"])
def setup(request):
    return request.param, *_setup(request.param)


TARGET = np.array([0, 3, 1, 4])


@pytest.mark.parametrize("relu", [False, True], ids=["signed", "relu"])
@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
@pytest.mark.parametrize("layer_index", [0, 3])
def test_gradcam_equals_captum_layer_gradcam_upsampled(setup, relu, mode, layer_index):
    """The map equals LayerGradCam's; values its LayerAttribution.interpolate."""
    dtype, module, net, backend, X = setup
    layer = net.nodes[layer_index].name
    e = xai.explain(
        net, X.numpy(), method="gradcam", backend=backend, target=TARGET,
        layer=layer, relu_attributions=relu, interpolate_mode=mode,
    )  # fmt: skip
    t = torch.tensor(TARGET)
    ref = captum_attr.LayerGradCam(module, module[layer_index]).attribute(
        X, target=t, relu_attributions=relu
    )
    up = captum_attr.LayerAttribution.interpolate(ref, (10, 10), interpolate_mode=mode)
    np.testing.assert_allclose(e.meta["layer_attribution"], ref.detach().numpy(), atol=TOL[dtype])
    for c in range(3):
        np.testing.assert_allclose(e.values[:, c], up.detach().numpy()[:, 0], atol=TOL[dtype])
    assert e.meta["layer"] == layer


def test_gradcam_layer_by_index_and_negative_index_equal_by_name():
    """layer= takes a name, an index and a negative index, as net.summary() lists them."""
    _, net, backend, X = _setup("float64")
    names = [row["name"] for row in net.summary().rows]
    runs = [
        xai.explain(net, X.numpy(), method="gradcam", backend=backend, layer=layer).values
        for layer in (names[3], 3, 3 - len(names))
    ]
    np.testing.assert_array_equal(runs[0], runs[1])
    np.testing.assert_array_equal(runs[0], runs[2])
    default = xai.explain(net, X.numpy(), method="gradcam", backend=backend)
    assert default.meta["layer"] == names[3]  # the last convolution


def test_gradcam_to_layer_input_equals_captum():
    """attribute_to_layer_input reads the layer's input, as Captum's option does."""
    module, net, backend, X = _setup("float64")
    e = xai.explain(
        net, X.numpy(), method="gradcam", backend=backend, target=TARGET, layer=4,
        attribute_to_layer_input=True,
    )  # fmt: skip
    ref = _captum(
        captum_attr.LayerGradCam, module, module[4],
        inputs=X, target=torch.tensor(TARGET), attribute_to_layer_input=True,
    )  # fmt: skip
    np.testing.assert_allclose(e.meta["layer_attribution"], ref, atol=1e-10)


def test_a_bad_layer_name_lists_the_layers_before_any_model_call():
    """An unknown layer names the network's nodes; the model is never called."""
    _, net, backend, X = _setup("float64")
    backend.reset_counters()
    with pytest.raises(UnknownNameError) as info:
        xai.explain(net, X.numpy(), method="gradcam", backend=backend, layer="conv9")
    for node in net.nodes:
        assert node.name in str(info.value)
    assert backend.counters.get("macs", 0) == 0


@pytest.mark.parametrize(
    "method, cls",
    [("guided_backprop", "GuidedBackprop"), ("deconvolution", "Deconvolution")],
)
def test_relu_rule_methods_equal_captum(setup, method, cls):
    """Guided backpropagation and deconvolution equal Captum's hooks on the ReLUs."""
    dtype, module, net, backend, X = setup
    e = xai.explain(net, X.numpy(), method=method, backend=backend, target=TARGET)
    ref = _captum(getattr(captum_attr, cls), module, inputs=X, target=torch.tensor(TARGET))
    np.testing.assert_allclose(e.values, ref, atol=TOL[dtype] * max(1, np.abs(ref).max()))
    plain = xai.explain(
        net, X.numpy(), method="saliency", backend=backend, target=TARGET, abs=False
    )
    assert not np.allclose(e.values, plain.values)  # the rule changed something


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_guided_gradcam_equals_captum(setup, mode):
    """Guided Grad-CAM equals Captum's GuidedGradCam."""
    dtype, module, net, backend, X = setup
    e = xai.explain(
        net, X.numpy(), method="guided_gradcam", backend=backend, target=TARGET, layer=3,
        interpolate_mode=mode,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = captum_attr.GuidedGradCam(module, module[3]).attribute(
            X, target=torch.tensor(TARGET), interpolate_mode=mode
        )
    np.testing.assert_allclose(e.values, ref.detach().numpy(), atol=TOL[dtype])


@pytest.mark.parametrize(
    "method", ["gradcam", "guided_backprop", "deconvolution", "guided_gradcam"]
)
def test_chunked_runs_equal_one_call_and_repeat(method):
    """chunk_size= and internal_batch_size= give one call's values; two runs are equal."""
    _, net, backend, X = _setup("float64")
    one = xai.explain(net, X.numpy(), method=method, backend=backend, target=TARGET)
    chunked = xai.explain(
        net, X.numpy(), method=method, backend=backend, target=TARGET, chunk_size=3
    )
    small = xai.explain(
        net, X.numpy(), method=method, backend=backend, target=TARGET, internal_batch_size=1
    )
    again = xai.explain(net, X.numpy(), method=method, backend=backend, target=TARGET)
    np.testing.assert_allclose(chunked.values, one.values, atol=1e-12)
    np.testing.assert_allclose(small.values, one.values, atol=1e-12)
    np.testing.assert_array_equal(again.values, one.values)


@pytest.mark.parametrize("method", ["gradcam", "guided_backprop", "guided_gradcam"])
def test_black_boxes_and_inference_only_backends_are_refused_before_any_work(method):
    """A black box and the int8 Edge TPU are refused up front, naming what is missing."""
    _, net, _, X = _setup("float32")
    calls = []

    def f(x):
        calls.append(len(x))
        return np.asarray(net.predict(x))

    box = xai.as_model(f, input_shape=(3, 10, 10))
    with pytest.raises(CapabilityError, match="black box"):
        xai.explain(box, X.numpy(), method=method)
    assert calls == []
    q = xai.quantize(net, X.numpy())
    with pytest.raises(CapabilityError):
        xai.explain(q, X.numpy(), method=method, backend="edgetpu")


def test_runner_layer_gradient_counts_on_the_backend():
    """The layer gradient's products are the backend's, and counted."""
    _, net, backend, X = _setup("float64")
    runner = xai.ModelRunner(net, backend)
    runner.reset_counters()
    lg = runner.layer_gradient_validated(X.numpy(), TARGET, runner.layer_value(3))
    assert lg.activations.shape == lg.gradient.shape == (4, 6, 3, 3)
    assert runner.counters["macs"] > 0
    direct = net.layer_gradient(X.numpy(), TARGET, "/3/Conv", backend)
    np.testing.assert_array_equal(direct.gradient, lg.gradient)


def test_compare_backends_runs_gradcam_on_every_backend_with_gradients():
    """Grad-CAM on each backend with gradients (pods shard the batch), the int8 one skipped."""
    _, net, _, X = _setup("float32")
    result = xai.compare_backends(net, X.numpy(), method="gradcam", layer=3)
    assert {"cpu", "gpu", "tpu"} <= set(result.explanations)
    assert "edgetpu" not in result.explanations
    assert "hidden layers" in result.skipped["edgetpu"]
    np.testing.assert_allclose(
        result.explanations["gpu"].values, result.explanations["cpu"].values, atol=1e-4
    )
