"""HTML reports: structure, escaping of hostile input, offline images, provenance, plugins."""

from __future__ import annotations

import base64
import importlib.metadata
import io
import json
import os
import re
import types
from html.parser import HTMLParser
from importlib import resources

import numpy as np
import pandas as pd
import pytest

import xai_core as xai
from xai_core.plugin.manager import Registry, get_plugin_manager
from xai_core.report import Report, render_fragment

POSITIVE = (178, 24, 43)
NEGATIVE = (33, 102, 172)


# -- helpers -------------------------------------------------------------------------------
class _Page(HTMLParser):
    """Every start tag with its attributes, and the text of every script element."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.styles: list[str] = []
        self._open: tuple[str, dict[str, str | None]] | None = None
        self._buf: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._open, self._buf = (tag, dict(attrs)), []

    def handle_data(self, data):
        if self._open is not None:
            self._buf.append(data)

    def handle_endtag(self, tag):
        if self._open is not None and tag == self._open[0]:
            if tag == "script":
                self.scripts.append((self._open[1], "".join(self._buf)))
            else:
                self.styles.append("".join(self._buf))
            self._open = None

    def attr_values(self, name: str) -> list[str]:
        return [a[name] for _, a in self.tags if a.get(name) is not None]

    def json_blocks(self) -> list:
        return [json.loads(text) for a, text in self.scripts if a.get("type") == "application/json"]


def _strings(value) -> list[str]:
    """Every string inside a parsed JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *_strings(v)]]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


_SVG_PREFIX = "data:image/svg+xml;base64,"


def _svgs(html: str) -> list[str]:
    """The SVG documents drawn as images, decoded."""
    return [
        base64.b64decode(s[len(_SVG_PREFIX) :]).decode("utf-8")
        for s in _Page(html).attr_values("src")
        if s.startswith(_SVG_PREFIX)
    ]


def _svg_tags(html: str) -> list[tuple[str, dict]]:
    """Every start tag of every SVG image in ``html``."""
    return [tag for svg in _svgs(html) for tag in _Page(svg).tags]


def _decode_png(uri: str) -> np.ndarray:
    """Decode a PNG data URI with Pillow: (height, width, channels) uint8."""
    from PIL import Image

    prefix = "data:image/png;base64,"
    assert uri.startswith(prefix)
    with Image.open(io.BytesIO(base64.b64decode(uri[len(prefix) :]))) as image:
        assert image.format == "PNG"
        pixels = np.asarray(image)
    assert pixels.dtype == np.uint8
    return pixels if pixels.ndim == 3 else pixels[:, :, None]


def _heatmap_cells(uri: str, side: int) -> np.ndarray:
    """The (side, side, 3) heatmap of a row's picture: one pixel of each enlarged cell."""
    picture = _decode_png(uri)
    zoom = picture.shape[1] // side
    return picture[: side * zoom : zoom, : side * zoom : zoom]


def _image_explanation(n: int = 3, side: int = 8, **kw) -> xai.Explanation:
    rng = np.random.default_rng(0)
    args = dict(
        values=rng.normal(size=(n, side, side)),
        base_values=rng.normal(size=n),
        target=rng.integers(0, 3, n),
        data=rng.random((n, side, side)),
        output_names=["zero", "one", "two"],
        method="ig",
        backend="cpu",
        meta={"seed": 7, "options": {"steps": 32}, "seconds": 0.25},
    )
    args.update(kw)
    return xai.Explanation(**args)


def _tabular_explanation(names, outputs=("no", "yes"), **kw) -> xai.Explanation:
    rng = np.random.default_rng(1)
    f = len(names)
    args = dict(
        values=rng.normal(size=(4, f)),
        base_values=np.zeros(4),
        target=[0, 1, 1, 0],
        data=rng.normal(size=(4, f)),
        feature_names=names,
        output_names=outputs,
        method="shap",
        backend="cpu",
        meta={"seed": 3, "options": {"algorithm": "exact"}, "seconds": 1.5},
    )
    args.update(kw)
    return xai.Explanation(**args)


def _dataset_like(name="toy", class_names=("a", "b"), feature_names=("f0", "f1", "f2")):
    rng = np.random.default_rng(2)
    return types.SimpleNamespace(
        X=rng.random((6, len(feature_names))).astype(np.float32),
        y=np.array([0, 1, 1, 0, 1, 1]),
        class_names=tuple(class_names),
        feature_names=tuple(feature_names),
        image_shape=None,
        name=name,
        description="A toy table.",
    )


