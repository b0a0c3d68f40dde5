"""The projector's interactive view in headless Chromium: zoom, pan, pinch, colour by a column,
the 3-D view's rotation, keyboard controls, dark and light themes; offline and without errors."""

from __future__ import annotations

import numpy as np
import pytest

import xai_core as xai
from xai_projector.colors import PALETTE, SCALE

pytestmark = pytest.mark.browser

NO_EVENTS = {"console": [], "dialogs": [], "network": [], "page_errors": []}
W, H, PAD = 640, 480, 12
HOSTILE = "</script><img src=x onerror=alert(1)>\u202e"
API = "document.querySelector('div.xai-projector').xaiProjector"


@pytest.fixture(scope="module")
def proj():
    """80 points in 3-D with labels, a categorical, a numeric and a hostile column."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 6)) * [5, 4, 3, 1, 1, 1]
    meta = {
        "kind": np.array(["alpha", "beta", "gamma", "delta", "eps"])[np.arange(80) % 5],
        "score": np.round(X[:, 0] * 3.7, 4),
        HOSTILE: [HOSTILE if i % 2 else "\u202eplain" for i in range(80)],
    }
    return xai.project(X, n_components=3, labels=[f"L{i % 3}" for i in range(80)], metadata=meta)


def _open(open_page, tmp_path, html, name="view.html", scheme="light"):
    path = tmp_path / name
    path.write_text(html, encoding="utf-8")
    context, page, events = open_page(path.resolve().as_uri())
    page.emulate_media(color_scheme=scheme)
    return context, page, events


def _frame(page):
    """The canvas's drawing area (inside its 1px border) in page pixels."""
    box = page.locator("canvas.xai-projector-canvas").bounding_box()
    inner = page.eval_on_selector(
        "canvas.xai-projector-canvas",
        "c => [c.clientLeft, c.clientTop, c.clientWidth, c.clientHeight]",
    )
    return {
        "x": box["x"] + inner[0],
        "y": box["y"] + inner[1],
        "width": inner[2],
        "height": inner[3],
    }


def _state(page):
    return page.evaluate(
        f"() => {{ const v = {API}; return [v.view(), Array.from(v.px), Array.from(v.py)]; }}"
    )


def _static_xy(data):
    x = PAD + np.asarray(data["x"]) / 10000 * (W - 2 * PAD)
    y = PAD + (1 - np.asarray(data["y"]) / 10000) * (H - 2 * PAD)
    return x, y


def _data(page):
    return page.evaluate(
        "JSON.parse(document.querySelector('script.xai-projector-data').textContent)"
    )


def test_wheel_zoom_drag_pan_and_reset_in_2d(open_page, proj, tmp_path):
    """Zoom keeps the point under the cursor fixed and scales about it; a drag moves every point by the drag."""
    _, page, events = _open(open_page, tmp_path, proj.to_html(dims=2, color_by="kind"))
    box = _frame(page)
    assert box["width"] == W and box["height"] == H
    view, px0, py0 = _state(page)
    assert view["k"] == 1 and view["dims"] == 2
    sx, sy = _static_xy(_data(page))
    np.testing.assert_allclose(px0, sx, atol=1e-3)  # the unzoomed view is the static picture
    mx, my = 200.0, 150.0
    page.mouse.move(box["x"] + mx, box["y"] + my)
    page.mouse.wheel(0, -240)
    page.wait_for_timeout(100)
    view, px1, py1 = _state(page)
    f = view["k"]
    assert f > 1.2
    # a scaling by f about one fixed point, the cursor (to the pixel the mouse lands on)
    fx = (np.array(px1) - f * np.array(px0)) / (1 - f)
    fy = (np.array(py1) - f * np.array(py0)) / (1 - f)
    assert np.ptp(fx) < 1e-2 and np.ptp(fy) < 1e-2
    assert abs(fx[0] - mx) < 1 and abs(fy[0] - my) < 1
    page.mouse.move(box["x"] + 300, box["y"] + 300)
    page.mouse.down()
    page.mouse.move(box["x"] + 340, box["y"] + 270, steps=4)
    page.mouse.up()
    page.wait_for_timeout(100)
    view, px2, py2 = _state(page)
    assert view["k"] == f
    np.testing.assert_allclose(np.array(px2) - px1, 40, atol=1e-2)
    np.testing.assert_allclose(np.array(py2) - py1, -30, atol=1e-2)
    page.click("button.xai-projector-reset")
    page.wait_for_timeout(50)
    view, px3, _ = _state(page)
    assert (view["k"], view["tx"], view["ty"]) == (1, 0, 0)
    np.testing.assert_allclose(px3, px0, atol=1e-3)
    assert page.locator(".xai-projector-detail").text_content() == ""  # a drag is no click
    assert events == NO_EVENTS


