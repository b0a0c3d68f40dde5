"""The runner's fused gradient pass and the backend primitives it runs on."""

import numpy as np
import pytest
import torch

import xai_core as xai
from xai_core import nn
from xai_core.backends.cpu import CPUBackend
from xai_core.nn.fused import network_gradient
from xai_core.testing import check_backend


def mlp(dtype="float32", softmax=True) -> nn.Sequential:
    """A 12-16-8-3 perceptron: Tanh, ReLU, Sigmoid, an optional softmax."""
    layers = [nn.Dense(16), nn.Tanh(), nn.Dense(8), nn.ReLU(), nn.Dense(5), nn.Sigmoid()]
    layers += [nn.Dense(3)] + ([nn.Softmax()] if softmax else [])
    return nn.Sequential(layers, input_shape=(12,), seed=2, dtype=dtype)


def torch_gradient(net: nn.Sequential, X: np.ndarray, target: np.ndarray) -> np.ndarray:
    """d out[target] / dX by torch autograd in float64, on the same weights."""
    out = torch.from_numpy(X.astype(np.float64)).requires_grad_(True)
    h = out
    for layer in net.layers:
        if isinstance(layer, nn.Dense):
            w = torch.from_numpy(np.asarray(layer.weight, np.float64))
            h = h @ w + torch.from_numpy(np.asarray(layer.bias, np.float64))
        else:
            fn = {"tanh": torch.tanh, "relu": torch.relu, "sigmoid": torch.sigmoid}
            h = torch.softmax(h, dim=1) if layer.kind == "softmax" else fn[layer.kind](h)
    h[torch.arange(len(X)), torch.from_numpy(target)].sum().backward()
    return out.grad.numpy()


@pytest.mark.parametrize("softmax", [True, False], ids=["softmax", "logits"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_gradient_equals_the_network_and_torch(dtype, softmax):
    """runner.gradient of a perceptron runs fused: the network's own gradient to rounding,
    torch autograd's, and the same products counted."""
    net = mlp(dtype, softmax)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 12)).astype(dtype)
    target = rng.integers(0, 3, size=40)
    backend = xai.get_backend("cpu", dtype=dtype)
    assert network_gradient(net, backend) is not None
    runner = xai.ModelRunner(net, backend=backend)
    fused = runner.gradient(X, target)
    own_backend = xai.get_backend("cpu", dtype=dtype)
    own = net.gradient(X, target, backend=own_backend)
    tol = 2e-6 if dtype == "float32" else 1e-13
    scale = np.abs(own).max()
    np.testing.assert_allclose(fused, own, rtol=0, atol=tol * scale)
    np.testing.assert_allclose(fused, torch_gradient(net, X, target), rtol=0, atol=tol * scale)
    assert fused.dtype == np.dtype(dtype) and fused.shape == X.shape
    for key in ("macs", "matmuls"):
        assert runner.counters[key] == own_backend.counters[key]
    assert runner.counters["elementwise_ops"] > 0


def test_fused_gradient_leaves_the_input_alone_and_is_deterministic():
    """The pass works on a copy: X is not overwritten, and two calls agree bit for bit."""
    net = mlp()
    X = np.random.default_rng(1).normal(size=(7, 12)).astype(np.float32)
    kept = X.copy()
    runner = xai.ModelRunner(net)
    first = runner.gradient_validated(X, np.zeros(7, np.int64))
    np.testing.assert_array_equal(X, kept)
    np.testing.assert_array_equal(first, runner.gradient_validated(X, np.zeros(7, np.int64)))


def test_only_perceptrons_on_exact_backends_take_the_fused_pass():
    """A convolution, an inference-only or rounding backend, or a quantised net keep their own pass."""
    net = mlp()
    assert network_gradient(net, xai.get_backend("gpu")) is not None
    assert network_gradient(net, xai.get_backend("gpu", precision="tf32")) is None
    assert network_gradient(net, xai.get_backend("tpu")) is None
    cnn = nn.Sequential(
        [nn.Reshape((1, 4, 4)), nn.Conv2D(2, 3), nn.ReLU(), nn.Flatten(), nn.Dense(3)],
        input_shape=(16,),
    )
    assert network_gradient(cnn, CPUBackend()) is None
    flat_first = nn.Sequential(
        [nn.Flatten(), nn.Dense(4), nn.ReLU(), nn.Dense(2)], input_shape=(2, 3)
    )
    assert network_gradient(flat_first, CPUBackend()) is not None

    class OwnProducts(CPUBackend):
        def matmul(self, a, b):
            return super().matmul(a, b)

    assert not OwnProducts().exact_operands
    assert network_gradient(net, OwnProducts()) is None


def test_fused_gradient_on_the_gpu_equals_the_cpu():
    """On the gpu (fp32) the fused pass runs the gpu's own products, counted as its GEMMs."""
    net = mlp()
    X = np.random.default_rng(2).normal(size=(9, 12)).astype(np.float32)
    target = np.arange(9) % 3
    gpu = xai.ModelRunner(net, backend="gpu")
    got = gpu.gradient(X, target)
    np.testing.assert_allclose(got, xai.ModelRunner(net).gradient(X, target), rtol=0, atol=1e-6)
    assert gpu.counters["thread_blocks"] > 0


def test_check_backend_catches_matmul_into_that_does_not_write_out():
    """check_backend refuses a backend whose matmul_into ignores ``out``."""

    class Ignores(CPUBackend):
        def matmul_into(self, a, b, out=None):
            return self.matmul(a, b)

    check_backend(CPUBackend())
    with pytest.raises(xai.errors.ContractError, match="matmul_into"):
        check_backend(Ignores())


def test_check_backend_catches_exact_operands_claimed_by_a_rounding_backend():
    """A backend that rounds its operands to bf16 may not say exact_operands."""
    import ml_dtypes

    class Claims(CPUBackend):
        matmul_rtol = 1e-2  # bf16's own tolerance, as the tpu backend declares it

        @property
        def exact_operands(self):
            return True

        def matmul(self, a, b):
            bf = ml_dtypes.bfloat16
            a = np.asarray(a).astype(bf).astype(np.float32)
            b = np.asarray(b).astype(bf).astype(np.float32)
            return super().matmul(a, b)

    with pytest.raises(xai.errors.ContractError, match="exact_operands"):
        check_backend(Claims())


def test_count_elementwise_counts_as_elementwise_does():
    """The public count of work done in place equals what elementwise counts for the same work."""
    counted, ran = CPUBackend(), CPUBackend()
    x = np.ones((3, 5), np.float32)
    ran.elementwise(np.negative, x)
    counted.count_elementwise(x.size, x.size, x.size)
    assert counted.counters == ran.counters
