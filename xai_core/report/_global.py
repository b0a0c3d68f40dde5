"""The global summary of an explanation with many rows: mean |attribution| bars and a beeswarm.

Both are SVG documents drawn as images (:func:`~xai_core.report._html.svg_data_uri`), so
they survive the sanitisers of untrusted notebooks and read the same in dark themes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from markupsafe import escape

from xai_core.report._colormap import NEGATIVE, POSITIVE
from xai_core.report._figures import bar_chart, shorten, swarm_offsets
from xai_core.report._html import format_number, isolate, svg_data_uri

__all__ = ["MIN_ROWS", "MAX_POINTS", "beeswarm_svg", "global_summary"]

#: Explanations with at least this many rows get the summary above the per-row panels.
MIN_ROWS = 5
#: Rows drawn as points in the beeswarm (the first ones).
MAX_POINTS = 500
_FONT = 'font-family="system-ui,-apple-system,Segoe UI,Roboto,sans-serif" font-size="11"'


def _rgb(t: np.ndarray) -> list[str]:
    """Feature value in [0, 1] to colour: low blue, high red (NaN grey)."""
    t = np.asarray(t, dtype=np.float64)
    mix = NEGATIVE[None] * (1 - t[:, None]) + POSITIVE[None] * t[:, None]
    out = []
    for ok, c in zip(np.isfinite(t), np.nan_to_num(mix)):
        out.append("rgb({},{},{})".format(*c.round().astype(int)) if ok else "rgb(150,150,150)")
    return out


def beeswarm_svg(
    names: Sequence[str], values: np.ndarray, data: np.ndarray | None
) -> tuple[str, int, int]:
    """A beeswarm of ``values`` (n, k): one line per feature, a point per row, coloured by value.

    Returns the SVG document, its width and its height.
    """
    label_w, plot_w, line_h, top = 190, 300, 26, 8
    n, k = values.shape
    height = top + k * line_h + 34
    width = label_w + plot_w + 20
    finite = np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)
    scale = float(np.abs(finite).max()) or 1.0
    centre = label_w + plot_w / 2
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}"'
        f' height="{height}" {_FONT}>',
        '<rect width="100%" height="100%" fill="#fff"/>',
        f'<line x1="{centre}" x2="{centre}" y1="0" y2="{height - 30}" stroke="#888"/>',
    ]
    for j, name in enumerate(names):
        y = top + j * line_h + line_h / 2
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#1b1b1b">'
            f"{escape(isolate(shorten(str(name))))}</text>"
        )
        xs = centre + finite[:, j] / scale * (plot_w / 2 - 4)
        ys = y + swarm_offsets(finite[:, j]) * (line_h / 2 - 3)
        if data is not None:
            d = data[:, j].astype(np.float64)
            ok = np.isfinite(d)
            lo, hi = np.percentile(d[ok], [5, 95]) if ok.any() else (0.0, 1.0)
            colours = _rgb(np.where(ok, np.clip((d - lo) / ((hi - lo) or 1.0), 0, 1), np.nan))
        else:
            colours = ["rgb(110,110,110)"] * n
        parts.extend(
            f'<circle cx="{x:.1f}" cy="{yy:.1f}" r="2.2" fill="{c}" fill-opacity="0.8"/>'
            for x, yy, c in zip(xs, ys, colours)
        )
    base = height - 18
    parts.append(f'<text x="{label_w}" y="{base}" fill="#1b1b1b">{format_number(-scale, 3)}</text>')
    parts.append(f'<text x="{centre}" y="{base}" text-anchor="middle" fill="#1b1b1b">0</text>')
    parts.append(
        f'<text x="{label_w + plot_w}" y="{base}" text-anchor="end" fill="#1b1b1b">'
        f"{format_number(scale, 3)}</text>"
    )
    legend = "colour: feature value, low (blue) to high (red)" if data is not None else ""
    parts.append(
        f'<text x="{centre}" y="{height - 4}" text-anchor="middle" fill="#444">attribution'
        f"{'; ' + legend if legend else ''}</text>"
    )
    parts.append("</svg>")
    return "\n".join(parts), width, height


def global_summary(
    values: np.ndarray, data: np.ndarray | None, names: Sequence[str], top_k: int = 10
) -> dict[str, Any] | None:
    """The summary figures of an explanation's flat ``values`` (n, features), or None if few rows.

    Returns the geometry of the mean |attribution| bar chart (macro ``bar_chart``) and the
    beeswarm as an image (``uri``, ``width``, ``height``, ``alt``) over the same top features.
    """
    n = len(values)
    if n < MIN_ROWS or values.shape[1] == 0:
        return None
    finite = np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)
    mean_abs = np.abs(finite).mean(axis=0)
    k = min(top_k, values.shape[1])
    order = np.argsort(-mean_abs, kind="stable")[:k]
    top_names = [names[j] for j in order]
    points = slice(0, MAX_POINTS)
    svg, width, height = beeswarm_svg(
        top_names,
        finite[points][:, order],
        None if data is None else np.asarray(data)[points][:, order],
    )
    return {
        "n_rows": n,
        "n_points": min(n, MAX_POINTS),
        "bars": bar_chart(top_names, mean_abs[order], None, signed=False),
        "beeswarm": {
            "uri": svg_data_uri(svg),
            "width": width,
            "height": height,
            "alt": "Beeswarm of the top features: "
            + "; ".join(
                f"{isolate(nm)} mean |attribution| {format_number(mean_abs[j], 3)}"
                for nm, j in zip(top_names, order)
            ),
        },
        "mean_abs": [[nm, float(mean_abs[j])] for nm, j in zip(top_names, order)],
    }
