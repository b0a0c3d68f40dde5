"""The binary hierarchies Partition SHAP walks: shap's image splits, feature clusterings, linkages.

A hierarchy is a linkage matrix in scipy's format, of shape (M - 1, 4) for ``M`` leaves:
row ``k`` joins nodes ``Z[k, 0]`` and ``Z[k, 1]`` (leaves are ``0 .. M-1``, the node of
row ``k`` is ``M + k``) at distance ``Z[k, 2]`` into a node of ``Z[k, 3]`` leaves.

- Images (:func:`image_tree`): shap's ``Image`` masker's axis-aligned splits of an
  ``(H, W, C)`` image, halving the longer of height and width first and the channels
  last, the same matrix, computed here without shap's compiled builder.
- Tables (:func:`feature_clustering`): ``shap.utils.hclust`` on the background columns,
  scipy's distance (``"correlation"`` by default, as shap's ``Partition`` masker) between
  the columns plus ``1e-8`` of seeded normal noise, and single, complete or average
  linkage; or a linkage matrix given, checked by :func:`check_linkage`.

:class:`Hierarchy` holds a checked matrix with what the walk needs: each node's children,
its leaves as one contiguous range of a depth-first leaf order, and its size.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from xai_core import ShapeError, ValidationError

__all__ = [
    "LINKAGES",
    "Hierarchy",
    "check_linkage",
    "feature_clustering",
    "image_tree",
]

#: The linkage methods of ``shap.utils.hclust``.
LINKAGES = ("single", "complete", "average")


@dataclass(frozen=True)
class Hierarchy:
    """A binary hierarchy over ``M`` leaves, from a linkage matrix.

    Attributes
    ----------
    Z : ndarray of float64 of shape (M - 1, 4)
    n_leaves : int
    left, right : ndarray of int64 of shape (2 M - 1,)
        Children of each node (-1 for leaves).
    start, size : ndarray of int64 of shape (2 M - 1,)
        Each node's leaves are ``order[start : start + size]``.
    order : ndarray of int64 of shape (M,)
        The leaves in depth-first (left first) order.
    levels : tuple of ndarray of int64
        The internal nodes by depth (computed once, on first use).
    """

    Z: np.ndarray
    n_leaves: int
    left: np.ndarray
    right: np.ndarray
    start: np.ndarray
    size: np.ndarray
    order: np.ndarray

    @classmethod
    def from_linkage(cls, Z: np.ndarray) -> Hierarchy:
        """The hierarchy of a linkage matrix of shape (M - 1, 4) (checked by :func:`check_linkage`)."""
        Z = np.asarray(Z, dtype=np.float64)
        m = len(Z) + 1
        n_nodes = 2 * m - 1
        left = np.full(n_nodes, -1, dtype=np.int64)
        right = np.full(n_nodes, -1, dtype=np.int64)
        left[m:] = Z[:, 0].astype(np.int64)
        right[m:] = Z[:, 1].astype(np.int64)
        size = np.ones(n_nodes, dtype=np.int64)
        size[m:] = Z[:, 3].astype(np.int64)
        start = np.zeros(n_nodes, dtype=np.int64)
        frontier = np.array([n_nodes - 1], dtype=np.int64)
        while len(frontier):  # top down, one level at a time
            inner = frontier[frontier >= m]
            lo, hi = left[inner], right[inner]
            start[lo] = start[inner]
            start[hi] = start[inner] + size[lo]
            frontier = np.concatenate([lo, hi])
        order = np.empty(m, dtype=np.int64)
        order[start[:m]] = np.arange(m)
        return cls(Z, m, left, right, start, size, order)

    @cached_property
    def levels(self) -> tuple[np.ndarray, ...]:
        """The internal nodes by depth, the root's level first (int64 arrays)."""
        out = []
        frontier = np.array([2 * self.n_leaves - 2], dtype=np.int64)
        while len(frontier):
            inner = frontier[frontier >= self.n_leaves]
            if not len(inner):
                break
            out.append(inner)
            frontier = np.concatenate([self.left[inner], self.right[inner]])
        return tuple(out)


