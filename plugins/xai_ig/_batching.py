"""Gradients of many points in few large backward passes, in chunks of bounded size.

Every gradient the plugin needs (the path points of integrated gradients for all rows,
baselines and steps; the noisy copies of SmoothGrad; plain saliency) is one flat list of
points. It is walked in chunks of ``internal_batch_size`` points, each chunk one call of
the runner's gradients (``runner.gradient_validated``, or the path integral of
``runner.straight_paths`` for IG) with the per-point targets, and reduced to one
attribution per row as it goes, so memory stays bounded however many steps or samples
are asked.
"""

from __future__ import annotations

import math

import numpy as np

from xai_core import ModelRunner
from xai_core.progress import Bar, progress_bar
from xai_core.validation import check_int

__all__ = [
    "MAX_CHUNK_ELEMENTS",
    "PROGRESS_MIN_CHUNKS",
    "chunk_points",
    "gradient_rows",
    "batch_bar",
]

#: Input elements in one chunk by default (32 MiB of float64 per temporary).
MAX_CHUNK_ELEMENTS = 1 << 22
#: With ``progress=None`` a bar is shown from this many chunks on.
PROGRESS_MIN_CHUNKS = 10


def chunk_points(runner: ModelRunner, internal_batch_size: int | None, n_features: int) -> int:
    """Points per backward pass: ``internal_batch_size``, or by default the runner's batch size
    capped so one chunk holds at most :data:`MAX_CHUNK_ELEMENTS` input elements."""
    size = check_int(internal_batch_size, "internal_batch_size", allow_none=True)
    if size is not None:
        return size
    return max(1, min(runner.batch_size, MAX_CHUNK_ELEMENTS // max(1, n_features)))


def batch_bar(n_chunks: int, progress: bool | None, desc: str) -> Bar:
    """A bar over ``n_chunks``, shown when ``progress`` is True, or None and the chunks are many
    (inside ``explain()`` it drives the bar over rows, :mod:`xai_core.progress`)."""
    return progress_bar(
        n_chunks,
        progress=progress,
        desc=desc,
        unit="batch",
        long=n_chunks >= PROGRESS_MIN_CHUNKS,
    )


def gradient_rows(
    runner: ModelRunner,
    X: np.ndarray,
    target: np.ndarray,
    *,
    chunk: int,
    progress: bool | None,
    desc: str,
) -> np.ndarray:
    """The gradient of ``output[target]`` at each row, one backward pass per chunk of rows.

    Parameters
    ----------
    X : ndarray of shape (n_samples, *input_shape)
    target : ndarray of int64 of shape (n_samples,)

    Returns
    -------
    ndarray of float64 of shape (n_samples, *input_shape)
    """
    n = len(X)
    out = np.empty(X.shape, dtype=np.float64)
    n_chunks = math.ceil(n / chunk)
    with batch_bar(n_chunks, progress, desc) as bar:
        for start in range(0, n, chunk):
            stop = min(start + chunk, n)
            out[start:stop] = runner.gradient_validated(X[start:stop], target[start:stop])
            bar.update(1)
    return out
