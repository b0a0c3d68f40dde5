"""t-SNE's iteration animation in headless Chromium: the slider shows a frame, play runs to
the end, pause stops where it is."""

from __future__ import annotations

import numpy as np
import pytest

import xai_core as xai

pytestmark = pytest.mark.browser
pytest.importorskip("openTSNE")

NO_EVENTS = {"console": [], "dialogs": [], "network": [], "page_errors": []}
API = "document.querySelector('div.xai-projector').xaiProjector"
W, H, PAD = 640, 480, 12


@pytest.fixture(scope="module")
def proj():
    X = np.random.default_rng(1).normal(size=(60, 5))
    return xai.project(X, method="tsne", tsne_snapshots=10, max_iter=300, perplexity=10)


def _open(open_page, tmp_path, html):
    path = tmp_path / "view.html"
    path.write_text(html, encoding="utf-8")
    _, page, events = open_page(path.resolve().as_uri())
    return page, events


def _positions(page):
    return page.evaluate(f"() => [Array.from({API}.px), Array.from({API}.py)]")


def test_slider_shows_each_frame(open_page, proj, tmp_path):
    """Frame j draws snapshot j's positions; the page opens on the result."""
    page, events = _open(open_page, tmp_path, proj.to_html())
    d = page.evaluate("JSON.parse(document.querySelector('script.xai-projector-data').textContent)")
    last = len(d["snapshots"]["iterations"]) - 1
    assert page.evaluate(f"() => {API}.frame()") == last
    assert page.text_content(".xai-projector-iteration") == "300 of 300"
    for j in (0, 7):
        page.fill("input.xai-projector-frame", str(j))
        page.wait_for_timeout(60)
        px, py = _positions(page)
        ex = PAD + np.array(d["snapshots"]["x"][j]) / 10000 * (W - 2 * PAD)
        ey = PAD + (1 - np.array(d["snapshots"]["y"][j]) / 10000) * (H - 2 * PAD)
        np.testing.assert_allclose(px, ex, atol=1e-3)
        np.testing.assert_allclose(py, ey, atol=1e-3)
        it = d["snapshots"]["iterations"][j]
        assert page.text_content(".xai-projector-iteration") == f"{it} of 300"
    assert events == NO_EVENTS


def test_play_runs_to_the_end_and_pause_stops(open_page, proj, tmp_path):
    """Play from the end starts over and stops at the last frame; pause holds the frame."""
    page, events = _open(open_page, tmp_path, proj.to_html())
    last = page.evaluate(f"() => {API}.frame()")
    page.click("button.xai-projector-play")
    assert page.text_content("button.xai-projector-play") == "Pause"
    assert page.get_attribute("button.xai-projector-play", "aria-pressed") == "true"
    page.wait_for_function(f"() => {API}.frame() >= 3")
    page.click("button.xai-projector-play")
    held = page.evaluate(f"() => {API}.frame()")
    assert 3 <= held < last and not page.evaluate(f"() => {API}.playing()")
    page.wait_for_timeout(300)
    assert page.evaluate(f"() => {API}.frame()") == held
    assert page.text_content("button.xai-projector-play") == "Play"
    page.click("button.xai-projector-play")
    page.wait_for_function(f"() => !{API}.playing()", timeout=20000)
    assert page.evaluate(f"() => {API}.frame()") == last
    assert page.get_attribute("button.xai-projector-play", "aria-pressed") == "false"
    assert events == NO_EVENTS


def test_a_bookmarked_frame_loads(open_page, proj, tmp_path):
    """A state on snapshot 4 opens there; the page's bookmark of another frame brings it back."""
    view = proj.show()
    view.set_state(frame=4)
    page, events = _open(open_page, tmp_path, view.to_html())
    assert page.evaluate(f"() => {API}.frame()") == 4
    page.fill("input.xai-projector-frame", "9")
    page.click("button.xai-projector-bookmark")
    page.fill("input.xai-projector-frame", "1")
    page.select_option("select.xai-projector-bookmarks", value="0")
    assert page.evaluate(f"() => {API}.frame()") == 9
    assert page.input_value("input.xai-projector-frame") == "9"
    assert events == NO_EVENTS
