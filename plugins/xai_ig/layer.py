"""Layer and neuron attribution, as Captum computes it: layer integrated gradients, layer
conductance, internal influence and neuron conductance.

Each walks straight paths from a baseline to the rows: layer integrated gradients along
the layer's own values (between its values at the baseline and at the input, fed to the
rest of the network), the others along the input. All path points of a chunk of rows go
through one recorded pass and one backward walk that stops at the layer
(:meth:`xai_core.ModelRunner.layer_gradient_validated`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from xai_core import Cost, Explainer, Explanation, ModelRunner
from xai_core.attribution.options import Alias, Bool, Choice, Int, TypeOf
from xai_ig._integration import RULES, integration_nodes
from xai_ig._layers import captum_nodes, make_baseline, path_chunk, path_rows, unit_names
from xai_ig.cam import LAYER
from xai_ig.cost import MAX_STEPS, steps_note

__all__ = [
    "LayerIntegratedGradients",
    "LayerConductance",
    "InternalInfluence",
    "NeuronConductance",
]

_DOC = """\
layer : str or int
    The node attributed to (Captum's ``layer``): a name or an index (negative from the
    end), as ``net.summary()`` lists them. Required.
baseline : float, "zeros" or array-like of shape input_shape, default="zeros"
    The path's start (alias ``baselines``, Captum's spelling): one for every row.
