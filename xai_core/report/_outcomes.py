"""What each explained row is: its true label, the prediction and its probability, the target.

Read from ``meta["y_true"]`` (n,) and ``meta["proba"]`` (n, n_outputs), which
:meth:`xai_core.Explanation.with_outcomes` records.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core.report._html import format_number, isolate

__all__ = ["row_outcomes"]


def _name(names: tuple[str, ...] | None, k: Any) -> str:
    if names is not None and isinstance(k, (int, np.integer)) and 0 <= int(k) < len(names):
        return f"{isolate(names[int(k)])} ({int(k)})"
    return format_number(k) if not isinstance(k, str) else isolate(k)


def row_outcomes(e: Any, shown: int) -> list[dict[str, Any]]:
    """Per shown row: ``heading`` (text), ``misclassified`` (bool), and the parts as data."""
    names = e.output_names
    y = e.meta.get("y_true")
    proba = e.meta.get("proba")
    y = None if y is None else np.asarray(y).reshape(-1)
    proba = None if proba is None else np.asarray(proba, dtype=np.float64)
    if proba is not None and (proba.ndim != 2 or len(proba) != len(e)):
        proba = None
    if y is not None and len(y) != len(e):
        y = None
    out = []
    for i in range(shown):
        target = int(e.target[i])
        parts, record = [], {"target": target}
        truth = None
        if y is not None:
            truth = y[i].item() if isinstance(y[i], np.generic) else y[i]
            parts.append(f"true {_name(names, truth)}")
            record["y_true"] = truth
        predicted = None
        if proba is not None:
            predicted = int(np.nanargmax(proba[i])) if np.isfinite(proba[i]).any() else None
            if predicted is not None:
                parts.append(
                    f"predicted {_name(names, predicted)} at p = {format_number(proba[i, predicted], 3)}"
                )
                record.update(predicted=predicted, probability=float(proba[i, predicted]))
            if 0 <= target < proba.shape[1] and target != predicted:
                record["target_probability"] = float(proba[i, target])
        explaining = f"explaining {_name(names, target)}"
        if "target_probability" in record:
            explaining += f" at p = {format_number(record['target_probability'], 3)}"
        parts.append(explaining)
        wrong = (
            truth is not None
            and predicted is not None
            and isinstance(truth, (int, np.integer))
            and int(truth) != predicted
        )
        record["misclassified"] = bool(wrong)
        out.append({"heading": ", ".join(parts), "misclassified": bool(wrong), "data": record})
    return out
