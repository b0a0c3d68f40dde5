"""HTML panels of the datapoint editor: prediction, explanation bars, counterfactual beside the row, PD with a marker, scatter.

Each is a function of an :class:`~xai_whatif.editor.EditorState`; the notebook widgets put
them in ``ipywidgets.HTML`` (the scatter in a click-reporting plot). Jinja2 autoescapes
every feature, class and category name.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from xai_core.report import NEGATIVE, POSITIVE, environment, format_number, isolate

__all__ = ["counterfactual_html", "dependence_html", "explanation_html", "history_html"]
__all__ += ["prediction_html", "scatter_html"]

_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")
_CHANGED = (
    "background:#fde68a;color:#1b1b1b;font-weight:bold"  # its own ink: a host may set td colours
)

_TEMPLATES = {
    "prediction": """<div class="xai-editor-prediction"><p>Row {{ row }}: predicted <strong>{{ predicted }}</strong>{% if flipped %} (was {{ was }}){% endif %}.</p>
<table><tr><th>output</th><th>now</th><th>loaded</th></tr>{% for o in outputs %}<tr><td>{{ o.name }}</td><td data-output="{{ loop.index0 }}">{{ o.now }}</td><td>{{ o.then }}</td></tr>{% endfor %}</table></div>""",
    "bars": """<div class="xai-editor-explanation"><p>{{ title }}</p><svg role="img" aria-label="attributions" width="360" height="{{ 18 * bars|length + 6 }}">
{% for b in bars %}<text x="150" y="{{ 18 * loop.index0 + 15 }}" font-size="11" text-anchor="end">{{ b.name }}</text><rect x="{{ b.x }}" y="{{ 18 * loop.index0 + 4 }}" width="{{ b.w }}" height="13" fill="{{ b.colour }}"/><text x="{{ b.tx }}" y="{{ 18 * loop.index0 + 15 }}" font-size="10" text-anchor="{{ b.anchor }}">{{ b.value }}</text>
{% endfor %}<line x1="255" y1="0" x2="255" y2="{{ 18 * bars|length + 6 }}" stroke="#555"/></svg></div>""",
    "cf": """<div class="xai-editor-cf"><p>{{ title }}</p>{% if rows %}<table><tr><th>feature</th><th>row {{ row }}</th><th>{{ other }}</th></tr>
{% for r in rows %}<tr><td>{{ r.name }}</td><td>{{ r.mine }}</td><td{% if r.changed %} style="{{ changed_style }}" data-changed="1"{% endif %}>{{ r.theirs }}</td></tr>{% endfor %}</table>{% endif %}</div>""",
    "pd": """<div class="xai-editor-pd"><p>Partial dependence of {{ output }} on <strong>{{ feature }}</strong> (mean over {{ n }} rows, solid; this row, dashed); the marker is the current value {{ value }}.</p>
<svg role="img" aria-label="partial dependence with the current value" width="360" height="180"><rect x="40" y="6" width="310" height="150" fill="none" stroke="#999"/>
<polyline points="{{ mean }}" fill="none" stroke="#08519c" stroke-width="2"/><polyline points="{{ mine }}" fill="none" stroke="#e6550d" stroke-width="1.5" stroke-dasharray="4 2"/>
<line x1="{{ mx }}" y1="6" x2="{{ mx }}" y2="156" stroke="#555" stroke-dasharray="2 2"/><circle cx="{{ mx }}" cy="{{ my }}" r="5" fill="#e6550d" stroke="white"/>
<text x="36" y="16" font-size="10" text-anchor="end">{{ ymax }}</text><text x="36" y="156" font-size="10" text-anchor="end">{{ ymin }}</text>
<text x="40" y="172" font-size="10">{{ xmin }}</text><text x="350" y="172" font-size="10" text-anchor="end">{{ xmax }}</text></svg></div>""",
    "scatter": """<svg role="img" aria-label="rows by {{ names[0] }} and {{ names[1] }}; click one to select it" width="{{ size }}" height="{{ size }}" viewBox="0 0 {{ size }} {{ size }}">
