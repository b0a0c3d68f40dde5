"""The TensorFlow Playground's input features: functions of a point (x1, x2) of the plane."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xai_core import ShapeError, UnknownNameError

__all__ = ["FEATURES", "check_features", "transform"]

#: Feature name -> its value at points ``P`` of shape (n, 2) (the Playground's seven inputs).
FEATURES = {
    "x1": lambda P: P[:, 0],
    "x2": lambda P: P[:, 1],
    "x1^2": lambda P: P[:, 0] ** 2,
    "x2^2": lambda P: P[:, 1] ** 2,
    "x1*x2": lambda P: P[:, 0] * P[:, 1],
    "sin(x1)": lambda P: np.sin(P[:, 0]),
    "sin(x2)": lambda P: np.sin(P[:, 1]),
}


def check_features(features: Sequence[str]) -> tuple[str, ...]:
    """``features`` checked to be distinct names of :data:`FEATURES`, at least one."""
    if isinstance(features, str):
        features = (features,)
    out = tuple(features)
    for name in out:
        if name not in FEATURES:
            raise UnknownNameError("feature", name, tuple(FEATURES))
    if not out or len(set(out)) != len(out):
        raise ShapeError(f"features must name at least one distinct feature; got {out!r}.")
    return out


def transform(points: np.ndarray, features: Sequence[str], dtype=np.float32) -> np.ndarray:
    """The network's inputs at ``points``.

    Parameters
    ----------
    points : ndarray of shape (n, 2)
        Points of the plane.
    features : sequence of str
        Names of :data:`FEATURES`, in the network's input order.

    Returns
    -------
    ndarray of shape (n, len(features))
    """
    P = np.asarray(points, dtype=np.float64)
    return np.stack([FEATURES[f](P) for f in features], axis=1).astype(dtype)
