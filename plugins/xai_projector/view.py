"""The HTML view: a static SVG scatter (readable without JavaScript) plus a canvas view.

The report section registers ``projector.js`` as its script, so reports (which allow it by
hash in their Content-Security-Policy), notebook output and :meth:`Projection.to_html` all
carry it: it draws every point on a canvas and adds search, hover and click-for-neighbours,
reading the data from the view's ``application/json`` block. Without JavaScript the SVG
scatter, legend and summary stand alone.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
from markupsafe import Markup

from xai_core.images import sample_layout
from xai_core.report import (
    environment,
    heatmap_rgb,
    new_id,
    png_data_uri,
    script_hash,
    to_pixels,
)

__all__ = [
    "MAX_SVG_POINTS",
    "MAX_THUMBNAILS",
    "VIEW_NEIGHBORS",
    "notebook_html",
    "render_projection",
    "script",
    "script_hash",
    "standalone_page",
]

#: Points drawn in the static SVG (a seeded sample beyond this); the canvas draws all.
MAX_SVG_POINTS = 2000
#: Thumbnails are embedded only up to this many points.
MAX_THUMBNAILS = 2000
#: Neighbours listed on click (cosine, in the original space).
VIEW_NEIGHBORS = 8
#: Metadata columns shown on hover, and characters per value.
MAX_COLUMNS, MAX_CHARS = 3, 60
_COORD_SCALE = 10000
_W, _H, _PAD = 640, 480, 12
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
    "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
)  # fmt: skip


@cache
def script() -> str:
    """The view's JavaScript (package data ``projector.js``)."""
    return resources.files("xai_projector").joinpath("projector.js").read_text("utf-8")


@cache
def _env():
    """The core's Jinja2 environment over this module's templates."""
    return environment({"view": _TEMPLATE, "page": _PAGE})


