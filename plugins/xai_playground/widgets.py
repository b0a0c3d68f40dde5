"""The live notebook view of a PlaygroundView: redraws as the network trains; a click explains a point.

Driven from Python as well as by clicks: set ``widget.plot.point = [x1, x2]`` (what a click
in the decision surface does) and :attr:`PlaygroundWidget.explanation` holds the point's
attributions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core.report import format_number, render_fragment
from xai_core.widgets import ClickPlot, require_widgets
from xai_playground.render import render_playground

__all__ = ["PlaygroundWidget"]


class PlaygroundWidget:
    """The view's surfaces, live; IG or SHAP attributions of the point clicked in the surface.

    Parameters
    ----------
    view : PlaygroundView
    method : {"ig", "shap"} or another registered method, default="ig"
        How a clicked point is explained.

    Attributes
    ----------
    plot : ClickPlot
        The rendered view; its ``point`` trait is the clicked point.
    explanation : Explanation or None
        The attributions of the last clicked point to the input features.
    neurons_at_point : list of ndarray
        Each hidden layer's activations at that point.
    """

    def __init__(self, view: Any, *, method: str = "ig") -> None:
        w = require_widgets()
        self.view = view
        self.method = w.Dropdown(options=["ig", "shap"], value=method, description="explain")
        self.plot = ClickPlot(render_playground(view))
        self.details = w.HTML("<p>Click a point of the decision surface to explain it.</p>")
        self.explanation = None
        self.neurons_at_point: list[np.ndarray] = []
        self.box = w.VBox([self.plot, self.method, self.details])
        self.plot.observe(lambda change: self.explain(change["new"]), names="point")
        self.method.observe(lambda _: self.plot.point and self.explain(self.plot.point), "value")
        view._listeners.append(self.redraw)

    def redraw(self, view: Any = None) -> None:
        """Render the view's current state into the plot (called by the view after each refresh)."""
        self.plot.html = render_playground(self.view)

    def explain(self, point: Any) -> Any:
        """Explain the network's prediction at ``point`` = (x1, x2); shows and returns the Explanation."""
        if point is None or len(point) != 2:
            return None
        view = self.view
        self.explanation = view.explain_point(point, method=self.method.value)
        F = view.inputs_of(np.asarray(point, dtype=np.float64).reshape(1, 2))
        self.neurons_at_point = [view.net.activations(F, i)[0] for i in view.neuron_layers]
        score = view.score(np.asarray(point).reshape(1, 2))[0]
        active = "; ".join(
            f"layer {k + 1}: " + ", ".join(format_number(a, 3) for a in acts)
            for k, acts in enumerate(self.neurons_at_point)
        )
        head = (
            f"<p>Point ({format_number(point[0], 3)}, {format_number(point[1], 3)}): "
            f"surface value {format_number(score, 3)}. Neuron activations: {active or 'none'}.</p>"
        )
        self.details.value = head + render_fragment(self.explanation)
        return self.explanation

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.box._repr_mimebundle_(**kwargs)
