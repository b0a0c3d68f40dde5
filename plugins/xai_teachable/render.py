"""HTML of a TeachableTrainer: class counts, per-class accuracy, the confusion matrix, prediction bars, the export.

Tables and CSS bars only (no script), so the section reads the same in an offline report;
everything user-supplied (class names, the source folder) is escaped by the environment.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from xai_core.report import environment, format_number, new_id, png_data_uri

__all__ = ["render_bars", "render_teachable"]

#: Held-out samples shown with their bars in a report: the first of each class, at most.
MAX_PREVIEWS = 12

_BARS = """
<table class="xai-teachable-bars" aria-label="class probabilities">
{% for b in bars %}<tr><th scope="row" style="text-align:left;font-weight:normal">{{ b.name }}</th>
<td style="width:180px"><div style="background:#eee;height:12px;width:180px"><div style="background:{{ '#e8710a' if b.top else '#f5b87f' }};height:12px;width:{{ b.width }}px"></div></div></td>
<td style="text-align:right">{{ b.percent }}</td></tr>
{% endfor %}</table>"""

_TEMPLATES = {
    "bars": _BARS,
    "teachable": """
<div class="xai-teachable" id="{{ uid }}">
<p>A {{ kind }} project from {{ source }}: {{ summary }}</p>
<div style="display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start">
<table aria-label="samples per class"><caption>Samples per class</caption>
<tr><th scope="col">class</th><th scope="col">samples</th><th scope="col">train</th><th scope="col">test</th></tr>
{% for c in counts %}<tr><th scope="row" style="text-align:left">{{ c.name }}</th><td>{{ c.samples }}</td><td>{{ c.train }}</td><td>{{ c.test }}</td></tr>
{% endfor %}</table>
{% if accuracy %}<table aria-label="accuracy per class on the held-out samples"><caption>Accuracy per class (held out)</caption>
<tr><th scope="col">class</th><th scope="col">accuracy</th><th scope="col">samples</th></tr>
{% for a in accuracy %}<tr><th scope="row" style="text-align:left">{{ a.name }}</th><td>{{ a.accuracy }}</td><td>{{ a.samples }}</td></tr>
{% endfor %}</table>
<table aria-label="confusion matrix: rows the true class, columns the predicted"><caption>Confusion matrix (rows: class, columns: prediction)</caption>
<tr><td></td>{% for n in names %}<th scope="col">{{ n }}</th>{% endfor %}</tr>
{% for row in matrix %}<tr><th scope="row" style="text-align:left">{{ row.name }}</th>{% for cell in row.cells %}<td style="text-align:right;background:rgba(232,113,10,{{ cell.alpha }})">{{ cell.count }}</td>{% endfor %}</tr>
{% endfor %}</table>{% endif %}
</div>
{% if previews %}<h4>Held-out samples</h4>
<div style="display:flex;flex-wrap:wrap;gap:16px">
{% for p in previews %}<figure style="margin:0">{% if p.uri %}<img src="{{ p.uri }}" width="64" height="64" alt="held-out sample of {{ p.name }}" style="image-rendering:pixelated;border:1px solid #999">{% endif %}
<figcaption>{{ p.name }}: predicted {{ p.guess }}</figcaption>{{ p.bars }}</figure>
{% endfor %}</div>{% endif %}
{% if export %}<h4>Export</h4>
<p>Wrote {{ export.files }} to the folder {{ export.folder }}; the Edge TPU runs {{ export.share }} % of the int8 file's multiply-accumulates.</p>
<table aria-label="Edge TPU placement of the int8 file"><caption>Edge TPU placement of {{ export.int8 }}</caption>
<tr><th scope="col">operator</th><th scope="col">op</th><th scope="col">device</th><th scope="col">MACs</th><th scope="col">reason</th></tr>
{% for r in export.rows %}<tr><td>{{ r.operator }}</td><td>{{ r.op }}</td><td>{{ r.device }}</td><td>{{ r.macs }}</td><td>{{ r.reason }}</td></tr>
{% endfor %}</table>{% endif %}
</div>""",
}


@cache
def _env():
    return environment(_TEMPLATES)


def render_bars(probabilities: Any) -> str:
    """A probability per class as horizontal bars, the largest highlighted.

    Parameters
    ----------
    probabilities : pandas.Series
        Indexed by class name, as :meth:`TeachableTrainer.predict_bars` returns.
    """
    values = np.asarray(probabilities, dtype=np.float64)
    top = int(values.argmax()) if len(values) else -1
    bars = [
        {
            "name": str(name),
            "width": round(180 * float(np.clip(v, 0, 1)), 1),
            "percent": f"{100 * v:.0f} %",
            "top": k == top,
        }
        for k, (name, v) in enumerate(zip(probabilities.index, values))
    ]
    return _env().get_template("bars").render(bars=bars)


def _thumbnail(trainer: Any, row: int) -> str | None:
    if trainer.kind != "image":
        return None
    pixels = np.clip(np.rint(trainer.samples.X[row] * 255.0), 0, 255).astype(np.uint8)
    return png_data_uri(pixels[..., 0] if pixels.shape[-1] == 1 else pixels)


def _summary(trainer: Any) -> str:
    n, k = len(trainer.samples.y), len(trainer.class_names)
    text = f"{n:,} samples in {k} classes"
    if not trainer.trained:
        return text + "; not trained yet."
    s = trainer.settings
    last = trainer.history.iloc[-1]
    return (
        f"{text}; trained {s['epochs']} epochs (batch size {s['batch_size']}, learning rate "
        f"{format_number(s['learning_rate'])}, Adam, seed {s['seed']}) on 85 % of each class. "
        f"Final training loss {format_number(last['loss'], 3)}; held-out accuracy "
        f"{format_number(trainer.accuracy, 3)} on {len(trainer.test_rows):,} samples."
    )


def _previews(trainer: Any) -> list[dict[str, Any]]:
    from markupsafe import Markup

    y = trainer.samples.y
    out = []
    for c, name in enumerate(trainer.class_names[:MAX_PREVIEWS]):
        where = np.flatnonzero(y[trainer.test_rows] == c)
        if not len(where):
            continue
        k = int(where[0])
        bars = trainer.predict_bars(k)
        guess = trainer.class_names[int(np.argmax(bars.to_numpy()))]
        out.append(
            {
                "name": name,
                "uri": _thumbnail(trainer, int(trainer.test_rows[k])),
                "guess": guess,
                "bars": Markup(render_bars(bars)),
            }
        )
    return out


def _export(trainer: Any) -> dict[str, Any] | None:
    ex = trainer.exported
    if ex is None:
        return None
    rows = [
        {**r, "macs": format_number(int(r["macs"]))} for r in ex.placement.to_dict(orient="records")
    ]
    files = ", ".join(p.name for p in (ex.model_path, ex.int8_path, ex.labels_path))
    return {
        "files": files,
        "folder": ex.folder.name,  # not the whole local path: a report travels
        "share": format_number(100 * ex.on_edgetpu, 3),
        "int8": ex.int8_path.name,
        "rows": rows,
    }


def render_teachable(trainer: Any) -> str:
    """The trainer's state as an HTML fragment (the ``teachable`` report section)."""
    counts = trainer.class_counts
    context: dict[str, Any] = {
        "uid": new_id("teachable"),
        "kind": trainer.kind,
        "source": trainer.samples.source,
        "summary": _summary(trainer),
        "counts": [
            {"name": name, **{k: format_number(int(v)) for k, v in row.items()}}
            for name, row in zip(trainer.class_names, counts.to_dict(orient="records"))
        ],
        "names": list(trainer.class_names),
        "accuracy": [],
        "matrix": [],
        "previews": [],
        "export": _export(trainer),
    }
    if trainer.trained:
        acc = trainer.accuracy_per_class
        context["accuracy"] = [
            {"name": name, "accuracy": format_number(a, 3), "samples": format_number(int(s))}
            for name, a, s in zip(trainer.class_names, acc["accuracy"], acc["samples"])
        ]
        matrix = trainer.confusion_matrix
        peak = max(int(matrix.max()), 1)
        context["matrix"] = [
            {
                "name": name,
                "cells": [
                    {"count": format_number(int(v)), "alpha": round(0.8 * int(v) / peak, 3)}
                    for v in matrix[i]
                ],
            }
            for i, name in enumerate(trainer.class_names)
        ]
        context["previews"] = _previews(trainer)
    return _env().get_template("teachable").render(**context)
