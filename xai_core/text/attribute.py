"""Gradient attributions of a text classifier at its embedding output, one value per token.

Token ids are not differentiable, so every method here attributes to the output of the
network's :class:`~xai_core.nn.Embedding` (the vectors the ids look up), as Captum's layer
methods on the embedding layer do, and sums over the embedding dimension:

``ig``
    Captum's ``LayerIntegratedGradients``: the embedding's values walk from the baseline's
    (every token of the text replaced by ``baseline_token``, the pad token by default)
    to the text's, the rest of the network reading the text's own ids, Gauss-Legendre
    nodes by default.
``saliency``
    ``|d f / d e|``, summed (Captum's ``Saliency`` at the layer, ``abs=True``).
``gradient_x_input``
    ``e * d f / d e`` (Captum's ``LayerGradientXActivation``).
``smoothgrad``
    Gradient x input with the gradient averaged over ``samples`` copies of the embedding
    plus normal noise of standard deviation ``stdev * (max - min)`` of the row's
    embedding values.

All path points or noisy copies of a chunk of rows go through one recorded pass and one
backward walk stopping at the embedding
(:meth:`~xai_core.ModelRunner.layer_gradient_validated`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core.errors import CapabilityError, UnknownNameError, ValidationError
from xai_core.nn.embedding import Embedding

__all__ = ["TEXT_METHODS", "embedding_node", "attribute", "integration_nodes"]

#: The methods :func:`attribute` computes, with the other names they go by.
TEXT_METHODS = {
    "ig": "ig",
    "integrated_gradients": "ig",
    "layer_ig": "ig",
    "saliency": "saliency",
    "gradient": "saliency",
    "gradient_x_input": "gradient_x_input",
    "input_x_gradient": "gradient_x_input",
    "gxi": "gradient_x_input",
    "smoothgrad": "smoothgrad",
}


def embedding_node(net: Any) -> tuple[str, Embedding]:
    """The one :class:`~xai_core.nn.Embedding` node reading the network's input."""
    nodes = getattr(net, "nodes", None)
    if nodes is None:
        raise CapabilityError(
            f"{net!r} is not a native network; text explanations with gradients need one "
            "(an xai.nn graph, or a torch, Keras or ONNX model imported as one)."
        )
    inputs = set(getattr(net, "inputs", ()) or (getattr(net, "input_name", None),))
    found = [
        (n.name, n.layer)
        for n in nodes
        if isinstance(n.layer, Embedding) and inputs.intersection(n.inputs)
    ]
    if len(found) != 1:
        raise CapabilityError(
            "text explanations attribute at the embedding the token ids are looked up in; "
            f"the network has {len(found)} Embedding node(s) reading its input "
            f"{sorted(inputs)}, expected exactly one."
        )
    return found[0]


@dataclass(frozen=True)
class TextInputs:
    """What each input of a network that reads texts takes: ``ids`` the token ids (the
    input its Embedding reads); every other input an attention mask (a name with
    ``mask``: 1 at the texts' tokens, 0 at padding) or token types (``token_type``,
    ``segment``: zeros), in ``roles``."""

    ids: str
    roles: dict[str, str]

    @classmethod
    def of(cls, net: Any) -> TextInputs:
        """The inputs of ``net``, checked once: an input that is none of those is refused.

        Raises
        ------
        CapabilityError
            Another input, which texts do not give (named), or a mask input of another
            per-sample shape than the ids'.
        """
        name, _ = embedding_node(net)  # it reads one of the network's inputs
        (node,) = [n for n in net.nodes if n.name == name]
        ids = next(i for i in node.inputs if i in net.inputs)
        roles: dict[str, str] = {}
        for other in (i for i in net.inputs if i != ids):
            low = other.lower()
            if "mask" in low:
                roles[other] = "mask"
            elif "token_type" in low or "segment" in low:
                roles[other] = "zeros"
            else:
                raise CapabilityError(
                    f"the network's input {other!r} is neither the token ids ({ids!r}), an "
                    "attention mask (a name with 'mask') nor token types ('token_type'): "
                    "texts give no value for it; fix it with net.with_inputs."
                )
            if net._input_shapes[other] != net._input_shapes[ids]:
                raise CapabilityError(
                    f"the network's input {other!r} takes per-sample shape "
                    f"{net._input_shapes[other]}; the texts give {net._input_shapes[ids]}."
                )
        return cls(ids, roles)

    def values(self, mask: np.ndarray) -> dict[str, np.ndarray]:
        """Every input but the ids for texts of ``mask`` (n_texts, seq_len) booleans."""
        return {
            k: mask.astype(np.float64) if role == "mask" else np.zeros(mask.shape)
            for k, role in self.roles.items()
        }


