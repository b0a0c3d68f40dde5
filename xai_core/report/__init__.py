"""HTML reports and notebook display: one self-contained, offline file per report.

``Report(title).add(result).save("report.html")``. Sections come from the
``xai_register_report_sections`` hook; the built-in ones (explanations, datasets, hardware
counters, DataFrames) live in :mod:`xai_core.report.sections`.
"""

from xai_core.report._report import Report, find_section, render_fragment

__all__ = ["Report", "find_section", "render_fragment"]
