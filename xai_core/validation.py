"""Checks at the public boundary. Messages name the argument, what was expected and what arrived."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from xai_core.errors import ShapeError, UnknownNameError, ValidationError

__all__ = [
    "check_array",
    "check_bool",
    "check_choice",
    "check_float",
    "check_int",
    "check_number",
    "check_positive_int",
    "check_seed",
    "check_target",
    "check_unique_columns",
    "shape_words",
]


def shape_words(feature_shape: Sequence[int] | None) -> str:
    """``(n_samples, 784)`` style text for a per-sample shape (``None``: any)."""
    if feature_shape is None:
        return "(n_samples, n_features)"
    return "(n_samples" + "".join(f", {d}" for d in feature_shape) + ")"


def check_array(
    X: Any,
    name: str = "X",
    *,
    feature_shape: Sequence[int] | None = None,
    dtype: Any = np.float32,
    allow_nan: bool = False,
    min_samples: int = 1,
    accept_flat: bool = False,
    flatten: bool = False,
    rows: str = "n_samples",
) -> np.ndarray:
    """Return ``X`` as a numeric array of shape (n_samples, *feature_shape), or raise.

    Parameters
    ----------
    X : array-like of shape (n_samples, *feature_shape)
        A numpy array, nested list or pandas DataFrame with numeric columns. With
        ``accept_flat``, also flat rows of shape (n_samples, prod(feature_shape)) (images
        given as rows of pixels, say).
    name : str, default="X"
        The argument's name, used in messages.
    feature_shape : tuple of int, optional
        The shape of one sample. ``None`` accepts any shape of at least one dimension.
    dtype : numpy dtype, default=float32
        The dtype of the returned array.
    allow_nan : bool, default=False
        Whether NaN and infinity are accepted.
    min_samples : int, default=1
        The fewest rows accepted.
    accept_flat : bool, default=False
        Accept flat rows of ``prod(feature_shape)`` values and reshape them to
        ``feature_shape``.
    flatten : bool, default=False
        Return flat rows, of shape (n_samples, prod(sample shape)); with
        ``feature_shape``, rows of that shape and flat rows are both accepted.
    rows : str, default="n_samples"
        The word for the first dimension in messages (``"n_rows"`` for reference data).

    Returns
    -------
    ndarray of shape (n_samples, *feature_shape), or (n_samples, n_features) with ``flatten``
    """

    def expected() -> str:  # for the messages only
        return shape_words(feature_shape).replace("n_samples", rows, 1)

    if X is None:
        raise ValidationError(f"{name} must be an array of shape {expected()}; got None.")
    if hasattr(X, "dtypes") and hasattr(X, "columns"):  # a pandas DataFrame
        bad = [str(c) for c, dt in zip(X.columns, X.dtypes) if dt.kind not in "biuf"]
        if bad:
            raise ValidationError(
                f"{name} must have numeric columns only; columns {bad} are not numeric "
                "(encode categories as numbers first)."
            )
        check_unique_columns(X.columns, name)
        X = X.to_numpy()
    try:
        arr = np.asarray(X)
    except (ValueError, TypeError) as exc:
        raise ValidationError(f"{name} must be an array of shape {expected()}; {exc}.") from exc
    if arr.dtype.kind not in "biuf":
        raise ValidationError(
            f"{name} must be numeric; got an array of dtype {arr.dtype} (shape {arr.shape})."
        )
    if arr.ndim < 2:
        raise ShapeError(
            f"{name} must have shape {expected()}; got an array of shape {arr.shape}. "
            "Pass a single sample as X[None] or X.reshape(1, -1)."
        )
    if feature_shape is not None and tuple(arr.shape[1:]) != tuple(feature_shape):
        width = int(np.prod(feature_shape, dtype=np.int64))
        if (accept_flat or flatten) and arr.ndim == 2 and arr.shape[1] == width:
            arr = arr.reshape((len(arr), *feature_shape))
        else:
            flat = f" or flat rows ({rows}, {width})" if accept_flat or flatten else ""
            raise ShapeError(
                f"{name} must have shape {expected()}{flat}; got an array of shape {arr.shape}."
            )
    if arr.shape[0] < min_samples:
        raise ValidationError(
            f"{name} must contain at least {min_samples} sample(s); got an array of shape {arr.shape}."
        )
    given = arr
    if arr.dtype != dtype:
        with np.errstate(over="ignore"):  # a value beyond the dtype's range is reported below
            arr = np.asarray(arr, dtype=dtype)
    narrowed = given.dtype.kind == "f" and arr.dtype.kind == "f" and arr.dtype != given.dtype
    if narrowed and np.isinf(arr).any():
        overflow = np.isinf(arr) & np.isfinite(given)
        if overflow.any():  # finite as given, infinite in the requested dtype
            first = tuple(int(i) for i in np.argwhere(overflow)[0])
            raise ValidationError(
                f"{name} holds {int(overflow.sum())} value(s) beyond the {arr.dtype} range "
                f"(+-{float(np.finfo(arr.dtype).max):.4g}); the first is "
                f"{given[first].item()!r} at index {first}. Rescale the data."
            )
    if not allow_nan:
        finite = np.isfinite(arr)
        if not finite.all():
            bad = np.argwhere(~finite)
            first = tuple(int(i) for i in bad[0])
            raise ValidationError(
                f"{name} contains {len(bad)} NaN or infinite value(s); the first is at index {first}."
            )
    if flatten:
        arr = arr.reshape(len(arr), -1)
    return arr


def check_unique_columns(columns: Iterable[Any], name: str = "X") -> None:
    """Raise unless a DataFrame's column labels are unique (as text: features are named by them)."""
    counts = Counter(str(c) for c in columns)
    repeated = sorted(c for c, k in counts.items() if k > 1)
    if repeated:
        raise ValidationError(
            f"{name} has repeated column names {repeated[:10]}; each feature needs its own "
            "name (rename or drop the duplicates)."
        )


