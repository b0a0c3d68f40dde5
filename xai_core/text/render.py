"""Token highlighting: each token's background red where it raises the explained output,
blue where it lowers it (the report's diverging colours), as HTML and as a PNG.

One colour scale per text (``scale="row"``, the default) or one shared by all texts
(``scale="shared"``): the largest absolute value gets full colour. Every token and text
is HTML-escaped; the value of each token is in its ``title`` (shown on hover).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from markupsafe import Markup, escape

from xai_core.errors import ValidationError
from xai_core.report import NEGATIVE, POSITIVE, diverging

__all__ = ["comparison_html", "text_html", "text_png", "token_rows"]


def token_rows(e: Any) -> list[tuple[list[str], np.ndarray]]:
    """Per row of ``e``, its tokens and their values (padding left out)."""
    tokens = e.meta.get("tokens")
    if tokens is None:
        raise ValidationError(
            "this explanation has no tokens (meta['tokens']): only text explanations "
            "(xai.explain(model, texts, tokenizer=...)) are drawn as text."
        )
    tokens = np.asarray(tokens, dtype=object)
    mask = np.asarray(e.meta.get("mask", tokens != ""), dtype=bool)
    values = np.asarray(e.values, np.float64).reshape(tokens.shape)
    return [(list(tokens[i][mask[i]]), values[i][mask[i]]) for i in range(len(tokens))]


def _scales(rows: list[tuple[list[str], np.ndarray]], scale: str) -> list[float]:
    if scale not in ("row", "shared"):
        raise ValidationError(f"scale must be 'row' or 'shared'; got {scale!r}.")
    peaks = [float(np.abs(v).max(initial=0.0)) for _, v in rows]
    if scale == "shared":
        peaks = [max(peaks, default=0.0)] * len(peaks)
    return [p if p > 0 else 1.0 for p in peaks]


def _luminance(rgb: np.ndarray) -> float:
    """WCAG relative luminance of an sRGB colour in [0, 255]."""
    c = np.asarray(rgb, np.float64) / 255.0
    linear = np.where(c <= 0.03928, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


_DARK_INK, _LIGHT_INK = "#000", "#fff"


def _colours(value: float, vmax: float) -> str:
    """A token's background on the diverging map over white and the ink that reads on it.

    Both are set, so a host theme's text colour (light text in a dark notebook) can never
    land on a light token: the ink is whichever of black and white contrasts more, at least
    4.58:1 on any background (WCAG AA asks for 4.5:1).
    """
    rgb = diverging(np.array([value]), vmax)[0]
    lum = _luminance(rgb)
    dark = (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05)
    r, g, b = np.rint(rgb).astype(int)
    return f"background:rgb({r},{g},{b});color:{_DARK_INK if dark else _LIGHT_INK}"


_MUTED = "color:var(--xai-muted,#555)"
_LEGEND = (
    f'<span style="{_colours(0.8, 1.0)}">&nbsp;red&nbsp;</span>',
    f'<span style="{_colours(-0.8, 1.0)}">&nbsp;blue&nbsp;</span>',
)


def text_html(e: Any, *, scale: str = "row", max_rows: int = 20) -> str:
    """The first ``max_rows`` texts of ``e`` with each token highlighted by its value.

    Parameters
    ----------
    e : Explanation
        A text explanation (``meta["tokens"]``).
    scale : {"row", "shared"}, default="row"
        One colour scale per text, or one for all.
    max_rows : int, default=20

    Returns
    -------
    str
        An HTML fragment (a ``<div class="xai-text">``), every user string escaped.
    """
    rows = token_rows(e)[:max_rows]
    peaks = _scales(rows, scale)
    names = e.target_names
    parts = ['<div class="xai-text" style="font-family:sans-serif;line-height:1.9">']
    for i, ((tokens, values), vmax) in enumerate(zip(rows, peaks)):
        label = names[i] if names is not None else f"output {int(e.target[i])}"
        parts.append(
            f'<p style="margin:0.3em 0"><small style="{_MUTED}">text {i}, '
            f"{escape(label)} (scale \u00b1{vmax:.3g}):</small> "
        )
        for tok, v in zip(tokens, values):
            parts.append(
                f'<span title="{escape(tok)}: {v:+.4g}" style="{_colours(v, vmax)};'
                f'padding:0 2px;border-radius:3px">{escape(tok)}</span> '
            )
        parts.append("</p>")
    parts.append(
        f'<p><small style="{_MUTED}">{_LEGEND[0]} raises the output, {_LEGEND[1]} lowers it.'
        "</small></p></div>"
    )
    return str(Markup("".join(parts)))


def _line(caption: str, tokens: list[str], values: np.ndarray, vmax: float) -> str:
    """One highlighted line: a caption, then each token on its colour (value on hover)."""
    parts = [f'<p style="margin:0.2em 0"><small style="{_MUTED}">{escape(caption)}:</small> ']
    for tok, v in zip(tokens, values):
        parts.append(
            f'<span title="{escape(tok)}: {v:+.4g}" style="{_colours(v, vmax)};'
            f'padding:0 2px;border-radius:3px">{escape(tok)}</span> '
        )
    parts.append("</p>")
    return "".join(parts)


def comparison_html(explanations: dict[str, Any], reference: str, *, max_rows: int = 8) -> str:
    """Text explanations of the same texts on several backends, each text's lines together.

    Per text: one highlighted line per backend on one scale (the text's largest absolute
    value on any backend), then each other backend's difference from ``reference``
    (``name − reference``) on a scale of its own, so the tokens that moved stand out.

    Parameters
    ----------
    explanations : dict of str to Explanation
        Text explanations of the same texts (``meta["tokens"]``), ``reference`` among them.
    reference : str
    max_rows : int, default=8

    Returns
    -------
    str
        An HTML fragment (a ``<div class="xai-text">``), every user string escaped.
    """
    rows = {name: token_rows(e)[:max_rows] for name, e in explanations.items()}
    ref = rows[reference]
    e0 = explanations[reference]
    names = e0.target_names
    parts = ['<div class="xai-text" style="font-family:sans-serif;line-height:1.9">']
    for i, (tokens, base) in enumerate(ref):
        vmax = max(float(np.abs(r[i][1]).max(initial=0.0)) for r in rows.values()) or 1.0
        diffs = {n: r[i][1] - base for n, r in rows.items() if n != reference}
        dmax = max((float(np.abs(d).max(initial=0.0)) for d in diffs.values()), default=0.0)
        label = names[i] if names is not None else f"output {int(e0.target[i])}"
        parts.append(
            f'<p style="margin:0.6em 0 0"><strong>text {i}</strong> <small style="{_MUTED}">'
            f"{escape(label)}; values ±{vmax:.3g}, differences ±{dmax:.3g}</small></p>"
        )
        for n, r in rows.items():
            parts.append(_line(n, tokens, r[i][1], vmax))
        for n, d in diffs.items():
            parts.append(_line(f"{n} − {reference}", tokens, d, dmax or 1.0))
    parts.append(
        f'<p><small style="{_MUTED}">{_LEGEND[0]} raises the output (a difference: more than'
        f" on the reference), {_LEGEND[1]} lowers it.</small></p></div>"
    )
    return str(Markup("".join(parts)))


def text_png(
    e: Any, *, scale: str = "row", max_rows: int = 20, dpi: int = 100, fig: Any = None
) -> Any:
    """The highlighted texts drawn on a matplotlib figure (for viewers without HTML).

    Parameters
    ----------
    e : Explanation
    scale : {"row", "shared"}, default="row"
    max_rows : int, default=20
    dpi : int, default=100
    fig : matplotlib.figure.Figure, optional
        Drawn on; default a new pyplot figure.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from xai_core.optional import require

    rows = token_rows(e)[:max_rows]
    peaks = _scales(rows, scale)
    size = (8, 0.45 * len(rows) + 0.3)
    if fig is None:
        plt = require("matplotlib.pyplot", extra="plot", need="e.plot.text()")
        fig = plt.figure(figsize=size, dpi=dpi)
    else:
        fig.set_size_inches(*size)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)
    renderer = fig.canvas.get_renderer()
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    for i, ((tokens, values), vmax) in enumerate(zip(rows, peaks)):
        y = 1 - (i + 0.7) / max(len(rows), 1)
        x = 0.01
        for tok, v in zip(tokens, values):
            w = min(abs(v) / vmax, 1.0)
            color = (POSITIVE if v >= 0 else NEGATIVE) / 255.0
            t = ax.text(
                x,
                y,
                tok,
                fontsize=10,
                va="center",
                transform=ax.transAxes,
                bbox={"facecolor": (*color, w), "edgecolor": "none", "pad": 1.5},
            )
            box = t.get_window_extent(renderer=renderer)
            x += box.width / fig.bbox.width + 0.008
    return fig
