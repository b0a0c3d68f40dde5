"""The offline what-if editor of a report: a small native network's forward pass in the page's own script.

For a native network of Dense layers and ReLU / Tanh / Sigmoid / Linear / Softmax
activations (what ``xai.nn.mlp`` and ``xai.from_sklearn`` build), the what-if section
exports the weights and up to :data:`MAX_ROWS` rows as JSON, and ``whatif.js`` (a few KB,
allowed by hash in the report's Content-Security-Policy) re-scores a row when a value is
edited, without a kernel. Other models (black boxes, convolutions, int8 networks) get the
static section only. Without JavaScript the panel shows the first row and its outputs.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import numpy as np
from markupsafe import Markup

import xai_core as xai
from xai_core.report import environment, format_number, isolate, new_id

__all__ = ["MAX_PARAMS", "MAX_ROWS", "export_network", "offline_html", "script"]

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
<p>The network ({{ n_params }} weights) runs in this page: pick a row, edit a value and the outputs are re-scored without a kernel. <span class="xai-whatif-offline-status xai-muted">Needs JavaScript; shown: row {{ rows[0] }} as computed by Python.</span></p>
<p><label>row <select class="xai-whatif-offline-row" disabled>{% for r in rows %}<option value="{{ loop.index0 }}">row {{ r }}</option>{% endfor %}</select></label>
<button type="button" class="xai-whatif-offline-reset" disabled>reset</button></p>
<p>Predicted: <strong class="xai-whatif-offline-predicted">{{ predicted }}</strong></p>
<div class="xai-table-wrap"><table><thead><tr><th>output</th><th>value</th></tr></thead><tbody>
{% for o in outputs %}<tr><td>{{ o.name }}</td><td data-output="{{ loop.index0 }}">{{ o.value }}</td></tr>{% endfor %}
</tbody></table></div>
<div class="xai-table-wrap"><table><thead><tr><th>feature</th><th>value</th><th>observed range</th></tr></thead><tbody>
{% for f in features %}<tr><td><label for="{{ uid }}-f{{ f.j }}">{{ f.name }}</label></td><td><input id="{{ uid }}-f{{ f.j }}" type="number" step="any" data-feature="{{ f.j }}" value="{{ f.value }}" disabled></td><td>{{ f.lo }} to {{ f.hi }}</td></tr>
{% endfor %}</tbody></table></div>
{% if hidden %}<p class="xai-muted">{{ hidden }} more features keep the row's values.</p>{% endif %}
<script type="application/json" class="xai-whatif-offline-data">{{ data | json_script }}</script>
</div>"""


@cache
def script() -> str:
    """The editor's JavaScript (package data ``whatif.js``)."""
    return resources.files("xai_whatif").joinpath("whatif.js").read_text("utf-8")


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


def offline_html(w: Any) -> Markup:
    """The offline editor panel of session ``w``, or empty Markup for models that cannot run in the page."""
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
            "value": repr(float(first[j])),
            "lo": format_number(t.minimum[j]),
            "hi": format_number(t.maximum[j]),
        }
        for j in shown
    ]
    names = w.output_names
    data = {
        "net": net,
        "rows": t.X[rows],
        "outputs": list(names),
        "task": w.task,
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
                    "name": names[k] if k < len(names) else f"output {k}",
                    "value": format_number(v, 6),
                }
                for k, v in enumerate(outputs)
            ],
            features=features,
            hidden=max(0, t.n_features - len(shown)),
            data=data,
        )
    )
    return Markup(html)
