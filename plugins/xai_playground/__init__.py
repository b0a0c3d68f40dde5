"""The Playground view: the first-party ``playground_view`` and ``playground_app`` tools.

``view = xai.playground_view(net, data, test)`` shows what a small network on 2-D data has
learned, as the TensorFlow Playground does: the decision surface with the train and test
points, a surface per hidden neuron, links by weight and the loss curves. It is a
``net.fit`` callback too (``net.fit(X, y, callbacks=view)``), live in a notebook through
``view.widget()``; ``xai.playground_app(data)`` is the Playground itself: play, pause, step
and reset, and its knobs as widgets. The final state is a report section.
"""

from __future__ import annotations

import xai_core
from xai_core import ReportSection, Tool, hookimpl

__getattr__, __dir__, __all__ = xai_core.lazy_exports(
    __name__,
    {
        "view": ["PlaygroundView", "playground_view"],
        "features": ["FEATURES", "transform"],
        "app": ["PlaygroundApp", "playground_app"],
    },
    eager=["xai_register_report_sections", "xai_register_tools"],
)


@hookimpl
def xai_register_tools():
    """The ``playground_view`` and ``playground_app`` tools."""
    from xai_playground.app import playground_app
    from xai_playground.view import playground_view

    return [
        Tool("playground_view", playground_view, "a 2-D network's surfaces, links and losses"),
        Tool(
            "playground_app",
            playground_app,
            "the Playground: play, pause, step, reset and its knobs",
        ),
    ]


@hookimpl
def xai_register_report_sections():
    """The section of a PlaygroundView."""
    from xai_playground.render import render_playground
    from xai_playground.view import PlaygroundView

    return [ReportSection("playground", PlaygroundView, render_playground, "Playground view")]
