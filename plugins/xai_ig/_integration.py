"""Quadrature rules over the straight path from the baseline (alpha = 0) to the input (alpha = 1).

The nodes and weights are those of Captum's ``approximation_methods``, so the same
``steps`` and rule evaluate the model's gradient at the same points in both libraries
(past 100 Gauss-Legendre nodes, the same to rounding by an O(steps) method,
:mod:`xai_ig._gauss_legendre`).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from xai_core.validation import check_choice, check_int
from xai_ig._gauss_legendre import gauss_legendre

__all__ = ["RULES", "integration_nodes"]

#: Integration rules, the default first.
RULES: tuple[str, ...] = (
    "gausslegendre",
    "riemann_left",
    "riemann_right",
    "riemann_middle",
    "riemann_trapezoid",
)


def integration_nodes(rule: str, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes in [0, 1] and their weights for ``steps`` evaluations of the integrand.

    Parameters
    ----------
    rule : {"gausslegendre", "riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid"}
        ``gausslegendre``: the Gauss-Legendre nodes of degree ``steps`` mapped from
        [-1, 1] to [0, 1] (exact for polynomials of degree ``2 * steps - 1``).
        ``riemann_left`` / ``right`` / ``middle``: ``steps`` equal intervals evaluated at
        their left end, right end or middle. ``riemann_trapezoid``: the trapezoid rule on
        ``steps`` equally spaced points including both ends (needs ``steps >= 2``).
    steps : int
        Number of nodes.

    Returns
    -------
    alphas : ndarray of float64 of shape (steps,)
        Where along the path the gradient is taken.
    weights : ndarray of float64 of shape (steps,)
        Quadrature weights; they sum to one.
    """
    rule = check_choice(rule, "integration", RULES)
    steps = check_int(steps, "steps", minimum=2 if rule == "riemann_trapezoid" else 1)
    alphas, weights = _nodes(rule, steps)
    return alphas.copy(), weights.copy()


@lru_cache(maxsize=64)
def _nodes(rule: str, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """The nodes and weights of :func:`integration_nodes`, computed once per rule and size."""
    if rule == "gausslegendre":
        nodes, weights = gauss_legendre(steps)  # O(steps) memory and time
        return 0.5 * (nodes + 1.0), 0.5 * weights
    uniform = np.full(steps, 1.0 / steps)
    if rule == "riemann_left":
        return np.arange(steps) / steps, uniform
    if rule == "riemann_right":
        return np.arange(1, steps + 1) / steps, uniform
    if rule == "riemann_middle":
        return (np.arange(steps) + 0.5) / steps, uniform
    weights = np.full(steps, 1.0 / (steps - 1))
    weights[[0, -1]] = 0.5 / (steps - 1)
    return np.linspace(0.0, 1.0, steps), weights
