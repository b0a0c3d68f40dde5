"""The datapoint editor's state: the selected row, its edits, prediction, explanation, counterfactual, PD.

:class:`EditorState` is everything the notebook editor (:mod:`xai_whatif.editor_widgets`)
shows, computed from Python: select a row, set a feature's value, and the prediction, the
explanation of the edited row, its nearest counterfactual and the partial dependence of the
edited feature (with the row's current value marked) follow. The widgets only draw it, so
the editor is tested without a browser; :meth:`EditorState.to_dict` and
:meth:`EditorState.from_dict` (or :meth:`~EditorState.to_json` and
:meth:`~EditorState.from_json`) round-trip it through JSON; a state of the wrong shape is
one :class:`~xai_core.ValidationError` naming the place in it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

import xai_core as xai
from xai_core import UnknownNameError, ValidationError, XaiError
from xai_core.jsonfile import Bool, Either, Int, List, Num, Obj, Str, check, parse_json
from xai_core.validation import check_choice, check_positive_int
from xai_whatif.results import Counterfactuals, EditResult, PartialDependence

if TYPE_CHECKING:
    from xai_whatif.whatif import WhatIf

__all__ = ["COLOUR_BY", "STATE", "EditorState"]

COLOUR_BY = ("prediction", "label", "correctness")
PROJECTION = "projection"


class EditorState:
    """What the datapoint editor shows, driven from Python.

    Parameters
    ----------
    w : WhatIf
        The session edited (edits go through :meth:`WhatIf.edit`, so ``w.history`` is the
        editor's history and :meth:`WhatIf.revert` its undo).
    row : int, default=0
        The row selected first.
    method : str, optional
        How the edited row is explained: ``"ig"`` for models with gradients, else ``"shap"``
        (any registered method works).
    explain_options : mapping, optional
        Options of :func:`xai_core.explain`; SHAP gets a background of ``background_rows``
        rows of the data and a small budget unless given others.
    axes : pair of (feature or "projection"), optional
        The scatter's axes: two features, or ``"projection"`` for the first two PCA
        coordinates of the data (:func:`xai_core.project`). Default: the first two features.
    colour_by : {"prediction", "label", "correctness"}, default="prediction"
    pd_rows : int, default=200
        Rows (evenly spaced) the partial-dependence curve averages over.
    seed : int, default=0
    n_neighbors : int, default=5
        Nearest examples listed beside the row (the What-If Tool's "show nearest").
    distance : {"l1", "l2"}, default="l1"
        The distance of the nearest counterfactual and the neighbours.

    Attributes
    ----------
    row : int
    feature : str
        The feature being edited (the PD curve's).
    outputs : ndarray of shape (n_outputs,)
        The model's outputs on the row as edited.
    explanation : Explanation
        Of the row as edited.
    counterfactual : Counterfactuals
        The nearest example with another prediction.
    neighbors : Neighbors
        The ``n_neighbors`` examples nearest the row as edited, by ``distance``.
    dependence : PartialDependence
        Of ``feature``, averaged over ``pd_rows`` rows.
    """

    def __init__(
        self,
        w: WhatIf,
        row: int = 0,
        *,
        method: str | None = None,
        explain_options: Mapping[str, Any] | None = None,
        axes: tuple[Any, Any] | None = None,
        colour_by: str = "prediction",
        pd_rows: int = 200,
        background_rows: int = 50,
        seed: int = 0,
        n_neighbors: int = 5,
        distance: str = "l1",
    ) -> None:
        self.w = w
        self.n_neighbors = check_positive_int(n_neighbors, "n_neighbors")
        self.distance = check_choice(distance, "distance", ("l1", "l2"))
        t = w.table
        if method is None:
            method = "ig" if "gradient" in w.runner.capabilities else "shap"
        self.method = str(method)
        options = dict(explain_options or {})
        options.setdefault("progress", False)
        if self.method != "ig" and "background" not in options:
            rng = np.random.default_rng(seed)
            take = rng.choice(t.n_samples, min(background_rows, t.n_samples), replace=False)
            options["background"] = w._X_original[np.sort(take)].reshape(-1, *w.input_shape)
            if self.method == "shap":
                options.setdefault("max_evals", 2 * t.n_features + 64)
        self.explain_options = options
        self.seed = int(seed)
        self.pd_rows = np.unique(
            np.linspace(0, t.n_samples - 1, min(int(pd_rows), t.n_samples)).astype(np.int64)
        )
        self._pd_cache: dict[str, PartialDependence] = {}
        self._projection: np.ndarray | None = None
        self.axes = self._check_axes(axes if axes is not None else self._default_axes())
        self.colour_by = self._check_colour(colour_by)
        self.feature = t.feature_names[0]
        self.listeners: list[Any] = []
        self.select(row)

    # -- checks -------------------------------------------------------------------------------
    def _default_axes(self) -> tuple[str, str]:
        names = self.w.feature_names
        return (names[0], names[1]) if len(names) > 1 else (PROJECTION, PROJECTION)

    def _check_axes(self, axes: Any) -> tuple[str, str]:
        if isinstance(axes, str):
            axes = (axes, axes)
        if not isinstance(axes, (tuple, list)) or len(axes) != 2:
            raise ValidationError(f"axes must be two features or 'projection'; got {axes!r}.")
        if PROJECTION in axes:
            return (PROJECTION, PROJECTION)
        t = self.w.table
        return tuple(t.feature_names[t.feature_index(a, "axes")] for a in axes)

    @staticmethod
    def _check_colour(colour_by: str) -> str:
        if colour_by not in COLOUR_BY:
            raise UnknownNameError("colour_by", colour_by, COLOUR_BY)
        return colour_by

    # -- selection and edits ------------------------------------------------------------------
    @property
    def values(self) -> np.ndarray:
        """The selected row as edited, shape (n_features,)."""
        return self.w.table.X[self.row].copy()

    @property
    def original(self) -> np.ndarray:
        """The selected row as it was loaded, shape (n_features,)."""
        return self.w._X_original[self.row].copy()

    @property
    def predicted(self) -> Any:
        """The predicted class (or value) of the row as edited."""
        return self.w.predicted[self.row].item()

    @property
    def history(self) -> list[EditResult]:
        """The session's edits, oldest first."""
        return list(self.w.history)

    def select(self, row: int) -> EditorState:
        """Select ``row``: prediction, explanation and counterfactual follow."""
        self.row = self.w.table.row_index(row)
        return self._update(pd=False)

    def set_feature(self, feature: Any) -> EditorState:
        """Make ``feature`` the one edited (its PD curve is shown)."""
        t = self.w.table
        self.feature = t.feature_names[t.feature_index(feature)]
        self.dependence = self._dependence()
        self._notify()
        return self

    def set_value(self, feature: Any, value: Any) -> EditResult | None:
        """Set one feature of the selected row; everything shown follows. None if unchanged."""
        t = self.w.table
        j = t.feature_index(feature)
        self.feature = t.feature_names[j]
        if t.code(j, value) == t.X[self.row, j]:
            self.dependence = self._dependence()
            self._notify()
            return None
        result = self.w.edit(self.row, {self.feature: value})
        self._update(pd=True)
        return result

    def undo(self, steps: int = 1) -> EditorState:
        """Undo the session's last ``steps`` edits (whatever rows they touched)."""
        self.w.revert(steps)
        return self._update(pd=True)

    def reset(self) -> EditResult | None:
        """Restore the selected row to its loaded values (recorded as one more edit)."""
        changed = np.flatnonzero(self.values != self.original)
        if not changed.size:
            return None
        t = self.w.table
        orig = self.original
        result = self.w.edit(
            self.row, {t.feature_names[j]: t.label(j, orig[j]) for j in changed.tolist()}
        )
        self._update(pd=True)
        return result

    def clone(self) -> EditorState:
        """An editor on an independent copy of the session (``w.clone()``), same selection."""
        other = EditorState.__new__(EditorState)
        other.__dict__.update(self.__dict__)
        other.w = self.w.clone()
        other.listeners = []
        other._pd_cache = {}
        return other._update(pd=True)

    def search(self, query: str) -> np.ndarray:
        """Rows matching a pandas query over the features (``"age > 40 and sex == 'F'"``).

        Backquote names that are not identifiers: ``"`mean radius` > 20"``; categorical
        features compare by label. Returns the matching row indices, in order.
        """
        import pandas as pd

        if not isinstance(query, str) or not query.strip():
            raise ValidationError(f"query must be a non-empty string; got {query!r}.")
        t = self.w.table
        frame = pd.DataFrame(t.X, columns=list(t.feature_names))
        for j in t.categories:
            frame.iloc[:, j] = [t.label(j, v) for v in t.X[:, j]]
        try:
            hits = frame.query(query, engine="python")
        except Exception as exc:  # pandas raises many kinds for a bad query
            raise ValidationError(f"query {query!r} could not be evaluated: {exc}") from exc
        return hits.index.to_numpy(dtype=np.int64)

    # -- the scatter --------------------------------------------------------------------------
    def set_axes(self, x: Any, y: Any = None) -> EditorState:
        """The scatter's axes: two features, or ``"projection"``."""
        self.axes = self._check_axes((x, x if y is None else y))
        self._notify()
        return self

    def set_colour(self, colour_by: str) -> EditorState:
        self.colour_by = self._check_colour(colour_by)
        self._notify()
        return self

    def scatter(self) -> tuple[np.ndarray, np.ndarray, tuple[str, str]]:
        """The scatter's points, colours and axis names.

        Returns
        -------
        coordinates : ndarray of shape (n_samples, 2)
        colour : ndarray of shape (n_samples,)
            Predicted class (or value), true label, or 1 where the prediction is correct.
        names : (str, str)
        """
        w = self.w
        if self.axes[0] == PROJECTION:
            if self._projection is None:
                p = xai.project(w._X_original, method="pca", seed=self.seed)
                self._projection = np.asarray(p.coordinates[:, :2], dtype=np.float64)
            xy, names = self._projection, ("PC 1", "PC 2")
        else:
            cols = [w.table.feature_index(a) for a in self.axes]
            xy, names = w.table.X[:, cols], self.axes
        if self.colour_by == "prediction" or w.y is None:
            colour = np.asarray(w.predicted, dtype=np.float64)
        elif self.colour_by == "label":
            colour = np.asarray(w.y, dtype=np.float64)
        else:
            colour = (np.asarray(w.predicted) == np.asarray(w.y)).astype(np.float64)
        return xy, colour, tuple(names)

    # -- what follows a change ----------------------------------------------------------------
    def _dependence(self) -> PartialDependence:
        pd = self._pd_cache.get(self.feature)
        if pd is None:
            pd = self.w.partial_dependence(
                self.feature, rows=self.pd_rows, kind="average", progress=False
            )
            self._pd_cache[self.feature] = pd
        return pd

    def marker(self) -> tuple[float, np.ndarray]:
        """The edited feature's current value and the outputs there, shape (n_outputs,)."""
        j = self.w.table.feature_index(self.feature)
        return float(self.values[j]), self.outputs.copy()

    def row_curve(self) -> np.ndarray:
        """The selected row's outputs over the PD grid (its ICE curve), shape (g, n_outputs)."""
        grid = self.dependence.grid[0]
        j = self.w.table.feature_index(self.feature)
        rows = np.repeat(self.values[None], len(grid), axis=0)
        rows[:, j] = grid
        return self.w._predict(rows)

    def _update(self, pd: bool) -> EditorState:
        w = self.w
        self.outputs = w.outputs[self.row].copy()
        x = self.values.reshape(1, *w.input_shape)
        self.explanation = xai.explain(
            w.runner,
            x,
            method=self.method,
            feature_names=None if w.table.is_image else w.feature_names,
            **self.explain_options,
        )
        self.counterfactual: Counterfactuals = w.nearest_counterfactual(self.row, self.distance)
        self.neighbors = w.neighbors(self.row, self.n_neighbors, self.distance)
        if pd:
            self._pd_cache.clear()  # the data changed: the averages did too
        self.dependence = self._dependence()
        self._notify()
        return self

    def _notify(self) -> None:
        for listener in self.listeners:
            listener(self)

    # -- round trip ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The state as JSON-ready data: selection, feature, axes, colouring and every edit."""
        return {
            "row": self.row,
            "feature": self.feature,
            "axes": list(self.axes),
            "colour_by": self.colour_by,
            "method": self.method,
            "edits": [
                {"row": e.row, "changes": {name: _plain(after) for name, _, after in e.changes}}
                for e in self.w.history
            ],
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text (read back with :meth:`from_json`)."""
        return json.dumps(self.to_dict(), allow_nan=False)

    @classmethod
    def from_json(cls, w: WhatIf, text: str | bytes, **kwargs: Any) -> EditorState:
        """Replay a state written by :meth:`to_json` on session ``w`` (see :meth:`from_dict`).

        The text is parsed by :func:`xai_core.jsonfile.parse_json` (size and depth limits,
        UTF-8 required); every fault is a :class:`~xai_core.ValidationError` naming it.
        """
        state = parse_json(text, "state", error=ValidationError)
        return cls.from_dict(w, state, **kwargs)

    @classmethod
    def from_dict(cls, w: WhatIf, state: Mapping[str, Any], **kwargs: Any) -> EditorState:
        """Replay ``state`` (from :meth:`to_dict`) on session ``w``: its edits, then the selection.

        The whole state is checked before anything is replayed (``STATE``: ``row`` an
        integer, ``edits`` a list of ``{"row": int, "changes": {feature: value}}``, values
        finite numbers or category labels); an edit the session refuses (an unknown
        feature, a row out of range) undoes the edits replayed before it. Either way the
        error is one :class:`~xai_core.ValidationError` naming the place in the state.
        """
        check(state, STATE, "state", error=ValidationError)
        applied = 0
        at = "state"
        try:
            for i, e in enumerate(state.get("edits", [])):
                at = f"state: edits[{i}]"
                w.edit(e["row"], dict(e["changes"]))
                applied += 1
            at = "state"
            kwargs.setdefault("method", state.get("method"))
            kwargs.setdefault("axes", tuple(state.get("axes") or ()) or None)
            kwargs.setdefault("colour_by", state.get("colour_by", "prediction"))
            editor = cls(w, state["row"], **kwargs)
            return editor.set_feature(state.get("feature", editor.feature))
        except XaiError as exc:
            if applied:
                w.revert(applied)
            raise ValidationError(f"{at}: {exc}") from exc


#: What :meth:`EditorState.from_dict` accepts: the shape of :meth:`EditorState.to_dict`.
_VALUE = Either(Bool(), Num(), Str())
STATE = Obj(
    required={"row": Int(lo=0)},
    optional={
        "feature": Either(Str(), Int(lo=0)),
        "axes": Either(None, List(Str(), min_len=1, max_len=2)),
        "colour_by": Str(),
        "method": Either(None, Str()),
        "edits": List(
            Obj(required={"row": Int(lo=0), "changes": Obj(values=_VALUE)}),
        ),
    },
)


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value
