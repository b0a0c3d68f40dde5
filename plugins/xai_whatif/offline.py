"""The offline what-if editor of a report: a small native network's forward pass in the page's own script.

For a native network of Dense layers and ReLU / Tanh / Sigmoid / Linear / Softmax
activations (what ``xai.nn.mlp`` and ``xai.from_sklearn`` build), the what-if section
exports the weights and up to :data:`MAX_ROWS` rows as JSON, and ``whatif.js`` (a few KB,
allowed by hash in the report's Content-Security-Policy) re-scores a row when a value is
edited, without a kernel. The panel is laid out as the What-If Tool's datapoint editor:
the row's features (each value in its column's decimals, the data's range beside it, a
value outside that range marked) beside the results (prediction, outputs and the partial
dependence of the feature being edited, the current value marked); on a narrow pane the
results follow the editor. Other models (black boxes, convolutions, int8 networks) get
the static section only. Without JavaScript the panel shows the first row, its outputs
and its partial dependence as Python computed them.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import numpy as np
from markupsafe import Markup

import xai_core as xai
from xai_core.report import environment, format_number, isolate, new_id

__all__ = ["MAX_PARAMS", "MAX_ROWS", "export_network", "offline_html", "pd_curves", "pd_grid"]
__all__ += ["script"]

#: Largest network exported (parameters) and most rows carried to the page.
MAX_PARAMS = 50_000
MAX_ROWS = 50
#: At most this many features get an input box.
MAX_INPUTS = 60

_ACTIVATIONS = {"ReLU": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid", "Linear": "linear"}
_ACTIVATIONS["Softmax"] = "softmax"

_TEMPLATE = """
<div class="xai-whatif-offline" id="{{ uid }}">
<h4>Edit a row in the page</h4>
<p>The network ({{ n_params }} weights) runs in this page: pick a row, edit a value and the outputs and the partial dependence are re-scored without a kernel. <span class="xai-whatif-offline-status xai-muted">Needs JavaScript; shown: row {{ rows[0] }} as computed by Python.</span></p>
<div class="xai-whatif-offline-cols" style="display:flex;flex-wrap:wrap;gap:8px 24px;align-items:flex-start">
<div class="xai-whatif-offline-editor" style="flex:1 1 400px;min-width:0;max-width:100%">
<p><label>row <select class="xai-whatif-offline-row" disabled>{% for r in rows %}<option value="{{ loop.index0 }}">row {{ r }}</option>{% endfor %}</select></label>
<button type="button" class="xai-whatif-offline-reset" disabled>reset</button></p>
<div class="xai-table-wrap xai-whatif-offline-scroll" style="max-height:min(70vh,36em);overflow:auto"><table class="xai-whatif-offline-features" style="margin:0"><thead><tr><th>feature</th><th>value</th><th>range of the data</th></tr></thead><tbody>
{% for f in features %}<tr><td style="overflow-wrap:break-word;word-break:normal;white-space:normal;vertical-align:middle"><label for="{{ uid }}-f{{ f.j }}">{{ f.name }}</label></td><td><input id="{{ uid }}-f{{ f.j }}" type="number" step="{{ f.step }}" min="{{ f.lo }}" max="{{ f.hi }}" data-feature="{{ f.j }}" value="{{ f.value }}" disabled style="width:6.5em;font:inherit;font-variant-numeric:tabular-nums"></td><td style="overflow-wrap:break-word;font-variant-numeric:tabular-nums">{{ f.lo }} to {{ f.hi }}<span class="xai-whatif-offline-flag" data-flag="{{ f.j }}" style="display:none;color:var(--xai-flag,#b2182b);font-weight:600">outside the range</span></td></tr>
{% endfor %}</tbody></table></div>
{% if hidden %}<p class="xai-muted">{{ hidden }} more features keep the row's values.</p>{% endif %}
</div>
<div class="xai-whatif-offline-results" style="flex:1 1 380px;min-width:0;max-width:100%">
<p>Predicted: <strong class="xai-whatif-offline-predicted">{{ predicted }}</strong></p>
<p class="xai-whatif-offline-warning" role="status" hidden style="color:var(--xai-flag,#b2182b);font-weight:600"></p>
<div class="xai-table-wrap"><table><thead><tr><th>output</th><th>value</th></tr></thead><tbody>
{% for o in outputs %}<tr><td>{{ o.name }}</td><td data-output="{{ loop.index0 }}">{{ o.value }}</td></tr>{% endfor %}
</tbody></table></div>
<figure class="xai-whatif-offline-pd" style="margin:.5em 0">
<figcaption>Partial dependence of {{ pd.output }} on <strong class="xai-whatif-offline-pd-name">{{ pd.name }}</strong>: mean over the {{ rows|length }} rows in the page (solid) and this row (dashed); the dot is the current value, <span class="xai-whatif-offline-pd-value">{{ pd.value }}</span>.</figcaption>
<svg class="xai-whatif-offline-pd-chart" role="img" aria-label="partial dependence with the current value" viewBox="0 0 {{ box.w }} {{ box.h }}" width="{{ box.w }}" height="{{ box.h }}" style="max-width:100%;height:auto">
<rect x="{{ box.x0 }}" y="{{ box.y0 }}" width="{{ box.pw }}" height="{{ box.ph }}" fill="none" stroke="#999"/>
<polyline class="xai-pd-mean" points="{{ pd.mean }}" fill="none" stroke="#08519c" stroke-width="2"/>
<polyline class="xai-pd-row" points="{{ pd.row }}" fill="none" stroke="#e6550d" stroke-width="1.5" stroke-dasharray="4 2"/>
<line class="xai-pd-marker" x1="{{ pd.mx }}" y1="{{ box.y0 }}" x2="{{ pd.mx }}" y2="{{ box.y0 + box.ph }}" stroke="#555" stroke-dasharray="2 2"/>
<circle class="xai-pd-dot" cx="{{ pd.mx }}" cy="{{ pd.my }}" r="5" fill="#e6550d" stroke="#fff"/>
<text class="xai-pd-ymax" x="{{ box.x0 - 4 }}" y="{{ box.y0 + 10 }}" font-size="11" text-anchor="end" fill="currentColor">{{ pd.ymax }}</text>
<text class="xai-pd-ymin" x="{{ box.x0 - 4 }}" y="{{ box.y0 + box.ph }}" font-size="11" text-anchor="end" fill="currentColor">{{ pd.ymin }}</text>
<text class="xai-pd-xmin" x="{{ box.x0 }}" y="{{ box.h - 4 }}" font-size="11" fill="currentColor">{{ pd.xmin }}</text>
<text class="xai-pd-xmax" x="{{ box.x0 + box.pw }}" y="{{ box.h - 4 }}" font-size="11" text-anchor="end" fill="currentColor">{{ pd.xmax }}</text>
</svg>
<p style="margin:.2em 0"><label>Partial dependence of <select class="xai-whatif-offline-pd-feature" disabled>{% for f in features %}<option value="{{ f.j }}">{{ f.name }}</option>{% endfor %}</select></label></p>
</figure>
</div>
</div>
<script type="application/json" class="xai-whatif-offline-data">{{ data | json_script }}</script>
</div>"""

#: The partial-dependence chart's frame (SVG user units); ``whatif.js`` draws in the same.
BOX = {"w": 380, "h": 190, "x0": 52, "y0": 6, "pw": 318, "ph": 160}
#: Grid points of the in-page partial dependence.
PD_GRID = 21


@cache
def script(name: str = "whatif.js") -> str:
    """A section's JavaScript, package data: the editor's ``whatif.js`` by default, or the
    slices' threshold slider, ``thresholds.js``."""
    return resources.files("xai_whatif").joinpath(name).read_text("utf-8")


