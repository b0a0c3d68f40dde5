"""The arguments of :func:`~xai_projector.project`, checked before any work.

Each check names the argument, what was expected and what arrived.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import xai_core as xai
from xai_core import ShapeError, UnknownNameError, ValidationError
from xai_core.images import sample_layout
from xai_core.validation import check_array
from xai_projector.search import Selection, search_columns

__all__ = [
    "check_explanation",
    "check_groups",
    "check_images",
    "check_metadata",
    "check_strings",
    "check_vectors",
    "vectors_from",
]


def check_vectors(vectors: Any) -> np.ndarray:
    """``vectors`` as a finite float array of shape (n_samples, n_features), at least 3 rows."""
    arr = check_array(vectors, "vectors", dtype=None, min_samples=3)
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise ShapeError(
            "vectors must have shape (n_samples, n_features) with at least 1 column; got an "
            f"array of shape {arr.shape}."
        )
    return arr if arr.dtype.kind == "f" else arr.astype(np.float64)


def check_strings(values: Any, name: str, n: int) -> np.ndarray:
    """``values`` as text, shape (n,) of object (str); None as ``""``, floats in their own precision."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise ValidationError(
            f"{name} must be a sequence of length n_samples = {n}; got {type(values).__name__}."
        )
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ShapeError(f"{name} must have shape ({n},) (one per row); got shape {arr.shape}.")
    # Floats as their own precision prints them: a float32 0.993 is "0.993", not the
    # "0.9929999709129333" of the float64 that tolist() would make of it.
    items = list(arr) if arr.dtype.kind == "f" else arr.tolist()
    return np.array(["" if v is None else str(v) for v in items], dtype=object)


def check_metadata(metadata: Any, n: int) -> dict[str, np.ndarray]:
    if metadata is None:
        return {}
    if hasattr(metadata, "columns") and hasattr(metadata, "to_dict"):  # a pandas DataFrame
        metadata = {str(c): metadata[c].to_numpy() for c in metadata.columns}
    if not isinstance(metadata, Mapping):
        raise ValidationError(
            "metadata must be a mapping of column name to a sequence of length n_samples, "
            f"or a pandas DataFrame; got {type(metadata).__name__}."
        )
    return {str(k): check_strings(v, f"metadata[{k!r}]", n) for k, v in metadata.items()}


def check_images(images: Any, n: int) -> np.ndarray | None:
    if images is None:
        return None
    arr = np.asarray(images, dtype=np.float64)
    layout = sample_layout(arr.shape[1:], square=True) if arr.ndim in (2, 3, 4) else None
    if layout is not None and arr.shape[0] == n:
        arr = layout.grey(arr)  # the one layout rule (xai_core.images); channels averaged
    if arr.ndim != 3 or arr.shape[0] != n:
        raise ShapeError(
            f"images must have shape ({n}, height, width), ({n}, height, width, channels), "
            f"({n}, channels, height, width) or ({n}, height * width) of a square, in [0, 1]; "
            f"got shape {arr.shape}."
        )
    return arr


def check_axes(
    axes: Sequence[tuple[Any, Any]] | None,
    method: str,
    n_components: int,
    columns: dict[str, np.ndarray],
    labels: np.ndarray | None,
    n: int,
    *,
    regex: bool = False,
    fields: str | Sequence[str] | None = None,
) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[list[str | None]]]:
    """The row indices of ``method="custom"``'s two axes, and each end's query (or None).

    Each end is a search (a str, matched as :meth:`Projection.search` matches, with
    ``regex`` and ``fields``) or what ``groups=`` takes (a Selection, row indices, a mask).
    """
    if method != "custom":
        if axes is not None:
            raise ValidationError("axes applies only to method='custom'.")
        return [], []
    if n_components != 2:
        raise ValidationError(
            f"method='custom' gives 2-D projections (x and y axes); got n_components={n_components}."
        )
    if axes is None or isinstance(axes, str) or len(axes) != 2:
        raise ValidationError(
            "method='custom' needs axes=[(left, right), (down, up)]: two searches (or groups) "
            f"per axis, x from left to right and y from down to up; got {axes!r}."
        )
    pairs, queries = [], []
    for i, pair in enumerate(axes):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValidationError(f"axes[{i}] must be a pair (a, b); got {pair!r}.")
        ends, texts = [], []
        for j, end in enumerate(pair):
            what = f"axes[{i}][{j}]"
            if isinstance(end, str):
                idx = search_columns(columns, end, regex=regex, fields=fields).indices
                if idx.size == 0:
                    raise ValidationError(f"{what}: the search {end!r} matches no row.")
                ends.append(idx)
                texts.append(end)
            else:
                ends.append(_resolve_group(end, labels, n, what))
                texts.append(None)
        pairs.append(tuple(ends))
        queries.append(texts)
    return pairs, queries


