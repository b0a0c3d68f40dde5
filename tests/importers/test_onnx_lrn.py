"""ONNX ``LRN``: values against onnxruntime, gradients against torch autograd, other backends."""

from __future__ import annotations

import numpy as np
import pytest

import xai_core as xai

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
from onnx import TensorProto, helper  # noqa: E402

SHAPE = (7, 5, 4)  # channels, height, width


def lrn_model(size: int | None, **attrs) -> bytes:
    """A one-node LRN model (``size=None``: without the required attribute)."""
    if size is not None:
        attrs["size"] = size
    node = helper.make_node("LRN", ["x"], ["y"], name="lrn", **attrs)
    graph = helper.make_graph(
        [node],
        "lrn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", *SHAPE])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", *SHAPE])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


CASES = {
    "size-5-defaults": (5, {}),
    "size-3-alexnet": (3, {"alpha": 1e-4, "beta": 0.75, "bias": 2.0}),
    "size-1": (1, {"alpha": 0.5}),
    "size-11-wider-than-channels": (11, {"alpha": 0.2, "beta": 1.0}),
}


def _x(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(scale=2.0, size=(3, *SHAPE)).astype(np.float32)


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_lrn_matches_onnxruntime(case):
    """The imported layer gives onnxruntime's values, within 1e-5 relative."""
    size, attrs = CASES[case]
    data = lrn_model(size, **attrs)
    X = _x()
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": X})[0]
    got = xai.from_onnx(data).predict(X).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["size-5-defaults", "size-3-alexnet", "size-1"])
def test_lrn_gradients_match_torch(case):
    """Odd windows (where torch's LocalResponseNorm centres as ONNX does): autograd's gradients."""
    size, attrs = CASES[case]
    net = xai.from_onnx(lrn_model(size, **attrs), dtype="float64")
    X = _x(1).astype(np.float64)
    weights = np.random.default_rng(2).normal(size=X.shape)
    module = torch.nn.LocalResponseNorm(
        size, alpha=attrs.get("alpha", 1e-4), beta=attrs.get("beta", 0.75), k=attrs.get("bias", 1.0)
    )
    xt = torch.from_numpy(X).requires_grad_(True)
    (module(xt) * torch.from_numpy(weights)).sum().backward()
    backend = xai.get_backend("cpu", dtype="float64")
    assert tuple(net.output_shape) == SHAPE
    # d(sum w * y) / dx through the network's own backward pass, seeded with w
    net.forward(X, backend, cache=True)
    got = net.backward(weights, backend, param_grads=False)
    np.testing.assert_allclose(got, xt.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_lrn_runs_and_is_counted_on_other_backends():
    """On tpu (bf16) and gpu the layer is close to cpu and counts its elementwise work."""
    net = xai.from_onnx(lrn_model(5, alpha=0.1))
    X = _x(3)
    ref = xai.ModelRunner(net).predict(X)
    for name, tol in (("gpu", 1e-5), ("tpu", 2e-2)):
        runner = xai.ModelRunner(net, backend=name)
        np.testing.assert_allclose(runner.predict(X), ref, rtol=tol, atol=tol)
        assert runner.counters["elementwise_ops"] > 0


def test_lrn_saves_and_loads(tmp_path):
    """Weights and JSON: the saved network gives the same outputs."""
    net = xai.from_onnx(lrn_model(3, alpha=0.3, beta=0.5, bias=1.5))
    path = tmp_path / "lrn.npz"
    net.save(path)
    X = _x(4)
    np.testing.assert_array_equal(xai.load_model(path).predict(X), net.predict(X))


def test_lrn_without_size_is_refused():
    """size is required by the spec: a file without it is refused naming the node."""
    with pytest.raises((xai.CapabilityError, xai.ModelFormatError), match="lrn"):
        xai.from_onnx(lrn_model(None))


def test_an_even_window_is_refused_as_onnxruntime_refuses_it():
    """onnxruntime takes odd sizes only (and onnx's reference evaluator mis-sums the
    channels), so an even window, with no runtime to check it against, is refused."""
    with pytest.raises(xai.CapabilityError, match="odd size"):
        xai.from_onnx(lrn_model(4))
