"""The HTML view: a static SVG scatter (readable without JavaScript) plus a canvas view.

The report section registers ``projector.js`` as its script, so reports (which allow it by
hash in their Content-Security-Policy), notebook output and :meth:`Projection.to_html` all
carry it: it draws every point on a canvas and adds search, hover, click-for-neighbours,
zoom and pan, colour by any column and, for 3-D projections, an orthographic 3-D view that
rotates, reading the data from the view's ``application/json`` block. Without JavaScript
the SVG scatter (in the colours of ``color_by``), its legend or colour bar and the summary
stand alone.
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
    scoped_css,
    script_hash,
    to_pixels,
)
from xai_projector.colors import (
    MAX_LEGEND,
    MISSING_COLOR,
    PALETTE,
    SCALE,
    column_colors,
    encode_column,
)
from xai_projector.display import as_view, view_settings

__all__ = [
    "MAX_DRAWN_LABELS",
    "MAX_SNAPSHOT_VALUES",
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
#: Labels drawn next to points ("Label by"): selection and matches first, then points in sight.
MAX_DRAWN_LABELS = 200
#: t-SNE snapshots in the view: at most this many point positions in all (n_samples x frames);
#: beyond it, evenly spaced frames (the last always).
MAX_SNAPSHOT_VALUES = 500_000
#: Neighbours listed on click (cosine, in the original space).
VIEW_NEIGHBORS = 8
#: Metadata columns shown on hover, and characters per value.
MAX_COLUMNS, MAX_CHARS = 3, 60
_COORD_SCALE = 10000
_W, _H, _PAD = 640, 480, 12


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


def _scaled(coords: np.ndarray) -> tuple[np.ndarray, ...]:
    """The components as ints, the first two in [0, 10000] on one scale for both axes.

    A third component (for the 3-D view) is centred on 5000 with the same scale, so the
    three axes keep their proportions.
    """
    xy = coords[:, :2]
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    span = float(np.max(hi - lo)) or 1.0
    centre = (lo + hi) / 2
    scaled = np.rint(((xy - centre) / span + 0.5) * _COORD_SCALE).astype(np.int64)
    out = [scaled[:, 0], scaled[:, 1]]
    if coords.shape[1] == 3:
        z = coords[:, 2]
        mid = (z.min() + z.max()) / 2
        out.append(np.rint(((z - mid) / span + 0.5) * _COORD_SCALE).astype(np.int64))
    return tuple(out)


def _thumbnails(images: np.ndarray | None) -> list[str] | None:
    if images is None or images.shape[0] > MAX_THUMBNAILS:
        return None
    return [png_data_uri(p) for p in to_pixels(images)]


def _snapshots(p: Any) -> dict[str, Any] | None:
    """The t-SNE snapshots the view animates: iterations and each frame's scaled x and y."""
    kept = p.snapshots
    if kept is None:
        return None
    iterations, frames = kept
    count = max(2, min(len(frames), MAX_SNAPSHOT_VALUES // max(1, len(p))))
    chosen = np.unique(np.rint(np.linspace(0, len(frames) - 1, count)).astype(int))
    scaled = [_scaled(frames[j]) for j in chosen]
    return {
        "frames": chosen.tolist(),
        "iterations": [int(iterations[j]) for j in chosen],
        "x": [f[0].tolist() for f in scaled],
        "y": [f[1].tolist() for f in scaled],
    }


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


def _summary(p: Any, dims: int) -> list[tuple[str, str]]:
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
    if p.n_components == 3:
        shown = (
            "3-D (drag to rotate)" if dims == 3 else "components 1 and 2 of 3 (3-D view: tick 3-D)"
        )
        rows.append(("shown", shown + "; the static picture shows components 1 and 2"))
    for key in ("kl_divergence", "axes_cosine", "layer", "backend"):
        if p.meta.get(key) is not None:
            rows.append((key.replace("_", " "), str(p.meta[key])))
    if p.meta.get("options"):
        rows.append(("options", json.dumps(p.meta["options"], sort_keys=True, default=str)))
    return rows


_TEMPLATE = """\
<div class="xai-projector" id="{{ uid }}" style="font:13px/1.4 system-ui,sans-serif;color:var(--xai-fg,#1b1b1b)">
<table class="xai-kv" style="border-collapse:collapse;margin:0 0 .5em"><tbody>
{% for key, value in summary %}
<tr><th scope="row" style="text-align:left;padding:1px 12px 1px 0;font-weight:600">{{ key }}</th><td style="text-align:left"><bdi>{{ value }}</bdi></td></tr>
{% endfor %}
</tbody></table>
<script type="text/html" class="xai-live">
<div class="xai-projector-controls" role="group" aria-label="View controls" hidden style="margin:0 0 .4em;display:flex;flex-wrap:wrap;gap:6px 12px;align-items:center">
<label>Colour by <select class="xai-projector-color" style="{{ control }}">
{% for option in color_options %}<option value="{{ option.value }}"{% if option.selected %} selected{% endif %}>{{ option.name }}</option>
{% endfor %}</select></label>
<span role="group" aria-label="Zoom">
<button type="button" class="xai-projector-zoom-in" aria-label="Zoom in" title="Zoom in (+)" style="{{ control }}">+</button>
<button type="button" class="xai-projector-zoom-out" aria-label="Zoom out" title="Zoom out (-)" style="{{ control }}">&#8722;</button>
<button type="button" class="xai-projector-reset" title="Reset the view (0)" style="{{ control }}">Reset view</button>
</span>
{% if three_d %}<label><input type="checkbox" class="xai-projector-3d"{% if dims == 3 %} checked{% endif %}> 3-D view</label>{% endif %}
<label>Label by <select class="xai-projector-label-by" style="{{ control }}">
{% for option in label_options %}<option value="{{ option.value }}"{% if option.selected %} selected{% endif %}>{{ option.name }}</option>
{% endfor %}</select></label>
{% if snapshots %}<span role="group" aria-label="t-SNE iterations">
<button type="button" class="xai-projector-play" aria-pressed="false" style="{{ control }}">Play</button>
<label>Iteration <input type="range" class="xai-projector-frame" min="0" max="{{ snapshots - 1 }}" value="{{ snapshots - 1 }}" step="1"></label>
<output class="xai-projector-iteration" aria-live="off"></output>
</span>{% endif %}
{% if has_thumbs %}<label><input type="checkbox" class="xai-projector-thumbs"{% if thumbnails %} checked{% endif %}> Thumbnails</label>{% endif %}
<span role="group" aria-label="Bookmarks">
<label>Bookmarks <select class="xai-projector-bookmarks" style="{{ control }}">
<option value="">(choose a view)</option>
{% for b in bookmarks %}<option value="{{ loop.index0 }}">{{ b }}</option>
{% endfor %}</select></label>
<button type="button" class="xai-projector-bookmark" title="Add the current view to the Bookmarks menu (kept in this page until it is closed)" style="{{ control }}">Bookmark view</button>
</span>
</div>
</script>
<div class="xai-projector-panes" style="display:flex;flex-wrap:wrap;gap:0 24px;align-items:flex-start">
<div class="xai-projector-plot" style="flex:0 1 {{ w + 2 }}px;min-width:0;max-width:100%">
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
<script type="text/html" class="xai-live">
<canvas class="xai-projector-canvas" hidden tabindex="0" role="img" aria-label="{{ caption }}. {{ help }}" style="width:{{ w }}px;height:{{ h }}px;max-width:100%;border:1px solid #ddd;background:#fff;cursor:crosshair;touch-action:none"></canvas>
<div class="xai-projector-tip" hidden style="position:absolute;pointer-events:none;background:var(--xai-bg,#fff);color:var(--xai-fg,#1b1b1b);border:1px solid #999;padding:2px 4px;max-width:320px;font-size:12px"></div>
</script>
</div>
{% if static_note %}<p class="xai-projector-static-note" style="color:var(--xai-muted,#555);font-size:12px">{{ static_note }}</p>{% endif %}
<div class="xai-projector-legend" aria-live="polite">
{% if legend %}
<p class="xai-projector-legend-title" style="margin:.3em 0 .1em">Colour: <bdi>{{ legend.name }}</bdi></p>
{% if legend.kind == "cat" %}
<ul class="xai-projector-legend-items" style="list-style:none;padding:0;margin:.2em 0;display:flex;flex-wrap:wrap;gap:4px 14px">
{% for item in legend.entries %}
<li><span class="xai-projector-swatch" style="display:inline-block;width:10px;height:10px;background:{{ item.color }};margin-right:4px"></span><bdi class="xai-projector-legend-name">{{ item.name }}</bdi> <span style="color:var(--xai-muted,#555)">({{ item.count }})</span></li>
{% endfor %}
{% if legend.more %}<li>+ {{ legend.more }} more values (colours repeat)</li>{% endif %}
</ul>
{% else %}
<div class="xai-projector-colorbar" style="display:flex;align-items:center;gap:6px;margin:.2em 0">
<span class="xai-projector-cbar-min">{{ legend.min }}</span><img src="{{ legend.bar|svg_uri }}" width="256" height="12" alt="colour scale from {{ legend.min }} to {{ legend.max }}" style="border:1px solid var(--xai-line,#999)"><span class="xai-projector-cbar-max">{{ legend.max }}</span>
</div>
{% if legend.missing %}<p>{{ legend.missing }} missing values in grey</p>{% endif %}
{% endif %}
{% endif %}
</div>
</div>
<div class="xai-projector-side" style="flex:1 1 320px;min-width:0;max-width:100%">
<script type="text/html" class="xai-live">
<div class="xai-projector-ui" hidden>
<label>Search by <select class="xai-projector-search-by" style="{{ control }}">
{% for option in search_options %}<option value="{{ option.value }}"{% if option.selected %} selected{% endif %}>{{ option.name }}</option>
{% endfor %}</select></label>
<label>for <input type="search" class="xai-projector-search" placeholder="substring or pattern" style="width:16em;max-width:100%;{{ control }}"></label>
<label><input type="checkbox" class="xai-projector-regex"> regular expression</label>
<span class="xai-projector-status" aria-live="polite" style="margin-left:1em;color:var(--xai-muted,#555)"></span>
<ol class="xai-projector-results" style="max-height:12em;overflow:auto;margin:.3em 0"></ol>
<div class="xai-projector-detail" aria-live="polite"></div>
<p style="color:var(--xai-muted,#555);font-size:12px">Click a point to list its nearest neighbours; hover for its label and metadata. {{ help }}</p>
</div>
</script>
</div>
</div>
<script type="application/json" class="xai-projector-data">{{ data|json_script }}</script>
</div>
"""

#: Inline style of the view's buttons, select and search box: the theme's colours.
_CONTROL = (
    "font:inherit;color:var(--xai-fg,#1b1b1b);background:var(--xai-bg,#fff);"
    "border:1px solid var(--xai-line,#999);border-radius:3px;padding:1px 8px"
)
_HELP = (
    "Wheel or pinch to zoom, drag to pan (in 3-D, drag to rotate and shift-drag to pan); "
    "with the plot focused, + and - zoom, the arrow keys pan (rotate in 3-D) and 0 resets."
)
_FSI, _PDI = "\u2068", "\u2069"


_PAGE = (
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
    '<meta http-equiv="Content-Security-Policy" content="{{ csp }}">\n'
    '<meta name="referrer" content="no-referrer">\n<meta name="color-scheme" content="light dark">\n'
    "<title>{{ title }}</title>\n<style>{{ css }}</style>\n</head>\n"
    '<body style="margin:0">\n<div class="{{ scope }} xai-root" style="padding:1em 2em;min-height:100vh">\n'
    '<h1 style="font:600 18px system-ui,sans-serif">{{ title }}</h1>\n{{ body }}\n</div>\n'
    "<script>{{ js }}</script>\n</body>\n</html>\n"
)


def _colorings(p: Any, codes: np.ndarray | None) -> list[dict[str, Any]]:
    """Every column's colouring; the labels' codes are the view's ``label`` array (not repeated)."""
    out = []
    for name, values in p.columns.items():
        is_label = p.labels is not None and values is p.labels
        enc = encode_column(name, values, _short, categorical=is_label)
        if is_label:
            enc["codes"] = None  # the script takes d.label
        if enc["kind"] == "num":  # the text drawn by "Label by" (categories have classes)
            enc["text"] = [_short(v) for v in values.tolist()]
        out.append(enc)
    return out


def _colorbar_svg() -> str:
    stops = "".join(
        f'<stop offset="{j / 8:.3f}" stop-color="{SCALE[round(j * (len(SCALE) - 1) / 8)]}"/>'
        for j in range(9)
    )
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="256" height="12">'
        f'<defs><linearGradient id="g">{stops}</linearGradient></defs>'
        '<rect width="256" height="12" fill="url(#g)"/></svg>'
    )


def _legend(enc: dict[str, Any] | None) -> dict[str, Any] | None:
    """The static legend of one colouring: palette items, or a colour bar with its range."""
    if enc is None:
        return None
    if enc["kind"] == "cat":
        items = [
            {"name": name, "count": f"{count:,}", "color": PALETTE[j % len(PALETTE)]}
            for j, (name, count) in enumerate(
                zip(enc["classes"][:MAX_LEGEND], enc["counts"][:MAX_LEGEND], strict=True)
            )
        ]
        return {"name": enc["name"], "kind": "cat", "entries": items,
                "more": max(0, len(enc["classes"]) - MAX_LEGEND)}  # fmt: skip
    return {
        "name": enc["name"],
        "kind": "num",
        "min": enc["min_text"],
        "max": enc["max_text"],
        "missing": enc["missing"],
        "bar": _colorbar_svg(),
    }


def _js_state(
    state: Any, names: list[str], search_names: list[str], frames: list[int]
) -> dict[str, Any]:
    """A :class:`~xai_projector.state.ViewState` as the script reads it: columns as indices,
    the snapshot as the index of the page's nearest frame (``frames``: snapshot indices)."""

    def at(values: list[str], name: Any) -> int:
        return values.index(name) if name in values else -1

    return {
        "name": state.name,
        "dims": state.dims,
        "k": state.zoom,
        "tx": state.pan_x,
        "ty": state.pan_y,
        "yaw": state.yaw,
        "pitch": state.pitch,
        "selected": -1 if state.selected is None else state.selected,
        "search": state.search,
        "regex": state.regex,
        "search_by": at(search_names, state.search_by),
        "color": at(names, state.color_by),
        "label": at(names, state.label_by),
        "thumbs": state.thumbnails,
        "frame": -1 if state.frame is None else frames.index(state.frame),
    }


def _on_frame(state: Any, frames: list[int]) -> Any:
    """``state`` with its snapshot moved to the nearest one the page carries."""
    if state.frame is None or not frames or state.frame in frames:
        return state
    from dataclasses import replace

    return replace(state, frame=min(frames, key=lambda f: abs(f - state.frame)))


def _data_and_points(view: Any) -> dict[str, Any]:
    p, color_by, dims = view.projection, view.color_by, view.dims
    n = len(p)
    k = min(VIEW_NEIGHBORS, n - 1)
    scaled = _scaled(p.coordinates)
    x, y = scaled[0], scaled[1]
    nb = p.neighbors(k, "cosine", progress=p.meta.get("progress", False) and n > 20000)
    codes = classes = None
    if p.labels is not None:
        classes, codes = np.unique(p.labels.astype(str), return_inverse=True)
        codes = codes.ravel()
    columns = {
        name: [_short(v) for v in values.tolist()]
        for name, values in list(p.metadata.items())[:MAX_COLUMNS]
    }
    colorings = _colorings(p, codes)
    names = [c["name"] for c in colorings]
    chosen = names.index(color_by) if color_by in names else -1
    data = {
        "n": n,
        "k": k,
        "metric": nb.metric,
        "x": x.tolist(),
        "y": y.tolist(),
        "z": scaled[2].tolist() if len(scaled) == 3 else None,
        "dims": dims,
        "label": None if codes is None else codes.tolist(),
        "classes": None if classes is None else [str(c) for c in classes],
        "colors": list(PALETTE),
        "max_legend": MAX_LEGEND,
        "scale": list(SCALE),
        "missing": MISSING_COLOR,
        "colorings": colorings,
        "columns": columns,
        "column_names": list(columns),  # the order (a JSON object puts keys such as "1" first)
        "nbr": nb.indices.ravel().tolist(),
        "dist": [float(f"{v:.4g}") for v in nb.distances.ravel().tolist()],
        "thumbs": _thumbnails(p.images),
        "heatmaps": _heatmaps(p),
        "max_labels": MAX_DRAWN_LABELS,
        "snapshots": _snapshots(p),
    }
    search_names = (["label"] if p.labels is not None else []) + list(columns)
    frames = data["snapshots"]["frames"] if data["snapshots"] else []
    data["state"] = _js_state(_on_frame(view.state, frames), names, search_names, frames)
    data["bookmarks"] = [
        _js_state(_on_frame(b, frames), names, search_names, frames)
        for b in view.bookmarks.values()
    ]
    # The static SVG: a seeded sample of points in the colours the script starts with.
    m = min(n, MAX_SVG_POINTS)
    rng = np.random.default_rng(p.meta.get("seed", 0))
    shown = np.sort(rng.choice(n, size=m, replace=False)) if m < n else np.arange(n)
    sx = _PAD + x[shown] / _COORD_SCALE * (_W - 2 * _PAD)
    sy = _PAD + (1 - y[shown] / _COORD_SCALE) * (_H - 2 * _PAD)
    enc = None
    if chosen >= 0:
        enc = dict(colorings[chosen])
        if enc.get("codes", 0) is None:
            enc["codes"] = data["label"]
        colors = column_colors(enc)[shown]
    else:
        colors = np.full(m, PALETTE[0], dtype=object)
    points = [
        {"x": round(float(a), 1), "y": round(float(b), 1), "color": c}
        for a, b, c in zip(sx.tolist(), sy.tolist(), colors.tolist(), strict=True)
    ]
    options = [
        {"value": j, "name": _FSI + name + _PDI, "selected": j == chosen}
        for j, name in enumerate(names)
    ]
    options.append({"value": -1, "name": "one colour", "selected": chosen < 0})
    labelled = names.index(view.label_by) if view.label_by in names else -1
    label_options = [
        {"value": j, "name": _FSI + name + _PDI, "selected": j == labelled}
        for j, name in enumerate(names)
    ]
    label_options.append({"value": -1, "name": "no labels", "selected": labelled < 0})
    return {
        "label_options": label_options,
        "data": data,
        "points": points,
        "legend": _legend(enc),
        "options": options,
        "search_options": _search_options(view, search_names),
        "shown": m,
    }


def _search_options(view: Any, names: list[str]) -> list[dict[str, Any]]:
    """The "Search by" choices: the labels, each metadata column the view carries, all of them.

    Option ``j`` is the script's searchable column ``j`` (the labels first, when there are
    any); ``-1`` is every column. The view state's ``search_by`` is selected (by default the
    first of the projection's :attr:`~Projection.search_fields`, as :meth:`Projection.search`
    searches).
    """
    by = view.state.search_by
    chosen = names.index(by) if by in names else -1
    options = [
        {"value": j, "name": _FSI + name + _PDI, "selected": j == chosen}
        for j, name in enumerate(names)
    ]
    options.append({"value": -1, "name": "all columns", "selected": chosen < 0})
    return options


def render_projection(p: Any) -> str:
    """The view of a Projection or ProjectionView as an HTML fragment without script.

    Every user string is escaped: into text by Jinja2, into the JSON block by
    :func:`~xai_core.report.json_for_script`; names and values sit in ``<bdi>`` (or between
    U+2068 and U+2069 where no element can go), so a bidi override stays inside them.
    """
    view = as_view(p)
    p, dims = view.projection, view.dims
    parts = _data_and_points(view)
    n, m = len(p), parts["shown"]
    note = "Without JavaScript: a static scatter"
    note += f" of {m:,} sampled points of {n:,}" if m < n else f" of all {n:,} points"
    note += " (components 1 and 2)." if p.n_components == 3 else "."
    caption = f"{p.method} projection of {n:,} points"
    return (
        _env()
        .get_template("view")
        .render(
            uid=new_id("proj"),
            summary=_summary(p, dims),
            w=_W,
            h=_H,
            caption=caption,
            points=parts["points"],
            static_note=note,
            legend=parts["legend"],
            color_options=parts["options"],
            label_options=parts["label_options"],
            has_thumbs=parts["data"]["thumbs"] is not None,
            snapshots=len((parts["data"]["snapshots"] or {}).get("iterations", [])),
            thumbnails=view.thumbnails,
            bookmarks=[_FSI + name + _PDI for name in view.bookmarks],
            search_options=parts["search_options"],
            three_d=p.n_components == 3,
            dims=dims,
            control=_CONTROL,
            help=_HELP,
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
    """A whole HTML page: the view and its script, allowed by hash in the page's CSP.

    The page carries the report's style sheet, so it follows ``prefers-color-scheme``.
    """
    js = script()
    csp = (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src {script_hash(js)}; base-uri 'none'; form-action 'none'"
    )
    projection = view_settings(p)[0]
    scope = f"xai-scope-{new_id('page')}"
    return (
        _env()
        .get_template("page")
        .render(
            csp=csp,
            title=title or f"{projection.method} projection of {len(projection):,} points",
            scope=scope,
            css=scoped_css(scope),
            body=Markup(render_projection(p)),
            js=Markup(js),
        )
    )
