"""HTML reports and notebook display: one self-contained, offline file per report.

``Report(title).add(result).save("report.html")``. Sections come from the
``xai_register_report_sections`` hook; the built-in ones (explanations, datasets, hardware
counters, DataFrames) live in :mod:`xai_core.report.sections`.

The rendering toolkit every section uses, built-in or a plugin's (see ``docs/reports.md``):

- :func:`environment`: the Jinja2 environment (autoescape, every printed string a
  directional isolate, the ``num`` and ``json_script`` filters, the core's macros),
  optionally over a section's own templates;
- :func:`isolate`: user text that cannot reorder the text around it (U+202E), for strings
  a section joins in Python;
- :func:`new_id`: element ids, reproducible under ``Report(seed=)`` (:func:`id_scope`);
- :func:`format_number`: one number format; :func:`json_for_script`: JSON that is safe in
  ``<script type="application/json">``;
- :func:`encode_png`, :func:`png_data_uri`, :func:`to_pixels`: images (Pillow);
  :func:`enlarge`: pixels repeated (nearest neighbour), so no viewer blurs them;
- :func:`scale_bar`, :func:`heatmap_with_scale`: a labelled colour bar drawn into the
  picture, alone or beneath its heatmap, for views that must survive a sanitiser;
- :func:`heatmap_rgb`, :func:`diverging`, :func:`colorbar_rgb`, :data:`POSITIVE`,
  :data:`NEGATIVE`: the diverging colours of attributions;
- :func:`summarize`: options and metadata as JSON-ready values, every array of more than
  one value by its shape, dtype and a few values;
- :func:`swarm_offsets`: where the points of a beeswarm sit, spread across their line;
- :func:`script_hash`: the Content-Security-Policy source of a section's script;
- :func:`scoped_css`: the report's style sheet (light and dark themes) under one scope
  class, for a page of a plugin's own.
"""

from xai_core.report._colormap import NEGATIVE, POSITIVE, colorbar_rgb, diverging, heatmap_rgb
from xai_core.report._figures import swarm_offsets
from xai_core.report._html import (
    environment,
    format_number,
    id_scope,
    isolate,
    json_for_script,
    new_id,
    plain,
    scoped_css,
    script_hash,
)
from xai_core.report._png import encode_png, png_data_uri, to_pixels
from xai_core.report._report import Report, find_section, render_fragment
from xai_core.report._scalebar import enlarge, heatmap_with_scale, scale_bar
from xai_core.report._summary import summarize

__all__ = [
    "NEGATIVE",
    "POSITIVE",
    "Report",
    "colorbar_rgb",
    "diverging",
    "encode_png",
    "enlarge",
    "environment",
    "find_section",
    "format_number",
    "heatmap_rgb",
    "heatmap_with_scale",
    "id_scope",
    "isolate",
    "json_for_script",
    "new_id",
    "plain",
    "png_data_uri",
    "render_fragment",
    "scale_bar",
    "scoped_css",
    "script_hash",
    "summarize",
    "swarm_offsets",
    "to_pixels",
]
