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
NO_EVENTS = {"console": [], "dialogs": [], "network": [], "page_errors": []}


@pytest.fixture(scope="module")
def projection():
    """Three clusters of 60 points: word labels, hostile metadata, small images, attributions."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 60)
    X = rng.normal(scale=6.0, size=(3, 10))[y] + rng.normal(size=(180, 10))
    labels = np.array(["seven", "three", "one"])[y]
    meta = {"note": [HOSTILE[i % 3] for i in range(180)], "id": [f"pt{i}" for i in range(180)]}
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