def integration_nodes(rule: str, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Captum's ``alphas`` and step sizes for ``rule`` with ``steps`` nodes (float64)."""
    if rule == "gausslegendre":
        x, w = np.polynomial.legendre.leggauss(steps)
        return 0.5 * (x + 1.0), 0.5 * w
    if rule == "riemann_trapezoid":
        if steps < 2:  # one node is both ends: weight 0, every attribution 0
            raise ValidationError(
                f"steps must be at least 2 for integration 'riemann_trapezoid'; got {steps}."
            )
        a = np.linspace(0.0, 1.0, steps)
        w = np.full(steps, 1.0 / (steps - 1))
        w[[0, -1]] /= 2.0
        return a, w * (steps - 1) / steps
    offsets = {"riemann_left": 0.0, "riemann_right": 1.0, "riemann_middle": 0.5}
    if rule not in offsets:
        raise UnknownNameError(
            "integration", rule, ["gausslegendre", "riemann_trapezoid", *offsets]
        )
    a = (np.arange(steps) + offsets[rule]) / steps
    return a, np.full(steps, 1.0 / steps)


def _chunks(n: int, per_row: int, budget: int):
    rows = max(1, budget // max(per_row, 1))
    for start in range(0, n, rows):
        yield slice(start, min(start + rows, n))


def attribute(
    runner: Any,
    X: np.ndarray,
    baseline: np.ndarray,
    target: np.ndarray,
    value: str,
    method: str,
    *,
    steps: int = 50,
    integration: str = "gausslegendre",
    samples: int = 25,
    stdev: float = 0.1,
    seed: int = 0,
    internal_batch_size: int | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Per-dimension attributions at the embedding output ``value``.

    Parameters
    ----------
    runner : ModelRunner
    X : ndarray of shape (n_texts, seq_len)
        Token ids in the runner's dtype.
    baseline : ndarray of shape (n_texts, seq_len)
        The baseline's ids (``ig`` only).
    target : ndarray of int64 of shape (n_texts,)
    value : str
        The embedding node.
    method : {"ig", "saliency", "gradient_x_input", "smoothgrad"}

    Returns
    -------
    values : ndarray of float64 of shape (n_texts, seq_len, dim)
    meta : dict
        ``output`` (f at the texts), and for ``ig`` ``base_values`` and
        ``convergence_delta``.
    """
    budget = int(internal_batch_size or runner.batch_size)
    at_x = runner.layer_gradient_validated(X, target, value)
    yx = np.asarray(at_x.activations)
    gx = np.asarray(at_x.gradient, np.float64)
    output = np.asarray(at_x.output, np.float64)
    meta: dict[str, Any] = {"output": output}
    if method == "saliency":
        return np.abs(gx), meta
    if method == "gradient_x_input":
        return gx * yx, meta
    n, shape = len(X), yx.shape[1:]
    total = np.zeros(yx.shape, np.float64)
    if method == "smoothgrad":
        spread = yx.reshape(n, -1).max(axis=1) - yx.reshape(n, -1).min(axis=1)
        sd = (float(stdev) * spread).reshape((1, n) + (1,) * len(shape))
        rng = np.random.default_rng(seed)
        noise = rng.standard_normal((samples, *yx.shape)) * sd
        for s in _chunks(n, samples, budget):
            m = s.stop - s.start
            pts = (yx[s][None] + noise[:, s]).reshape((samples * m, *shape))
            xs = np.broadcast_to(X[s][None], (samples, *X[s].shape)).reshape(samples * m, -1)
            lg = runner.layer_gradient_validated(
                xs, np.tile(target[s], samples), value, layer_values=pts
            )
            g = np.asarray(lg.gradient, np.float64).reshape((samples, m, *shape))
            total[s] = g.mean(axis=0)
        meta["samples"], meta["stdev"] = int(samples), float(stdev)
        return total * yx, meta
    if method != "ig":
        raise UnknownNameError("method", method, sorted(set(TEXT_METHODS.values())))
    at_b = runner.layer_gradient_validated(
        X, target, value, layer_values=_looked_up(runner, baseline, value)
    )
    yb = np.asarray(at_b.activations)
    alphas, weights = integration_nodes(integration, int(steps))
    S = len(alphas)
    a = alphas.astype(yx.dtype).reshape((S, 1) + (1,) * len(shape))
    delta = yx - yb
    for s in _chunks(n, S, budget):
        m = s.stop - s.start
        pts = (yb[s][None] + a * delta[s][None]).reshape((S * m, *shape))
        xs = np.broadcast_to(X[s][None], (S, *X[s].shape)).reshape(S * m, -1)
        lg = runner.layer_gradient_validated(xs, np.tile(target[s], S), value, layer_values=pts)
        g = np.asarray(lg.gradient, np.float64).reshape((S, m, *shape))
        total[s] = np.tensordot(weights, g, axes=1)
    values = np.asarray(delta, np.float64) * total
    base = np.asarray(at_b.output, np.float64)
    meta["base_values"] = base
    meta["convergence_delta"] = values.reshape(n, -1).sum(axis=1) - (output - base)
    meta["steps"], meta["integration"] = int(steps), integration
    return values, meta


def _looked_up(runner: Any, ids: np.ndarray, value: str) -> np.ndarray:
    """The embedding's output for ``ids``: its table's rows."""
    layer = runner.model.node(value).layer
    if not isinstance(layer, Embedding):
        raise ValidationError(f"node {value!r} is not an Embedding.")
    return np.take(layer.weight, np.asarray(ids, dtype=np.int64), axis=0).astype(runner.input_dtype)
