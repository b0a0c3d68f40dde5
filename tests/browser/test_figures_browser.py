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
    assert "Expand all rows" not in text  # the live controls left out, not shown dead
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


# -- JupyterLab's sanitiser and host styles ------------------------------------------------

# JupyterLab's own rules (packages/apputils/src/sanitizer.ts), in nh3's terms: its tags, its
# attributes (class, style, hidden and id everywhere), inline styles whose property it lists
# and whose value its patterns accept (none holds var() or calc()), <script> and <style>
# dropped with their content, an <img>'s src not checked, every <input> disabled.
_JLAB_TAGS = set(
    "a abbr acronym address area article aside audio b bdi bdo big blockquote br button canvas "
    "caption center cite code col colgroup command data datalist dd del details dfn dir div dl "
    "dt em fieldset figcaption figure font footer form h1 h2 h3 h4 h5 h6 header hgroup hr i img "
    "input ins kbd label legend li map mark menu meter nav nobr ol optgroup option output p pre "
    "progress q s samp section select small source span strike strong sub summary sup table "
    "tbody td textarea tfoot th thead time tr track tt u ul var video wbr".split()
)
_JLAB_ATTRIBUTES = {
    "*": set(
        "class dir draggable hidden id inert itemprop itemref itemscope lang spellcheck "
        "style title translate".split()
    ),  # fmt: skip
    "a": {"href", "hreflang", "name", "shape", "tabindex", "target", "type"},
    "button": {"disabled", "name", "tabindex", "type", "value"},
    "canvas": {"height", "width"},
    "details": {"open"},
    "img": {"align", "alt", "border", "height", "hspace", "name", "src", "vspace", "width"},
    "input": {"alt", "checked", "max", "min", "name", "placeholder", "step", "type", "value"},
    "label": {"for"},
    "li": {"type", "value"},
    "ol": {"reversed", "start", "type"},
    "option": {"disabled", "label", "selected", "value"},
    "select": {"disabled", "multiple", "name", "size", "tabindex"},
    "table": {"align", "border", "cellpadding", "cellspacing", "summary", "width"},
    "td": {"abbr", "align", "colspan", "headers", "rowspan", "scope", "valign", "width"},
    "th": {"abbr", "align", "colspan", "headers", "rowspan", "scope", "valign", "width"},
}
_JLAB_STYLES = set(
    "background background-color border border-bottom border-collapse border-color border-left "
    "border-radius border-right border-spacing border-style border-top border-width bottom "
    "box-sizing clear color cursor direction display float font font-family font-size "
    "font-style font-weight height left letter-spacing line-height list-style list-style-type "
    "margin margin-bottom margin-left margin-right margin-top max-height max-width min-height "
    "min-width opacity outline overflow overflow-wrap overflow-x overflow-y padding "
    "padding-bottom padding-left padding-right padding-top position right table-layout "
    "text-align text-decoration text-indent text-overflow text-transform top unicode-bidi "
    "vertical-align visibility white-space width word-break word-spacing word-wrap z-index".split()
)


def _jlab_style(tag, attribute, value):
    if attribute != "style":
        return value
    kept = []
    for declaration in value.split(";"):
        name, _, v = declaration.partition(":")
        v = v.strip()
        if name.strip().lower() in _JLAB_STYLES and v and "var(" not in v and "calc(" not in v:
            kept.append(f"{name.strip()}:{v}")
    return ";".join(kept) or None


def _sanitise_like_jupyterlab(html: str) -> str:
    nh3 = pytest.importorskip("nh3")
    return nh3.clean(
        html,
        tags=_JLAB_TAGS,
        clean_content_tags={"script", "style"},
        attributes=_JLAB_ATTRIBUTES,
        attribute_filter=_jlab_style,
        url_schemes=_URL_SCHEMES,
        set_tag_attribute_values={"input": {"disabled": "disabled"}},
        link_rel=None,
    )


