"""Hostile CSV tables for load_csv: typos in numeric columns and non-finite cells are refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xai_core.errors import DataError
from xai_datasets import load_csv

#: name -> (CSV text, load_csv keyword arguments, words the DataError must hold or None).
CASES: dict[str, tuple[str, dict, tuple[str, ...] | None]] = {
    "numeric-column-one-typo": (
        "y,a\n0,1\n1,2\n0,10\n1,100\n0,9x\n",
        {},
        ("column 'a' is mixed", "row 5 ('9x')", "categorical="),
    ),
    "numeric-column-two-typos": (
        "y,a,b\n0,1,o\n1,2.5,1\n0,l0,2\n1,3,4\n",
        {},
        ("column 'a' is mixed", "row 3 ('l0')"),
    ),
    "inf-cell": ("y,a\n0,1\n1,inf\n0,3\n", {}, ("column 'a'", "row 2 (inf)", "allow_infinite")),
    "minus-inf-cell": ("y,a\n0,-inf\n1,2\n", {}, ("column 'a'", "row 1 (-inf)")),
    "1e400-cell": ("y,a\n0,1\n1,2\n0,1e400\n", {}, ("column 'a'", "row 3 (inf)")),
    "1e39-beyond-float32": ("y,a\n0,1e39\n1,2\n", {}, ("float32", "row 1 (1e+39)")),
    "infinite-regression-target": (
        "y,a\n1.5,1\ninf,2\n2.5,3\n",
        {"task": "regression"},
        ("column 'y'", "row 2 (inf)"),
    ),
    "mixed-column-listed-as-categorical": ("y,a\n0,1\n1,2\n0,x\n", {"categorical": ["a"]}, None),
    "text-column-with-a-number": ("y,a\n0,S\n1,C\n0,Q\n1,4\n", {}, None),
    "inf-allowed-when-asked": ("y,a\n0,1\n1,inf\n0,1e400\n", {"allow_infinite": True}, None),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_hostile_csv(tmp_path: Path, case: str) -> None:
    """Each table loads, or raises DataError naming the column, the row and the cell."""
    text, kwargs, words = CASES[case]
    path = tmp_path / "t.csv"
    path.write_text(text)
    if words is None:
        ds = load_csv(path, "y", **kwargs)
        assert ds.X.shape == (text.count("\n") - 1, 1)
        return
    with pytest.raises(DataError) as info:
        load_csv(path, "y", **kwargs)
    for w in words:
        assert w in str(info.value)


def test_typo_never_becomes_alphabetical_codes(tmp_path: Path) -> None:
    """Listed as categorical, the codes follow sorted names; unlisted, the column is refused."""
    path = tmp_path / "t.csv"
    path.write_text("y,a\n0,1\n1,2\n0,10\n1,100\n0,9x\n")
    with pytest.raises(DataError, match="mixed"):
        load_csv(path, "y")
    ds = load_csv(path, "y", categorical=["a"])
    assert ds.categories["a"] == ("1", "10", "100", "2", "9x")


def test_allowed_infinities_are_kept(tmp_path: Path) -> None:
    """allow_infinite=True keeps inf, -inf and overflowing cells as infinities."""
    path = tmp_path / "t.csv"
    path.write_text("y,a\n0,inf\n1,-inf\n0,1e39\n1,2\n")
    ds = load_csv(path, "y", allow_infinite=True)
    np.testing.assert_array_equal(ds.X[:, 0], np.array([np.inf, -np.inf, np.inf, 2], np.float32))
