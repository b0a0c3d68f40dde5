"""Editing datapoints of a what-if session: change features or mask pixels, see the outputs change, undo.

The functions take the session first; :class:`~xai_whatif.WhatIf` has them as methods
(``w.edit(...)`` is ``edit(w, ...)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core import ShapeError, ValidationError
from xai_core.validation import check_positive_int
from xai_whatif.results import EditResult

if TYPE_CHECKING:
    from xai_whatif.whatif import WhatIf

__all__ = ["edit", "revert"]


def edit(
    w: WhatIf,
    row: int,
    changes: Mapping[Any, Any] | None = None,
    *,
    mask: Any = None,
    fill: float = 0.0,
) -> EditResult:
    """Change features of one row, re-run the model and record the edit.

    Parameters
    ----------
    row : int
        Row index in ``[0, n_samples)``.
    changes : mapping, optional
        Feature (name, index, or pixel ``(r, c[, ch])`` for images) to its new value;
        a categorical feature takes one of its categories.
    mask : array-like of bool of shape image_shape or (n_features,), optional
        Features (pixels) set to ``fill``.
    fill : float, default=0.0
        The value masked features take.

    Returns
    -------
    EditResult
    """
    i = w.table.row_index(row)
    if changes is not None and not isinstance(changes, Mapping):
        raise ValidationError(
            f"changes must be a mapping of feature to value; got {type(changes).__name__}."
        )
    new = w.table.X[i].copy()
    for key, value in (changes or {}).items():
        j = w.table.feature_index(key, "changes")
        new[j] = w.table.code(j, value)
    if mask is not None:
        m = np.asarray(mask)
        if m.dtype != bool or m.size != new.size:
            raise ShapeError(
                f"mask must be a boolean array of shape {w.table.sample_shape} or "
                f"({new.size},); got dtype {m.dtype} and shape {m.shape}."
            )
        cols = np.flatnonzero(m.ravel())
        for j in cols[: min(1, cols.size)]:
            w.table.code(int(j), fill)  # validates and warns once
        new[cols] = float(fill)
    if not changes and mask is None:
        raise ValidationError("edit needs changes={feature: value} or a mask; got neither.")
    old = w.table.X[i].copy()
    after = w._predict(new[None])[0]
    before = w.outputs[i].copy()
    diff = np.flatnonzero(new != old)
    result = EditResult(
        row=i,
        changes=tuple(
            (w.feature_names[j], w.table.label(j, old[j]), w.table.label(j, new[j])) for j in diff
        ),
        x_before=old.reshape(w.table.sample_shape),
        x_after=new.reshape(w.table.sample_shape),
        before=before,
        after=after,
        predicted_before=w.predicted[i].item(),
        predicted_after=w._classify(after[None])[0].item(),
        output_names=w.output_names,
        image_shape=w.table.sample_shape if w.table.is_image else None,
    )
    w._undo.append((i, old, before))
    w._set_row(i, new, after)
    w.history.append(result)
    return result


def revert(w: WhatIf, steps: int = 1) -> None:
    """Undo the last ``steps`` edits (all with ``steps=len(w.history)``)."""
    steps = check_positive_int(steps, "steps")
    if steps > len(w._undo):
        raise ValidationError(
            f"steps must be at most {len(w._undo)} (the edits made); got {steps}."
        )
    for _ in range(steps):
        i, values, outputs = w._undo.pop()
        w._set_row(i, values, outputs)
        w.history.pop()
