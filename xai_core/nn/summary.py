"""A network's summary table: layers, output shapes, parameters and MACs per sample."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

__all__ = ["Summary"]


@dataclass(frozen=True)
class Summary:
    """What :meth:`Sequential.summary` returns; prints as text and renders as HTML in notebooks.

    Attributes
    ----------
    rows : tuple of dict
        One per layer: ``name``, ``layer``, ``output_shape``, ``params``, ``macs`` (and, for
        a graph, ``inputs``: the names of the node's inputs).
    input_shape : tuple of int
    n_params : int
        Total trainable parameters.
    macs : int
        Multiply-accumulates of one sample's forward pass.
    """

    rows: tuple[dict[str, Any], ...]
    input_shape: tuple[int, ...]
    n_params: int
    macs: int

    def to_frame(self):
        """The rows as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame(list(self.rows))

    def _graph(self) -> bool:
        return any("inputs" in r for r in self.rows)

    def _head(self) -> list[str]:
        head = ["name", "layer", "output shape", "params", "MACs/sample"]
        return head[:2] + ["inputs"] + head[2:] if self._graph() else head

    def _cells(self) -> list[list[str]]:
        cells = [
            [r["name"], r["layer"], str(r["output_shape"]), f"{r['params']:,}", f"{r['macs']:,}"]
            for r in self.rows
        ]
        if self._graph():
            cells = [c[:2] + [r["inputs"]] + c[2:] for c, r in zip(cells, self.rows)]
        return cells

    def __str__(self) -> str:
        head = self._head()
        text = len(head) - 2  # the left-aligned columns: all but params and MACs
        cells = [head, *self._cells()]
        widths = [max(len(row[i]) for row in cells) for i in range(len(head))]
        lines = []
        for k, row in enumerate(cells):
            lines.append(
                "  ".join(
                    c.ljust(w) if i < text else c.rjust(w)
                    for i, (c, w) in enumerate(zip(row, widths))
                )
            )
            if k == 0:
                lines.append("-" * len(lines[0]))
        lines.append("-" * len(lines[0]))
        lines.append(
            f"input shape {self.input_shape}; {self.n_params:,} parameters; "
            f"{self.macs:,} MACs per sample"
        )
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in self._head())
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
            for row in self._cells()
        )
        foot = html.escape(
            f"input shape {self.input_shape}; {self.n_params:,} parameters; {self.macs:,} MACs per sample"
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table><p>{foot}</p>"
