"""SmoothGrad (Smilkov et al., 2017): a gradient method averaged over noisy copies of each row."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from xai_core import Cost, Explainer, Explanation, ModelRunner
from xai_core.attribution.options import Alias, Choice, Float, Int, TypeOf, resolve_options
from xai_ig._batching import MAX_CHUNK_ELEMENTS, batch_bar
from xai_ig.gradients import GradientXInput, Saliency
from xai_ig.ig import IntegratedGradients

__all__ = ["SmoothGrad", "NT_TYPES", "BASES"]

#: How the noisy samples' attributions are combined (Captum's ``nt_type``).
NT_TYPES: tuple[str, ...] = ("smoothgrad", "smoothgrad_sq", "vargrad")
#: Methods the noise tunnel can wrap.
BASES: dict[str, type[Explainer]] = {
    "saliency": Saliency,
    "gradient_x_input": GradientXInput,
    "ig": IntegratedGradients,
}


class SmoothGrad(Explainer):
    """Average a gradient method over ``n_samples`` Gaussian-noised copies of each row.

    Parameters
    ----------
    n_samples : int, default=50
        Noisy copies per row (alias ``nt_samples``, Captum's ``NoiseTunnel`` spelling).
    stdev : float, default=0.15
        Noise standard deviation as a fraction of each row's value range
        ``max(x) - min(x)`` (the paper's noise level; 0.1 to 0.2 works well on images).
    stdevs : float, optional
        The noise standard deviation itself, the same for every row, as Captum's
        ``NoiseTunnel.attribute(stdevs=...)`` takes it; given, it replaces ``stdev``.
    nt_type : {"smoothgrad", "smoothgrad_sq", "vargrad"}, default="smoothgrad"
        Mean of the samples' attributions, mean of their squares, or their variance.
    base : {"saliency", "gradient_x_input", "ig"}, default="saliency"
        The method applied to each noisy copy; ``"ig"`` makes a noise tunnel over
        integrated gradients.
    base_options : dict, optional
        Options of the base method (``{"abs": False}``, ``{"steps": 32}``...), by name or
        alias, checked as :func:`xai_core.explain` checks options.
    seed : int or None, default=0
        Seeds the noise (and the base method's own randomness, unless its options set
        a seed). Row ``r`` draws its noise from its own stream ``[seed, r, 1]``; its copy
        ``j`` is row ``r * n_samples + j`` for the base method. ``None`` draws a seed,
        recorded in ``meta["seed"]``.
    internal_batch_size : int, optional
        Points per backward pass, passed to the base method.
    progress : bool, optional
        Show a progress bar; by default only when the work is long.

    Notes
    -----
    The noisy copies of a group of rows (at most 4M input elements at a time) go to
    the base method as one batch. ``base_values`` is the mean of the base method's
    ``base_values`` over each row's copies. ``meta`` holds ``seed``, ``sigma`` (the
    noise standard deviation per row, shape (n_samples,)), and the base method's
    per-row figures per copy with a ``sample_`` prefix, shape (n_samples, n_noise):
    ``sample_convergence_delta`` for ``base="ig"``, for instance.
    """

    name: ClassVar[str] = "smoothgrad"
    requires: ClassVar[frozenset[str]] = frozenset({"predict", "gradient"})
    constraints: ClassVar[dict] = {
        "n_samples": Int(1),
        "stdev": Float(inclusive=True),
        "stdevs": Float(inclusive=True, allow_none=True),
        "nt_type": Choice(NT_TYPES),
        "base": Choice(tuple(BASES)),
        "base_options": TypeOf((dict,), "a dict"),
        "internal_batch_size": Int(1, allow_none=True),
    }
    aliases: ClassVar[dict] = {"nt_samples": Alias("n_samples", anchor="Captum")}

    def __init__(
        self,
        n_samples: int = 50,
        stdev: float = 0.15,
        stdevs: float | None = None,
        nt_type: str = "smoothgrad",
        base: str = "saliency",
        base_options: dict[str, Any] | None = None,
        seed: int | None = 0,
        internal_batch_size: int | None = None,
        progress: bool | None = None,
    ) -> None:
        self.n_samples = n_samples
        self.stdev = stdev
        self.stdevs = stdevs
        self.nt_type = nt_type
        self.base = base
        self.base_options = base_options
        self.seed = seed
        self.internal_batch_size = internal_batch_size
        self.progress = progress

    def _base_explainer(self, seed: int, progress: bool | None) -> Explainer:
        cls = BASES[Choice(tuple(BASES)).check(self.base, "base")]
        given = TypeOf((dict,), "a dict").check(self.base_options, "base_options") or {}
        options = resolve_options(cls, given, kind=f"option of base method {self.base!r}")
        options.setdefault("internal_batch_size", self.internal_batch_size)
        options.setdefault("progress", progress)
        if "seed" in cls.option_names():
            options.setdefault("seed", seed)
        return cls(**options)

    def estimate_cost(self, runner: ModelRunner, X: np.ndarray) -> Cost | None:
        """Model rows and peak memory over the noisy copies (:mod:`xai_ig.cost`), before any work."""
        from xai_ig.cost import smoothgrad_cost

        return smoothgrad_cost(self, self._base_explainer(self.run_seed(), False), runner, X)

    def prepare(self, runner: ModelRunner, X: np.ndarray) -> dict[str, Any]:
        """What the base method fixes from all rows (see :class:`Explainer`)."""
        fixed = self._base_explainer(self.run_seed(), False).prepare(runner, X)
        if not fixed:
            return {}
        return {"base_options": {**(self.base_options or {}), **fixed}}

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """Noise-averaged attributions for ``X`` of shape (n_samples, *input_shape).

        Returns
        -------
        Explanation
            ``values`` of shape (n_samples, *input_shape).
        """
        runner.require("gradient")
        m, stdev, nt_type = int(self.n_samples), float(self.stdev), self.nt_type
        seed = self.run_seed()

        n, shape = len(X), X.shape[1:]
        n_features = int(np.prod(shape, dtype=np.int64))
        group = max(1, MAX_CHUNK_ELEMENTS // (m * n_features))
        n_groups = math.ceil(n / group)
        base = self._base_explainer(seed, self.progress if n_groups == 1 else False)
        for name, value in base.prepare(runner, X).items():  # from the clean rows, all at once
            setattr(base, name, value)
        rows_global = self.rows(n)
        rngs = self.row_rngs(n, 1)
        flat = np.asarray(X, dtype=np.float64).reshape(n, n_features)
        if self.stdevs is None:
            sigma = stdev * (flat.max(axis=1) - flat.min(axis=1))
        else:
            sigma = np.full(n, float(self.stdevs))

        values = np.empty((n, *shape), dtype=np.float64)
        base_values = np.empty(n, dtype=np.float64)
        per_sample: dict[str, list[np.ndarray]] = {}
        with batch_bar(n_groups, self.progress if n_groups > 1 else False, self.name) as bar:
            for start in range(0, n, group):
                rows = slice(start, min(start + group, n))
                g = rows.stop - rows.start
                draws = np.stack([r.standard_normal((m, *shape)) for r in rngs[rows]])
                noise = draws * sigma[rows].reshape(g, 1, *(1,) * len(shape))
                noisy = (X[rows][:, None] + noise).astype(X.dtype).reshape(g * m, *shape)
                copies = rows_global[rows][:, None] * m + np.arange(m)
                base.row_index = copies.reshape(-1)
                result = base.explain(runner, noisy, np.repeat(target[rows], m))
                samples = result.values.reshape(g, m, *shape)
                if nt_type == "smoothgrad":
                    values[rows] = samples.mean(axis=1)
                elif nt_type == "smoothgrad_sq":
                    values[rows] = (samples**2).mean(axis=1)
                else:
                    values[rows] = samples.var(axis=1)
                base_values[rows] = result.base_values.reshape(g, m).mean(axis=1)
                for key, value in result.meta.items():
                    if isinstance(value, np.ndarray) and value.shape[:1] == (g * m,):
                        per_sample.setdefault(key, []).append(value.reshape(g, m, *value.shape[1:]))
                bar.update(1)
        meta: dict[str, Any] = {
            "seed": seed,
            "sigma": sigma,
            "n_samples": m,
            "nt_type": nt_type,
            "base": self.base,
            "base_options": base.get_options(),
        }
        meta.update({f"sample_{key}": np.concatenate(parts) for key, parts in per_sample.items()})
        return Explanation(values=values, base_values=base_values, target=target, data=X, meta=meta)