@cache
def _env():
    return environment({"offline": _TEMPLATE})


def export_network(model: Any) -> list[dict[str, Any]] | None:
    """The layers of a small float network of Dense layers and activations, as JSON-ready data.

    Returns
    -------
    list of dict or None
        ``{"type": "dense", "w": (n_in, units) nested lists, "b": (units,)}`` or
        ``{"type": "relu" | "tanh" | "sigmoid" | "linear" | "softmax"}`` per layer; None when
        the model cannot run in the page (not a native network, another layer type, int8,
        or more than :data:`MAX_PARAMS` parameters).
    """
    layers = getattr(model, "layers", None)
    if not isinstance(model, xai.nn.Sequential) or not layers or getattr(model, "is_quantized", 0):
        return None
    if model.n_params > MAX_PARAMS or len(model.input_shape or ()) != 1:
        return None
    out: list[dict[str, Any]] = []
    for layer in layers:
        if isinstance(layer, xai.nn.Dense):
            out.append(
                {
                    "type": "dense",
                    "w": np.asarray(layer.weight, dtype=np.float64),
                    "b": np.asarray(layer.bias, dtype=np.float64),
                }
            )
        elif type(layer).__name__ in _ACTIVATIONS:
            out.append({"type": _ACTIVATIONS[type(layer).__name__]})
        else:
            return None
    return out


def pd_grid(t: Any, j: int) -> np.ndarray:
    """The values feature ``j`` takes in the in-page partial dependence, shape (g,).

    An integer column of at most :data:`PD_GRID` values gets each integer of its range;
    any other :data:`PD_GRID` evenly spaced values from its minimum to its maximum.
    """
    lo, hi = float(t.minimum[j]), float(t.maximum[j])
    if t.stepped[j] and t.decimals[j] == 0 and hi - lo < PD_GRID:
        return np.arange(lo, hi + 1.0)
    return np.linspace(lo, hi, PD_GRID) if hi > lo else np.array([lo])


def _scale(lo: float, hi: float) -> tuple[float, float]:
    return (lo, hi) if hi > lo else (lo - 0.5, lo + 0.5)


