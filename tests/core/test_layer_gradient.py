"""Gradients at hidden layers and ReLU backward rules: the core API the layer methods use,
checked against torch's autograd on the same network."""

from __future__ import annotations

import numpy as np
import pytest

import xai_core as xai
from xai_core.errors import ShapeError, UnknownNameError, ValidationError

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def nets():
    torch.manual_seed(0)
    module = torch.nn.Sequential(
        torch.nn.Conv2d(2, 3, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(3 * 5 * 5, 4),
    ).eval()
    X = torch.randn(5, 2, 5, 5, generator=torch.Generator().manual_seed(1))
    net = xai.from_torch(module, X, dtype="float64")
    return module.double(), net, X.double()


def test_layer_gradient_equals_autograd_at_the_hidden_layer(nets):
    """Activations and d output[target] / d hidden equal torch's, in float64."""
    module, net, X = nets
    target = np.array([0, 1, 2, 3, 0])
    lg = net.layer_gradient(X.numpy(), target, 0, backend=xai.get_backend("cpu", dtype="float64"))
    hidden = module[0](X).detach().requires_grad_()
    out = module[3](module[2](module[1](hidden)))
    out[torch.arange(5), torch.tensor(target)].sum().backward()
    np.testing.assert_allclose(lg.activations, hidden.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(lg.gradient, hidden.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(lg.output, out.detach().numpy()[np.arange(5), target], atol=1e-12)


def test_fed_layer_values_replace_the_layer(nets):
    """layer_values are fed in place of the layer's own: the output is computed from them."""
    module, net, X = nets
    fed = np.random.default_rng(0).normal(size=(5, 3, 5, 5))
    lg = net.layer_gradient(X.numpy(), 1, "/0/Conv", layer_values=fed, backend="cpu")
    want = module[3](module[2](module[1](torch.tensor(fed)))).detach().numpy()[:, 1]
    np.testing.assert_allclose(lg.output, want, atol=1e-5)
    with pytest.raises(ShapeError):
        net.layer_gradient(X.numpy(), 1, 0, layer_values=fed[:, :2])


def test_neuron_input_gradient_equals_autograd(nets):
    """With neuron=, d unit / d X equals torch's."""
    module, net, X = nets
    lg = net.layer_gradient(X.numpy(), 0, 1, neuron=(2, 1, 3), backend="cpu")
    x = X.clone().requires_grad_()
    module[1](module[0](x))[:, 2, 1, 3].sum().backward()
    np.testing.assert_allclose(lg.input_gradient, x.grad.numpy(), atol=1e-5)


def test_chunks_equal_one_batch_and_bad_arguments_are_named(nets):
    """batch_size= splits the rows without changing the values; bad names and rules are refused."""
    _, net, X = nets
    one = net.layer_gradient(X.numpy(), 2, 1)
    chunked = net.layer_gradient(X.numpy(), 2, 1, batch_size=2)
    np.testing.assert_array_equal(one.gradient, chunked.gradient)
    with pytest.raises(ValidationError, match="relu_rule"):
        net.gradient(X.numpy(), 0, relu_rule="sideways")
    with pytest.raises(UnknownNameError, match="/0/Conv"):
        net.layer_gradient(X.numpy(), 0, "conv7")
    with pytest.raises(ValidationError, match="input"):
        net.layer_gradient(X.numpy(), 0, 0, attribute_to_layer_input=True, neuron=(0, 0, 0))


def test_guided_rule_keeps_the_positive_part_through_each_relu(nets):
    """relu_rule='guided' equals autograd with max(grad, 0) after each ReLU's backward."""
    module, net, X = nets
    x = X.clone().requires_grad_()
    hook = module[1].register_full_backward_hook(lambda m, gi, go: (torch.relu(gi[0]),))
    try:
        module(x)[:, 3].sum().backward()
    finally:
        hook.remove()
    got = net.gradient(
        X.numpy(), 3, backend=xai.get_backend("cpu", dtype="float64"), relu_rule="guided"
    )
    np.testing.assert_allclose(got, x.grad.numpy(), atol=1e-12)
    plain = net.gradient(X.numpy(), 3, backend=xai.get_backend("cpu", dtype="float64"))
    assert not np.allclose(got, plain)
