"""The projector's pictures and bookmarks in headless Chromium: image thumbnails drawn in the
scatter, labels by a column, bookmarks saved and restored in the page and passed from Python."""

from __future__ import annotations

import numpy as np
import pytest

import xai_core as xai

pytestmark = pytest.mark.browser

NO_EVENTS = {"console": [], "dialogs": [], "network": [], "page_errors": []}
API = "document.querySelector('div.xai-projector').xaiProjector"
SHADES = np.array([0.1, 0.3, 0.5, 0.7, 0.9, 0.2])


@pytest.fixture(scope="module")
def grid():
    """Six points on a 3 x 2 grid, far apart, each with a uniform image of its own grey."""
    X = np.array([[x, y, 0.0] for y in (0, 1) for x in (0, 1, 2)], dtype=float)
    images = np.repeat(SHADES[:, None, None], 8, axis=1).repeat(8, axis=2)
    return xai.project(X, labels=["zero", "one", "two", "three", "four", "five"], images=images,
                       metadata={"size": [f"{v:.2f}" for v in SHADES * 10]})  # fmt: skip


def _open(open_page, tmp_path, html):
    path = tmp_path / "view.html"
    path.write_text(html, encoding="utf-8")
    context, page, events = open_page(path.resolve().as_uri())
    return page, events


# The canvas copied to one that is read often (so Chromium does not warn of repeated readbacks).
_COPY = """const c = document.querySelector('canvas.xai-projector-canvas'), r = c.width / 640;
        const copy = document.createElement('canvas'); copy.width = c.width; copy.height = c.height;
        const g = copy.getContext('2d', {willReadFrequently: true}); g.drawImage(c, 0, 0);"""


def _pixel(page, x, y):
    """The canvas's RGBA at frame point (x, y) (alpha 0 where nothing is drawn)."""
    return page.evaluate(
        """([x, y]) => {"""
        + _COPY
        + """
        return Array.from(g.getImageData(Math.round(x * r), Math.round(y * r), 1, 1).data);
    }""",
        [x, y],
    )


def _positions(page):
    return page.evaluate(f"() => [Array.from({API}.px), Array.from({API}.py)]")


def test_thumbnails_are_drawn_in_place_of_the_points(open_page, grid, tmp_path):
    """With thumbnails each point's centre shows its own image's grey; the toggle brings the points back."""
    page, events = _open(open_page, tmp_path, grid.to_html(thumbnails=True))
    page.wait_for_function(f"() => {API}.thumbsReady()")  # the data-URI images decoded
    page.evaluate(f"() => {API}.reset()")
    page.wait_for_timeout(100)
    px, py = _positions(page)
    assert page.evaluate(f"() => {API}.thumbSize()") >= 8
    for i, shade in enumerate(SHADES):
        grey = round(shade * 255)
        assert _pixel(page, px[i], py[i]) == [grey, grey, grey, 255], i
    assert page.is_checked("input.xai-projector-thumbs")
    page.uncheck("input.xai-projector-thumbs")
    page.wait_for_timeout(100)
    for i, shade in enumerate(SHADES):
        grey = round(shade * 255)
        assert _pixel(page, px[i], py[i])[:3] != [grey, grey, grey], i  # a coloured point again
        assert _pixel(page, px[i] + 5, py[i] + 5)[3] == 0  # nothing around it
    assert events == NO_EVENTS


def test_label_by_draws_each_points_text(open_page, grid, tmp_path):
    """ "Label by" draws text right of the points, from the chosen column, and none without it."""
    page, events = _open(open_page, tmp_path, grid.to_html())
    px, py = _positions(page)

    def dark_right_of(i):
        return page.evaluate(
            """([x, y]) => {"""
            + _COPY
            + """
            const d = g.getImageData(Math.round((x + 5) * r), Math.round((y - 5) * r),
              Math.round(30 * r), Math.round(10 * r)).data;
            let dark = 0;
            for (let j = 0; j < d.length; j += 4) { if (d[j + 3] > 128 && d[j] < 100 && d[j + 1] < 100 && d[j + 2] < 100) dark++; }
            return dark;
        }""",
            [px[i], py[i]],
        )

    assert [dark_right_of(i) for i in range(6)] == [0] * 6
    assert page.evaluate(f"() => {API}.labelled()") == []
    page.select_option("select.xai-projector-label-by", label="\u2068label\u2069")
    page.wait_for_timeout(100)
    assert sorted(page.evaluate(f"() => {API}.labelled()")) == list(range(6))
    assert all(dark_right_of(i) > 5 for i in range(6))
    page.select_option("select.xai-projector-label-by", label="no labels")
    page.wait_for_timeout(100)
    assert [dark_right_of(i) for i in range(6)] == [0] * 6
    assert events == NO_EVENTS


