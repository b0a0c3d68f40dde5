"""Scores of model outputs, named as scikit-learn names its scorers.

A scorer here reads the model's outputs, not an estimator: ``score(y, outputs)`` with
outputs of shape (n_samples, n_outputs). Regression scorers read the outputs as they are
(one column: a 1-D prediction). Classification scorers read the outputs as class
probabilities (one output: the probability of class 1); ``accuracy``-like scorers take the
predicted class, the most probable one, as an estimator's ``predict`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from xai_core import UnknownNameError, ValidationError

__all__ = ["Scorer", "resolve_scorers", "scorers"]


@dataclass(frozen=True)
class Scorer:
    """A named score of outputs; larger is better.

    Attributes
    ----------
    name : str
    kind : {"regression", "classification", "any"}
    score : callable
        ``score(y, outputs) -> float``; ``y`` of shape (n_samples,), outputs of shape
        (n_samples, n_outputs).
    """

    name: str
    kind: str
    score: Callable[[np.ndarray, np.ndarray], float]


def _values(outputs: np.ndarray) -> np.ndarray:
    return outputs[:, 0] if outputs.shape[1] == 1 else outputs


def _proba(outputs: np.ndarray) -> np.ndarray:
    if outputs.shape[1] == 1:
        p = outputs[:, 0]
        return np.stack([1.0 - p, p], axis=1)
    return outputs


def _classes(outputs: np.ndarray) -> np.ndarray:
    return np.argmax(_proba(outputs), axis=1)


def _regression(metric: Callable[..., float], sign: float = 1.0) -> Callable:
    return lambda y, out: sign * float(metric(y, _values(out)))


def _on_classes(metric: Callable[..., float], **kwargs: Any) -> Callable:
    return lambda y, out: float(metric(y, _classes(out), **kwargs))


def _log_loss(y: np.ndarray, out: np.ndarray) -> float:
    from sklearn.metrics import log_loss

    p = _proba(out)
    return -float(log_loss(y, p, labels=np.arange(p.shape[1])))


def _roc_auc(y: np.ndarray, out: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    p = _proba(out)
    if p.shape[1] != 2:
        raise ValidationError(
            f"scoring 'roc_auc' needs a binary classifier (2 outputs or 1); got {p.shape[1]} "
            "outputs (use 'roc_auc_ovr')."
        )
    return float(roc_auc_score(y, p[:, 1]))


def _roc_auc_ovr(y: np.ndarray, out: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    p = _proba(out)
    return float(roc_auc_score(y, p, multi_class="ovr", labels=np.arange(p.shape[1])))


def _build() -> dict[str, Scorer]:
    from sklearn import metrics as m

    table: dict[str, Scorer] = {}

    def add(name: str, kind: str, fn: Callable) -> None:
        table[name] = Scorer(name, kind, fn)

    add("r2", "regression", _regression(m.r2_score))
    add("explained_variance", "regression", _regression(m.explained_variance_score))
    add("neg_mean_squared_error", "regression", _regression(m.mean_squared_error, -1.0))
    add("neg_root_mean_squared_error", "regression", _regression(m.root_mean_squared_error, -1.0))
    add("neg_mean_absolute_error", "regression", _regression(m.mean_absolute_error, -1.0))
    add("neg_median_absolute_error", "regression", _regression(m.median_absolute_error, -1.0))
    add("neg_max_error", "regression", _regression(m.max_error, -1.0))
    add("accuracy", "classification", _on_classes(m.accuracy_score))
    add("balanced_accuracy", "classification", _on_classes(m.balanced_accuracy_score))
    add("f1", "classification", _on_classes(m.f1_score))
    add("f1_macro", "classification", _on_classes(m.f1_score, average="macro"))
    add("f1_weighted", "classification", _on_classes(m.f1_score, average="weighted"))
    add("precision", "classification", _on_classes(m.precision_score))
    add("recall", "classification", _on_classes(m.recall_score))
    add("neg_log_loss", "classification", _log_loss)
    add("roc_auc", "classification", _roc_auc)
    add("roc_auc_ovr", "classification", _roc_auc_ovr)
    return table


@cache
def scorers() -> dict[str, Scorer]:
    """The scorers ``scoring=`` may name, by scikit-learn's names (imports its metrics once)."""
    return _build()


def resolve_scorers(scoring: Any, n_outputs: int) -> list[Scorer]:
    """The scorers ``scoring`` names: None, a name, a callable, or a list of them.

    ``None`` is ``"accuracy"`` for a model of two or more outputs and ``"r2"`` for one
    (an estimator's own ``score``). A callable ``f(y, outputs) -> float`` is named after
    its ``__name__``.
    """
    if scoring is None:
        scoring = "accuracy" if n_outputs >= 2 else "r2"
    items = list(scoring) if isinstance(scoring, (list, tuple)) else [scoring]
    if not items:
        raise ValidationError("scoring must name at least one scorer; got an empty list.")
    out: list[Scorer] = []
    for item in items:
        if isinstance(item, str):
            if item not in scorers():
                raise UnknownNameError("scorer (in scoring)", item, sorted(scorers()))
            out.append(scorers()[item])
        elif callable(item):
            name = str(getattr(item, "__name__", type(item).__name__))
            out.append(Scorer(name, "any", lambda y, o, f=item: float(f(y, o))))
        else:
            raise ValidationError(
                f"scoring must be a scorer name, a callable f(y, outputs) or a list of them; "
                f"got {item!r}."
            )
    names = [s.name for s in out]
    if len(set(names)) != len(names):
        raise ValidationError(f"scoring must not name a scorer twice; got {names}.")
    return out
