"""Many rows: the first few panels open, the rest folded (and paged) with their count said."""

from __future__ import annotations

import math
import re
from html.parser import HTMLParser

import numpy as np
import pytest

import xai_core as xai
from xai_core.report import sections
from xai_core.report._folding import fold_rows


class _Details(HTMLParser):
    """Every <details>: its classes, whether it is open, its summary text and its enclosing details."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[dict] = []
        self._stack: list[int] = []
        self._summary: int | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "details":
            self.found.append(
                {
                    "cls": (a.get("class") or "").split(),
                    "open": "open" in a,
                    "id": a.get("id"),
                    "parents": list(self._stack),
                    "summary": "",
                }
            )
            self._stack.append(len(self.found) - 1)
        elif tag == "summary" and self._stack:
            self._summary = self._stack[-1]

    def handle_endtag(self, tag):
        if tag == "details":
            self._stack.pop()
        elif tag == "summary":
            self._summary = None

    def handle_data(self, data):
        if self._summary is not None:
            self.found[self._summary]["summary"] += data


def _details(html: str) -> list[dict]:
    parser = _Details()
    parser.feed(html)
    parser.close()
    assert not parser._stack, "unbalanced <details>"
    return parser.found


def _explanation(n: int) -> xai.Explanation:
    rng = np.random.default_rng(0)
    return xai.Explanation(
        values=rng.normal(size=(n, 5)),
        base_values=np.zeros(n),
        target=np.zeros(n, dtype=int),
        data=rng.normal(size=(n, 5)),
        feature_names=[f"f{i}" for i in range(5)],
        method="shap",
        backend="cpu",
    )


@pytest.mark.parametrize("n", [1, 4, 5, 6, 24, 25, 40, 130], ids=lambda n: f"{n}rows")
def test_rows_beyond_the_first_few_are_folded_and_paged(n):
    """Each drawn row once, in order; the first OPEN_ROWS outside any fold; the rest in pages of ROWS_PER_PAGE."""
    found = _details(xai.report.render_fragment(_explanation(n)))
    rows = [d for d in found if "xai-row" in d["cls"]]
    shown = min(n, sections.MAX_ROWS)
    ids = [int(re.search(r"row(\d+)$", d["id"]).group(1)) for d in rows]
    assert ids == list(range(shown))
    assert all(d["open"] for d in rows)  # a page, once open, shows its rows' figures
    folds = [d for d in found if "xai-more-rows" in d["cls"]]
    pages = [d for d in found if "xai-page" in d["cls"]]
    n_open = shown if shown <= sections.OPEN_ROWS + 1 else sections.OPEN_ROWS
    n_folded = shown - n_open
    top = [d for d in rows if not d["parents"]]
    assert len(top) == n_open
    if n_folded == 0:
        assert folds == [] and pages == []
        return
    (fold,) = folds
    assert not fold["open"] and not fold["parents"]
    assert fold["summary"].startswith(f"{n_folded} more rows (rows {n_open}–{shown - 1})")
    n_pages = math.ceil(n_folded / sections.ROWS_PER_PAGE)
    if n_pages == 1:
        assert pages == []
    else:
        assert len(pages) == n_pages and f"in {n_pages} pages" in fold["summary"]
        for k, page in enumerate(pages):
            start = n_open + k * sections.ROWS_PER_PAGE
            stop = min(start + sections.ROWS_PER_PAGE, shown)
            assert not page["open"] and page["summary"] == f"rows {start}–{stop - 1}"
            inside = [ids[i] for i, d in enumerate(rows) if found.index(page) in d["parents"]]
            assert inside == list(range(start, stop))
    folded_rows = [d for d in rows if found.index(fold) in d["parents"]]
    assert len(folded_rows) == n_folded


def test_the_summary_and_row_table_stay_outside_the_folds():
    """With 40 rows the global summary and the table of every row come before any fold."""
    html = xai.report.render_fragment(_explanation(40))
    fold_at = html.index('class="xai-fold xai-more-rows"')
    assert html.index("Summary over 40 rows") < fold_at
    assert html.index('class="xai-sortable xai-rows"') < fold_at
    table = html[html.index('class="xai-sortable xai-rows"') : fold_at]
    assert table.count("<tr") == 41  # the header and every row, linked to its panel
    index = [d for d in _details(html) if "xai-row-index" in d["cls"]]
    assert len(index) == 1 and not index[0]["open"]  # more rows than a page: the table folds too
    assert index[0]["summary"].startswith("Table of the 40 rows")
    few = _details(xai.report.render_fragment(_explanation(sections.ROWS_PER_PAGE)))
    assert not [d for d in few if "xai-row-index" in d["cls"]]


@pytest.mark.parametrize(
    ("n", "open_rows", "per_page", "n_open", "pages"),
    [
        (0, 4, 20, 0, ()),
        (3, 4, 20, 3, ()),
        (5, 4, 20, 5, ()),  # one more row is shown, not folded alone
        (6, 4, 20, 4, ((4, 6),)),
        (24, 4, 20, 4, ((4, 24),)),
        (25, 4, 20, 4, ((4, 24), (24, 25))),
        (10, 0, 3, 0, ((0, 3), (3, 6), (6, 9), (9, 10))),
    ],
)
def test_fold_rows_covers_every_row_once(n, open_rows, per_page, n_open, pages):
    """The open rows and the pages tile 0..n without gaps or overlaps."""
    f = fold_rows(n, open_rows, per_page)
    assert (f.n_open, f.pages, f.n_folded) == (n_open, pages, n - n_open)
    assert f.paged == (len(pages) > 1)
    covered = list(range(f.n_open)) + [i for s, e in f.pages for i in range(s, e)]
    assert covered == list(range(n))


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((-1, 4, 20), r"n_rows must be an int >= 0; got -1"),
        ((5, -2, 20), r"open_rows must be an int >= 0; got -2"),
        ((5, 4, 0), r"per_page must be an int >= 1; got 0"),
        ((5.0, 4, 20), r"n_rows must be an int >= 0; got 5.0"),
    ],
)
def test_fold_rows_refuses_bad_counts(args, match):
    with pytest.raises(xai.ValidationError, match=match):
        fold_rows(*args)
