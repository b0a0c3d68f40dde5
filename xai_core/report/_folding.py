"""Which of many row panels are shown open, and how the rest are folded into pages.

A section that draws one panel per row (an explanation's rows) shows the first few open
and folds the rest into one ``<details>`` that says how many it holds; more than a page
of folded rows is split into pages, each a ``<details>`` of its own, so a 100-row
explanation is a short page that still holds every figure (each one or two clicks away,
all of them printed).
"""

from __future__ import annotations

from dataclasses import dataclass

from xai_core.errors import ValidationError

__all__ = ["RowFolds", "fold_rows"]


@dataclass(frozen=True)
class RowFolds:
    """The folding of ``n_rows`` panels: the first ``n_open`` open, the rest in ``pages``.

    ``pages`` holds ``(start, stop)`` of each page of folded rows (row positions, stop
    excluded), in order and without gaps from ``n_open`` to ``n_rows``; it is empty when
    nothing is folded and has one entry when the folded rows fit on one page (drawn
    without a page level).
    """

    n_rows: int
    n_open: int
    pages: tuple[tuple[int, int], ...]

    @property
    def n_folded(self) -> int:
        """Rows folded away: ``n_rows - n_open``."""
        return self.n_rows - self.n_open

    @property
    def paged(self) -> bool:
        """Whether the folded rows are split into more than one page."""
        return len(self.pages) > 1

    def opens_fold(self, i: int) -> bool:
        """Whether the fold of the remaining rows starts before row position ``i``."""
        return self.n_folded > 0 and i == self.n_open

    def page_at(self, i: int) -> tuple[int, int] | None:
        """The ``(start, stop)`` of the page that starts at row position ``i``, if one does and pages are drawn."""
        if not self.paged:
            return None
        return next((p for p in self.pages if p[0] == i), None)

    def closes_page(self, i: int) -> bool:
        """Whether a drawn page ends after row position ``i``."""
        return self.paged and any(stop - 1 == i for _, stop in self.pages)

    def closes_fold(self, i: int) -> bool:
        """Whether the fold of the remaining rows ends after row position ``i``."""
        return self.n_folded > 0 and i == self.n_rows - 1


def fold_rows(n_rows: int, open_rows: int, per_page: int) -> RowFolds:
    """The first ``open_rows`` of ``n_rows`` panels open, the rest folded in pages of ``per_page``.

    Parameters
    ----------
    n_rows : int
        Panels drawn, >= 0.
    open_rows : int
        Panels shown open, >= 0. When only one more row would be folded, it is shown
        open too: a fold that says "1 more row" saves nothing.
    per_page : int
        Folded panels per page, >= 1.

    Returns
    -------
    RowFolds
    """
    for name, value, least in (("n_rows", n_rows, 0), ("open_rows", open_rows, 0)):
        if not isinstance(value, int) or value < least:
            raise ValidationError(f"{name} must be an int >= {least}; got {value!r}.")
    if not isinstance(per_page, int) or per_page < 1:
        raise ValidationError(f"per_page must be an int >= 1; got {per_page!r}.")
    n_open = n_rows if n_rows <= open_rows + 1 else open_rows
    pages = tuple((s, min(s + per_page, n_rows)) for s in range(n_open, n_rows, per_page))
    return RowFolds(n_rows=n_rows, n_open=n_open, pages=pages)
