"""Work and memory estimates of a request, checked against limits before any model call.

A request (an explanation, a counterfactual search, a grid of thresholds) states what it
will cost as a :class:`Cost`: the rows it will ask the model to evaluate and the bytes of
working memory it will hold at its peak. :func:`check_cost` compares the estimate with the
session's :class:`Limits` and raises :class:`~xai_core.errors.ResourceError`, with the
estimate in the message, when it cannot fit::

    cost = Cost(10 * 2**40, 2**40 * 48, "10 rows x 2**40 coalitions", "lower max_evals")
    check_cost(cost, "method 'shap'")

Explainers declare theirs with :meth:`xai_core.Explainer.estimate_cost`, which
:func:`xai_core.explain` calls before the first model call; the what-if tools and the
Playground check theirs the same way.

The limits (:func:`set_resource_limits`, or :func:`resource_limits` for a block of code):

- ``max_bytes``: by default ``"auto"``, :data:`DEFAULT_MEMORY_FRACTION` of the memory the
  system reports available when the check runs (``MemAvailable`` on Linux; physical memory
  elsewhere, :data:`FALLBACK_MEMORY` when neither is known);
- ``max_model_rows``: by default :data:`DEFAULT_MAX_MODEL_ROWS` rows evaluated by the model
  (predictions or gradients), past which a request is taken as a mistake (days of work
  for a small network);

``None`` lifts a limit.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from xai_core.errors import ContractError, ResourceError, ValidationError

__all__ = [
    "DEFAULT_MAX_MODEL_ROWS",
    "DEFAULT_MEMORY_FRACTION",
    "FALLBACK_MEMORY",
    "Cost",
    "Limits",
    "available_memory",
    "check_cost",
    "explainer_cost",
    "format_bytes",
    "get_resource_limits",
    "resource_limits",
    "set_resource_limits",
]

#: The default memory limit: this fraction of the memory available when the check runs.
DEFAULT_MEMORY_FRACTION = 0.5
#: The memory assumed available when the system does not say (8 GiB).
FALLBACK_MEMORY = 8 * 2**30
#: The default bound on the rows one request may ask the model to evaluate.
DEFAULT_MAX_MODEL_ROWS = 10**9


@dataclass(frozen=True)
class Cost:
    """What a request will cost, estimated before it starts.

    Attributes
    ----------
    model_rows : int
        Rows the model will evaluate (predictions and gradients), all calls together.
    peak_bytes : int
        Working memory held at once at the peak (beyond the inputs and the model).
    detail : str
        How the estimate was counted, for messages (``"10 rows x 5000 samples"``).
    advice : str
        What to lower to make it fit (``"lower n_samples"``), for messages.
    """

    model_rows: int
    peak_bytes: int
    detail: str = ""
    advice: str = ""


@dataclass(frozen=True)
class Limits:
    """The limits :func:`check_cost` applies.

    Attributes
    ----------
    max_bytes : int, "auto" or None
        Peak working memory allowed; ``"auto"``: :data:`DEFAULT_MEMORY_FRACTION` of the
        available memory at the time of the check; ``None``: no limit.
    max_model_rows : int or None
        Model rows allowed per request; ``None``: no limit.
    """

    max_bytes: int | str | None = "auto"
    max_model_rows: int | None = DEFAULT_MAX_MODEL_ROWS


_limits = Limits()
_UNSET: Any = object()


def _check_limit(value: Any, name: str, *, auto: bool) -> Any:
    if value is None or (auto and isinstance(value, str) and value == "auto"):
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        words = "a positive int, 'auto' or None" if auto else "a positive int or None"
        raise ValidationError(f"{name} must be {words}; got {value!r}.")
    return int(value)


def get_resource_limits() -> Limits:
    """The limits in force."""
    return _limits


def set_resource_limits(
    *, max_bytes: int | str | None = _UNSET, max_model_rows: int | None = _UNSET
) -> Limits:
    """Change the limits for the rest of the session (the ones not given stay).

    Parameters
    ----------
    max_bytes : int, "auto" or None, optional
        Peak working memory allowed per request, in bytes.
    max_model_rows : int or None, optional
        Rows the model may be asked to evaluate per request.

    Returns
    -------
    Limits
        The limits before the change (pass their fields back to restore them).
    """
    global _limits
    previous = _limits
    changes: dict[str, Any] = {}
    if max_bytes is not _UNSET:
        changes["max_bytes"] = _check_limit(max_bytes, "max_bytes", auto=True)
    if max_model_rows is not _UNSET:
        changes["max_model_rows"] = _check_limit(max_model_rows, "max_model_rows", auto=False)
    _limits = Limits(**{**previous.__dict__, **changes})
    return previous


@contextlib.contextmanager
def resource_limits(
    *, max_bytes: int | str | None = _UNSET, max_model_rows: int | None = _UNSET
) -> Iterator[Limits]:
    """:func:`set_resource_limits` for a ``with`` block; the previous limits come back after it.

    Examples
    --------
    >>> with xai.resource_limits(max_model_rows=10**11):
    ...     e = xai.explain(f, X, method="shap", algorithm="permutation", max_evals=10**6)
    """
    previous = set_resource_limits(max_bytes=max_bytes, max_model_rows=max_model_rows)
    try:
        yield _limits
    finally:
        set_resource_limits(max_bytes=previous.max_bytes, max_model_rows=previous.max_model_rows)


def available_memory() -> tuple[int, str]:
    """Bytes of memory available now, and where the figure comes from."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, "available"
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")), "installed"
    except (AttributeError, ValueError, OSError):
        return FALLBACK_MEMORY, "assumed"


