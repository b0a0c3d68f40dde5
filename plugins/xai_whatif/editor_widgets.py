"""The datapoint editor as notebook widgets (ipywidgets), drawn from an :class:`~xai_whatif.editor.EditorState`.

``w.editor()`` returns an :class:`EditorWidget`, laid out as the What-If Tool's datapoint
editor: on the left a row picker (index, search; a click in the scatter below also picks),
undo / reset / clone buttons and one control per feature under its whole name (a slider
over the observed range in the column's own decimals, a dropdown of the categories for
categorical features); beside it the panels that follow every change (prediction, partial
dependence of the edited feature, explanation, nearest counterfactual). The two columns
wrap, so a narrow pane stacks them. Setting a control's ``value`` from Python does
what moving it does, which is how the tests drive it.
"""

from __future__ import annotations

from typing import Any

from xai_core.widgets import ClickPlot, require_widgets
from xai_whatif import editor_view as view
from xai_whatif.editor import COLOUR_BY, PROJECTION, EditorState
from xai_whatif.render_overview import render_neighbors

__all__ = ["EditorWidget"]

#: At most this many feature controls are shown; the rest are edited through ``feature``.
MAX_CONTROLS = 40


class EditorWidget:
    """The live editor over ``state`` (see the module docstring).

    Attributes
    ----------
    state : EditorState
    controls : dict of str to ipywidgets.Widget
        Feature name to its slider or dropdown (values in the column's own decimals).
    labels : dict of str to ipywidgets.HTML
        Feature name to its whole name, shown above the control and wrapping.
    editor_column, results_column, columns : ipywidgets.Box
        The What-If Tool's layout: the row picker, buttons and controls beside the
        prediction, the partial dependence of the edited feature, the explanation and the
        counterfactual; ``columns`` wraps them, so they stack on a narrow pane.
    row, search, matches, x_axis, y_axis, colour_by, feature : ipywidgets.Widget
        The row picker, search box and its matches, scatter axes and colouring, and the
        feature whose PD curve is shown.
    scatter : ClickPlot
        Its ``picked`` trait is the clicked row.
    panels : dict of str to ipywidgets.HTML
        ``prediction``, ``explanation``, ``counterfactual``, ``neighbors``, ``dependence``,
        ``history``.
    """

    def __init__(self, state: EditorState) -> None:
        w = require_widgets()
        self.state = state
        t = state.w.table
        self._syncing = False
        self.row = w.BoundedIntText(value=state.row, min=0, max=t.n_samples - 1, description="row")
        self.search = w.Text(placeholder="`mean radius` > 20", description="search")
        self.matches = w.Dropdown(options=[], description="matches")
        axes = [PROJECTION, *t.feature_names]
        self.x_axis = w.Dropdown(options=axes, value=state.axes[0], description="x")
        self.y_axis = w.Dropdown(options=axes, value=state.axes[1], description="y")
        self.colour_by = w.Dropdown(options=COLOUR_BY, value=state.colour_by, description="colour")
        self.feature = w.Dropdown(options=t.feature_names, value=state.feature, description="PD of")
        self.scatter = ClickPlot(view.scatter_html(state))
        self.controls = {
            name: self._control(j) for j, name in enumerate(t.feature_names[:MAX_CONTROLS])
        }
        self.buttons = {name: w.Button(description=name) for name in ("undo", "reset row", "clone")}
        self.panels = {
            name: w.HTML()
            for name in (
                "prediction",
                "explanation",
                "counterfactual",
                "neighbors",
                "dependence",
                "history",
            )
        }
        self.message = w.HTML()
        self.clones: list[EditorWidget] = []
        self._wire()
        state.listeners.append(self.refresh)
        self.refresh(state)
        self.labels = {name: self._label(name) for name in self.controls}
        column = {"flex": "1 1 420px", "min_width": "0", "margin": "0 24px 8px 0"}
        self.editor_column = w.VBox(
            [
                w.HBox(
                    [self.row, self.search, self.matches], layout=w.Layout(flex_flow="row wrap")
                ),
                w.HBox([*self.buttons.values()], layout=w.Layout(flex_flow="row wrap")),
                w.VBox(
                    [w.VBox([self.labels[n], c]) for n, c in self.controls.items()],
                    layout=w.Layout(max_height="70vh", overflow="auto"),
                ),
            ],
            layout=w.Layout(**column),
        )
        self.results_column = w.VBox(
            [
                self.panels["prediction"],
                self.feature,
                self.panels["dependence"],
                self.panels["explanation"],
                self.panels["counterfactual"],
                self.panels["neighbors"],
            ],
            layout=w.Layout(**column),
        )
        # The What-If Tool's layout: the editor beside what follows from it, stacked when narrow.
        self.columns = w.Box(
            [self.editor_column, self.results_column],
            layout=w.Layout(display="flex", flex_flow="row wrap", align_items="flex-start"),
        )
        self.box = w.VBox(
            [
                self.columns,
                self.message,
                w.HBox(
                    [self.x_axis, self.y_axis, self.colour_by],
                    layout=w.Layout(flex_flow="row wrap"),
                ),
                self.scatter,
                self.panels["history"],
            ]
        )

    @staticmethod
    def _label(name: str) -> Any:
        """The feature's whole name above its control, wrapping (a description would be cut)."""
        from html import escape

        w = require_widgets()
        return w.HTML(
            f"<span style='overflow-wrap:break-word;white-space:normal'>{escape(name)}</span>",
            layout=w.Layout(width="100%"),
        )

    def _control(self, j: int) -> Any:
        w = require_widgets()
        t = self.state.w.table
        value = self.state.values[j]
        if j in t.categories:
            options = [(str(label), label) for label in t.categories[j]]
            return w.Dropdown(
                options=options, value=t.label(j, value), layout=w.Layout(width="100%")
            )
        lo, hi = float(t.minimum[j]), float(t.maximum[j])
        if hi <= lo:
            hi = lo + 1.0
        full = w.Layout(width="100%")
        integral = bool(t.stepped[j] and t.decimals[j] == 0)
        if integral and hi - lo <= 1000:
            return w.IntSlider(value=int(value), min=int(lo), max=int(hi), layout=full)
        d = int(t.decimals[j])
        step = 10.0**-d if t.stepped[j] and (hi - lo) * 10.0**d <= 1000 else (hi - lo) / 200
        return w.FloatSlider(
            value=float(value),
            min=lo,
            max=hi,
            step=step,
            continuous_update=False,
            readout_format=f".{d}f",  # the column's own decimals
            layout=full,
        )

    def _wire(self) -> None:
        s = self.state
        self.row.observe(lambda c: self._guard(s.select, c["new"]), names="value")
        self.scatter.observe(
            lambda c: c["new"] >= 0 and self._guard(s.select, c["new"]), names="picked"
        )
        self.search.observe(lambda c: self._search(c["new"]), names="value")
        self.matches.observe(
            lambda c: c["new"] is not None and self._guard(s.select, c["new"]), names="value"
        )
        self.x_axis.observe(lambda c: self._guard(self._axes), names="value")
        self.y_axis.observe(lambda c: self._guard(self._axes), names="value")
        self.colour_by.observe(lambda c: self._guard(s.set_colour, c["new"]), names="value")
        self.feature.observe(lambda c: self._guard(s.set_feature, c["new"]), names="value")
        for name, control in self.controls.items():
            control.observe(
                lambda c, name=name: self._guard(s.set_value, name, c["new"]), names="value"
            )
        self.buttons["undo"].on_click(lambda _: self._guard(s.undo) if s.history else None)
        self.buttons["reset row"].on_click(lambda _: self._guard(s.reset))
        self.buttons["clone"].on_click(lambda _: self.clone())

    def _guard(self, fn: Any, *args: Any) -> Any:
        """Run a state change from a widget, unless the widgets are being synced to the state."""
        if self._syncing:
            return None
        try:
            self.message.value = ""
            return fn(*args)
        except Exception as exc:  # shown in the editor, not lost in the kernel log
            from html import escape

            self.message.value = (
                f"<p style='color:#b00'>{escape(type(exc).__name__)}: {escape(str(exc))}</p>"
            )
            return None

    def _axes(self) -> None:
        x, y = self.x_axis.value, self.y_axis.value
        self.state.set_axes(x, y if PROJECTION not in (x, y) else PROJECTION)

    def _search(self, query: str) -> None:
        if not query.strip():
            self.matches.options = []
            return
        rows = self._guard(self.state.search, query)
        if rows is not None:
            self._syncing = True
            self.matches.options = [(f"row {r}", int(r)) for r in rows[:200]]
            self.matches.value = None
            self._syncing = False

    def clone(self) -> EditorWidget:
        """A second editor on an independent copy of the session (shown below this one)."""
        other = EditorWidget(self.state.clone())
        self.clones.append(other)
        from IPython.display import display

        display(other)
        return other

    def refresh(self, state: EditorState | None = None) -> None:
        """Sync every control and panel to the state (called by the state after each change)."""
        s = self.state
        t = s.w.table
        self._syncing = True
        try:
            self.row.value = s.row
            self.feature.value = s.feature
            self.x_axis.value, self.y_axis.value = s.axes
            self.colour_by.value = s.colour_by
            values = s.values
            for j, control in enumerate(self.controls.values()):
                v = t.label(j, values[j]) if j in t.categories else values[j]
                control.value = int(v) if type(control).__name__ == "IntSlider" else v
        finally:
            self._syncing = False
        self.scatter.html = view.scatter_html(s)
        self.panels["prediction"].value = view.prediction_html(s)
        self.panels["explanation"].value = view.explanation_html(s)
        self.panels["counterfactual"].value = view.counterfactual_html(s)
        self.panels["neighbors"].value = render_neighbors(s.neighbors)
        self.panels["dependence"].value = view.dependence_html(s)
        self.panels["history"].value = view.history_html(s)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.box._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        return f"EditorWidget(row={self.state.row}, {len(self.state.history)} edit(s))"
