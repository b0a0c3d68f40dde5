"""Cheap checks of option values, run before any model call. Messages name the option."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from xai_core import UnknownNameError, ValidationError

__all__ = ["check_bool", "check_choice", "check_int", "check_float", "check_seed", "make_rng"]


def check_int(value: Any, name: str, minimum: int = 1, *, allow_none: bool = False) -> int | None:
    """Return ``value`` as an int ``>= minimum`` (or ``None`` when allowed); otherwise raise."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        extra = " or None" if allow_none else ""
        raise ValidationError(f"{name} must be an integer >= {minimum}{extra}; got {value!r}.")
    return int(value)


def check_float(
    value: Any, name: str, *, low: float = 0.0, inclusive: bool = False, high: float | None = None
) -> float:
    """Return ``value`` as a finite float above ``low`` (and at most ``high``); otherwise raise."""
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if ok:
        value = float(value)
        ok = np.isfinite(value) and (value >= low if inclusive else value > low)
        ok = ok and (high is None or value <= high)
    if not ok:
        bound = f"{'>=' if inclusive else '>'} {low:g}" + (
            f" and <= {high:g}" if high is not None else ""
        )
        raise ValidationError(f"{name} must be a finite number {bound}; got {value!r}.")
    return value


def check_bool(value: Any, name: str, *, allow_none: bool = False) -> bool | None:
    """Return ``value`` if it is a bool (or ``None`` when allowed); otherwise raise."""
    if value is None and allow_none:
        return None
    if not isinstance(value, (bool, np.bool_)):
        extra = ", False or None" if allow_none else " or False"
        raise ValidationError(f"{name} must be True{extra}; got {value!r}.")
    return bool(value)


def check_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``; otherwise raise listing them."""
    choices = list(choices)
    if not isinstance(value, str) or value not in choices:
        raise UnknownNameError(name, value, choices)
    return value


def check_seed(seed: Any) -> int | None:
    """Return ``seed`` if it is a non-negative integer or ``None``; otherwise raise."""
    return check_int(seed, "seed", minimum=0, allow_none=True)


def make_rng(seed: int | None) -> tuple[np.random.Generator, int]:
    """A generator and the seed it was made from; ``None`` draws a fresh seed, which is returned."""
    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0])
    return np.random.default_rng(seed), seed
