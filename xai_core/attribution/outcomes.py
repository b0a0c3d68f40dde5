"""What each explained row is: its true label, the model's prediction and probability, the target.

Recorded in ``meta`` by :meth:`xai_core.Explanation.with_outcomes` (or by
``xai.explain(..., y=...)``, which asks the model for its outputs): ``y_true`` (n,), and
``proba`` (n, n_outputs) when the outputs are probabilities, else ``y_pred`` (n,), the
predicted class (or value, for a regression). Headings read
``true 4 · predicted 6 (0.71)``, with ``· explaining 3 (0.12)`` when the explained output
is not the prediction; a row whose true class is not the predicted one is misclassified.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "KEYS",
    "label_name",
    "outputs_as_outcomes",
    "row_heading",
    "row_outcomes",
    "target_label",
]

#: The meta keys that hold outcomes.
KEYS = ("y_true", "proba", "y_pred")

#: How far from 1 a row of probabilities may sum (float32 softmax, rounding).
_SUM_TOLERANCE = 1e-3


def label_name(names: tuple[str, ...] | None, k: Any, wrap: Callable[[str], str] = str) -> str:
    """Class ``k`` by its name when ``names`` has it, else ``k`` itself (an int, a value).

    ``wrap`` is applied to a name (the report isolates user text for bidi).
    """
    if isinstance(k, (bool, np.bool_)):
        k = int(k)
    if isinstance(k, (int, np.integer)):
        if names is not None and 0 <= int(k) < len(names):
            return wrap(names[int(k)])
        return str(int(k))
    if isinstance(k, str):
        return wrap(k)
    if isinstance(k, (float, np.floating)):
        return f"{float(k):.4g}"
    return wrap(str(k))


def target_label(names: tuple[str, ...] | None, k: int, wrap: Callable[[str], str] = str) -> str:
    """Output ``k`` by name and index (``benign (1)``); the name alone when it is the index
    (MNIST's ``6``, not ``6 (6)``); the index alone without names."""
    k = int(k)
    if names is None or not 0 <= k < len(names):
        return str(k)
    return wrap(names[k]) if names[k] == str(k) else f"{wrap(names[k])} ({k})"


def _class_of(v: Any) -> Any:
    """``v`` as a class index when it is an integral number, else ``v`` (a name, a value)."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and np.isfinite(v) and v.is_integer():
        return int(v)
    return v


def outputs_as_outcomes(outputs: Any, y_true: Any) -> dict[str, np.ndarray]:
    """What the model's ``outputs`` (n, n_outputs) say of each row, for :meth:`with_outcomes`.

    Rows of probabilities (in [0, 1], summing to 1) are ``proba``; one output in [0, 1]
    with 0/1 labels is a binary classifier's probability of class 1 (``proba`` of two
    columns); other outputs of several columns give ``y_pred``, their argmax; one output
    of a regression is ``y_pred`` itself.
    """
    out = np.asarray(outputs, dtype=np.float64)
    out = out.reshape(len(out), -1)
    finite = np.isfinite(out).all()
    in_unit = finite and out.size and out.min() >= 0.0 and out.max() <= 1.0
    if out.shape[1] > 1:
        if in_unit and np.allclose(out.sum(axis=1), 1.0, atol=_SUM_TOLERANCE):
            return {"proba": out}
        return {"y_pred": np.argmax(np.nan_to_num(out, nan=-np.inf), axis=1)}
    labels = np.asarray(y_true).reshape(-1)
    binary = labels.dtype.kind in "biuf" and np.isin(labels, (0, 1)).all()
    if in_unit and binary:
        return {"proba": np.column_stack([1.0 - out[:, 0], out[:, 0]])}
    return {"y_pred": out[:, 0]}


def row_outcomes(e: Any, shown: int, wrap: Callable[[str], str] = str) -> list[dict[str, Any]]:
    """Per shown row: ``heading`` (text), ``misclassified`` (bool), and the parts as data.

    Parameters
    ----------
    e : Explanation
        A batch (``meta["y_true"]``, ``meta["proba"]`` or ``meta["y_pred"]`` of one entry
        per row, when known).
    shown : int
        The first rows to describe.
    wrap : callable, default=str
        Applied to every name (the report isolates user text).
    """
    names = e.output_names
    n = len(e)

    def per_row(key: str, ndim: int) -> np.ndarray | None:
        v = e.meta.get(key)
        if v is None:
            return None
        arr = np.asarray(v)
        return arr if arr.ndim == ndim and len(arr) == n else None

    y, proba, y_pred = per_row("y_true", 1), per_row("proba", 2), per_row("y_pred", 1)
    if proba is not None:
        proba = proba.astype(np.float64)
    out = []
    for i in range(shown):
        target = int(e.target[i])
        parts, record = [], {"target": target}
        truth = None if y is None else _class_of(y[i])
        if truth is not None:
            parts.append(f"true {label_name(names, truth, wrap)}")
            record["y_true"] = truth
        predicted: Any = None
        if proba is not None and np.isfinite(proba[i]).any():
            predicted = int(np.nanargmax(proba[i]))
            p = float(proba[i, predicted])
            parts.append(f"predicted {label_name(names, predicted, wrap)} ({p:.2f})")
            record.update(predicted=predicted, probability=p)
        elif y_pred is not None:  # a class index, or a regression's value (a float)
            predicted = y_pred[i].item()
            parts.append(f"predicted {label_name(names, predicted, wrap)}")
            record["predicted"] = predicted
        if predicted != target:
            explaining = f"explaining {label_name(names, target, wrap)}"
            if proba is not None and 0 <= target < proba.shape[1]:
                record["target_probability"] = float(proba[i, target])
                explaining += f" ({record['target_probability']:.2f})"
            parts.append(explaining)
        wrong = _misclassified(truth, predicted, names)
        record["misclassified"] = wrong
        out.append({"heading": " · ".join(parts), "misclassified": wrong, "data": record})
    return out


def row_heading(e: Any, i: int) -> str:
    """``row i: true 4 · predicted 6 (0.71) (misclassified)`` when outcomes are known, else
    ``row i: target 6`` (plain text, for figure titles and the text view)."""
    if not any(k in e.meta for k in KEYS):
        return f"row {i}: target {target_label(e.output_names, int(e.target[i]))}"
    o = row_outcomes(e, i + 1)[i]
    return f"row {i}: {o['heading']}" + (" (misclassified)" if o["misclassified"] else "")


def _misclassified(truth: Any, predicted: Any, names: tuple[str, ...] | None) -> bool:
    """Whether a known true class differs from the predicted class (never for regressions)."""
    if truth is None or not isinstance(predicted, int):
        return False
    if isinstance(truth, int):
        return truth != predicted
    if isinstance(truth, str) and names is not None and predicted < len(names):
        return truth != names[predicted]
    return False
