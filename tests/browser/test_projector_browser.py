"""The projector view in headless Chromium: no console errors, search finds points, a click
lists the neighbours, in a standalone page, a notebook cell and a report; readable without script."""

from __future__ import annotations

import numpy as np
import pytest

import xai_core as xai

pytestmark = pytest.mark.browser

HOSTILE = (
    "</script><img src=x onerror=alert(1)>",
    "<script>alert('x')</script>",
    '" onmouseover="alert(1)',
)
meta_names = ["note", "id"]
NO_EVENTS = {"console": [], "dialogs": [], "network": [], "page_errors": []}


@pytest.fixture(scope="module")
def projection():
    """Three clusters of 60 points: word labels, hostile metadata, small images, attributions."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 60)
    X = rng.normal(scale=6.0, size=(3, 10))[y] + rng.normal(size=(180, 10))
    labels = np.array(["seven", "three", "one"])[y]
    meta = dict(
        zip(meta_names, ([HOSTILE[i % 3] for i in range(180)], [f"pt{i}" for i in range(180)]))
    )
    e = xai.Explanation(
        values=rng.normal(size=(180, 8, 8)), base_values=np.zeros(180), target=np.zeros(180, int)
    )
    return xai.project(
        X, labels=labels, metadata=meta, images=rng.random((180, 8, 8)), explanation=e
    )


def _click_point(page, i: int) -> None:
    """Click point ``i`` on the canvas, at the position the view's data gives it."""
    box = page.locator("canvas.xai-projector-canvas").bounding_box()
    data = page.evaluate(
        "JSON.parse(document.querySelector('script.xai-projector-data').textContent)"
    )
    pad, w, h = 12, 640, 480
    x = pad + data["x"][i] / 10000 * (w - 2 * pad)
    y = pad + (1 - data["y"][i] / 10000) * (h - 2 * pad)
    page.mouse.click(box["x"] + x * box["width"] / w, box["y"] + y * box["height"] / h)


@pytest.mark.parametrize(
    "kind", ["page", "notebook", "report"], ids=["standalone-page", "notebook-output", "report"]
)
def test_search_and_click_for_neighbors(open_page, projection, tmp_path, kind):
    """No console errors; the search box finds the matching points; a click lists the exact neighbours."""
    path = tmp_path / f"{kind}.html"
    if kind == "page":
        projection.save_html(path, title=HOSTILE[0])
    elif kind == "report":  # the report's CSP allows the section's script by hash
        xai.Report(HOSTILE[1], seed=0).add(projection, title=HOSTILE[2]).save(path)
    else:  # a notebook cell's output inside a plain page, as Jupyter shows it
        path.write_text(
            "<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
            + projection._repr_html_()
            + "</body></html>",
            encoding="utf-8",
        )
    _, page, events = open_page(path.resolve().as_uri())
    assert page.locator("canvas.xai-projector-canvas").is_visible()
    assert not page.locator("img.xai-projector-svg").is_visible()
    page.fill("input.xai-projector-search", "SEVEN")
    expected = projection.search("seven")
    assert len(expected) == 60
    status = page.locator(".xai-projector-status").text_content()
    assert status == f"{len(expected)} of {len(projection)} points match"
    listed = page.locator(".xai-projector-results button").evaluate_all(
        "bs => bs.map(b => +b.dataset.index)"
    )
    assert listed == expected.indices[:20].tolist()
    page.select_option("select.xai-projector-search-by", str(["label", *meta_names].index("id")))
    page.check("input.xai-projector-regex")
    page.fill("input.xai-projector-search", r"^pt1\d$")
    assert page.locator(".xai-projector-status").text_content().startswith("10 of")

    i = 17
    _click_point(page, i)
    neighbours = page.locator(".xai-projector-neighbors button").evaluate_all(
        "bs => bs.map(b => +b.dataset.index)"
    )
    picked = int(page.locator(".xai-projector-selected").text_content().split("#")[1].split()[0])
    assert picked == i or np.allclose(projection.coordinates[picked], projection.coordinates[i])
    assert neighbours == projection.neighbors(8, "cosine").indices[picked].tolist()
    assert page.locator(".xai-projector-detail img").count() == 2  # thumbnail, attributions
    assert page.locator(".xai-projector-heatmap img").get_attribute("alt") == (
        f"attributions of point {picked}"
    )
    page.locator(".xai-projector-neighbors button").first.click()  # follow a neighbour
    assert (
        page.locator(".xai-projector-selected")
        .text_content()
        .startswith(f"Selected: #{neighbours[0]}")
    )
    assert events == NO_EVENTS


