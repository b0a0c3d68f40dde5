"""How good is an explanation on its own: complexity, sparseness and max-sensitivity.

- **Complexity** (Bhatt et al., 2020; Quantus's ``Complexity``): the Shannon entropy (natural
  log) of a row's normalised absolute attribution ``p = |a| / sum |a|``. Low: few features
  carry the attribution. Between 0 (one feature) and ``log(n_features)`` (uniform).
- **Sparseness** (Chalasani et al., 2020; Quantus's ``Sparseness`` with its defaults
  ``abs=True, normalise=True``): the Gini index of ``|a| / max |a| + 1e-7`` sorted ascending,
  ``sum((2 i - n - 1) a_i) / (n sum a_i)``. 0: uniform; near 1: one feature.
- **Max-sensitivity** (Yeh et al., 2019; ``captum.metrics.sensitivity_max``): over
  ``n_perturb_samples`` inputs ``x + u``, ``u`` uniform in the L-infinity ball of radius
  ``perturb_radius``, the largest ``||phi(x + u) - phi(x)|| / ||phi(x)||`` (Frobenius norm of
  the flattened attributions by default; a zero ``||phi(x)||`` divides by 1, as Captum does).
  The noise of row ``i`` is ``numpy.random.default_rng(seed).uniform(-r, r, (n_samples,
  n_perturb_samples, *input_shape))[i]``, so it can be replayed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from xai_core.errors import ShapeError, ValidationError
from xai_core.validation import check_positive_int

__all__ = ["complexity", "sparseness", "sensitivity_max", "uniform_perturbations"]


def _rows(values: Any, name: str = "values") -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    if a.ndim < 2:
        raise ShapeError(f"{name} must have shape (n_samples, *input_shape); got {a.shape}.")
    return a.reshape(len(a), -1)


def complexity(values: Any) -> np.ndarray:
    """Entropy of each row's normalised |attribution|.

    Parameters
    ----------
    values : array-like of shape (n_samples, *input_shape)

    Returns
    -------
    ndarray of shape (n_samples,)
        ``-sum(p log p)`` with ``p = |a| / sum |a|`` (``0 log 0 = 0``); NaN for an all-zero row.
    """
    a = np.abs(_rows(values))
    total = a.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = a / total
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    out = -terms.sum(axis=1)
    return np.where(total[:, 0] > 0, out, np.nan)


def sparseness(values: Any) -> np.ndarray:
    """Gini index of each row's |attribution| (Quantus's ``Sparseness`` with its defaults).

    Parameters
    ----------
    values : array-like of shape (n_samples, *input_shape)

    Returns
    -------
    ndarray of shape (n_samples,)
        In [0, 1): 0 for a uniform row, near 1 when one feature carries everything.
    """
    a = np.abs(_rows(values))
    peak = a.max(axis=1, keepdims=True)
    a = np.sort(a / np.where(peak > 0, peak, 1.0) + 1e-7, axis=1)
    n = a.shape[1]
    weights = 2 * np.arange(1, n + 1) - n - 1
    return (a * weights).sum(axis=1) / (n * a.sum(axis=1))


def uniform_perturbations(
    shape: tuple[int, ...], n_perturb_samples: int, perturb_radius: float, seed: int
) -> np.ndarray:
    """The noise :func:`sensitivity_max` adds: shape (n_samples, n_perturb_samples, *input_shape)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(
        -perturb_radius, perturb_radius, size=(shape[0], n_perturb_samples, *shape[1:])
    )


def _norm(a: np.ndarray, norm_ord: Any) -> np.ndarray:
    if isinstance(norm_ord, str):
        if norm_ord != "fro":
            raise ValidationError(f"norm_ord must be 'fro' or a number; got {norm_ord!r}.")
        return np.linalg.norm(a, axis=-1)
    return np.linalg.norm(a, ord=float(norm_ord), axis=-1)


def sensitivity_max(
    model: Any,
    X: Any,
    method: Any = "ig",
    *,
    target: Any = None,
    backend: Any = "cpu",
    perturb_radius: float = 0.02,
    n_perturb_samples: int = 10,
    norm_ord: Any = "fro",
    seed: int | None = 0,
    explanation: Any = None,
    method_options: Mapping[str, Any] | None = None,
) -> np.ndarray:
    """Largest relative change of the attribution under small uniform input noise (Captum's).

    Parameters
    ----------
    model : Model, ModelRunner, torch.nn.Module, keras.Model, str, path, estimator or callable
    X : array-like of shape (n_samples, *input_shape)
    method : str or Explainer subclass, default="ig"
    target : int or array-like of shape (n_samples,), optional
        By default the predicted class of each row; the perturbed rows explain the same output.
    backend : str or Backend, default="cpu"
    perturb_radius : float, default=0.02
        Half-width of the uniform noise (L-infinity radius), Captum's default.
    n_perturb_samples : int, default=10
    norm_ord : "fro" or float, default="fro"
        Norm of the flattened attribution change and of the attribution.
    seed : int or None, default=0
        Seeds the noise (see :func:`uniform_perturbations`); ``None`` draws one.
    explanation : Explanation, optional
        The attribution of ``X`` already computed with the same method and options.
    method_options : mapping, optional
        Options of the method (its own ``seed`` among them, apart from ``seed`` here).

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    from xai_core.attribution.explainer import explain, resolve_target
    from xai_core.attribution.seeds import resolve_seed
    from xai_core.model.runner import ModelRunner

    if not perturb_radius > 0:
        raise ValidationError(f"perturb_radius must be positive; got {perturb_radius!r}.")
    n_perturb_samples = check_positive_int(n_perturb_samples, "n_perturb_samples")
    seed = resolve_seed(seed)
    runner = model if isinstance(model, ModelRunner) else ModelRunner(model, backend, example=X)
    X = runner.check_X(X)
    target = resolve_target(runner, X, target)
    from xai_core.plugin.resolve import explainer_class

    method = explainer_class(method)
    options = dict(method_options or {})
    if "progress" in method.option_names():
        options.setdefault("progress", False)
    if explanation is None:
        explanation = explain(runner, X, method=method, target=target, **options)
    phi = np.asarray(explanation.values, dtype=np.float64).reshape(len(X), -1)
    noise = uniform_perturbations(X.shape, n_perturb_samples, perturb_radius, seed)
    perturbed = (X[:, None].astype(np.float64) + noise).astype(X.dtype)
    perturbed = perturbed.reshape((len(X) * n_perturb_samples, *X.shape[1:]))
    again = explain(
        runner, perturbed, method=method, target=np.repeat(target, n_perturb_samples), **options
    )
    phi_p = np.asarray(again.values, dtype=np.float64).reshape(len(X), n_perturb_samples, -1)
    scale = _norm(phi, norm_ord)
    scale = np.where(scale == 0, 1.0, scale)
    return (_norm(phi_p - phi[:, None], norm_ord) / scale[:, None]).max(axis=1)