steps : int, default=50
    Quadrature nodes per path (alias ``n_steps``, Captum's spelling).
integration : {{"gausslegendre", "riemann_left", "riemann_right", "riemann_middle", \
"riemann_trapezoid"}}, default="{rule}"
    The quadrature rule (Captum's ``method``), its nodes and step sizes Captum's (for
    ``riemann_trapezoid`` they sum to ``(steps - 1) / steps``, as in Captum).
attribute_to_layer_input : bool, default=False
    Attribute to the layer's input instead of its output (Captum's option).
internal_batch_size : int, optional
    Path points per backward pass (at least one row's points). Default: the runner's
    ``batch_size``, capped at 4M input elements per chunk.
progress : bool, optional
    Show a progress bar over chunks; by default only when there are 10 or more."""


class _PathMethod(Explainer):
    """Options and the path walk every method of the module shares."""

    requires: ClassVar[frozenset[str]] = frozenset({"predict", "gradient", "activations"})
    rule: ClassVar[str] = "gausslegendre"
    #: Whether the method's values are the layer's (else the input's).
    to_layer: ClassVar[bool] = True
    #: Whether the layer's values are fed (layer integrated gradients).
    replaces: ClassVar[bool] = False
    constraints: ClassVar[dict] = {
        "layer": LAYER,
        "baseline": TypeOf((str, int, float, np.ndarray, list, tuple), "a baseline"),
        "steps": Int(1, maximum=MAX_STEPS, over=steps_note),
        "integration": Choice(RULES),
        "attribute_to_layer_input": Bool(),
        "internal_batch_size": Int(1, allow_none=True),
    }
    aliases: ClassVar[dict] = {
        "n_steps": Alias("steps", anchor="Captum"),
        "baselines": Alias("baseline", anchor="Captum"),
    }

    def __init__(
        self,
        layer: str | int | None = None,
        baseline: Any = "zeros",
        steps: int = 50,
        integration: str | None = None,
        attribute_to_layer_input: bool = False,
        internal_batch_size: int | None = None,
        progress: bool | None = None,
    ) -> None:
        self.layer = layer
        self.baseline = baseline
        self.steps = steps
        self.integration = type(self).rule if integration is None else integration
        self.attribute_to_layer_input = attribute_to_layer_input
        self.internal_batch_size = internal_batch_size
        self.progress = progress

    def _value(self, runner: ModelRunner) -> str:
        from xai_core.errors import ValidationError

        if self.layer is None:
            runner.layer_value(0)  # a model without layers is refused first
            names = [node.name for node in runner.model.nodes]
            raise ValidationError(
                f"method {self.name!r} needs layer=: one of {names} (a name or an index, as "
                "net.summary() lists them)."
            )
        return runner.layer_value(
            self.layer, bool(self.attribute_to_layer_input), replaced=self.replaces
        )

    def _points(self) -> int:
        return int(self.steps)

    def estimate_cost(self, runner: ModelRunner, X: np.ndarray) -> Cost | None:
        """``n * (steps + 2)`` gradients; the ``layer`` is checked here, before any model call."""
        self._value(runner)
        integration_nodes(self.integration, int(self.steps))
        n = len(X)
        d = int(np.prod(X.shape[1:], dtype=np.int64))
        chunk = path_chunk(runner, self.internal_batch_size, X)
        points = n * (self._points() + 2)
        return Cost(points, 4 * min(chunk, points) * d * 8, f"{n} rows x {self._points()} steps")

    def _ends(
        self, runner: ModelRunner, X: np.ndarray, target: np.ndarray, value: str
    ) -> tuple[Any, Any, np.ndarray]:
        """The layer's values and outputs at the rows and at the baseline, and the baseline."""
        B = make_baseline(self.baseline, X, X.dtype)
        at_x = runner.layer_gradient_validated(X, target, value)
        at_b = runner.layer_gradient_validated(np.broadcast_to(B, X.shape), target, value)
        return at_x, at_b, B

    def _result(
        self, values: np.ndarray, at_x: Any, at_b: Any, target: np.ndarray, value: str, X: Any
    ) -> Explanation:
        output = np.asarray(at_x.output, np.float64)
        base = np.asarray(at_b.output, np.float64)
        meta = {
            "output": output,
            "layer": value,
            "steps": int(self.steps),
            "integration": self.integration,
            "convergence_delta": values.reshape(len(values), -1).sum(axis=1) - (output - base),
        }
        if self.to_layer:
            acts = np.asarray(at_x.activations, np.float64)
            names = unit_names(value, acts.shape[1:])
            return Explanation(
                values=values,
                base_values=base,
                target=target,
                data=acts,
                feature_names=names,
                meta=meta,
            )
        return Explanation(values=values, base_values=base, target=target, data=X, meta=meta)


class LayerIntegratedGradients(_PathMethod):
    """Layer integrated gradients, Captum's ``LayerIntegratedGradients``.

    With ``y(x)`` the layer's values at row ``x`` and ``y(b)`` at the baseline, the layer's
    values are replaced by ``y(b) + alpha * (y(x) - y(b))`` (the rest of the network still
    reads ``x`` wherever it bypasses the layer) and::

        values = (y(x) - y(b)) * sum_k w_k * df/dy (y(b) + alpha_k * (y(x) - y(b)))

    for ``f = output[target]``: integrated gradients of the network's part after the layer.

    Parameters
    ----------
    {doc}

    Notes
    -----
    ``values`` and ``data`` (the layer's values at the rows) have shape
    (n_samples, *layer_shape), their feature names ``"layer[i,j,k]"``. ``base_values`` is
    ``f(baseline)``; ``meta["convergence_delta"]`` is ``sum(values) - (f(x) - f(b))``.
    With ``attribute_to_layer_input`` the layer's input is replaced; an input other nodes
    read too is refused.
    """

    name: ClassVar[str] = "layer_ig"
    replaces: ClassVar[bool] = True

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """Attributions to the layer's units for ``X`` of shape (n_samples, *input_shape)."""
        value = self._value(runner)
        alphas, weights = captum_nodes(self.integration, int(self.steps))
        at_x, at_b, _ = self._ends(runner, X, target, value)
        yx = np.asarray(at_x.activations)
        yb = np.asarray(at_b.activations)
        delta = yx - yb
        total = np.zeros(yx.shape, np.float64)
        S = len(alphas)
        a = alphas.astype(yx.dtype).reshape((S, 1) + (1,) * (yx.ndim - 1))

        def run(s: slice, m: int) -> None:
            points = (yb[s][None] + a * delta[s][None]).reshape((S * m,) + yx.shape[1:])
            xs = np.broadcast_to(X[s][None], (S,) + X[s].shape).reshape((S * m,) + X.shape[1:])
            lg = runner.layer_gradient_validated(
                xs, np.tile(target[s], S), value, layer_values=points
            )
            g = np.asarray(lg.gradient, np.float64).reshape((S, m) + yx.shape[1:])
            total[s] = np.tensordot(weights, g, axes=1)

        chunk = path_chunk(runner, self.internal_batch_size, X)
        path_rows(runner, X, S, chunk, run, progress=self.progress, desc=self.name)
        return self._result(total * delta, at_x, at_b, target, value, X)


class _InputPathMethod(_PathMethod):
    """The methods whose path is the input's: the layer gradient at every path point."""

    def _walk(
        self,
        runner: ModelRunner,
        X: np.ndarray,
        target: np.ndarray,
        value: str,
        B: np.ndarray,
        alphas: np.ndarray,
        reduce: Any,
        neuron: Any = None,
    ) -> None:
        S = len(alphas)
        a = alphas.astype(X.dtype).reshape((S, 1) + (1,) * (X.ndim - 1))

        def run(s: slice, m: int) -> None:
            xs = (B[None] + a * (X[s] - B)[None]).reshape((S * m,) + X.shape[1:])
            lg = runner.layer_gradient_validated(xs, np.tile(target[s], S), value, neuron=neuron)
            reduce(s, m, lg)

        chunk = path_chunk(runner, self.internal_batch_size, X)
        path_rows(runner, X, S, chunk, run, progress=self.progress, desc=self.name)


class LayerConductance(_InputPathMethod):
    """Layer conductance (Dhamdhere et al., 2018), Captum's ``LayerConductance``.

    Along the input's straight path from the baseline, at ``steps + 1`` points ``x_k``
    (the rule's nodes for ``steps + 1``)::

        values = sum_{{k < steps}} df/dy (x_k) * (y(x_{{k+1}}) - y(x_k))

    for the layer's values ``y`` and ``f = output[target]``.

    Parameters
    ----------
    {doc}

    Notes
    -----
    ``values`` and ``data`` (the layer's values at the rows) have shape
    (n_samples, *layer_shape). ``base_values`` is ``f(baseline)``;
    ``meta["convergence_delta"]`` is ``sum(values) - (f(x) - f(b))``.
    """

    name: ClassVar[str] = "layer_conductance"

    def _points(self) -> int:
        return int(self.steps) + 1

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """Conductance of the layer's units for ``X`` of shape (n_samples, *input_shape)."""
        value = self._value(runner)
        alphas, _ = integration_nodes(self.integration, int(self.steps) + 1)
        at_x, at_b, B = self._ends(runner, X, target, value)
        shape = tuple(np.shape(at_x.activations)[1:])
        total = np.zeros((len(X),) + shape, np.float64)
        S = len(alphas)

        def reduce(s: slice, m: int, lg: Any) -> None:
            y = np.asarray(lg.activations, np.float64).reshape((S, m) + shape)
            g = np.asarray(lg.gradient, np.float64).reshape((S, m) + shape)
            total[s] = ((y[1:] - y[:-1]) * g[:-1]).sum(axis=0)

        self._walk(runner, X, target, value, B, alphas, reduce)
        return self._result(total, at_x, at_b, target, value, X)


class InternalInfluence(_InputPathMethod):
    """Internal influence (Leino et al., 2018), Captum's ``InternalInfluence``.

    The gradient with respect to the layer integrated along the input's straight path::

        values = sum_k w_k * df/dy (b + alpha_k * (x - b))

    Parameters
    ----------
    {doc}

    Notes
    -----
    ``values`` and ``data`` (the layer's values at the rows) have shape
    (n_samples, *layer_shape); not multiplied by any difference, so not complete
    (``meta["convergence_delta"]`` is reported all the same). ``base_values`` is
    ``f(baseline)``.
    """

    name: ClassVar[str] = "internal_influence"

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """Influence on the layer's units for ``X`` of shape (n_samples, *input_shape)."""
        value = self._value(runner)
        alphas, weights = captum_nodes(self.integration, int(self.steps))
        at_x, at_b, B = self._ends(runner, X, target, value)
        shape = tuple(np.shape(at_x.activations)[1:])
        total = np.zeros((len(X),) + shape, np.float64)
        S = len(alphas)

        def reduce(s: slice, m: int, lg: Any) -> None:
            g = np.asarray(lg.gradient, np.float64).reshape((S, m) + shape)
            total[s] = np.tensordot(weights, g, axes=1)

        self._walk(runner, X, target, value, B, alphas, reduce)
        return self._result(total, at_x, at_b, target, value, X)


class NeuronConductance(_InputPathMethod):
    """Neuron conductance (Dhamdhere et al., 2018), Captum's ``NeuronConductance``.

    How much each input feature contributes, through one unit ``y_j`` of the layer, to
    ``f = output[target]``::

        values_i = (x_i - b_i) * sum_k w_k * df/dy_j (x_k) * dy_j/dx_i (x_k)

    at the path points ``x_k = b + alpha_k * (x - b)``.

    Parameters
    ----------
    neuron_selector : int or tuple of int
        The unit (Captum's ``neuron_selector``): one index per axis of the layer's
        per-row shape, or an int for a layer of one axis. Required.
    multiply_by_inputs : bool, default=True
        Multiply by ``x - b`` (Captum's option); without it, the integral alone.
    {doc}

    Notes
    -----
    ``values`` has shape (n_samples, *input_shape). ``base_values`` is ``f(baseline)``;
    ``meta["neuron"]`` is the unit's index. The rule defaults to Captum's for this method,
    ``"riemann_trapezoid"``.
    """

    name: ClassVar[str] = "neuron_conductance"
    rule: ClassVar[str] = "riemann_trapezoid"
    to_layer: ClassVar[bool] = False
    constraints: ClassVar[dict] = {
        **_PathMethod.constraints,
        "neuron_selector": TypeOf((int, np.integer, tuple, list), "an int or a tuple of ints"),
        "multiply_by_inputs": Bool(),
    }
    aliases: ClassVar[dict] = {
        **_PathMethod.aliases,
        "attribute_to_neuron_input": Alias("attribute_to_layer_input", anchor="Captum"),
    }

    def __init__(
        self,
        layer: str | int | None = None,
        neuron_selector: Any = None,
        baseline: Any = "zeros",
        steps: int = 50,
        integration: str | None = None,
        multiply_by_inputs: bool = True,
        attribute_to_layer_input: bool = False,
        internal_batch_size: int | None = None,
        progress: bool | None = None,
    ) -> None:
        super().__init__(
            layer, baseline, steps, integration, attribute_to_layer_input,
            internal_batch_size, progress,
        )  # fmt: skip
        self.neuron_selector = neuron_selector
        self.multiply_by_inputs = multiply_by_inputs

    def _neuron(self, runner: ModelRunner, value: str) -> tuple:
        from xai_core.errors import ValidationError
        from xai_core.nn.hidden import neuron_index

        if self.neuron_selector is None:
            raise ValidationError(
                f"method {self.name!r} needs neuron_selector=: a unit of layer {value!r}, "
                f"one index per axis of its shape {runner.value_shape(value)}."
            )
        return neuron_index(self.neuron_selector, runner.value_shape(value))

    def estimate_cost(self, runner: ModelRunner, X: np.ndarray) -> Cost | None:
        """As the other path methods; ``layer`` and ``neuron_selector`` are checked here."""
        cost = super().estimate_cost(runner, X)
        self._neuron(runner, self._value(runner))
        return cost

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """Conductance through the unit for ``X`` of shape (n_samples, *input_shape)."""
        value = self._value(runner)
        unit = self._neuron(runner, value)
        alphas, weights = captum_nodes(self.integration, int(self.steps))
        at_x, at_b, B = self._ends(runner, X, target, value)
        total = np.zeros(X.shape, np.float64)
        S = len(alphas)
        shape = tuple(np.shape(at_x.activations)[1:])
        rest = (1,) * (X.ndim - 1)

        def reduce(s: slice, m: int, lg: Any) -> None:
            g = np.asarray(lg.gradient, np.float64).reshape((S, m) + shape)
            mid = g[(slice(None), slice(None), *unit)]  # (S, m): df / dy_j
            gi = np.asarray(lg.input_gradient, np.float64).reshape((S, m) + X.shape[1:])
            w = (weights[:, None] * mid).reshape((S, m) + rest)
            total[s] = (w * gi).sum(axis=0)

        self._walk(runner, X, target, value, B, alphas, reduce, neuron=unit)
        values = total * (X - B) if self.multiply_by_inputs else total
        e = self._result(values, at_x, at_b, target, value, X)
        meta = dict(e.meta)
        meta["neuron"] = unit
        del meta["convergence_delta"]  # conductance through one unit is not complete
        return Explanation(
            values=e.values, base_values=e.base_values, target=target, data=X, meta=meta
        )


for _cls in (LayerIntegratedGradients, LayerConductance, InternalInfluence):
    _cls.__doc__ = _cls.__doc__.format(
        doc=_DOC.format(rule="gausslegendre").replace("\n", "\n    ")
    )
NeuronConductance.__doc__ = NeuronConductance.__doc__.format(
    doc=_DOC.format(rule="riemann_trapezoid").replace("\n", "\n    ")
)
