"""Report sections for the analyses: backend and method comparisons, faithfulness."""

from __future__ import annotations

from typing import Any

import numpy as np
from markupsafe import Markup

from xai_core.attribution.views import explanation_layout
from xai_core.compare.agreement import BackendComparison, MethodComparison
from xai_core.compare.faithfulness import Faithfulness, _auc
from xai_core.compare.verdict import RANK_FIGURES, Verdict
from xai_core.plugin.hookspecs import hookimpl
from xai_core.plugin.records import ReportSection
from xai_core.report import (
    enlarge,
    environment,
    format_number,
    heatmap_rgb,
    new_id,
    png_data_uri,
    scale_bar,
    summarize,
)
from xai_core.report.sections import render_frame

__all__ = [
    "header",
    "render_backend_comparison",
    "render_faithfulness",
    "render_method_comparison",
    "shown_table",
]

#: Rows drawn side by side.
MAX_GRID_ROWS = 8
#: Side, in CSS pixels, of each heatmap in the grid (whole multiples of its pixels).
HEATMAP_SIDE = 168
#: Width in pixels of each row's labelled colour bars.
SCALE_WIDTH = 140


def _grid(
    explanations: dict[str, Any],
    flagged: np.ndarray | None = None,
    reference: str | None = None,
) -> dict[str, Any] | None:
    """Heatmaps of the first rows for each explanation, when the inputs are images.

    Every heatmap of a row shares one symmetric scale; with a ``reference``, each other
    explanation's difference map (``name - reference``) follows, the differences of a row
    on a scale of their own (they are often orders of magnitude smaller).
    """
    first = next(iter(explanations.values()))
    layout = explanation_layout(first)
    if layout is None:
        return None
    shown = min(len(first), MAX_GRID_ROWS)
    data = None if first.data is None else layout.grey(first.data[:shown])
    grey = {name: np.nan_to_num(layout.grey(e.values[:shown])) for name, e in explanations.items()}
    vmax = np.max([np.abs(g).reshape(shown, -1).max(axis=1) for g in grey.values()], axis=0)
    columns = [{"name": name, "kind": "map"} for name in explanations]
    pictures = {name: heatmap_rgb(g, data, vmax)[0] for name, g in grey.items()}
    dmax = np.zeros(shown)
    if reference is not None and reference in grey and len(grey) > 1:
        diffs = {
            f"{n} − {reference}": g - grey[reference] for n, g in grey.items() if n != reference
        }
        dmax = np.max([np.abs(d).reshape(shown, -1).max(axis=1) for d in diffs.values()], axis=0)
        columns += [{"name": name, "kind": "difference"} for name in diffs]
        pictures.update({name: heatmap_rgb(d, data, dmax)[0] for name, d in diffs.items()})
    zoom = max(1, round(HEATMAP_SIDE / max(layout.height, layout.width)))
    rows = [
        {
            "index": i,
            "flagged": bool(flagged is not None and flagged[i]),
            "cells": [png_data_uri(enlarge(pictures[c["name"]][i], zoom)) for c in columns],
            "vmax": float(vmax[i]),
            "vmin": -float(vmax[i]) + 0.0,  # + 0.0: no "-0" label
            "dmax": float(dmax[i]),
            "dmin": -float(dmax[i]) + 0.0,
            "scale": _scale(float(vmax[i])),
            "dscale": _scale(float(dmax[i])),
        }
        for i in range(shown)
    ]
    return {
        "columns": columns,
        "differences": any(c["kind"] == "difference" for c in columns),
        "rows": rows,
        "width": layout.width * zoom,
        "height": layout.height * zoom,
    }


def _scale(vmax: float) -> dict[str, Any]:
    """The labelled colour bar from ``-vmax`` to ``vmax``, drawn into one PNG."""
    bar = scale_bar(-vmax, vmax, SCALE_WIDTH)
    return {"uri": png_data_uri(bar), "width": bar.shape[1], "height": bar.shape[0]}


#: Column headers in words; other columns are spelled from their snake_case name.
HEADERS = {
    "max_abs_diff": "Max abs diff",
    "max_rel_diff": "Max rel diff",
    "mean_top_k_overlap": "Mean top-k overlap",
    "top_k_overlap": "Top-k overlap",
    "mean_spearman": "Mean Spearman",
    "spearman": "Spearman",
    "threshold": "Noise threshold",
    "beyond_noise": "Beyond noise",
    "rank_reference": "Reference rank",
}
_UNITS = {"est seconds": "est. seconds", "energy j": "energy (J)"}


