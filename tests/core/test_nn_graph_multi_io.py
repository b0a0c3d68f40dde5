"""Graphs with several inputs and outputs: one pass for every output, views for explainers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import xai_core as xai
from xai_core import nn
from xai_core.errors import CapabilityError, ShapeError, UnknownNameError, ValidationError


def _two_heads():
    """An image trunk with a conv that is itself an output (so it must not be fused away)
    and two heads: a landmark-style regression and a score."""
    g = nn.Graph((2, 6, 6), dtype="float64", seed=3)
    c = g.add(nn.Conv2D(3, 3, padding="same"), "input", name="conv")
    r = g.add(nn.ReLU(), c, name="relu")
    p = g.add(nn.GlobalAveragePooling2D(), r, name="pool")
    g.add(nn.Dense(4), p, name="points")
    g.add(nn.Dense(1), p, name="score")
    g.set_outputs(["points", "score", "conv"])
    return g


def _two_inputs():
    """``y = relu(a @ Wa + b @ Wb) @ Wc``: an input to explain and one to hold fixed."""
    g = nn.Graph((5,), input_name="a", dtype="float64", seed=4)
    g.add_input("b", (3,))
    ha = g.add(nn.Dense(6, use_bias=False), "a", name="ha")
    hb = g.add(nn.Dense(6, use_bias=False), "b", name="hb")
    s = g.add(nn.Add(), [ha, hb], name="sum")
    h = g.add(nn.ReLU(), s, name="h")
    g.add(nn.Dense(2, use_bias=False), h, name="out")
    return g


def _recorded(net, X, target):
    """The target's value from a pass with a record: every node runs, nothing is fused."""
    record = nn.executor.Record()
    return net.forward(X, xai.get_backend("cpu", dtype="float64"), stop=target, record=record)


def test_predict_outputs_equal_each_output_computed_alone():
    net = _two_heads()
    X = np.random.default_rng(0).standard_normal((3, 2, 6, 6))
    outs = net.predict_outputs(X)
    assert list(outs) == ["points", "score", "conv"]
    assert outs["points"].shape == (3, 4) and outs["conv"].shape == (3, 3, 6, 6)
    for name in net.outputs:
        np.testing.assert_allclose(outs[name], _recorded(net, X, name), rtol=1e-12)
        np.testing.assert_allclose(
            net.with_output(name).predict(X), outs[name].reshape(3, -1), rtol=1e-12
        )
    np.testing.assert_array_equal(net.predict(X), outs["points"])  # the first output


def test_an_output_read_by_a_fusable_activation_keeps_its_own_value():
    """The conv is an output and the ReLU's only input: the pass must not fuse it away."""
    net = _two_heads()
    X = np.random.default_rng(1).standard_normal((2, 2, 6, 6))
    conv = net.predict_outputs(X)["conv"]
    assert (conv < 0).any()  # pre-activation values survive
    how = net._plan(net.outputs)
    assert all(step.epilogue is None for step in how.steps)


def test_predict_outputs_in_chunks_equals_one_pass():
    net = _two_heads()
    X = np.random.default_rng(2).standard_normal((5, 2, 6, 6))
    whole, parts = net.predict_outputs(X), net.predict_outputs(X, batch_size=2)
    for name in net.outputs:
        np.testing.assert_allclose(parts[name], whole[name], rtol=1e-12)


def test_with_output_views_share_weights_and_keep_the_original():
    net = _two_heads()
    view = net.with_output("score")
    assert view.outputs == ("score",) and net.outputs == ("points", "score", "conv")
    assert view.node("score").layer is net.node("score").layer
    assert net.with_output(-1).outputs == ("conv",)
    with pytest.raises(UnknownNameError, match="points"):
        net.with_output("nope")
    with pytest.raises(ValidationError, match="out of range"):
        net.with_output(3)


def _torch_two_inputs(net):
    wa, wb, wc = (torch.tensor(net.node(k).layer.params["weight"]) for k in ("ha", "hb", "out"))
    return lambda a, b: torch.relu(a @ wa + b @ wb) @ wc


def test_several_inputs_against_torch():
    net = _two_inputs()
    rng = np.random.default_rng(5)
    A, B = rng.standard_normal((4, 5)), rng.standard_normal((4, 3))
    expected = _torch_two_inputs(net)(torch.tensor(A), torch.tensor(B)).numpy()
    np.testing.assert_allclose(net.predict_outputs({"a": A, "b": B})["out"], expected, rtol=1e-12)


