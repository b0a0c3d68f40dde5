"""The projector view's settings: colour by any column, the 3-D view, controls, escaping, errors."""

from __future__ import annotations

import base64
import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest

import xai_core as xai
from xai_core.report import isolate
from xai_projector import ProjectionView
from xai_projector.colors import PALETTE, SCALE

HOSTILE_NAME = "</script><img src=x onerror=alert(1)>\u202eevil"
HOSTILE_VALUES = ("<b>bold</b>", "\u202eright-to-left", "</script><script>alert(1)</script>")


class _Page(HTMLParser):
    """Collects the JSON data block, the <option> texts, <bdi> texts and every tag seen."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.data: list[str] = []
        self.options: list[str] = []
        self.bdi: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "script" and a.get("class") == "xai-projector-data":
            self._in = "data"
        elif tag in ("option", "bdi"):
            self._in = tag
            getattr(self, "options" if tag == "option" else "bdi").append("")

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, text):
        if self._in == "data":
            self.data.append(text)
        elif self._in == "option":
            self.options[-1] += text
        elif self._in == "bdi":
            self.bdi[-1] += text


_LIVE = re.compile(r'<script type="text/html" class="xai-live">(.*?)</script>', re.S)


def _parse(html: str, live: bool = True) -> _Page:
    """The page's tags; with ``live``, the live templates put in place as the script does."""
    page = _Page()
    page.feed(_LIVE.sub(r"\1", html) if live else html)
    return page


def test_live_controls_wait_in_templates_until_the_script_runs(proj3):
    """Without the script no control, canvas or search box is in the page: only the static picture."""
    html = proj3.show(color_by="score")._repr_html_()
    tags = {t for t, _ in _parse(html, live=False).tags}
    assert not tags & {"select", "button", "input", "canvas", "label"}
    assert "img" in tags
    live = {t for t, _ in _parse(html).tags}
    assert {"select", "button", "input", "canvas"} <= live
    for body in _LIVE.findall(html):  # nothing user-supplied can close the template early
        assert "</script" not in body.lower() and "<!--" not in body


def _data(html: str) -> dict:
    return json.loads("".join(_parse(html).data))


@pytest.fixture(scope="module")
def proj3():
    """60 points in 3-D: labels, a numeric score, a categorical colour, a hostile column."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 8))
    meta = {
        "score": np.round(rng.normal(size=60) * 10, 3),
        "colour": np.array(["red", "green", "blue"])[np.arange(60) % 3],
        HOSTILE_NAME: [HOSTILE_VALUES[i % 3] for i in range(60)],
    }
    return xai.project(X, n_components=3, labels=[f"c{i % 4}" for i in range(60)], metadata=meta)


def test_every_column_is_encoded_for_colouring(proj3):
    """Categorical columns as codes into their sorted values; numeric ones on the 256-step scale."""
    d = _data(proj3.show(color_by="score").to_html())
    assert [c["name"] for c in d["colorings"]] == list(proj3.columns)
    by = {c["name"]: c for c in d["colorings"]}
    values, codes = np.unique(proj3.metadata["colour"].astype(str), return_inverse=True)
    assert by["colour"]["kind"] == "cat"
    assert by["colour"]["classes"] == values.tolist()
    assert by["colour"]["codes"] == codes.tolist()
    assert by["colour"]["counts"] == [20, 20, 20]
    score = proj3.metadata["score"].astype(float)
    num = by["score"]
    assert num["kind"] == "num" and num["missing"] == 0
    assert num["min"] == score.min() and num["max"] == score.max()
    expected = np.rint((score - score.min()) / (score.max() - score.min()) * 255)
    assert num["t"] == expected.astype(int).tolist()
    assert by["label"]["kind"] == "cat" and by["label"]["codes"] is None  # the view's label array
    assert d["scale"] == list(SCALE) and len(SCALE) == 256
    assert SCALE[0] == "#440154" and SCALE[-1] == "#fde725"  # viridis's ends


def test_few_integer_values_are_categories_and_missing_numbers_are_grey():
    """Class ids (few integers) get a palette; a numeric column's blanks are counted as missing."""
    X = np.random.default_rng(1).normal(size=(30, 4))
    ids = [str(i % 5) for i in range(30)]
    temp = ["" if i % 10 == 0 else f"{i * 0.5}" for i in range(30)]
    d = _data(xai.project(X, metadata={"id": ids, "temp": temp}).to_html())
    by = {c["name"]: c for c in d["colorings"]}
    assert by["id"]["kind"] == "cat" and by["id"]["classes"] == ["0", "1", "2", "3", "4"]
    assert by["temp"]["kind"] == "num" and by["temp"]["missing"] == 3
    assert [by["temp"]["t"][i] for i in (0, 10, 20)] == [-1, -1, -1]
    assert by["temp"]["min"] == 0.5 and by["temp"]["max"] == 14.5


def test_the_static_picture_takes_the_chosen_colours(proj3):
    """Each circle of the SVG (all points here, in row order) has its category's palette colour."""
    html = proj3.show(color_by="colour").to_html()
    img = next(a for t, a in _parse(html).tags if a.get("class") == "xai-projector-svg")
    svg = base64.b64decode(img["src"].split(",", 1)[1]).decode()
    fills = re.findall(r'<circle [^>]*fill="(#[0-9a-f]{6})"', svg)
    _, codes = np.unique(proj3.metadata["colour"].astype(str), return_inverse=True)
    assert fills == [PALETTE[c] for c in codes]
    page = _parse(proj3.show(color_by="score").to_html())
    bar = [a for t, a in page.tags if t == "img" and "colour scale" in a.get("alt", "")]
    assert len(bar) == 1
    score = proj3.metadata["score"].astype(float)
    assert bar[0]["alt"] == f"colour scale from {score.min():.4g} to {score.max():.4g}"


