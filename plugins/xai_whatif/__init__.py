"""The what-if tool: the first-party ``what_if`` tool plugin.

``w = xai.what_if(model, X, y, feature_names=...)`` answers the What-If Tool's questions
from a notebook, for any model the runner accepts:

- :meth:`WhatIf.edit`, :meth:`WhatIf.revert`, :meth:`WhatIf.clone`: edit datapoints
  (features, pixels, masks) and see the model's outputs change;
- :meth:`WhatIf.nearest_counterfactual`: the closest example with another prediction, in
  the What-If Tool's L1 / L2 distance (or a custom one);
- :meth:`WhatIf.counterfactual`: a searched smallest edit that flips the prediction, with
  immutable features, ranges, a sparsity limit and several diverse answers;
- :meth:`WhatIf.partial_dependence`: PD and ICE curves of one or two features;
- :meth:`WhatIf.slices`, :meth:`WhatIf.thresholds`: performance per slice (ROC and PR
  curves) and the fairness threshold strategies;
- :meth:`WhatIf.neighbors`: the examples nearest a datapoint;
- :meth:`WhatIf.feature_stats`: every feature's distribution, overall and per slice;
- :meth:`WhatIf.compare_models`: two models on the same data, edited and explained together.

Every result renders in notebooks and reports through the report-section hook.
"""

from __future__ import annotations

import xai_core
from xai_core import ReportSection, Tool, hookimpl
from xai_whatif import results
from xai_whatif.results import (
    Counterfactuals,
    EditResult,
    FeatureStats,
    Neighbors,
    PartialDependence,
    SliceMetrics,
    ThresholdChoice,
)

# The session, its analyses and their renderers are imported when first used.
__getattr__, __dir__, __all__ = xai_core.lazy_exports(
    __name__,
    {
        "whatif": ["WhatIf", "what_if"],
        "editor": ["EditorState"],
        "editor_widgets": ["EditorWidget"],
        "compare": ["ModelComparison"],
    },
    eager=[*results.__all__, "xai_register_report_sections", "xai_register_tools"],
)


@hookimpl
def xai_register_tools():
    """The ``what_if`` tool."""
    from xai_whatif.whatif import what_if

    return [
        Tool("what_if", what_if, "edit datapoints, counterfactuals, partial dependence, fairness")
    ]


@hookimpl
def xai_register_report_sections():
    """Sections for the what-if session and each of its results."""
    from xai_whatif.compare import ModelComparison
    from xai_whatif.offline import script
    from xai_whatif.render import (
        render_counterfactuals,
        render_edit,
        render_partial_dependence,
        render_slices,
        render_thresholds,
        render_whatif,
    )
    from xai_whatif.render_overview import (
        render_feature_stats,
        render_model_comparison,
        render_neighbors,
    )
    from xai_whatif.whatif import WhatIf

    return [
        ReportSection("whatif", WhatIf, render_whatif, "What-if", script=script()),
        ReportSection("whatif_edit", EditResult, render_edit, "Datapoint edit"),
        ReportSection(
            "whatif_counterfactuals", Counterfactuals, render_counterfactuals, "Counterfactuals"
        ),
        ReportSection(
            "whatif_partial_dependence",
            PartialDependence,
            render_partial_dependence,
            "Partial dependence",
        ),
        ReportSection(
            "whatif_slices",
            SliceMetrics,
            render_slices,
            "Performance by slice",
            script=script("thresholds.js"),
        ),
        ReportSection("whatif_thresholds", ThresholdChoice, render_thresholds, "Thresholds"),
        ReportSection("whatif_neighbors", Neighbors, render_neighbors, "Nearest neighbours"),
        ReportSection("whatif_features", FeatureStats, render_feature_stats, "Features"),
        ReportSection(
            "whatif_compare", ModelComparison, render_model_comparison, "Model comparison"
        ),
    ]