def image_tree(shape: tuple[int, int, int]) -> np.ndarray:
    """shap's ``Image`` masker's partition tree of an ``(H, W, C)`` image.

    Boxes are split in two, the height when it is the longer side (ties included), else
    the width, and the channels once both are 1; the lower half is the left child. Nodes
    are numbered as shap's builder pops them from its heap: by size, largest first, then
    by the box's corners; leaf ``i`` is the value at flat position ``i`` of the image in C
    order.

    Parameters
    ----------
    shape : (int, int, int)
        ``(H, W, C)``.

    Returns
    -------
    ndarray of float64 of shape (H W C - 1, 4)
        Distances are 0, as shap's.
    """
    h, w, c = (int(d) for d in shape)
    m = h * w * c
    if m < 2:
        raise ShapeError(f"an image needs at least 2 values to split; got shape {shape}.")
    boxes = [np.array([[0, h, 0, w, 0, c]], dtype=np.int64)]
    parents = [np.array([-1], dtype=np.int64)]  # index into all boxes so far
    is_left = [np.array([False])]
    n_seen = 1
    level, level_ids = boxes[0], np.array([0], dtype=np.int64)
    while len(level):
        xw, yw, zw = (
            level[:, 1] - level[:, 0],
            level[:, 3] - level[:, 2],
            level[:, 5] - level[:, 4],
        )
        split = (xw * yw * zw) > 1
        level, level_ids = level[split], level_ids[split]
        xw, yw, zw = xw[split], yw[split], zw[split]
        on_x = (xw >= yw) & (xw > 1)
        on_y = ~on_x & (yw > 1)
        axis = np.where(on_x, 0, np.where(on_y, 2, 4))
        width = np.choose(axis // 2, [xw, yw, zw])
        mid = level[np.arange(len(level)), axis] + width // 2
        lo, hi = level.copy(), level.copy()
        lo[np.arange(len(level)), axis + 1] = mid
        hi[np.arange(len(level)), axis] = mid
        children = np.concatenate([lo, hi])
        boxes.append(children)
        parents.append(np.concatenate([level_ids, level_ids]))
        is_left.append(np.repeat([True, False], len(level)))
        level_ids = n_seen + np.arange(len(children))
        n_seen += len(children)
        level = children
    box = np.concatenate(boxes)
    parent = np.concatenate(parents)
    left_side = np.concatenate(is_left)
    vol = (box[:, 1] - box[:, 0]) * (box[:, 3] - box[:, 2]) * (box[:, 5] - box[:, 4])
    # shap's heap pops by (-size, xmin, xmax, ymin, ymax, zmin, zmax); children always come
    # after their parent, so the pop order is this global sort
    keys = [box[:, j] for j in range(5, -1, -1)] + [-vol]
    pops = np.lexsort(keys)
    node = np.empty(len(box), dtype=np.int64)
    inner = pops[vol[pops] > 1]
    node[inner] = 2 * m - 2 - np.arange(len(inner))
    leaves = vol == 1
    flat = box[leaves, 0] * w * c + box[leaves, 2] * c + box[leaves, 4]
    node[leaves] = m - 1 - flat  # as shap numbers them (ind = -flat - 1, node = M + ind)
    Z = np.zeros((m - 1, 4))
    has_parent = parent >= 0
    rows = node[parent[has_parent]] - m
    cols = np.where(left_side[has_parent], 0, 1)
    Z[rows, cols] = node[has_parent]
    Z[node[inner] - m, 3] = vol[inner]
    return Z


def check_linkage(Z: Any, n_leaves: int, name: str = "clustering") -> np.ndarray:
    """A linkage matrix over ``n_leaves`` features, checked.

    Raises
    ------
    ShapeError
        Not of shape (n_leaves - 1, 4).
    ValidationError
        Not a valid linkage (scipy's ``is_valid_linkage``: children before parents, each
        node joined once, sizes the sums of the children's, no negative distance).
    """
    from scipy.cluster.hierarchy import is_valid_linkage

    arr = np.asarray(Z)
    if arr.ndim != 2 or arr.shape != (n_leaves - 1, 4):
        raise ShapeError(
            f"{name} must be a linkage matrix of shape ({n_leaves - 1}, 4) for {n_leaves} "
            f"features (scipy.cluster.hierarchy.linkage's format); got shape {arr.shape}."
        )
    if arr.dtype.kind not in "fiu":
        raise ValidationError(f"{name} must be numbers; got an array of dtype {arr.dtype}.")
    arr = arr.astype(np.float64)
    try:
        is_valid_linkage(arr, throw=True, name=name)
    except (ValueError, TypeError) as exc:
        raise ValidationError(
            f"{name} must be a valid linkage matrix (scipy.cluster.hierarchy.linkage's format): {exc}"
        ) from None
    return arr


def feature_clustering(
    background: np.ndarray, metric: str, linkage: str, noise_seed: int
) -> np.ndarray:
    """``shap.utils.hclust(background, metric=metric, linkage=linkage)``, computed the same way.

    Missing values are replaced by their column's mean; the columns get ``1e-8`` times
    normal noise (so constant columns have a correlation distance) drawn from
    ``numpy.random.RandomState(noise_seed)``, as shap draws it from numpy's global
    generator.

    Parameters
    ----------
    background : ndarray of shape (n_background, n_features)
    metric : str
        Any metric of ``scipy.spatial.distance.pdist``.
    linkage : {"single", "complete", "average"}
    noise_seed : int
        In ``[0, 2**32)``.

    Returns
    -------
    ndarray of float64 of shape (n_features - 1, 4)
    """
    import scipy.cluster.hierarchy as sch
    from scipy.spatial.distance import pdist

    data = np.array(background, dtype=np.float64)
    for j in range(data.shape[1]):
        np.nan_to_num(data[:, j], nan=np.nanmean(data[:, j]), copy=False)
    noise = np.random.RandomState(noise_seed).randn(*data.T.shape) * 1e-8
    try:
        dist = pdist(data.T + noise, metric=metric)
    except (ValueError, TypeError) as exc:
        raise ValidationError(
            f"clustering must be a distance of scipy.spatial.distance.pdist (such as "
            f"'correlation', shap's default) or a linkage matrix; got {metric!r} ({exc})."
        ) from None
    if not np.all(np.isfinite(dist)):
        raise ValidationError(
            f"clustering={metric!r} gives distances that are not finite between these "
            "background columns; use 'correlation' or 'euclidean', or pass a linkage matrix."
        )
    return getattr(sch, linkage)(dist)
