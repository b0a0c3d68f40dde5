"""HTML for the global methods: an importance chart and table, ALE curves as small multiples.

Rendered by Jinja2 with autoescape on (the core's environment), so feature, output and
scorer names (user input) are escaped everywhere; charts are inline SVG.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from xai_core.report import environment, format_number, new_id

__all__ = ["render_ale", "render_permutation_importance"]

_MAX_FEATURES = 30
_MAX_PANELS = 12
_COLOURS = ("#08519c", "#d94801", "#238b45", "#6a51a3", "#a50f15", "#525252")

_TEMPLATES = {
    "importance": """
<div class="xai-global-pi" id="{{ uid }}">
<p>Permutation importance: the decrease in <strong>{{ r.scorer }}</strong> (baseline {{ baseline }}) when each feature is shuffled, {{ r.n_repeats }} repeat(s) over {{ r.n_samples }} rows, seed {{ r.seed }}.</p>
<svg role="img" aria-label="permutation importance chart" width="{{ w }}" height="{{ h }}" viewBox="0 0 {{ w }} {{ h }}">
<line x1="{{ zero }}" y1="0" x2="{{ zero }}" y2="{{ h }}" stroke="#999"/>
{% for b in bars %}<rect x="{{ b.x }}" y="{{ b.y }}" width="{{ b.w }}" height="14" fill="#08519c"><title>{{ b.name }}: {{ b.value }}</title></rect>
<line x1="{{ b.lo }}" y1="{{ b.y + 7 }}" x2="{{ b.hi }}" y2="{{ b.y + 7 }}" stroke="#000"/>
<text x="4" y="{{ b.y + 11 }}" font-size="11">{{ b.name }}</text>
{% endfor %}</svg>
<div class="xai-table-wrap"><table class="xai-sortable">
<thead><tr><th>feature</th><th>mean</th><th>std</th></tr></thead>
<tbody>{% for row in rows %}<tr><td>{{ row[0] }}</td><td>{{ row[1] }}</td><td>{{ row[2] }}</td></tr>
{% endfor %}</tbody></table></div>
{% if hidden %}<p class="xai-muted">{{ hidden }} less important features not shown.</p>{% endif %}
</div>""",
    "ale": """
