"""HTML for what-if results: edit panels, counterfactual tables, PD/ICE charts, slice tables.

Rendered by Jinja2 with autoescape on, so feature names, class names and category labels
(user input) are escaped everywhere; charts are inline SVG and images PNG data URIs.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
from markupsafe import Markup

from xai_core.images import image_layout, is_image_shape
from xai_core.report import (
    enlarge,
    environment,
    format_number,
    isolate,
    new_id,
    png_data_uri,
    to_pixels,
)

__all__ = [
    "render_counterfactuals",
    "render_edit",
    "render_partial_dependence",
    "render_slices",
    "render_thresholds",
    "render_whatif",
]

_MAX_ROWS = 60
_MAX_ICE = 40

_TEMPLATES = {
    "macros": """
{% macro table(columns, rows, changed=None) %}
<div class="xai-table-wrap"><table class="xai-sortable">
<thead><tr>{% for c in columns %}<th>{{ c }}</th>{% endfor %}</tr></thead>
<tbody>{% for row in rows %}<tr>{% for cell in row %}
{% if cell is mapping %}<td class="{{ cell.cls }}"{% if cell.title %} title="{{ cell.title }}"{% endif %}>{{ cell.text }}</td>
{% else %}<td>{{ cell }}</td>{% endif %}{% endfor %}</tr>
{% endfor %}</tbody></table></div>
{% endmacro %}
""",
    "edit": """{% import "macros" as m %}
<div class="xai-whatif-edit" id="{{ uid }}">
<p>Row {{ r.row }}: predicted <strong>{{ before }}</strong> &rarr; <strong>{{ after }}</strong>{% if r.flipped %} (changed){% endif %}.</p>
{% if images %}<p>{% for img in images %}<figure style="display:inline-block;margin:4px"><img src="{{ img.uri }}" width="{{ img.size }}" height="{{ img.size }}" alt="{{ img.label }}" style="image-rendering:pixelated"><figcaption>{{ img.label }}</figcaption></figure>{% endfor %}</p>{% endif %}
{{ m.table(["feature", "before", "after"], changes) }}
{% if more_changes %}<p class="xai-muted">{{ more_changes }} more changed features not shown.</p>{% endif %}
{{ m.table(["output", "before", "after", "change"], outputs) }}
</div>""",
    "cf": """{% import "macros" as m %}
<div class="xai-whatif-cf" id="{{ uid }}">
<p>{{ title }} for row {{ c.row }} (predicted <strong>{{ before }}</strong>), distance {{ c.distance }}.</p>
{% if not columns %}<p>No counterfactual was found.</p>{% else %}
{% if images %}<p>{% for img in images %}<figure style="display:inline-block;margin:4px"><img src="{{ img.uri }}" width="{{ img.size }}" height="{{ img.size }}" alt="{{ img.label }}" style="image-rendering:pixelated"><figcaption>{{ img.label }}</figcaption></figure>{% endfor %}</p>{% endif %}
{{ m.table(columns, rows) }}
<p class="xai-muted">Changed values are marked with *{% if hidden %}; {{ hidden }} unchanged features not shown{% endif %}.</p>
{% endif %}
</div>""",
    "pd": """{% import "macros" as m %}
<div class="xai-whatif-pd" id="{{ uid }}">
<p>Partial dependence of <strong>{{ output }}</strong> on {{ features }} over {{ n_rows }} rows{% if ice_note %} ({{ ice_note }}){% endif %}.</p>
{% if chart %}<svg role="img" aria-label="partial dependence plot" width="{{ chart.w }}" height="{{ chart.h }}" viewBox="0 0 {{ chart.w }} {{ chart.h }}">
<rect x="{{ chart.x0 }}" y="{{ chart.y0 }}" width="{{ chart.pw }}" height="{{ chart.ph }}" fill="none" stroke="#999"/>
{% for line in chart.ice %}<polyline points="{{ line }}" fill="none" stroke="#9ecae1" stroke-width="1" opacity="0.6"/>{% endfor %}
<polyline points="{{ chart.pd }}" fill="none" stroke="#08519c" stroke-width="2.5"/>
<text x="{{ chart.x0 }}" y="{{ chart.h - 4 }}" font-size="11">{{ chart.xmin }}</text>
<text x="{{ chart.x0 + chart.pw }}" y="{{ chart.h - 4 }}" font-size="11" text-anchor="end">{{ chart.xmax }}</text>
<text x="{{ chart.x0 + chart.pw / 2 }}" y="{{ chart.h - 4 }}" font-size="11" text-anchor="middle">{{ features }}</text>
<text x="{{ chart.x0 - 4 }}" y="{{ chart.y0 + 10 }}" font-size="11" text-anchor="end">{{ chart.ymax }}</text>
<text x="{{ chart.x0 - 4 }}" y="{{ chart.y0 + chart.ph }}" font-size="11" text-anchor="end">{{ chart.ymin }}</text>
</svg>{% endif %}
{{ m.table(columns, rows) }}
</div>""",
    "slices": """{% import "macros" as m %}
