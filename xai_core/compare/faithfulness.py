"""Faithfulness: does the model's output follow the attribution? Deletion, insertion, infidelity.

- **Deletion**: set features to a baseline in decreasing order of attribution and follow
  the explained output. A faithful attribution makes it fall fast: a low area under the
  curve (AUC).
- **Insertion**: start from the baseline and restore features in the same order. A
  faithful attribution makes the output rise fast: a high AUC.
- **Infidelity** (Yeh et al., 2019): how badly the attribution predicts the output change
  under random perturbations, after the best scaling of the attribution (so methods on
  different scales compare). Lower is better. Every explainer here returns attributions
  that sum to an output *difference* from a baseline (IG, SHAP, LIME on deviations), so the
  perturbation scales each feature's deviation from the baseline: ``I = z * (x - baseline)``
  with ``z ~ N(0, noise_scale**2)``, and the attribution predicts ``z . phi`` (Captum's
  ``multiply_by_inputs=True``). For a linear model and its exact attribution the infidelity
  is zero.

Each figure comes with the same figure for random rankings (or random attributions), so
"better than chance" is visible.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core.attribution.explanation import Explanation
from xai_core.model.runner import ModelRunner
from xai_core.validation import check_positive_int

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Faithfulness", "faithfulness", "deletion_curves", "infidelity"]

#: Elements of a perturbed batch held in memory at once.
_CHUNK_ELEMENTS = 4_000_000


def _ranks(order_scores: np.ndarray) -> np.ndarray:
    """Rank of each feature, 0 for the largest score; ties by feature index."""
    order = np.argsort(-order_scores, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(order.shape[1])[None, :], axis=1)
    return ranks


def _target_outputs(runner: ModelRunner, batch: np.ndarray, target: np.ndarray) -> np.ndarray:
    out = runner.predict(batch)
    return out[np.arange(len(batch)), target]


def deletion_curves(
    runner: ModelRunner,
    X: np.ndarray,
    ranks: np.ndarray,
    target: np.ndarray,
    *,
    steps: int,
    baseline: float | np.ndarray = 0.0,
    insertion: bool = False,
) -> np.ndarray:
    """Explained output as features are removed (or inserted) in rank order.

    Parameters
    ----------
    runner : ModelRunner
    X : ndarray of shape (n_samples, *input_shape)
    ranks : ndarray of int of shape (n_samples, n_features)
        0 for the feature removed first.
    target : ndarray of int of shape (n_samples,)
    steps : int
        Points after the start; at step ``s`` the first ``round(s / steps * n_features)``
        features are removed.
    baseline : float or ndarray of shape input_shape, default=0.0
        Value a removed feature takes.
    insertion : bool, default=False
        Start from the baseline and restore features instead.

    Returns
    -------
    ndarray of shape (n_samples, steps + 1)
    """
    n = len(X)
    flat = X.reshape(n, -1)
    nf = flat.shape[1]
    base = np.broadcast_to(np.asarray(baseline, dtype=X.dtype).reshape(-1), (nf,))
    counts = np.round(np.linspace(0, nf, steps + 1)).astype(np.int64)
    rows_per_chunk = max(1, _CHUNK_ELEMENTS // ((steps + 1) * nf))
    curves = np.empty((n, steps + 1))
    for start in range(0, n, rows_per_chunk):
        sl = slice(start, min(start + rows_per_chunk, n))
        removed = ranks[sl, None, :] < counts[None, :, None]  # (rows, steps+1, nf)
        if insertion:
            removed = ~removed
        batch = np.where(removed, base, flat[sl, None, :])
        m = batch.shape[0]
        batch = batch.reshape((m * (steps + 1), *X.shape[1:]))
        outputs = _target_outputs(runner, batch, np.repeat(target[sl], steps + 1))
        curves[sl] = outputs.reshape(m, steps + 1)
    return curves


def _auc(curves: np.ndarray) -> np.ndarray:
    """Area under curves sampled evenly on [0, 1] (trapezoid rule)."""
    return (curves[:, :-1] + curves[:, 1:]).sum(axis=1) / (2 * (curves.shape[1] - 1))


def infidelity(
    runner: ModelRunner,
    X: np.ndarray,
    values: np.ndarray,
    target: np.ndarray,
    *,
    baseline: float | np.ndarray = 0.0,
    n_samples: int = 50,
    noise_scale: float = 0.1,
    seed: int = 0,
) -> np.ndarray:
    """Infidelity per row, with the attribution optimally rescaled (Captum's ``normalize=True``).

    Returns
    -------
    ndarray of shape (n_samples,)
        ``mean((beta * (z . phi) - (f(x) - f(x - z * (x - baseline))))**2)`` over
        ``n_samples`` Gaussian ``z`` of standard deviation ``noise_scale``, with the
        least-squares ``beta``.
    """
    n = len(X)
    flat = X.reshape(n, -1)
    phi = values.reshape(n, -1)
    deviation = flat - np.asarray(baseline, dtype=X.dtype).reshape(-1)
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, noise_scale, size=(n, n_samples, flat.shape[1]))
    perturbed = (flat[:, None, :] - (z * deviation[:, None, :]).astype(X.dtype)).reshape(
        (n * n_samples, *X.shape[1:])
    )
    f_x = _target_outputs(runner, X, target)
    f_p = _target_outputs(runner, perturbed, np.repeat(target, n_samples)).reshape(n, n_samples)
    explained = np.einsum("isf,if->is", z, phi)
    actual = f_x[:, None] - f_p
    denom = (explained**2).mean(axis=1)
    beta = np.where(
        denom > 0, (explained * actual).mean(axis=1) / np.where(denom > 0, denom, 1), 0.0
    )
    return ((beta[:, None] * explained - actual) ** 2).mean(axis=1)


@dataclass(frozen=True, eq=False)
class Faithfulness:
    """Deletion and insertion curves and infidelity of one explanation, against random rankings.

    Attributes
    ----------
    deletion, insertion : ndarray of shape (n_samples, steps + 1)
        Explained output along the curves, ordered by the attribution.
    random_deletion, random_insertion : ndarray of shape (n_samples, steps + 1)
        The same for random rankings, averaged over ``n_random`` permutations.
    infidelity, random_infidelity : ndarray of shape (n_samples,)
        Infidelity of the attribution and of random Gaussian attributions of the same norm.
    summary : pandas.DataFrame
        Per row: deletion and insertion AUC, their random counterparts, infidelities.
    method : str
        The explained method.
    """

    deletion: np.ndarray
    insertion: np.ndarray
    random_deletion: np.ndarray
    random_insertion: np.ndarray
    infidelity: np.ndarray
    random_infidelity: np.ndarray
    method: str
    backend: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def summary(self) -> pd.DataFrame:
        """Per-row AUCs and infidelities (deletion: lower is better; insertion: higher is better)."""
        import pandas as pd

        return pd.DataFrame(
            {
                "deletion_auc": _auc(self.deletion),
                "random_deletion_auc": _auc(self.random_deletion),
                "insertion_auc": _auc(self.insertion),
                "random_insertion_auc": _auc(self.random_insertion),
                "infidelity": self.infidelity,
                "random_infidelity": self.random_infidelity,
            }
        )

    def __repr__(self) -> str:
        s = self.summary.mean()
        return (
            f"Faithfulness(method={self.method!r}, rows={len(self.deletion)}, "
            f"deletion AUC {s.deletion_auc:.4g} vs random {s.random_deletion_auc:.4g}, "
            f"insertion AUC {s.insertion_auc:.4g} vs random {s.random_insertion_auc:.4g})"
        )

    def _repr_html_(self) -> str:
        from xai_core.report import render_fragment

        return render_fragment(self)


def faithfulness(
    model: Any,
    explanation: Explanation,
    *,
    backend: Any = "cpu",
    steps: int = 20,
    baseline: float | np.ndarray = 0.0,
    n_random: int = 5,
    infidelity_samples: int = 50,
    noise_scale: float = 0.1,
    seed: int | None = 0,
) -> Faithfulness:
    """Deletion, insertion and infidelity of ``explanation`` on ``model``, against random rankings.

    Parameters
    ----------
    model : Model, ModelRunner, torch.nn.Module, keras.Model, str, path, estimator or callable
        The explained model, imported as :func:`xai_core.explain` imports it.
    explanation : Explanation
        With ``data`` (the explained rows) and ``target``.
    backend : str or Backend, default="cpu"
        Where the model runs (ignored when ``model`` is a runner).
    steps : int, default=20
        Points along each curve after the start.
    baseline : float or array of shape input_shape, default=0.0
        Value of a removed feature.
    n_random : int, default=5
        Random rankings averaged for the chance curves.
    infidelity_samples : int, default=50
        Perturbations per row for infidelity.
    noise_scale : float, default=0.1
        Standard deviation of the infidelity perturbations.
    seed : int or None, default=0
        Seeds the random rankings and perturbations; ``None`` draws a seed, recorded in
        the result's options.

    Returns
    -------
    Faithfulness
    """
    from xai_core.errors import ValidationError

    if not isinstance(explanation, Explanation) or explanation.data is None:
        raise ValidationError("explanation must be an Explanation with data (the explained rows).")
    explanation = explanation.as_batch()  # e[0]: one row
    from xai_core.attribution.seeds import resolve_seed

    seed = resolve_seed(seed)
    steps = check_positive_int(steps, "steps")
    n_random = check_positive_int(n_random, "n_random")
    infidelity_samples = check_positive_int(infidelity_samples, "infidelity_samples")
    runner = (
        model
        if isinstance(model, ModelRunner)
        else ModelRunner(model, backend, example=explanation.data)
    )
    X = runner.check_X(explanation.data, "explanation.data")
    values = np.asarray(explanation.values, dtype=np.float64)
    target = np.asarray(explanation.target)
    n, nf = len(X), int(np.prod(X.shape[1:]))
    ranks = _ranks(values.reshape(n, nf))
    curves = {
        kind: deletion_curves(
            runner, X, ranks, target, steps=steps, baseline=baseline, insertion=ins
        )
        for kind, ins in (("deletion", False), ("insertion", True))
    }
    rng = np.random.default_rng(seed)
    random_curves = {"deletion": np.zeros((n, steps + 1)), "insertion": np.zeros((n, steps + 1))}
    for _ in range(n_random):
        random_ranks = _ranks(rng.random((n, nf)))
        for kind, ins in (("deletion", False), ("insertion", True)):
            random_curves[kind] += deletion_curves(
                runner, X, random_ranks, target, steps=steps, baseline=baseline, insertion=ins
            )
    norms = np.linalg.norm(values.reshape(n, nf), axis=1, keepdims=True)
    random_phi = rng.normal(size=(n, nf))
    random_phi *= norms / np.maximum(np.linalg.norm(random_phi, axis=1, keepdims=True), 1e-300)
    kw = {
        "baseline": baseline,
        "n_samples": infidelity_samples,
        "noise_scale": noise_scale,
        "seed": seed,
    }
    return Faithfulness(
        deletion=curves["deletion"],
        insertion=curves["insertion"],
        random_deletion=random_curves["deletion"] / n_random,
        random_insertion=random_curves["insertion"] / n_random,
        infidelity=infidelity(runner, X, values, target, **kw),
        random_infidelity=infidelity(runner, X, random_phi.reshape(values.shape), target, **kw),
        method=explanation.method,
        backend=runner.backend.name,
        options={"steps": steps, "n_random": n_random, "noise_scale": noise_scale, "seed": seed},
    )
