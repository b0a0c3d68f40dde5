"""Backward rules per layer type (xai_core.nn.rules): the rescale and LRP rules on a native
network, against their closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

import xai_core as xai
from xai_core.errors import ValidationError
from xai_core.nn.rules import BackwardRule, as_rule


def _net():
    """3 features -> Dense(4) -> Sigmoid -> Dense(2), float64, random weights."""
    net = xai.nn.Sequential(
        [xai.nn.Dense(4), xai.nn.Sigmoid(), xai.nn.Dense(2)], input_shape=(3,), dtype="float64"
    )
    rng = np.random.default_rng(0)
    for node in net.nodes:
        for key, value in node.layer.params.items():
            node.layer.params[key] = rng.normal(size=value.shape)
    return net


def _dense(net, i):
    layer = net.nodes[i].layer
    return layer.params["weight"], layer.params["bias"]


def test_rescale_through_a_sigmoid_is_the_secant_slope():
    """The multiplier is w1 @ (w2[:, t] * (s(z) - s(z_ref)) / (z - z_ref)) for each pair."""
    net = _net()
    rng = np.random.default_rng(1)
    X, B = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    t = np.array([0, 1, 1])
    lg = net.layer_gradient(
        np.concatenate([X, B]), np.concatenate([t, t]), 0, attribute_to_layer_input=True,
        backend=xai.get_backend("cpu", dtype="float64"), relu_rule="rescale",
    )  # fmt: skip
    (w1, b1), (w2, _) = _dense(net, 0), _dense(net, 2)
    z, zr = X @ w1 + b1, B @ w1 + b1
    slope = (expit(z) - expit(zr)) / (z - zr)
    expected = (w2[:, t].T * slope) @ w1.T
    np.testing.assert_allclose(lg.gradient[:3], expected, atol=1e-12)
    np.testing.assert_allclose(lg.gradient[3:], expected, atol=1e-12)


def test_rescale_needs_rows_and_as_many_baselines():
    """An odd batch has no halves: refused with the rows counted."""
    net = _net()
    with pytest.raises(ValidationError, match="3 rows"):
        net.layer_gradient(
            np.zeros((3, 3)), 0, 0, attribute_to_layer_input=True, relu_rule="rescale"
        )


def test_lrp_epsilon_on_dense_layers_is_the_closed_form():
    """Dense -> Sigmoid -> Dense: the sigmoid has no LRP rule (its gradient), the dense
    layers x * W (R / (z + eps sign z))."""
    net = _net()
    X = np.random.default_rng(2).normal(size=(2, 3))
    eps = 1e-3
    lg = net.layer_gradient(
        X, 1, 0, attribute_to_layer_input=True, backend=xai.get_backend("cpu", dtype="float64"),
        relu_rule=BackwardRule("lrp_epsilon", eps),
    )  # fmt: skip
    (w1, b1), (w2, b2) = _dense(net, 0), _dense(net, 2)

    def stab(z):
        return z + eps * np.where(z < 0, -1, 1)

    a1 = expit(X @ w1 + b1)
    r = np.zeros((2, 2))
    r[:, 1] = 1
    r1 = a1 * ((r / stab(a1 @ w2 + b2)) @ w2.T)
    g1 = r1 * a1 * (1 - a1)  # through the sigmoid's derivative
    expected = X * ((g1 / stab(X @ w1 + b1)) @ w1.T)
    np.testing.assert_allclose(lg.gradient, expected, atol=1e-12)


def test_as_rule_names_the_rules_and_checks_epsilon():
    """Defaults are Captum's epsilons; an unknown name lists the known ones."""
    assert as_rule("rescale") == BackwardRule("rescale", 1e-10)
    assert as_rule("lrp_epsilon").epsilon == 1e-9
    with pytest.raises(ValidationError, match="lrp_gamma"):
        as_rule("lrp_zplus")
    with pytest.raises(ValidationError, match="gamma"):
        as_rule(BackwardRule("lrp_gamma", 1e-9, -0.5))
    with pytest.raises(ValidationError, match="epsilon"):
        as_rule(BackwardRule("lrp_epsilon", -1.0))