def test_labels_are_capped_and_the_selection_comes_first(open_page, tmp_path):
    """Of 1,500 points at most 200 get labels, the searched ones among them first."""
    rng = np.random.default_rng(0)
    p = xai.project(rng.normal(size=(1500, 4)), labels=[f"w{i}" for i in range(1500)])
    page, events = _open(open_page, tmp_path, p.to_html(label_by="label"))
    drawn = page.evaluate(f"() => {API}.labelled()")
    assert 0 < len(drawn) <= 200 and len(set(drawn)) == len(drawn)
    page.fill("input.xai-projector-search", "w149")  # w149 and w1490..w1499
    page.wait_for_timeout(100)
    drawn = page.evaluate(f"() => {API}.labelled()")
    hits = p.search("w149").indices.tolist()
    assert len(drawn) <= 200 and len(hits) == 11
    among = [i for i in drawn if i in hits]  # overlapping labels are skipped
    assert len(among) >= 1 and drawn[: len(among)] == among
    assert events == NO_EVENTS


def test_bookmarks_save_and_restore_in_the_page(open_page, grid, tmp_path):
    """ "Bookmark view" adds the current state to the menu; choosing it later restores it."""
    page, events = _open(open_page, tmp_path, grid.to_html())
    page.evaluate(f"() => {{ const v = {API}; v.zoom(2, 100, 100); v.pan(15, -5); v.select(3); }}")
    page.select_option("select.xai-projector-label-by", label="\u2068size\u2069")
    page.fill("input.xai-projector-search", "t")
    before = page.evaluate(f"() => {API}.getState()")
    page.click("button.xai-projector-bookmark")
    assert page.locator("select.xai-projector-bookmarks option").all_text_contents()[-1] == (
        "\u2068view 1\u2069"
    )
    page.click("button.xai-projector-reset")
    page.fill("input.xai-projector-search", "")
    page.evaluate(f"() => {{ {API}.select(-1); {API}.setLabel(-1); }}")
    assert page.evaluate(f"() => {API}.getState()") != before
    page.select_option("select.xai-projector-bookmarks", label="(choose a view)")
    page.select_option("select.xai-projector-bookmarks", value="0")
    after = page.evaluate(f"() => {API}.getState()")
    assert {k: v for k, v in after.items() if k != "name"} == {
        k: v for k, v in before.items() if k != "name"
    }
    assert page.input_value("input.xai-projector-search") == "t"
    assert "Selected: #3" in page.locator(".xai-projector-detail").text_content()
    assert events == NO_EVENTS


def test_python_state_and_bookmarks_open_in_the_page(open_page, grid, tmp_path):
    """The view opens in the Python state; a bookmark saved in Python is in the menu and loads."""
    view = grid.show()
    view.set_state(zoom=3, pan_x=20, pan_y=-10, selected=2, label_by="size")
    view.bookmark("close")
    view.set_state(zoom=1.5, pan_x=0, pan_y=0, selected=None, label_by="none", search="f")
    page, events = _open(open_page, tmp_path, view.to_html())
    st = page.evaluate(f"() => {API}.getState()")
    assert (st["k"], st["tx"], st["selected"], st["label"], st["search"]) == (1.5, 0, -1, -1, "f")
    assert "2 of 6 points match" in page.locator(".xai-projector-status").text_content()
    page.select_option("select.xai-projector-bookmarks", label="\u2068close\u2069")
    st = page.evaluate(f"() => {API}.getState()")
    assert (st["k"], st["tx"], st["ty"], st["selected"]) == (3, 20, -10, 2)
    assert st["label"] == [c for c in grid.columns].index("size")
    assert "Selected: #2" in page.locator(".xai-projector-detail").text_content()
    assert events == NO_EVENTS
