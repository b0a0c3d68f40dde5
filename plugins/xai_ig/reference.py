"""The reference-based family, as Captum computes it: DeepLift, DeepLiftShap, GradientShap, LRP.

DeepLift and LRP are the network's own backward pass with a modified rule per layer type
(``relu_rule=`` of :meth:`xai_core.ModelRunner.layer_gradient_validated`, the rules of
:mod:`xai_core.nn.rules`): DeepLift's ``"rescale"`` runs each chunk of rows together with
their baselines as one batch (the rows, then the baselines) and walks back once;
LRP's rules replace the backward pass of every layer with weights and every pooling
layer. GradientShap is plain gradients at random points between noisy rows and random
baselines.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from xai_core import Cost, Explainer, Explanation, ModelRunner
from xai_core.attribution.options import Alias, Choice, Constraint, Float, Int, Seed
from xai_core.errors import ShapeError, ValidationError
from xai_core.nn.rules import BackwardRule, LayerRules
from xai_ig._batching import batch_bar, chunk_points, gradient_rows
from xai_ig.cost import gradient_cost

__all__ = ["DeepLift", "DeepLiftShap", "GradientShap", "LRP", "gradient_shap_draws"]

_CHUNK_DOC = """\
internal_batch_size : int, optional
    Rows (DeepLift: row and baseline pairs) per backward pass. Default: the runner's
    ``batch_size`` (half of it for DeepLift), capped at 4M input elements per chunk.
