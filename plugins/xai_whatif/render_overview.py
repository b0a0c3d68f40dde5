"""HTML of the What-If Tool's other tabs: ROC and PR curves per slice, feature distributions,
nearest neighbours and a two-model comparison.

Inline SVG through the what-if templates' Jinja2 environment (autoescape on), so slice
labels, feature and class names (user input) are escaped everywhere.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from xai_core.report import environment, format_number, isolate, new_id
from xai_whatif import render as _base

__all__ = [
    "curves_figure",
    "threshold_slider",
    "render_feature_stats",
    "render_model_comparison",
    "render_neighbors",
]

#: Colours of the slices' curves (Okabe and Ito's colour-blind-safe set, grey for its black: the
#: lines must show on light and dark themes alike).
_COLOURS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#8c8c8c")
_MAX_CURVES = len(_COLOURS)
_MAX_FEATURES = 60
_BOX = {"w": 230, "h": 200, "x0": 36, "y0": 8, "pw": 180, "ph": 160}

_TEMPLATES = {
    "curves": """
<div class="xai-whatif-curves" style="display:flex;flex-wrap:wrap;gap:12px">
{% for c in charts %}<svg role="img" aria-label="{{ c.title }} per slice" width="{{ box.w }}" height="{{ box.h }}" viewBox="0 0 {{ box.w }} {{ box.h }}">
<rect x="{{ box.x0 }}" y="{{ box.y0 }}" width="{{ box.pw }}" height="{{ box.ph }}" fill="none" stroke="#999"/>
{% for l in c.lines %}<polyline points="{{ l.points }}" fill="none" stroke="{{ l.colour }}" stroke-width="1.8"><title>{{ l.label }}</title></polyline>
{% if l.mark %}<circle cx="{{ l.mark.x }}" cy="{{ l.mark.y }}" r="4" fill="{{ l.colour }}" stroke="#fff"><title>{{ l.label }}: threshold {{ l.mark.threshold }}</title></circle>{% endif %}
{% endfor %}<text x="{{ box.x0 + box.pw / 2 }}" y="{{ box.h - 12 }}" font-size="11" text-anchor="middle">{{ c.x }}</text>
<text x="10" y="{{ box.y0 + box.ph / 2 }}" font-size="11" text-anchor="middle" transform="rotate(-90 10 {{ box.y0 + box.ph / 2 }})">{{ c.y }}</text>
<text x="{{ box.x0 + box.pw / 2 }}" y="{{ box.h - 1 }}" font-size="11" text-anchor="middle">{{ c.title }}</text>
</svg>{% endfor %}
<p class="xai-muted" style="flex-basis:100%">{% for l in legend %}<span style="color:{{ l.colour }}">&#9632;</span> {{ l.label }}{% if not loop.last %}; {% endif %}{% endfor %}{% if marked %}. Dots: {{ marked }}{% endif %}.{% if more %} {{ more }} more slices not drawn.{% endif %}</p>
</div>""",
    "slider": """
<div class="xai-whatif-threshold" id="{{ uid }}">
<script type="application/json" class="xai-whatif-threshold-data">{{ data | json_script }}</script>
<script type="text/html" class="xai-live"><p><label>Threshold <input type="range" class="xai-whatif-threshold-input" min="0" max="{{ last }}" value="{{ start }}" style="width:min(320px,70%)"></label> <output class="xai-whatif-threshold-value">{{ value }}</output> (cost ratio {{ cost_ratio }}): each slice at that threshold.</p>
<div class="xai-table-wrap"><table><thead><tr><th>slice</th><th>TN</th><th>FP</th><th>FN</th><th>TP</th><th>accuracy</th><th>TPR</th><th>FPR</th><th>cost</th></tr></thead><tbody>
{% for label in labels %}<tr data-slice="{{ loop.index0 }}"><td>{{ label }}</td>{% for k in keys %}<td class="xai-num" data-k="{{ k }}"></td>{% endfor %}</tr>
{% endfor %}</tbody></table></div></script>
</div>""",
    "features": """{% import "macros" as m %}
<div class="xai-whatif-features" id="{{ uid }}">
<p>{{ heading }}</p>
{{ m.table(columns, rows) }}
{% if more %}<p class="xai-muted">{{ more }}</p>{% endif %}
</div>""",
    "neighbors": """{% import "macros" as m %}
