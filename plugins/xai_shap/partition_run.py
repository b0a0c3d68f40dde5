"""``algorithm="partition"`` of the ``shap`` method: the game, the hierarchy and the masker for a request.

- Images (samples with an image layout: ``image_shape`` given or recorded by the model):
  every value of the image is a player (``H x W x C`` of them), the hierarchy is shap's
  ``Image`` masker's splits (:func:`~xai_shap.hierarchy.image_tree`), and a hidden value
  takes ``mask_value`` (:mod:`xai_shap.image_masker`); there is no background. Equal to
  ``shap.PartitionExplainer(f, shap.maskers.Image(mask_value, (H, W, C)))``.
- Tables: every feature is a player, hidden features take the background rows' values
  (averaged over them), and the hierarchy is a clustering of the background's columns
  (``clustering="correlation"`` and single linkage by default, as ``shap.maskers.Partition``)
  or a linkage matrix given. Equal to
  ``shap.PartitionExplainer(f, shap.maskers.Partition(background, max_samples=len(background)))``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core import ValidationError
from xai_core.attribution.seeds import SHARED_STREAM, row_seeds
from xai_core.images import ImageLayout, sample_layout
from xai_shap.game import CountedModel
from xai_shap.hierarchy import Hierarchy, check_linkage, feature_clustering, image_tree
from xai_shap.image_masker import ImageMasker, image_masker
from xai_shap.partition import check_partition, owen_values

__all__ = ["PartitionGame", "clustering_seed", "default_mask_value", "partition_game"]


def clustering_seed(seed: int) -> int:
    """The seed of the clustering's noise for run seed ``seed`` (one for all rows), in ``[0, 2**32)``."""
    return int(row_seeds(seed, [SHARED_STREAM], 1)[0])