progress : bool, optional
    Show a progress bar over chunks; by default only when there are 10 or more."""


def _fill(cls: type) -> type:
    cls.__doc__ = cls.__doc__.replace("{chunk}", _CHUNK_DOC.replace("\n", "\n    "))
    return cls


def _as_rows(value: Any, X: np.ndarray, name: str, *, per_row: bool) -> np.ndarray:
    """``value`` as float64 rows of the input's shape: (k, *input_shape).

    A number or ``"zeros"`` is one row; an array of the input's shape is one row; an array
    of shape (k, *input_shape) is ``k`` rows (with ``per_row``, ``k`` must be 1 or
    ``n_samples``).
    """
    shape = X.shape[1:]
    if value is None or (isinstance(value, str) and value == "zeros"):
        return np.zeros((1, *shape))
    if isinstance(value, str):
        raise ValidationError(
            f"{name} must be 'zeros', a number or an array of shape {shape} or (k, *{shape}); "
            f"got {value!r}."
        )
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        return np.full((1, *shape), float(arr))
    if arr.shape == shape:
        arr = arr[None]
    if arr.shape[1:] != shape or len(arr) == 0:
        raise ShapeError(
            f"{name} must have shape {shape} or (k, *{shape}); got an array of shape {arr.shape}."
        )
    if per_row and len(arr) not in (1, len(X)):
        raise ShapeError(
            f"{name} must have one row or one per row of X ({len(X)}); got {len(arr)} rows."
        )
    if not np.isfinite(arr).all():
        raise ValidationError(f"{name} must be finite; got NaN or infinite values.")
    return arr


class _ReferenceMethod(Explainer):
    """Shared checks: a native network with layers (refused up front otherwise)."""

    requires: ClassVar[frozenset[str]] = frozenset({"predict", "gradient", "activations"})
    constraints: ClassVar[dict] = {"internal_batch_size": Int(1, allow_none=True)}
    internal_batch_size: int | None
    progress: bool | None

    def estimate_cost(self, runner: ModelRunner, X: np.ndarray) -> Cost | None:
        """``n`` outputs and ``n`` gradients per baseline; the network is checked here."""
        runner.layer_value(0)  # refuses models without layers up front
        cost = gradient_cost(runner, X)
        k = self._passes(X)
        return Cost(k * cost.model_rows, k * cost.peak_bytes, cost.detail)

    def _passes(self, X: np.ndarray) -> int:
        return 1


class _DeepLiftBase(_ReferenceMethod):
    """One rescale pass per chunk of (row, baseline) pairs."""

    def estimate_cost(self, runner: ModelRunner, X: np.ndarray) -> Cost | None:
        cost = super().estimate_cost(runner, X)
        if runner.batch_size < 2:
            raise ValidationError(
                "DeepLift runs rows and their baselines in one batch: the runner's batch_size "
                f"must be at least 2; got {runner.batch_size}."
            )
        for node in getattr(runner.model, "nodes", ()):
            if type(node.layer).__name__ == "Softmax":
                raise ValidationError(
                    f"DeepLift's rescale rule is defined here for softmax-free networks; node "
                    f"{node.name!r} is a Softmax: explain the logits (the network without it)."
                )
        return Cost(2 * cost.model_rows, 2 * cost.peak_bytes, cost.detail)

    def _pairs(
        self, runner: ModelRunner, X: np.ndarray, B: np.ndarray, target: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """DeepLift multipliers times ``X - B`` for pairs of rows ``X``, ``B`` of shape
        (m, *input_shape), and the outputs ``f(X)[target]``, ``f(B)[target]`` (m,)."""
        m = len(X)
        n_features = int(np.prod(X.shape[1:], dtype=np.int64))
        chunk = max(1, min(chunk_points(runner, self.internal_batch_size, 2 * n_features),
                           runner.batch_size // 2))  # fmt: skip
        dtype = runner.input_dtype
        values = np.empty(X.shape, dtype=np.float64)
        fx, fb = np.empty(m), np.empty(m)
        value = runner.model.input_name
        with batch_bar(math.ceil(m / chunk), self.progress, self.name) as bar:
            for start in range(0, m, chunk):
                s = slice(start, min(start + chunk, m))
                k = s.stop - s.start
                x, b = X[s].astype(dtype), B[s].astype(dtype)
                lg = runner.layer_gradient_validated(
                    np.concatenate([x, b]),
                    np.concatenate([target[s], target[s]]),
                    value,
                    relu_rule="rescale",
                )
                grad = np.asarray(lg.gradient[:k], dtype=np.float64)
                values[s] = (x.astype(np.float64) - b) * grad
                out = np.asarray(lg.output, dtype=np.float64)
                fx[s], fb[s] = out[:k], out[k:]
                bar.update(1)
        return values, fx, fb


@_fill
class DeepLift(_DeepLiftBase):
    """DeepLift with the rescale rule (Shrikumar et al., 2017), Captum's ``DeepLift``.

    Each row and its baseline run forward together; walking back, every ReLU, LeakyReLU,
    sigmoid, tanh, ELU and softplus layer passes back ``g * (y - y_ref) / (x - x_ref)``
    instead of its derivative (the derivative where ``|x - x_ref| < 1e-10``) and max
    pooling Captum's ``maxpool`` multipliers; linear layers (dense, convolutions, average
    pooling, additions, reshapes) keep their gradient. ``values = (x - baseline) *
    multipliers``.

    Parameters
    ----------
    baselines : "zeros", float or array-like, default="zeros"
        Captum's ``baselines``: a number, one array of the input's shape (or (1,
        *input_shape)) for every row, or one per row, (n_samples, *input_shape).
        ``baseline`` is this project's spelling.
    {chunk}

    Notes
    -----
    ``values`` has shape (n_samples, *input_shape). ``base_values`` is ``f(baseline)``;
    ``meta["convergence_delta"]`` is Captum's, ``sum(values) - (f(x) - f(baseline))``,
    zero up to rounding for the rescale rule; ``meta["output"]`` is ``f(x)``.

    Captum 0.9 computes a nonlinear module's multipliers from a stale gradient when its
    output feeds another nonlinear module directly (``Conv -> ReLU -> MaxPool``; Captum
    issue #1104, fixed upstream in pull request #1843); this implementation is the rule
    as published, and equals Captum's wherever two such modules are not adjacent.
    Networks with a softmax layer are refused (explain the logits).

    Examples
    --------
    >>> e = xai.explain(net, X, method="deeplift", baselines=0.0)
    >>> e.meta["convergence_delta"]       # ~0 per row
    """

    name: ClassVar[str] = "deeplift"
    aliases: ClassVar[dict] = {"baseline": Alias("baselines")}

    def __init__(
        self,
        baselines: Any = "zeros",
        internal_batch_size: int | None = None,
        progress: bool | None = None,
    ) -> None:
        self.baselines = baselines
        self.internal_batch_size = internal_batch_size
        self.progress = progress

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """DeepLift of ``output[target]`` for ``X`` of shape (n_samples, *input_shape)."""
        B = _as_rows(self.baselines, X, "baselines", per_row=True)
        B = np.broadcast_to(B, X.shape)
        values, fx, fb = self._pairs(runner, X, B, target)
        delta = values.reshape(len(X), -1).sum(axis=1) - (fx - fb)
        meta = {"output": fx, "convergence_delta": delta, "rule": "rescale"}
        return Explanation(values=values, base_values=fb, target=target, data=X, meta=meta)


@_fill
class DeepLiftShap(_DeepLiftBase):
    """DeepLift averaged over a distribution of baselines, Captum's ``DeepLiftShap``.

    Every row is explained by :class:`DeepLift` against each of the ``k`` baselines and
    the ``k`` attributions are averaged (an approximation of SHAP values).

    Parameters
    ----------
    baselines : array-like of shape (k, *input_shape)
        Captum's ``baselines``: the reference rows (``background`` is this project's
        spelling). Required.
    {chunk}

    Notes
    -----
    ``values`` has shape (n_samples, *input_shape); ``base_values`` is the mean of
    ``f(baseline)`` over the baselines, so that ``base_values + sum(values) = f(x)`` up to
    ``meta["convergence_delta"]``; ``meta["output"]`` is ``f(x)``. As :class:`DeepLift`,
    the rule as published (see its notes on Captum 0.9).
    """

    name: ClassVar[str] = "deeplift_shap"
    aliases: ClassVar[dict] = {"background": Alias("baselines")}

    def __init__(
        self,
        baselines: Any = None,
        internal_batch_size: int | None = None,
        progress: bool | None = None,
    ) -> None:
        self.baselines = baselines
        self.internal_batch_size = internal_batch_size
        self.progress = progress

    def _passes(self, X: np.ndarray) -> int:
        if self.baselines is None:
            return 1
        return len(_as_rows(self.baselines, X, "baselines", per_row=False))

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """DeepLiftShap of ``output[target]`` for ``X`` of shape (n_samples, *input_shape)."""
        if self.baselines is None:
            raise ValidationError(
                "deeplift_shap needs baselines: an array of shape (k, *input_shape) of "
                "reference rows; got None."
            )
        B = _as_rows(self.baselines, X, "baselines", per_row=False)
        n, k = len(X), len(B)
        XX = np.repeat(X, k, axis=0)  # Captum's repeat_interleave
        BB = np.tile(B, (n,) + (1,) * (B.ndim - 1))
        values, fx, fb = self._pairs(runner, XX, BB, np.repeat(target, k))
        values = values.reshape(n, k, *X.shape[1:]).mean(axis=1)
        fx, fb = fx[::k], fb.reshape(n, k).mean(axis=1)
        delta = values.reshape(n, -1).sum(axis=1) - (fx - fb)
        meta = {"output": fx, "convergence_delta": delta, "n_baselines": k, "rule": "rescale"}
        return Explanation(values=values, base_values=fb, target=target, data=X, meta=meta)


def gradient_shap_draws(
    rows: range,
    input_shape: tuple[int, ...],
    n_baselines: int,
    n_samples: int,
    stdevs: float,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GradientShap's random draws for the rows ``rows``, each from its own stream ``[seed, r]``.

    Row ``r`` draws, in this order, its noise ``stdevs * standard_normal((n_samples,
    *input_shape))``, the indices of its baselines ``integers(0, n_baselines,
    n_samples)`` and the points on the paths ``random(n_samples)``, from
    ``numpy.random.default_rng([seed, r])``: the same rows get the same draws however the
    rows are chunked.

    Returns
    -------
    noise : ndarray of float64 of shape (len(rows), n_samples, *input_shape)
    index : ndarray of int64 of shape (len(rows), n_samples)
    alpha : ndarray of float64 of shape (len(rows), n_samples)
    """
    noise = np.empty((len(rows), n_samples, *input_shape))
    index = np.empty((len(rows), n_samples), dtype=np.int64)
    alpha = np.empty((len(rows), n_samples))
    for i, r in enumerate(rows):
        rng = np.random.default_rng([seed, r])
        noise[i] = rng.standard_normal((n_samples, *input_shape)) * stdevs
        index[i] = rng.integers(0, n_baselines, n_samples)
        alpha[i] = rng.random(n_samples)
    return noise, index, alpha


