"""Cheap checks of option values, run before any model call. Messages name the option."""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core.validation import check_bool, check_choice, check_float, check_int
from xai_core.validation import check_seed as _check_seed

__all__ = ["check_bool", "check_choice", "check_int", "check_float", "check_seed", "make_rng"]


def check_seed(seed: Any) -> int | None:
    """Return ``seed`` if it is a non-negative integer or ``None``; otherwise raise."""
    return _check_seed(seed, allow_none=True)


def make_rng(seed: int | None) -> tuple[np.random.Generator, int]:
    """A generator and the seed it was made from; ``None`` draws a fresh seed, which is returned."""
    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0])
    return np.random.default_rng(seed), seed
