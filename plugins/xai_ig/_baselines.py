"""Baselines of integrated gradients: where each path starts.

Every kind resolves to one array of shape (1 or n_samples, n_baselines, *input_shape):
one set shared by all rows, or one set per row. Several baselines per row are averaged,
which is expected gradients (Erion et al., 2021) at the quadrature's nodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core import ShapeError, ValidationError
from xai_core.images import sample_layout
from xai_ig._checks import check_choice, check_float, check_int

__all__ = ["BASELINES", "make_baselines"]

#: Named baselines; a number or an array is accepted too.
BASELINES: tuple[str, ...] = ("zeros", "mean", "blur", "uniform", "data")

#: The extra options each named baseline reads.
_USES: dict[str, tuple[str, ...]] = {
    "zeros": (),
    "constant": (),
    "array": (),
    "mean": ("baseline_data",),
    "data": ("baseline_data", "n_baselines"),
    "uniform": ("n_baselines",),
    "blur": ("blur_sigma", "image_shape"),
}


def _shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _finite_array(value: Any, name: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise ValidationError(
            f"{name} must be numeric; got an array of dtype {arr.dtype} (shape {arr.shape})."
        )
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        first = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise ValidationError(
            f"{name} contains NaN or infinite values; the first is at index {first}."
        )
    return arr


def _kind(spec: Any) -> str:
    if spec is None:
        return "zeros"
    if isinstance(spec, str):
        return check_choice(spec, "baseline", BASELINES)
    if isinstance(spec, (bool, np.bool_)):
        raise ValidationError(f"baseline must be a name, a number or an array; got {spec!r}.")
    if np.ndim(spec) == 0:
        return "constant"
    return "array"


def make_baselines(
    spec: Any,
    X: np.ndarray,
    *,
    baseline_data: Any = None,
    n_baselines: int | None = None,
    blur_sigma: float | None = None,
    image_shape: tuple[int, ...] | None = None,
    rng: np.random.Generator,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Resolve a baseline specification against the rows ``X``.

    Parameters
    ----------
    spec : str, number, array-like or None
        ``"zeros"`` (or ``None``); a number (every feature at that value); ``"mean"``
        (the mean row of ``baseline_data``); ``"blur"`` (each image blurred with a
        Gaussian of ``blur_sigma`` pixels); ``"uniform"`` (``n_baselines`` draws per row,
        uniform in the range of ``X``'s values); ``"data"`` (rows of ``baseline_data``:
        all of them, or ``n_baselines`` drawn per row); or an array of shape
        ``input_shape`` or (1, *input_shape) (one for all rows), (n_samples, *input_shape)
        (one per row), or (1 or n_samples, k, *input_shape) (k per row, averaged).
    X : ndarray of shape (n_samples, *input_shape)
    baseline_data : array-like of shape (m, *input_shape), optional
    n_baselines : int, optional
    blur_sigma : float, optional
        Default: a sixth of the smaller image side.
    image_shape : tuple of int, optional
        ``(H, W)``, ``(H, W, C)`` or ``(C, H, W)`` of flattened images, for ``"blur"``
        (see :mod:`xai_core.images`).
    rng : numpy.random.Generator
        For ``"uniform"`` and ``"data"`` with ``n_baselines``.

    Returns
    -------
    baselines : ndarray of float64 of shape (1 or n_samples, k, *input_shape)
    description : dict
        ``kind``, ``n_baselines`` and the kind's settings, for ``meta``.
    """
    kind = _kind(spec)
    given = {
        "baseline_data": baseline_data,
        "n_baselines": n_baselines,
        "blur_sigma": blur_sigma,
        "image_shape": image_shape,
    }
    for option, value in given.items():
        if value is not None and option not in _USES[kind]:
            users = sorted(repr(k) for k, uses in _USES.items() if option in uses)
            raise ValidationError(
                f"{option} is used only with baseline={' or '.join(users)}; got baseline={kind!r}."
            )
    n, shape = len(X), tuple(X.shape[1:])
    if kind == "zeros":
        return np.zeros((1, 1, *shape)), {"kind": "zeros", "n_baselines": 1}
    if kind == "constant":
        value = check_float(spec, "baseline", low=-np.inf)
        return np.full((1, 1, *shape), value), {
            "kind": "constant",
            "value": value,
            "n_baselines": 1,
        }
    if kind == "array":
        return _from_array(spec, n, shape), {"kind": "array", "n_baselines": None}
    if kind in ("mean", "data"):
        if baseline_data is None:
            raise ValidationError(
                f"baseline={kind!r} needs baseline_data=, an array of shape (m, {', '.join(map(str, shape))}) "
                "such as the training set."
            )
        data = _finite_array(baseline_data, "baseline_data")
        if data.ndim != len(shape) + 1 or tuple(data.shape[1:]) != shape or len(data) == 0:
            raise ShapeError(
                f"baseline_data must have shape (m, {', '.join(map(str, shape))}) with m >= 1; "
                f"got an array of shape {data.shape}."
            )
        if kind == "mean":
            return data.mean(axis=0)[None, None], {
                "kind": "mean",
                "n_baselines": 1,
                "rows": len(data),
            }
        k = check_int(n_baselines, "n_baselines", allow_none=True)
        if k is None:
            return data[None], {"kind": "data", "n_baselines": len(data), "rows": len(data)}
        if k > len(data):
            raise ValidationError(
                f"n_baselines must be at most the {len(data)} rows of baseline_data; got {k}."
            )
        picks = rng.permuted(np.tile(np.arange(len(data)), (n, 1)), axis=1)[:, :k]
        return data[picks], {"kind": "data", "n_baselines": k, "rows": len(data)}
    if kind == "uniform":
        k = check_int(n_baselines, "n_baselines", allow_none=True) or 1
        low, high = float(X.min()), float(X.max())
        draws = rng.uniform(low, high, size=(n, k, *shape))
        return draws, {"kind": "uniform", "n_baselines": k, "low": low, "high": high}
    return _blur(X, blur_sigma, image_shape)