<div class="xai-whatif-slices" id="{{ uid }}">
<p>{{ heading }}</p>
{{ m.table(columns, rows) }}
{{ curves }}
{{ slider }}
{% for cm in confusions %}<details><summary>Confusion matrix: {{ cm.label }}</summary>{{ m.table(cm.columns, cm.rows) }}</details>{% endfor %}
</div>""",
    "whatif": """{% import "macros" as m %}
<div class="xai-whatif" id="{{ uid }}">
{{ m.table(["", ""], summary) }}
{{ offline }}
{{ m.table(["feature", "min", "max", "std", "categories"], features) }}
{% if more_features %}<p class="xai-muted">{{ more_features }} more features not shown.</p>{% endif %}
{% if edits %}<h4>Edits</h4>{% for e in edits %}{{ e }}{% endfor %}{% endif %}
</div>""",
}


@cache
def _env():
    """The core's Jinja2 environment over this module's templates."""
    return environment(_TEMPLATES)


def _render(template: str, kind: str, **context: Any) -> str:
    """``template`` rendered with a fresh element id (reproducible under ``Report(seed=)``)."""
    return _env().get_template(template).render(uid=new_id(f"whatif-{kind}"), **context)


def _text(value: Any) -> str:
    return format_number(value) if isinstance(value, (int, float, np.number)) else str(value)


def _class_name(names: tuple[str, ...], value: Any) -> str:
    if isinstance(value, (int, np.integer)) and 0 <= value < len(names):
        return f"{isolate(names[int(value)])} ({int(value)})"
    return _text(value)


def _image(flat: np.ndarray, shape: tuple[int, ...], label: str, lo: float, hi: float) -> dict:
    """One sample as a grey PNG (channels averaged), ``lo`` black and ``hi`` white.

    The picture is enlarged by whole pixels (at least 84 px wide), so it is sharp at its
    own size without ``image-rendering``, which an untrusted notebook's sanitiser drops.
    """
    layout = image_layout(shape)
    grey = layout.grey(np.asarray(flat)[None])[0]
    zoom = max(3, -(-84 // layout.width))
    return {
        "uri": png_data_uri(enlarge(to_pixels(grey, lo, hi), zoom)),
        "label": label,
        "size": layout.width * zoom,
    }


# -- edits ---------------------------------------------------------------------------------
def render_edit(r: Any) -> str:
    """An edit panel: changed features before and after, outputs before, after and change."""
    names = r.output_names
    changes = [[f, _text(b), _text(a)] for f, b, a in r.changes[:_MAX_ROWS]]
    outputs = [
        [
            names[k] if k < len(names) else f"output {k}",
            format_number(b),
            format_number(a),
            format_number(a - b),
        ]
        for k, (b, a) in enumerate(zip(r.before, r.after))
    ]
    images = []
    if r.image_shape is not None:
        lo = float(min(r.x_before.min(), r.x_after.min()))
        hi = float(max(r.x_before.max(), r.x_after.max()))
        images = [
            _image(r.x_before.ravel(), r.image_shape, "before", lo, hi),
            _image(r.x_after.ravel(), r.image_shape, "after", lo, hi),
        ]
    return _render(
        "edit",
        "edit",
        r=r,
        before=_class_name(names, r.predicted_before),
        after=_class_name(names, r.predicted_after),
        changes=changes,
        more_changes=max(0, len(r.changes) - _MAX_ROWS),
        outputs=outputs,
        images=images,
    )


# -- counterfactuals -----------------------------------------------------------------------
def render_counterfactuals(c: Any) -> str:
    """The datapoint beside its counterfactuals, changed features marked."""
    title = "Nearest counterfactual" if c.method == "nearest" else "Searched counterfactuals"
    columns: list[str] = []
    rows: list[list[Any]] = []
    images = []
    hidden = 0
    if len(c.X):
        shown = min(len(c.X), 10)
        changed = (c.X[:shown] != c.x).any(axis=0)
        is_image = is_image_shape(c.sample_shape)
        if is_image:
            lo = float(min(c.x.min(), c.X[:shown].min()))
            hi = float(max(c.x.max(), c.X[:shown].max()))
            images = [_image(c.x, c.sample_shape, f"row {c.row}", lo, hi)]
            images += [
                _image(c.X[k], c.sample_shape, f"counterfactual {k + 1}", lo, hi)
                for k in range(shown)
            ]
        cols = np.flatnonzero(changed) if is_image or c.x.size > _MAX_ROWS else np.arange(c.x.size)
        cols = cols[:_MAX_ROWS]
        hidden = int(c.x.size - np.count_nonzero(changed)) if len(cols) < c.x.size else 0
        columns = ["feature", f"row {c.row}"] + [
            f"#{k + 1}" + (f" (row {c.index[k]})" if c.index[k] >= 0 else "") for k in range(shown)
        ]
        labels = c.labels if c.labels else None
        for j in cols:
            cells: list[Any] = [c.feature_names[j], _text(c.x[j])]
            for k in range(shown):
                v = labels[k][j] if labels is not None and k < len(labels) else c.X[k, j]
                if c.X[k, j] != c.x[j]:
                    cells.append(
                        {"text": isolate(_text(v)) + " *", "cls": "xai-changed", "title": "changed"}
                    )
                else:
                    cells.append(_text(v))
            rows.append(cells)
        names = c.output_names
        rows.append(
            ["prediction", _class_name(names, c.predicted_before)]
            + [
                _class_name(names, p.item() if hasattr(p, "item") else p)
                for p in c.predicted[:shown]
            ]
        )
        rows.append(["distance", "0"] + [format_number(d) for d in c.distances[:shown]])
    return _render(
        "cf",
        "cf",
        c=c,
        title=title,
        before=_class_name(c.output_names, c.predicted_before),
        columns=columns,
        rows=rows,
        images=images,
        hidden=hidden,
    )


# -- partial dependence --------------------------------------------------------------------
def _polyline(xs: np.ndarray, ys: np.ndarray, box: dict) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(box["fx"](xs), box["fy"](ys)))


def render_partial_dependence(p: Any) -> str:
    """One feature: ICE curves and their mean as an SVG chart; two: the PD grid as a table."""
    k = p.average.shape[-1] - 1  # the last output: the positive class of a binary model
    output = p.output_names[k] if k < len(p.output_names) else f"output {k}"
    chart = None
    ice_note = ""
    if len(p.features) == 1:
        g = p.grid[0].astype(np.float64)
        pd_curve = p.average[:, k]
        ice = p.ice[:, :, k] if p.ice is not None else np.zeros((0, len(g)))
        if p.ice is not None and len(ice) > _MAX_ICE:
            ice_note = f"{_MAX_ICE} of {len(ice)} ICE curves drawn"
            ice = ice[np.linspace(0, len(ice) - 1, _MAX_ICE).astype(int)]
        lo = float(min(pd_curve.min(), ice.min(initial=np.inf)))
        hi = float(max(pd_curve.max(), ice.max(initial=-np.inf)))
        hi = hi if hi > lo else lo + 1.0
        gx0, gx1 = float(g.min()), float(g.max())
        gx1 = gx1 if gx1 > gx0 else gx0 + 1.0
        box = {"x0": 76, "y0": 10, "pw": 360, "ph": 200, "w": 456, "h": 240}  # room for y labels
        box["fx"] = lambda v: box["x0"] + (v - gx0) / (gx1 - gx0) * box["pw"]
        box["fy"] = lambda v: box["y0"] + (1 - (v - lo) / (hi - lo)) * box["ph"]
        chart = {
            **{key: box[key] for key in ("x0", "y0", "pw", "ph", "w", "h")},
            "ice": [_polyline(g, curve, box) for curve in ice],
            "pd": _polyline(g, pd_curve, box),
            "xmin": format_number(gx0),
            "xmax": format_number(gx1),
            "ymin": format_number(lo, 3),
            "ymax": format_number(hi, 3),
        }
        columns = [p.features[0], f"PD ({isolate(output)})"]
        rows = [[_text(lab), format_number(v)] for lab, v in zip(p.grid_labels[0], pd_curve)][
            :_MAX_ROWS
        ]
    else:
        columns = [f"{isolate(p.features[0])} \\ {isolate(p.features[1])}"] + [
            _text(v) for v in p.grid_labels[1]
        ]
        rows = [
            [_text(lab)] + [format_number(v) for v in p.average[a, :, k]]
            for a, lab in enumerate(p.grid_labels[0])
        ][:_MAX_ROWS]
    return _render(
        "pd",
        "pd",
        output=output,
        features=" and ".join(map(isolate, p.features)),
        n_rows=len(p.rows),
        ice_note=ice_note,
        chart=chart,
        columns=columns,
        rows=rows,
    )


# -- slices and thresholds -----------------------------------------------------------------
def _frame_rows(frame: Any) -> tuple[list[str], list[list[str]]]:
    columns = [str(frame.index.name or "slice"), *(str(c) for c in frame.columns)]
    rows = [
        [str(idx), *(_text(v) for v in values)]
        for idx, values in zip(frame.index.tolist(), frame.to_numpy(dtype=object).tolist())
    ]
    return columns, rows[:_MAX_ROWS]


def render_slices(s: Any) -> str:
    """The per-slice metrics table and each slice's confusion matrix."""
    columns, rows = _frame_rows(s.table)
    names = list(s.class_names)
    confusions = []
    for label, cm in list(s.confusion.items())[:_MAX_ROWS]:
        confusions.append(
            {
                "label": label,
                "columns": ["true \\ predicted", *names[: cm.shape[1]]],
                "rows": [
                    [names[i] if i < len(names) else str(i), *map(format_number, cm[i])]
                    for i in range(cm.shape[0])
                ],
            }
        )
    thr = "" if s.threshold is None else f" at threshold {format_number(s.threshold)}"
    return _render(
        "slices",
        "slices",
        heading=f"Performance by {', '.join(map(isolate, s.features))}{thr}.",
        columns=columns,
        rows=rows,
        confusions=confusions,
        curves=_curves(s.curves, s.table, s.threshold),
        slider=Markup(threshold_slider(s)),
    )