# JupyterLab's output styles that matter here (packages/rendermime/style/base.css).
_JLAB_HOST = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>
body{font:13px sans-serif}
.jp-RenderedHTMLCommon table{border-collapse:collapse;border-spacing:0;border:none;
table-layout:fixed;margin-left:auto;margin-right:auto;margin-bottom:1em}
.jp-RenderedHTMLCommon td,.jp-RenderedHTMLCommon th,.jp-RenderedHTMLCommon tr{
vertical-align:middle;padding:.5em;line-height:normal;white-space:normal;max-width:none;border:none}
:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td,:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon th,
:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon tr{text-align:right}
.jp-RenderedHTMLCommon th{font-weight:bold}
.jp-RenderedHTMLCommon p{text-align:left;margin:0;margin-bottom:1em}
.jp-RenderedHTMLCommon img{max-width:100%;height:auto}
</style></head><body><div class="jp-RenderedHTMLCommon">FRAGMENT</div></body></html>"""

# Each picture read back through a canvas: its size, and the rows and columns of its
# colour bar and labels (the blue-to-red band, the dark runs beneath it).
_SCALES = """els => els.map(img => {
  const c = document.createElement('canvas'); c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext('2d'); g.drawImage(img, 0, 0);
  const w = c.width, h = c.height, px = g.getImageData(0, 0, w, h).data;
  const at = (x, y) => { const i = 4 * (y * w + x); return [px[i], px[i + 1], px[i + 2]]; };
  const band = [];
  for (let y = 0; y < h; y++) { const a = at(1, y), b = at(w - 2, y);
    if (a[2] > a[0] + 80 && b[0] > b[2] + 80) band.push(y); }
  const runs = [];
  if (band.length) {
    const top = band[band.length - 1] + 2;
    let last = -99;
    for (let x = 0; x < w; x++) {
      let ink = false;
      for (let y = top; y < h; y++) { const p = at(x, y); if (p[0] + p[1] + p[2] < 480) ink = true; }
      if (!ink) continue;
      if (x - last > 5) runs.push([x, x]); else runs[runs.length - 1][1] = x;
      last = x;
    }
  }
  const r = img.getBoundingClientRect();
  return {alt: img.alt, natural: [img.naturalWidth, img.naturalHeight], shown: [r.width, r.height],
          band: band.length, runs: runs, visible: img.checkVisibility()};
})"""

_CONTROLS = """root => [...root.querySelectorAll('button, select, input, textarea, canvas')]
  .filter(e => e.checkVisibility()).map(e => e.outerHTML.slice(0, 80))"""

# Where each key and each value of a key/value table begins: left-aligned text starts at
# one x for every row.
_KV_STARTS = """root => [...root.querySelectorAll('table')].filter(t => t.querySelector('th[scope=row]'))
  .map(t => [...t.rows].map(row => [...row.cells].map(cell => {
    const r = document.createRange(); r.selectNodeContents(cell);
    return Math.round(r.getBoundingClientRect().left - cell.getBoundingClientRect().left);
  })))"""


def _open_in_jupyterlab(open_page, tmp_path, html, name="jlab.html"):
    clean = _sanitise_like_jupyterlab(html)
    assert "<script" not in clean and "<style" not in clean and "<svg" not in clean
    return _open_html(open_page, tmp_path, name, _JLAB_HOST.replace("FRAGMENT", clean))


@pytest.mark.parametrize("kind", ["explanation", "report", "comparison"])
def test_untrusted_jupyterlab_shows_sharp_heatmaps_with_readable_colour_bars(
    open_page, tmp_path, kind
):
    """Through JupyterLab's sanitiser and styles each heatmap is one sharp picture whose colour bar reads."""
    e = _image_explanation()
    if kind == "comparison":
        from xai_core.testing import LinearModel

        rng = np.random.default_rng(4)
        model = LinearModel(rng.normal(size=(784, 2)), input_shape=(28, 28))
        X = rng.random((3, 28, 28)).astype(np.float32)
        c = xai.compare_backends(model, X, method="ig", backends=("cpu", "tpu"), steps=4)
        e = c.explanations["cpu"]
        html = xai.report.render_fragment(c)
    else:
        html = e._repr_html_() if kind == "explanation" else xai.Report("r").add(e)._repr_html_()
    _, page, events = _open_in_jupyterlab(open_page, tmp_path, html)
    images = page.eval_on_selector_all("img", _SCALES)
    heat = [i for i in images if "heatmap" in i["alt"].lower() and "colour bar beneath" in i["alt"]]
    scales = [i for i in images if i["alt"].startswith("Colour bar")]
    pictures = heat if kind != "comparison" else scales
    assert pictures and len(pictures) == (3 if kind != "comparison" else 3 * 2)
    for i in pictures:
        assert i["visible"]
        assert i["natural"][0] >= 140  # 28 x 28 enlarged by whole pixels, not by the browser
        assert i["shown"] == i["natural"]  # shown at its own size: nothing blurs or squeezes it
        assert i["band"] >= 8  # a colour band, not a 1-px line
        assert len(i["runs"]) == 3, i  # -vmax, 0 and +vmax apart, not "-0.058100.0581"
    for v in np.abs(e.values).reshape(3, -1).max(axis=1):
        label = xai.report.format_number(float(v), 3)
        assert f"-{label}0{label}" not in page.inner_text("body")
    assert page.eval_on_selector("body", _CONTROLS) == []
    assert events["network"] == [] and events["page_errors"] == []


def test_untrusted_jupyterlab_key_value_tables_stay_aligned(open_page, tmp_path):
    """JupyterLab right-aligns cells; the provenance and options tables keep keys and values aligned."""
    html = _image_explanation()._repr_html_()
    _, page, _ = _open_in_jupyterlab(open_page, tmp_path, html)
    tables = page.eval_on_selector("body", _KV_STARTS)
    assert tables
    for rows in tables:
        for column in zip(*rows, strict=True):
            assert max(column) - min(column) <= 1, rows  # every key (value) starts at one x


def test_untrusted_jupyterlab_projector_is_its_picture_without_dead_controls(open_page, tmp_path):
    """The projector through JupyterLab's sanitiser: the scatter and its legend, no control that does nothing."""
    rng = np.random.default_rng(2)
    p = xai.project(
        rng.normal(size=(60, 5)),
        labels=[f"c{i % 3}" for i in range(60)],
        metadata={"score": rng.normal(size=60)},
    )
    for view in (p, p.show(color_by="score")):
        _, page, events = _open_in_jupyterlab(open_page, tmp_path, view._repr_html_())
        assert page.eval_on_selector("body", _CONTROLS) == []
        images = page.eval_on_selector_all("img", _IMAGES)
        (scatter,) = [i for i in images if i["alt"].startswith("pca projection")]
        assert scatter["visible"] and scatter["natural"] >= 300 and scatter["height"] >= 200
        assert "Without JavaScript: a static scatter" in page.inner_text("body")
        assert events["network"] == [] and events["page_errors"] == []
