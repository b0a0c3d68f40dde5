"""Explanation: the one immutable result type every explainer returns."""

from __future__ import annotations

import json
import math
import os
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from xai_core.errors import ShapeError, ValidationError

__all__ = ["BATCH", "Explanation"]

#: The axes of a batch: rows, then each row's features (any input shape).
BATCH = ("rows", "features")
_AXES = (BATCH, ("features",), ("rows",), ())


#: The read-only arrays :func:`_frozen` made, by id: only these are shared, never a
#: caller's read-only array (its owner could make it writable again).
_MADE: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()


def _frozen(a: Any, dtype: Any = None, *, flat: bool = False) -> np.ndarray | None:
    """``a`` copied and made read-only (and 1-D if ``flat``); an array this function made
    already is shared, not copied.

    So a result remade with :func:`dataclasses.replace` or a row selection (the core fills
    in ``meta``, ``data``...) costs no second copy of its values, while an array the
    caller passes in is always copied.
    """
    if a is None:
        return None
    if _MADE.get(id(a)) is a and (dtype is None or a.dtype == dtype) and (not flat or a.ndim == 1):
        return a
    arr = np.array(a, dtype=dtype, copy=True)
    arr.setflags(write=False)
    if flat:
        arr = arr.reshape(-1)  # a read-only view of the copy
    _MADE[id(arr)] = arr
    return arr


def _scalar(a: Any, dtype: Any, name: str) -> Any:
    """``a``, one value, as a numpy scalar of ``dtype`` (shap's ``e[0].base_values``)."""
    arr = np.asarray(a, dtype=dtype)
    if arr.size != 1:
        raise ShapeError(f"{name} of one row must be one value; got shape {arr.shape}.")
    return dtype(arr.reshape(()))