def _resolve_group(spec: Any, labels: np.ndarray | None, n: int, what: str) -> np.ndarray:
    if isinstance(spec, Selection):
        idx = spec.indices
    elif isinstance(spec, (str, int, np.integer)) and not isinstance(spec, bool):
        if labels is None:
            raise ValidationError(f"{what} names a label ({spec!r}) but no labels were given.")
        idx = np.flatnonzero(labels == str(spec))
        if idx.size == 0:
            raise UnknownNameError("label", str(spec), sorted(set(labels.tolist()))[:50])
    else:
        arr = np.asarray(spec)
        if arr.dtype == bool:
            if arr.shape != (n,):
                raise ShapeError(f"{what} as a mask must have shape ({n},); got {arr.shape}.")
            idx = np.flatnonzero(arr)
        elif arr.dtype.kind in "iu":
            idx = arr.ravel().astype(np.int64)
            if idx.size and (idx.min() < 0 or idx.max() >= n):
                raise ValidationError(f"{what} holds row indices outside [0, {n - 1}].")
        else:
            raise ValidationError(
                f"{what} must be a label, a Selection, row indices or a boolean mask; "
                f"got {type(spec).__name__}."
            )
    if idx.size == 0:
        raise ValidationError(f"{what} selects no rows.")
    return idx


def vectors_from(source: Any, X: Any, layer: Any) -> tuple[np.ndarray, dict[str, Any]]:
    runner = source if isinstance(source, xai.ModelRunner) else xai.ModelRunner(source, example=X)
    if layer is None:
        raise ValidationError(
            "layer is required when projecting a model's activations: an index or layer name."
        )
    acts = np.asarray(runner.activations(X, layer))
    info = {"layer": layer, "backend": getattr(runner.backend, "name", None)}
    return acts.reshape(acts.shape[0], -1), info


def check_explanation(explanation: Any, n: int) -> Any:
    """``explanation`` if it explains the same ``n`` rows (or is None); otherwise raise."""
    if explanation is not None:
        shape = np.shape(getattr(explanation, "values", None))
        if not shape or shape[0] != n:
            raise ShapeError(
                f"explanation must be an Explanation of the same {n} rows (values of shape "
                f"({n}, ...)); got values of shape {shape}."
            )
    return explanation


def check_groups(
    groups: Sequence[tuple[Any, Any]] | None, method: str, n_components: int, labels: Any, n: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The row indices of each ``(a, b)`` group pair of ``method="linear"``; empty for other methods."""
    if method != "linear":
        if groups is not None:
            raise ValidationError("groups applies only to method='linear'.")
        return []
    if groups is None or not 1 <= len(groups) <= n_components:
        raise ValidationError(
            "method='linear' needs groups=[(a, b)] or [(a, b), (c, d)]: each axis runs from "
            "the mean of one group to the mean of another."
        )
    pairs = []
    for i, pair in enumerate(groups):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValidationError(f"groups[{i}] must be a pair (a, b); got {pair!r}.")
        pairs.append(
            tuple(_resolve_group(g, labels, n, f"groups[{i}][{j}]") for j, g in enumerate(pair))
        )
    return pairs