def _full_report(s: str = "feature") -> Report:
    """A report with one result of every built-in section type, user strings set to ``s``."""
    names = [f"{s}", f"{s}1", f"{s}2"]
    report = Report(f"Report {s}", seed=0)
    report.add(_image_explanation(), title=f"images {s}")
    report.add(
        _tabular_explanation(
            names,
            outputs=(s, f"{s}!"),
            method=s,
            meta={"seed": 3, "options": {s: s}, "seconds": 1.5, s: s},
        )
    )
    report.add(_dataset_like(name=s, class_names=(s, "b"), feature_names=names))
    report.add(pd.DataFrame({s: [1.5, 2.5], "text": [s, "ok"]}))
    report.add({s: 12, "cycles": 3.5})
    report.add(xai.ModelRunner(lambda X: X.sum(1, keepdims=True), backend="cpu"))
    return report


# -- structure -----------------------------------------------------------------------------
def test_every_section_is_present():
    """Each added result yields one section with its heading, and the provenance closes the page."""
    html = _full_report().to_html()
    page = _Page(html)
    kinds = [a["data-xai-section"] for t, a in page.tags if t == "section"]
    assert kinds == [
        "explanation",
        "explanation",
        "dataset",
        "table",
        "counters",
        "counters",
        "provenance",
    ]
    assert html.startswith("<!DOCTYPE html>") and html.count("<h2>") == 7
    ids = page.attr_values("id")
    assert len(ids) == len(set(ids))
    hrefs = page.attr_values("href")
    assert hrefs and all(h[1:] in ids for h in hrefs)  # every in-page link has its target


def test_templates_are_package_data():
    """The templates and assets are found through importlib.resources."""
    folder = resources.files("xai_core.report").joinpath("templates")
    for name in ("page.html.j2", "body.html.j2", "explanation.html.j2", "report.css", "report.js"):
        assert folder.joinpath(name).is_file(), name


def test_page_has_no_external_resource():
    """No http(s) URL, font or import anywhere; every src is a PNG or SVG data URI, every href an anchor."""
    html = _full_report().to_html()
    page = _Page(html)
    svgs = _svgs(html)
    assert svgs  # the bar charts
    assert "http://" not in html and "https://" not in html
    for text in (html, *(s.replace('xmlns="http://www.w3.org/2000/svg"', "") for s in svgs)):
        assert "@font-face" not in text and "@import" not in text and "url(" not in text
    for svg in svgs:
        assert "http" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
        assert "href" not in svg and "<script" not in svg
    srcs = page.attr_values("src")
    assert srcs and all(s.startswith(("data:image/png;base64,", _SVG_PREFIX)) for s in srcs)
    assert all(h.startswith("#") for h in page.attr_values("href"))
    csp = [a["content"] for t, a in page.tags if a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0] and "img-src data:" in csp[0]


def test_one_script_and_json_blocks_only():
    """Script elements are JSON data blocks and exactly one program, allowed by its CSP hash."""
    import hashlib

    html = _full_report().to_html()
    page = _Page(html)
    programs = [text for a, text in page.scripts if a.get("type") is None]
    assert len(programs) == 1 and len(programs[0]) < 8000
    # the others are data: JSON, and the live controls' HTML that the program puts in place
    assert {a.get("type") for a, _ in page.scripts} == {None, "application/json", "text/html"}
    for a, text in page.scripts:
        if a.get("type") == "text/html":
            assert a["class"] == "xai-live"
            assert {t for t, _ in _Page(text).tags} == {"div", "button"}
    assert html.count("<script") == len(page.scripts)
    digest = base64.b64encode(hashlib.sha256(programs[0].encode()).digest()).decode()
    (csp,) = [a["content"] for _, a in page.tags if a.get("http-equiv")]
    assert f"script-src 'sha256-{digest}';" in csp
    assert len(page.json_blocks()) == 7  # one per section and the provenance


# -- escaping ------------------------------------------------------------------------------
def test_hostile_strings_are_escaped(hostile):
    """Hostile names, titles and meta never become markup, and JSON gives them back unchanged."""
    html = _full_report(hostile).to_html()
    page = _Page(html)
    for tag, attrs in page.tags:
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        if tag == "img":
            assert attrs["src"].startswith(("data:image/png;base64,", _SVG_PREFIX))
    for svg in _svgs(html):  # the pictures drawn as SVG images escape the same way
        tags = _Page(svg).tags
        assert {t for t, _ in tags} <= {"svg", "title", "rect", "line", "g", "text", "circle"}
        assert not any(n.startswith("on") or n == "href" for _, a in tags for n in a)
    assert html.count("<script") == len(page.scripts) == 10
    assert [a.get("type") for a, _ in page.scripts].count(None) == 1
    for a, text in page.scripts:  # nothing can close a block early or open a comment
        closing = "</script" if a.get("type") == "text/html" else "</"
        assert closing not in text.lower() and "<!--" not in text
        assert not any(n.startswith("on") for _, at in _Page(text).tags for n in at)
    strings = [s for block in page.json_blocks() for s in _strings(block)]
    assert strings.count(hostile) >= 5  # feature, output, method, option, dataset, frame ...
    # visible text carries the string too (rendered server-side, readable without JS)
    visible = re.sub(r"<script.*?</script>", "", html, flags=re.S)
    assert _Page(visible).tags and hostile[:12] in _unescape_all(visible)


