"""Other views of an Explanation: its image layout, shap's ``Explanation``, a DataFrame, feature selection, text.

Kept apart from :mod:`xai_core.attribution.explanation` so the result type stays small.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core.errors import UnknownNameError, ValidationError
from xai_core.images import ImageLayout, sample_layout

if TYPE_CHECKING:
    import pandas as pd
    import shap

    from xai_core.attribution.explanation import Explanation

__all__ = [
    "explanation_layout",
    "feature_names_of",
    "select_features",
    "summary_text",
    "to_frame",
    "to_shap",
]

_MIN_PIXEL_SIDE = 8


def explanation_layout(e: Any) -> ImageLayout | None:
    """The image layout of an explanation's rows (:mod:`xai_core.images`), or None.

    None for a series (``meta["series_order"]``, which a network reading series records).
    From ``meta["image_shape"]`` when it holds a row's values; else the rows' own shape
    when it is an image shape; else a square grey image when every feature is named
    ``pixel_...`` (at least 8 x 8).
    """
    sample = tuple(e.values.shape[1:])
    if e.meta.get("series_order") is not None and "image_shape" not in e.meta:
        return None  # a series (xai_core.series), not a grey image
    declared = e.meta.get("image_shape")
    if declared is not None and np.asarray(declared).dtype.kind not in "iu":
        declared = None  # not a shape: draw what the values show
    layout = sample_layout(
        sample, None if declared is None else tuple(np.ravel(declared)), strict=False
    )
    if layout is not None:
        return layout
    names = e.feature_names
    if names and all(n.startswith("pixel_") for n in names):
        layout = sample_layout(sample, square=True)
        if layout is not None and layout.height >= _MIN_PIXEL_SIDE:
            return layout
    return None


def feature_names_of(e: Explanation) -> tuple[str, ...]:
    """The explanation's feature names; for images without names, ``pixel_<row>_<col>`` by position."""
    if e.feature_names is not None:
        return e.feature_names
    layout = explanation_layout(e)
    if layout is not None:
        return layout.pixel_names()
    return tuple(f"x{i}" for i in range(int(np.prod(e.values.shape[1:]))))


def _feature_index(e: Explanation, key: Any) -> list[int]:
    names = feature_names_of(e)
    n = len(names)
    keys = [key] if isinstance(key, (str, int, np.integer)) else key
    if isinstance(key, slice):
        return list(range(n))[key]
    if isinstance(keys, np.ndarray) and keys.dtype == np.bool_:
        if keys.shape != (n,):
            raise ValidationError(f"a feature mask must have shape ({n},); got {keys.shape}.")
        return np.flatnonzero(keys).tolist()
    if not isinstance(keys, (Sequence, np.ndarray)) or isinstance(keys, str):
        raise ValidationError(
            "the feature index must be a name, an int, a slice or a list of them; "
            f"got {type(key).__name__}."
        )
    lookup = {name: i for i, name in enumerate(names)}
    out = []
    for k in keys:
        if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            if not -n <= int(k) < n:
                raise ValidationError(f"feature index {int(k)} is out of range for {n} features.")
            out.append(int(k) % n)
        elif isinstance(k, str) and k in lookup:
            out.append(lookup[k])
        elif isinstance(k, str):
            raise UnknownNameError("feature name", k, list(names))
        else:
            raise ValidationError(f"a feature must be a name or an int; got {type(k).__name__}.")
    return out


def select_features(e: Explanation, features: Any) -> Explanation:
    """The features ``features`` selects of ``e`` (a batch or one row), flat.

    A name or an int is one feature: values of shape (n_samples,), or one value for a
    row, with ``feature_names`` that name (shap's ``e[:, "age"]``). A slice, a list or a
    boolean mask keeps the feature axis: values of shape (n_samples, k) (``(k,)`` for a
    row). Pixels count in flattened order.
    """
    from xai_core.attribution.explanation import Explanation

    b = e.as_batch()
    idx = _feature_index(b, features)
    n = len(b)
    flat = b.values.reshape(n, -1)[:, idx]
    data = None if b.data is None else b.data.reshape(n, -1)[:, idx]
    all_names = feature_names_of(b)
    names: Any = [all_names[i] for i in idx]
    one = isinstance(features, (str, int, np.integer)) and not isinstance(features, bool)
    axes = e.axes
    if one:
        flat, names = flat[:, 0], names[0]
        data = None if data is None else data[:, 0]
        axes = tuple(a for a in axes if a != "features")
    if "rows" not in e.axes:
        flat = flat[0]
        data = None if data is None else data[0]
    meta = {k: v for k, v in e.meta.items() if k != "image_shape"}
    return Explanation(
        values=flat,
        base_values=e.base_values,
        target=e.target,
        data=data,
        feature_names=names,
        output_names=e.output_names,
        method=e.method,
        backend=e.backend,
        meta=meta,
        axes=axes,
    )