<div class="xai-whatif-neighbors" id="{{ uid }}">
<p>{{ heading }}</p>
{{ m.table(columns, rows) }}
</div>""",
    "compare": """{% import "macros" as m %}
<div class="xai-whatif-compare" id="{{ uid }}">
<p>{{ heading }}</p>
{{ m.table(summary_columns, summary) }}
{% if rows %}<p>Rows where they disagree{% if more %} (the first {{ rows|length }} of {{ n_disagree }}){% endif %}:</p>
{{ m.table(columns, rows) }}{% endif %}
</div>""",
}


@cache
def _env():
    return environment({**_base._TEMPLATES, **_TEMPLATES})


def _render(template: str, kind: str, **context: Any) -> str:
    return _env().get_template(template).render(uid=new_id(f"whatif-{kind}"), **context)


def _points(x: np.ndarray, y: np.ndarray) -> str:
    b = _BOX
    xs = b["x0"] + np.clip(x, 0, 1) * b["pw"]
    ys = b["y0"] + (1 - np.clip(y, 0, 1)) * b["ph"]
    return " ".join(f"{u:.1f},{v:.1f}" for u, v in zip(xs, ys))


def _mark(x: float, y: float, threshold: float) -> dict[str, str] | None:
    if not (np.isfinite(x) and np.isfinite(y)):
        return None
    b = _BOX
    return {
        "x": f"{b['x0'] + x * b['pw']:.1f}",
        "y": f"{b['y0'] + (1 - y) * b['ph']:.1f}",
        "threshold": format_number(threshold),
    }


def curves_figure(
    curves: dict[str, dict[str, dict[str, np.ndarray]]],
    marks: dict[str, dict[str, float]] | None = None,
) -> str:
    """ROC and precision-recall curves, one line per slice, the thresholds in use as dots.

    Parameters
    ----------
    curves : dict
        Slice label -> ``{"roc": {"fpr", "tpr"}, "pr": {"precision", "recall"}}``, as
        :attr:`SliceMetrics.curves` holds them.
    marks : dict, optional
        Slice label -> ``{"threshold", "fpr", "tpr", "precision"}``: the slice's operating
        point, drawn on both curves.

    Returns
    -------
    str
        An HTML fragment, or "" when no slice has both classes.
    """
    if not curves:
        return ""
    marks = marks or {}
    labels = list(curves)[:_MAX_CURVES]
    roc, pr, legend = [], [], []
    for label, colour in zip(labels, _COLOURS):
        c, m = curves[label], marks.get(label)
        roc.append(
            {
                "points": _points(c["roc"]["fpr"], c["roc"]["tpr"]),
                "colour": colour,
                "label": label,
                "mark": m and _mark(m["fpr"], m["tpr"], m["threshold"]),
            }
        )
        pr.append(
            {
                "points": _points(c["pr"]["recall"], c["pr"]["precision"]),
                "colour": colour,
                "label": label,
                "mark": m and _mark(m["tpr"], m["precision"], m["threshold"]),
            }
        )
        legend.append({"colour": colour, "label": label})
    more = len(curves) - len(labels)
    return (
        _env()
        .get_template("curves")
        .render(
            charts=[
                {
                    "title": "ROC",
                    "x": "false positive rate",
                    "y": "true positive rate",
                    "lines": roc,
                },
                {"title": "Precision-recall", "x": "recall", "y": "precision", "lines": pr},
            ],
            box=_BOX,
            legend=legend,
            marked="each slice's threshold" if marks else "",
            more=more if more > 0 else 0,
        )
    )


def threshold_slider(s: Any, cost_ratio: float = 1.0) -> str:
    """The offline threshold slider of a binary :class:`SliceMetrics`: "" for other models.

    Each slice's confusion counts on :attr:`SliceMetrics.grid` travel as JSON; the slider
    (a live template, so a sanitised view shows no dead control) picks a grid point and
    ``thresholds.js`` shows that point's counts and rates.
    """
    if s.grid is None or not s.grid_counts:
        return ""
    labels = list(s.grid_counts)
    start = int(np.argmin(np.abs(s.grid - s.threshold)))
    return _render(
        "slider",
        "threshold",
        data={
            "grid": [float(g) for g in s.grid],
            "cost_ratio": float(cost_ratio),
            "slices": [
                {k: [int(v) for v in s.grid_counts[label][k]] for k in ("tn", "fp", "fn", "tp")}
                for label in labels
            ],
        },
        labels=labels,
        keys=("tn", "fp", "fn", "tp", "accuracy", "tpr", "fpr", "cost"),
        last=len(s.grid) - 1,
        start=start,
        value=f"{s.grid[start]:.2f}",
        cost_ratio=format_number(cost_ratio),
    )


def render_feature_stats(s: Any) -> str:
    """The statistics table (one row per slice and feature) with a histogram per row."""
    frame = s.table
    columns = ["slice", "feature", *[str(c) for c in frame.columns], "histogram"]
    rows = []
    for (slice_label, feature), values in list(frame.iterrows())[:_MAX_FEATURES]:
        if feature in s.histograms:
            counts = s.histograms[feature][slice_label]
            bars = "".join("▁▂▃▄▅▆▇█"[min(7, int(8 * c / max(1, counts.max())))] for c in counts)
        else:
            top = sorted(s.categories[feature][slice_label].items(), key=lambda kv: -kv[1])[:4]
            bars = ", ".join(f"{isolate(k)}: {v}" for k, v in top)
        rows.append(
            [
                str(slice_label),
                str(feature),
                *("" if v != v else _base._text(v) for v in values.tolist()),
                bars,
            ]
        )
    by = "" if s.by is None else f" by {', '.join(map(isolate, s.by))}"
    more = len(frame) - len(rows)
    return _render(
        "features",
        "features",
        heading=f"Feature distributions{by}: {len(s.histograms) + len(s.categories)} features, "
        f"{len(s.slices)} slice(s); histograms on each feature's range, shared by its slices.",
        columns=columns,
        rows=rows,
        more=f"{more} more rows not shown." if more > 0 else "",
    )


def render_neighbors(n: Any) -> str:
    """The neighbours' rows, distances and predictions."""
    names = n.output_names
    as_class = n.task == "classification"
    rows = []
    for r, d, p, t in zip(
        n.index, n.distances, n.predicted, n.y if n.y is not None else [None] * len(n)
    ):
        row = [
            str(int(r)),
            format_number(d),
            _base._class_name(names, p) if as_class else _base._text(p),
        ]
        if n.y is not None:
            row.append(_base._class_name(names, int(t)) if as_class else _base._text(t))
        rows.append(row)
    own = _base._class_name(names, n.predicted_row) if as_class else _base._text(n.predicted_row)
    return _render(
        "neighbors",
        "neighbors",
        heading=f"The {len(n)} examples nearest row {n.row} (predicted {own}) by "
        f"{n.distance.upper() if n.distance in ('l1', 'l2') else n.distance} distance.",
        columns=["row", "distance", "predicted", *(["true"] if n.y is not None else [])],
        rows=rows,
    )