def pd_curves(w: Any, rows: np.ndarray, row: np.ndarray, j: int, k: int) -> dict[str, np.ndarray]:
    """The in-page partial dependence of output ``k`` on feature ``j``, as Python computes it.

    Parameters
    ----------
    w : WhatIf
    rows : ndarray of shape (m, n_features)
        The rows the mean runs over (those carried to the page).
    row : ndarray of shape (n_features,)
        The row shown (as edited).
    j, k : int
        Feature and output.

    Returns
    -------
    dict
        ``grid`` (g,), ``mean`` (g,): the mean over ``rows`` of output ``k`` with feature
        ``j`` set to each grid value, ``row`` (g,): the same for ``row`` alone.
    """
    grid = pd_grid(w.table, j)
    batch = np.repeat(np.vstack([rows, row[None]]), len(grid), axis=0)
    batch[:, j] = np.tile(grid, len(rows) + 1)
    out = w._predict(batch)[:, k].reshape(len(rows) + 1, len(grid))
    return {"grid": grid, "mean": out[:-1].mean(axis=0), "row": out[-1]}


def _chart(t: Any, j: int, curves: dict[str, np.ndarray], value: float, y: float, ylim) -> dict:
    """The chart's polylines and labels in :data:`BOX`'s frame (``whatif.js`` does the same)."""
    grid = curves["grid"]
    x0, x1 = _scale(float(min(grid.min(), value)), float(max(grid.max(), value)))
    if ylim is None:
        both = np.r_[curves["mean"], curves["row"], y]
        ylim = _scale(float(both.min()), float(both.max()))
    y0, y1 = ylim

    def fx(v):
        return BOX["x0"] + (np.asarray(v, dtype=np.float64) - x0) / (x1 - x0) * BOX["pw"]

    def fy(v):
        return BOX["y0"] + (1 - (np.asarray(v, dtype=np.float64) - y0) / (y1 - y0)) * BOX["ph"]

    def line(vals):
        return " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(fx(grid), fy(vals)))

    return {
        "mean": line(curves["mean"]),
        "row": line(curves["row"]),
        "mx": f"{float(fx(value)):.1f}",
        "my": f"{float(fy(y)):.1f}",
        "xmin": t.text(j, x0),
        "xmax": t.text(j, x1),
        "ymin": format_number(y0, 3),
        "ymax": format_number(y1, 3),
    }


def offline_html(w: Any) -> Markup:
    """The offline editor panel of session ``w``, or empty Markup for models that cannot run in the page.

    Two columns, as the What-If Tool lays out its datapoint editor: the row's features
    (full names, values in each column's own decimals, the data's range, a value outside
    it flagged) beside the results (the prediction, the outputs and the partial dependence
    of the feature being edited, with the current value marked); on a narrow pane the
    results follow the editor.
    """
    net = export_network(w.runner.model)
    t = w.table
    if net is None or t.is_image:
        return Markup("")
    rows = np.arange(min(MAX_ROWS, t.n_samples))
    shown = list(range(min(MAX_INPUTS, t.n_features)))
    first = t.X[0]
    outputs = w.outputs[0]
    features = [
        {
            "j": j,
            "name": t.feature_names[j],
            "value": t.text(j, first[j]),
            "lo": t.text(j, t.minimum[j]),
            "hi": t.text(j, t.maximum[j]),
            "step": f"{10.0 ** -int(t.decimals[j]):.{int(t.decimals[j])}f}"
            if t.stepped[j]
            else "any",
        }
        for j in shown
    ]
    names = w.output_names
    k = len(outputs) - 1  # the last output: the positive class of a binary model
    data_outputs = w.outputs[rows]
    ylim = (
        (0.0, 1.0)
        if w.task == "classification" and data_outputs.min() >= 0 and data_outputs.max() <= 1
        else None
    )
    curves = pd_curves(w, t.X[rows], first, 0, k)
    pd = _chart(t, 0, curves, float(first[0]), float(outputs[k]), ylim)
    pd |= {
        "name": t.feature_names[0],
        "value": t.text(0, first[0]),
        "output": names[k] if k < len(names) else f"output {k}",
    }
    data = {
        "net": net,
        "rows": t.X[rows],
        "outputs": list(names),
        "task": w.task,
        "decimals": t.decimals[shown].tolist(),
        "lo": t.minimum[shown].tolist(),
        "hi": t.maximum[shown].tolist(),
        "grids": [pd_grid(t, j).tolist() for j in shown],
        "pd_output": k,
        "ylim": None if ylim is None else list(ylim),
        "box": BOX,
    }
    pred = w.predicted[0].item()
    predicted = (
        format_number(pred)
        if w.task == "regression"
        else f"{isolate(names[pred]) if pred < len(names) else f'class {pred}'} ({pred})"
    )
    html = (
        _env()
        .get_template("offline")
        .render(
            uid=new_id("whatif-offline"),
            n_params=format_number(w.runner.model.n_params),
            rows=rows.tolist(),
            predicted=predicted,
            outputs=[
                {
                    "name": names[i] if i < len(names) else f"output {i}",
                    "value": format_number(v, 6),
                }
                for i, v in enumerate(outputs)
            ],
            features=features,
            hidden=max(0, t.n_features - len(shown)),
            pd=pd,
            box=BOX,
            data=data,
        )
    )
    return Markup(html)