def header(name: Any) -> str:
    """A column's name in words: ``"max_abs_diff"`` is ``"Max abs diff"``."""
    name = str(name)
    if name in HEADERS:
        return HEADERS[name]
    words = name.replace("_", " ")
    for key, value in _UNITS.items():
        words = words.replace(key, value)
    return words[:1].upper() + words[1:]


def shown_table(frame: Any, ranks: bool = False) -> Any:
    """``frame`` as a comparison table shows it: columns that are all NaN dropped, headers in
    words and, with ``ranks``, the rank figures that are not meaningful (NaN) as "–"."""
    figures = [*RANK_FIGURES, *(f"mean_{f}" for f in RANK_FIGURES)] if ranks else []
    empty = frame.isna().all(axis=0).to_numpy() & ~frame.columns.isin(figures)
    frame = frame.loc[:, ~empty]
    if ranks:
        for column in [c for c in figures if c in frame.columns]:
            frame = frame.assign(
                **{column: frame[column].astype(object).where(frame[column].notna(), None)}
            )
    frame = frame.rename(columns=header)
    if frame.index.name is not None:
        frame.index.name = header(frame.index.name)
    return frame


def _render(
    headline: str,
    tables: list[tuple[str, Any]],
    data: dict[str, Any],
    verdict: Verdict | None = None,
    **extra: Any,
) -> str:
    return (
        environment()
        .get_template("analysis.html.j2")
        .render(
            uid=new_id("ana"),
            headline=headline,
            verdict=verdict,
            tables=[(caption, Markup(render_frame(frame))) for caption, frame in tables],
            data=data,
            skipped=extra.get("skipped", []),
            chart=extra.get("chart"),
            grid=extra.get("grid"),
            texts=extra.get("texts"),
        )
    )


def render_backend_comparison(c: BackendComparison) -> str:
    """Agreement and cost per backend, flipped predictions, side-by-side heatmaps."""
    flips = c.rows[c.rows["flipped"]]
    verdict = c.verdict
    flagged = np.zeros(len(c.explanations[c.reference]), dtype=bool)
    flagged[flips["row"].to_numpy()] = True
    headline = (
        f"{c.method} on {len(c.explanations)} backend(s) against {c.reference}: "
        f"{len(flips)} flipped prediction(s)."
    )
    tables = [
        ("Summary per backend", shown_table(c.summary, ranks=True)),
        ("Per row", shown_table(c.rows.set_index("backend"), ranks=True)),
    ]
    if c.noise is not None:
        tables.append(
            ("The method's own spread across seeds (reference backend)", shown_table(c.noise))
        )
    ref = c.explanations[c.reference]
    texts = None
    if ref.meta.get("tokens") is not None:  # texts: highlighted tokens instead of heatmaps
        from xai_core.text.render import comparison_html

        tables.append(
            ("Tokens that moved most (per backend and text)", shown_table(c.token_shifts()))
        )
        texts = Markup(comparison_html(c.explanations, c.reference, max_rows=MAX_GRID_ROWS))
    return _render(
        headline,
        tables,
        {
            "kind": "backend_comparison",
            "method": c.method,
            "reference": c.reference,
            "options": summarize(c.options),
            "verdict": {"sentence": verdict.sentence, "lines": list(verdict.lines)},
        },
        verdict,
        skipped=sorted(c.skipped.items()),
        grid=None if texts is not None else _grid(c.explanations, flagged, c.reference),
        texts=texts,
    )