def _surely_fits(peak_bytes: int) -> bool:
    """Whether ``peak_bytes`` is within the default memory limit by a figure cheaper than
    :func:`available_memory` (one ``sysinfo`` call, no reading of ``/proc/meminfo``).

    Linux's ``MemAvailable`` is the free memory less the kernel's reserve (watermarks and
    lowmem reserves), plus what can be reclaimed; so it is at least ``free - reserve``,
    and half the free memory is within :data:`DEFAULT_MEMORY_FRACTION` of it whenever the
    reserve is under half the free memory. A request this test passes therefore fits
    unless the machine is already down to its reserve; every other request is judged
    on ``MemAvailable`` itself, as before.
    """
    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return False
    return peak_bytes <= DEFAULT_MEMORY_FRACTION * free / 2


def format_bytes(n: float) -> str:
    """``n`` bytes in binary units, three significant digits (``"1.5 GiB"``)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1000 or unit == "PiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def _count(n: int) -> str:
    return f"{n:,}" if n < 10**7 else f"{n:.3g}"


def explainer_cost(explainer: Any, runner: Any, X: Any) -> Cost | None:
    """``explainer.estimate_cost(runner, X)``, checked to be a :class:`Cost` or ``None``.

    Raises
    ------
    ContractError
        When the explainer returns anything else.
    """
    cost = explainer.estimate_cost(runner, X)
    if cost is not None and not isinstance(cost, Cost):
        raise ContractError(
            f"{type(explainer).__name__}.estimate_cost must return an xai.Cost or None; got "
            f"{type(cost).__name__}."
        )
    return cost


def check_cost(cost: Cost, what: str, *, advice: str = "") -> None:
    """Raise :class:`~xai_core.errors.ResourceError` if ``cost`` is over the limits.

    Parameters
    ----------
    cost : Cost
    what : str
        The request, for the message (``"method 'shap' (algorithm='exact')"``).
    advice : str, optional
        What to change to make it fit (``"lower max_evals"``); default ``cost.advice``.
    """
    limits = _limits

    def refuse(over: str, keyword: str) -> ResourceError:
        advice_ = advice or cost.advice
        counted = f" ({cost.detail})" if cost.detail else ""
        rows = (
            f"evaluate about {_count(cost.model_rows)} model rows and " if cost.model_rows else ""
        )
        estimate = (
            f"{what} would {rows}hold about {format_bytes(cost.peak_bytes)} of working memory "
            f"at its peak{counted}"
        )
        raise_it = f"raise the limit with xai.set_resource_limits({keyword}=...)"
        remedy = f"{advice_[:1].upper()}{advice_[1:]}, or {raise_it}" if advice_ else raise_it
        return ResourceError(f"{estimate}: {over}; refused before any work. {remedy}.", cost)

    auto = limits.max_bytes == "auto"
    if limits.max_bytes is not None and not (auto and _surely_fits(cost.peak_bytes)):
        if auto:
            free, source = available_memory()
            allowed = int(free * DEFAULT_MEMORY_FRACTION)
            of = f"{DEFAULT_MEMORY_FRACTION:g} of the {format_bytes(free)} {source}"
        else:
            allowed = int(limits.max_bytes)
            of = "set by xai.set_resource_limits"
        if cost.peak_bytes > allowed:
            raise refuse(f"over the memory limit of {format_bytes(allowed)} ({of})", "max_bytes")
    if limits.max_model_rows is not None and cost.model_rows > limits.max_model_rows:
        over = f"over the limit of {_count(limits.max_model_rows)} model rows"
        raise refuse(over, "max_model_rows")
