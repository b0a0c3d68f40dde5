"""Graph.add with params: a layer built with the given arrays, drawing no initial weights."""

import numpy as np
import pytest

import xai_core as xai

nn = xai.nn


def _conv_graph(seed: int = 0) -> "nn.Graph":
    return nn.Graph((3, 8, 8), seed=seed)


def test_params_are_set_as_given_and_the_seed_stream_is_untouched():
    """The arrays land cast to the dtype; the next ordinary add draws what it would have."""
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 3, 3, 3))  # float64: cast to the graph's float32
    b = rng.standard_normal(4).astype(np.float32)
    g = _conv_graph()
    g.add(nn.Conv2D(4, 3, use_bias=True), "input", name="conv", params={"weight": w, "bias": b})
    layer = g.node("conv").layer
    assert layer.weight.dtype == np.float32
    np.testing.assert_array_equal(layer.weight, w.astype(np.float32))
    np.testing.assert_array_equal(layer.bias, b)
    b[0] += 1.0  # the layer holds its own copy
    assert layer.bias[0] != b[0]
    g.add(nn.Flatten())
    g.add(nn.Dense(2), name="fc")
    plain = _conv_graph()
    plain.add(nn.Conv2D(4, 3, use_bias=True), "input", name="conv")
    plain.add(nn.Flatten())
    plain.add(nn.Dense(2), name="fc")
    # with params nothing was drawn, so the dense layer gets the conv's draw of the plain graph
    assert not np.array_equal(g.node("fc").layer.weight, plain.node("fc").layer.weight)
    first = nn.Graph((144,))  # the conv's 4 x 6 x 6 outputs, and nothing drawn before
    first.add(nn.Dense(2), name="fc")
    np.testing.assert_array_equal(g.node("fc").layer.weight, first.node("fc").layer.weight)


def test_a_parameter_left_out_or_misshapen_is_refused_and_the_layer_reusable():
    """Missing weights and wrong shapes name the node; the graph gains no node."""
    g = _conv_graph()
    layer = nn.Conv2D(4, 3, use_bias=True)
    with pytest.raises(xai.ValidationError, match=r"node 'conv'.*bias missing"):
        g.add(layer, "input", name="conv", params={"weight": np.zeros((4, 3, 3, 3))})
    with pytest.raises(xai.ShapeError, match=r"node 'conv'.*weight must have shape \(4, 3, 3, 3\)"):
        g.add(layer, "input", name="conv", params={"weight": np.zeros((4, 3)), "bias": np.zeros(4)})
    with pytest.raises(xai.ValidationError, match="finite"):
        g.add(
            layer,
            "input",
            name="conv",
            params={"weight": np.full((4, 3, 3, 3), np.nan), "bias": np.zeros(4)},
        )
    assert not g.nodes and not g.has_node("conv")
    g.add(
        layer, "input", name="conv", params={"weight": np.ones((4, 3, 3, 3)), "bias": np.zeros(4)}
    )
    assert g.shape_of("conv") == (4, 6, 6)


def test_buffers_may_be_given_with_the_parameters():
    """A batch norm takes its running statistics (buffers) in the same mapping."""
    g = nn.Graph((3,))
    stats = {"gamma": [1.0, 2.0, 3.0], "beta": [0.0, 0.5, 1.0], "mean": [1.0, 1.0, 1.0]}
    g.add(nn.BatchNormalization(), params={**stats, "variance": [4.0, 4.0, 4.0]})
    out = g.predict(np.array([[3.0, 3.0, 3.0]], np.float32))
    np.testing.assert_allclose(out, [[1.0, 2.5, 4.0]], rtol=1e-4)