def test_pinch_zooms_about_the_fingers(open_page, proj, tmp_path):
    """Two touch pointers moving apart to twice their distance zoom by two about their midpoint."""
    _, page, events = _open(open_page, tmp_path, proj.to_html(dims=2))
    _, px0, _ = _state(page)
    page.evaluate(
        """() => {
        const c = document.querySelector('canvas.xai-projector-canvas');
        const b = c.getBoundingClientRect(), r = {left: b.left + c.clientLeft, top: b.top + c.clientTop};
        const ev = (type, id, x, y) => c.dispatchEvent(new PointerEvent(type, {pointerId: id,
          pointerType: 'touch', isPrimary: id === 1, bubbles: true, clientX: r.left + x, clientY: r.top + y}));
        ev('pointerdown', 1, 300, 240); ev('pointerdown', 2, 340, 240);
        ev('pointermove', 2, 380, 240);
        ev('pointerup', 1, 300, 240); ev('pointerup', 2, 380, 240);
    }"""
    )
    page.wait_for_timeout(100)
    view, px1, _ = _state(page)
    assert view["k"] == pytest.approx(2.0)
    # zoom about the old midpoint (320) by 2, then pan by the midpoint's move (+20)
    np.testing.assert_allclose(px1, 320 + 2 * (np.array(px0) - 320) + 20, atol=1e-2)
    assert events == NO_EVENTS


def test_keyboard_controls(open_page, proj, tmp_path):
    """Tab reaches the controls; Enter on zoom-in zooms; on the plot + zooms, arrows pan, 0 resets."""
    _, page, events = _open(open_page, tmp_path, proj.to_html(dims=2))
    page.focus("select.xai-projector-color")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "xai-projector-zoom-in"
    page.keyboard.press("Enter")
    page.wait_for_timeout(50)
    assert _state(page)[0]["k"] == pytest.approx(1.25)
    page.focus("canvas.xai-projector-canvas")
    page.keyboard.press("0")
    page.keyboard.press("+")
    page.keyboard.press("ArrowLeft")
    page.wait_for_timeout(50)
    view = _state(page)[0]
    assert view["k"] == pytest.approx(1.25) and view["tx"] == pytest.approx(20)
    page.keyboard.press("0")
    page.wait_for_timeout(50)
    assert _state(page)[0]["k"] == 1
    assert events == NO_EVENTS