<rect x="0" y="0" width="{{ size }}" height="{{ size }}" fill="white" stroke="#999"/>
{% for p in points %}<circle data-row="{{ p.row }}" cx="{{ p.x }}" cy="{{ p.y }}" r="{{ 6 if p.selected else 3.5 }}" fill="{{ p.colour }}" stroke="{{ 'black' if p.selected else 'none' }}" stroke-width="2" style="cursor:pointer"><title>row {{ p.row }}</title></circle>
{% endfor %}<text x="4" y="{{ size - 4 }}" font-size="10">x: {{ names[0] }}, y: {{ names[1] }}; colour: {{ colour_by }}</text></svg>""",
    "history": """<ol class="xai-editor-history">{% for h in items %}<li>{{ h }}</li>{% endfor %}</ol>{% if not items %}<p>No edits yet.</p>{% endif %}""",
}


@cache
def _env():
    return environment(_TEMPLATES)


def _render(name: str, **context: Any) -> str:
    return _env().get_template(name).render(**context)


def _class(w: Any, value: Any) -> str:
    names = w.output_names
    if w.task == "classification" and isinstance(value, (int, np.integer)) and value < len(names):
        return f"{isolate(names[int(value)])} ({int(value)})"
    return format_number(value)


def _hex(rgb: np.ndarray) -> str:
    return "#" + "".join(f"{int(round(v)):02x}" for v in rgb)


def prediction_html(state: Any) -> str:
    """The row's prediction and outputs now and as loaded."""
    w = state.w
    loaded = w._predict(state.original[None])[0]
    then = w._classify(loaded[None])[0].item()
    outputs = [
        {"name": n, "now": format_number(a), "then": format_number(b)}
        for n, a, b in zip(w.output_names, state.outputs, loaded)
    ]
    return _render(
        "prediction",
        row=state.row,
        predicted=_class(w, state.predicted),
        flipped=then != state.predicted,
        was=_class(w, then),
        outputs=outputs,
    )


def explanation_html(state: Any, top: int = 10) -> str:
    """The explanation of the row as edited: the ``top`` features by |attribution| as bars."""
    e = state.explanation
    values = np.asarray(e.values, dtype=np.float64).reshape(-1)
    names = e.feature_names or tuple(f"x{i}" for i in range(values.size))
    order = np.argsort(-np.abs(values), kind="stable")[:top]
    vmax = float(np.abs(values).max()) or 1.0
    bars = []
    for j in order.tolist():
        v = float(values[j])
        width = abs(v) / vmax * 95
        bars.append(
            {
                "name": names[j],
                "x": f"{255 - width if v < 0 else 255:.1f}",
                "w": f"{width:.1f}",
                "colour": _hex(POSITIVE if v >= 0 else NEGATIVE),
                "value": format_number(v, 3),
                "tx": f"{255 - width - 2 if v < 0 else 255 + width + 2:.1f}",
                "anchor": "end" if v < 0 else "start",
            }
        )
    target = e.target[0].item() if hasattr(e.target[0], "item") else e.target[0]
    title = f"{isolate(e.method)} attributions for {_class(state.w, target)} of the row as edited."
    return _render("bars", title=title, bars=bars)


def counterfactual_html(state: Any, limit: int = 40) -> str:
    """The selected row beside its nearest counterfactual; the features that differ highlighted."""
    c = state.counterfactual
    w = state.w
    if not len(c):
        return _render(
            "cf", title="No example has another prediction.", rows=[], row=c.row, other=""
        )
    t = w.table
    other = c.X[0]
    diff = other != c.x
    cols = np.arange(c.x.size) if c.x.size <= limit else np.flatnonzero(diff)[:limit]
    rows = [
        {
            "name": t.feature_names[j],
            "mine": t.text(j, c.x[j]),  # in the column's own decimals, or its category
            "theirs": t.text(j, other[j]),
            "changed": bool(diff[j]),
        }
        for j in cols.tolist()
    ]
    title = (
        f"Nearest counterfactual: row {int(c.index[0])}, predicted {_class(w, c.predicted[0].item())}"
        f" ({c.distance} distance {format_number(c.distances[0])}); "
        f"{int(diff.sum())} feature(s) differ, highlighted."
    )
    return _render(
        "cf",
        title=title,
        rows=rows,
        row=c.row,
        other=f"row {int(c.index[0])}",
        changed_style=_CHANGED,
    )