@_fill
class GradientShap(_ReferenceMethod):
    """GradientShap (Lundberg and Lee, 2017), Captum's ``GradientShap``.

    For each row ``x`` and each of ``n_samples`` draws: noise ``e ~ N(0, stdevs**2)`` per
    element, a baseline ``b`` drawn from ``baselines``, a point ``alpha ~ U(0, 1)``; the
    attribution is ``(x + e - b) * grad f(b + alpha (x + e - b))``, averaged over the
    draws (Captum's ``NoiseTunnel`` of ``InputBaselineXGradient``, ``smoothgrad``).

    Parameters
    ----------
    baselines : float, "zeros" or array-like of shape (k, *input_shape)
        Captum's ``baselines``: the distribution the baselines are drawn from
        (``background`` is this project's spelling). Required.
    n_samples : int, default=5
        Draws per row (Captum's name and default).
    stdevs : float, default=0.0
        Standard deviation of the noise added to each row (Captum's name and default;
        ``sigma`` is accepted).
    seed : int or None, default=0
        Row ``r`` draws from its own stream (:func:`gradient_shap_draws`); ``None`` draws
        a seed, recorded in ``meta["seed"]``.
    {chunk}

    Notes
    -----
    ``values`` has shape (n_samples, *input_shape). ``base_values`` is the mean of
    ``f(b)`` over the baselines; ``meta["output"]`` is ``f(x)``, ``meta["seed"]`` the seed.
    Captum draws from numpy's and torch's global generators; the same draws (fed from
    :func:`gradient_shap_draws`) give Captum's values exactly.
    """

    name: ClassVar[str] = "gradient_shap"
    requires: ClassVar[frozenset[str]] = frozenset({"predict", "gradient"})
    constraints: ClassVar[dict] = {
        **_ReferenceMethod.constraints,
        "n_samples": Int(1, maximum=100_000),
        "stdevs": Float(0.0, inclusive=True),
        "seed": Seed(),
    }
    aliases: ClassVar[dict] = {
        "background": Alias("baselines"),
        "sigma": Alias("stdevs"),
    }

    def __init__(
        self,
        baselines: Any = None,
        n_samples: int = 5,
        stdevs: float = 0.0,
        seed: int | None = 0,
        internal_batch_size: int | None = None,
        progress: bool | None = None,
    ) -> None:
        self.baselines = baselines
        self.n_samples = n_samples
        self.stdevs = stdevs
        self.seed = seed
        self.internal_batch_size = internal_batch_size
        self.progress = progress

    def estimate_cost(self, runner: ModelRunner, X: np.ndarray) -> Cost | None:
        """``n * n_samples`` gradients."""
        cost = gradient_cost(runner, X)
        k = int(self.n_samples)
        return Cost(k * cost.model_rows, k * cost.peak_bytes, cost.detail)

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """GradientShap of ``output[target]`` for ``X`` of shape (n_samples, *input_shape)."""
        if self.baselines is None:
            raise ValidationError(
                "gradient_shap needs baselines: a number or an array of shape (k, "
                "*input_shape) to draw baselines from; got None."
            )
        B = _as_rows(self.baselines, X, "baselines", per_row=False)
        seed = self.seed
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1)[0])
        n, s, shape = len(X), int(self.n_samples), X.shape[1:]
        dtype = runner.input_dtype
        n_features = int(np.prod(shape, dtype=np.int64))
        points = chunk_points(runner, self.internal_batch_size, n_features)
        rows_per = max(1, points // s)
        values = np.empty(X.shape, dtype=np.float64)
        Bd = B.astype(dtype)
        for start in range(0, n, rows_per):
            rows = range(start, min(start + rows_per, n))
            noise, index, alpha = gradient_shap_draws(rows, shape, len(B), s, self.stdevs, seed)
            x = X[start : rows.stop].astype(dtype)[:, None] + noise.astype(dtype)
            b = Bd[index]
            a = alpha.astype(dtype).reshape(*alpha.shape, *(1,) * len(shape))
            scaled = a * x + (1 - a) * b
            flat = scaled.reshape(-1, *shape)
            grads = gradient_rows(
                runner, flat, np.repeat(target[start : rows.stop], s),
                chunk=points, progress=self.progress, desc=self.name,
            )  # fmt: skip
            attr = (x.astype(np.float64) - b) * grads.reshape(x.shape)
            values[start : rows.stop] = attr.mean(axis=1)
        output = np.asarray(runner.predict(X), dtype=np.float64)[np.arange(n), target]
        base = np.asarray(runner.predict(B.astype(dtype)), dtype=np.float64)[:, target].mean(axis=0)
        meta = {"output": output, "seed": seed, "n_samples": s, "stdevs": float(self.stdevs)}
        return Explanation(values=values, base_values=base, target=target, data=X, meta=meta)


#: LRP's rules by this project's names: the executor's rule and Captum's class.
LRP_RULE_NAMES = {
    "epsilon": "lrp_epsilon",
    "alpha1_beta0": "lrp_alpha1_beta0",
    "gamma": "lrp_gamma",
}


def _rule_spec(value: Any, name: str) -> tuple[str, float | None]:
    """``"gamma"`` or ``("gamma", 0.5)`` / ``("epsilon", 1e-3)``: a rule and its parameter."""
    if isinstance(value, str):
        rule, parameter = value, None
    elif isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[0], str):
        rule, parameter = value
    else:
        raise ValidationError(
            f"{name} must be a rule name ({', '.join(LRP_RULE_NAMES)}) or a pair like "
            f"('gamma', 0.25) or ('epsilon', 1e-3); got {value!r}."
        )
    if rule not in LRP_RULE_NAMES:
        raise ValidationError(f"{name} must name one of {list(LRP_RULE_NAMES)}; got {rule!r}.")
    if parameter is not None:
        if rule == "alpha1_beta0":
            raise ValidationError(f"{name}: alpha1_beta0 takes no parameter; got {value!r}.")
        parameter = Float(0.0, inclusive=True).check(parameter, name)
    return rule, parameter