def to_shap(e: Explanation) -> shap.Explanation:
    """The explanation as a ``shap.Explanation``, so every ``shap.plots.*`` function draws it.

    A table keeps its shape: ``values`` and ``data`` (n, n_features), ``base_values``
    (n,), ``feature_names`` the names, and ``output_names`` the explained output's name
    when every row explains the same one (else None: rows explain different outputs, see
    ``target``). Image rows (flat ones by ``meta["image_shape"]``) become channels-last
    images with an output axis, as shap's image explainers give them and
    ``shap.plots.image`` draws them: ``values`` (n, H, W, C, 1), ``data`` (n, H, W, C),
    and ``output_names`` per row the explained output's name (its index without names).
    ``e[0].to_shap()`` is ``e.to_shap()[0]``, as is every indexed explanation's.
    """
    import shap

    if not e.is_batch:
        whole = to_shap(e.as_batch())
        rows = slice(None) if "rows" in e.axes else 0
        return whole[rows] if "features" in e.axes else whole[rows, 0]
    if "tokens" in e.meta:  # text: per row its tokens' values and the tokens (shap.plots.text)
        from xai_core.text.render import token_rows

        rows = token_rows(e)
        ragged_values = np.empty(len(rows), dtype=object)
        ragged_data = np.empty(len(rows), dtype=object)
        for i, (tokens, vals) in enumerate(rows):
            ragged_values[i] = np.asarray(vals, np.float64)
            ragged_data[i] = np.asarray(tokens, dtype=object)
        return shap.Explanation(
            values=ragged_values,
            base_values=np.asarray(e.base_values),
            data=ragged_data,
            compute_time=e.meta.get("seconds"),
        )
    values = np.asarray(e.values)
    data = None if e.data is None else np.asarray(e.data, dtype=np.float64)
    targets = e.target_names
    layout = explanation_layout(e)
    if layout is not None:  # shap's image layout: (n, H, W, C) rows, one output axis
        names = targets or tuple(str(int(t)) for t in e.target)
        return shap.Explanation(
            values=layout.to_hwc(values)[..., None],
            base_values=np.asarray(e.base_values)[:, None],
            data=None if data is None else layout.to_hwc(data),
            output_names=list(names),
            compute_time=e.meta.get("seconds"),
        )
    # shap reads a list of output names as an output axis, which these values do not have
    output_names = targets[0] if targets is not None and len(set(targets)) == 1 else None
    return shap.Explanation(
        values=values,
        base_values=np.asarray(e.base_values),
        data=data,
        feature_names=list(feature_names_of(e)) if values.ndim == 2 else None,
        output_names=output_names,
        compute_time=e.meta.get("seconds"),
    )


def to_frame(e: Explanation) -> pd.DataFrame:
    """Attributions as a DataFrame: one row per explained row, one column per feature.

    The index is the row number (``row``); ``base_value`` and ``target`` are in
    ``frame.attrs``, as are the method and backend.
    """
    import pandas as pd

    n = len(e)
    frame = pd.DataFrame(
        e.values.reshape(n, -1),
        columns=list(feature_names_of(e)),
        index=pd.RangeIndex(n, name="row"),
    )
    frame.attrs.update(
        method=e.method,
        backend=e.backend,
        base_values=e.base_values.tolist(),
        target=e.target.tolist(),
    )
    return frame


def summary_text(e: Explanation, rows: int = 5, k: int = 3) -> str:
    """A text view with numbers: the shape, then each of the first ``rows`` rows' top ``k`` features.

    One row or one feature (``e[0]``, ``e[:, "age"]``) is shown as its batch, its axes said.
    """
    from xai_core.attribution.outcomes import KEYS, row_heading, target_label
    from xai_core.report import format_number

    axes = "" if e.is_batch else f", axes={e.axes}"
    e = e.as_batch()
    n = len(e)
    shape = " × ".join(map(str, e.values.shape[1:]))
    head = (
        f"Explanation(method={e.method!r}, backend={e.backend!r}, {n} row(s) × {shape} features,"
        f" meta keys={sorted(e.meta)}{axes})"
    )
    lines = [head]
    names = feature_names_of(e)
    flat = e.values.reshape(n, -1)
    order = np.argsort(-np.abs(np.nan_to_num(flat)), axis=1, kind="stable")[:, :k]
    labelled = any(k in e.meta for k in KEYS)
    for i in range(min(n, rows)):
        target = target_label(e.output_names, int(e.target[i]))
        top = ", ".join(f"{names[j]} {format_number(flat[i, j], 3)}" for j in order[i])
        total = format_number(e.base_values[i] + np.nansum(flat[i]), 4)
        said = f"{row_heading(e, i)}; target {target}" if labelled else f"row {i}: target {target}"
        lines.append(
            f"  {said}, base {format_number(e.base_values[i], 4)}, base + sum {total}; top: {top}"
        )
    if n > rows:
        lines.append(f"  … {n - rows} more row(s)")
    return "\n".join(lines)
