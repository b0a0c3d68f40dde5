"""The demo report on a phone and a desktop: nothing overflows the page, no word is split, any host theme reads."""

from __future__ import annotations

import re

import numpy as np
import pytest

import xai_core as xai

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: Widths of a phone (iPhone 12-15) and of a desktop window, in CSS pixels.
WIDTHS = (390, 1280)

#: What VS Code's and Colab's dark themes do to a notebook output: light text on every cell.
HOST_CELLS = "th, td { color: #fff }"
#: VS Code's dark theme also hands its colours to the output as variables.
VSCODE_DARK = (
    ":root{--vscode-editor-foreground:#cccccc;--vscode-editor-background:#1f1f1f}"
    "body{background:#1f1f1f;color:#cccccc}" + HOST_CELLS
)

_OPEN_ALL = "() => document.querySelectorAll('details').forEach(d => { d.open = true; })"

#: Table cells a word of which is split across lines or sticks out of its cell.
_SPLIT_WORDS = """() => {
  const bad = [];
  for (const cell of document.querySelectorAll('th, td')) {
    if (!cell.getClientRects().length) continue;
    const box = cell.getBoundingClientRect();
    const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      if (node.parentElement.closest('th, td') !== cell) continue;  // a nested table's own cell
      const re = /[^\\s-]+-?/g; let m;  // a word, with the hyphen a line may break after
      while ((m = re.exec(node.data))) {
        const range = document.createRange();
        range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
        const rects = [...range.getClientRects()].filter(r => r.width > 0);
        if (!rects.length) continue;
        const lines = new Set(rects.map(r => Math.round(r.top)));
        const right = Math.max(...rects.map(r => r.right));
        if (lines.size > 1 || right > box.right + 0.5) {
          bad.push([m[0], Math.round(box.width), lines.size]);
        }
      }
    }
  }
  return bad.slice(0, 10);
}"""


def _open(open_page, url: str, width: int, scheme: str = "light", unfold: bool = True):
    """The page at ``width`` px in ``scheme``, every <details> opened unless ``unfold`` is False."""
    context, page, events = open_page(url)
    page.set_viewport_size({"width": width, "height": 800})
    page.emulate_media(color_scheme=scheme)
    if unfold:
        page.evaluate(_OPEN_ALL)
    page.wait_for_timeout(100)
    return page, events


def _scroll_width(page) -> tuple[int, int]:
    return page.evaluate("() => [document.scrollingElement.scrollWidth, innerWidth]")


@pytest.mark.parametrize("width", WIDTHS, ids=[f"{w}px" for w in WIDTHS])
def test_demo_report_never_scrolls_sideways(open_page, demo_report, width):
    """At phone and desktop width the page is no wider than the window, every row unfolded."""
    page, events = _open(open_page, demo_report.as_uri(), width)
    scroll, inner = _scroll_width(page)
    assert inner == width and scroll <= inner, (scroll, inner)
    assert events == {"console": [], "dialogs": [], "network": [], "page_errors": []}


@pytest.mark.parametrize("width", WIDTHS, ids=[f"{w}px" for w in WIDTHS])
def test_demo_report_cells_are_never_narrower_than_a_word(open_page, demo_report, width):
    """No table cell splits a word across lines: wide tables scroll in their own box instead."""
    page, _ = _open(open_page, demo_report.as_uri(), width)
    assert page.locator("th, td").count() > 100
    assert page.evaluate(_SPLIT_WORDS) == []
    if width < 600:  # the wide tables scroll inside their own boxes instead
        scrolling = page.eval_on_selector_all(
            ".xai-table-wrap", "els => els.filter(e => e.scrollWidth > e.clientWidth).length"
        )
        assert scrolling > 0


def test_heatmaps_keep_their_size_on_a_phone(open_page, demo_report):
    """Heatmaps in tables and panels stay at least 150 px wide at 390 px (they were 8 px)."""
    page, _ = _open(open_page, demo_report.as_uri(), 390)
    widths = page.eval_on_selector_all(
        "img.xai-heatmap", "els => els.map(e => e.getBoundingClientRect().width)"
    )
    assert len(widths) > 10 and min(widths) >= 150, sorted(widths)[:5]


def _with_host_style(path, tmp_path, css: str):
    html = path.read_text(encoding="utf-8")
    hosted = tmp_path / "hosted.html"
    hosted.write_text(html.replace("<head>", f"<head><style>{css}</style>", 1), encoding="utf-8")
    return hosted


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("host", [HOST_CELLS, VSCODE_DARK], ids=["cells-white", "vscode-dark"])
def test_demo_report_reads_under_a_host_that_colours_cells(
    open_page, lowest_contrast, demo_report, tmp_path, host, scheme
):
    """Every text has WCAG AA contrast (4.5:1) when the host sets only th/td text to white."""
    hosted = _with_host_style(demo_report, tmp_path, host)
    page, events = _open(open_page, hosted.as_uri(), 1280, scheme)
    worst = lowest_contrast(page)
    assert worst and worst[0][0] >= 4.5, worst
    assert events["page_errors"] == []


