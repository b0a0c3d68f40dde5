"""Search over labels and metadata by substring or regular expression, giving selections."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core import UnknownNameError, ValidationError
from xai_core.optional import require

__all__ = ["Selection", "search_columns"]


@dataclass(frozen=True)
class Selection:
    """A set of rows, found by a search or picked by hand; usable wherever row indices are.

    ``X[selection.indices]`` (or ``X[np.asarray(selection)]``) gives the selected rows, so
    other tools (the what-if tool, a report) take a selection as they take an index array.

    Attributes
    ----------
    indices : ndarray of shape (n_selected,)
        Sorted row indices, int64.
    name : str
        A name for bookmarks and exports.
    query : str
        The search that produced it (empty when picked by hand).
    """

    indices: np.ndarray
    name: str = ""
    query: str = ""

    def __post_init__(self) -> None:
        idx = np.unique(np.asarray(self.indices, dtype=np.int64).ravel())
        idx.setflags(write=False)
        object.__setattr__(self, "indices", idx)

    def __len__(self) -> int:
        return int(self.indices.size)

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices.tolist())

    def __contains__(self, i: object) -> bool:
        return bool(np.isin(i, self.indices).all()) if isinstance(i, (int, np.integer)) else False

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.indices.astype(dtype or np.int64)

    def mask(self, n: int) -> np.ndarray:
        """A boolean array of shape (n,) that is True on the selected rows."""
        out = np.zeros(n, dtype=bool)
        out[self.indices[self.indices < n]] = True
        return out

    def to_dict(self) -> dict[str, Any]:
        """``{"name", "query", "indices"}``, JSON-ready."""
        return {"name": self.name, "query": self.query, "indices": self.indices.tolist()}

    def __repr__(self) -> str:
        return f"Selection({len(self)} rows, name={self.name!r}, query={self.query!r})"


def compile_query(query: str, *, regex: bool, case_sensitive: bool) -> Any:
    """``query`` compiled for ``.search(text)``: a literal substring, or an RE2 expression.

    A regular expression runs on RE2 (the ``google-re2`` package, extra ``regex``), whose
    matching time is linear in the text: a pattern such as ``(a+)+$`` that makes Python's
    backtracking ``re`` run for hours takes microseconds. RE2's syntax is Python's without
    backreferences and lookaround, which are refused with a clear error.
    """
    if not regex:
        return re.compile(re.escape(query), 0 if case_sensitive else re.IGNORECASE)
    re2 = require("re2", extra="regex", need="regular-expression search (linear-time RE2)")
    options = re2.Options()
    options.case_sensitive = bool(case_sensitive)
    options.log_errors = False
    try:
        return re2.compile(query, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise ValidationError(
            f"query is not a valid regular expression for RE2 ({reason}); RE2 takes Python's "
            "syntax without backreferences and lookaround, and matches in linear time."
        ) from None


def search_columns(
    columns: Mapping[str, Sequence[str]],
    query: str,
    *,
    regex: bool = False,
    case_sensitive: bool = False,
    fields: Sequence[str] | str | None = None,
) -> Selection:
    """Rows where any of ``fields`` (default: every column) matches ``query``.

    Parameters
    ----------
    columns : mapping of str to sequence of str, each of length n_samples
    query : str
        A substring, or a regular expression if ``regex`` (``re.search`` semantics, RE2
        syntax: see :func:`compile_query`).
    regex : bool
    case_sensitive : bool
    fields : str or sequence of str, optional
        Column names to search.

    Returns
    -------
    Selection
    """
    if not isinstance(query, str):
        raise ValidationError(f"query must be a str; got {type(query).__name__}.")
    if fields is None:
        names = list(columns)
    else:
        names = [fields] if isinstance(fields, str) else list(fields)
        for name in names:
            if name not in columns:
                raise UnknownNameError("metadata column", name, list(columns))
    pattern = compile_query(query, regex=regex, case_sensitive=case_sensitive)
    n = len(columns[names[0]]) if names else 0
    hit = np.zeros(n, dtype=bool)
    for name in names:
        # Match each distinct value once, then spread the answers over the rows.
        distinct, inverse = np.unique(np.asarray(columns[name], dtype=str), return_inverse=True)
        matched = np.fromiter(
            (pattern.search(v) is not None for v in distinct), bool, len(distinct)
        )
        hit |= matched[inverse.ravel()]
    return Selection(np.flatnonzero(hit), query=query)
