"""The quality figures of several methods side by side, each with its own seed noise.

:func:`quality_table` is what ``compare_methods(..., quality=True)`` adds: per method the mean
over rows of complexity and sparseness (:mod:`xai_core.compare.quality`), max-sensitivity,
the ROAD curves' mean output (:mod:`xai_core.compare.road`) and, on native networks, the
Spearman similarity after randomising the output layer and after randomising every layer
(:mod:`xai_core.compare.randomisation`). A method with a ``seed`` option runs with
``n_seeds`` seeds; each figure's standard deviation over those runs (``<figure>_seed_std``)
is the noise a difference between methods has to exceed. A deterministic method has none
(0, with ``seeds`` 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from xai_core.attribution.explainer import Explainer, explain
from xai_core.attribution.explanation import Explanation
from xai_core.compare.quality import complexity, sensitivity_max, sparseness
from xai_core.compare.randomisation import Randomisation, model_parameter_randomisation
from xai_core.compare.road import road
from xai_core.errors import ValidationError
from xai_core.model.runner import ModelRunner

__all__ = ["FIGURES", "QUALITY_DEFAULTS", "quality_table"]

#: Figure -> which way is better, for the report.
FIGURES = {
    "complexity": "lower: fewer features carry the attribution",
    "sparseness": "higher: sparser",
    "sensitivity_max": "lower: steadier under small input noise",
    "road_morf": "lower: removing the most relevant features hurts the output",
    "road_lerf": "higher: removing the least relevant features keeps the output",
    "randomisation_top": "lower: the attribution follows the output layer's weights",
    "randomisation_all": "lower: the attribution follows the weights at all",
}

#: Settings of the figures; ``quality_options`` overrides any of them.
QUALITY_DEFAULTS: dict[str, Any] = {
    "perturb_radius": 0.02,
    "n_perturb_samples": 5,
    "road_percentages": (10, 30, 50, 70, 90),
    "road_noise": 0.01,
    "seed": 0,
}


def _settings(quality_options: Mapping[str, Any] | None) -> dict[str, Any]:
    unknown = set(quality_options or {}) - set(QUALITY_DEFAULTS)
    if unknown:
        raise ValidationError(
            f"quality_options takes {sorted(QUALITY_DEFAULTS)}; got unknown {sorted(unknown)}."
        )
    return {**QUALITY_DEFAULTS, **dict(quality_options or {})}


def _figures(
    runner: ModelRunner,
    X: np.ndarray,
    cls: type[Explainer],
    e: Explanation,
    target: np.ndarray,
    opts: dict[str, Any],
    s: dict[str, Any],
) -> tuple[dict[str, float], Randomisation | None]:
    from xai_core.nn.network import Network

    values = np.asarray(e.values, dtype=np.float64)
    r = road(
        runner,
        e,
        percentages=s["road_percentages"],
        noise=s["road_noise"],
        seed=s["seed"],
    )
    out = {
        "complexity": float(np.nanmean(complexity(values))),
        "sparseness": float(np.nanmean(sparseness(values))),
        "sensitivity_max": float(
            sensitivity_max(
                runner,
                X,
                cls,
                target=target,
                perturb_radius=s["perturb_radius"],
                n_perturb_samples=s["n_perturb_samples"],
                seed=s["seed"],
                explanation=e,
                method_options=opts,
            ).mean()
        ),
        "road_morf": float(r.morf.mean()),
        "road_lerf": float(r.lerf.mean()),
        "randomisation_top": np.nan,
        "randomisation_all": np.nan,
    }
    randomised = None
    if isinstance(runner.model, Network) and any(n.layer.params for n in runner.model.nodes):
        randomised = model_parameter_randomisation(
            runner.model,
            X,
            cls,
            target=target,
            backend=runner.backend,
            seed=s["seed"],
            explanation=e,
            method_options=opts,
        )
        out["randomisation_top"] = float(randomised.spearman[0].mean())
        out["randomisation_all"] = float(randomised.spearman[-1].mean())
    return out, randomised


def quality_table(
    runner: ModelRunner,
    X: np.ndarray,
    explanations: Mapping[str, Explanation],
    classes: Mapping[str, type[Explainer]],
    target: np.ndarray,
    method_options: Mapping[str, Mapping[str, Any]],
    *,
    n_seeds: int = 3,
    quality_options: Mapping[str, Any] | None = None,
) -> tuple[Any, dict[str, Randomisation]]:
    """Quality figures per method, with the spread over seeds of the seeded ones.

    Parameters
    ----------
    runner : ModelRunner
    X : ndarray of shape (n_samples, *input_shape)
    explanations : mapping of method name to Explanation
        Each method's explanation of ``X`` (its first seed).
    classes : mapping of method name to Explainer subclass
    target : ndarray of int of shape (n_samples,)
    method_options : mapping of method name to options
    n_seeds : int, default=3
        Runs of a method that has a ``seed`` option (its own seed, then the next ones).
    quality_options : mapping, optional
        Overrides of :data:`QUALITY_DEFAULTS`.

    Returns
    -------
    pandas.DataFrame
        One row per method: each figure of :data:`FIGURES`, its ``_seed_std`` and ``seeds``.
    dict of str to Randomisation
        Each method's randomisation curve (first seed), on native networks.
    """
    import pandas as pd

    s = _settings(quality_options)
    rows, curves = {}, {}
    for name, e in explanations.items():
        cls = classes[name]
        opts = dict(method_options.get(name, {}))
        if "progress" in cls.option_names():
            opts["progress"] = False
        figures, randomised = _figures(runner, X, cls, e, target, opts, s)
        if randomised is not None:
            curves[name] = randomised
        runs = [figures]
        if "seed" in cls.option_names() and n_seeds > 1:
            seed0 = int(opts.get("seed") or 0)
            for j in range(1, n_seeds):
                seeded = {**opts, "seed": seed0 + j}
                again = explain(runner, X, method=cls, target=target, **seeded)
                runs.append(_figures(runner, X, cls, again, target, seeded, s)[0])
        table = pd.DataFrame(runs)
        row = {figure: figures[figure] for figure in FIGURES}
        spread = table.std(ddof=0) if len(runs) > 1 else (table.iloc[0] * 0.0).abs()
        row.update({f"{figure}_seed_std": float(spread[figure]) for figure in FIGURES})
        row["seeds"] = len(runs)
        rows[name] = row
    columns = [c for f in FIGURES for c in (f, f"{f}_seed_std")] + ["seeds"]
    return pd.DataFrame.from_dict(rows, orient="index")[columns], curves
