"""Checks of the command line's paths and options, made before any work starts.

Every check raises :class:`~xai_core.errors.ValidationError` with one line naming the
argument; ``xai`` prints it and exits with status 2.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.errors import ValidationError
from xai_core.files import check_writable

__all__ = ["existing_file", "output_file", "parse_options", "parse_rows", "select_rows"]

#: Names that ``--option`` may not set: they have their own flags or are the inputs.
RESERVED_OPTIONS = ("method", "backend", "feature_names", "model", "X", "executor")
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def existing_file(path: str | os.PathLike[str], argument: str) -> Path:
    """``path`` if it is an existing file, else a ValidationError naming ``argument``."""
    p = Path(path)
    if p.is_dir():
        raise ValidationError(f"{argument} must be a file; {str(p)!r} is a directory")
    if not p.is_file():
        raise ValidationError(f"{argument} {str(p)!r}: no such file")
    return p


def output_file(path: str | os.PathLike[str], argument: str = "--out") -> Path:
    """``path`` if a report or explanation can be saved there (its folder exists, ...)."""
    check_writable(path, argument)
    return Path(path)


def parse_options(items: Sequence[str] | None, argument: str = "--option") -> dict[str, Any]:
    """``name=value`` pairs: values are JSON (numbers, true/false/null, lists) or plain strings.

    Raises
    ------
    ValidationError
        For an item without ``=``, an empty or non-identifier name, a name given twice, or
        a name that has its own flag (``method``, ``backend``, ...).
    """
    options: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise ValidationError(f"{argument} must look like name=value; got {item!r}")
        if key in RESERVED_OPTIONS:
            flag = f"--{key}" if key in ("method", "backend") else "its own argument"
            raise ValidationError(f"{argument} {key}=... is not an option: use {flag} instead")
        if key in options:
            raise ValidationError(f"{argument} {key} is given twice")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value  # a plain string such as riemann_middle
    return options


def parse_rows(spec: int | str | Sequence[int], argument: str = "--rows") -> Any:
    """Check a row selection's form; bounds are checked by :func:`select_rows`.

    Parameters
    ----------
    spec : int, str or sequence of int
        A count ``N`` (or ``"N"``): the first N rows (all, if the data has fewer).
        Or indices and inclusive ranges, ``"0,3,10-19"`` (a single row: ``"7,"`` or
        ``"7-7"``), or a sequence of indices.

    Returns
    -------
    int or list of tuple of int
        The count, or the ranges ``(first, last)``.
    """
    usage = f"{argument} must be a count (5) or row indices and ranges (0,3,10-19); got {spec!r}"
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        if spec < 1:
            raise ValidationError(usage)
        return int(spec)
    if isinstance(spec, str):
        text = spec.strip()
        if text.isdigit() and "," not in text:
            if int(text) < 1:
                raise ValidationError(usage)
            return int(text)
        parts = [p.strip() for p in text.split(",")]
        if parts and parts[-1] == "" and len(parts) > 1:
            parts = parts[:-1]  # "7," is row 7
        ranges = []
        for part in parts:
            m = _RANGE.match(part)
            if m is None:
                raise ValidationError(usage)
            a = int(m.group(1))
            b = int(m.group(2)) if m.group(2) is not None else a
            if b < a:
                raise ValidationError(f"{argument}: range {part!r} ends before it starts")
            ranges.append((a, b))
        return ranges
    try:
        idx = [int(i) for i in spec]
    except (TypeError, ValueError) as exc:
        raise ValidationError(usage) from exc
    if not idx or min(idx) < 0:
        raise ValidationError(usage)
    return [(i, i) for i in idx]


def select_rows(X: np.ndarray, spec: Any, argument: str = "--rows") -> np.ndarray:
    """The rows of ``X`` that ``spec`` (see :func:`parse_rows`) selects, in the order given.

    Raises
    ------
    ValidationError
        If an index is past the last row; the message gives the number of rows.
    """
    rows = parse_rows(spec, argument) if not isinstance(spec, (int, list)) else spec
    if isinstance(rows, int):
        return X[:rows]
    n = len(X)
    last = max(b for _, b in rows)
    if last >= n:
        raise ValidationError(
            f"{argument} selects row {last}, but the data has {n} rows (indices 0 to {n - 1})"
        )
    idx = np.concatenate([np.arange(a, b + 1) for a, b in rows])
    _, first = np.unique(idx, return_index=True)
    return X[idx[np.sort(first)]]
