"""The built-in report sections, registered through the report hook like any plugin's.

Explanations, datasets (any object with ``X``, ``y``, ``class_names``, ``feature_names``
and ``image_shape``), hardware counters (a ``ModelRunner``, a ``Backend`` or a mapping of
counter names to numbers) and pandas DataFrames.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np
from markupsafe import Markup

from xai_core.attribution.explanation import Explanation
from xai_core.attribution.outcomes import target_label
from xai_core.attribution.views import explanation_layout
from xai_core.backends.base import Backend
from xai_core.images import sample_layout
from xai_core.model.runner import ModelRunner
from xai_core.plugin.hookspecs import hookimpl
from xai_core.plugin.records import ReportSection
from xai_core.report._figures import bar_chart, heatmaps, series_chart, shorten
from xai_core.report._folding import fold_rows
from xai_core.report._global import global_summary
from xai_core.report._html import environment, format_number, isolate, new_id, plain
from xai_core.report._outcomes import row_outcomes
from xai_core.report._png import png_data_uri, to_pixels
from xai_core.report._provenance import (
    backend_numerics,
    explanation_provenance,
    without_wall_clock,
)
from xai_core.report._summary import describe, format_column, summarize

__all__ = [
    "MAX_ROWS",
    "MAX_TABLE_ROWS",
    "OPEN_ROWS",
    "ROWS_PER_PAGE",
    "TOP_K",
    "CountersLike",
    "DataFrameLike",
    "DatasetLike",
    "render_counters",
    "render_dataset",
    "render_explanation",
    "render_frame",
]

#: Rows of an explanation drawn (heatmap and bar chart each); the rest are counted.
MAX_ROWS = 100
#: Rows of an explanation shown open; the rest are folded, with their count said.
OPEN_ROWS = 4
#: Folded rows per page: more than this are folded in pages of their own.
ROWS_PER_PAGE = 20
#: Features in each row's bar chart.
TOP_K = 10
#: Side, in pixels, a heatmap is enlarged to (whole multiples of its pixels; its colour bar beneath).
HEATMAP_SIDE = 192
#: Options shown unfolded; longer lists are folded away.
OPEN_OPTIONS = 6
#: Rows of a table (DataFrame, counters) shown.
MAX_TABLE_ROWS = 500
_MAX_THUMBNAILS = 24
_MAX_COLUMNS = 12


class _DuckType(type):
    """A metaclass whose ``isinstance`` asks the class's ``_accepts(obj)``."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return cls._accepts(obj)


class DatasetLike(metaclass=_DuckType):
    """Matches any dataset object: it has ``X``, ``y``, ``class_names``, ``feature_names`` and ``image_shape``."""

    ATTRIBUTES = ("X", "y", "class_names", "feature_names", "image_shape")

    @classmethod
    def _accepts(cls, obj: Any) -> bool:
        return not isinstance(obj, type) and all(hasattr(obj, a) for a in cls.ATTRIBUTES)


class CountersLike(metaclass=_DuckType):
    """Matches a ``ModelRunner``, a ``Backend``, or a non-empty mapping of names to numbers."""

    @classmethod
    def _accepts(cls, obj: Any) -> bool:
        if isinstance(obj, (ModelRunner, Backend)):
            return True
        return (
            isinstance(obj, Mapping)
            and len(obj) > 0
            and all(
                isinstance(k, str) and isinstance(v, (Real, np.number)) and not isinstance(v, bool)
                for k, v in obj.items()
            )
        )


class DataFrameLike(metaclass=_DuckType):
    """Matches a ``pandas.DataFrame`` (pandas is not imported to check)."""

    @classmethod
    def _accepts(cls, obj: Any) -> bool:
        pd = sys.modules.get("pandas")
        return pd is not None and isinstance(obj, pd.DataFrame)