def dependence_html(state: Any) -> str:
    """The PD curve of the edited feature, this row's curve, and a marker at the current value."""
    p = state.dependence
    k = p.average.shape[-1] - 1
    grid = np.asarray(p.grid[0], dtype=np.float64)
    mean = p.average[:, k]
    mine = state.row_curve()[:, k]
    value, outputs = state.marker()
    y = float(outputs[k])
    lo = float(min(mean.min(), mine.min(), y))
    hi = float(max(mean.max(), mine.max(), y))
    hi = hi if hi > lo else lo + 1.0
    x0, x1 = float(min(grid.min(), value)), float(max(grid.max(), value))
    x1 = x1 if x1 > x0 else x0 + 1.0

    def fx(v):
        return 40 + (np.asarray(v) - x0) / (x1 - x0) * 310

    def fy(v):
        return 6 + (1 - (np.asarray(v) - lo) / (hi - lo)) * 150

    def line(vals):
        return " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(fx(grid), fy(vals)))

    name = state.w.output_names[k] if k < len(state.w.output_names) else f"output {k}"
    return _render(
        "pd",
        output=name,
        feature=state.feature,
        n=len(p.rows),
        value=format_number(value),
        mean=line(mean),
        mine=line(mine),
        mx=f"{float(fx(value)):.1f}",
        my=f"{float(fy(y)):.1f}",
        ymin=format_number(lo, 3),
        ymax=format_number(hi, 3),
        xmin=format_number(x0, 3),
        xmax=format_number(x1, 3),
    )


def scatter_html(state: Any, size: int = 300, limit: int = 2000) -> str:
    """The rows in the scatter's axes, coloured; each point carries ``data-row`` for clicks."""
    xy, colour, names = state.scatter()
    n = len(xy)
    shown = np.unique(np.r_[np.linspace(0, n - 1, min(n, limit)).astype(np.int64), state.row])
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    pos = 8 + (xy[shown] - lo) / span * (size - 24)
    if state.colour_by == "correctness":
        colours = np.where(colour[shown] > 0, "#2ca02c", "#d62728")
    elif state.w.task == "classification" or state.colour_by == "label":
        colours = np.array(_PALETTE)[colour[shown].astype(np.int64) % len(_PALETTE)]
    else:
        c = (colour[shown] - colour.min()) / ((colour.max() - colour.min()) or 1.0)
        colours = np.array([_hex(NEGATIVE + (POSITIVE - NEGATIVE) * v) for v in c])
    points = [
        {"row": int(r), "x": f"{px:.1f}", "y": f"{size - 16 - py:.1f}", "colour": str(col)}
        | {"selected": int(r) == state.row}
        for r, (px, py), col in zip(shown, pos, colours)
    ]
    points.sort(key=lambda p: p["selected"])  # the selected row drawn last, on top
    return _render("scatter", points=points, size=size, names=names, colour_by=state.colour_by)


def history_html(state: Any, last: int = 12) -> str:
    """The session's last edits, newest last."""
    items = [
        f"row {e.row}: "
        + ", ".join(
            f"{isolate(f)} {format_number(b) if isinstance(b, float) else isolate(b)} → "
            f"{format_number(a) if isinstance(a, float) else isolate(a)}"
            for f, b, a in e.changes
        )
        for e in state.history[-last:]
    ]
    return _render("history", items=items)