<div class="xai-global-ale" id="{{ uid }}">
<p>Accumulated local effects of {{ n_features }} feature(s) over {{ r.n_samples }} rows (grid size {{ r.grid_size }}), centred to mean 0.</p>
{% if legend %}<p>{% for item in legend %}<span style="color:{{ item.colour }}">&#9632;</span> {{ item.name }} {% endfor %}</p>{% endif %}
{% for p in panels %}<figure style="display:inline-block;margin:4px">
<svg role="img" aria-label="ALE curve" width="{{ p.w }}" height="{{ p.h }}" viewBox="0 0 {{ p.w }} {{ p.h }}">
<rect x="{{ p.x0 }}" y="{{ p.y0 }}" width="{{ p.pw }}" height="{{ p.ph }}" fill="none" stroke="#999"/>
<line x1="{{ p.x0 }}" y1="{{ p.zero }}" x2="{{ p.x0 + p.pw }}" y2="{{ p.zero }}" stroke="#ccc"/>
{% for line in p.lines %}<polyline points="{{ line.points }}" fill="none" stroke="{{ line.colour }}" stroke-width="2"/>{% endfor %}
<text x="{{ p.x0 }}" y="{{ p.h - 4 }}" font-size="10">{{ p.xmin }}</text>
<text x="{{ p.x0 + p.pw }}" y="{{ p.h - 4 }}" font-size="10" text-anchor="end">{{ p.xmax }}</text>
<text x="{{ p.x0 - 3 }}" y="{{ p.y0 + 9 }}" font-size="10" text-anchor="end">{{ p.ymax }}</text>
<text x="{{ p.x0 - 3 }}" y="{{ p.y0 + p.ph }}" font-size="10" text-anchor="end">{{ p.ymin }}</text>
</svg><figcaption>{{ p.name }}</figcaption></figure>{% endfor %}
{% if hidden %}<p class="xai-muted">{{ hidden }} more features not drawn.</p>{% endif %}
<details><summary>Values</summary>
<div class="xai-table-wrap"><table class="xai-sortable">
<thead><tr><th>feature</th><th>value</th>{% for o in outputs %}<th>{{ o }}</th>{% endfor %}<th>rows in bin</th></tr></thead>
<tbody>{% for row in rows %}<tr>{% for cell in row %}<td>{{ cell }}</td>{% endfor %}</tr>
{% endfor %}</tbody></table></div></details>
</div>""",
}


@cache
def _env() -> Any:
    return environment(_TEMPLATES)


def render_permutation_importance(r: Any) -> str:
    """A bar per feature (mean, with a line from mean - std to mean + std) and the table."""
    order = r.order()[:_MAX_FEATURES]
    mean, std = r.importances_mean, r.importances_std
    lo = float(min(0.0, np.min(mean[order] - std[order]))) if len(order) else 0.0
    hi = float(max(0.0, np.max(mean[order] + std[order]))) if len(order) else 1.0
    span = hi - lo or 1.0
    left, width = 160, 320
    scale = width / span
    zero = left + (0 - lo) * scale
    bars = []
    for i, j in enumerate(order):
        x0, x1 = sorted((zero, left + (mean[j] - lo) * scale))
        bars.append(
            {
                "name": r.feature_names[j],
                "value": format_number(mean[j]),
                "x": round(x0, 2),
                "w": round(x1 - x0, 2),
                "y": 4 + 18 * i,
                "lo": round(left + (mean[j] - std[j] - lo) * scale, 2),
                "hi": round(left + (mean[j] + std[j] - lo) * scale, 2),
            }
        )
    rows = [(r.feature_names[j], format_number(mean[j]), format_number(std[j])) for j in order]
    return (
        _env()
        .get_template("importance")
        .render(
            uid=new_id("global-pi"),
            r=r,
            baseline=format_number(r.baseline),
            w=left + width + 10,
            h=8 + 18 * len(order),
            zero=round(zero, 2),
            bars=bars,
            rows=rows,
            hidden=len(r.feature_names) - len(order),
        )
    )


def _panel(name: str, x: np.ndarray, ys: np.ndarray, shown: list[int]) -> dict:
    w, h, x0, y0, pw, ph = 240, 160, 44, 6, 188, 130
    lo, hi = float(np.min(ys[:, shown])), float(np.max(ys[:, shown]))
    if hi - lo < 1e-12:
        lo, hi = lo - 1.0, hi + 1.0
    xl, xh = float(x[0]), float(x[-1])
    xs = x0 + (x - xl) / ((xh - xl) or 1.0) * pw

    def ypix(v: Any) -> Any:
        return y0 + (hi - v) / (hi - lo) * ph

    lines = [
        {
            "points": " ".join(f"{a:.2f},{b:.2f}" for a, b in zip(xs, ypix(ys[:, o]))),
            "colour": _COLOURS[i % len(_COLOURS)],
        }
        for i, o in enumerate(shown)
    ]
    return {
        "name": name,
        "w": w,
        "h": h,
        "x0": x0,
        "y0": y0,
        "pw": pw,
        "ph": ph,
        "zero": round(float(min(max(ypix(0.0), y0), y0 + ph)), 2),
        "lines": lines,
        "xmin": format_number(xl),
        "xmax": format_number(xh),
        "ymin": format_number(lo),
        "ymax": format_number(hi),
    }


def render_ale(r: Any) -> str:
    """One panel per feature (a line per output, at most six), and the values in a table."""
    shown = list(range(min(len(r.output_names), len(_COLOURS))))
    panels = [
        _panel(r.features[f], r.edges[f], r.effects[f], shown)
        for f in range(min(len(r.features), _MAX_PANELS))
    ]
    legend = (
        [{"name": r.output_names[o], "colour": _COLOURS[o]} for o in shown]
        if len(r.output_names) > 1
        else []
    )
    rows = []
    for f, name in enumerate(r.features[:_MAX_PANELS]):
        size = np.concatenate([[0], r.counts[f]])
        for i, v in enumerate(r.edges[f]):
            rows.append(
                [name, format_number(v)]
                + [format_number(e) for e in r.effects[f][i]]
                + [format_number(int(size[i]))]
            )
    return (
        _env()
        .get_template("ale")
        .render(
            uid=new_id("global-ale"),
            r=r,
            n_features=len(r.features),
            legend=legend,
            panels=panels,
            hidden=len(r.features) - len(panels),
            outputs=list(r.output_names),
            rows=rows,
        )
    )
