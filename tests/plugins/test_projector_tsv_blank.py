"""TensorBoard metadata: a cell of only U+FEFF is blank to TensorBoard, so its row must not be dropped."""

from __future__ import annotations

import re

import numpy as np
import pytest

import xai_core as xai
from xai_projector.export import load_tensorboard

# JavaScript's String.prototype.trim() whitespace (ECMA-262 WhiteSpace and LineTerminator):
# TensorBoard's projector drops metadata lines that trim to "".
_JS_SPACE = re.compile(
    "^[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]*$"
)


def _tensorboard_rows(text: str) -> list[str]:
    """The metadata lines TensorBoard keeps, as its parser does (split on newlines, drop blank ones)."""
    return [line for line in text.split("\n") if not _JS_SPACE.match(line)]


@pytest.mark.parametrize("blank", ["\ufeff", "\ufeff ", "\u3000", "\u00a0\ufeff"])
def test_a_cell_blank_to_javascript_keeps_every_row(tmp_path, blank):
    """One row per point after TensorBoard's own filtering, so labels never shift."""
    X = np.random.default_rng(0).normal(size=(4, 3))
    labels = ["a", blank, "c", "d"]
    files = xai.project(X, labels=labels).export_tensorboard(tmp_path)
    kept = _tensorboard_rows(files["metadata"].read_text(encoding="utf-8"))
    assert len(kept) == 1 + 4  # a header (a row-index column was added) and every point
    assert kept[0].split("\t")[0] == "row"
    assert [line.split("\t")[1] for line in kept[1:]] == labels
    back = load_tensorboard(files["config"])["metadata"]
    assert back["row"] == ["0", "1", "2", "3"] and back["label"] == labels


def test_two_columns_of_blank_cells_keep_their_row(tmp_path):
    """A line of two U+FEFF cells trims to '' in JavaScript (the tab too): it gets a row index."""
    X = np.random.default_rng(1).normal(size=(3, 2))
    p = xai.project(X, labels=["x", "\ufeff", "z"], metadata={"group": ["g", "\ufeff", "h"]})
    files = p.export_tensorboard(tmp_path)
    kept = _tensorboard_rows(files["metadata"].read_text(encoding="utf-8"))
    assert len(kept) == 1 + 3
