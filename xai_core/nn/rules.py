"""Modified backward rules: what a layer passes back instead of its gradient.

:func:`xai_core.nn.executor.run_backward_values` walks a recorded pass through each
layer's ``vjp``; under a rule other than ``"gradient"`` a layer whose class lists the rule
in ``backward_rules`` passes back ``layer.vjp_rule(grad, backend, record, rule)`` instead.
The rules, as Captum computes them:

- ``"guided"``, ``"deconvnet"``: guided backpropagation and deconvolution (ReLU only);
- ``"rescale"``: DeepLift's rescale rule (Captum's ``DeepLift``). The recorded batch is
  the rows followed by their baselines, ``2 m`` rows; a nonlinearity passes back
  ``grad * (y - y_ref) / (x - x_ref)`` (its gradient where ``|x - x_ref| < epsilon``),
  max pooling Captum's ``maxpool`` multipliers; linear layers keep their gradient;
- ``"lrp_epsilon"``, ``"lrp_alpha1_beta0"``, ``"lrp_gamma"``: layer-wise relevance
  propagation (Captum's ``LRP`` with ``EpsilonRule``, ``Alpha1_Beta0_Rule`` or
  ``GammaRule``). A layer with weights or a pooling layer passes back
  ``x * vjp(grad / (z + epsilon * sign(z)))``, ``z`` its output with the weights
  :func:`lrp_weights` gives (the weights; their positive part for ``alpha1_beta0``;
  ``W + gamma * W+`` for ``gamma``); ReLU and tanh pass the relevance through unchanged.

A walk takes one rule for every layer, or :class:`LayerRules`: a rule per layer (Captum's
``module.rule``), the others keeping a default.

The functions here are the arithmetic; the layers own their rules.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from xai_core.errors import ValidationError

__all__ = [
    "BackwardRule",
    "LayerRules",
    "lrp_weights",
    "BACKWARD_RULES",
    "LRP_RULES",
    "as_rule",
    "rescale_multipliers",
    "unpool_assign",
    "stabilized",
    "rule_name",
    "lrp_ratio",
    "times_input",
    "RelevanceThrough",
]

#: Every rule :func:`as_rule` accepts, by name.
BACKWARD_RULES = (
    "gradient",
    "guided",
    "deconvnet",
    "rescale",
    "lrp_epsilon",
    "lrp_alpha1_beta0",
    "lrp_gamma",
)

#: The layer-wise relevance propagation rules.
LRP_RULES = ("lrp_epsilon", "lrp_alpha1_beta0", "lrp_gamma")

#: Each rule's default epsilon: Captum's ``DeepLift(eps=1e-10)`` and
#: ``PropagationRule.STABILITY_FACTOR = 1e-9``.
_DEFAULT_EPSILON = {
    "rescale": 1e-10,
    "lrp_epsilon": 1e-9,
    "lrp_alpha1_beta0": 1e-9,
    "lrp_gamma": 1e-9,
}


class BackwardRule(NamedTuple):
    """A backward rule and its epsilon.

    Attributes
    ----------
    name : str
        One of :data:`BACKWARD_RULES`.
    epsilon : float
        ``"rescale"``: below this ``|x - x_ref|`` the gradient is kept; the LRP rules: the
        stabiliser added to each layer's output (0 for the other rules).
    gamma : float
        ``"lrp_gamma"``: the weight of the positive part added to the weights (Captum's
        ``GammaRule(gamma=0.25)``); 0 for the other rules.
    """

    name: str
    epsilon: float = 0.0
    gamma: float = 0.0


class LayerRules(NamedTuple):
    """One backward rule per layer: ``rules[node name]``, ``default`` for the others.

    Attributes
    ----------
    default : BackwardRule
    rules : tuple of (str, BackwardRule)
        Node names and their rules.
    """

    default: BackwardRule
    rules: tuple[tuple[str, BackwardRule], ...] = ()

    def for_node(self, name: str) -> BackwardRule:
        """The rule of the node named ``name``."""
        return dict(self.rules).get(name, self.default)


def as_rule(rule: Any) -> Any:
    """A :class:`BackwardRule` from a rule name or a :class:`BackwardRule`; a
    :class:`LayerRules` with each of its rules checked.

    Raises
    ------
    ValidationError
        An unknown name or a negative epsilon or gamma.
    """
    if isinstance(rule, LayerRules):
        return LayerRules(as_rule(rule.default), tuple((n, as_rule(r)) for n, r in rule.rules))
    gamma = 0.0
    if isinstance(rule, BackwardRule):
        name, epsilon, gamma = rule
    else:
        name, epsilon = rule, None
    if not isinstance(name, str) or name not in BACKWARD_RULES:
        raise ValidationError(f"relu_rule must be one of {list(BACKWARD_RULES)}; got {name!r}.")
    if epsilon is None:
        epsilon = _DEFAULT_EPSILON.get(name, 0.0)
    epsilon = float(epsilon)
    if not epsilon >= 0:
        raise ValidationError(f"a backward rule's epsilon must be >= 0; got {epsilon!r}.")
    if not float(gamma) >= 0:
        raise ValidationError(f"a backward rule's gamma must be >= 0; got {gamma!r}.")
    return BackwardRule(name, epsilon, float(gamma))


def lrp_weights(weight: np.ndarray, rule: BackwardRule) -> np.ndarray:
    """The weights an LRP rule propagates with: ``W`` (epsilon), ``max(W, 0)``
    (alpha1_beta0) or ``W + gamma * max(W, 0)`` (gamma), as Captum's rules set them."""
    if rule.name == "lrp_epsilon":
        return weight
    if rule.name == "lrp_alpha1_beta0":
        return np.maximum(weight, 0)
    return weight + weight.dtype.type(rule.gamma) * np.maximum(weight, 0)