def test_colour_by_switches_colours_and_legend(open_page, proj, tmp_path):
    """Each point takes its category's palette colour (numeric: its place on the scale); the legend follows."""
    _, page, events = _open(open_page, tmp_path, proj.to_html())
    names = list(proj.columns)

    def colours():
        return page.evaluate(
            f"() => Array.from({{length: {len(proj)}}}, (_, i) => {API}.colorOf(i))"
        )

    labels, codes = np.unique(proj.labels.astype(str), return_inverse=True)
    assert colours() == [PALETTE[c] for c in codes]  # default: the labels
    items = page.locator(".xai-projector-legend-name").all_text_contents()
    assert items == labels.tolist()

    page.select_option("select.xai-projector-color", str(names.index("kind")))
    kinds, codes = np.unique(proj.metadata["kind"].astype(str), return_inverse=True)
    assert colours() == [PALETTE[c] for c in codes]
    assert page.locator(".xai-projector-legend-name").all_text_contents() == kinds.tolist()
    assert page.locator(".xai-projector-legend-title").text_content() == "Colour: kind"
    legend = page.locator(".xai-projector-legend").text_content()
    assert all(f"{k} (16)" in legend for k in kinds)

    page.select_option("select.xai-projector-color", str(names.index("score")))
    score = proj.metadata["score"].astype(float)
    got = colours()
    assert got[int(np.argmin(score))] == SCALE[0] and got[int(np.argmax(score))] == SCALE[-1]
    t = np.rint((score - score.min()) / np.ptp(score) * 255).astype(int)
    assert got == [SCALE[i] for i in t]
    assert page.locator(".xai-projector-legend-name").count() == 0
    assert page.locator(".xai-projector-cbar-min").text_content() == f"{score.min():.4g}"
    assert page.locator(".xai-projector-cbar-max").text_content() == f"{score.max():.4g}"
    assert page.locator(".xai-projector-colorbar canvas").is_visible()

    page.select_option("select.xai-projector-color", str(names.index(HOSTILE)))
    assert page.locator(".xai-projector-legend-title bdi").text_content() == HOSTILE
    assert page.locator("img[src='x']").count() == 0
    page.select_option("select.xai-projector-color", "-1")
    assert set(colours()) == {PALETTE[0]}
    assert events == NO_EVENTS


def test_3d_view_rotates_orthographically(open_page, proj, tmp_path):
    """Dragging turns the cloud: the screen x is an affine function of cos(yaw) x + sin(yaw) z."""
    _, page, events = _open(open_page, tmp_path, proj.to_html())
    view, px0, py0 = _state(page)
    assert view["dims"] == 3 and page.is_checked("input.xai-projector-3d")
    c = proj.coordinates

    def affine_residual(target, feature):
        A = np.column_stack([feature, np.ones(len(feature))])
        coef, *_ = np.linalg.lstsq(A, target, rcond=None)
        return np.abs(A @ coef - target).max(), coef[0]

    res, _ = affine_residual(np.array(px0), c[:, 0])  # unrotated: x is component 1
    assert res < 0.05  # coordinates travel as ints of 1/10000
    box = _frame(page)
    page.mouse.move(box["x"] + 300, box["y"] + 240)
    page.mouse.down()
    page.mouse.move(box["x"] + 380, box["y"] + 240, steps=5)  # horizontal: yaw only
    page.mouse.up()
    page.wait_for_timeout(100)
    view, px1, py1 = _state(page)
    yaw = view["yaw"]
    assert yaw == pytest.approx(0.8) and view["pitch"] == 0
    assert np.abs(np.array(px1) - px0).max() > 5  # the projected coordinates changed
    np.testing.assert_allclose(py1, py0, atol=1e-3)  # a turn about the vertical axis
    feature = np.cos(yaw) * (c[:, 0] - c[:, 0].mean()) + np.sin(yaw) * (c[:, 2] - c[:, 2].mean())
    res, slope = affine_residual(np.array(px1), feature)
    assert res < 0.05 and slope > 0
    # a vertical drag tilts: y now mixes component 2 and the turned depth
    page.keyboard.press("Tab")  # no effect on the view
    page.focus("canvas.xai-projector-canvas")
    page.keyboard.press("ArrowDown")
    page.wait_for_timeout(50)
    assert _state(page)[0]["pitch"] == pytest.approx(0.2)
    # the 2-D switch: back to the static mapping of components 1 and 2
    page.uncheck("input.xai-projector-3d")
    page.wait_for_timeout(50)
    view, px2, _ = _state(page)
    assert view["dims"] == 2
    np.testing.assert_allclose(px2, _static_xy(_data(page))[0], atol=1e-3)
    assert events == NO_EVENTS


def test_click_selects_in_3d_and_works_in_a_report(open_page, proj, tmp_path):
    """In a report (scripts allowed by hash) a click on a rotated point lists its neighbours."""
    html = xai.Report("r", seed=0).add(proj.show(color_by="score")).to_html()
    _, page, events = _open(open_page, tmp_path, html)
    page.focus("canvas.xai-projector-canvas")
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(50)
    _, px, py = _state(page)
    box = _frame(page)
    i = int(np.argmax(px))  # the rightmost point, which no other covers
    page.mouse.click(box["x"] + px[i], box["y"] + py[i])
    text = page.locator(".xai-projector-selected").text_content()
    assert text.startswith(f"Selected: #{i} ")
    nb = page.locator(".xai-projector-neighbors button").evaluate_all(
        "bs => bs.map(b => +b.dataset.index)"
    )
    assert nb == proj.neighbors(8, "cosine").indices[i].tolist()
    assert events == NO_EVENTS