def render_model_comparison(c: Any) -> str:
    """Agreement, each model's accuracy and the rows where the predictions differ."""
    a = c.sessions[0]
    names = a.output_names
    as_class = a.task == "classification"
    disagree = c.disagree
    accuracy = c.accuracy
    summary = [["rows", format_number(len(a.X))], ["agreement", f"{c.agreement:.1%}"]]
    if accuracy is not None:
        summary += [[f"accuracy of {isolate(c.names[0])}", f"{accuracy[0]:.1%}"]]
        summary += [[f"accuracy of {isolate(c.names[1])}", f"{accuracy[1]:.1%}"]]
    frame = c.table("disagree")
    rows = []
    for index, values in zip(frame.index.tolist(), frame.to_numpy().tolist()):
        cells = [_base._class_name(names, int(v)) if as_class else _base._text(v) for v in values]
        rows.append([str(index), *cells])
    shown = rows[: _base._MAX_ROWS]
    return _render(
        "compare",
        "compare",
        heading=f"{isolate(c.names[0])} and {isolate(c.names[1])} on the same "
        f"{len(a.X)} rows: they disagree on {int(disagree.sum())}.",
        summary_columns=["", "value"],
        summary=summary,
        columns=[
            "row",
            *(f"{isolate(name)} predicted" for name in c.names),
            *(["true"] if a.y is not None else []),
        ],
        rows=shown,
        more=len(rows) > len(shown),
        n_disagree=len(rows),
    )