def _json_safe(v: Any) -> Any:
    """Replace NaN and infinities (not JSON) by None, recursively."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_json_safe(x) for x in v]
    return v


@dataclass(frozen=True, eq=False)
class Explanation:
    """Attributions for a batch of rows, with what is needed to read them.

    Parameters
    ----------
    values : array-like of shape (n_samples, *input_shape)
        Attribution of each input feature to the explained output of each row.
    base_values : array-like of shape (n_samples,)
        The reference output each row's attributions start from (the output at the
        baseline for IG, the expected output over the background for SHAP, the
        surrogate's intercept for LIME).
    target : array-like of shape (n_samples,)
        Index of the explained output for each row.
    data : array-like of shape (n_samples, *input_shape), optional
        The explained inputs.
    feature_names : sequence of str, optional
        One name per feature (flattened order for images).
    output_names : sequence of str, optional
        Names of the model's outputs (class names).
    method : str
        The explainer's name (``"ig"``, ``"shap"``, ...).
    backend : str
        The backend the model ran on.
    meta : mapping
        Method-specific figures: ``convergence_delta`` (ig), ``additivity_error`` (shap),
        ``score`` (lime), ``seed``, ``seconds``, options.
    axes : tuple of str, default=("rows", "features")
        The axes ``values`` has, as indexing leaves them (shap's shapes): a batch
        ``("rows", "features")``; one row ``e[0]``: ``("features",)``, values of shape
        ``input_shape`` and scalar ``base_values`` and ``target``; one feature
        ``e[:, "age"]``: ``("rows",)``, values of shape (n_samples,) and ``feature_names``
        the one name; one value ``e[0, "age"]``: ``()``. :meth:`as_batch` gives any of
        them back as a batch.

    Notes
    -----
    Arrays are copied and made read-only (an Explanation's own arrays are shared by the
    results made from it); ``meta`` is a read-only mapping. Per-row arrays in ``meta``
    stay per row (one row for ``e[0]``).
    """

    values: np.ndarray
    base_values: np.ndarray
    target: np.ndarray
    data: np.ndarray | None = None
    feature_names: tuple[str, ...] | None = None
    output_names: tuple[str, ...] | None = None
    method: str = ""
    backend: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)
    axes: tuple[str, ...] = BATCH

    def __post_init__(self) -> None:
        axes = tuple(self.axes)
        if axes not in _AXES:
            raise ValidationError(
                f"axes must be one of {', '.join(map(repr, _AXES))}; got {self.axes!r}."
            )
        rows, features = "rows" in axes, "features" in axes
        values = _frozen(self.values, np.float64)
        if rows and features and values.ndim < 2:
            raise ShapeError(
                f"values must have shape (n_samples, *input_shape); got shape {values.shape}."
            )
        if features and not rows and values.ndim < 1:
            raise ShapeError("values of one row must have shape input_shape; got shape ().")
        if not features and values.ndim != int(rows):
            want = "(n_samples,)" if rows else "()"
            raise ShapeError(f"values of one feature must have shape {want}; got {values.shape}.")
        if rows:
            n = values.shape[0]
            base = _frozen(self.base_values, np.float64, flat=True)
            target = _frozen(self.target, np.int64, flat=True)
            for name, arr in (("base_values", base), ("target", target)):
                if arr.shape != (n,):
                    raise ShapeError(f"{name} must have shape ({n},); got shape {arr.shape}.")
        else:  # one row: scalars, as shap's e[0].base_values
            base, target = (
                _scalar(self.base_values, np.float64, "base_values"),
                _scalar(self.target, np.int64, "target"),
            )
        data = _frozen(self.data)
        if data is not None and data.shape != values.shape:
            raise ShapeError(
                f"data must have the shape of values {values.shape}; got shape {data.shape}."
            )
        names: tuple[str, ...] | str | None
        if not features:  # one feature: its name, as shap's e[:, "age"].feature_names
            names = self.feature_names
            if names is not None and not isinstance(names, str):
                names = tuple(str(f) for f in names)
                if len(names) != 1:
                    raise ShapeError(f"one feature has one name; got {len(names)}.")
                names = names[0]
        else:
            n_features = math.prod(values.shape[int(rows) :])
            names = (
                tuple(str(f) for f in self.feature_names)
                if self.feature_names is not None
                else None
            )
            if names is not None and len(names) != n_features:
                raise ShapeError(
                    f"feature_names must have {n_features} names, one per feature; got {len(names)}."
                )
        outputs = (
            tuple(str(o) for o in self.output_names) if self.output_names is not None else None
        )
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "base_values", base)
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "feature_names", names)
        object.__setattr__(self, "output_names", outputs)
        object.__setattr__(self, "meta", MappingProxyType(dict(self.meta)))
        object.__setattr__(self, "axes", axes)

    # -- reading ------------------------------------------------------------------------
    def __len__(self) -> int:
        """Length of the first axis of :attr:`values`: rows of a batch, features of ``e[0]``."""
        return len(self.values)

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of :attr:`values`."""
        return self.values.shape

    @property
    def is_batch(self) -> bool:
        """Whether this holds rows of features (``axes == ("rows", "features")``)."""
        return self.axes == BATCH

    @property
    def target_names(self) -> tuple[str, ...] | None:
        """Name of the explained output per row (one for ``e[0]``), when output names are known."""
        if self.output_names is None:
            return None
        return tuple(self.output_names[t] for t in np.atleast_1d(self.target))

    def as_batch(self) -> Explanation:
        """This explanation with a row axis and a feature axis: ``e[0].as_batch()`` is ``e[[0]]``.

        Returns
        -------
        Explanation
            Values of shape (n_samples, *input_shape): one row for ``e[0]`` (1,
            *input_shape), one feature for ``e[:, "age"]`` (n_samples, 1). A batch is
            returned as it is.
        """
        if self.is_batch:
            return self
        values, data, names = self.values, self.data, self.feature_names
        base, target = self.base_values, self.target
        if "features" not in self.axes:
            values = values[..., None]
            data = None if data is None else data[..., None]
            names = None if names is None else (names,)
        if "rows" not in self.axes:
            values = values[None]
            data = None if data is None else data[None]
            base, target = np.reshape(base, (1,)), np.reshape(target, (1,))
        return replace(
            self,
            values=values,
            base_values=base,
            target=target,
            data=data,
            feature_names=names,
            axes=BATCH,
        )

    def __getitem__(self, key: Any) -> Explanation:
        """Rows, then features, indexed as shap indexes its ``Explanation``.

        ``e[0]`` is one row: values of shape ``input_shape`` (``(n_features,)`` for a
        table), scalar ``base_values`` and ``target``; ``e[2:5]``, ``e[[0]]``, a list or
        a boolean mask keep the row axis. ``e[:, "age"]`` (or an int) is one feature,
        values of shape (n_samples,); a slice or list of names or ints keeps the feature
        axis, flat ``(n, k)``. ``e[0, "age"]`` is one value, and ``e[0]["age"]`` the
        same. Features of an image count in flattened order and are named
        ``pixel_<row>_<col>`` (:func:`~xai_core.attribution.views.feature_names_of`).
        :meth:`as_batch` (or ``e[[i]]``) gives a batch back. An unknown feature name is
        an ``UnknownNameError`` listing the closest names.
        """
        from xai_core.attribution.views import select_features

        keys = list(key) if isinstance(key, tuple) else [key]
        if any(k is Ellipsis for k in keys):
            at = next(i for i, k in enumerate(keys) if k is Ellipsis)
            rest = [k for k in keys[at + 1 :] if k is not Ellipsis]
            keys = keys[:at] + [slice(None)] * max(0, len(self.axes) - at - len(rest)) + rest
        if len(keys) > len(self.axes):
            raise ValidationError(
                f"an explanation is indexed as e[rows, features]; this one has the axes "
                f"{self.axes} and got {len(keys)} indices."
            )
        out = self
        for axis, k in zip(self.axes, keys):
            out = out._rows(k) if axis == "rows" else select_features(out, k)
        return out

    def _rows(self, rows: Any) -> Explanation:
        """The rows ``rows`` select (an int: one row, without the row axis)."""
        if rows is None or isinstance(rows, (bool, np.bool_)):
            raise ValidationError(
                f"rows are chosen by an int, a slice, a list or a mask; got {rows!r}."
            )
        if isinstance(rows, str):
            raise ValidationError(
                f"rows are chosen by an int, a slice, a list or a mask; got the name {rows!r} "
                "(a feature: e[:, name])."
            )
        n = len(self.values)
        one = isinstance(rows, (int, np.integer)) and not isinstance(rows, (bool, np.bool_))
        if one and not -n <= int(rows) < n:
            raise ValidationError(f"row {int(rows)} is out of range for {n} rows.")
        idx = [int(rows)] if one else rows
        meta = {
            k: (np.asarray(v)[idx] if isinstance(v, np.ndarray) and v.shape[:1] == (n,) else v)
            for k, v in self.meta.items()
        }
        values, base, target = self.values[idx], self.base_values[idx], self.target[idx]
        data = None if self.data is None else self.data[idx]
        axes = self.axes
        if one:
            values, base, target = values[0], base[0], target[0]
            data = None if data is None else data[0]
            axes = tuple(a for a in axes if a != "rows")
        return replace(
            self, values=values, base_values=base, target=target, data=data, meta=meta, axes=axes
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain Python types (lists, floats, str), ready for ``json.dumps``."""

        def plain(v: Any) -> Any:
            if isinstance(v, np.ndarray):
                return v.tolist()
            if isinstance(v, np.generic):
                return v.item()
            if isinstance(v, Mapping):
                return {str(k): plain(x) for k, x in v.items()}
            if isinstance(v, (list, tuple)):
                return [plain(x) for x in v]
            return v

        return {
            "method": self.method,
            "backend": self.backend,
            "values": plain(self.values),
            "base_values": plain(self.base_values),
            "target": plain(self.target),
            "data": plain(self.data),
            "feature_names": plain(self.feature_names),
            "output_names": plain(self.output_names),
            "meta": plain(self.meta),
            "axes": list(self.axes),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Explanation:
        """The explanation :meth:`to_dict` described (``None`` entries in arrays become NaN)."""
        missing = [k for k in ("values", "base_values", "target") if k not in d]
        if missing:
            raise ValidationError(f"an explanation dict needs {missing}; got keys {sorted(d)}.")
        data = d.get("data")
        return cls(
            values=np.array(d["values"], dtype=np.float64),
            base_values=np.array(d["base_values"], dtype=np.float64),
            target=d["target"],
            data=None if data is None else np.array(data, dtype=np.float64),
            feature_names=d.get("feature_names"),
            output_names=d.get("output_names"),
            method=d.get("method", ""),
            backend=d.get("backend", ""),
            meta=d.get("meta") or {},
            axes=BATCH if d.get("axes") is None else tuple(d["axes"]),
        )

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_dict` as JSON (NaN and infinity as ``null``); read it back with :meth:`load`."""
        from xai_core.files import atomic_write

        text = json.dumps(_json_safe(self.to_dict()), allow_nan=False)
        return atomic_write(path, lambda fh: fh.write(text.encode("utf-8")))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Explanation:
        """Read an explanation written by :meth:`save` (through :func:`xai_core.jsonfile.read_json`)."""
        from xai_core.jsonfile import read_json

        d = read_json(path, what=str(path), error=ValidationError)  # bounded; never a raw error
        if not isinstance(d, dict):
            raise ValidationError(f"{path}: not a saved explanation (a JSON {type(d).__name__}).")
        try:
            return cls.from_dict(d)
        except (ValueError, TypeError) as exc:  # missing keys, arrays of the wrong shape or kind
            raise ValidationError(f"{path}: not a saved explanation ({exc}).") from exc

    def top_features(self, row: int = 0, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` features of ``row`` with the largest absolute attribution, largest first."""
        b = self.as_batch()
        flat = b.values[row].reshape(-1)
        order = np.argsort(-np.abs(flat), kind="stable")[:k]
        from xai_core.attribution.views import feature_names_of

        names = feature_names_of(b)  # pixels by position, pixel_<row>_<col>
        return [(names[i], float(flat[i])) for i in order]

    def with_outcomes(
        self, y_true: Any = None, proba: Any = None, *, y_pred: Any = None
    ) -> Explanation:
        """A copy that knows each row's true label and the model's prediction.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,), optional
            True class index (or label) of each row.
        proba : array-like of shape (n_samples, n_outputs), optional
            The model's output probabilities; the prediction is their argmax.
        y_pred : array-like of shape (n_samples,), optional
            The prediction itself (a class index, or a regression's value), when the
            model's outputs are not probabilities.

        Views then head each row with the true label, the prediction and its
        probability (``true 4 · predicted 6 (0.71)``, and the explained output when it
        is not the prediction), and mark misclassified rows
        (:mod:`xai_core.attribution.outcomes`). ``xai.explain(..., y=...)`` records
        them itself.
        """
        if not self.is_batch:
            return self.as_batch().with_outcomes(y_true, proba, y_pred=y_pred)
        meta = dict(self.meta)
        n = len(self)
        for name, given in (("y_true", y_true), ("y_pred", y_pred)):
            if given is not None:
                y = np.asarray(given).reshape(-1)
                if y.shape != (n,):
                    raise ShapeError(f"{name} must have shape ({n},); got shape {np.shape(given)}.")
                meta[name] = y
        if proba is not None:
            p = np.asarray(proba, dtype=np.float64)
            if p.ndim != 2 or p.shape[0] != n:
                raise ShapeError(
                    f"proba must have shape ({n}, n_outputs); got shape {np.shape(proba)}."
                )
            meta["proba"] = p
        return replace(self, meta=meta)

    def to_shap(self) -> Any:
        """A ``shap.Explanation`` of the same values, base values, data and names (see ``views``)."""
        from xai_core.attribution.views import to_shap

        return to_shap(self)

    def to_frame(self) -> Any:
        """Attributions as a ``pandas.DataFrame``, one column per feature (pixels by position)."""
        from xai_core.attribution.views import to_frame

        return to_frame(self.as_batch())

    @property
    def plot(self) -> Any:
        """Matplotlib figures: ``e.plot.bar()``, ``.waterfall(i)``, ``.beeswarm()``, ``.image(i)``."""
        from xai_core.attribution.plot import ExplanationPlots

        return ExplanationPlots(self.as_batch())

    # -- display ------------------------------------------------------------------------
    def __repr__(self) -> str:
        """The shape, then the first rows' target, base value, output and top features, in numbers."""
        from xai_core.attribution.views import summary_text

        return summary_text(self)  # one row or feature: as a batch, its axes said

    def to_html(self, title: str | None = None) -> str:
        """A complete, self-contained HTML page with this explanation (see :class:`xai_core.Report`)."""
        from xai_core.report import Report

        return Report(title or f"{self.method} explanation").add(self.as_batch()).to_html()

    def _repr_html_(self) -> str:
        """The report section of this explanation, self-contained for a notebook cell.

        Heatmaps (images) and top-feature bar charts per row, a sortable row table and the
        provenance; styles scoped to this render, unique element ids, readable without
        JavaScript. Everything user-supplied is escaped.
        """
        from xai_core.report import render_fragment

        return render_fragment(self.as_batch())

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """HTML, text with numbers, and (with matplotlib) a PNG picture for untrusted viewers."""
        bundle: dict[str, Any] = {"text/plain": repr(self), "text/html": self._repr_html_()}
        from xai_core.attribution.plot import summary_png

        png = summary_png(self.as_batch())
        if png is not None:
            bundle["image/png"] = png
        return bundle