def rule_name(rule: Any) -> str:
    """The name of a rule given as a string or a :class:`BackwardRule`."""
    return rule.name if isinstance(rule, BackwardRule) else rule


def _halves(x: np.ndarray, what: str) -> int:
    if len(x) % 2:
        raise ValidationError(
            f"the rescale rule needs a batch of rows followed by as many baselines; {what} "
            f"has {len(x)} rows."
        )
    return len(x) // 2


def rescale_multipliers(
    grad: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    normal: np.ndarray,
    epsilon: float,
    backend: Any,
) -> np.ndarray:
    """DeepLift's rescale rule through an elementwise nonlinearity (Captum's ``nonlinear``).

    Parameters
    ----------
    grad : ndarray of shape (2 m, *shape)
        What comes back to the layer's output.
    x, y : ndarray of shape (2 m, *shape)
        The layer's input and output: ``m`` rows, then their ``m`` baselines.
    normal : ndarray of shape (2 m, *shape)
        The layer's ordinary input gradient, kept where ``|x - x_ref| < epsilon``.
    epsilon : float
    backend : Backend

    Returns
    -------
    ndarray of shape (2 m, *shape)
        ``grad * (y - y_ref) / (x - x_ref)``, the same multipliers for both halves.
    """
    m = _halves(x, "the layer's input")

    def fn(g, x, y, normal):
        dx = x[:m] - x[m:]
        dy = y[:m] - y[m:]
        dx = np.concatenate([dx, dx])
        dy = np.concatenate([dy, dy])
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = g * dy / dx
        return np.where(np.abs(dx) < epsilon, normal, ratio)

    return backend.elementwise(fn, grad, x, y, normal, ops=5)


def unpool_assign(
    values: np.ndarray,
    index: np.ndarray,
    x_shape: tuple[int, ...],
) -> np.ndarray:
    """``torch.nn.functional.max_unpool2d``: each value written to its input cell.

    Where windows overlap and two maxima fall on one cell, the later window (row-major)
    wins, as torch's CPU kernel writes them.

    Parameters
    ----------
    values : ndarray of shape (n, c, out_h, out_w)
    index : ndarray of int of shape (n, c, out_h, out_w)
        Each value's cell, flat within its (h, w) plane.
    x_shape : tuple (n, c, h, w)

    Returns
    -------
    ndarray of shape ``x_shape``, zero elsewhere
    """
    n, c, h, w = x_shape
    planes = (np.arange(n * c, dtype=np.int64) * (h * w)).reshape(n, c, 1, 1)
    out = np.zeros(n * c * h * w, dtype=values.dtype)
    out[(index + planes).ravel()] = values.ravel()
    return out.reshape(x_shape)


def stabilized(z: np.ndarray, epsilon: float) -> np.ndarray:
    """``z + epsilon * sign(z)``, with the sign of 0 taken as +1 (Captum's ``PropagationRule``)."""
    sign = np.where(z < 0, -1, 1).astype(z.dtype)
    return z + sign * z.dtype.type(epsilon)


def lrp_ratio(grad: np.ndarray, z: np.ndarray, epsilon: float, backend: Any) -> np.ndarray:
    """``grad / (z + epsilon * sign(z))``: the relevance at a layer's output over that output."""

    def fn(g, z):
        return g / stabilized(z, epsilon)

    return backend.elementwise(fn, grad, z, ops=3)


def times_input(x: np.ndarray, g: np.ndarray, backend: Any) -> np.ndarray:
    """``x * g``: a layer's relevance at its input (LRP's input hook)."""
    return backend.elementwise(np.multiply, x, g)


class RelevanceThrough:
    """LRP's rule for a parameter-free linear layer (pooling): Captum's ``EpsilonRule``.

    ``x * vjp(grad / (z + epsilon * sign(z)))`` with ``z`` the layer's output, ``x`` its
    input (kept in its record as ``"x"``); ``lrp_alpha1_beta0`` changes no weight here, so
    it is the same rule.
    """

    backward_rules: tuple[str, ...] = LRP_RULES

    def vjp_rule(self, grad, backend, record, rule):
        """The relevance at the layer's input, of shape (n_samples, *input_shape)."""
        rule = as_rule(rule)
        if rule.name not in LRP_RULES:
            gx, _ = self.vjp(grad, backend, record, param_grads=False)
            return gx
        x = self._need(record, self)["x"]
        again: dict = {}
        z = self.apply(x, backend, again)
        gx, _ = self.vjp(
            lrp_ratio(grad, z, rule.epsilon, backend), backend, again, param_grads=False
        )
        return times_input(x, gx, backend)
