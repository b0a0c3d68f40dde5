"""The embedding projector: the first-party ``project`` tool plugin.

``xai.project(vectors, method="pca" | "tsne" | "umap" | "linear" | "custom", labels=..., metadata=...)``
or ``xai.project(runner, X, layer=...)`` returns a :class:`Projection`: the projected
coordinates, exact or approximate nearest neighbours in the original space, search over
labels and metadata giving :class:`Selection` objects, export to the TensorBoard
Projector's files (and CSV / JSON), and an interactive view in notebooks and reports
(``p.show(color_by=..., dims=..., label_by=..., thumbnails=...)``: zoom, pan, colour and
label by any column, image thumbnails, 3-D rotation, bookmarks of :class:`ViewState`).
"""

from __future__ import annotations

import xai_core as xai
from xai_core import hookimpl

# scikit-learn, Jinja2 and the projector's modules are imported when first used.
__getattr__, __dir__, __all__ = xai.lazy_exports(
    __name__,
    {
        "display": ["ProjectionView"],
        "export": ["load_tensorboard"],
        "neighbors": ["Neighbors", "approximate_neighbors", "exact_neighbors"],
        "projection": ["Projection", "project"],
        "search": ["Selection"],
        "state": ["ViewState"],
        "view": ["render_projection", "script"],
    },
    eager=["xai_register_report_sections", "xai_register_tools"],
)


@hookimpl
def xai_register_tools():
    """The ``project`` tool: embeddings projected, searched, their neighbours found and exported."""
    from xai_projector.projection import project

    return [
        xai.Tool(
            "project",
            project,
            "Project embeddings (PCA, t-SNE, UMAP, linear), find neighbours, search, export.",
        )
    ]


@hookimpl
def xai_register_report_sections():
    """The projection's section: a scatter coloured by label, with search and neighbours."""
    from xai_projector.display import ProjectionView
    from xai_projector.projection import Projection
    from xai_projector.view import render_projection, script

    return [
        xai.ReportSection(
            "projection",
            (Projection, ProjectionView),
            render_projection,
            "Embedding projection",
            script=script(),
        )
    ]