class LayerRuleMap(Constraint):
    """A mapping of layers (index or name, as ``net.summary()`` lists them) to LRP rules."""

    def check(self, value: Any, name: str) -> Any:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise ValidationError(
                f"{name} must be a dict of layer (index or name) to rule; got "
                f"{type(value).__name__}."
            )
        for key, spec in value.items():
            if isinstance(key, bool) or not isinstance(key, (int, str)):
                raise ValidationError(f"{name} keys must be layer indices or names; got {key!r}.")
            _rule_spec(spec, f"{name}[{key!r}]")
        return dict(value)

    def describe(self) -> str:
        return "dict of layer to rule"


@_fill
class LRP(_ReferenceMethod):
    """Layer-wise relevance propagation (Bach et al., 2015), Captum's ``LRP``.

    The relevance ``f(x)[target]`` is passed back layer by layer: every layer with
    weights (dense, convolutions) and every pooling layer passes back
    ``x * vjp(R / (z + epsilon * sign(z)))``, ``z`` its output; ReLU and tanh pass it
    through unchanged; other layers (reshapes, additions) pass it as their gradient.

    Parameters
    ----------
    rule : {"epsilon", "alpha1_beta0", "gamma"}, default="epsilon"
        The rule of every dense and convolution layer that ``rules`` does not name:
        Captum's ``EpsilonRule`` (its default for every layer), ``Alpha1_Beta0_Rule`` (the
        weights' positive part in ``z`` and in the backward product, the bias kept) or
        ``GammaRule`` (``W + gamma * W+``, the bias kept, stabilised by 1e-9). Pooling
        layers use the epsilon rule (Captum's default for them; the weight rules change
        nothing there).
    epsilon : float, default=1e-9
        The stabiliser (Captum's ``EpsilonRule(epsilon=1e-9)`` and
        ``PropagationRule.STABILITY_FACTOR``).
    gamma : float, default=0.25
        The gamma rule's weight on the positive part (Captum's ``GammaRule(gamma=0.25)``).
    rules : dict, optional
        A rule per layer, as Captum's ``module.rule``: layer (index or name, as
        ``net.summary()`` lists them) to ``"epsilon"``, ``"alpha1_beta0"``, ``"gamma"``, or
        a pair ``("epsilon", 1e-3)`` / ``("gamma", 0.5)`` with the rule's own parameter
        (otherwise ``epsilon`` and ``gamma`` above). A rule on a layer without weights or
        pooling (an activation, a reshape) changes nothing, as in Captum.
    {chunk}

    Notes
    -----
    ``values`` has shape (n_samples, *input_shape). ``meta["convergence_delta"]`` is
    Captum's, ``f(x) - sum(values)`` (the relevance the stabiliser absorbs);
    ``base_values`` is the same, so that ``base_values + sum(values) = f(x)``;
    ``meta["output"]`` is ``f(x)``; ``meta["rules"]`` the rule of each named layer.
    Captum's per-module rules correspond to the torch module's layers before import: a
    batch norm that the importer folds into a convolution is one layer here (Captum
    gives it its own ``EpsilonRule``).

    Examples
    --------
    >>> e = xai.explain(net, X, method="lrp", rule="alpha1_beta0")
    >>> e = xai.explain(net, X, method="lrp", rules={"conv1": ("gamma", 0.25), "fc2": "epsilon"})
    """

    name: ClassVar[str] = "lrp"
    constraints: ClassVar[dict] = {
        **_ReferenceMethod.constraints,
        "rule": Choice(tuple(LRP_RULE_NAMES)),
        "epsilon": Float(0.0, inclusive=True),
        "gamma": Float(0.0, inclusive=True),
        "rules": LayerRuleMap(),
    }

    def __init__(
        self,
        rule: str = "epsilon",
        epsilon: float = 1e-9,
        gamma: float = 0.25,
        rules: dict | None = None,
        internal_batch_size: int | None = None,
        progress: bool | None = None,
    ) -> None:
        self.rule = rule
        self.epsilon = epsilon
        self.gamma = gamma
        self.rules = rules
        self.internal_batch_size = internal_batch_size
        self.progress = progress

    def _backward_rule(self, spec: Any, name: str) -> BackwardRule:
        rule, parameter = _rule_spec(spec, name)
        epsilon = parameter if rule == "epsilon" and parameter is not None else self.epsilon
        gamma = parameter if rule == "gamma" and parameter is not None else self.gamma
        return BackwardRule(LRP_RULE_NAMES[rule], float(epsilon), float(gamma))

    def _walk_rule(self, runner: ModelRunner) -> tuple[Any, dict[str, str]]:
        """The rule of the backward walk (one, or one per node) and, per named layer, its rule."""
        default = self._backward_rule(self.rule, "rule")
        if not self.rules:
            return default, {}
        by_node, shown = {}, {}
        for key, spec in self.rules.items():
            node = runner.layer_value(key)
            if node in by_node:
                raise ValidationError(f"rules names layer {node!r} twice (as {key!r} too).")
            by_node[node] = self._backward_rule(spec, f"rules[{key!r}]")
            shown[node] = spec if isinstance(spec, str) else f"{spec[0]}({spec[1]})"
        return LayerRules(default, tuple(by_node.items())), shown

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """LRP of ``output[target]`` for ``X`` of shape (n_samples, *input_shape)."""
        rule, shown = self._walk_rule(runner)
        n = len(X)
        chunk = chunk_points(runner, self.internal_batch_size, int(np.prod(X.shape[1:])))
        values = np.empty(X.shape, dtype=np.float64)
        output = np.empty(n)
        value = runner.model.input_name
        with batch_bar(math.ceil(n / chunk), self.progress, self.name) as bar:
            for start in range(0, n, chunk):
                s = slice(start, min(start + chunk, n))
                lg = runner.layer_gradient_validated(X[s], target[s], value, relu_rule=rule)
                out = np.asarray(lg.output, dtype=np.float64)
                grad = np.asarray(lg.gradient, dtype=np.float64)
                values[s] = grad * out.reshape(-1, *(1,) * (X.ndim - 1))
                output[s] = out
                bar.update(1)
        delta = output - values.reshape(n, -1).sum(axis=1)
        meta = {"output": output, "convergence_delta": delta, "rule": self.rule}
        if shown:
            meta["rules"] = shown
        return Explanation(values=values, base_values=delta, target=target, data=X, meta=meta)
