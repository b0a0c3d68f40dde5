"""The executor's inference steps: identities and fused nodes skipped, every value freed after its last reader."""

from __future__ import annotations

import numpy as np
import pytest

import xai_core as xai
from xai_core import nn
from xai_core.nn import executor


def _graph():
    """Identities in chains and at the end, a value read twice by one node and by later ones."""
    g = nn.Graph((6,), dtype="float64", seed=0)
    a = g.add(nn.Dense(5), "input", name="a")
    a_id = g.add(nn.Dropout(0.5), a, name="a_id")
    twice = g.add(nn.Add(), [a_id, a], name="twice")  # one value, by two names
    b = g.add(nn.Dense(5), twice, name="b")
    b_act = g.add(nn.ReLU(), b, name="b_act")
    later = g.add(nn.Multiply(), [b_act, a_id], name="later")  # a_id read again, late
    g.add(nn.Identity(), later, name="out_id")
    return g


def _recorded(net, X, target):
    """The output of a pass that runs every node (a record keeps fusion and skipping off)."""
    how = net._plan(target)
    return executor.run_forward(
        net.nodes,
        {net.input_name: X},
        xai.get_backend("cpu", dtype="float64"),
        how,
        executor.Record(),
    )


@pytest.mark.parametrize("target", ["a_id", "twice", "b_act", "later", "out_id"])
def test_inference_steps_equal_a_pass_over_every_node(target):
    """Predicting any node equals the pass that runs every node, identity targets included."""
    net = _graph()
    X = np.random.default_rng(1).standard_normal((4, 6))
    got = net.forward(X, xai.get_backend("cpu", dtype="float64"), stop=target)
    np.testing.assert_array_equal(got, _recorded(net, X, target))


def test_steps_skip_identities_and_free_each_value_after_its_last_reader():
    """No identity runs; a value is freed once, by the last step that reads it, never the result."""
    net = _graph()
    how = executor.plan(net.nodes, "out_id")
    ran = [net.nodes[step.node].name for step in how.steps]
    assert ran == ["a", "twice", "b", "b_act", "later"]
    assert how.result == "later"
    freed = [name for step in how.steps for name in step.frees]
    assert sorted(freed) == sorted(set(freed)) == ["a", "b", "b_act", "input", "twice"]
    last_reader = {}
    for k, step in enumerate(how.steps):
        for name in step.inputs:
            last_reader[name] = k
    for k, step in enumerate(how.steps):
        assert all(last_reader[name] == k for name in step.frees)
    assert how.steps[ran.index("twice")].inputs == ("a", "a")  # the dropout read through


def test_a_fused_pair_is_one_step_reading_its_residual():
    """A convolution with its Add is one step; the residual is freed after it, the Add never runs."""
    g = nn.Graph((2, 5, 5), dtype="float64", seed=0)
    a = g.add(nn.Conv2D(2, 1), "input", name="a")
    r = g.add(nn.Conv2D(2, 1), a, name="r")
    g.add(nn.Add(), [a, r], name="sum")
    g.add(nn.GlobalAveragePooling2D(), name="pool")
    how = executor.plan(g.nodes, "pool")
    names = [g.nodes[step.node].name for step in how.steps]
    assert names == ["a", "r", "pool"]
    fused = how.steps[1]
    assert fused.epilogue is not None and fused.epilogue.residual == "a"
    assert fused.frees == ("a",)
    assert how.steps[2].inputs == ("r",)  # the sum, computed in r's call