def test_controls_and_3d_data(proj3):
    """Colour menu (every column and one colour), zoom buttons, reset, the 3-D switch and z."""
    html = proj3.to_html()
    page = _parse(html)
    classes = {a.get("class") for _, a in page.tags}
    for cls in (
        "xai-projector-color",
        "xai-projector-zoom-in",
        "xai-projector-zoom-out",
        "xai-projector-reset",
        "xai-projector-3d",
    ):
        assert cls in classes
    colours = [f"\u2068{c}\u2069" for c in proj3.columns] + ["one colour"]
    labels = colours[:-1] + ["no labels"]
    # colour by, label by, bookmarks, search by
    assert page.options == colours + labels + ["(choose a view)"] + colours[:-1] + ["all columns"]
    assert "xai-projector-search-by" in classes
    assert re.search(r'<option value="0" selected>\u2068label\u2069</option>', html)
    d = _data(html)
    assert d["dims"] == 3 and len(d["z"]) == len(proj3)
    canvas = next(a for t, a in page.tags if t == "canvas")
    assert canvas["tabindex"] == "0"
    # the three axes keep one scale: span of x (or y) over span of z as in the projection
    c = proj3.coordinates
    span2 = max(np.ptp(c[:, 0]), np.ptp(c[:, 1]))
    assert np.ptp(d["z"]) == pytest.approx(np.ptp(c[:, 2]) / span2 * 10000, abs=1)
    flat = _data(proj3.to_html(dims=2))
    assert flat["dims"] == 2
    two = xai.project(np.random.default_rng(2).normal(size=(20, 5)))
    assert _data(two.to_html())["z"] is None
    assert "xai-projector-3d" not in {a.get("class") for _, a in _parse(two.to_html()).tags}


def test_unknown_column_names_the_columns(proj3):
    """A clear error listing every column; bad dims and types are refused before any work."""
    with pytest.raises(xai.UnknownNameError) as err:
        proj3.show(color_by="scroe")
    for name in ("label", "score", "colour", "none"):
        assert name in str(err.value)
    assert "'scroe'" in str(err.value)
    with pytest.raises(xai.ValidationError, match="dims must be 2 or 3"):
        proj3.show(dims=4)
    with pytest.raises(xai.ValidationError, match="color_by must be a column name"):
        proj3.show(color_by=3)
    two = xai.project(np.random.default_rng(2).normal(size=(20, 5)))
    with pytest.raises(xai.ValidationError, match="needs a 3-D projection"):
        two.save_html("never-written.html", dims=3)
    assert two.show().color_by == "none"


def test_hostile_column_names_and_values_are_escaped_and_isolated(proj3):
    """No hostile markup survives into the page; JSON gives the names back; bidi text is isolated."""
    view = proj3.show(color_by=HOSTILE_NAME)
    assert isinstance(view, ProjectionView) and view.color_by == HOSTILE_NAME
    for html in (view.to_html(), view._repr_html_(), xai.Report("r", seed=0).add(view).to_html()):
        assert "<img src=x" not in html and "<script>alert" not in html and "<b>bold" not in html
        page = _parse(html)
        assert not any(t == "img" and "onerror" in a for t, a in page.tags)
        d = _data(html)
        names = [c["name"] for c in d["colorings"]]
        assert HOSTILE_NAME in names
        enc = d["colorings"][names.index(HOSTILE_NAME)]
        assert enc["classes"] == sorted(HOSTILE_VALUES)
        assert f"\u2068{HOSTILE_NAME}\u2069" in page.options
        # the legend shows the name and every value each in its own <bdi> (printed, as every
        # string, as a directional isolate by the core's environment)
        assert isolate(HOSTILE_NAME) in page.bdi
        assert {isolate(v) for v in HOSTILE_VALUES} <= set(page.bdi)


def test_standalone_page_carries_the_theme_style_sheet(proj3, tmp_path):
    """save_html's page holds the report's light and dark rules, scoped to its root element."""
    page = proj3.save_html(tmp_path / "view.html").read_text(encoding="utf-8")
    assert '<meta name="color-scheme" content="light dark">' in page
    style = re.search(r"<style>(.*?)</style>", page, re.S)
    assert style is not None and re.search(r"prefers-color-scheme:\s*dark", style.group(1))
    scope = re.search(r'class="(xai-scope-[\w-]+) xai-root"', page)
    assert scope is not None and f".{scope.group(1)}.xai-root" in style.group(1)


def test_float_metadata_in_its_own_precision():
    """A float32 confidence reads 0.993 (not 0.9929999709129333) in the columns, hover data and export."""
    conf = np.array([0.993, 0.5, 0.25, 0.0701], dtype=np.float32)
    p = xai.project(
        np.random.default_rng(0).normal(size=(4, 3)),
        labels=[7, 1, 7, 2],
        metadata={"confidence": conf, "loss": np.array([0.1, 0.2, 1 / 3, 2.0])},
    )
    assert p.metadata["confidence"].tolist() == ["0.993", "0.5", "0.25", "0.0701"]
    assert p.metadata["loss"].tolist()[:3] == ["0.1", "0.2", repr(1 / 3)]  # float64: its own digits
    assert _data(p.to_html())["columns"]["confidence"][0] == "0.993"
    assert p.search("7").indices.tolist() == [0, 2]  # by label: not 0.0701's 7
    assert p.search("7", fields="confidence").indices.tolist() == [3]
