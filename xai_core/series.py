"""The one rule for how a series (a 1-D signal over steps) is laid out, for plots and explainers.

A series sample has one of two shapes, as an image has (:mod:`xai_core.images`):

- ``(steps, channels)``: channels last (Keras, TensorFlow, a recurrent layer's input);
- ``(channels, steps)``: channels first (PyTorch's ``Conv1d``, ONNX).

As for images, the channel axis is the small end: a shape is channels-last when its last
axis is no longer than its first, else channels-first, so ``(128, 3)`` and ``(3, 128)`` are
both three channels of 128 steps; a square shape is read as channels-last, and an explicit
``order=`` (``"tc"`` or ``"ct"``) settles it. A one-axis sample ``(steps,)`` is one channel.

Examples
--------
>>> from xai_core.series import series_layout
>>> layout = series_layout((3, 128))
>>> layout.order, layout.steps, layout.channels
('ct', 128, 3)
>>> layout.to_tc(rows).shape          # rows of shape (n, 3, 128)
(n, 128, 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core.errors import ShapeError, ValidationError

__all__ = ["SERIES_ORDERS", "SeriesLayout", "recorded_layout", "series_layout"]

#: Axis orders: one channel, channels last, channels first.
SERIES_ORDERS = ("t", "tc", "ct")


@dataclass(frozen=True)
class SeriesLayout:
    """How the values of one sample form a series.

    Attributes
    ----------
    shape : tuple of int
        The sample shape.
    order : {"t", "tc", "ct"}
    """

    shape: tuple[int, ...]
    order: str

    def __post_init__(self) -> None:
        if self.order not in SERIES_ORDERS:
            raise ValidationError(
                f"order must be one of {', '.join(SERIES_ORDERS)}; got {self.order!r}."
            )
        if len(self.shape) != len(self.order):
            raise ShapeError(
                f"a series of order {self.order!r} has {len(self.order)} axes; got shape "
                f"{self.shape}."
            )

    @property
    def steps(self) -> int:
        """The number of steps."""
        return int(self.shape[self.order.index("t")])

    @property
    def channels(self) -> int:
        """The number of channels (1 for a one-axis series)."""
        return 1 if self.order == "t" else int(self.shape[self.order.index("c")])

    @property
    def time_axis(self) -> int:
        """The axis of the steps within a sample."""
        return self.order.index("t")

    def to_tc(self, X: Any) -> np.ndarray:
        """Rows of this layout as ``(n, steps, channels)``."""
        X = np.asarray(X)
        if X.shape[1:] != self.shape:
            raise ShapeError(
                f"rows must have shape (n, {', '.join(map(str, self.shape))}); got {X.shape}."
            )
        if self.order == "t":
            return X[:, :, None]
        return X.transpose(0, 2, 1) if self.order == "ct" else X

    def windows(self, count: int) -> np.ndarray:
        """The window (``0 .. count - 1``) of each step, ``count`` windows of consecutive
        steps of near-equal length (as many as there are steps, if fewer): shape (steps,)."""
        n = min(int(count), self.steps)
        return (np.arange(self.steps) * n) // self.steps

    def step_names(self) -> tuple[str, ...]:
        """A name per value of a sample, in its flattened order: ``"step 4"`` for one
        channel, else ``"channel 1, step 4"``."""
        if self.order == "t":
            return tuple(f"step {t}" for t in range(self.steps))
        pairs = [(c, t) for t in range(self.steps) for c in range(self.channels)]
        if self.order == "ct":
            pairs.sort()
        return tuple(f"channel {c}, step {t}" for c, t in pairs)

    def from_tc(self, X: Any) -> np.ndarray:
        """Rows of shape ``(n, steps, channels)`` back in this layout (:meth:`to_tc`'s inverse)."""
        X = np.asarray(X)
        if X.shape[1:] != (self.steps, self.channels):
            raise ShapeError(
                f"rows must have shape (n, {self.steps}, {self.channels}); got {X.shape}."
            )
        if self.order == "t":
            return X[:, :, 0]
        return X.transpose(0, 2, 1) if self.order == "ct" else X


def series_layout(shape: Sequence[int], *, order: str | None = None) -> SeriesLayout:
    """The layout of a series sample shape.

    Parameters
    ----------
    shape : tuple of int
        ``(steps,)``, ``(steps, channels)`` or ``(channels, steps)``.
    order : {"t", "tc", "ct"}, optional
        The axis order, when the rule of this module should not decide it.

    Returns
    -------
    SeriesLayout

    Raises
    ------
    ShapeError
        ``shape`` has no or more than two axes.
    """
    dims = tuple(int(d) for d in shape)
    if not 1 <= len(dims) <= 2 or min(dims) < 1:
        raise ShapeError(
            f"a series sample has shape (steps,), (steps, channels) or (channels, steps); got "
            f"{dims}."
        )
    if order is not None:
        return SeriesLayout(dims, order)
    if len(dims) == 1:
        return SeriesLayout(dims, "t")
    return SeriesLayout(dims, "tc" if dims[1] <= dims[0] else "ct")


def recorded_layout(shape: Sequence[int], order: Any) -> SeriesLayout:
    """The layout of samples of ``shape`` from a network that records ``order`` (its
    ``series_order``, or an explanation's ``meta["series_order"]``): that order for a
    sample of two axes, one channel for a sample of one, the rule of this module when
    ``order`` is not a string."""
    given = order if isinstance(order, str) and len(shape) == 2 else None
    return series_layout(shape, order=given)