def render_thresholds(t: Any) -> str:
    """The thresholds a strategy picked per slice, the metrics they give and the total cost."""
    columns, rows = _frame_rows(t.table)
    allowed = (
        "the default 0.05" if t.tolerance is None else f"the tolerance {format_number(t.tolerance)}"
    )
    if t.constrained is None:
        constraint = ""
    elif getattr(t, "met", True):
        constraint = (
            f"; equal {t.constrained}, {format_number(t.target)} within "
            f"{format_number(getattr(t, 'gap', float('nan')))} (at most {allowed})"
        )
    else:
        constraint = (
            f"; equal {t.constrained} cannot be met on this grid: the slices' {t.constrained} "
            f"differ by {format_number(t.gap)}, more than {allowed} (see the table)"
        )
    heading = (
        f"Strategy {t.strategy} by {', '.join(map(isolate, t.features))}{constraint}; cost ratio "
        f"(FP/FN) {format_number(t.cost_ratio)}; total cost {format_number(t.cost)}."
    )
    return _render(
        "slices",
        "thr",
        slider="",
        heading=heading,
        columns=columns,
        rows=rows,
        confusions=[],
        curves=_curves(t.curves, t.table, None),
    )


def threshold_slider(s: Any) -> str:
    """The slices' offline threshold slider (see :mod:`xai_whatif.render_overview`)."""
    from xai_whatif.render_overview import threshold_slider as slider

    return slider(s)


