"""One seed rule: ``seed=None`` draws a seed (recorded), and every row draws from its own stream.

A stochastic explainer never draws from one stream shared by all its rows: row ``r`` of
the caller's data (its global index, whatever chunk it travels in) gets the generator
``numpy.random.default_rng([seed, r, *salt])``. So the same seed gives the same values for
a row whether the rows are explained in one call, in chunks of any size, on threads,
processes or a Dask cluster. Draws that serve every row alike (one neighbourhood shared
by all rows, say) come from ``[seed, SHARED_STREAM, *salt]``, a key no row has: every
chunk draws the same. ``salt`` (non-zero integers) separates independent streams of
one row (the noise and the baselines of SmoothGrad over integrated gradients, say).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from xai_core.validation import check_int

__all__ = ["SHARED_STREAM", "draw_seed", "resolve_seed", "rngs_for_rows", "row_seeds", "shared_rng"]

#: The key in place of a row index for draws shared by every row (no row index is this large).
SHARED_STREAM = 2**64 - 1


def draw_seed() -> int:
    """A fresh seed from the operating system's entropy, as an int in ``[0, 2**32)``."""
    return int(np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0])


def resolve_seed(seed: Any) -> int:
    """``seed`` checked (a non-negative int), or a drawn one for ``None``."""
    checked = check_int(seed, "seed", 0, allow_none=True)
    return draw_seed() if checked is None else int(checked)


def _entropy(seed: int, row: int, salt: Sequence[int]) -> list[int]:
    for s in salt:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1:
            # trailing zeros would give the stream of the shorter key
            raise ValueError(f"salt must hold integers >= 1; got {list(salt)!r}.")
    return [int(seed), int(row), *(int(s) for s in salt)]


def rngs_for_rows(
    seed: int, rows: Sequence[int] | np.ndarray, *salt: int
) -> list[np.random.Generator]:
    """One generator per row, from ``[seed, row, *salt]``.

    Parameters
    ----------
    seed : int
        The run's seed (see :func:`resolve_seed`).
    rows : sequence of int of shape (n_rows,)
        Global row indices (:meth:`xai_core.Explainer.rows`).
    *salt : int
        Non-zero integers naming an independent stream of each row.

    Returns
    -------
    list of numpy.random.Generator of length n_rows
    """
    return [np.random.default_rng(_entropy(seed, r, salt)) for r in np.asarray(rows).tolist()]


def row_seeds(seed: int, rows: Sequence[int] | np.ndarray, *salt: int) -> np.ndarray:
    """One 32-bit integer seed per row, for libraries that take an int (``[seed, row, *salt]``).

    Returns
    -------
    ndarray of uint32 of shape (n_rows,)
    """
    return np.array(
        [
            np.random.SeedSequence(_entropy(seed, r, salt)).generate_state(1, dtype=np.uint32)[0]
            for r in np.asarray(rows).tolist()
        ],
        dtype=np.uint32,
    )


def shared_rng(seed: int, *salt: int) -> np.random.Generator:
    """The generator of draws shared by every row, from ``[seed, SHARED_STREAM, *salt]``.

    Each chunk of rows that calls it with the run's seed gets the same stream, so what it
    draws does not depend on how the rows are split.
    """
    return np.random.default_rng(_entropy(seed, SHARED_STREAM, salt))
