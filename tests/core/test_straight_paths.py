"""The runner's straight paths (IG's fast path): the affine plan equals the general one and Captum."""

from __future__ import annotations

import captum.attr as captum_attr
import numpy as np
import pytest
import torch

import xai_core as xai
from xai_core import nn
from xai_core.model.paths import AffinePaths, first_linear_layer
from xai_ig import integration_nodes


def dense_net(dtype="float32") -> nn.Sequential:
    """A Dense-first MLP, 12-16-8-3, Tanh and ReLU, softmax."""
    layers = [nn.Dense(16), nn.Tanh(), nn.Dense(8), nn.ReLU(), nn.Dense(3), nn.Softmax()]
    return nn.Sequential(layers, input_shape=(12,), seed=3, dtype=dtype)


def conv_net(dtype="float32") -> nn.Sequential:
    """A Conv-first CNN over flat 8x8 images: Reshape, Conv2D, ReLU, MaxPool, Dense, softmax."""
    layers = [
        nn.Reshape((1, 8, 8)),
        nn.Conv2D(4, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2D(2),
        nn.Flatten(),
        nn.Dense(3),
        nn.Softmax(),
    ]
    return nn.Sequential(layers, input_shape=(64,), seed=4, dtype=dtype)


def grouped_conv_net(dtype="float32") -> nn.Sequential:
    """A strided, dilated, grouped, bias-free channels-last convolution first, then Dense layers."""
    layers = [
        nn.Reshape((6, 6, 2)),
        nn.Conv2D(4, 3, stride=2, padding=2, dilation=2, groups=2, use_bias=False, layout="NHWC"),
        nn.Tanh(),
        nn.Flatten(),
        nn.Dense(5, use_bias=False),
        nn.ReLU(),
        nn.Dense(3),
        nn.Softmax(),
    ]
    return nn.Sequential(layers, input_shape=(72,), seed=5, dtype=dtype)


def both_paths(net, X, target, baselines, steps=24, rule="gausslegendre", chunk=50):
    """The fast and the general path on the same runner, rows and nodes."""
    runner = xai.ModelRunner(net, backend=xai.get_backend("cpu", dtype=net.dtype))
    alphas, weights = integration_nodes(rule, steps)
    fast = runner.straight_paths(X, baselines)
    general = runner.straight_paths(X, baselines, fast=False)
    assert fast.affine and not general.affine
    args = (None, target, alphas, weights)
    return fast.integral(*args, chunk=chunk), general.integral(*args, chunk=chunk)


@pytest.mark.parametrize(
    "make", [dense_net, conv_net, grouped_conv_net], ids=["dense-first", "conv-first", "grouped"]
)
@pytest.mark.parametrize("n_baselines", [1, 3])
@pytest.mark.parametrize("rule", ["gausslegendre", "riemann_trapezoid"])
def test_affine_path_equals_general_path_to_float32_rounding(make, n_baselines, rule):
    """Shared and per-row baselines, whole paths and paths split over chunks."""
    net = make()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, *net.input_shape)).astype(np.float32)
    target = rng.integers(0, 3, size=5)
    for per_row in (1, 5):
        b = rng.normal(size=(per_row, n_baselines, *net.input_shape)).astype(np.float32)
        for chunk in (7, 500):
            fast, general = both_paths(net, X, target, b, rule=rule, chunk=chunk)
            scale = np.abs(general).max()
            np.testing.assert_allclose(fast, general, rtol=0, atol=2e-6 * scale)


@pytest.mark.parametrize("make", [dense_net, conv_net], ids=["dense-first", "conv-first"])
def test_affine_path_equals_general_path_in_float64(make):
    """In float64 the two differ by float64 rounding only."""
    net = make("float64")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4, *net.input_shape))
    fast, general = both_paths(net, X, rng.integers(0, 3, size=4), np.zeros((1, 1, *X.shape[1:])))
    np.testing.assert_allclose(fast, general, rtol=0, atol=1e-13 * np.abs(general).max())


