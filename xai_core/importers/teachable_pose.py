"""Teachable Machine pose projects: a dense classifier over PoseNet's heatmaps and offsets.

The TensorFlow.js export is ``model.json`` (``teachable-posenet.ts``: a Sequential of
``Dense(denseUnits, relu)``, ``Dropout(0.5)``, ``Dense(classes, softmax, no bias)``), its
weights and a ``metadata.json``::

    {"tfjsVersion": "...", "tmVersion": "...", "packageVersion": "...",
     "packageName": "@teachablemachine/pose", "timeStamp": "...", "userMetadata": {},
     "modelName": "my-pose-model", "labels": ["Class 1", "Class 2"],
     "modelSettings": {"posenet": {"architecture": "MobileNetV1", "outputStride": 16,
                                    "inputResolution": 257, "multiplier": 0.75}}}

Missing ``modelSettings.posenet`` fields take the library's defaults (``fillConfig``). The
classifier's input is PoseNet's concatenated output, not keypoints (:mod:`xai_core.pose`);
its features are named after the keypoint, channel and grid cell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from xai_core.errors import ModelFormatError, ShapeError, ValidationError

__all__ = ["is_pose_metadata", "pose_preprocessing", "prepare_poses"]

#: ``fillConfig``'s defaults in ``@teachablemachine/pose``.
POSENET_DEFAULTS = {
    "architecture": "MobileNetV1",
    "outputStride": 16,
    "inputResolution": 257,
    "multiplier": 0.75,
}


def is_pose_metadata(meta: dict[str, Any]) -> bool:
    """Whether a ``metadata.json`` is ``@teachablemachine/pose``'s."""
    settings = meta.get("modelSettings")
    return meta.get("packageName") == "@teachablemachine/pose" or (
        isinstance(settings, dict) and "posenet" in settings
    )


def pose_preprocessing(model: Any, meta: dict[str, Any], where: str) -> dict[str, Any]:
    """PoseNet's settings and output grid; the model must take ``grid * 51`` numbers."""
    from xai_core.pose import CHANNELS, grid_size

    settings = meta.get("modelSettings") or {}
    posenet = dict(POSENET_DEFAULTS)
    if isinstance(settings, dict) and isinstance(settings.get("posenet"), dict):
        posenet.update({k: v for k, v in settings["posenet"].items() if v})
    try:
        grid = grid_size(posenet["inputResolution"], posenet["outputStride"])
    except ValidationError as exc:
        raise ModelFormatError(f"{where}: modelSettings.posenet: {exc}") from None
    shape = tuple(getattr(model, "input_shape", ()) or ())
    need = grid[0] * grid[1] * CHANNELS
    if shape != (need,):
        raise ModelFormatError(
            f"{where}: PoseNet at inputResolution {posenet['inputResolution']} and outputStride "
            f"{posenet['outputStride']} gives a {grid[0]} x {grid[1]} grid of {CHANNELS} "
            f"channels, {need} numbers; the model takes {shape}."
        )
    return {"kind": "posenet", "posenet": posenet, "grid": grid, "n_features": need}


def _checked_prep(model: Any) -> dict[str, Any]:
    prep = getattr(model, "preprocessing", None) or {}
    if prep.get("kind") != "posenet":
        raise ValidationError(
            "model has no recorded PoseNet input (load a pose project with from_teachable_machine)."
        )
    return prep


def prepare_poses(
    model: Any,
    data: Any = None,
    *,
    images: Iterable[Any] | None = None,
    estimator: Callable[[Any], tuple[Any, Any]] | None = None,
) -> np.ndarray:
    """The classifier's input rows from a table, PoseNet's outputs, or your own estimator.

    Parameters
    ----------
    model : Model
        Loaded by :func:`~xai_core.from_teachable_machine` from a pose project.
    data : DataFrame, array_like or (heatmap_scores, offsets), optional
        A DataFrame whose columns are ``model.feature_names`` (any order; taken by name), an
        array of shape (n, grid_h * grid_w * 51) in the classifier's order, or PoseNet's
        two outputs, ``heatmap_scores`` (n, h, w, 17) after the sigmoid and ``offsets``
        (n, h, w, 34).
    images, estimator : optional
        Instead of ``data``: ``estimator(image)`` returns ``(heatmap_scores, offsets)`` of
        one image (a PoseNet run of your own: an ONNX or TFLite PoseNet, say), called on each.

    Returns
    -------
    ndarray of float32, shape (n, grid_h * grid_w * 51)

    Raises
    ------
    ValidationError
        No recorded PoseNet input, both or neither of ``data`` and ``images``, missing
        columns, or outputs of PoseNet's wrong grid.

    Notes
    -----
    Keypoints alone (17 x (x, y, score)) cannot make these rows: the classifier reads the
    whole heatmaps and offsets, which keypoints do not determine. A keypoint table is
    accepted where keypoints are drawn (``e.plot.skeleton(keypoints=...)``).
    """
    from xai_core.pose import posenet_features

    prep = _checked_prep(model)
    h, w = prep["grid"]
    if (data is None) == (images is None):
        raise ValidationError("give either data or images with an estimator, not both or neither.")
    if images is not None:
        if not callable(estimator):
            raise ValidationError(
                "images need an estimator: a callable image -> (scores, offsets)."
            )
        outs = [estimator(image) for image in images]
        if not outs:
            raise ValidationError("images must hold at least one image; got none.")
        data = (
            np.stack([np.asarray(s) for s, _ in outs]),
            np.stack([np.asarray(o) for _, o in outs]),
        )
    if isinstance(data, tuple) and len(data) == 2:
        X = posenet_features(*data)
        if X.shape[1] != prep["n_features"]:
            raise ShapeError(
                f"PoseNet's outputs must be on the model's {h} x {w} grid; got "
                f"{np.shape(data[0])[-3:-1]}."
            )
        return X
    if hasattr(data, "columns"):
        names = list(model.feature_names)
        missing = [c for c in names if c not in data.columns]
        if missing:
            raise ValidationError(
                f"data is missing {len(missing)} of the model's {len(names)} feature columns, "
                f"e.g. {missing[:3]}."
            )
        data = data[names].to_numpy()
    X = np.asarray(data, dtype=np.float32)
    if X.ndim == 1:
        X = X[None]
    if X.ndim != 2 or X.shape[1] != prep["n_features"]:
        raise ShapeError(
            f"data must have shape (n, {prep['n_features']}) ({h} x {w} cells of 51 channels); "
            f"got an array of shape {np.shape(data)}."
        )
    if not np.isfinite(X).all():
        raise ValidationError("data must be finite; it holds NaN or infinity.")
    return X