def _short(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def _scaled(coords: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first two components as ints in [0, 10000], one scale for both axes."""
    xy = coords[:, :2]
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    span = float(np.max(hi - lo)) or 1.0
    centre = (lo + hi) / 2
    scaled = np.rint(((xy - centre) / span + 0.5) * _COORD_SCALE).astype(np.int64)
    return scaled[:, 0], scaled[:, 1]


def _thumbnails(images: np.ndarray | None) -> list[str] | None:
    if images is None or images.shape[0] > MAX_THUMBNAILS:
        return None
    return [png_data_uri(p) for p in to_pixels(images)]


def _heatmaps(p: Any) -> list[str] | None:
    """Each point's attributions as a heatmap in the report's colours, if they are images."""
    e = p.explanation
    if e is None or len(p) > MAX_THUMBNAILS:
        return None
    layout = sample_layout(e.values.shape[1:], e.meta.get("image_shape"), square=True, strict=False)
    if layout is None or (len(e.values.shape) == 2 and layout.height < 4):
        return None
    rgb, _ = heatmap_rgb(layout.grey(e.values))
    return [png_data_uri(img) for img in rgb]


def _summary(p: Any) -> list[tuple[str, str]]:
    rows = [
        ("method", p.method),
        ("points", f"{len(p):,}"),
        ("dimensions", f"{p.vectors.shape[1]:,} → {p.n_components}"),
        ("seed", str(p.meta.get("seed"))),
        ("spherize", "yes" if p.meta.get("spherize") else "no"),
    ]
    evr = p.explained_variance_ratio
    if evr is not None:
        parts = ", ".join(f"{100 * v:.1f}%" for v in evr)
        rows.append(("variance explained", f"{parts} (total {100 * float(np.sum(evr)):.1f}%)"))
    for key in ("kl_divergence", "layer", "backend"):
        if p.meta.get(key) is not None:
            rows.append((key.replace("_", " "), str(p.meta[key])))
    if p.meta.get("options"):
        rows.append(("options", json.dumps(p.meta["options"], sort_keys=True, default=str)))
    if p.n_components == 3:
        rows.append(("shown", "components 1 and 2 of 3"))
    return rows


_TEMPLATE = """\
<div class="xai-projector" id="{{ uid }}" style="font:13px/1.4 system-ui,sans-serif">
<table class="xai-kv" style="border-collapse:collapse;margin:0 0 .5em"><tbody>
{% for key, value in summary %}
<tr><th scope="row" style="text-align:left;padding:1px 12px 1px 0;font-weight:600">{{ key }}</th><td>{{ value }}</td></tr>
{% endfor %}
</tbody></table>
<div style="position:relative;display:inline-block;max-width:100%">
{% set svg %}
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {{ w }} {{ h }}" width="{{ w }}" height="{{ h }}">
<title>{{ caption }}</title>
<rect width="100%" height="100%" fill="#fff"/>
{% for pt in points %}
<circle cx="{{ pt.x }}" cy="{{ pt.y }}" r="2" fill="{{ pt.color }}" fill-opacity="0.8"/>
{% endfor %}
</svg>
{% endset %}
<img class="xai-projector-svg" src="{{ svg|svg_uri }}" width="{{ w }}" height="{{ h }}" alt="{{ caption }}" style="max-width:100%;height:auto;border:1px solid #ddd;display:block">
<canvas class="xai-projector-canvas" hidden role="img" aria-label="{{ caption }}" style="width:{{ w }}px;height:{{ h }}px;max-width:100%;border:1px solid #ddd;cursor:crosshair"></canvas>
<div class="xai-projector-tip" hidden style="position:absolute;pointer-events:none;background:var(--xai-bg,#fff);color:var(--xai-fg,#1b1b1b);border:1px solid #999;padding:2px 4px;max-width:320px;font-size:12px"></div>
</div>
{% if static_note %}<p class="xai-projector-static-note" style="color:#555;font-size:12px">{{ static_note }}</p>{% endif %}
{% if legend %}
<ul class="xai-projector-legend" style="list-style:none;padding:0;margin:.3em 0;display:flex;flex-wrap:wrap;gap:4px 14px">
{% for item in legend %}
<li><span style="display:inline-block;width:10px;height:10px;background:{{ item.color }};margin-right:4px"></span>{{ item.name }} <span style="color:#777">({{ item.count }})</span></li>
{% endfor %}
{% if more_classes %}<li style="color:#777">+ {{ more_classes }} more labels (colours repeat)</li>{% endif %}
</ul>
{% endif %}
<div class="xai-projector-ui" hidden>
<label>Search labels and metadata <input type="search" class="xai-projector-search" placeholder="substring or pattern" style="width:16em"></label>
<label><input type="checkbox" class="xai-projector-regex"> regular expression</label>
<span class="xai-projector-status" aria-live="polite" style="margin-left:1em;color:#555"></span>
<ol class="xai-projector-results" style="max-height:12em;overflow:auto;margin:.3em 0"></ol>
<div class="xai-projector-detail" aria-live="polite"></div>
<p style="color:#777;font-size:12px">Click a point to list its nearest neighbours; hover for its label and metadata.</p>
</div>
<script type="application/json" class="xai-projector-data">{{ data|json_script }}</script>
</div>
"""


_PAGE = (
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
    '<meta http-equiv="Content-Security-Policy" content="{{ csp }}">\n'
    '<meta name="referrer" content="no-referrer">\n'
    '<title>{{ title }}</title>\n</head>\n<body style="margin:1em 2em">\n'
    '<h1 style="font:600 18px system-ui,sans-serif">{{ title }}</h1>\n{{ body }}\n'
    "<script>{{ js }}</script>\n</body>\n</html>\n"
)


def _data_and_points(p: Any) -> dict[str, Any]:
    n = len(p)
    k = min(VIEW_NEIGHBORS, n - 1)
    x, y = _scaled(p.coordinates)
    nb = p.neighbors(k, "cosine", progress=p.meta.get("progress", False) and n > 20000)
    codes = classes = None
    if p.labels is not None:
        classes, codes = np.unique(p.labels.astype(str), return_inverse=True)
        codes = codes.ravel()
    columns = {
        name: [_short(v) for v in values.tolist()]
        for name, values in list(p.metadata.items())[:MAX_COLUMNS]
    }
    data = {
        "n": n,
        "k": k,
        "metric": nb.metric,
        "x": x.tolist(),
        "y": y.tolist(),
        "label": None if codes is None else codes.tolist(),
        "classes": None if classes is None else [str(c) for c in classes],
        "colors": list(PALETTE),
        "columns": columns,
        "nbr": nb.indices.ravel().tolist(),
        "dist": [float(f"{v:.4g}") for v in nb.distances.ravel().tolist()],
        "thumbs": _thumbnails(p.images),
        "heatmaps": _heatmaps(p),
    }
    # The static SVG: a seeded sample of points, each with its text as a tooltip.
    m = min(n, MAX_SVG_POINTS)
    rng = np.random.default_rng(p.meta.get("seed", 0))
    shown = np.sort(rng.choice(n, size=m, replace=False)) if m < n else np.arange(n)
    sx = _PAD + x[shown] / _COORD_SCALE * (_W - 2 * _PAD)
    sy = _PAD + (1 - y[shown] / _COORD_SCALE) * (_H - 2 * _PAD)
    points = []
    for j, i in enumerate(shown.tolist()):
        parts = [f"#{i}"]
        if codes is not None:
            parts.append(str(classes[codes[i]]))
        parts += [f"{c}: {columns[c][i]}" for c in columns]
        color = PALETTE[codes[i] % len(PALETTE)] if codes is not None else PALETTE[0]
        points.append(
            {"x": round(float(sx[j]), 1), "y": round(float(sy[j]), 1), "color": color,
             "text": " · ".join(parts)}
        )  # fmt: skip
    legend, more = [], 0
    if codes is not None:
        counts = np.bincount(codes, minlength=len(classes))
        legend = [
            {
                "name": _short(str(c)),
                "count": f"{int(counts[j]):,}",
                "color": PALETTE[j % len(PALETTE)],
            }
            for j, c in enumerate(classes[: len(PALETTE) * 2])
        ]
        more = max(0, len(classes) - len(legend))
    return {"data": data, "points": points, "legend": legend, "more": more, "shown": m}


def render_projection(p: Any) -> str:
    """The view as an HTML fragment without script (every user string escaped)."""
    parts = _data_and_points(p)
    n, m = len(p), parts["shown"]
    note = "Without JavaScript: a static scatter"
    note += f" of {m:,} sampled points of {n:,}" if m < n else f" of all {n:,} points"
    note += " (hover a point for its label)."
    caption = f"{p.method} projection of {n:,} points"
    return (
        _env()
        .get_template("view")
        .render(
            uid=new_id("proj"),
            summary=_summary(p),
            w=_W,
            h=_H,
            caption=caption,
            points=parts["points"],
            static_note=note,
            legend=parts["legend"],
            more_classes=parts["more"],
            data=parts["data"],
        )
    )


def notebook_html(p: Any) -> str:
    """Notebook output: the report fragment, which carries the section's script."""
    from xai_core import UnknownNameError
    from xai_core.report import render_fragment

    try:
        return render_fragment(p)
    except UnknownNameError:  # the plugin's section is not registered (plugins not loaded)
        return render_projection(p) + "<script>" + script() + "</script>"


def standalone_page(p: Any, title: str | None = None) -> str:
    """A whole HTML page: the view and its script, allowed by hash in the page's CSP."""
    js = script()
    csp = (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src {script_hash(js)}; base-uri 'none'; form-action 'none'"
    )
    return (
        _env()
        .get_template("page")
        .render(
            csp=csp,
            title=title or f"{p.method} projection of {len(p):,} points",
            body=Markup(render_projection(p)),
            js=Markup(js),
        )
    )