_DARK_HOST = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>
:root{--jp-layout-color0:#111111;--jp-layout-color2:#424242;
--jp-content-font-color1:rgba(255,255,255,0.87);--jp-content-font-color2:rgba(255,255,255,0.6);
--jp-border-color2:#616161;--jp-content-link-color:#64b5f6}
body{background:var(--jp-layout-color0);color:var(--jp-content-font-color1)}
.jp-RenderedHTMLCommon th,.jp-RenderedHTMLCommon td{color:#fff}
.jp-RenderedHTMLCommon th{background:#eeeeee}
</style></head><body><div class="jp-RenderedHTMLCommon">FRAGMENT</div></body></html>"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_controls_and_legend_are_readable_in_both_themes(
    open_page, lowest_contrast, proj, tmp_path, scheme
):
    """In a dark notebook cell and in the standalone page in either scheme, every text has 4.5:1 contrast."""
    cell = _DARK_HOST.replace("FRAGMENT", proj.show(color_by="kind")._repr_html_())
    for name, html in (("cell.html", cell), ("page.html", proj.to_html(color_by="score"))):
        _, page, events = _open(open_page, tmp_path, html, name, scheme)
        worst = lowest_contrast(page)
        assert worst and worst[0][0] >= 4.5, (name, worst)
        assert page.locator("select.xai-projector-color").is_visible()
        assert events == NO_EVENTS


def test_the_static_picture_survives_a_sanitiser(open_page, proj, tmp_path):
    """Through Ammonia (scripts, styles, classes dropped), the scatter, colour bar and legend still show."""
    nh3 = pytest.importorskip("nh3")
    attributes = {tag: set(names) for tag, names in nh3.ALLOWED_ATTRIBUTES.items()}
    attributes["*"] = attributes.get("*", set()) | {"hidden", "title"}
    clean = nh3.clean(
        proj.show(color_by="score")._repr_html_(), attributes=attributes, url_schemes={"data"}
    )
    assert "<script" not in clean and "<canvas" not in clean
    html = f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{clean}</body></html>"
    _, page, events = _open(open_page, tmp_path, html, "clean.html")
    images = page.locator("img").evaluate_all(
        "els => els.map(i => [i.alt, i.naturalWidth, i.complete, i.getBoundingClientRect().width])"
    )
    caption = f"pca projection of {len(proj)} points"
    assert [caption, W, True, W] in images
    score = proj.metadata["score"].astype(float)
    bar = f"colour scale from {score.min():.4g} to {score.max():.4g}"
    assert [bar, 256, True, 256] in images
    assert "Colour: score" in page.locator("body").text_content()
    assert events == NO_EVENTS


@pytest.mark.parametrize("blank", ["\ufeff", "\ufeff\u3000", "\u00a0"])
def test_tensorboard_keeps_every_row_as_javascript_trims(open_page, tmp_path, blank):
    """The exported metadata read as the Projector reads it, with Chromium's own String.trim()."""
    X = np.random.default_rng(3).normal(size=(5, 3))
    labels = ["a", blank, "c", blank, "e"]
    files = xai.project(X, labels=labels).export_tensorboard(tmp_path / "tb")
    text = files["metadata"].read_text(encoding="utf-8")
    _, page, events = open_page("data:text/html,<p>projector</p>")
    rows = page.evaluate(
        """text => {
        const lines = text.split('\\n').filter(line => line.trim().length > 0);
        const header = lines[0].indexOf('\\t') >= 0;
        return (header ? lines.slice(1) : lines).map(line => line.split('\\t'));
    }""",
        text,
    )
    assert len(rows) == len(labels)  # no row dropped, so no label shifted
    assert [r[-1] for r in rows] == labels
    assert events == NO_EVENTS
