"""The What-If Tool's distance between examples, and the nearest example with another prediction.

Per feature: a numeric feature contributes ``|a - b| / std`` (its standard deviation over
the data; a constant feature is not scaled), a categorical one ``0`` if the values are equal
and otherwise the probability that two examples drawn from the data share a value of that
feature, ``sum_v p_v**2``. ``"l1"`` adds the contributions, ``"l2"`` takes the square root
of the sum of their squares.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from xai_core import ShapeError, UnknownNameError, ValidationError

__all__ = ["DISTANCES", "Distance"]

DISTANCES = ("l1", "l2")
_CHUNK = 2048


def _kind(value: Any) -> str:
    """``value``'s type in words, with the dtype and shape of an array."""
    if isinstance(value, np.ndarray):
        return f"an array of dtype {value.dtype} and shape {value.shape}"
    return f"a {type(value).__name__} {str(value)[:40]!r}"


class Distance:
    """Distances from one example to many, in the What-If Tool's scaled metric or a custom one.

    Parameters
    ----------
    table : Table
        Supplies the per-feature standard deviations and categorical match probabilities.
    distance : {"l1", "l2"} or callable
        A callable is called as ``distance(x, X)`` with ``x`` of shape (n_features,) and
        ``X`` of shape (m, n_features) and must return m non-negative numbers.
    """

    def __init__(self, table: Any, distance: str | Callable[..., Any] = "l1") -> None:
        if callable(distance):
            self.kind = getattr(distance, "__name__", "custom")
            self.fn: Callable[..., Any] | None = distance
        elif isinstance(distance, str) and distance in DISTANCES:
            self.kind = distance
            self.fn = None
        else:
            raise UnknownNameError("distance", distance, DISTANCES)
        std = table.std
        self.scale = np.where(table.is_categorical, 0.0, 1.0 / np.where(std > 0, std, 1.0))
        self.categorical = np.flatnonzero(table.is_categorical)
        self.p_same = table.p_same[self.categorical]

    def contributions(self, x: np.ndarray, C: np.ndarray) -> np.ndarray:
        """Per-feature contributions, shape (m, n_features): scaled |difference| or category mismatch."""
        out = np.abs(C - x) * self.scale
        if self.categorical.size:
            out[:, self.categorical] = (C[:, self.categorical] != x[self.categorical]) * self.p_same
        return out

    def __call__(self, x: np.ndarray, C: np.ndarray) -> np.ndarray:
        """Distances from ``x`` of shape (n_features,) to each row of ``C`` (m, n_features), float64."""
        if self.fn is not None:
            got = self.fn(x, C)
            try:
                out = np.asarray(got, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise ValidationError(
                    f"the distance function must return {len(C)} numbers (one per example); "
                    f"got {_kind(got)} ({exc})."
                ) from None
            if out.shape != (len(C),):
                raise ShapeError(
                    f"the distance function must return shape ({len(C)},) for {len(C)} examples; "
                    f"got shape {out.shape}."
                )
            if not np.isfinite(out).all() or (out < 0).any():
                raise ValidationError("the distance function must return finite values >= 0.")
            return out
        parts = []
        for start in range(0, len(C), _CHUNK):
            d = self.contributions(x, C[start : start + _CHUNK])
            parts.append(d.sum(axis=1) if self.kind == "l1" else np.sqrt((d * d).sum(axis=1)))
        return np.concatenate(parts) if parts else np.zeros(0)


class ScaledData:
    """The data scaled once (float32), so distances from one example to all rows are fast.

    Exact float64 distances are recomputed for the rows that the float32 pass cannot rule out.
    """

    def __init__(self, X: np.ndarray, dist: Distance) -> None:
        self.dist = dist
        self.X = X
        numeric_scale = dist.scale.astype(np.float32)
        self.S = X.astype(np.float32) * numeric_scale  # categorical columns are zero
        self.sq = np.einsum("ij,ij->i", self.S, self.S, dtype=np.float64)

    def update_row(self, i: int) -> None:
        """Refresh row ``i`` after an edit."""
        self.S[i] = self.X[i].astype(np.float32) * self.dist.scale.astype(np.float32)
        self.sq[i] = float(np.dot(self.S[i].astype(np.float64), self.S[i].astype(np.float64)))

    def nearest(
        self, x: np.ndarray, eligible: np.ndarray, dist: Distance | None = None
    ) -> tuple[int, float]:
        """Index and distance of the eligible row nearest ``x``; (-1, inf) if none is eligible.

        ``dist`` (default: the one the data was scaled for) must share its scaling: the
        What-If Tool's L1 and L2 distances share one scaled copy.
        """
        rows = np.flatnonzero(eligible)
        if rows.size == 0:
            return -1, float("inf")
        d = self.dist if dist is None else dist
        if d.fn is not None:
            dist = d(x, self.X[rows])
            k = int(np.argmin(dist))
            return int(rows[k]), float(dist[k])
        xs = (x * d.scale).astype(np.float32)
        approx = np.empty(self.S.shape[0], dtype=np.float64)
        if d.kind == "l1":
            step = 1024  # a block of rows that stays in cache while it is differenced and summed
            buf = np.empty((step, self.S.shape[1]), dtype=np.float32)
            for start in range(0, len(approx), step):
                block = self.S[start : start + step]
                tmp = buf[: len(block)]
                np.subtract(block, xs, out=tmp)
                np.abs(tmp, out=tmp)
                approx[start : start + len(block)] = tmp.sum(axis=1)
        else:
            approx[:] = self.S @ xs
        if d.kind == "l2":
            xsq = float(np.dot(xs.astype(np.float64), xs.astype(np.float64)))
            approx = np.maximum(self.sq - 2.0 * approx + xsq, 0.0)
            slack = 1e-4 * (xsq + self.sq) + 1e-9
        else:
            slack = 1e-4 * approx + 1e-6
        if d.categorical.size:
            mismatch = (self.X[:, d.categorical] != x[d.categorical]) * d.p_same
            approx += mismatch.sum(axis=1) if d.kind == "l1" else (mismatch * mismatch).sum(axis=1)
        approx = np.where(eligible, approx, np.inf)
        best = float(approx.min())
        short = np.flatnonzero(approx - slack <= best)
        exact = d(x, self.X[short])
        k = int(np.argmin(exact))
        return int(short[k]), float(exact[k])