def _from_array(spec: Any, n: int, shape: tuple[int, ...]) -> np.ndarray:
    arr = _finite_array(spec, "baseline")
    d = len(shape)
    accepted = (
        f"{_shape_text(shape)} or (1, {', '.join(map(str, shape))}) for one baseline, "
        f"({n}, {', '.join(map(str, shape))}) for one per row, or (1 or {n}, k, "
        f"{', '.join(map(str, shape))}) for k per row"
    )
    if arr.ndim == d and arr.shape == shape:
        return arr[None, None]
    if arr.ndim == d + 1 and arr.shape[1:] == shape and arr.shape[0] in (1, n):
        return arr[:, None]
    if (
        arr.ndim == d + 2
        and arr.shape[2:] == shape
        and arr.shape[0] in (1, n)
        and arr.shape[1] >= 1
    ):
        return arr
    raise ShapeError(f"baseline must have shape {accepted}; got an array of shape {arr.shape}.")


def _blur(
    X: np.ndarray, sigma: float | None, image_shape: Any
) -> tuple[np.ndarray, dict[str, Any]]:
    from scipy.ndimage import gaussian_filter

    shape = tuple(X.shape[1:])
    layout = sample_layout(shape, image_shape)
    if layout is None:
        raise ValidationError(
            "baseline='blur' needs images: X of shape (n_samples, H, W), (n_samples, H, W, C) or "
            "(n_samples, C, H, W), or image_shape= for flattened images; got X of shape "
            f"{X.shape}."
        )
    sigma = (
        min(layout.height, layout.width) / 6.0
        if sigma is None
        else check_float(sigma, "blur_sigma")
    )
    images = layout.to_chw(np.asarray(X, dtype=np.float64))  # (n, C, H, W): blur H and W only
    blurred = gaussian_filter(images, sigma=(0.0, 0.0, sigma, sigma), mode="nearest")
    desc = {"kind": "blur", "n_baselines": 1, "blur_sigma": sigma, "image_shape": layout.shape}
    return layout.from_chw(blurred, shape)[:, None], desc
