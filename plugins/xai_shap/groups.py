"""Players of the Shapley game: single features, image patches or user-given groups.

Images have too many pixels for any Shapley algorithm (2**784 coalitions), so their
pixels are grouped into square patches (4 x 4 by default: 49 players for a 28 x 28
image) or into any segmentation the user passes as ``groups`` (superpixels from any
segmenter, one-hot blocks of a tabular encoding ...). A coalition of players switches
all features of its groups on at once. Each group's Shapley value is spread back evenly
over its features (value / group size), so ``values`` keeps the input shape and each
group's features still sum to the group's value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core import ShapeError, ValidationError
from xai_core.images import ImageLayout, sample_layout
from xai_core.series import SeriesLayout

__all__ = ["DEFAULT_PATCH", "FeatureGroups", "resolve_groups"]

#: Patch side used for images when ``patch_size`` is not given.
DEFAULT_PATCH = 4


@dataclass(frozen=True)
class FeatureGroups:
    """Which player each input feature belongs to.

    Attributes
    ----------
    labels : ndarray of int64 of shape (n_features,)
        The player (``0 .. n_groups - 1``) of each feature, in flattened (C) order.
    n_groups : int
        Number of players.
    kind : {"features", "patches", "windows", "groups"}
        Single features, image patches, windows of a series' steps or user-given groups.
    description : str
        One line for ``meta`` and reports.
    image_shape : tuple of int or None
        ``(H, W)``, ``(H, W, C)`` or ``(C, H, W)`` of image samples (the rule of
        :mod:`xai_core.images`), for heatmaps in reports.
    """

    labels: np.ndarray
    n_groups: int
    kind: str
    description: str
    image_shape: tuple[int, ...] | None = None

    @property
    def is_identity(self) -> bool:
        """Whether every feature is its own player."""
        return self.kind == "features"

    @property
    def sizes(self) -> np.ndarray:
        """Features per group, of shape (n_groups,)."""
        return np.bincount(self.labels, minlength=self.n_groups)

    def onehot(self, dtype: Any = np.float32) -> np.ndarray:
        """Membership matrix of shape (n_features, n_groups)."""
        out = np.zeros((self.labels.size, self.n_groups), dtype=dtype)
        out[np.arange(self.labels.size), self.labels] = 1
        return out

    def spread(self, group_values: np.ndarray) -> np.ndarray:
        """Group values back to features: each feature gets its group's value / group size.

        Parameters
        ----------
        group_values : ndarray of shape (n_samples, n_groups, ...)

        Returns
        -------
        ndarray of shape (n_samples, n_features, ...)
        """
        if self.is_identity:
            return group_values
        share = 1.0 / self.sizes[self.labels]
        share = share.reshape((1, -1) + (1,) * (group_values.ndim - 2))
        return group_values[:, self.labels] * share


def _patch_labels(layout: ImageLayout, patch: tuple[int, int]) -> np.ndarray:
    h_ax, w_ax = layout.spatial_axes
    ph, pw = patch
    idx = np.indices(layout.shape)
    cols = -(-layout.width // pw)
    labels = (idx[h_ax] // ph) * cols + idx[w_ax] // pw
    return labels.reshape(-1).astype(np.int64)


def _check_patch(patch_size: Any) -> tuple[int, int]:
    if isinstance(patch_size, (int, np.integer)) and not isinstance(patch_size, bool):
        patch = (int(patch_size), int(patch_size))
    elif isinstance(patch_size, (tuple, list)) and len(patch_size) == 2:
        patch = tuple(patch_size)
    else:
        raise ValidationError(
            f"patch_size must be a positive integer or a pair (height, width); got {patch_size!r}."
        )
    if not all(
        isinstance(p, (int, np.integer)) and not isinstance(p, bool) and p >= 1 for p in patch
    ):
        raise ValidationError(
            f"patch_size must be a positive integer or a pair (height, width); got {patch_size!r}."
        )
    return int(patch[0]), int(patch[1])


def series_windows(layout: SeriesLayout, count: int = 10) -> FeatureGroups:
    """Players of a series: ``count`` windows of consecutive steps of near-equal length (as
    many as there are steps, if fewer), every channel of a step in its step's window."""
    steps = layout.steps
    per_step = layout.windows(count)
    n = int(per_step.max()) + 1
    shape = [1] * len(layout.shape)
    shape[layout.time_axis] = steps
    labels = np.broadcast_to(per_step.reshape(shape), layout.shape).reshape(-1).astype(np.int64)
    desc = f"{n} windows of {steps} steps ({layout.channels} channel(s) each)"
    return FeatureGroups(labels, n, "windows", desc)


def resolve_groups(
    input_shape: Sequence[int],
    *,
    groups: Any = None,
    patch_size: Any = None,
    image_shape: Any = None,
) -> FeatureGroups:
    """The players for samples of ``input_shape``.

    Parameters
    ----------
    input_shape : tuple of int
        Shape of one sample.
    groups : array-like of int of shape input_shape or (n_features,), optional
        A group label per feature (any integers; each distinct label is one player).
    patch_size : int or (int, int), optional
        Patch side for images (default :data:`DEFAULT_PATCH`).
    image_shape : tuple of int, optional
        ``(H, W)``, ``(H, W, C)`` or ``(C, H, W)`` of flattened images (784 features -> ``(28, 28)``).

    Returns
    -------
    FeatureGroups
    """
    input_shape = tuple(int(d) for d in input_shape)
    n_features = int(np.prod(input_shape))
    if groups is not None:
        if patch_size is not None:
            raise ValidationError("pass either groups or patch_size, not both.")
        arr = np.asarray(groups)
        if arr.dtype.kind not in "iu":
            raise ValidationError(
                f"groups must be integer labels; got an array of dtype {arr.dtype}."
            )
        if arr.shape not in (input_shape, (n_features,)):
            raise ShapeError(
                f"groups must have the shape of one sample {input_shape} or ({n_features},); "
                f"got shape {arr.shape}."
            )
        _, labels = np.unique(arr.reshape(-1), return_inverse=True)
        labels = labels.astype(np.int64).reshape(-1)
        n_groups = int(labels.max()) + 1
        return FeatureGroups(labels, n_groups, "groups", f"{n_groups} groups given by 'groups'")

    layout = sample_layout(input_shape, image_shape)
    if layout is None:
        if patch_size is not None:
            raise ValidationError(
                f"patch_size applies to images; samples of shape {input_shape} are not one. Pass "
                "image_shape=(H, W) for flattened images, or groups= for feature groups."
            )
        labels = np.arange(n_features, dtype=np.int64)
        return FeatureGroups(labels, n_features, "features", f"{n_features} features")
    patch = _check_patch(DEFAULT_PATCH if patch_size is None else patch_size)
    h, w = layout.height, layout.width
    patch = (min(patch[0], h), min(patch[1], w))
    labels = _patch_labels(layout, patch)
    n_groups = int(labels.max()) + 1
    desc = f"{n_groups} patches of {patch[0]}x{patch[1]} pixels of {h}x{w} images"
    return FeatureGroups(labels, n_groups, "patches", desc, layout.shape)