def torch_copy(net: nn.Sequential):
    """The same network in torch (float64), for Captum."""
    mods = []
    for layer in net.layers:
        if isinstance(layer, nn.Dense):
            lin = torch.nn.Linear(*layer.weight.shape).double()
            with torch.no_grad():
                lin.weight.copy_(torch.from_numpy(np.asarray(layer.weight, np.float64).T.copy()))
                lin.bias.copy_(torch.from_numpy(np.asarray(layer.bias, np.float64)))
            mods.append(lin)
        elif isinstance(layer, nn.Conv2D):
            conv = torch.nn.Conv2d(
                layer.input_shape[0], layer.filters, layer.kernel_size, layer.stride, layer.padding
            ).double()
            with torch.no_grad():
                conv.weight.copy_(torch.from_numpy(np.asarray(layer.weight, np.float64)))
                conv.bias.copy_(torch.from_numpy(np.asarray(layer.bias, np.float64)))
            mods.append(conv)
        elif isinstance(layer, nn.Reshape):
            mods.append(torch.nn.Unflatten(1, layer.shape))
        elif isinstance(layer, nn.Flatten):
            mods.append(torch.nn.Flatten())
        elif isinstance(layer, nn.MaxPool2D):
            mods.append(torch.nn.MaxPool2d(layer.pool_size, layer.stride))
        else:
            mods.append(
                {"relu": torch.nn.ReLU(), "tanh": torch.nn.Tanh(), "softmax": torch.nn.Softmax(1)}[
                    layer.kind
                ]
            )
    return torch.nn.Sequential(*mods).eval()