def _unescape_all(text: str) -> str:
    import html

    return html.unescape(re.sub(r"<[^>]*>", "", text))


def test_repr_html_escapes_hostile_strings(hostile):
    """The notebook fragment escapes the same way and holds no page-level markup."""
    e = _tabular_explanation([hostile, "b", "c"], outputs=(hostile, hostile), method=hostile)
    html = e._repr_html_()
    page = _Page(html)
    assert "<html" not in html and "<head" not in html
    assert not any(n.startswith("on") for _, a in page.tags for n in a)
    assert html.count("<script") == len(page.scripts) == 3  # program, live controls, JSON
    (data,) = page.json_blocks()
    assert data["feature_names"][0] == hostile and data["method"] == hostile


# -- images --------------------------------------------------------------------------------
def test_png_encoder_round_trips():
    """Grey, grey + alpha, RGB and RGBA images decode back to the same pixels, the same every time."""
    from xai_core.report import encode_png, png_data_uri

    rng = np.random.default_rng(3)
    for shape in [(5, 7), (6, 5, 1), (3, 3, 2), (4, 9, 3), (3, 2, 4)]:
        pixels = rng.integers(0, 256, shape, dtype=np.uint8)
        decoded = _decode_png(png_data_uri(pixels))
        assert decoded.shape[:2] == shape[:2]
        np.testing.assert_array_equal(decoded.reshape(pixels.shape), pixels)
        assert encode_png(pixels) == encode_png(pixels.copy())
        assert b"tIME" not in encode_png(pixels) and b"tEXt" not in encode_png(pixels)
    for bad in [np.zeros((2, 2, 5), np.uint8), np.zeros((0, 3), np.uint8), np.zeros(4, np.uint8)]:
        with pytest.raises(xai.ShapeError, match="pixels must have shape"):
            png_data_uri(bad)


def test_to_pixels_maps_a_range_to_bytes():
    """low is 0, high is 255, halfway rounds to 128; NaN is low and the range is clipped."""
    from xai_core.report import to_pixels

    got = to_pixels([np.nan, -1.0, 0.0, 0.5, 1.0, 2.0, 0.25], low=0.0, high=1.0)
    np.testing.assert_array_equal(got, [0, 0, 0, 128, 255, 255, 64])
    np.testing.assert_array_equal(to_pixels([3.0, 5.0], low=3.0, high=5.0), [0, 255])
    np.testing.assert_array_equal(to_pixels([1.0, 1.0], low=1.0, high=1.0), [0, 0])