def default_mask_value(layout: ImageLayout) -> str:
    """``"blur(s,s)"`` with ``s`` half the image's longer side, rounded up."""
    s = max(1, -(-max(layout.height, layout.width) // 2))
    return f"blur({s},{s})"


class PartitionGame:
    """The players' hierarchy and the coalition values of one partition request.

    Attributes
    ----------
    tree : Hierarchy
    layout : ImageLayout or None
    masker : ImageMasker or None
    background : ndarray of shape (n_background, *input_shape) or None
    meta : dict
        ``mask_value`` or ``clustering``/``linkage``, ``players``.
    """

    def __init__(self, tree, layout, masker, background, meta) -> None:
        self.tree: Hierarchy = tree
        self.layout: ImageLayout | None = layout
        self.masker: ImageMasker | None = masker
        self.background: np.ndarray | None = background
        self.meta: dict[str, Any] = meta

    def hwc_index(self) -> np.ndarray:
        """The sample's flat index of each value of the (H, W, C) image, int of shape (H W C,)."""
        return self.layout.to_hwc(np.arange(self.tree.n_leaves)[None]).reshape(-1)

    def evaluator(self, model: CountedModel, X: np.ndarray):
        """``evaluate(rows, masks)`` of :func:`~xai_shap.partition.owen_values` for rows ``X``."""
        n = len(X)
        m = self.tree.n_leaves
        if self.layout is not None:
            hwc = np.asarray(self.layout.to_hwc(X), dtype=np.float64)
            hidden = self.masker.hidden_values(hwc)
            perm = self.hwc_index()

            def evaluate(rows: np.ndarray, masks: np.ndarray) -> np.ndarray:
                images = self.masker.masked(hwc, hidden, rows, masks)
                inputs = np.empty(images.shape, dtype=model.dtype)
                inputs[:, perm] = images
                return model(inputs)

            return evaluate
        flat_x = X.reshape(n, -1).astype(model.dtype, copy=False)
        bg = self.background.reshape(len(self.background), -1).astype(model.dtype, copy=False)
        nb = len(bg)

        def evaluate(rows: np.ndarray, masks: np.ndarray) -> np.ndarray:
            inputs = np.where(masks[:, None, :], flat_x[rows][:, None, :], bg[None])
            out = model(inputs.reshape(-1, m)).reshape(len(rows), nb, -1)
            total = out[:, 0].copy()
            for b in range(1, nb):  # summed in order, as shap's masked model averages
                total += out[:, b]
            return total / nb

        return evaluate

    def run(
        self,
        model: CountedModel,
        X: np.ndarray,
        *,
        max_evals: int,
        seeds: np.ndarray,
        fixed_context: int | None,
        progress: bool | None,
        outputs: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Owen values of the outputs ``outputs`` (int of shape (n, k); None: every output),
        ``values`` of shape (n, n_features, k) in the samples' flat order, and ``base`` (the
        fully masked input's outputs, every output) of shape (n, n_outputs)."""
        evaluate = self.evaluator(model, X)
        values, base = owen_values(
            evaluate,
            len(X),
            self.tree,
            max_evals=max_evals,
            seeds=seeds,
            fixed_context=fixed_context,
            progress=progress,
            n_outputs=model.n_outputs or 1,
            outputs=outputs,
        )
        if self.layout is not None:
            out = np.empty_like(values)
            out[:, self.hwc_index()] = values
            values = out
        return values, base


def partition_game(
    explainer: Any, runner: Any, X: np.ndarray, resolve_background: Any
) -> PartitionGame:
    """The game of ``explainer`` (a ShapExplainer with ``algorithm="partition"``) on ``X``;
    every check before any model call."""
    check_partition(None if explainer.max_evals == "auto" else int(explainer.max_evals))
    for name in ("groups", "patch_size"):
        if getattr(explainer, name) is not None:
            raise ValidationError(
                f"{name} does not apply to algorithm='partition', which builds its own "
                "hierarchy (every pixel value of an image, every feature of a table); got "
                f"{name}={getattr(explainer, name)!r}."
            )
    layout = partition_layout(explainer, runner, X)
    if layout is not None:
        return _image_game(explainer, X, layout)
    if explainer.mask_value is not None:
        raise ValidationError(
            "mask_value applies to images (samples with an image_shape); hidden features of a "
            f"table take the background's values. Got mask_value={explainer.mask_value!r} "
            f"for samples of shape {X.shape[1:]}."
        )
    seed = explainer.run_seed()
    feature_names = getattr(runner.model, "feature_names", None)
    background, how = resolve_background(
        explainer.background,
        explainer.n_background,
        X,
        seed,
        feature_names,
        allow_nan=bool(getattr(runner.model, "allow_nan", False)),
    )
    m = int(np.prod(X.shape[1:]))
    if m < 2:
        raise ValidationError(
            f"algorithm='partition' needs at least 2 features to build a hierarchy; got "
            f"samples of shape {X.shape[1:]}."
        )
    clustering = "correlation" if explainer.clustering is None else explainer.clustering
    linkage = "single" if explainer.linkage is None else explainer.linkage
    if isinstance(clustering, str):
        Z = feature_clustering(
            background.reshape(len(background), -1), clustering, linkage, clustering_seed(seed)
        )
        what = f"{linkage} linkage of the background's {clustering} distances"
    else:
        if explainer.linkage is not None:
            raise ValidationError(
                "linkage applies to a clustering by distance (clustering='correlation', ...); "
                f"got linkage={explainer.linkage!r} with a linkage matrix as clustering."
            )
        Z = check_linkage(clustering, m)
        what = "the linkage matrix given"
    meta = {
        "clustering": Z,
        "hierarchy": what,
        "background": how,
        "n_background": len(background),
        "players": f"{m} features",
    }
    return PartitionGame(Hierarchy.from_linkage(Z), None, None, background, meta)


def partition_layout(explainer: Any, runner: Any, X: np.ndarray) -> ImageLayout | None:
    """The image layout of the samples (``image_shape``, or the model's recorded one), or None."""
    image_shape = explainer.image_shape
    if image_shape is None:
        image_shape = getattr(runner.model, "image_shape", None)
    return sample_layout(X.shape[1:], image_shape)


def _image_game(explainer: Any, X: np.ndarray, layout: ImageLayout) -> PartitionGame:
    for name in ("background", "n_background", "clustering", "linkage"):
        if getattr(explainer, name) is not None:
            value = getattr(explainer, name)
            shown = f"an array of shape {np.shape(value)}" if np.ndim(value) else repr(value)
            raise ValidationError(
                f"{name} does not apply to algorithm='partition' on images: hidden pixel "
                "values take mask_value ('blur(k,k)', a number, 'inpaint_telea', 'inpaint_ns') "
                f"and the hierarchy is shap's image splits; got {name}={shown}."
            )
    hwc = (layout.height, layout.width, layout.channels)
    m = int(np.prod(hwc))
    if m < 2:
        raise ValidationError(f"algorithm='partition' needs images of 2 or more values; got {hwc}.")
    mask_value = explainer.mask_value
    if mask_value is None:
        mask_value = default_mask_value(layout)
    elif not isinstance(mask_value, (str, int, float, np.integer, np.floating)):
        arr = np.asarray(mask_value)
        if arr.dtype.kind in "fiu" and arr.size == m:
            mask_value = layout.to_hwc(arr.reshape(1, -1))[0]  # the sample's layout -> (H, W, C)
    masker = image_masker(mask_value, hwc, np.asarray(layout.to_hwc(X)))
    meta = {
        "mask_value": masker.description,
        "hierarchy": f"shap's image splits of {hwc[0]}x{hwc[1]}x{hwc[2]} (H x W x C)",
        "background": f"none: hidden values take {masker.description}",
        "n_background": 0,
        "players": f"{m} values of {layout.height}x{layout.width} images",
    }
    return PartitionGame(Hierarchy.from_linkage(image_tree(hwc)), layout, masker, None, meta)
