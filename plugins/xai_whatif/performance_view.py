"""The What-If Tool's "Performance & Fairness" tab, live: a threshold slider, the cost ratio and the strategies.

``view = w.performance(by)`` holds a :class:`PerformanceState` (driven from Python) and,
in a notebook, its widgets: moving the threshold redraws every slice's confusion matrix,
rates and operating point on the ROC and PR curves; choosing a strategy other than
``"custom"`` sets the thresholds it picks for the cost ratio, as the What-If Tool's
"single threshold", "demographic parity", "equal opportunity" and "equal accuracy" buttons do
(and ``"group"``: each slice its own cheapest threshold).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xai_core import UnknownNameError, ValidationError
from xai_core.widgets import require_widgets
from xai_whatif import fairness as _fair

if TYPE_CHECKING:
    from xai_whatif.whatif import WhatIf

__all__ = ["PerformanceState", "PerformanceWidget", "performance"]

#: "custom": the threshold slider's value for every slice; the others: fairness.STRATEGIES.
STRATEGY_CHOICES = ("custom", *_fair.STRATEGIES)


class PerformanceState:
    """Slices at a threshold, or at the thresholds a strategy picks, for one cost ratio.

    Parameters
    ----------
    w : WhatIf
        A session of a binary classifier with labels.
    by : feature or pair of features
    bins : int, default=4
    threshold : float, default=0.5
    cost_ratio : float, default=1.0
        Cost of a false positive relative to a false negative.
    strategy : str, default="custom"
        One of :data:`STRATEGY_CHOICES`.

    Attributes
    ----------
    slices : SliceMetrics
        Every slice at :attr:`threshold` (confusion matrices, rates, curves).
    choice : ThresholdChoice or None
        The strategy's thresholds (None for ``"custom"``).
    cost : float
        ``cost_ratio * FP + FN`` summed over the slices, at the thresholds in use.
    """

    def __init__(
        self,
        w: WhatIf,
        by: Any,
        *,
        bins: int = 4,
        threshold: float = 0.5,
        cost_ratio: float = 1.0,
        strategy: str = "custom",
    ) -> None:
        self.w, self.by, self.bins = w, by, bins
        self.threshold, self.cost_ratio, self.strategy = threshold, cost_ratio, strategy
        self.listeners: list[Any] = []
        self.update()

    def update(self, **changes: Any) -> PerformanceState:
        """Set ``threshold``, ``cost_ratio`` or ``strategy`` and recompute; tells listeners."""
        unknown = sorted(set(changes) - {"threshold", "cost_ratio", "strategy"})
        if unknown:
            raise ValidationError(
                f"update takes threshold, cost_ratio and strategy; got {unknown}."
            )
        strategy = changes.get("strategy", self.strategy)
        if strategy not in STRATEGY_CHOICES:
            raise UnknownNameError("strategy", strategy, STRATEGY_CHOICES)
        for name, value in changes.items():
            setattr(self, name, value)
        self.slices = self.w.slices(self.by, bins=self.bins, threshold=float(self.threshold))
        if self.strategy == "custom":
            self.choice = None
            t = self.slices.table
            if not float(self.cost_ratio) > 0:
                raise ValidationError(f"cost_ratio must be positive; got {self.cost_ratio!r}.")
            self.cost = float(self.cost_ratio * t["fp"].sum() + t["fn"].sum())
        else:
            self.choice = self.w.thresholds(
                self.by, self.strategy, cost_ratio=float(self.cost_ratio), bins=self.bins
            )
            self.cost = self.choice.cost
        for listener in self.listeners:
            listener(self)
        return self

    def html(self) -> str:
        """The tab as HTML: the strategy's choice (or the slices at the threshold) and the cost."""
        from xai_core.report import format_number, render_fragment

        head = (
            (
                f"<p>Threshold {format_number(self.threshold)} for every slice"
                if self.choice is None
                else f"<p>Strategy {self.strategy}"
            )
            + f"; cost ratio {format_number(self.cost_ratio)}; total cost {format_number(self.cost)}.</p>"
        )
        body = render_fragment(self.slices if self.choice is None else self.choice)
        return head + body


class PerformanceWidget:
    """The tab in a notebook: threshold slider, cost ratio, strategy menu and the panel.

    Setting a control's ``value`` from Python does what moving it does.
    """

    def __init__(self, state: PerformanceState) -> None:
        w = require_widgets()
        self.state = state
        self.threshold = w.FloatSlider(
            value=state.threshold, min=0.0, max=1.0, step=0.01, description="threshold"
        )
        self.cost_ratio = w.BoundedFloatText(
            value=state.cost_ratio, min=0.01, max=100.0, step=0.1, description="cost FP/FN"
        )
        self.strategy = w.Dropdown(
            options=STRATEGY_CHOICES, value=state.strategy, description="strategy"
        )
        self.panel = w.HTML(state.html())
        for control, name in (
            (self.threshold, "threshold"),
            (self.cost_ratio, "cost_ratio"),
            (self.strategy, "strategy"),
        ):
            control.observe(lambda ch, name=name: state.update(**{name: ch["new"]}), names="value")
        state.listeners.append(self._redraw)
        self.box = w.VBox([w.HBox([self.strategy, self.threshold, self.cost_ratio]), self.panel])

    def _redraw(self, state: PerformanceState) -> None:
        self.threshold.disabled = state.strategy != "custom"
        self.panel.value = state.html()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.box._repr_mimebundle_(**kwargs)


def performance(w: WhatIf, by: Any, **options: Any) -> PerformanceWidget:
    """The live Performance & Fairness tab of ``w``, sliced by ``by``.

    ``options`` go to :class:`PerformanceState`. Returns a :class:`PerformanceWidget`
    (its ``state`` the :class:`PerformanceState`).
    """
    return PerformanceWidget(PerformanceState(w, by, **options))