def render_method_comparison(c: MethodComparison) -> str:
    """Agreement matrices between methods, per-row figures, side-by-side heatmaps."""
    tables = [(f"Mean {figure.replace('_', ' ')}", m) for figure, m in c.matrices.items()]
    data: dict[str, Any] = {
        "kind": "method_comparison",
        "methods": list(c.explanations),
        "backend": c.backend,
    }
    chart = None
    if c.quality is not None:
        from xai_core.compare.scorecard import FIGURES

        caption = "Quality per method, each figure beside its spread over seeds; " + "; ".join(
            f"{figure} {better}" for figure, better in FIGURES.items()
        )
        tables.insert(0, (caption, shown_table(c.quality)))
        data["quality"] = {
            method: {k: (None if v != v else float(v)) for k, v in row.items()}
            for method, row in c.quality.to_dict(orient="index").items()
        }
    if c.randomisation:
        palette = ("#b2182b", "#2166ac", "#1b7837", "#762a83", "#e08214", "#4d4d4d")
        chart = _line_chart(
            {
                name: (
                    np.concatenate([[1.0], r.spearman.mean(axis=1)]),
                    palette[i % len(palette)],
                    False,
                )
                for i, (name, r) in enumerate(c.randomisation.items())
            },
            "Spearman similarity to the original |attribution| as layers are randomised "
            "from the output down (left: none randomised); a method that follows the model falls",
        )
    tables.append(("Per row and pair", shown_table(c.rows)))
    verdict = c.verdict
    data["verdict"] = {"sentence": verdict.sentence, "lines": list(verdict.lines)}
    return _render(
        f"{', '.join(c.explanations)} on {c.backend}, compared pairwise.",
        tables,
        data,
        verdict,
        skipped=sorted(c.skipped.items()),
        grid=_grid(c.explanations),
        chart=chart,
    )


def _line_chart(curves: dict[str, tuple[np.ndarray, str, bool]], caption: str) -> dict[str, Any]:
    left, top, plot_width, plot_height = 60, 10, 360, 180
    ys = np.concatenate([y for y, _, _ in curves.values()])
    ymin, ymax = float(np.nanmin(ys)), float(np.nanmax(ys))
    span = ymax - ymin or 1.0
    lines = []
    for i, (label, (y, color, dashed)) in enumerate(curves.items()):
        x = left + np.linspace(0, plot_width, len(y))
        py = top + plot_height * (1 - (y - ymin) / span)
        points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(x, py))
        lines.append(
            {
                "points": points,
                "color": color,
                "dashed": dashed,
                "label": label,
                "label_y": top + 14 + 16 * i,
            }
        )
    return {
        "left": left,
        "top": top,
        "plot_width": plot_width,
        "plot_height": plot_height,
        "width": left + plot_width + 170,
        "height": top + plot_height + 20,
        "lines": lines,
        "ymin": ymin,
        "ymax": ymax,
        "caption": caption,
    }


def render_faithfulness(f: Faithfulness) -> str:
    """Mean deletion and insertion curves against random rankings, and per-row figures."""
    s = f.summary.mean()
    chart = _line_chart(
        {
            "deletion": (f.deletion.mean(axis=0), "#b2182b", False),
            "deletion, random": (f.random_deletion.mean(axis=0), "#b2182b", True),
            "insertion": (f.insertion.mean(axis=0), "#2166ac", False),
            "insertion, random": (f.random_insertion.mean(axis=0), "#2166ac", True),
        },
        "Explained output as features are removed (deletion) or restored (insertion) "
        "in attribution order; dashed: random order",
    )
    n = format_number
    headline = (
        f"{f.method} on {f.backend}: deletion AUC {n(s.deletion_auc)} (random "
        f"{n(s.random_deletion_auc)}, lower is better), insertion AUC {n(s.insertion_auc)} (random "
        f"{n(s.random_insertion_auc)}, higher is better), infidelity {n(s.infidelity)} (random "
        f"{n(s.random_infidelity)})."
    )
    data = {
        "kind": "faithfulness",
        "method": f.method,
        "options": f.options,
        "deletion_auc": _auc(f.deletion).tolist(),
        "insertion_auc": _auc(f.insertion).tolist(),
    }
    return _render(headline, [("Per row", f.summary)], data, chart=chart)


@hookimpl
def xai_register_report_sections():
    """Backend comparisons, method comparisons and faithfulness."""
    return [
        ReportSection(
            "backend_comparison",
            BackendComparison,
            render_backend_comparison,
            "Across backends",
            verdict=lambda c: c.verdict,
        ),
        ReportSection(
            "method_comparison",
            MethodComparison,
            render_method_comparison,
            "Across methods",
            verdict=lambda c: c.verdict,
        ),
        ReportSection("faithfulness", Faithfulness, render_faithfulness, "Faithfulness"),
    ]
