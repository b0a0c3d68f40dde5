"""IG's Gauss-Legendre nodes: numpy's below 100, Bogaert's O(steps) expansion above, and the cap."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import xai_core as xai
from xai_core.errors import ValidationError
from xai_ig._integration import integration_nodes
from xai_ig.cost import MAX_STEPS


@pytest.mark.parametrize("steps", [1, 2, 7, 50, 100])
def test_small_rules_are_numpys(steps: int) -> None:
    """Up to 100 nodes the rule is numpy's leggauss mapped to [0, 1], bit for bit (Captum's)."""
    nodes, weights = np.polynomial.legendre.leggauss(steps)
    alphas, w = integration_nodes("gausslegendre", steps)
    np.testing.assert_array_equal(alphas, 0.5 * (nodes + 1.0))
    np.testing.assert_array_equal(w, 0.5 * weights)


@pytest.mark.parametrize("steps", [101, 102, 257, 400])
def test_large_rules_match_numpy(steps: int) -> None:
    """Past 100 nodes, the expansion gives numpy's nodes to rounding and its weights to its accuracy."""
    nodes, weights = np.polynomial.legendre.leggauss(steps)
    alphas, w = integration_nodes("gausslegendre", steps)
    np.testing.assert_allclose(alphas, 0.5 * (nodes + 1.0), rtol=0, atol=1e-15)
    # numpy's eigenvalue weights lose digits near the ends as steps grow; the middle is exact
    np.testing.assert_allclose(w, 0.5 * weights, rtol=1e-6, atol=0)
    middle = slice(steps // 4, 3 * steps // 4)
    np.testing.assert_allclose(w[middle], 0.5 * weights[middle], rtol=1e-12)


@pytest.mark.parametrize("steps", [101, 500, 4097, 10**5])
def test_large_rules_integrate_polynomials_exactly(steps: int) -> None:
    """An n-node rule integrates x**p over [0, 1] exactly for p < 2n, to rounding."""
    alphas, w = integration_nodes("gausslegendre", steps)
    assert np.all(np.diff(alphas) > 0) and alphas[0] > 0 and alphas[-1] < 1
    np.testing.assert_allclose(w, w[::-1], rtol=1e-13)  # symmetric about 1/2
    for p in (0, 1, 2, 9, 2 * steps - 1):
        assert abs(np.sum(w * alphas**p) - 1.0 / (p + 1)) < 1e-13


def test_many_nodes_take_linear_memory() -> None:
    """10**5 nodes allocate a few arrays of 10**5 floats, not a 10**5 x 10**5 matrix (80 GB)."""
    steps = 10**5 + 3  # not cached by another test
    tracemalloc.start()
    try:
        integration_nodes("gausslegendre", steps)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 8 * steps


def test_many_steps_on_one_row_complete() -> None:
    """10**5 steps on one 4-feature row (an 80 GB MemoryError before) is complete."""
    net = xai.nn.Sequential([xai.nn.Dense(3), xai.nn.Tanh(), xai.nn.Dense(2)], input_shape=(4,))
    X = np.random.default_rng(0).uniform(size=(1, 4))
    e = xai.explain(
        net, X, method="ig", steps=10**5, backend=xai.get_backend("cpu", dtype=np.float64)
    )
    assert abs(e.meta["convergence_delta"][0]) < 1e-10


@pytest.mark.parametrize("option", ["steps", "max_steps"])
def test_absurd_step_counts_are_refused_up_front(option: str) -> None:
    """Over MAX_STEPS is refused by the option check, with what is allowed and the memory."""
    counted = xai.ModelRunner(xai.nn.Sequential([xai.nn.Dense(2)], input_shape=(4,)))
    extra = {"steps": "auto"} if option == "max_steps" else {}
    with pytest.raises(ValidationError, match=rf"{option} must be an integer from 1 to 1,000,000"):
        xai.explain(counted, np.ones((1, 4)), method="ig", **{option: MAX_STEPS + 1}, **extra)
    assert counted.counters["matmuls"] == 0