def _curves(curves: dict, table: Any, threshold: float | None) -> Markup:
    """The slices' ROC and PR curves with each slice's operating point (its row of ``table``)."""
    from xai_whatif.render_overview import curves_figure

    marks = {}
    for label in curves:
        row = table.loc[label]
        at = threshold if threshold is not None else float(row["threshold"])
        marks[label] = {
            "threshold": at,
            **{k: float(row[k]) for k in ("fpr", "tpr", "precision")},
        }
    return Markup(curves_figure(curves, marks))


# -- the session ---------------------------------------------------------------------------
def render_whatif(w: Any) -> str:
    """The session: model, data summary, feature ranges and the edits made."""
    t = w.table
    summary = [
        ["model", repr(w.runner.model)],
        ["backend", str(w.runner.backend.name)],
        ["task", w.task],
        ["rows", format_number(t.n_samples)],
        ["features", format_number(t.n_features)],
        ["outputs", ", ".join(map(isolate, w.output_names))],
        ["edits", format_number(len(w.history))],
    ]
    features = [
        [
            t.feature_names[j],
            format_number(t.minimum[j]),
            format_number(t.maximum[j]),
            format_number(t.std[j]),
            ", ".join(isolate(c) for c in t.categories[j][:20]) if j in t.categories else "",
        ]
        for j in range(min(t.n_features, 30))
    ]
    edits = [Markup(render_edit(e)) for e in w.history[-10:]]
    from xai_whatif.offline import offline_html

    return _render(
        "whatif",
        "session",
        summary=summary,
        features=features,
        more_features=max(0, t.n_features - 30),
        edits=edits,
        offline=offline_html(w),
    )