@pytest.mark.parametrize("make", [dense_net, conv_net], ids=["dense-first", "conv-first"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_affine_path_equals_captum(make, dtype):
    """xai.explain on the cpu backend (the fast path) against Captum's IntegratedGradients."""
    net = make(dtype)
    assert first_linear_layer(xai.ModelRunner(net)) is not None
    rng = np.random.default_rng(2)
    X = rng.normal(size=(6, *net.input_shape)).astype(dtype)
    target = rng.integers(0, 3, size=6)
    e = xai.explain(
        net, X, method="ig", steps=32, target=target, backend=xai.get_backend("cpu", dtype=dtype)
    )
    inputs = torch.from_numpy(X.astype(np.float64))
    theirs = captum_attr.IntegratedGradients(torch_copy(net)).attribute(
        inputs,
        torch.zeros_like(inputs),
        target=torch.from_numpy(target),
        n_steps=32,
        method="gausslegendre",
    )
    # Captum rounds its quadrature weights to float32 (``.float()``) even on float64
    # gradients, so in float64 the two agree to that rounding, a few 1e-8.
    atol = (1e-6 if dtype == "float32" else 1e-7) * np.abs(e.values).max()
    np.testing.assert_allclose(e.values, theirs.numpy(), rtol=0, atol=atol)


def dense_macs(net: nn.Sequential) -> list[int]:
    """Multiply-accumulates per sample of each Dense layer, first to last."""
    return [layer.macs_per_sample() for layer in net.layers if isinstance(layer, nn.Dense)]


def test_cpu_counts_the_products_of_the_affine_path():
    """On cpu the first layer costs one forward product per row and baseline and one backward per path.

    The outputs at the path's ends, f(x) and f(baseline), reuse those products: only the
    later layers run again on them.
    """
    net, n, steps = dense_net(), 4, 16
    X = np.random.default_rng(3).normal(size=(n, 12)).astype(np.float32)
    runner = xai.ModelRunner(net)
    xai.explain(runner, X, method="ig", steps=steps, target=0)
    first, *rest = dense_macs(net)
    ends = (n + 1) * sum(rest)  # f(x) and f(baseline) from the first layer's outputs
    path = (n + 1) * first + n * steps * 2 * sum(rest) + n * first
    assert runner.counters["macs"] == ends + path


def test_simulated_hardware_keeps_the_general_path():
    """The tpu backend computes (and counts) the first layer at every path point."""
    net, n, steps = dense_net(), 4, 16
    runner = xai.ModelRunner(net, backend="tpu")
    assert first_linear_layer(runner) is None
    X = np.random.default_rng(4).normal(size=(n, 12)).astype(np.float32)
    xai.explain(runner, X, method="ig", steps=steps, target=0)
    assert runner.counters["macs"] >= 2 * n * steps * dense_macs(net)[0]


def test_first_linear_layer_needs_no_nonlinearity_before_it():
    """A network starting with an activation, or a quantised one, takes the general path."""
    net = nn.Sequential([nn.Tanh(), nn.Dense(3), nn.Softmax()], input_shape=(4,))
    assert first_linear_layer(xai.ModelRunner(net)) is None
    assert first_linear_layer(xai.ModelRunner(conv_net())) == 1


def tail_nets(dtype):
    """Tails the fused pass computes: Tanh, ReLU, Sigmoid, Linear; with and without a softmax."""
    yield dense_net(dtype)
    layers = [nn.Dense(9), nn.Sigmoid(), nn.Dense(7), nn.Linear(), nn.ReLU(), nn.Dense(3)]
    yield nn.Sequential(layers, input_shape=(12,), seed=6, dtype=dtype)
    layers = [nn.Dense(9, use_bias=False), nn.ReLU(), nn.Dense(3, use_bias=False), nn.Softmax()]
    yield nn.Sequential(layers, input_shape=(12,), seed=7, dtype=dtype)
    # a ReLU on a Tanh's output: the Tanh's output, which its derivative needs, is the
    # memory the next Dense layer reads, so the backward pass must not write into it
    layers = [nn.Dense(9), nn.Tanh(), nn.ReLU(), nn.Dense(5), nn.Sigmoid(), nn.Dense(3)]
    yield nn.Sequential(layers, input_shape=(12,), seed=8, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_tail_equals_the_layers_own_passes(dtype):
    """The fused later layers give the layers' own forward and backward passes to rounding,
    and make the same matrix products (the same macs counted)."""
    rng = np.random.default_rng(8)
    alphas, weights = integration_nodes("gausslegendre", 16)
    tol = 2e-6 if dtype == "float32" else 1e-13
    for net in tail_nets(dtype):
        X = rng.normal(size=(5, 12)).astype(dtype)
        b = rng.normal(size=(1, 2, 12)).astype(dtype)
        target = rng.integers(0, 3, size=5)
        out = []
        for fuse in (True, False):
            runner = xai.ModelRunner(net, backend=xai.get_backend("cpu", dtype=dtype))
            path = AffinePaths(runner, 0, X, b, fuse=fuse)
            assert (path.tail is not None) == fuse
            values = path.integral(np.arange(5), target, alphas, weights, chunk=24)
            out.append((values, path.outputs(target), runner.counters))
        (fast, ends_fast, c_fast), (slow, ends_slow, c_slow) = out
        np.testing.assert_allclose(fast, slow, rtol=0, atol=tol * np.abs(slow).max())
        np.testing.assert_allclose(ends_fast, ends_slow, rtol=0, atol=tol)
        assert c_fast["macs"] == c_slow["macs"] and c_fast["matmuls"] == c_slow["matmuls"]
        assert c_fast["elementwise_ops"] > 0


@pytest.mark.parametrize("make", [dense_net, conv_net], ids=["dense-first", "conv-first"])
@pytest.mark.parametrize("steps", [16, "auto"])
def test_path_ends_and_predicted_class_equal_torch(make, steps):
    """f(x), f(baseline) and the default target (torch's argmax) come from the affine pass.

    With fixed steps they go forward with the first block of path points; with
    ``steps="auto"`` in a pass of their own. ``target=None`` costs no prediction of its
    own: the same products are counted as with the target given.
    """
    net = make("float64")
    rng = np.random.default_rng(9)
    X = rng.normal(size=(7, *net.input_shape))
    with torch.no_grad():
        model = torch_copy(net)
        at_x = model(torch.from_numpy(X)).numpy()
        at_b = model(torch.zeros((1, *net.input_shape), dtype=torch.float64)).numpy()[0]
    backend = xai.get_backend("cpu", dtype="float64")
    runner = xai.ModelRunner(net, backend=backend)
    e = xai.explain(runner, X, method="ig", steps=steps)
    np.testing.assert_array_equal(e.target, at_x.argmax(axis=1))
    rows = np.arange(len(X))
    np.testing.assert_allclose(e.meta["output"], at_x[rows, e.target], rtol=0, atol=1e-12)
    np.testing.assert_allclose(e.base_values, at_b[e.target], rtol=0, atol=1e-12)
    given = xai.ModelRunner(net, backend=xai.get_backend("cpu", dtype="float64"))
    again = xai.explain(given, X, method="ig", steps=steps, target=e.target)
    np.testing.assert_array_equal(again.values, e.values)
    assert runner.counters["macs"] == given.counters["macs"]


def test_predicted_class_on_the_general_path_equals_the_resolved_one():
    """Off the affine path (the tpu backend) target=None is the argmax of the model's outputs."""
    net = dense_net()
    X = np.random.default_rng(10).normal(size=(5, 12)).astype(np.float32)
    e = xai.explain(net, X, method="ig", steps=8, backend="tpu")
    expected = xai.ModelRunner(net, backend="tpu").predict(X).argmax(axis=1)
    np.testing.assert_array_equal(e.target, expected)
    again = xai.explain(net, X, method="ig", steps=8, backend="tpu", target=expected)
    np.testing.assert_array_equal(again.values, e.values)


class SmallResNet(torch.nn.Module):
    """A ResNet's shape in miniature: strided stem convolution, batch norm, ReLU, max pool,
    one basic block with its residual addition, global average pool, linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 6, 5, stride=2, padding=2, bias=False)
        self.bn = torch.nn.BatchNorm2d(6)
        self.pool = torch.nn.MaxPool2d(3, stride=2, padding=1)
        self.conv1 = torch.nn.Conv2d(6, 6, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(6, 6, 3, padding=1)
        self.head = torch.nn.Linear(6, 4)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.stem(x))))
        x = torch.relu(x + self.conv2(torch.relu(self.conv1(x))))
        return self.head(x.mean(dim=(2, 3)))


def small_resnet(dtype: str):
    """The torch module (its batch norm with running statistics; float64 for Captum) and its
    import in ``dtype``."""
    torch.manual_seed(0)
    module = SmallResNet().eval()
    with torch.no_grad():
        module.bn.running_mean.uniform_(-0.5, 0.5)
        module.bn.running_var.uniform_(0.5, 2.0)
    net = xai.from_torch(module, torch.rand(1, 3, 20, 20), dtype=dtype)
    return module.double(), net


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_graph_network_takes_the_affine_plan_through_its_stem(dtype):
    """The stem convolution of an imported ResNet-like graph is computed once per row and
    baseline: the plan equals the general one to the dtype's rounding, over shared and
    per-row baselines, whole and split paths."""
    from xai_core.model.paths import first_linear_node

    _, net = small_resnet(dtype)
    runner = xai.ModelRunner(net, backend=xai.get_backend("cpu", dtype=dtype))
    assert first_linear_node(runner) is not None
    rng = np.random.default_rng(5)
    X = rng.uniform(size=(3, 3, 20, 20)).astype(dtype)
    target = rng.integers(0, 4, size=3)
    alphas, weights = integration_nodes("gausslegendre", 12)
    tol = 1e-12 if dtype == "float64" else 2e-6
    for b in (np.zeros((1, 1, 3, 20, 20), dtype), rng.uniform(size=(3, 2, 3, 20, 20))):
        b = b.astype(dtype)
        fast, general = runner.straight_paths(X, b), runner.straight_paths(X, b, fast=False)
        assert fast.affine and not general.affine
        for chunk in (5, 12, 100):
            ours = fast.integral(None, target, alphas, weights, chunk=chunk)
            ref = general.integral(None, target, alphas, weights, chunk=chunk)
            np.testing.assert_allclose(ours, ref, rtol=0, atol=tol * np.abs(ref).max())
        for f_fast, f_general in zip(fast.outputs(target), general.outputs(target)):
            np.testing.assert_allclose(f_fast, f_general, rtol=tol)


def test_a_graph_network_on_the_affine_plan_equals_captum():
    """xai.explain on the imported graph (float64) against Captum on the torch module."""
    module, net = small_resnet("float64")
    rng = np.random.default_rng(6)
    X = rng.uniform(size=(4, 3, 20, 20))
    target = rng.integers(0, 4, size=4)
    e = xai.explain(net, X, method="ig", steps=24, target=target, progress=False)
    inputs = torch.from_numpy(X)
    theirs = captum_attr.IntegratedGradients(module).attribute(
        inputs, target=torch.from_numpy(target), n_steps=24, method="gausslegendre"
    )
    # Captum rounds its quadrature weights to float32, hence a few 1e-8 of the scale
    np.testing.assert_allclose(e.values, theirs.numpy(), rtol=0, atol=1e-7 * np.abs(e.values).max())


def test_a_graph_whose_input_is_read_twice_keeps_the_general_plan():
    """A second reader of the input (a skip connection from it) makes the first layer not
    the only way the input reaches the output."""
    from xai_core.model.paths import first_linear_node

    g = nn.Graph(input_shape=(6,))
    a = g.add(nn.Dense(6), "input")
    s = g.add(nn.Add(), [a, "input"])
    g.add(nn.Dense(2), s)
    assert first_linear_node(xai.ModelRunner(g)) is None
    assert first_linear_node(xai.ModelRunner(g, backend="tpu")) is None
