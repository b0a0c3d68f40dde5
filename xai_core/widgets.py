"""Notebook widgets tools share: an HTML/SVG plot that reports clicks to Python.

Needs the ``notebook`` extra (ipywidgets, anywidget). ``ClickPlot`` shows HTML (an inline
SVG chart); clicking an element carrying ``data-row="i"`` sets :attr:`picked` to ``i``, and
clicking inside an element carrying ``data-bounds="[x0, x1, y0, y1]"`` sets :attr:`point`
to the clicked position in those data coordinates. Python sets the same traits to drive it,
so tools are tested without a browser.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from xai_core.optional import require

__all__ = ["ClickPlot", "require_widgets"]

_ESM = """
function render({ model, el }) {
  const draw = () => { el.innerHTML = model.get("html"); };
  draw();
  model.on("change:html", draw);
  el.addEventListener("click", (ev) => {
    const hit = ev.target.closest("[data-row]");
    if (hit && el.contains(hit)) {
      model.set("picked", parseInt(hit.getAttribute("data-row"), 10));
      model.save_changes();
      return;
    }
    const plot = ev.target.closest("[data-bounds]");
    if (!plot || !el.contains(plot)) return;
    const r = plot.getBoundingClientRect();
    const b = JSON.parse(plot.getAttribute("data-bounds"));
    const fx = (ev.clientX - r.left) / r.width, fy = (ev.clientY - r.top) / r.height;
    model.set("point", [b[0] + fx * (b[1] - b[0]), b[3] - fy * (b[3] - b[2])]);
    model.save_changes();
  });
}
export default { render };
"""


def require_widgets() -> Any:
    """The ``ipywidgets`` module, or an ImportError saying which extra installs it."""
    return require("ipywidgets", extra="notebook", need="live notebook views")


@cache
def _click_plot_class() -> type:
    require_widgets()
    import anywidget
    import traitlets

    class _ClickPlot(anywidget.AnyWidget):
        """HTML that reports clicks: ``picked`` (a ``data-row``) and ``point`` (data coordinates)."""

        _esm = _ESM
        html = traitlets.Unicode("").tag(sync=True)
        picked = traitlets.Int(-1).tag(sync=True)
        point = traitlets.List(traitlets.Float(), default_value=[]).tag(sync=True)

    _ClickPlot.__name__ = _ClickPlot.__qualname__ = "ClickPlot"
    return _ClickPlot


def ClickPlot(html: str = "", **kwargs: Any) -> Any:  # noqa: N802 - a widget class, built lazily
    """A new click-reporting plot widget showing ``html`` (see the module docstring)."""
    return _click_plot_class()(html=html, **kwargs)