def test_heatmap_colours_at_known_pixels():
    """Zero is white over blank input, +max the positive colour, -max the negative, ink shows grey."""
    from PIL import Image

    values = np.zeros((1, 4, 4))
    values[0, 1, 1], values[0, 2, 2], values[0, 3, 3] = 2.0, -2.0, 1.0
    data = np.zeros((1, 4, 4))
    data[0, 0, 3] = 1.0
    e = _image_explanation(1, 4, values=values, data=data, target=[0])
    page = _Page(e._repr_html_())
    ((heat, width, height),) = [
        (a["src"], int(a["width"]), int(a["height"]))
        for t, a in page.tags
        if t == "img" and "xai-heatmap" in a["class"]
    ]
    picture = _decode_png(heat).astype(int)
    assert picture.shape == (height, width, 3)  # drawn at its own size: no viewer rescales it
    zoom = width // 4
    assert zoom * 4 == width >= 140
    small = np.full((4, 4, 3), 255)
    small[1, 1], small[2, 2] = POSITIVE, NEGATIVE
    small[3, 3] = np.rint((255 + np.array(POSITIVE)) / 2)  # half of max: half-way to red
    small[0, 3] = 166  # ink at 35 % opacity, no attribution
    # enlarged by whole pixels, as Pillow's nearest-neighbour resize does: no blur
    oracle = np.asarray(Image.fromarray(small.astype(np.uint8)).resize((width, width), 0))
    np.testing.assert_array_equal(picture[:width], oracle)
    # beneath it the colour bar, blue at the left end, white in the middle, red at the right
    band = [row for row in picture[width:] if tuple(row[1]) == NEGATIVE]
    assert len(band) >= 8  # a band, not a line
    for ramp in band:
        assert tuple(ramp[-2]) == POSITIVE and (ramp[len(ramp) // 2] > 240).all()
    assert (
        "from -2 (blue) through 0 (white) to 2 (red)"
        in dict(next(a for t, a in page.tags if t == "img" and "xai-heatmap" in a["class"]))["alt"]
    )


def test_bar_chart_is_sorted_and_signed():
    """Each row's bars are the top features by |attribution|, largest first, coloured by sign."""
    e = _tabular_explanation([f"f{i}" for i in range(15)])
    page = _Page(e._repr_html_())
    (data,) = page.json_blocks()
    fills = [a["fill"] for t, a in _svg_tags(e._repr_html_()) if t == "rect" and "x" in a]
    for i, row in enumerate(data["rows"]):
        v = e.values[i]
        order = sorted(range(15), key=lambda j: -abs(v[j]))[:10]
        assert [name for name, _ in row["top_features"]] == [f"f{j}" for j in order]
        signs = ["rgb(178,24,43)" if v[j] >= 0 else "rgb(33,102,172)" for j in order]
        assert fills[i * 10 : (i + 1) * 10] == signs


# -- notebook display ----------------------------------------------------------------------
def test_two_renders_share_no_id_and_scope_their_css():
    """Two renders of one result use disjoint ids and each style sheet stays under its own class."""
    e = _image_explanation()
    first, second = _Page(e._repr_html_()), _Page(e._repr_html_())
    ids1, ids2 = set(first.attr_values("id")), set(second.attr_values("id"))
    assert ids1 and not ids1 & ids2
    for page in (first, second):
        (root_class,) = [c for c in page.tags[0][1]["class"].split() if c.startswith("xai-scope-")]
        (css,) = page.styles
        rules = re.sub(r"@media[^{]*\{", "", css)
        selectors = [
            s.strip() for block in re.findall(r"([^{}]+)\{", rules) for s in block.split(",")
        ]
        assert selectors and all(s.startswith(f".{root_class}") for s in selectors)


def test_seeded_report_is_reproducible():
    """The same seed renders the same ids; another seed renders others."""

    def ids(seed):
        return _Page(Report("r", seed=seed).add(_image_explanation()).to_html()).attr_values("id")

    assert ids(5) == ids(5) and ids(5) != ids(6)


def test_report_repr_html_is_a_fragment():
    """A Report in a notebook cell shows its sections and provenance without page markup."""
    html = _full_report()._repr_html_()
    assert "<html" not in html and "<!DOCTYPE" not in html
    assert html.count('data-xai-section="') == 7


# -- provenance ----------------------------------------------------------------------------
def test_provenance_records_versions_and_settings():
    """Versions match importlib.metadata; each explanation's method, seed, options and time appear."""
    page = _Page(_full_report().to_html())
    prov = page.json_blocks()[-1]
    for name in ("numpy", "scipy", "scikit-learn", "shap", "lime", "ml_dtypes", "jinja2", "pandas"):
        assert prov["versions"][name] == importlib.metadata.version(name)
    assert prov["environment"]["report seed"] == 0 and prov["environment"]["python"]
    first = prov["results"][0]
    assert (first["method"], first["backend"], first["seed"]) == ("ig", "cpu", 7)
    assert first["options"] == {"steps": 32} and first["seconds"] == 0.25
    assert first["numerics"] == "float32 multiply and accumulate"
    assert [r["section"] for r in prov["results"]][2:] == [
        "dataset",
        "table",
        "counters",
        "counters",
    ]


# -- errors, saving, plugins ---------------------------------------------------------------
def test_unknown_result_type_lists_known_types():
    """Adding a type no section renders fails before any work, naming the types that have one."""
    with pytest.raises(
        xai.UnknownNameError, match=r"Unknown report section .*'object'.*Explanation"
    ):
        Report("r").add(object())
    with pytest.raises(xai.ValidationError, match="title must be a str"):
        Report(3)
    with pytest.raises(xai.ValidationError, match="seed must be"):
        Report("r", seed=-1)


def test_save_is_atomic(tmp_path, monkeypatch):
    """save() writes the page and leaves no temporary file, even when the rename fails."""
    report = Report("r").add(_image_explanation())
    target = tmp_path / "report.html"
    assert report.save(target) == target
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
    before = target.read_text("utf-8")
    assert before.startswith("<!DOCTYPE html>") and before.endswith("</html>")

    def broken(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        report.add(_image_explanation()).save(target)
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
    assert target.read_text("utf-8") == before


class _Score:
    """A third-party result type."""

    def __init__(self, label: str, value: float) -> None:
        self.label, self.value = label, value


def test_third_party_section_renders_its_type(fresh_registry, monkeypatch, hostile):
    """A section registered by a temporary plugin renders its result type, in reports and notebooks."""
    from markupsafe import escape

    def render(score):
        return f"<p class='score'>{escape(score.label)}: {score.value:.2f}</p>"

    section = xai.ReportSection("score", _Score, render, "Score")
    plugin = types.ModuleType("ext")
    plugin.xai_register_report_sections = xai.hookimpl(lambda: [section])
    pm = get_plugin_manager(autoload=False)
    pm.register(plugin, name="ext")
    monkeypatch.setattr("xai_core.plugin.manager._DEFAULT", Registry.from_plugin_manager(pm))
    html = Report("r").add(_Score(hostile, 0.5)).add(_image_explanation()).to_html()
    page = _Page(html)
    assert [a["data-xai-section"] for t, a in page.tags if t == "section"] == [
        "score",
        "explanation",
        "provenance",
    ]
    assert f"{escape(hostile)}: 0.50" in html
    assert not any(n.startswith("on") for _, a in page.tags for n in a)
    assert "class='score'" in render_fragment(_Score("x", 1.0))


def test_section_script_is_carried_once_and_allowed_by_hash(fresh_registry, monkeypatch):
    """A section's script appears once per page (however many results use it) and the CSP allows it."""
    from html import unescape

    from xai_core.report._html import script_hash

    js = "document.querySelectorAll('.score').forEach(function (p) { p.dataset.live = '1'; });"
    section = xai.ReportSection(
        "score", _Score, lambda r: "<p class='score'>s</p>", "Score", script=js
    )
    plugin = types.ModuleType("ext")
    plugin.xai_register_report_sections = xai.hookimpl(lambda: [section])
    pm = get_plugin_manager(autoload=False)
    pm.register(plugin, name="ext")
    monkeypatch.setattr("xai_core.plugin.manager._DEFAULT", Registry.from_plugin_manager(pm))
    html = Report("r").add(_Score("a", 1.0)).add(_Score("b", 2.0)).to_html()
    assert html.count(js) == 1 and script_hash(js) in unescape(html)  # the CSP attribute
    assert render_fragment(_Score("x", 1.0)).count(js) == 1


def test_failing_section_names_its_plugin(fresh_registry, monkeypatch):
    """A section that raises or returns a non-string is reported with its plugin's name."""

    def explode(result):
        raise RuntimeError("boom")

    plugin = types.ModuleType("ext")
    plugin.xai_register_report_sections = xai.hookimpl(
        lambda: [
            xai.ReportSection("bad", _Score, explode),
            xai.ReportSection("worse", int, lambda r: 42),
        ]
    )
    pm = get_plugin_manager(autoload=False)
    pm.register(plugin, name="ext")
    monkeypatch.setattr("xai_core.plugin.manager._DEFAULT", Registry.from_plugin_manager(pm))
    with pytest.raises(xai.PluginError, match=r"plugin 'ext': report section 'bad' failed.*boom"):
        Report("r").add(_Score("a", 1.0)).to_html()
    with pytest.raises(xai.PluginError, match="must return an HTML string; got int"):
        Report("r").add(7).to_html()


def test_real_dataset_renders_thumbnails():
    """A dataset from xai_datasets shows its class counts and its first images as PNGs."""
    datasets = pytest.importorskip("xai_datasets")
    ds = datasets.load_digits()
    page = _Page(Report("d").add(ds).to_html())
    data = page.json_blocks()[0]
    assert data["class_counts"] == np.bincount(ds.y, minlength=10).tolist()
    thumbs = [a["src"] for t, a in page.tags if t == "img"]
    assert len(thumbs) == 24
    first = _decode_png(thumbs[0])[:, :, 0]
    np.testing.assert_array_equal(first, np.rint(ds.X[0].reshape(8, 8) * 255).astype(np.uint8))


def test_non_finite_and_empty_explanations_render():
    """NaN and infinite attributions draw as neutral and serialise as null; zero rows render too."""
    values = np.zeros((1, 4, 4))
    values[0, 0, 0], values[0, 1, 1], values[0, 2, 2] = np.nan, np.inf, 1.0
    e = _image_explanation(1, 4, values=values, data=np.zeros((1, 4, 4)), target=[0])
    page = _Page(e._repr_html_())
    (heat,) = [a["src"] for t, a in page.tags if t == "img" and "xai-heatmap" in a["class"]]
    rgb = _heatmap_cells(heat, 4).astype(int)
    assert tuple(rgb[0, 0]) == tuple(rgb[1, 1]) == (255, 255, 255)
    assert tuple(rgb[2, 2]) == POSITIVE
    (text,) = [t for a, t in page.scripts if a.get("type") == "application/json"]

    def reject(token):
        raise ValueError(f"non-JSON constant {token}")

    data = json.loads(text, parse_constant=reject)
    top = data["rows"][0]["top_features"]
    assert top[0] == ["pixel_2_2", 1.0]  # non-finite values rank as 0 and serialise as null
    assert ["pixel_0_0", None] in top and ["pixel_1_1", None] in top  # named by position
    empty = _tabular_explanation(
        ["a", "b"], values=np.zeros((0, 2)), base_values=[], target=[], data=None
    )
    page = _Page(Report("r").add(empty).to_html())
    assert page.json_blocks()[0]["n_rows"] == 0


def test_flat_pixel_features_render_as_images():
    """Flattened images named pixel_<row>_<col> (as xai_datasets names them) get heatmaps."""
    names = [f"pixel_{r}_{c}" for r in range(8) for c in range(8)]
    e = _tabular_explanation(names)
    page = _Page(e._repr_html_())
    heat = [a["src"] for t, a in page.tags if t == "img" and "xai-heatmap" in a["class"]]
    assert len(heat) == len(e) and _heatmap_cells(heat[0], 8).shape == (8, 8, 3)
    assert not [
        t
        for t, a in _Page(_tabular_explanation(names[:63] + ["x"])._repr_html_()).tags
        if t == "img" and "xai-heatmap" in a["class"]
    ]


@pytest.mark.parametrize("order", ["ct", "tc"])
def test_series_rows_draw_each_channel_over_its_steps(order):
    """A series explanation (``series_order``) draws a panel per channel: one cell per step
    coloured by its attribution on the row's symmetric scale, the input as a line over it;
    its features are named by channel and step; long series are averaged into 200 columns."""
    rng = np.random.default_rng(2)
    shape = (2, 6) if order == "ct" else (6, 2)
    values = np.zeros((1, *shape))
    tc = values[0] if order == "tc" else values[0].T  # (steps, channels) view
    tc[4, 1], tc[2, 0] = 3.0, -1.5
    e = xai.Explanation(
        values=values,
        base_values=np.zeros(1),
        target=[0],
        data=rng.normal(size=(1, *shape)),
        method="ig",
        backend="cpu",
        meta={"series_order": order},
    )
    html = e._repr_html_()
    classes = [a.get("class", "") for t, a in _Page(html).tags if t == "img"]
    assert "xai-series" in classes and "xai-heatmap" not in classes
    assert "channel 1, step 4" in html  # the top feature, by channel and step
    fills = _series_cells(html)
    assert len(fills) == 12  # two panels of six steps, channel 0 first
    half = np.rint((255 + np.array(NEGATIVE)) / 2).astype(int)  # half of the largest |value|
    assert fills[2] == "rgb({},{},{})".format(*half)
    assert fills[6 + 4] == "rgb(178,24,43)" and fills[0] == "rgb(255,255,255)"
    (svg,) = [s for s in _svgs(html) if "Series of row 0" in s]
    assert len([t for t, _ in _Page(svg).tags if t == "polyline"]) == 2
    steps = np.zeros((1, 1000))
    steps[0, 5:10] = 2.0  # the second column of five steps, averaged: full red
    long = xai.Explanation(
        values=steps,
        base_values=np.zeros(1),
        target=[0],
        method="ig",
        backend="cpu",
        meta={"series_order": "t"},
    )
    cells = _series_cells(long._repr_html_())
    assert len(cells) == 200 and cells[1] == "rgb(178,24,43)" and cells[0] == cells[2]


def _series_cells(html: str) -> list[str]:
    """The fills of the step cells of row 0's series chart."""
    (svg,) = [s for s in _svgs(html) if "Series of row 0" in s]
    return [a["fill"] for t, a in _Page(svg).tags if t == "rect" and "rgb(" in a.get("fill", "")]


def test_saved_files_get_ordinary_permissions(tmp_path):
    """Reports, explanations and models are readable by others as after open(path, "w") (umask 022)."""
    import os
    import stat

    old = os.umask(0o022)
    try:
        e = _image_explanation()
        paths = [Report("r").add(e).save(tmp_path / "r.html"), e.save(tmp_path / "e.json")]
        xai.nn.mlp(2).save(tmp_path / "m.npz")
        paths.append(tmp_path / "m.npz")
    finally:
        os.umask(old)
    for path in paths:
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path.name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.json", "m.npz", "r.html"]


# -- the toolkit ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value, expected",
    [
        ({"a": np.arange(3), "b": np.float32(0.5)}, {"a": [0, 1, 2], "b": 0.5}),
        ({"x": [1.0, float("nan"), np.inf]}, {"x": [1.0, None, None]}),
        ({(1, 2): np.array([np.nan])}, {"(1, 2)": [None]}),
        ({"s": "</script><!-- \u2028 & >"}, {"s": "</script><!-- \u2028 & >"}),
    ],
    ids=["arrays", "non-finite", "tuple-keys", "hostile"],
)
def test_json_for_script_round_trips_and_cannot_close_its_block(value, expected):
    """json_for_script is valid JSON equal to the plain value, with no <, >, & or U+2028 left raw."""
    text = str(xai.report.json_for_script(value))
    assert json.loads(text) == expected
    assert not set("<>&\u2028") & set(text)


def test_environment_escapes_and_loads_core_macros():
    """The toolkit's environment autoescapes, has num and json_script, and imports the core macros."""
    env = xai.report.environment(
        {
            "t": '{% from "macros.html.j2" import kv_table %}{{ kv_table([(k, v|num)]) }}{{ d|json_script }}'
        }
    )
    html = env.get_template("t").render(k="<b>", v=1234567, d={"k": "</script>"})
    assert "&lt;b&gt;" in html and "1,234,567" in html and "\\u003c/script\\u003e" in html
    with pytest.raises(Exception, match="undefined"):
        env.from_string("{{ missing }}").render()
    assert xai.report.environment() is xai.report.environment()


def test_ids_follow_the_seed():
    """new_id is reproducible inside id_scope(seed) and fresh outside it."""
    with xai.report.id_scope(3):
        first = [xai.report.new_id("k") for _ in range(3)]
    with xai.report.id_scope(3):
        again = [xai.report.new_id("k") for _ in range(3)]
    assert first == again and len(set(first)) == 3 and first[0].startswith("xai-k-")
    assert xai.report.new_id("k") != xai.report.new_id("k")


def test_seeded_report_is_the_same_bytes(monkeypatch):
    """A seeded report renders the same bytes every time; SOURCE_DATE_EPOCH fixes the time across reports."""
    r = Report("r", seed=0).add(_image_explanation())
    assert r.to_html() == r.to_html()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    a, b = (Report("r", seed=0).add(_image_explanation()).to_html() for _ in range(2))
    assert a == b and "1970-01-01T00:00:00+00:00" in a


def test_options_and_meta_arrays_are_summarised():
    """A 50-row background shows as its shape, dtype and a few values, in the page and in its JSON."""
    rng = np.random.default_rng(0)
    background = rng.random((50, 784))
    e = _image_explanation(
        meta={
            "options": {
                "background": background,
                "algorithm": "kernel",
                **{f"o{i}": i for i in range(8)},
            },
            "group_values": rng.random((3, 40, 5)),
        }
    )
    html = render_fragment(e)
    assert len(html) < 60_000  # the raw background alone is ~800 KB of text
    text = _unescape_all(re.sub(r"<script.*?</script>", "", html, flags=re.S))
    head = ", ".join(f"{v:.4g}" for v in background.ravel()[:4])
    assert f"array float64 (50 × 784): {head}, …" in text
    assert f"max {background.max():.4g}" in text
    (data,) = _Page(html).json_blocks()
    summary = data["provenance"]["options"]["background"]["array"]
    assert summary["shape"] == [50, 784] and summary["dtype"] == "float64"
    assert summary["head"] == background.ravel()[:4].tolist()
    assert data["meta"]["group_values"]["array"]["shape"] == [3, 40, 5]
    folded = re.search(r'<details class="xai-fold xai-options"( open)?>', html)
    assert folded and folded.group(1) is None  # ten options are folded away
    few = render_fragment(_image_explanation(meta={"options": {"steps": 8}}))
    assert '<details class="xai-fold xai-options" open>' in few


def test_many_rows_get_a_global_summary():
    """From five rows on: mean |attribution| bars of the top features and a beeswarm of every row."""
    rng = np.random.default_rng(5)
    names = [f"f{i}" for i in range(15)]
    values = rng.normal(size=(30, 15)) * np.linspace(0.1, 2, 15)
    e = _tabular_explanation(
        names,
        values=values,
        base_values=np.zeros(30),
        target=np.zeros(30, int),
        data=rng.normal(size=(30, 15)),
    )
    html = e._repr_html_()
    assert "Summary over 30 rows" in html
    (data,) = _Page(html).json_blocks()
    expected = np.abs(values).mean(axis=0)
    order = np.argsort(-expected)[:10]
    assert [n for n, _ in data["summary"]] == [names[j] for j in order]
    np.testing.assert_allclose([v for _, v in data["summary"]], expected[order])
    svgs = _svgs(html)
    swarm = [s for s in svgs if "<circle" in s]
    assert len(swarm) == 1 and swarm[0].count("<circle") == 30 * 10
    assert "Summary over" not in _tabular_explanation(names)._repr_html_()  # 4 rows: none


def test_row_headings_say_what_is_explained():
    """True label, prediction and probability, explained target; misclassified rows marked."""
    e = _tabular_explanation(["a", "b"], outputs=("benign", "malignant"), target=[1, 0, 1, 1])
    proba = np.array([[0.1, 0.9], [0.7, 0.3], [0.2, 0.8], [0.6, 0.4]])
    e = e.with_outcomes(y_true=[1, 1, 0, 0], proba=proba)
    heads = re.findall(r"<summary>(Row .*?)</summary>", e._repr_html_())
    assert heads[0].startswith("Row 0: true malignant · predicted malignant (0.90); base")
    assert heads[1].startswith("Row 1 (misclassified): true malignant · predicted benign (0.70)")
    assert "predicted benign (0.60) · explaining malignant (0.40)" in heads[3]  # not the prediction
    page = e._repr_html_()
    assert page.count('class="xai-row xai-flagged"') == 2  # rows 1 and 2, marked
    (data,) = _Page(e._repr_html_()).json_blocks()
    assert [r["outcome"]["misclassified"] for r in data["rows"]] == [False, True, True, False]
    assert e[[1]].meta["y_true"].tolist() == [1]  # rows keep their outcomes when indexed
    with pytest.raises(xai.ShapeError, match="proba"):
        e.with_outcomes(proba=proba[:2])


def test_explain_with_labels_heads_rows_with_truth_and_prediction():
    """y= records the true labels and the model's probabilities; a dataset gives its labels and names."""
    from xai_datasets import load_digits

    ds = load_digits()
    net = xai.nn.Sequential(
        [xai.nn.Dense(10), xai.nn.Softmax()], input_shape=(ds.X.shape[1],), seed=0
    )
    X, y = ds.X[:6], ds.y[:6]
    e = xai.explain(net, X, method="saliency", y=y)
    proba = net.predict(X)
    np.testing.assert_allclose(e.meta["proba"], proba, rtol=1e-6)
    predicted = proba.argmax(axis=1)
    heads = re.findall(r"<summary>(Row .*?)</summary>", e._repr_html_())
    for i, head in enumerate(heads):
        said = f"true {y[i]} · predicted {predicted[i]} ({proba[i, predicted[i]]:.2f})"
        assert said in head, head
        assert ("(misclassified)" in head) == (y[i] != predicted[i])
    assert f"row 0: true {y[0]} · predicted {predicted[0]}" in repr(e)
    pytest.importorskip("matplotlib")
    assert e.plot.waterfall(1).get_title().startswith(f"row 1: true {y[1]} · predicted")
    whole = xai.explain(net, ds, method="saliency")  # the dataset's rows, labels and class names
    assert len(whole) == len(ds.X) and whole.output_names == tuple(ds.class_names)
    np.testing.assert_array_equal(whole.meta["y_true"], ds.y)
    with pytest.raises(xai.ShapeError, match=r"y must have shape \(6,\)"):
        xai.explain(net, X, method="saliency", y=y[:3])


@pytest.mark.parametrize(
    "outputs,labels,key",
    [
        ([[0.2, 0.8], [0.6, 0.4]], [1, 1], "proba"),  # probabilities
        ([[2.0, -1.0], [0.5, 3.0]], [0, 0], "y_pred"),  # logits: the argmax, no probability
        ([[0.7], [0.2]], [1, 0], "proba"),  # one sigmoid output of a binary classifier
        ([[3.5], [-1.0]], [3.2, 0.1], "y_pred"),  # a regression
    ],
    ids=["softmax", "logits", "sigmoid", "regression"],
)
def test_outputs_become_probabilities_only_when_they_are(outputs, labels, key):
    """The model's outputs are shown as probabilities only when rows are probabilities."""
    from xai_core.attribution.outcomes import outputs_as_outcomes

    got = outputs_as_outcomes(np.array(outputs), np.array(labels))
    assert list(got) == [key]
    if key == "proba":
        np.testing.assert_allclose(got["proba"].sum(axis=1), 1.0)


def test_frame_columns_have_one_number_format():
    """Each numeric column shares its decimals; integers keep separators; no 17-digit floats."""
    frame = pd.DataFrame(
        {"accuracy": [0.91234567891, 0.5, 12.25], "count": [1, 2000, 3], "tiny": [1e-5, 2e-6, 0.0]}
    )
    page = _Page(render_fragment(frame))
    html = render_fragment(frame)
    cells = re.findall(r'<td class="xai-num" data-sort="([^"]+)">([^<]*)</td>', html)
    texts = [t for _, t in cells]
    assert texts[:4] == ["0", "0.91", "1", "1.000e-05"]  # row index, then one row's cells
    assert "0.50" in texts and "12.25" in texts and "2,000" in texts and "2.000e-06" in texts
    assert not re.search(r"\d{9,}", "".join(texts))
    assert ["0.91234567891"] == [s for s, t in cells if t == "0.91"]  # sorting stays exact
    assert page.json_blocks()[0]["rows"][0][1] == 0.91234567891
