"""A label holding a right-to-left override (U+202E) does not reorder the text after it.

Chromium lays the page out; the oracle is the position of the glyphs: in a text node
``<label> (1)`` the characters after the label must be drawn to the right of every glyph
of the label. Left open, the override would reverse them to its left (``)1( CBA``).
"""

from __future__ import annotations

import numpy as np
import pytest

import xai_core as xai

pytestmark = pytest.mark.browser

LABEL = "\u202eABC"

#: For each text node under ``root`` that holds ``ABC`` and then ``marker``: the rightmost
#: right edge of the label's glyphs and the left edge of the marker's first glyph.
_POSITIONS = """([selector, marker]) => {
  const out = [];
  for (const root of document.querySelectorAll(selector)) {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      const text = node.data, start = text.indexOf("ABC");
      const after = text.indexOf(marker, start + 3);
      if (start < 0 || after < 0) { continue; }
      const rect = (i) => {
        const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
        return r.getBoundingClientRect();
      };
      const label = [0, 1, 2].map((k) => rect(start + k));
      out.push({
        text: text,
        labelRight: Math.max(...label.map((r) => r.right)),
        labelTop: label[0].top,
        markerLeft: rect(after).left,
        markerTop: rect(after).top,
      });
    }
  }
  return out;
}"""


def _check(found: list[dict]) -> None:
    assert found, "no text node holds the label followed by the marker"
    for f in found:
        if abs(f["markerTop"] - f["labelTop"]) < 2:  # on one line (a wrapped line proves nothing)
            assert f["markerLeft"] >= f["labelRight"] - 0.5, f


def _explanation() -> xai.Explanation:
    rng = np.random.default_rng(0)
    return xai.Explanation(
        values=rng.normal(size=(3, 2)),
        base_values=np.zeros(3),
        target=[1, 1, 0],
        data=rng.normal(size=(3, 2)),
        feature_names=["f0", "f1"],
        output_names=["zero", LABEL],
        method="shap",
        backend="cpu",
    )


def test_a_class_name_with_an_override_keeps_the_rest_of_its_cell_in_order(open_page, tmp_path):
    """The row table's ``<name> (1)``: the index stays to the right of the name."""
    path = tmp_path / "r.html"
    xai.Report("bidi", seed=0).add(_explanation()).save(path)
    _, page, events = open_page(path.as_uri())
    _check(page.evaluate(_POSITIONS, ["td", "(1)"]))
    assert events["page_errors"] == []


def test_without_the_isolate_the_override_would_reorder_the_cell(open_page, tmp_path):
    """The oracle sees the harm: the same cell built without the isolate fails the check."""
    path = tmp_path / "raw.html"
    path.write_text(
        f'<!DOCTYPE html><meta charset="utf-8"><table><tr><td>{LABEL} (1)</td></tr></table>',
        encoding="utf-8",
    )
    _, page, _ = open_page(path.as_uri())
    found = page.evaluate(_POSITIONS, ["td", "(1)"])
    assert found and found[0]["markerLeft"] < found[0]["labelRight"]


def test_the_projectors_script_isolates_labels_it_writes(open_page, tmp_path):
    """The projector's detail line ``#i · <label> · note: x`` keeps ``note`` after the label."""
    rng = np.random.default_rng(1)
    p = xai.project(rng.normal(size=(20, 4)), labels=[LABEL] * 20, metadata={"note": ["x"] * 20})
    path = tmp_path / "p.html"
    p.save_html(path)
    _, page, events = open_page(path.as_uri())
    page.evaluate("document.querySelector('div.xai-projector').xaiProjector.select(3)")
    _check(page.evaluate(_POSITIONS, [".xai-projector-selected", "note"]))
    assert events["page_errors"] == []
