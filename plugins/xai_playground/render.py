"""HTML of a PlaygroundView: the network with a surface per neuron, the decision surface with the points, the loss curves.

Inline SVG with the surfaces as PNG data URIs (the report's diverging colours: the
positive class and positive activations red, the negative blue); everything user-supplied
(feature names) is escaped by the Jinja2 environment.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from xai_core.report import (
    NEGATIVE,
    POSITIVE,
    diverging,
    environment,
    format_number,
    isolate,
    new_id,
    png_data_uri,
)

__all__ = ["render_playground", "surface_uri"]

_NODE, _GAP_X, _GAP_Y, _PAD = 34, 70, 10, 18
_MAIN = 260
_MAX_POINTS = 600
#: Colours of the neurons in the regions map.
_REGION_COLOURS = np.array(
    [
        [31, 119, 180],
        [255, 127, 14],
        [44, 160, 44],
        [148, 103, 189],
        [140, 86, 75],
        [227, 119, 194],
        [127, 127, 127],
        [188, 189, 34],
    ],
    dtype=np.uint8,
)

_TEMPLATES = {
    "playground": """
<div class="xai-playground" id="{{ uid }}">
<p>{{ summary }}</p>
<div style="display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start">
<svg role="img" aria-label="network: a surface per neuron, links by weight" width="{{ net.w }}" height="{{ net.h }}" viewBox="0 0 {{ net.w }} {{ net.h }}">
{% for l in net.links %}<line x1="{{ l.x1 }}" y1="{{ l.y1 }}" x2="{{ l.x2 }}" y2="{{ l.y2 }}" stroke="{{ l.colour }}" stroke-width="{{ l.width }}" opacity="0.7"><title>weight {{ l.title }}</title></line>
{% endfor %}{% for n in net.nodes %}<image href="{{ n.uri }}" x="{{ n.x }}" y="{{ n.y }}" width="{{ size }}" height="{{ size }}" preserveAspectRatio="none" style="image-rendering:pixelated"><title>{{ n.label }}</title></image><rect x="{{ n.x }}" y="{{ n.y }}" width="{{ size }}" height="{{ size }}" fill="none" stroke="#555"/>
{% endfor %}{% for t in net.labels %}<text x="{{ t.x }}" y="{{ t.y }}" font-size="10" text-anchor="{{ t.anchor }}">{{ t.text }}</text>
{% endfor %}</svg>
<svg role="img" aria-label="decision surface with train and test points" width="{{ main }}" height="{{ main }}" viewBox="0 0 {{ main }} {{ main }}" data-bounds="{{ bounds }}">
<image href="{{ output_uri }}" x="0" y="0" width="{{ main }}" height="{{ main }}" preserveAspectRatio="none"/>
{% for p in points %}<circle cx="{{ p.x }}" cy="{{ p.y }}" r="{{ 3 if p.train else 3.5 }}" fill="{{ p.fill if p.train else 'none' }}" stroke="{{ 'white' if p.train else p.fill }}" stroke-width="{{ 0.8 if p.train else 1.6 }}"/>
{% endfor %}<rect x="0" y="0" width="{{ main }}" height="{{ main }}" fill="none" stroke="#555"/>
</svg>
{% if curve %}<svg role="img" aria-label="train and test loss per epoch" width="{{ curve.w }}" height="{{ curve.h }}" viewBox="0 0 {{ curve.w }} {{ curve.h }}">
<rect x="{{ curve.x0 }}" y="4" width="{{ curve.pw }}" height="{{ curve.ph }}" fill="none" stroke="#999"/>
<polyline points="{{ curve.train }}" fill="none" stroke="#333" stroke-width="2"/>
{% if curve.test %}<polyline points="{{ curve.test }}" fill="none" stroke="#999" stroke-width="2" stroke-dasharray="4 2"/>{% endif %}
<text x="{{ curve.x0 - 3 }}" y="14" font-size="10" text-anchor="end">{{ curve.ymax }}</text>
<text x="{{ curve.x0 - 3 }}" y="{{ curve.ph + 4 }}" font-size="10" text-anchor="end">0</text>
<text x="{{ curve.x0 + curve.pw }}" y="{{ curve.ph + 16 }}" font-size="10" text-anchor="end">epoch {{ curve.last }}</text>
<text x="{{ curve.x0 }}" y="{{ curve.h - 2 }}" font-size="10">loss: train (solid) {{ curve.train_last }}{% if curve.test %}, test (dashed) {{ curve.test_last }}{% endif %}</text>
</svg>{% endif %}
{% if regions %}<figure style="margin:0"><img src="{{ regions.uri }}" width="130" height="130" alt="regions of the plane by neuron" style="image-rendering:pixelated;border:1px solid #555"><figcaption style="max-width:260px;font-size:11px">Which neuron of the last hidden layer pushes the output most at each point: {% for l in regions.legend %}<span style="color:{{ l.colour }}">&#9632;</span> {{ l.text }} {% endfor %}</figcaption></figure>{% endif %}
</div>
<p class="xai-muted">Colours: red is the positive class (or a positive activation), blue the negative; filled points train, rings test. Links: width by |weight|, red positive, blue negative.</p>
</div>""",
}


@cache
def _env():
    return environment(_TEMPLATES)


def _hex(rgb: np.ndarray) -> str:
    r, g, b = (int(round(v)) for v in rgb)
    return f"#{r:02x}{g:02x}{b:02x}"


def surface_uri(values: np.ndarray, vmax: float | None = None) -> str:
    """A surface of shape (rows, cols) as a PNG on the diverging colours, ``vmax`` full colour."""
    v = np.asarray(values, dtype=np.float64)
    scale = float(np.abs(v).max()) if vmax is None else float(vmax)
    rgb = np.clip(np.rint(diverging(v, scale if scale > 0 else 1.0)), 0, 255).astype(np.uint8)
    return png_data_uri(rgb)


def _network(view: Any) -> dict[str, Any]:
    columns = [view.inputs, *view.neurons]
    names = [list(view.features)] + [
        [f"layer {k + 1} neuron {j + 1}" for j in range(len(n))] for k, n in enumerate(view.neurons)
    ]
    height = max(len(c) for c in columns) * (_NODE + _GAP_Y) + 2 * _PAD
    nodes, centres, labels = [], [], []
    for c, surfaces in enumerate(columns):
        x = _PAD + 40 + c * (_NODE + _GAP_X)
        top = (height - len(surfaces) * (_NODE + _GAP_Y) + _GAP_Y) / 2
        col = []
        for j, s in enumerate(surfaces):
            y = top + j * (_NODE + _GAP_Y)
            vmax = None if c else float(np.abs(s).max())
            nodes.append({"uri": surface_uri(s, vmax), "x": x, "y": y, "label": names[c][j]})
            col.append((x, y + _NODE / 2))
            if c == 0:
                labels.append(
                    {"x": x - 4, "y": y + _NODE / 2 + 3, "text": names[0][j], "anchor": "end"}
                )
        centres.append(col)
    x_out = _PAD + 40 + len(columns) * (_NODE + _GAP_X)
    centres.append([(x_out, height / 2)])
    labels.append({"x": x_out + 4, "y": height / 2 + 3, "text": "output", "anchor": "start"})
    links = []
    wmax = max((float(np.abs(w).max()) for w in view.weights), default=1.0) or 1.0
    for k, w in enumerate(view.weights):
        src, dst = centres[k], centres[k + 1]
        wk = w if k < len(view.weights) - 1 else w[:, -1:] - (w[:, :1] if w.shape[1] == 2 else 0)
        for a in range(min(len(src), wk.shape[0])):
            for b in range(min(len(dst), wk.shape[1])):
                value = float(wk[a, b])
                links.append(
                    {
                        "x1": src[a][0] + _NODE,
                        "y1": src[a][1],
                        "x2": dst[b][0],
                        "y2": dst[b][1],
                        "width": f"{0.4 + 5.0 * abs(value) / wmax:.2f}",
                        "colour": _hex(POSITIVE if value >= 0 else NEGATIVE),
                        "title": format_number(value),
                    }
                )
    return {"w": x_out + 50, "h": height, "nodes": nodes, "links": links, "labels": labels}


def _points(view: Any) -> list[dict[str, Any]]:
    out = []
    e = view.extent
    sets = [(view.X, view.y, True)]
    if view.X_test is not None and view.show_test:
        sets.append((view.X_test, view.y_test, False))
    lo, hi = (0.0, 1.0) if view.classification else (float(view.y.min()), float(view.y.max()))
    for X, y, train in sets:
        step = max(1, len(X) // _MAX_POINTS)
        for (px, py), label in zip(X[::step], y[::step]):
            positive = label >= (0.5 if view.classification else (lo + hi) / 2)
            out.append(
                {
                    "x": f"{(px + e) / (2 * e) * _MAIN:.1f}",
                    "y": f"{(e - py) / (2 * e) * _MAIN:.1f}",
                    "fill": _hex(POSITIVE if positive else NEGATIVE),
                    "train": train,
                }
            )
    return out


def _curve(view: Any) -> dict[str, Any] | None:
    if not view.losses:
        return None
    epochs = np.array([r["epoch"] for r in view.losses], dtype=np.float64)
    train = np.array([r["train"] for r in view.losses])
    test = np.array([r.get("test", np.nan) for r in view.losses])
    top = float(np.nanmax(np.concatenate([train, test]))) or 1.0
    box = {"x0": 36, "pw": 220, "ph": 90, "w": 270, "h": 120}
    span = max(epochs.max() - epochs.min(), 1.0)

    def line(values):
        xs = box["x0"] + (epochs - epochs.min()) / span * box["pw"]
        ys = 4 + (1 - np.nan_to_num(values) / top) * box["ph"]
        return " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys))

    has_test = bool(np.isfinite(test).all())
    return {
        **box,
        "train": line(train),
        "test": line(test) if has_test else "",
        "ymax": format_number(top, 3),
        "last": int(epochs[-1]),
        "train_last": format_number(train[-1], 3),
        "test_last": format_number(test[-1], 3) if has_test else "",
    }


def _regions(view: Any) -> dict[str, Any] | None:
    if not view.neurons:
        return None
    regions = view.regions()
    units = view.neurons[-1].shape[0]
    colours = _REGION_COLOURS[np.arange(units) % len(_REGION_COLOURS)]
    return {
        "uri": png_data_uri(colours[regions]),
        "legend": [{"colour": _hex(colours[k]), "text": f"neuron {k + 1}"} for k in range(units)],
    }


def render_playground(view: Any) -> str:
    """The view as an HTML fragment."""
    if view.classification:
        signed = 2.0 * view.output - 1.0
        what = "probability of the positive class"
    else:
        signed = view.output
        what = "output"
    if view.discretize:
        signed = np.where(signed >= 0, 1.0, -1.0)
        what = "predicted class" if view.classification else "sign of the output"
    output_uri = surface_uri(signed, 1.0 if view.classification or view.discretize else None)
    hidden = ", ".join(str(len(n)) for n in view.neurons) or "none"
    summary = (
        f"Inputs {', '.join(map(isolate, view.features))}; hidden layers {hidden}; surface: the {what} over "
        f"[-{format_number(view.extent)}, {format_number(view.extent)}]²; "
        f"{len(view.X)} train"
        + (f" and {len(view.X_test)} test" if view.X_test is not None else "")
        + " points"
        + ("" if view.show_test or view.X_test is None else " (test points hidden)")
        + (f"; epoch {int(view.losses[-1]['epoch'])}." if view.losses else ".")
    )
    e = view.extent
    return (
        _env()
        .get_template("playground")
        .render(
            uid=new_id("playground"),
            summary=summary,
            net=_network(view),
            size=_NODE,
            main=_MAIN,
            bounds=f"[{-e}, {e}, {-e}, {e}]",
            output_uri=output_uri,
            points=_points(view),
            curve=_curve(view),
            regions=_regions(view),
        )
    )
