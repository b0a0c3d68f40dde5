"""The embedding projector: the first-party ``project`` tool plugin.

``xai.project(vectors, method="pca" | "tsne" | "umap" | "linear", labels=..., metadata=...)``
or ``xai.project(runner, X, layer=...)`` returns a :class:`Projection`: the projected
coordinates, exact or approximate nearest neighbours in the original space, search over
labels and metadata giving :class:`Selection` objects, export to the TensorBoard
Projector's files (and CSV / JSON), and an interactive view in notebooks and reports.
"""

from __future__ import annotations

import xai_core as xai
from xai_core import hookimpl
from xai_projector.export import load_tensorboard
from xai_projector.neighbors import Neighbors, approximate_neighbors, exact_neighbors
from xai_projector.projection import Projection, project
from xai_projector.search import Selection
from xai_projector.view import render_projection, script

__all__ = [
    "Neighbors",
    "Projection",
    "Selection",
    "approximate_neighbors",
    "exact_neighbors",
    "load_tensorboard",
    "project",
    "render_projection",
    "xai_register_report_sections",
    "xai_register_tools",
]


@hookimpl
def xai_register_tools():
    """The ``project`` tool: embeddings projected, searched, their neighbours found and exported."""
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
    return [
        xai.ReportSection(
            "projection", Projection, render_projection, "Embedding projection", script=script()
        )
    ]
