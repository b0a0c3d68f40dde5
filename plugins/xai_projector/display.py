"""View settings: which column colours the points and whether a 3-D projection shows in 3-D.

:meth:`Projection.show` returns a :class:`ProjectionView`, which renders in notebooks,
pages and reports like the projection itself, starting with those settings.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from xai_core import UnknownNameError, ValidationError

__all__ = ["ProjectionView", "check_view", "view_settings"]

#: ``color_by=`` value for one colour for every point.
NO_COLOR = "none"


def check_view(p: Any, color_by: str | None = None, dims: int | None = None) -> tuple[str, int]:
    """``color_by`` and ``dims`` checked against the projection ``p``, defaults filled in.

    Parameters
    ----------
    p : Projection
    color_by : str, optional
        A column of ``p.columns`` (``"label"`` or a metadata column), or ``"none"``; by
        default the labels, or one colour without them.
    dims : {2, 3}, optional
        By default the projection's ``n_components``; 3 needs a 3-D projection.

    Returns
    -------
    (str, int)
        The column (or ``"none"``) and the dimensions to show first.
    """
    columns = list(p.columns)
    if color_by is None:
        color_by = "label" if p.labels is not None else NO_COLOR
    elif not isinstance(color_by, str):
        raise ValidationError(
            f"color_by must be a column name (str); got {type(color_by).__name__}."
        )
    elif color_by != NO_COLOR and color_by not in columns:
        raise UnknownNameError("color_by column", color_by, [*columns, NO_COLOR])
    if dims is None:
        dims = p.n_components
    elif isinstance(dims, bool) or dims not in (2, 3):
        raise ValidationError(f"dims must be 2 or 3; got {dims!r}.")
    elif dims > p.n_components:
        raise ValidationError(
            f"dims=3 needs a 3-D projection (n_components=3); this one has "
            f"n_components={p.n_components}."
        )
    return color_by, int(dims)


class ProjectionView:
    """A :class:`Projection` shown with settings: what :meth:`Projection.show` returns.

    Attributes
    ----------
    projection : Projection
    color_by : str
        The column the points are coloured by first, or ``"none"``.
    dims : int
        2 or 3: the view shown first (a 3-D projection can switch).
    """

    def __init__(self, projection: Any, color_by: str | None = None, dims: int | None = None):
        self.projection = projection
        self.color_by, self.dims = check_view(projection, color_by, dims)

    def __repr__(self) -> str:
        return f"ProjectionView({self.projection!r}, color_by={self.color_by!r}, dims={self.dims})"

    def to_html(self, title: str | None = None) -> str:
        """A standalone HTML page with the interactive view (its own Content-Security-Policy)."""
        from xai_projector.view import standalone_page

        return standalone_page(self, title)

    def save_html(self, path: str | os.PathLike[str], title: str | None = None) -> Path:
        """Write :meth:`to_html` to ``path`` atomically."""
        from xai_core.files import atomic_write_text

        path = Path(path)
        atomic_write_text(path, self.to_html(title))
        return path

    def _repr_html_(self) -> str:
        from xai_projector.view import notebook_html

        return notebook_html(self)


def view_settings(obj: Any) -> tuple[Any, str, int]:
    """``(projection, color_by, dims)`` of a :class:`ProjectionView` or a projection (defaults)."""
    if isinstance(obj, ProjectionView):
        return obj.projection, obj.color_by, obj.dims
    color_by, dims = check_view(obj)
    return obj, color_by, dims