def test_with_inputs_fixes_one_input_for_predictions_and_gradients():
    net = _two_inputs()
    rng = np.random.default_rng(6)
    A, b = rng.standard_normal((4, 5)), rng.standard_normal(3)
    view = net.with_inputs(b=b)
    assert view.inputs == ("a",) and view.input_shape == (5,) and net.inputs == ("a", "b")
    a = torch.tensor(A, requires_grad=True)
    out = _torch_two_inputs(net)(a, torch.tensor(b).expand(4, 3))
    np.testing.assert_allclose(view.predict(A), out.detach().numpy(), rtol=1e-12)
    out[:, 1].sum().backward()
    np.testing.assert_allclose(view.gradient(A, 1), a.grad.numpy(), rtol=1e-12)
    # fixing the first input leaves the second to explain
    other = net.with_inputs({"a": A[0]})
    assert other.input_name == "b" and other.input_shape == (3,)
    np.testing.assert_allclose(
        other.predict(np.tile(b, (2, 1))), np.tile(view.predict(A[:1]), (2, 1)), rtol=1e-12
    )


def test_explainers_take_a_view():
    net = _two_inputs()
    A = np.random.default_rng(7).standard_normal((3, 5))
    view = net.with_inputs(b=np.zeros(3))
    e = xai.explain(view, A, method="ig", target=0, steps=64, baselines=np.zeros((1, 5)))
    gain = view.predict(A)[:, 0] - view.predict(np.zeros((1, 5)))[0, 0]
    np.testing.assert_allclose(e.values.sum(axis=1), gain, rtol=1e-2, atol=1e-6)  # completeness
    heads = _two_heads()
    X = np.random.default_rng(8).standard_normal((2, 2, 6, 6))
    e = xai.explain(heads.with_output("score"), X, method="ig", target=0, steps=16)
    assert e.values.shape == X.shape


def test_several_inputs_refuse_single_batch_entry_points():
    net = _two_inputs()
    A = np.zeros((2, 5))
    with pytest.raises(CapabilityError, match="predict_outputs"):
        net.predict(A)
    with pytest.raises(CapabilityError, match="with_inputs"):
        net.gradient(A, 0)
    with pytest.raises(ValidationError, match=r"missing \['b'\]"):
        net.predict_outputs({"a": A})
    with pytest.raises(ValidationError, match=r"unknown \['c'\]"):
        net.predict_outputs({"a": A, "b": np.zeros((2, 3)), "c": A})
    with pytest.raises(ShapeError, match="same length"):
        net.predict_outputs({"a": A, "b": np.zeros((3, 3))})


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"c": np.zeros(3)}, UnknownNameError, "input"),
        ({"b": np.zeros(4)}, ShapeError, r"per-sample shape \(3,\)"),
        ({"b": np.array([0.0, np.nan, 0.0])}, ValidationError, "NaN"),
        ({"a": np.zeros(5), "b": np.zeros(3)}, ValidationError, "at least one input open"),
    ],
)
def test_with_inputs_refuses_bad_values(kwargs, error, words):
    with pytest.raises(error, match=words):
        _two_inputs().with_inputs(**kwargs)


def test_graph_building_refuses_bad_inputs_and_outputs():
    g = _two_inputs()
    with pytest.raises(ValidationError, match="taken"):
        g.add_input("ha", (2,))
    with pytest.raises(ValidationError, match="positive"):
        g.add_input("c", (0,))
    with pytest.raises(ValidationError, match="once"):
        g.set_outputs(["out", "out"])
    with pytest.raises(UnknownNameError):
        g.set_outputs(["out", "nope"])
    with pytest.raises(ValidationError, match="at least one"):
        g.set_outputs([])


def test_save_and_load_keep_every_input_and_output(tmp_path):
    for net in (_two_inputs(), _two_heads()):
        net.save(tmp_path / "net.npz")
        back = nn.load_model(tmp_path / "net.npz")
        assert back.inputs == net.inputs and back.outputs == net.outputs
        assert back.input_shapes == net.input_shapes
    with pytest.raises(CapabilityError, match="before fixing inputs"):
        _two_inputs().with_inputs(b=np.zeros(3)).save(tmp_path / "view.npz")


def test_models_with_one_output_select_themselves():
    model = xai.BlackBoxModel(lambda X: X.sum(axis=1, keepdims=True), input_shape=(3,))
    assert model.with_output(0) is model and model.with_output("output") is model
    with pytest.raises(CapabilityError, match="not one of the outputs"):
        model.with_output(1)
    seq = nn.Sequential([nn.Dense(2)], input_shape=(3,))
    assert seq.with_output(seq.output) is seq


def test_explain_takes_output_by_name_or_index():
    heads = _two_heads()
    X = np.random.default_rng(9).standard_normal((2, 2, 6, 6))
    by_view = xai.explain(heads.with_output("score"), X, method="saliency", target=0)
    for output in ("score", 1):
        got = xai.explain(heads, X, method="saliency", target=0, output=output)
        np.testing.assert_array_equal(got.values, by_view.values)
    with pytest.raises(UnknownNameError, match="output"):
        xai.explain(heads, X, method="saliency", output="nope")
