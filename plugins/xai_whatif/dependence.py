"""Partial dependence and ICE curves, evaluated in large batches (rows x grid points per call)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from tqdm.auto import tqdm

__all__ = ["ice_curves"]

#: Upper bound on the floats of one batch of edited rows (rows x grid points x features).
BATCH_FLOATS = 1 << 23


def ice_curves(
    predict: Callable[[np.ndarray], np.ndarray],
    X: np.ndarray,
    features: list[int],
    grids: list[np.ndarray],
    *,
    dtype: type = np.float32,
    progress: bool = False,
) -> np.ndarray:
    """Each row's outputs with ``features`` set to every grid point.

    Parameters
    ----------
    predict : callable
        Maps rows of shape (m, n_features) to outputs of shape (m, n_outputs).
    X : ndarray of shape (n_rows, n_features)
    features : list of int
        One or two columns.
    grids : list of ndarray
        The values of each feature, shapes (g1,) [and (g2,)].
    dtype : numpy dtype, default=float32
        The dtype of the edited rows passed to ``predict`` (the model's input dtype).

    Returns
    -------
    ndarray of shape (n_rows, g1[, g2], n_outputs)
    """
    mesh = np.meshgrid(*grids, indexing="ij")
    points = np.stack([m.ravel() for m in mesh], axis=1)  # (G, len(features))
    G = len(points)
    n, d = X.shape
    rows_per_batch = max(1, BATCH_FLOATS // max(1, G * d))
    parts = []
    for start in tqdm(
        range(0, n, rows_per_batch), desc="partial dependence", disable=not progress, leave=False
    ):
        block = X[start : start + rows_per_batch].astype(dtype, copy=False)
        edited = np.empty((len(block), G, d), dtype=dtype)
        edited[...] = block[:, None, :]
        edited[:, :, features] = points[None, :, :]
        out = predict(edited.reshape(-1, d))
        parts.append(out.reshape(len(block), G, -1))
    ice = np.concatenate(parts, axis=0)
    return ice.reshape(n, *(len(g) for g in grids), ice.shape[-1])