# -- helpers -------------------------------------------------------------------------------
def _meta_summary(meta: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Method-specific figures other than the provenance ones, one line each (arrays summarised)."""
    rows = []
    for key, value in without_wall_clock(meta).items():
        if key in ("options", "seed", "seconds", "numerics", "image_shape"):
            continue
        if (
            isinstance(value, np.ndarray)
            and value.size > 1
            and np.issubdtype(value.dtype, np.number)
        ):
            v = value.astype(np.float64)
            text = (
                f"mean {format_number(np.nanmean(v))}, max |x| {format_number(np.nanmax(np.abs(v)))}"
                f" over {v.size} values"
            )
        else:
            text = describe(value)
        rows.append((str(key), text))
    return rows


def _small_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The meta for the JSON block: arrays of more than one value as shape, dtype and a few values."""
    return {str(k): summarize(v) for k, v in without_wall_clock(meta).items() if k != "options"}


def option_rows(options: Any) -> list[tuple[str, str]]:
    """An options mapping as (name, one-line summary) pairs; arrays by shape, dtype and a few values."""
    if options is None:
        return []
    if not isinstance(options, Mapping):
        return [("options", describe(options))]
    return [(str(k), describe(v)) for k, v in options.items()]


def _cell(value: Any) -> dict[str, Any]:
    if isinstance(value, (Real, np.number)) and not isinstance(value, (bool, np.bool_)):
        f = float(value)
        return {"text": format_number(value), "sort": f if np.isfinite(f) else "-Infinity"}
    return {"text": str(value), "sort": None}


# -- explanations --------------------------------------------------------------------------
def render_explanation(e: Explanation) -> str:
    """Each row's heatmap (images) and top-feature bar chart, a sortable row table and provenance."""
    uid = new_id("expl")
    n = len(e)
    shown = min(n, MAX_ROWS)
    n_features = int(np.prod(e.values.shape[1:]))
    layout = explanation_layout(e)
    image_shape = None if layout is None else layout.shape
    series = _series_layout(e) if layout is None else None
    names = e.feature_names or (
        layout.pixel_names()
        if layout is not None
        else series.step_names()
        if series is not None
        else tuple(f"x{i}" for i in range(n_features))
    )
    rows, top_json = _explanation_rows(e, _RowFigures.of(e, shown, n_features, layout), names)
    prov = explanation_provenance(e)
    all_flat = e.values.reshape(n, n_features)
    summary = global_summary(
        all_flat, None if e.data is None or layout is not None else e.data.reshape(n, -1), names
    )
    data = {
        "summary": None if summary is None else summary["mean_abs"],
        "kind": "explanation",
        "method": e.method,
        "backend": e.backend,
        "shape": list(e.values.shape),
        "n_rows": n,
        "rows_shown": shown,
        "feature_names": list(e.feature_names) if e.feature_names and n_features <= 1000 else None,
        "output_names": list(e.output_names) if e.output_names is not None else None,
        "image_shape": list(image_shape) if image_shape else None,
        "provenance": prov,
        "meta": _small_meta(e.meta),
        "rows": top_json,
    }
    return (
        environment()
        .get_template("explanation.html.j2")
        .render(
            uid=uid,
            method=e.method or "(unnamed method)",
            backend=e.backend or "(unknown backend)",
            n_rows=n,
            n_shown=shown,
            shape=tuple(e.values.shape),
            provenance=_provenance_rows(e, prov),
            options=option_rows(e.meta.get("options")),
            open_options=OPEN_OPTIONS,
            summary=summary,
            rows=rows,
            fold=fold_rows(shown, OPEN_ROWS, ROWS_PER_PAGE),
            per_page=ROWS_PER_PAGE,
            data=data,
            text_block=_text_block(e),
        )
    )


def _text_block(e: Explanation) -> Markup | None:
    """A text explanation's tokens highlighted by their values (:mod:`xai_core.text.render`)."""
    if "tokens" not in e.meta:
        return None
    from xai_core.text.render import text_html

    return Markup(text_html(e))  # noqa: S704 - every user string is escaped by text_html


@dataclass(frozen=True)
class _RowFigures:
    """What the panels of the first ``shown`` rows draw, one entry per row.

    ``order`` and ``top_values`` are of shape (shown, k): the ``k = min(TOP_K, n_features)``
    largest |attributions|, largest first; ``top_data`` their inputs (tabular rows only);
    ``vmin_seen`` and ``vmax_seen`` the finite extremes; for images, ``pictures`` (PNG data
    URIs), their scales ``vmax`` and the drawn ``height`` and ``width`` (else None, 0, 0).
    """

    order: np.ndarray
    top_values: np.ndarray
    top_data: np.ndarray | None
    base: np.ndarray
    output: np.ndarray
    total_abs: np.ndarray
    vmin_seen: np.ndarray
    vmax_seen: np.ndarray
    pictures: list[str | None]
    vmax: np.ndarray
    height: int
    width: int
    series: list[dict[str, Any] | None]

    @classmethod
    def of(cls, e: Explanation, shown: int, n_features: int, layout: Any) -> _RowFigures:
        """The figures of ``e``'s first ``shown`` rows, drawn in ``layout`` when it is an image."""
        flat = e.values[:shown].reshape(shown, n_features)
        absv = np.abs(np.nan_to_num(flat, nan=0.0, posinf=0.0, neginf=0.0))
        order = np.argsort(-absv, axis=1, kind="stable")[:, : min(TOP_K, n_features)]
        data_flat = None if e.data is None else e.data[:shown].reshape(shown, -1)
        top_data = None if data_flat is None else np.take_along_axis(data_flat, order, axis=1)
        base = e.base_values[:shown]
        pictures: list[str | None] = [None] * shown
        vmax = np.zeros(shown)
        finite = np.isfinite(flat)
        height = width = 0
        if layout is not None:
            data_rows = None if e.data is None else e.data[:shown]
            pictures, vmax, (height, width) = heatmaps(
                e.values[:shown], data_rows, layout, HEATMAP_SIDE
            )
            top_data = None  # pixel intensities add nothing to the bar labels
        series: list[dict[str, Any] | None] = [None] * shown
        lay = _series_layout(e) if layout is None else None
        if lay is not None:
            tc = lay.to_tc(e.values[:shown])
            data_tc = None if e.data is None else lay.to_tc(np.asarray(e.data[:shown]))
            series = [
                series_chart(tc[i], None if data_tc is None else data_tc[i]) for i in range(shown)
            ]
        return cls(
            order=order,
            top_values=np.take_along_axis(flat, order, axis=1),
            top_data=top_data,
            base=base,
            output=base + np.nansum(flat, axis=1),
            total_abs=absv.sum(axis=1),
            vmin_seen=np.where(finite, flat, np.inf).min(axis=1, initial=np.inf),
            vmax_seen=np.where(finite, flat, -np.inf).max(axis=1, initial=-np.inf),
            pictures=pictures,
            vmax=vmax,
            height=height,
            width=width,
            series=series,
        )


def _series_layout(e: Explanation) -> Any:
    """The series layout of ``e``'s rows when a network reading series made it
    (``meta["series_order"]``), else None."""
    order = e.meta.get("series_order")
    if not isinstance(order, str) or e.values.ndim not in (2, 3):
        return None
    from xai_core.series import recorded_layout

    return recorded_layout(e.values.shape[1:], order)


def _target_label(e: Explanation, t: int) -> str:
    """Output ``t`` by name and index (``benign (1)``), the name alone when it is the index
    (``6``), or the index alone (:func:`xai_core.attribution.outcomes.target_label`)."""
    return target_label(e.output_names, t, wrap=isolate)


def _explanation_rows(
    e: Explanation, f: _RowFigures, names: Sequence[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One panel per shown row for the template, and the same rows for the JSON block."""
    rows, top_json = [], []
    outcomes = row_outcomes(e, len(f.base))
    for i in range(len(f.base)):
        top_names = [names[j] for j in f.order[i]]
        label = _target_label(e, int(e.target[i]))
        top_data = None if f.top_data is None else f.top_data[i]
        rows.append(
            {
                "heading": outcomes[i]["heading"],
                "misclassified": outcomes[i]["misclassified"],
                "index": i,
                "target_label": label,
                "base_value": float(f.base[i]),
                "output": float(f.output[i]),
                "total_abs": float(f.total_abs[i]),
                "top_name": top_names[0] if top_names else "",
                "heatmap": f.pictures[i],
                "series": f.series[i],
                "image_width": f.width,
                "image_height": f.height,
                "vmax": float(f.vmax[i]),
                "vmin_seen": float(f.vmin_seen[i]),
                "vmax_seen": float(f.vmax_seen[i]),
                "chart": bar_chart(top_names, f.top_values[i], top_data),
            }
        )
        top_json.append(
            {
                "row": i,
                "target": int(e.target[i]),
                "target_name": None if e.output_names is None else label,
                "base_value": float(f.base[i]),
                "outcome": outcomes[i]["data"],
                "top_features": [[nm, float(v)] for nm, v in zip(top_names, f.top_values[i])],
            }
        )
    return rows, top_json


def _time_taken(e: Explanation, prov: Mapping[str, Any]) -> str:
    if prov["seconds"] is not None:
        return f"{format_number(prov['seconds'])} s"
    if e.meta.get("seconds") is not None:  # left out by without_wall_clock
        return "not recorded (SOURCE_DATE_EPOCH is set)"
    return "unknown"


def _provenance_rows(e: Explanation, prov: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Method, backend, numerics, seed and time, then the method's own figures, one line each."""
    return [
        ("method", prov["method"] or "–"),
        ("backend", prov["backend"] or "–"),
        ("backend numerics", prov["numerics"] or "unknown"),
        ("seed", "none" if prov["seed"] is None else str(prov["seed"])),
        (
            "time taken",
            _time_taken(e, prov),
        ),
        *_meta_summary(e.meta),
    ]


# -- datasets ------------------------------------------------------------------------------
def render_dataset(ds: Any) -> str:
    """Summary, class counts, the first images as thumbnails or the first rows as a table."""
    uid = new_id("data")
    X = np.asarray(ds.X)
    y = np.asarray(ds.y)
    n = X.shape[0] if X.ndim else 0
    n_features = int(np.prod(X.shape[1:])) if X.ndim > 1 else 0
    class_names = tuple(str(c) for c in (ds.class_names or ()))
    image_shape = tuple(int(s) for s in ds.image_shape) if ds.image_shape else None
    layout = (
        None if image_shape is None else sample_layout((n_features,), image_shape, strict=False)
    )
    name = str(getattr(ds, "name", "") or type(ds).__name__)
    summary = [
        ("name", name),
        ("samples", format_number(n)),
        ("features", format_number(n_features)),
        ("task", str(getattr(ds, "task", "classification" if class_names else "regression"))),
    ]
    if class_names:
        summary.append(("classes", format_number(len(class_names))))
    if image_shape:
        summary.append(("image shape", " × ".join(map(str, image_shape))))
    for attr in ("source", "license"):
        if getattr(ds, attr, None):
            summary.append((attr, str(getattr(ds, attr))))

    classes = []
    if class_names and n and np.issubdtype(y.dtype, np.integer):
        counts = np.bincount(np.clip(y, 0, None), minlength=len(class_names))
        classes = [
            {"index": i, "name": c, "count": int(counts[i])} for i, c in enumerate(class_names)
        ]

    def label(i: int) -> str:
        if class_names and np.issubdtype(y.dtype, np.integer) and 0 <= y[i] < len(class_names):
            return class_names[int(y[i])]
        return format_number(y[i], 3)

    thumbnails = []
    table = None
    feature_names = tuple(str(f) for f in (ds.feature_names or ()))
    if layout is not None and n_features == layout.size:
        k = min(n, _MAX_THUMBNAILS)
        pixels = to_pixels(layout.to_hwc(X[:k]))  # grey, grey + alpha, RGB or RGBA
        thumbnails = [
            {"uri": png_data_uri(p), "label": label(i), "width": p.shape[1], "height": p.shape[0]}
            for i, p in enumerate(pixels)
        ]
    elif n and X.ndim == 2:
        cols = list(range(min(n_features, _MAX_COLUMNS)))
        names = [feature_names[j] if j < len(feature_names) else f"x{j}" for j in cols]
        target = str(getattr(ds, "target_name", "") or "target")
        categories = dict(getattr(ds, "categories", None) or {})

        def value(i: int, j: int) -> dict[str, Any]:
            labels = categories.get(names[j])
            v = X[i, j]
            if labels is not None and np.isfinite(v) and 0 <= int(v) < len(labels):
                return {"text": str(labels[int(v)]), "sort": None}  # a category's label
            return _cell(v)

        rows = [
            [_cell(i)] + [value(i, j) for j in cols] + [{"text": label(i), "sort": None}]
            for i in range(min(n, 10))
        ]
        more = n_features - len(cols)
        table = {
            "columns": ["row", *names, target],
            "rows": rows,
            "note": f"{more} more features not shown" if more > 0 else "",
        }
    data = {
        "kind": "dataset",
        "name": name,
        "n_samples": n,
        "n_features": n_features,
        "class_names": list(class_names),
        "feature_names": list(feature_names) if len(feature_names) <= 1000 else None,
        "image_shape": list(image_shape) if image_shape else None,
        "class_counts": [c["count"] for c in classes],
    }
    return (
        environment()
        .get_template("dataset.html.j2")
        .render(
            uid=uid,
            summary=summary,
            description=str(getattr(ds, "description", "") or ""),
            classes=classes,
            thumbnails=thumbnails,
            table=table,
            data=data,
        )
    )


# -- counters ------------------------------------------------------------------------------
def render_counters(result: Any) -> str:
    """The backend and model a runner uses, and every counter as a sortable table."""
    uid = new_id("ctr")
    about: list[tuple[str, str]] = []
    backend = None
    if isinstance(result, ModelRunner):
        backend = result.backend
        about.append(("model", shorten(repr(result.model), 400)))
    elif isinstance(result, Backend):
        backend = result
    if backend is not None:
        counters = backend.counters
        describe = backend.describe() if hasattr(backend, "describe") else {}
        about.insert(0, ("backend", str(backend.name)))
        about.insert(
            1, ("numerics", str(describe.get("numerics") or backend_numerics(backend.name, {})))
        )
        about.extend((str(k), str(v)) for k, v in describe.items() if k not in ("name", "numerics"))
    else:
        counters = dict(result)
    items = list(counters.items())[:MAX_TABLE_ROWS]
    table = {
        "columns": ["counter", "value"],
        "rows": [[{"text": str(k), "sort": None}, _cell(v)] for k, v in items],
        "note": f"{len(counters) - len(items)} more counters not shown"
        if len(counters) > len(items)
        else "",
    }
    data = {"kind": "counters", "about": dict(about), "counters": dict(counters)}
    return (
        environment()
        .get_template("counters.html.j2")
        .render(uid=uid, about=about, table=table, data=data)
    )


# -- tables --------------------------------------------------------------------------------
def render_frame(frame: Any) -> str:
    """A pandas DataFrame as a sortable table (the first :data:`MAX_TABLE_ROWS` rows)."""
    uid = new_id("tbl")
    head = frame.iloc[:MAX_TABLE_ROWS]
    index_name = str(frame.index.name) if frame.index.name is not None else ""
    columns = [index_name, *(str(c) for c in frame.columns)]
    values = head.to_numpy(dtype=object)
    texts = [format_column(values[:, j]) for j in range(values.shape[1])]

    def cell(i: int, j: int) -> dict[str, Any]:
        c = _cell(values[i, j])
        if texts[j] is not None:
            c["text"] = texts[j][i]  # one number format per column
        return c

    rows = [
        [_cell(idx)] + [cell(i, j) for j in range(values.shape[1])]
        for i, idx in enumerate(head.index.tolist())
    ]
    more = len(frame) - len(head)
    table = {
        "columns": columns,
        "rows": rows,
        "note": f"{more} more rows not shown" if more > 0 else "",
    }
    data = {
        "kind": "table",
        "columns": columns,
        "n_rows": len(frame),
        "rows": [[plain(idx), *map(plain, values[i])] for i, idx in enumerate(head.index.tolist())],
    }
    return environment().get_template("frame.html.j2").render(uid=uid, table=table, data=data)


@hookimpl
def xai_register_report_sections():
    """The built-in sections: explanations, datasets, hardware counters, DataFrames."""
    return [
        ReportSection("explanation", Explanation, render_explanation, "Attributions"),
        ReportSection("dataset", DatasetLike, render_dataset, "Dataset"),
        ReportSection("counters", CountersLike, render_counters, "Hardware counters"),
        ReportSection("table", DataFrameLike, render_frame, "Table"),
    ]
