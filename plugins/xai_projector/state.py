"""A view's state: what a bookmark saves and loads again, and its JSON form.

A :class:`ViewState` holds what the view shows: the camera (zoom, pan, and the 3-D view's
rotation), the selected point, the search, the t-SNE snapshot shown, the columns the points are coloured and labelled
by, whether images show as thumbnails, and which projection it belongs to (method and
components). :meth:`ProjectionView.bookmark` saves one under a name;
:meth:`ProjectionView.load_bookmark` restores it. ``to_dict`` / ``from_dict`` round-trip
through JSON; :mod:`xai_projector.export` writes bookmarks in TensorBoard's own format too.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from xai_core import ValidationError

__all__ = ["ViewState"]


@dataclass(frozen=True)
class ViewState:
    """One view of a projection, as a bookmark holds it.

    Attributes
    ----------
    name : str
        The bookmark's name (TensorBoard's ``label``).
    method : str
        The projection method it was taken on (``"pca"``, ``"tsne"``, ...).
    n_components : int
        The projection's components (2 or 3).
    dims : int
        2 or 3: the view shown.
    zoom : float
        Scale factor of the view (1 = the whole projection fits), in [0.2, 200].
    pan_x, pan_y : float
        Shift of the view in pixels of the 640 x 480 frame.
    yaw, pitch : float
        Rotation of the 3-D view in radians (pitch in [-pi/2, pi/2]).
    selected : int or None
        The point whose neighbours are listed.
    search : str
        The search box's text; ``regex`` whether it is a regular expression.
    search_by : str or None
        The column searched, or None for every column.
    color_by, label_by : str
        Columns the points are coloured and labelled by, or ``"none"``.
    thumbnails : bool
        Images drawn as thumbnails in place of points.
    frame : int or None
        The t-SNE snapshot shown (an index into ``Projection.snapshots``), or None for the
        result.
    """

    name: str = ""
    method: str = ""
    n_components: int = 2
    dims: int = 2
    zoom: float = 1.0
    pan_x: float = 0.0
    pan_y: float = 0.0
    yaw: float = 0.0
    pitch: float = 0.0
    selected: int | None = None
    search: str = ""
    regex: bool = False
    search_by: str | None = None
    color_by: str = "none"
    label_by: str = "none"
    thumbnails: bool = False
    frame: int | None = None

    def __post_init__(self) -> None:
        for key in ("zoom", "pan_x", "pan_y", "yaw", "pitch"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValidationError(
                    f"ViewState.{key} must be a number; got {type(value).__name__}."
                )
            if not math.isfinite(value):
                raise ValidationError(f"ViewState.{key} must be finite; got {value!r}.")
            object.__setattr__(self, key, float(value))
        if not 0.2 <= self.zoom <= 200:
            raise ValidationError(f"ViewState.zoom must be in [0.2, 200]; got {self.zoom!r}.")
        if abs(self.pitch) > math.pi / 2 + 1e-9:
            raise ValidationError(f"ViewState.pitch must be in [-pi/2, pi/2]; got {self.pitch!r}.")
        for key in ("dims", "n_components"):
            if getattr(self, key) not in (2, 3) or isinstance(getattr(self, key), bool):
                raise ValidationError(
                    f"ViewState.{key} must be 2 or 3; got {getattr(self, key)!r}."
                )
        if self.frame is not None and (
            isinstance(self.frame, bool) or not isinstance(self.frame, int) or self.frame < 0
        ):
            raise ValidationError(
                f"ViewState.frame must be a snapshot index (int >= 0) or None; got {self.frame!r}."
            )
        if self.selected is not None and (
            isinstance(self.selected, bool)
            or not isinstance(self.selected, int)
            or self.selected < 0
        ):
            raise ValidationError(
                f"ViewState.selected must be a row index (int >= 0) or None; got {self.selected!r}."
            )
        for key in ("regex", "thumbnails"):
            if not isinstance(getattr(self, key), bool):
                raise ValidationError(
                    f"ViewState.{key} must be True or False; got {getattr(self, key)!r}."
                )
        if self.search_by is not None and not isinstance(self.search_by, str):
            raise ValidationError(
                f"ViewState.search_by must be a column name (str) or None; got "
                f"{type(self.search_by).__name__}."
            )
        for key in ("name", "method", "search", "color_by", "label_by"):
            if not isinstance(getattr(self, key), str):
                raise ValidationError(
                    f"ViewState.{key} must be a str; got {type(getattr(self, key)).__name__}."
                )

    def to_dict(self) -> dict[str, Any]:
        """The state as a JSON-ready dict (every field)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> ViewState:
        """The state a :meth:`to_dict` dict describes; unknown keys are an error, missing ones default."""
        if not isinstance(doc, dict):
            raise ValidationError(f"a view state must be a dict; got {type(doc).__name__}.")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(doc) - known)
        if unknown:
            raise ValidationError(
                f"unknown view-state keys {unknown}; expected some of {sorted(known)}."
            )
        return cls(**doc)

    def renamed(self, name: str) -> ViewState:
        """The same state under another name."""
        return replace(self, name=name)
