"""View settings: colour and label columns, thumbnails, 2-D or 3-D, camera; bookmarks of them.

:meth:`Projection.show` returns a :class:`ProjectionView`, which renders in notebooks,
pages and reports like the projection itself, starting with those settings.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from xai_core import UnknownNameError, ValidationError
from xai_projector.state import ViewState

__all__ = [
    "ProjectionView",
    "as_view",
    "check_column",
    "check_state",
    "check_thumbnails",
    "check_view",
    "view_settings",
]

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

    The settings are a :class:`~xai_projector.state.ViewState` (:attr:`state`); the view
    opens in it, and :meth:`bookmark` / :meth:`load_bookmark` save and restore states by
    name. Bookmarks travel with the view: the page lists them in its "Bookmarks" menu, and
    :meth:`export_tensorboard` writes them in TensorBoard's bookmarks format.

    Attributes
    ----------
    projection : Projection
    state : ViewState
        What the view shows first.
    bookmarks : dict of str to ViewState
        Saved states, in the order saved.
    """

    def __init__(
        self,
        projection: Any,
        color_by: str | None = None,
        dims: int | None = None,
        *,
        label_by: str | None = None,
        thumbnails: bool | None = None,
    ):
        self.projection = projection
        color_by, dims = check_view(projection, color_by, dims)
        label_by = check_column(projection, label_by, "label_by")
        thumbnails = check_thumbnails(projection, thumbnails)
        self.state = ViewState(
            method=projection.method,
            n_components=projection.n_components,
            dims=dims,
            color_by=color_by,
            label_by=label_by,
            thumbnails=thumbnails,
            search_by=_default_search_by(projection),
        )
        self.bookmarks: dict[str, ViewState] = {}

    @property
    def color_by(self) -> str:
        """The column the points are coloured by first, or ``"none"``."""
        return self.state.color_by

    @property
    def dims(self) -> int:
        """2 or 3: the view shown first (a 3-D projection can switch)."""
        return self.state.dims

    @property
    def label_by(self) -> str:
        """The column whose values are drawn next to the points, or ``"none"``."""
        return self.state.label_by

    @property
    def thumbnails(self) -> bool:
        """Whether the images are drawn as thumbnails in place of points."""
        return self.state.thumbnails

    def set_state(self, state: ViewState | dict[str, Any] | None = None, **changes: Any) -> None:
        """Show ``state`` (a ViewState or its dict), with ``changes`` to its fields, checked.

        ``view.set_state(zoom=2, selected=5, search="cat")`` changes only those fields.
        """
        base = self.state if state is None else _as_state(state)
        new = replace(base, **changes) if changes else base
        self.state = check_state(self.projection, new)

    def bookmark(self, name: str) -> ViewState:
        """Save the current state under ``name`` (replacing a bookmark of that name); return it."""
        if not isinstance(name, str) or not name:
            raise ValidationError(f"a bookmark name must be a non-empty str; got {name!r}.")
        self.bookmarks[name] = self.state.renamed(name)
        return self.bookmarks[name]

    def load_bookmark(self, name: str) -> ViewState:
        """Restore the state saved as ``name``; return it."""
        if name not in self.bookmarks:
            raise UnknownNameError("bookmark", name, list(self.bookmarks) or ["(no bookmarks)"])
        self.set_state(self.bookmarks[name])
        return self.state

    def add_bookmarks(self, states: Any) -> None:
        """Add saved states (ViewStates or their dicts, e.g. ``load_tensorboard(...)["bookmarks"]``)."""
        for i, s in enumerate(states):
            state = check_state(self.projection, _as_state(s))
            self.bookmarks[state.name or f"bookmark {i + 1}"] = state

    def export_tensorboard(
        self, directory: str | os.PathLike[str], **options: Any
    ) -> dict[str, Path]:
        """:meth:`Projection.export_tensorboard` with this view's bookmarks in ``bookmarks.json``.

        The current state is written too when there are no bookmarks.
        """
        states = list(self.bookmarks.values()) or [self.state.renamed(self.state.name or "view")]
        return self.projection.export_tensorboard(directory, bookmarks=states, **options)

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


def _as_state(state: Any) -> ViewState:
    if isinstance(state, ViewState):
        return state
    return ViewState.from_dict(state)


def _default_search_by(p: Any) -> str | None:
    fields = p.search_fields or ()
    return next((f for f in fields if f in p.columns), None)


def check_column(p: Any, name: str | None, what: str) -> str:
    """``name`` a column of ``p.columns`` or ``"none"`` (the default), else an error naming ``what``."""
    if name is None:
        return NO_COLOR
    if not isinstance(name, str):
        raise ValidationError(f"{what} must be a column name (str); got {type(name).__name__}.")
    if name != NO_COLOR and name not in p.columns:
        raise UnknownNameError(f"{what} column", name, [*p.columns, NO_COLOR])
    return name


def check_thumbnails(p: Any, thumbnails: bool | None) -> bool:
    """Whether to start with thumbnails: needs the projection's images, at most MAX_THUMBNAILS."""
    from xai_projector.view import MAX_THUMBNAILS

    if thumbnails is None or thumbnails is False:
        return False
    if thumbnails is not True:
        raise ValidationError(f"thumbnails must be True or False; got {thumbnails!r}.")
    if p.images is None:
        raise ValidationError("thumbnails=True needs images (project(..., images=...)).")
    if len(p) > MAX_THUMBNAILS:
        raise ValidationError(
            f"thumbnails=True works up to {MAX_THUMBNAILS:,} points; this projection has {len(p):,}."
        )
    return True


def check_state(p: Any, state: ViewState) -> ViewState:
    """``state`` checked against the projection ``p``: same method and components, known columns."""
    if state.method and state.method != p.method:
        raise ValidationError(
            f"the view state was taken on a {state.method!r} projection; this one is {p.method!r}."
        )
    if state.n_components != p.n_components:
        raise ValidationError(
            f"the view state has n_components={state.n_components}; this projection has "
            f"n_components={p.n_components}."
        )
    check_view(p, state.color_by, state.dims)
    check_column(p, state.label_by, "label_by")
    if state.search_by is not None:
        check_column(p, state.search_by, "search_by")
    check_thumbnails(p, state.thumbnails)
    kept = p.snapshots
    if state.frame is not None and (kept is None or state.frame >= len(kept[0])):
        count = 0 if kept is None else len(kept[0])
        raise ValidationError(
            f"frame must index the projection's {count} t-SNE snapshots (tsne_snapshots=); "
            f"got {state.frame}."
        )
    if state.selected is not None and state.selected >= len(p):
        raise ValidationError(
            f"selected must be a row index in [0, {len(p) - 1}]; got {state.selected}."
        )
    return replace(state, method=p.method)


def view_settings(obj: Any) -> tuple[Any, str, int]:
    """``(projection, color_by, dims)`` of a :class:`ProjectionView` or a projection (defaults)."""
    view = as_view(obj)
    return view.projection, view.color_by, view.dims


def as_view(obj: Any) -> ProjectionView:
    """``obj`` if a :class:`ProjectionView`, else the default view of the projection ``obj``."""
    return obj if isinstance(obj, ProjectionView) else ProjectionView(obj)
