"""PoseNet's outputs as Teachable Machine's pose classifiers read them, and the keypoints they hold.

A Teachable Machine pose project does not classify keypoints. ``@teachablemachine/pose``
(``custom-posenet.ts``, ``poseOutputsToAray``) runs PoseNet's base network on the image and
concatenates its two outputs along the channel axis: ``heatmapScores`` (the sigmoid of
the heatmaps, 17 channels, one per keypoint) and ``offsets`` (34 channels: the 17 keypoints'
y offsets, then their 17 x offsets, in pixels), on PoseNet's output grid. The classifier's
input is that ``(height, width, 51)`` block flattened in row-major order: for PoseNet's
defaults in Teachable Machine (MobileNetV1, ``outputStride`` 16, ``inputResolution`` 257)
a 17 x 17 grid, 14,739 numbers. The keypoints (``pose.keypoints``) are decoded from the
same outputs and only drawn.

This module names those features, builds the vector from an estimator's raw outputs, and
decodes keypoints from it as PoseNet's single-pose decoder does (``decodeSinglePose``:
each keypoint's highest-scoring cell, ``cell * outputStride + offset``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core.errors import ShapeError, ValidationError

__all__ = [
    "CHANNELS",
    "CONNECTED_PARTS",
    "PART_NAMES",
    "decode_single_pose",
    "grid_size",
    "keypoint_totals",
    "posenet_feature_names",
    "posenet_features",
]

#: PoseNet's keypoints, in its order (``partNames`` in ``posenet/src/keypoints.ts``).
PART_NAMES = (
    "nose",
    "leftEye",
    "rightEye",
    "leftEar",
    "rightEar",
    "leftShoulder",
    "rightShoulder",
    "leftElbow",
    "rightElbow",
    "leftWrist",
    "rightWrist",
    "leftHip",
    "rightHip",
    "leftKnee",
    "rightKnee",
    "leftAnkle",
    "rightAnkle",
)
#: The pairs PoseNet's skeleton joins (``connectedPartNames``).
CONNECTED_PARTS = (
    ("leftHip", "leftShoulder"),
    ("leftElbow", "leftShoulder"),
    ("leftElbow", "leftWrist"),
    ("leftHip", "leftKnee"),
    ("leftKnee", "leftAnkle"),
    ("rightHip", "rightShoulder"),
    ("rightElbow", "rightShoulder"),
    ("rightElbow", "rightWrist"),
    ("rightHip", "rightKnee"),
    ("rightKnee", "rightAnkle"),
    ("leftShoulder", "rightShoulder"),
    ("leftHip", "rightHip"),
)
#: Channels per grid cell: 17 heatmap scores, 17 y offsets, 17 x offsets.
CHANNELS = 3 * len(PART_NAMES)
_K = len(PART_NAMES)


def _valid_resolution(resolution: int, stride: int) -> int:
    """PoseNet's ``toValidInputResolution``: the nearest ``k * stride + 1`` at or below."""
    if (resolution - 1) % stride == 0:
        return resolution
    return (resolution // stride) * stride + 1


def grid_size(input_resolution: Any = 257, output_stride: int = 16) -> tuple[int, int]:
    """PoseNet's output grid ``(height, width)`` for an input resolution and output stride.

    Parameters
    ----------
    input_resolution : int or {"width": int, "height": int}, default=257
    output_stride : {8, 16, 32}, default=16
    """
    if output_stride not in (8, 16, 32):
        raise ValidationError(f"output_stride must be 8, 16 or 32; got {output_stride!r}.")
    if isinstance(input_resolution, dict):
        h, w = input_resolution.get("height"), input_resolution.get("width")
    else:
        h = w = input_resolution
    for name, v in (("height", h), ("width", w)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < output_stride + 1:
            raise ValidationError(
                f"input_resolution {name} must be a number > {output_stride}; got {v!r}."
            )
    h, w = (_valid_resolution(int(v), output_stride) for v in (h, w))
    return (h - 1) // output_stride + 1, (w - 1) // output_stride + 1


def posenet_feature_names(grid: tuple[int, int]) -> tuple[str, ...]:
    """One name per input feature, in the classifier's order: ``"nose score (r, c)"``, ...

    Returns
    -------
    tuple of str, length ``grid[0] * grid[1] * 51``
    """
    h, w = grid
    kinds = [f"{p} score" for p in PART_NAMES] + [f"{p} dy" for p in PART_NAMES]
    kinds += [f"{p} dx" for p in PART_NAMES]
    return tuple(f"{k} ({r}, {c})" for r in range(h) for c in range(w) for k in kinds)


def posenet_features(heatmap_scores: Any, offsets: Any) -> np.ndarray:
    """The classifier's input rows from PoseNet's outputs (``poseOutputsToAray``).

    Parameters
    ----------
    heatmap_scores : array_like of float, shape (n, height, width, 17) or (height, width, 17)
        PoseNet's heatmaps after the sigmoid (scores in [0, 1]).
    offsets : array_like of float, shape (n, height, width, 34) or (height, width, 34)
        y offsets of the 17 keypoints, then their x offsets, in input pixels.

    Returns
    -------
    ndarray of float32, shape (n, height * width * 51)
    """
    s = np.asarray(heatmap_scores, dtype=np.float32)
    o = np.asarray(offsets, dtype=np.float32)
    if s.ndim == 3:
        s, o = s[None], o[None] if o.ndim == 3 else o
    if s.ndim != 4 or s.shape[-1] != _K:
        raise ShapeError(
            f"heatmap_scores must have shape (n, height, width, {_K}); got {np.shape(heatmap_scores)}."
        )
    if o.shape != (*s.shape[:3], 2 * _K):
        raise ShapeError(
            f"offsets must have shape {(*s.shape[:3], 2 * _K)} to match heatmap_scores; got "
            f"{np.shape(offsets)}."
        )
    if not (np.isfinite(s).all() and np.isfinite(o).all()):
        raise ValidationError("heatmap_scores and offsets must be finite.")
    if s.min(initial=0) < 0 or s.max(initial=0) > 1:
        raise ValidationError(
            "heatmap_scores must be scores in [0, 1] (PoseNet's heatmaps after the sigmoid); "
            f"they span {s.min():.3g} .. {s.max():.3g}."
        )
    return np.concatenate([s, o], axis=-1).reshape(len(s), -1)


def _blocks(X: Any, grid: tuple[int, int], what: str) -> np.ndarray:
    h, w = grid
    x = np.asarray(X, dtype=np.float64)
    if x.ndim == 1:
        x = x[None]
    if x.ndim != 2 or x.shape[1] != h * w * CHANNELS:
        raise ShapeError(
            f"{what} must have shape (n, {h * w * CHANNELS}) ({h} x {w} cells of {CHANNELS} "
            f"channels); got an array of shape {np.shape(X)}."
        )
    return x.reshape(len(x), h, w, CHANNELS)


def decode_single_pose(X: Any, grid: tuple[int, int], output_stride: int = 16) -> np.ndarray:
    """Keypoints from classifier inputs, as PoseNet's ``decodeSinglePose`` decodes them.

    Parameters
    ----------
    X : array_like of float, shape (n, height * width * 51)
    grid : (int, int)
        PoseNet's output grid (:func:`grid_size`).
    output_stride : int, default=16

    Returns
    -------
    ndarray of float64, shape (n, 17, 3)
        ``(y, x, score)`` per keypoint, in PoseNet's input pixels.
    """
    b = _blocks(X, grid, "X")
    n, h, w, _ = b.shape
    scores = b[..., :_K].reshape(n, h * w, _K)
    best = scores.argmax(axis=1)  # (n, 17): the first highest cell, as argmax2d takes it
    rows, cols = np.divmod(best, w)
    i = np.arange(n)[:, None]
    k = np.arange(_K)[None, :]
    dy = b[i, rows, cols, _K + k]
    dx = b[i, rows, cols, 2 * _K + k]
    score = scores[i, best, k]
    return np.stack([rows * output_stride + dy, cols * output_stride + dx, score], axis=-1)


def keypoint_totals(values: Any, grid: tuple[int, int]) -> np.ndarray:
    """Attributions summed per keypoint: its score, dy and dx channels over the whole grid.

    Parameters
    ----------
    values : array_like of float, shape (n, height * width * 51)

    Returns
    -------
    ndarray of float64, shape (n, 17)
        Signed sums; with a complete method (IG, SHAP) they add up to the row's total.
    """
    b = _blocks(values, grid, "values")
    per_channel = b.sum(axis=(1, 2))
    return per_channel[:, :_K] + per_channel[:, _K : 2 * _K] + per_channel[:, 2 * _K :]
