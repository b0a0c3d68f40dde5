"""What each explained row is, for the report: :mod:`xai_core.attribution.outcomes` with names isolated."""

from __future__ import annotations

from typing import Any

from xai_core.attribution import outcomes
from xai_core.report._html import isolate

__all__ = ["row_outcomes"]


def row_outcomes(e: Any, shown: int) -> list[dict[str, Any]]:
    """Per shown row: ``heading`` (text, names isolated), ``misclassified`` (bool), the parts as data."""
    return outcomes.row_outcomes(e, shown, wrap=isolate)
