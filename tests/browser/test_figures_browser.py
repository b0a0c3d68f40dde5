"""Figures that survive untrusted notebooks (a real sanitiser), and text readable in dark themes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import xai_core as xai

pytestmark = pytest.mark.browser

# What an untrusted notebook's sanitiser lets through: Ammonia's (nh3) allow-list with the
# attributes JupyterLab's sanitiser also keeps (``hidden`` anywhere, ``open`` on <details>,
# data: images: JupyterLab does not check an <img>'s src). It drops <style>, <script>, <svg>,
# class and style attributes.
_URL_SCHEMES = {"data", "http", "https", "mailto"}


def _sanitise(html: str) -> str:
    nh3 = pytest.importorskip("nh3")
    attributes = {tag: set(names) for tag, names in nh3.ALLOWED_ATTRIBUTES.items()}
    attributes["*"] = attributes.get("*", set()) | {"hidden", "title"}
    attributes["details"] = attributes.get("details", set()) | {"open"}
    return nh3.clean(html, attributes=attributes, url_schemes=_URL_SCHEMES)


def _image_explanation(n: int = 3) -> xai.Explanation:
    rng = np.random.default_rng(0)
    values = rng.normal(size=(n, 28, 28)) * np.linspace(0, 1, 28)
    return xai.Explanation(
        values=values,
        base_values=np.zeros(n),
        target=np.arange(n) % 2,
        data=rng.random((n, 28, 28)),
        output_names=("zero", "one"),
        method="ig",
        backend="cpu",
        meta={"options": {"baseline": np.zeros((1, 784)), "steps": 32}},
    )


def _tabular_explanation(n: int = 4) -> xai.Explanation:
    rng = np.random.default_rng(1)
    names = [f"feature {i}" for i in range(12)]
    return xai.Explanation(
        values=rng.normal(size=(n, 12)),
        base_values=np.full(n, 0.3),
        target=np.zeros(n, dtype=int),
        data=rng.normal(size=(n, 12)),
        feature_names=names,
        method="shap",
        backend="cpu",
    )


def _open_html(open_page, tmp_path, name, html, *, javascript=False, scheme="light"):
    path = tmp_path / name
    path.write_text(html, encoding="utf-8")
    context, page, events = open_page(path.resolve().as_uri(), javascript=javascript)
    page.emulate_media(color_scheme=scheme)
    return context, page, events


_IMAGES = """els => els.map(i => ({alt: i.alt, natural: i.naturalWidth, complete: i.complete,
  visible: i.checkVisibility(),
  width: i.getBoundingClientRect().width, height: i.getBoundingClientRect().height}))"""


@pytest.mark.parametrize("kind", ["image", "tabular", "report"])
def test_sanitised_fragment_still_shows_its_figures(open_page, tmp_path, kind):
    """After a sanitiser drops scripts, styles and inline SVG, heatmaps and bar charts are still pictures."""
    e = _image_explanation() if kind == "image" else _tabular_explanation()
    html = (
        e._repr_html_()
        if kind != "report"
        else xai.Report("r").add(e).add(_image_explanation(2))._repr_html_()
    )
    clean = _sanitise(html)
    assert "<style" not in clean and "<script" not in clean and "<svg" not in clean
    _, page, events = _open_html(open_page, tmp_path, "clean.html", f"<body>{clean}</body>")
    images = page.eval_on_selector_all("img", _IMAGES)
    assert images and all(i["complete"] and i["natural"] > 0 for i in images)
    assert all(i["visible"] for i in images)  # drawn, not folded away in a closed <details>
    heat = [i for i in images if i["alt"].startswith("Attribution heatmap")]
    bars = [i for i in images if i["alt"].startswith("Top ")]
    n_rows = {"image": 3, "tabular": 4, "report": 6}[kind]
    n_heat = {"image": 3, "tabular": 0, "report": 2}[kind]
    assert len(bars) == n_rows and len(heat) == n_heat
    # drawn at their intended size from the width/height attributes, not at 28 px
    assert all(i["width"] >= 150 and i["height"] >= 150 for i in heat)
    assert all(i["width"] >= 300 and i["height"] >= 100 for i in bars)
    text = page.inner_text("body")
    assert "feature 0" in text or "pixel_" in text  # names stay readable as text
    assert events["network"] == [] and events["page_errors"] == []


# -- dark themes ---------------------------------------------------------------------------


# A JupyterLab Dark-like host: theme variables, light text, and table rules of its own.
_DARK_HOST = """<!DOCTYPE html><html><head><style>
:root{--jp-layout-color0:#111111;--jp-layout-color1:#212121;--jp-layout-color2:#424242;
--jp-content-font-color1:rgba(255,255,255,0.87);--jp-content-font-color2:rgba(255,255,255,0.54);
--jp-border-color2:#616161;--jp-content-link-color:#64b5f6}
body{background:var(--jp-layout-color0);color:var(--jp-content-font-color1)}
.jp-RenderedHTMLCommon th,.jp-RenderedHTMLCommon td{color:#fff;text-align:right}
.jp-RenderedHTMLCommon tbody tr:nth-child(odd){background:#f5f5f5}
.jp-RenderedHTMLCommon th{background:#eeeeee}
</style></head><body><div class="jp-RenderedHTMLCommon">FRAGMENT</div></body></html>"""

# A light host whose table rules would hide text (white on grey) if they won.
_LIGHT_HOST = (
    _DARK_HOST.replace(":root{", ":root{--unused:0;")
    .replace("--jp-layout-color0:#111111", "--jp-layout-color0:#ffffff")
    .replace("rgba(255,255,255,0.87)", "rgba(0,0,0,0.87)")
    .replace("rgba(255,255,255,0.54)", "rgba(0,0,0,0.54)")
    .replace("--jp-layout-color2:#424242", "--jp-layout-color2:#eeeeee")
    .replace("#64b5f6", "#1565c0")
)


def _fragments() -> str:
    frame = pd.DataFrame({"accuracy": [0.91234567891, 0.5], "name": ["a", "b"]})
    return "".join(
        xai.report.render_fragment(r)
        for r in (_image_explanation(2), _tabular_explanation(2), frame, {"macs": 1234})
    )


@pytest.mark.parametrize(
    ("host", "scheme"),
    [(_DARK_HOST, "dark"), (_DARK_HOST, "light"), (_LIGHT_HOST, "dark"), (_LIGHT_HOST, "light")],
)
def test_fragment_text_is_readable_in_light_and_dark_hosts(
    open_page, lowest_contrast, tmp_path, host, scheme
):
    """Every piece of text has WCAG AA contrast (4.5:1) against what is behind it, whatever the host says."""
    html = host.replace("FRAGMENT", _fragments())
    _, page, _ = _open_html(open_page, tmp_path, "host.html", html, scheme=scheme)
    worst = lowest_contrast(page)
    assert worst and worst[0][0] >= 4.5, worst
    dark = host is _DARK_HOST
    bg = page.eval_on_selector(".xai-root", "e => getComputedStyle(e).backgroundColor")
    assert (bg == "rgb(17, 17, 17)") if dark else (bg == "rgb(255, 255, 255)")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_report_page_follows_the_colour_scheme(open_page, lowest_contrast, tmp_path, scheme):
    """The saved report reads well in light and dark (prefers-color-scheme), with good contrast."""
    report = xai.Report("Dark and light", seed=0).add(_image_explanation(2))
    report.add(_tabular_explanation(2))
    _, page, _ = _open_html(open_page, tmp_path, "r.html", report.to_html(), scheme=scheme)
    worst = lowest_contrast(page)
    assert worst[0][0] >= 4.5, worst
    bg = page.eval_on_selector("body", "e => getComputedStyle(e).backgroundColor")
    assert bg == ("rgb(30, 30, 30)" if scheme == "dark" else "rgb(255, 255, 255)")


def test_sanitised_projector_still_shows_its_scatter(open_page, tmp_path):
    """The projector's static scatter is an image, so an untrusted notebook still shows the points."""
    rng = np.random.default_rng(2)
    p = xai.project(rng.normal(size=(60, 5)), labels=[f"c{i % 3}" for i in range(60)])
    clean = _sanitise(p._repr_html_())
    assert "<svg" not in clean and "<script" not in clean
    _, page, events = _open_html(open_page, tmp_path, "proj.html", f"<body>{clean}</body>")
    images = page.eval_on_selector_all("img", _IMAGES)
    (scatter,) = [i for i in images if i["width"] >= 300]
    assert scatter["complete"] and scatter["natural"] > 0 and scatter["height"] >= 200
    assert events["network"] == [] and events["page_errors"] == []
