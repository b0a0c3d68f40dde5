"""Two models on the same data: the What-If Tool's model comparison.

``c = w.compare_models(other)`` opens a second session of ``other`` on the session's data as
it is now and keeps the two in step: :meth:`ModelComparison.edit` edits a row in both,
:meth:`ModelComparison.explain` explains a row on both, and the comparison shows both
predictions side by side with the rows where they disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core import ShapeError, ValidationError

if TYPE_CHECKING:
    from xai_whatif.results import EditResult
    from xai_whatif.whatif import WhatIf

__all__ = ["ModelComparison", "compare_models"]


class ModelComparison:
    """Two what-if sessions of two models on the same rows, edited together.

    Parameters
    ----------
    first, second : WhatIf
        Sessions on the same data (same rows, features and outputs).
    names : pair of str
        The models' names in tables and headings.

    Attributes
    ----------
    sessions : tuple of WhatIf
        ``(first, second)``; each keeps its own edit history (the same edits).
    names : tuple of str
    """

    def __init__(self, first: WhatIf, second: WhatIf, names: Sequence[str]) -> None:
        if first.X.shape != second.X.shape or not np.array_equal(first.X, second.X):
            raise ShapeError("the two sessions must hold the same data.")
        if first.outputs.shape[1] != second.outputs.shape[1] or first.task != second.task:
            raise ShapeError(
                f"the models must have the same outputs and task; got {first.outputs.shape[1]} "
                f"{first.task} outputs and {second.outputs.shape[1]} {second.task} outputs."
            )
        self.sessions = (first, second)
        self.names = tuple(str(n) for n in names)

    @property
    def predicted(self) -> np.ndarray:
        """Both models' predictions, shape (2, n_samples)."""
        return np.stack([s.predicted for s in self.sessions])

    @property
    def outputs(self) -> np.ndarray:
        """Both models' outputs, shape (2, n_samples, n_outputs)."""
        return np.stack([s.outputs for s in self.sessions])

    @property
    def disagree(self) -> np.ndarray:
        """Rows where the predictions differ: another class, or (regression) by at least
        the first model's prediction standard deviation; shape (n_samples,), bool."""
        a, b = self.sessions
        return a._prediction_differs(b.outputs, a.predicted, None)

    @property
    def agreement(self) -> float:
        """Share of rows on which the two models agree."""
        return float(1.0 - self.disagree.mean())

    @property
    def accuracy(self) -> tuple[float, float] | None:
        """Each model's accuracy on the true labels (classification with ``y``), else None."""
        a = self.sessions[0]
        if a.y is None or a.task != "classification":
            return None
        return tuple(float(np.mean(s.predicted == s.y)) for s in self.sessions)

    def table(self, rows: str = "disagree") -> Any:
        """Predictions side by side: a DataFrame indexed by row.

        Parameters
        ----------
        rows : {"disagree", "all"}, default="disagree"
        """
        import pandas as pd

        if rows not in ("disagree", "all"):
            raise ValidationError(f"rows must be 'disagree' or 'all'; got {rows!r}.")
        a, b = self.sessions
        index = np.flatnonzero(self.disagree) if rows == "disagree" else np.arange(len(a.X))
        columns = {f"{self.names[0]} predicted": a.predicted[index]}
        columns[f"{self.names[1]} predicted"] = b.predicted[index]
        if a.y is not None:
            columns["true"] = a.y[index]
        return pd.DataFrame(columns, index=pd.Index(index, name="row"))

    def edit(self, row: int, changes: Mapping[Any, Any] | None = None, **kwargs: Any):
        """Apply one edit (as :meth:`WhatIf.edit` takes it) to both sessions.

        Returns
        -------
        tuple of EditResult
            The first model's and the second's.
        """
        a, b = self.sessions
        first: EditResult = a.edit(row, changes, **kwargs)
        i = first.row
        changed = np.flatnonzero(a.X[i] != b.X[i])
        second: EditResult = b.edit(i, {int(j): a.X[i, j] for j in changed})
        return first, second

    def revert(self, steps: int = 1) -> None:
        """Undo the last ``steps`` edits in both sessions."""
        for s in self.sessions:
            s.revert(steps)

    def explain(self, row: int, method: str = "auto", **options: Any):
        """Both models' explanations of ``row`` as it is now (edits included).

        ``options`` go to :func:`xai_core.explain` for both; each explains its own
        predicted class unless ``target=`` is given.

        Returns
        -------
        tuple of Explanation
            One per model, each of shape (1, n_features).
        """
        import xai_core as xai

        out = []
        for s in self.sessions:
            i = s.table.row_index(row)
            x = s.X[i].reshape(1, *s.input_shape)
            names = None if s.table.is_image else s.feature_names
            out.append(xai.explain(s.runner, x, method=method, feature_names=names, **options))
        return tuple(out)

    def __repr__(self) -> str:
        return (
            f"ModelComparison({self.names[0]} vs {self.names[1]}: agree on "
            f"{self.agreement:.1%} of {len(self.sessions[0].X)} rows)"
        )

    def _repr_html_(self) -> str:
        from xai_core.report import render_fragment

        return render_fragment(self)


def compare_models(
    w: WhatIf, other: Any, *, names: Sequence[str] = ("model A", "model B"), **options: Any
) -> ModelComparison:
    """Compare ``w``'s model with ``other`` on the session's data as it is now.

    Parameters
    ----------
    other : model
        Anything :func:`xai_core.what_if` accepts, with the same inputs and outputs.
    names : pair of str, default=("model A", "model B")
    **options
        For the second session (``backend``, ``batch_size``, ...).

    Returns
    -------
    ModelComparison
    """
    from xai_whatif.whatif import WhatIf

    names = tuple(names)
    if len(names) != 2 or len(set(map(str, names))) != 2:
        raise ValidationError(f"names must be two different names; got {names!r}.")
    t = w.table
    second = WhatIf(
        other,
        t.X.reshape(t.n_samples, *t.sample_shape).copy(),
        w.y,
        feature_names=t.feature_names,
        categorical_features=sorted(t.categories),
        output_names=w.output_names,
        task=w.task,
        **options,
    )
    return ModelComparison(w, second, names)