def test_view_is_readable_without_javascript(open_page, projection, tmp_path):
    """With JavaScript off the standalone page shows the SVG scatter, legend and summary."""
    path = projection.save_html(tmp_path / "nojs.html")
    _, page, events = open_page(path.resolve().as_uri(), javascript=False)
    assert events == NO_EVENTS
    assert page.locator("img.xai-projector-svg").is_visible()
    assert not page.locator("canvas.xai-projector-canvas").is_visible()
    assert "variance explained" in page.locator("table.xai-kv").text_content()


@pytest.fixture(scope="module")
def digits():
    """300 points labelled 0..9 with a float32 confidence each: many confidences hold a 7."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 10, 300)
    X = rng.normal(scale=5.0, size=(10, 6))[y] + rng.normal(size=(300, 6))
    conf = rng.uniform(0.5, 1.0, 300).astype(np.float32)
    return xai.project(X, labels=y, metadata={"confidence": conf}), y


def _canvas_rgb(page, xs, ys):
    """The canvas's pixels at frame positions, composited on its white background, shape (n, 3)."""
    rgba = page.evaluate(
        """([xs, ys]) => { const c = document.querySelector('canvas.xai-projector-canvas');
        const g = c.getContext('2d'), k = c.width / 640;
        return xs.map((x, i) => Array.from(g.getImageData(Math.round(x * k), Math.round(ys[i] * k), 1, 1).data)); }""",
        [xs, ys],
    )
    a = np.asarray(rgba, dtype=float)
    return a[:, :3] * a[:, 3:] / 255 + 255 * (1 - a[:, 3:] / 255)


def test_search_by_label_then_by_a_chosen_column(open_page, digits, tmp_path):
    """ "7" finds the points labelled 7 only; "Search by confidence" searches that column instead."""
    p, y = digits
    path = p.save_html(tmp_path / "digits.html")
    _, page, events = open_page(path.resolve().as_uri())
    page.fill("input.xai-projector-search", "7")
    labelled = int((y == 7).sum())
    status = page.locator(".xai-projector-status")
    assert status.text_content() == f"{labelled} of 300 points match"
    listed = page.locator(".xai-projector-results button").evaluate_all(
        "bs => bs.map(b => +b.dataset.index)"
    )
    assert listed == np.flatnonzero(y == 7)[:20].tolist()
    by_conf = p.search("7", fields="confidence")
    assert len(by_conf) != labelled
    page.select_option("select.xai-projector-search-by", "1")
    assert status.text_content() == f"{len(by_conf)} of 300 points match"
    page.select_option("select.xai-projector-search-by", "-1")
    assert (
        status.text_content() == f"{len(p.search('7', fields=list(p.columns)))} of 300 points match"
    )
    buttons = page.locator(".xai-projector-results button")
    for i, text in zip(buttons.evaluate_all("bs => bs.map(b => +b.dataset.index)"),
                       buttons.all_text_contents()):  # fmt: skip
        shown = p.metadata["confidence"][i]
        assert f"\u2068{shown}\u2069" in text and len(shown) <= 10  # float32's own digits
    assert events == NO_EVENTS


def test_unmatched_points_stay_visible(open_page, digits, tmp_path):
    """After a search the other points are dimmed, not gone: clearly off the background."""
    p, y = digits
    path = p.save_html(tmp_path / "digits.html")
    _, page, _ = open_page(path.resolve().as_uri())
    data = page.evaluate(
        "JSON.parse(document.querySelector('script.xai-projector-data').textContent)"
    )
    fx = 12 + np.asarray(data["x"]) / 10000 * 616
    fy = 12 + (1 - np.asarray(data["y"]) / 10000) * 456
    # points of label 0 with no other point within 4 px, so the pixel is theirs alone
    d = np.hypot(fx[:, None] - fx[None], fy[:, None] - fy[None])
    np.fill_diagonal(d, np.inf)
    alone = np.flatnonzero((y == 0) & (d.min(axis=1) > 4))
    assert alone.size >= 3
    full = _canvas_rgb(page, fx[alone].tolist(), fy[alone].tolist())
    page.fill("input.xai-projector-search", "7")
    dimmed = _canvas_rgb(page, fx[alone].tolist(), fy[alone].tolist())
    off_full = np.abs(255 - full).sum(axis=1)
    off_dim = np.abs(255 - dimmed).sum(axis=1)
    assert (off_full > 60).all()
    assert (off_dim < off_full).all()  # dimmed ...
    assert (off_dim >= 0.4 * off_full).all()  # ... but at least 40% as strong: still visible
