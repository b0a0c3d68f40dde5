"""Integrated gradients (Sundararajan, Taly and Yan, 2017), with adaptive steps."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from xai_core import Cost, Explainer, Explanation, ModelRunner, XaiWarning
from xai_core.attribution.options import Alias, Choice, Float, ImageShape, Int
from xai_core.model.paths import block_count
from xai_ig._baselines import make_baselines, uniform_bounds
from xai_ig._batching import batch_bar, chunk_points
from xai_ig._integration import RULES, integration_nodes
from xai_ig.cost import MAX_STEPS, ig_cost, steps_note

__all__ = ["IntegratedGradients", "AUTO_START_STEPS"]

#: With ``steps="auto"``, the first number of steps tried.
AUTO_START_STEPS = 8
#: Machine epsilon of the float types, for the scale of the relative convergence delta.
_EPS = {np.dtype(t): float(np.finfo(t).eps) for t in (np.float16, np.float32, np.float64)}


class IntegratedGradients(Explainer):
    """Integrated gradients: the path integral of the gradient from a baseline to the input.

    For row ``x``, baseline ``b`` and explained output ``f`` (``f = output[target]``)::

        values_i = (x_i - b_i) * integral_0^1 df/dx_i (b + alpha * (x - b)) d alpha

    approximated by a quadrature rule with ``steps`` nodes. By the fundamental theorem
    of calculus ``sum_i values_i = f(x) - f(b)`` (completeness); what the quadrature and
    the backend's numerics miss is reported per row as ``meta["convergence_delta"]``.
    All rows, baselines and steps go through the model as one flat batch of path
    points, walked in chunks of ``internal_batch_size`` points with one backward pass
    each, on the runner's backend.

    Parameters
    ----------
    steps : int or "auto", default=50
        Quadrature nodes per path (alias ``n_steps``, Captum's spelling). ``"auto"`` starts at 8 and doubles the steps of the
        rows whose relative convergence delta is above ``tolerance`` until it is below
        or ``max_steps`` is reached; the trace is kept in ``meta["steps_trace"]``. At most
        ``xai_ig.cost.MAX_STEPS`` (10**6); the nodes take O(steps) memory and time.
    integration : {"gausslegendre", "riemann_left", "riemann_right", "riemann_middle", \
"riemann_trapezoid"}, default="gausslegendre"
        The quadrature rule (nodes and weights as in Captum).
    baseline : str, float or array-like, default="zeros"
        Alias ``baselines`` (Captum's spelling).
        ``"zeros"``; a number (every feature at that value); ``"mean"`` (the mean row of
        ``background``); ``"blur"`` (each image blurred with a Gaussian); ``"uniform"``
        (``n_baselines`` uniform-noise baselines per row in the range of ``X``'s
        values, or ``uniform_range``); ``"data"`` (rows of ``background``, averaged:
        expected gradients);
        or an array of shape ``input_shape`` or (1, *input_shape) (one baseline),
        (n_samples, *input_shape) (one per row) or (1 or n_samples, k, *input_shape)
        (k per row, averaged).
    background : array-like of shape (m, *input_shape), optional
        Reference rows for ``baseline="mean"`` and ``"data"`` (the training set, say).
        ``baseline_data`` is its deprecated old name.
    n_baselines : int, optional
        Baselines per row for ``"uniform"`` (default 1) and ``"data"`` (default: all
        rows of ``background``, shared; otherwise ``n_baselines`` drawn per row
        without replacement, from the row's own stream ``[seed, row]``).
    blur_sigma : float, optional
        Gaussian width in pixels for ``baseline="blur"``; default a sixth of the
        smaller image side.
    image_shape : tuple of int, optional
        (H, W), (H, W, C) or (C, H, W) of flattened images, for ``baseline="blur"``;
        by default the one the network records (``model.image_shape``, a CNN reading
        flat rows), as LIME and SHAP take it; images given as (n_samples, H, W),
        (n_samples, H, W, C) or (n_samples, C, H, W) need none (the layout rule of
        :mod:`xai_core.images`).
    uniform_range : (float, float), optional
        ``(low, high)`` of the ``"uniform"`` baselines; default the range of ``X``'s
        values (of all rows, also when they are explained in chunks).
    tolerance : float, default=0.01
        With ``steps="auto"``: the relative convergence delta to reach.
    max_steps : int, default=512
        With ``steps="auto"``: the most steps tried (at most 10**6).
    seed : int or None, default=0
        Seeds the random baselines (``"uniform"``, ``"data"`` with ``n_baselines``), row
        ``r`` from its own stream ``[seed, r]``; ``None`` draws a seed, recorded in
        ``meta["seed"]``.
    internal_batch_size : int, optional
        Path points per backward pass (Captum's name and meaning). Default: the runner's ``batch_size``, capped at
        4M input elements per chunk.
    progress : bool, optional
        Show a progress bar over chunks; by default only when there are 10 or more.

    Notes
    -----
    ``meta`` holds, per row, ``convergence_delta`` = ``sum(values) - (f(x) -
    base_values)`` and ``relative_convergence_delta``, the same divided by
    ``max(|f(x) - base_values|, sqrt(eps) * (1 + |f(x)|))`` (``eps`` of the backend's
    float type, so rows whose output does not change divide by no zero); ``output``,
    f(x); ``steps`` (an int, or with ``"auto"`` one per row, with ``converged`` and
    ``steps_trace``); ``integration``; ``baseline`` (its kind and settings); ``seed``;
    ``gradient_points``, the number of path points evaluated.

    ``base_values`` is ``f(baseline)``, averaged over the baselines of each row.

    Examples
    --------
    >>> e = xai.explain(net, X, method="ig", steps=64, backend="tpu")
    >>> e.meta["convergence_delta"]        # one per row
    >>> e = xai.explain(net, X, method="ig", steps="auto", tolerance=1e-3)
    >>> e.meta["steps_trace"]
    """

    name: ClassVar[str] = "ig"
    requires: ClassVar[frozenset[str]] = frozenset({"predict", "gradient"})
    picks_target: ClassVar[bool] = True  # f(x), which IG computes anyway, gives the class
    #: method="auto" for models with gradients; compared by compare_methods, after SHAP and LIME
    default_for: ClassVar[Mapping[str, int]] = {"gradient": 0, "compare": 2}
    constraints: ClassVar[dict] = {
        "steps": Int(1, also=("auto",), maximum=MAX_STEPS, over=steps_note),
        "integration": Choice(RULES),
        "n_baselines": Int(1, allow_none=True),
        "blur_sigma": Float(allow_none=True),
        "image_shape": ImageShape(),
        "tolerance": Float(),
        "max_steps": Int(1, maximum=MAX_STEPS, over=steps_note),
        "internal_batch_size": Int(1, allow_none=True),
    }
    aliases: ClassVar[dict] = {
        "n_steps": Alias("steps", anchor="Captum"),
        "baselines": Alias("baseline", anchor="Captum"),
        "baseline_data": Alias("background", deprecated=True),
    }

    def __init__(
        self,
        steps: int | str = 50,
        integration: str = "gausslegendre",
        baseline: Any = "zeros",
        background: Any = None,
        n_baselines: int | None = None,
        blur_sigma: float | None = None,
        image_shape: tuple[int, ...] | None = None,
        uniform_range: tuple[float, float] | None = None,
        tolerance: float = 0.01,
        max_steps: int = 512,
        seed: int | None = 0,
        internal_batch_size: int | None = None,
        progress: bool | None = None,
    ) -> None:
        self.steps = steps
        self.integration = integration
        self.baseline = baseline
        self.background = background
        self.n_baselines = n_baselines
        self.blur_sigma = blur_sigma
        self.image_shape = image_shape
        self.uniform_range = uniform_range
        self.tolerance = tolerance
        self.max_steps = max_steps
        self.seed = seed
        self.internal_batch_size = internal_batch_size
        self.progress = progress

    def _image_shape(self, runner: ModelRunner) -> tuple[int, ...] | None:
        """``image_shape`` as given, else for ``"blur"`` the one the model records (its flat rows' images)."""
        if self.image_shape is not None or not (
            isinstance(self.baseline, str) and self.baseline == "blur"
        ):
            return self.image_shape
        shape = getattr(runner.model, "image_shape", None)
        return None if shape is None else tuple(int(d) for d in shape)

    def _check_steps(self) -> None:
        """The steps the chosen rule needs: the trapezoid rule needs two nodes (one or more,
        the other rules, is each option's own constraint, checked by the core)."""
        if self.integration != "riemann_trapezoid":
            return
        for name in ("steps", "max_steps"):
            value = getattr(self, name)
            if not (isinstance(value, str) and value == "auto"):
                Int(2).check(value, name)

    def _random_baseline(self) -> bool:
        return isinstance(self.baseline, str) and self.baseline in ("uniform", "data")

    def estimate_cost(self, runner: ModelRunner, X: np.ndarray) -> Cost | None:
        """Gradient points and peak memory of this request (:mod:`xai_ig.cost`), before any work."""
        return ig_cost(self, runner, X)

    def prepare(self, runner: ModelRunner, X: np.ndarray) -> dict[str, Any]:
        """The range of all rows' values for ``"uniform"`` baselines (see :class:`Explainer`)."""
        if isinstance(self.baseline, str) and self.baseline == "uniform":
            return {"uniform_range": uniform_bounds(X, self.uniform_range)}
        return {}

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray | None) -> Explanation:
        """Integrated gradients of ``output[target]`` for each row of ``X``.

        Parameters
        ----------
        runner : ModelRunner
            A model with gradients on a backend with gradients.
        X : ndarray of shape (n_samples, *input_shape)
        target : ndarray of int64 of shape (n_samples,), or None
            None: each row's predicted class, from the outputs at ``X`` that IG computes
            for completeness anyway (on the affine path, from the first layer's products
            at the rows, with no second pass through it).

        Returns
        -------
        Explanation
            ``values`` of shape (n_samples, *input_shape), ``base_values`` f(baseline).
        """
        runner.require("gradient")
        self._check_steps()
        seed = self.run_seed()
        baselines, described = make_baselines(
            self.baseline,
            X,
            background=self.background,
            n_baselines=self.n_baselines,
            blur_sigma=self.blur_sigma,
            image_shape=self._image_shape(runner),
            uniform_range=self.uniform_range,
            rngs=self.row_rngs(len(X)) if self._random_baseline() else [],
        )
        described["n_baselines"] = baselines.shape[1]
        n_features = math.prod(X.shape[1:])
        chunk = chunk_points(runner, self.internal_batch_size, n_features)

        # the runner plans the straight paths once: on a network whose first linear layer
        # comes before any nonlinearity, that layer's products are made once per row and
        # baseline, and the path integral and both ends of the path, f(x) and f(b), reuse them
        paths = runner.straight_paths(X, baselines)
        if target is None:  # the predicted class, from the outputs IG needs anyway
            target = paths.predicted()
        eps = _EPS.get(X.dtype, _EPS[np.dtype(np.float32)])

        def ends() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
            """f(x), f(b), their gap and the scale of the relative convergence delta."""
            f_x, f_b = paths.outputs(target)
            gap = f_x - f_b
            return f_x, f_b, gap, np.maximum(np.abs(gap), np.sqrt(eps) * (1.0 + np.abs(f_x)))

        # with fixed steps on the affine plan, f(x) and f(b) go forward with the first
        # block of path points (its products); otherwise they are computed first
        fold = paths.affine and self.steps != "auto"
        if not fold:
            f_x, f_b, gap, scale = ends()

        def integrate(steps: int, which: np.ndarray | None, fold: bool = False) -> np.ndarray:
            """The integral for the rows ``which`` (None: all, in order)."""
            alphas, weights = integration_nodes(self.integration, steps)
            targets = target if which is None else target[which]
            blocks = block_count(len(targets) * baselines.shape[1], steps, chunk)
            with batch_bar(blocks, self.progress, f"ig ({steps} steps)") as bar:
                return paths.integral(
                    which, targets, alphas, weights, chunk=chunk, bar=bar, ends=fold
                )

        meta: dict[str, Any] = {
            "integration": self.integration,
            "baseline": described,
            "seed": seed,
            "internal_batch_size": chunk,
        }
        k = baselines.shape[1]
        if self.steps == "auto":
            values, steps_used, converged, trace = self._adaptive(integrate, gap, scale, len(X))
            meta.update(steps=steps_used, converged=converged, steps_trace=trace)
            meta["gradient_points"] = int(sum(t["steps"] * t["rows"] for t in trace) * k)
        else:
            values = integrate(int(self.steps), None, fold)
            if fold:
                f_x, f_b, gap, scale = ends()
            meta["steps"] = int(self.steps)
            meta["gradient_points"] = len(X) * k * int(self.steps)
        sums = np.add.reduce(values.reshape(len(X), -1), axis=1, dtype=np.float64)
        # the affine plan's gradients did not pass through the runner's check: a row holds a
        # NaN or an infinity only if its sum is not finite, and then the check names the rows
        if paths.affine and not np.logical_and.reduce(np.isfinite(sums)):
            runner.check_finite(values.reshape(len(X), -1), what="gradients")
        delta = sums - gap
        meta["output"] = f_x
        meta["convergence_delta"] = delta
        meta["relative_convergence_delta"] = delta / scale
        if values.flags.owndata:  # made here and handed over: the Explanation need not copy it
            values.setflags(write=False)
        return Explanation(values=values, base_values=f_b, target=target, data=X, meta=meta)

    def _adaptive(
        self, integrate: Any, gap: np.ndarray, scale: np.ndarray, n: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """Double the steps of the rows not yet within ``tolerance``, up to ``max_steps``."""
        max_steps = int(self.max_steps)
        steps = min(AUTO_START_STEPS, max_steps)
        active = np.arange(n)
        values: np.ndarray | None = None
        steps_used = np.zeros(n, dtype=np.int64)
        converged = np.zeros(n, dtype=bool)
        trace: list[dict[str, Any]] = []
        while True:
            part = integrate(steps, active)
            if values is None:
                values = np.zeros((n, *part.shape[1:]))
            values[active] = part
            steps_used[active] = steps
            relative = (
                np.abs(part.reshape(len(active), -1).sum(axis=1) - gap[active]) / scale[active]
            )
            done = relative <= self.tolerance
            converged[active] = done
            trace.append(
                {
                    "steps": steps,
                    "rows": len(active),
                    "converged": int(done.sum()),
                    "max_relative_delta": float(relative.max()),
                }
            )
            active = active[~done]
            if active.size == 0 or steps >= max_steps:
                break
            steps = min(2 * steps, max_steps)
        if active.size:
            warnings.warn(
                f"steps='auto' reached max_steps={max_steps} with {active.size} row(s) above "
                f"tolerance={self.tolerance:g} (largest relative delta {trace[-1]['max_relative_delta']:.3g}); "
                "raise max_steps or tolerance. The backend's precision may also bound the delta.",
                XaiWarning,
                stacklevel=5,
            )
        return values, steps_used, converged, trace