def check_target(target: Any, n_samples: int, n_outputs: int, name: str = "target") -> np.ndarray:
    """Return ``target`` as int64 of shape (n_samples,): one output index per row.

    Parameters
    ----------
    target : int or array-like of shape (n_samples,)
        One output index for all rows, or one per row.
    n_samples : int
        Rows in ``X``.
    n_outputs : int
        Outputs of the model; every index must be in ``[0, n_outputs)``.
    """
    arr = np.asarray(target)
    if arr.dtype.kind not in "iu" and not (arr.dtype.kind == "f" and np.all(arr == np.round(arr))):
        raise ValidationError(f"{name} must be an integer or integers; got {target!r}.")
    arr = arr.astype(np.int64)
    if arr.ndim == 0:
        arr = np.full(n_samples, int(arr), dtype=np.int64)
    if arr.shape != (n_samples,):
        raise ShapeError(
            f"{name} must be an integer or have shape ({n_samples},); got shape {arr.shape}."
        )
    bad = (arr < 0) | (arr >= n_outputs)
    if bad.any():
        raise ValidationError(
            f"{name} must be in [0, {n_outputs}) for a model with {n_outputs} output(s); "
            f"got {int(arr[bad][0])}."
        )
    return arr


def check_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of the strings ``choices``; otherwise raise listing them."""
    choices = list(choices)
    if not isinstance(value, str) or value not in choices:
        raise UnknownNameError(name, value, choices)
    return value


def check_int(
    value: Any,
    name: str,
    minimum: int = 1,
    *,
    allow_none: bool = False,
    maximum: int | None = None,
) -> int | None:
    """Return ``value`` as an int ``>= minimum`` (and ``<= maximum``), or ``None`` when allowed; otherwise raise."""
    if value is None and allow_none:
        return None
    ok = not isinstance(value, bool) and isinstance(value, (int, np.integer)) and value >= minimum
    if not ok or (maximum is not None and value > maximum):
        bound = f">= {minimum}" + (f" and <= {maximum}" if maximum is not None else "")
        extra = " or None" if allow_none else ""
        raise ValidationError(f"{name} must be an integer {bound}{extra}; got {value!r}.")
    return int(value)


def check_positive_int(value: Any, name: str) -> int:
    """Return ``value`` as an int if it is a positive integer; otherwise raise."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValidationError(f"{name} must be a positive integer; got {value!r}.")
    return int(value)


def check_float(
    value: Any,
    name: str,
    *,
    low: float = 0.0,
    inclusive: bool = False,
    high: float | None = None,
    allow_none: bool = False,
) -> float | None:
    """Return ``value`` as a finite float above ``low`` (and at most ``high``); otherwise raise.

    Parameters
    ----------
    low : float, default=0.0
        Lower bound; excluded unless ``inclusive``.
    high : float, optional
        Upper bound, included.
    allow_none : bool, default=False
        Whether ``None`` is accepted (and returned).
    """
    if value is None and allow_none:
        return None
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if ok:
        number = float(value)
        ok = bool(np.isfinite(number)) and (number >= low if inclusive else number > low)
        ok = ok and (high is None or number <= high)
    if not ok:
        bound = f"{'>=' if inclusive else '>'} {low:g}" + (
            f" and <= {high:g}" if high is not None else ""
        )
        extra = " or None" if allow_none else ""
        raise ValidationError(f"{name} must be a finite number {bound}{extra}; got {value!r}.")
    return number


def check_number(
    value: Any,
    name: str,
    *,
    low: float = -np.inf,
    high: float = np.inf,
    open_low: bool = False,
    open_high: bool = False,
) -> float:
    """Return ``value`` as a finite float in the interval from ``low`` to ``high``; otherwise raise.

    Parameters
    ----------
    value : int or float
        Booleans are refused.
    name : str
        The argument's name, used in messages.
    low, high : float, default=-inf, inf
        The bounds; an infinite bound only asks for a finite value.
    open_low, open_high : bool, default=False
        Exclude the bound: ``low=0, high=10, open_low=True`` is the interval (0, 10].

    Raises
    ------
    ValidationError
        "learning_rate must be a number; got 'x'.", "alpha must be finite; got inf.",
        "learning_rate must be in (0, 10]; got 0.".
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValidationError(f"{name} must be a number; got {value!r}.")
    number = float(value)
    above = number > low if open_low else number >= low
    below = number < high if open_high else number <= high
    if np.isfinite(number) and above and below:
        return number
    if np.isinf(low) and np.isinf(high):
        raise ValidationError(f"{name} must be finite; got {value!r}.")
    opening = "(" if open_low or np.isinf(low) else "["
    closing = ")" if open_high or np.isinf(high) else "]"
    raise ValidationError(f"{name} must be in {opening}{low:g}, {high:g}{closing}; got {value!r}.")


def check_bool(value: Any, name: str, *, allow_none: bool = False) -> bool | None:
    """Return ``value`` if it is a bool (or ``None`` when allowed); otherwise raise."""
    if value is None and allow_none:
        return None
    if not isinstance(value, (bool, np.bool_)):
        extra = ", False or None" if allow_none else " or False"
        raise ValidationError(f"{name} must be True{extra}; got {value!r}.")
    return bool(value)


def check_seed(value: Any, *, allow_none: bool = False) -> int | None:
    """Return ``seed`` as a non-negative int (or ``None`` when allowed); otherwise raise."""
    return check_int(value, "seed", minimum=0, allow_none=allow_none)
