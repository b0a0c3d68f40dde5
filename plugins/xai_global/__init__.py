"""Global methods: the first-party ``permutation_importance`` and ``ale`` tool plugin.

- ``xai.permutation_importance(model, X, y, scoring=..., n_repeats=5, seed=0)``: the drop
  in a score when each feature's column is shuffled, with scikit-learn's
  ``sklearn.inspection.permutation_importance`` semantics and permutation draws
  (:class:`PermutationImportance`);
- ``xai.ale(model, X, features=None, grid_size=20)``: first-order accumulated local
  effects of numeric features over quantile bins, for each model output
  (:class:`AccumulatedLocalEffects`).

Both run any model the runner accepts (native networks on any backend, estimators, black
boxes), with every permuted or shifted copy of a block of features in one model call; the
results render in notebooks and reports through the report-section hook.
"""

from __future__ import annotations

import xai_core
from xai_core import ReportSection, Tool, hookimpl

__getattr__, __dir__, __all__ = xai_core.lazy_exports(
    __name__,
    {
        "permutation": ["permutation_importance"],
        "ale": ["ale"],
        "results": ["AccumulatedLocalEffects", "PermutationImportance"],
        "scoring": ["scorers"],
    },
    eager=["xai_register_report_sections", "xai_register_tools"],
)


@hookimpl
def xai_register_tools():
    """The ``permutation_importance`` and ``ale`` tools."""
    from xai_global.ale import ale
    from xai_global.permutation import permutation_importance

    return [
        Tool(
            "permutation_importance",
            permutation_importance,
            "the drop in a score when each feature is shuffled (scikit-learn's semantics)",
        ),
        Tool("ale", ale, "accumulated local effects of numeric features over quantile bins"),
    ]


@hookimpl
def xai_register_report_sections():
    """Sections for permutation importances and ALE curves."""
    from xai_global.render import render_ale, render_permutation_importance
    from xai_global.results import AccumulatedLocalEffects, PermutationImportance

    return [
        ReportSection(
            "global_permutation_importance",
            PermutationImportance,
            render_permutation_importance,
            "Permutation importance",
        ),
        ReportSection(
            "global_ale", AccumulatedLocalEffects, render_ale, "Accumulated local effects"
        ),
    ]