def _many_rows(n: int) -> xai.Explanation:
    rng = np.random.default_rng(3)
    return xai.Explanation(
        values=rng.normal(size=(n, 6)),
        base_values=np.zeros(n),
        target=np.zeros(n, dtype=int),
        data=rng.normal(size=(n, 6)),
        feature_names=[f"a rather long feature name {i}" for i in range(6)],
        method="shap",
        backend="cpu",
    )


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_notebook_view_fits_a_narrow_dark_pane(open_page, lowest_contrast, tmp_path, scheme):
    """A 40-row notebook view in a 390 px VS Code dark pane: no sideways scroll, readable text."""
    page_html = (
        f"<!DOCTYPE html><html><head><meta name='viewport' content='width=device-width'>"
        f"<style>{VSCODE_DARK}body{{margin:8px}}</style></head>"
        f"<body>{_many_rows(40)._repr_html_()}</body></html>"
    )
    path = tmp_path / "pane.html"
    path.write_text(page_html, encoding="utf-8")
    page, _ = _open(open_page, path.resolve().as_uri(), 390, scheme)
    scroll, inner = _scroll_width(page)
    assert scroll <= inner, (scroll, inner)
    assert page.evaluate(_SPLIT_WORDS) == []
    worst = lowest_contrast(page)
    assert worst and worst[0][0] >= 4.5, worst


def test_folded_rows_open_when_a_row_link_is_followed(open_page, tmp_path):
    """Following the row table's link to a folded row unfolds it and brings it into view."""
    path = tmp_path / "rows.html"
    xai.Report("Many rows", seed=0).add(_many_rows(40)).save(path)
    context, page, events = open_page(path.resolve().as_uri())
    panel = page.locator("details.xai-row").nth(30)
    assert not panel.is_visible()
    page.locator("details.xai-row-index > summary").click()  # 40 rows: the table is folded too
    page.locator("table.xai-rows a", has_text=re.compile(r"^30$")).click()
    page.wait_for_timeout(100)
    assert panel.is_visible() and panel.evaluate("d => d.open")
    top = panel.evaluate("d => d.getBoundingClientRect().top")
    assert 0 <= top < page.viewport_size["height"]
    assert events["page_errors"] == []


def test_many_rows_fold_into_a_short_page(open_page, tmp_path):
    """40 rows at 390 px: the folded page is a fraction of the unfolded one, and Expand all shows all 40."""
    path = tmp_path / "rows.html"
    xai.Report("Many rows", seed=0).add(_many_rows(40)).save(path)
    page, _ = _open(open_page, path.resolve().as_uri(), 390, unfold=False)
    folded = page.evaluate("() => document.scrollingElement.scrollHeight")
    visible = page.eval_on_selector_all(
        "details.xai-row", "els => els.filter(e => e.checkVisibility()).length"
    )
    assert visible == 4
    page.get_by_role("button", name="Expand all rows").click()
    unfolded = page.evaluate("() => document.scrollingElement.scrollHeight")
    visible = page.eval_on_selector_all(
        "details.xai-row", "els => els.filter(e => e.checkVisibility()).length"
    )
    assert visible == 40 and folded * 3 < unfolded, (folded, unfolded)


def _text_explanation() -> xai.Explanation:
    tokens = np.array([["the", "film", "was", "wonderful", "but", "long"]] * 2, dtype=object)
    values = np.array([[0.01, 0.2, -0.05, 1.0, -0.6, -0.9], [0.3, -1.0, 0.0, 0.5, 0.9, 0.1]])
    return xai.Explanation(
        values=values,
        base_values=np.zeros(2),
        target=np.array([1, 0]),
        output_names=("negative", "positive"),
        method="ig",
        backend="cpu",
        meta={"tokens": tokens},
    )


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("host", [HOST_CELLS, VSCODE_DARK], ids=["cells-white", "vscode-dark"])
def test_highlighted_tokens_set_their_own_ink(open_page, lowest_contrast, tmp_path, host, scheme):
    """Every token sets its text colour with its background, so a host's light text never lands on it."""
    html = f"<!DOCTYPE html><html><head><style>{host}</style></head><body>{_text_explanation()._repr_html_()}</body></html>"
    path = tmp_path / "text.html"
    path.write_text(html, encoding="utf-8")
    page, _ = _open(open_page, path.resolve().as_uri(), 390, scheme)
    spans = page.eval_on_selector_all(
        ".xai-text span[title]", "els => els.map(e => [e.style.color, e.style.backgroundColor])"
    )
    assert len(spans) == 12 and all(fg and bg for fg, bg in spans)
    worst = lowest_contrast(page)
    assert worst and worst[0][0] >= 4.5, worst
