"""ShapExplainer: Shapley-value attributions, the ``shap`` method of :func:`xai_core.explain`."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from xai_core import CapabilityError, Cost, Explainer, Explanation, ModelRunner, ValidationError
from xai_core.attribution.options import Alias, Bool, Choice, ImageShape, Int, TypeOf
from xai_core.series import recorded_layout
from xai_shap import algorithms as alg
from xai_shap.background import resolve_background
from xai_shap.game import CountedModel
from xai_shap.groups import FeatureGroups, resolve_groups, series_windows
from xai_shap.hierarchy import LINKAGES

__all__ = ["ShapExplainer"]


class ShapExplainer(Explainer):
    """Shapley values of each feature (or feature group) for each row's target output.

    Interventional SHAP: the value of a coalition ``S`` of features for a row ``x`` is the
    mean over the background rows ``b`` of ``f(x_S, b_rest)``; each feature's attribution is
    its Shapley value in that game, so ``base_value + sum(values) = f(x)[target]``, where
    ``base_value`` is the mean output over the background.

    Parameters
    ----------
    algorithm : {"auto", "exact", "permutation", "kernel", "tree", "linear", "partition"}, default="auto"
        ``exact``: all ``2**M`` coalitions (shap's Exact explainer), exact to rounding.
        ``permutation``: antithetic permutation sampling (shap's Permutation explainer).
        ``kernel``: Kernel SHAP's estimator, vectorised here (shap's KernelExplainer's
        sampling and weights, one batched model call per chunk, one constrained solve).
        ``tree``: shap's TreeExplainer, interventional, on a tree model: scikit-learn's
        trees, forests and gradient boosting, XGBoost, LightGBM and CatBoost (their
        scikit-learn classes). A classifier's probabilities are explained for forests and
        for boosted models of two classes; shap's copy of the trees is checked against
        the model on the background and ``X`` first, and a model it does not reproduce
        (a boosted model of more classes, missing values it routes differently) is refused
        here and left to ``exact``/``permutation`` by ``auto``.
        ``linear``: shap's LinearExplainer on a scikit-learn linear model (a classifier's
        ``decision_function``, see ``meta["output_space"]``).
        ``partition``: Owen values over a hierarchy of the players, as shap's Partition
        explainer (:mod:`xai_shap.partition`): on images every pixel value is a player,
        hidden ones take ``mask_value``, over shap's image splits; on tables the
        hierarchy clusters the background's columns (``clustering``).
        ``auto``: tree for tree models shap reproduces, linear for linear regressors, exact up to 10
        features (or groups), permutation above; ``meta["algorithm"]`` records the choice.
    background : array-like of shape (n_rows, *input_shape), optional
        Reference rows the game averages over (training rows or a sample of them). By
        default a k-means summary of ``X`` itself, with an :class:`xai_core.XaiWarning`.
    n_background : int, optional
        Summarise the background (or ``X``) into this many k-means centres (seeded).
        Default: the background as given; 10 centres of ``X`` when none is given.
    max_evals : int or "auto", default="auto"
        Alias ``nsamples`` (shap's KernelExplainer spelling). Budget per row: for ``kernel`` the coalitions (default ``2*M + 2048``, as shap), for
        ``permutation`` the model evaluations (default 500 as shap, at least two antithetic
        permutations: ``2 * (2*M + 1)``), for ``exact`` a cap on ``2**M`` (default ``2**16``), for
        ``partition`` the masked inputs, two of them ``f(x)`` and the fully masked input
        (default 500, as shap's). Each coalition is evaluated against every background row.
    seed : int or None, default=0
        Seeds the sampling (kernel, permutation) and the k-means summary; same seed, same
        values. Row ``r`` draws its coalitions (kernel) or permutations (permutation) from
        its own stream ``[seed, r]``, so values do not depend on the other rows or on
        chunking. ``None`` draws a seed, recorded in ``meta["seed"]``.
    patch_size : int or (int, int), optional
        Images (samples of shape (H, W), (H, W, C), (C, H, W), or flat with ``image_shape``)
        are explained by square patches of this side (default 4: 49 patches of a 28 x 28 image).
    image_shape : tuple of int, optional
        ``(H, W)``, ``(H, W, C)`` or ``(C, H, W)`` (C <= 4) of flattened images, e.g. ``(28, 28)``.
    groups : array-like of int of shape input_shape, optional
        Any grouping of the features (superpixels from a segmenter, blocks of one-hot
        columns): each distinct label is one player. Without it, a network reading series
        (``series_order``) is explained by ten windows of consecutive steps, each with
        every channel of its steps.
    all_classes : bool, default=False
        Also explain every output: ``meta["all_values"]`` of shape (n_samples, n_outputs,
        *input_shape) and ``meta["all_base_values"]`` of shape (n_samples, n_outputs).
    progress : bool or None, default=None
        Progress bars; ``None`` shows them for long runs only.
    mask_value : str, float or array-like, optional
        ``partition`` on images: what a hidden value becomes, shap's ``Image`` masker's
        ``mask_value``: ``"blur(kw,kh)"`` (a box blur; default ``"blur(s,s)"``, ``s`` half
        the longer side), a number, an image of the samples' shape, ``"inpaint_telea"``
        or ``"inpaint_ns"`` (OpenCV, the ``inpaint`` extra).
    clustering : str or array-like of shape (n_features - 1, 4), optional
        ``partition`` on tables: a distance of ``scipy.spatial.distance.pdist`` between
        the background's columns (default ``"correlation"``, shap's ``Partition``
        masker's), or a linkage matrix (``scipy.cluster.hierarchy.linkage``'s format).
    linkage : {"single", "complete", "average"}, optional
        ``partition`` on tables, with a distance: the linkage (default ``"single"``, shap's).
    fixed_context : {None, 0, 1}, default=None
        ``partition``: shap's ``fixed_context``; 0 or 1 walks each node in one context
        only (the other child hidden or shown), fewer evaluations, not the Owen values.

    Notes
    -----
    Grouped features (patches, groups) are single players; each group's value is spread
    evenly over its features (value / group size), so ``values`` keeps the input shape,
    each group's features sum to its Shapley value and ``meta["group_values"]`` holds the
    values per group, of shape (n_samples, n_groups).

    ``meta``: ``algorithm``, ``n_evals`` (model rows evaluated through the runner),
    ``additivity_error`` of shape (n_samples,) (``|base + sum(values) - f(x)[target]|``),
    ``seed``, ``seconds``, ``max_evals``, ``background`` (how it was chosen),
    ``n_background``, ``players`` and ``output_space``.
    """

    name: ClassVar[str] = "shap"
    requires: ClassVar[frozenset[str]] = frozenset({"predict"})
    #: Masking hands the rows' values to the model and never computes with them, so rows
    #: with missing values are explained for models that handle them.
    handles_missing: ClassVar[bool] = True
    #: method="auto" for black boxes; the first method compare_methods compares
    default_for: ClassVar[Mapping[str, int]] = {"black_box": 0, "compare": 0}
    constraints: ClassVar[dict] = {
        "algorithm": Choice(alg.ALGORITHMS),
        "n_background": Int(1, allow_none=True),
        "max_evals": Int(1, also=("auto",)),
        "image_shape": ImageShape(),
        "all_classes": Bool(),
        "patch_size": TypeOf((int, tuple, list), "an int or (int, int)"),
        "mask_value": TypeOf(
            (str, int, float, np.integer, np.floating, np.ndarray, list, tuple),
            "'blur(kw,kh)', 'inpaint_telea', 'inpaint_ns', a number or an image",
        ),
        "clustering": TypeOf(
            (str, np.ndarray, list, tuple), "a pdist distance or a linkage matrix"
        ),
        "linkage": Choice(LINKAGES, allow_none=True),
        "fixed_context": Int(0, allow_none=True, maximum=1),
    }
    aliases: ClassVar[dict] = {"nsamples": Alias("max_evals", anchor="shap")}

    def __init__(
        self,
        algorithm: str = "auto",
        background: Any = None,
        n_background: int | None = None,
        max_evals: int | str = "auto",
        seed: int | None = 0,
        patch_size: int | tuple[int, int] | None = None,
        image_shape: tuple[int, ...] | None = None,
        groups: Any = None,
        all_classes: bool = False,
        progress: bool | None = None,
        mask_value: Any = None,
        clustering: Any = None,
        linkage: str | None = None,
        fixed_context: int | None = None,
    ) -> None:
        self.algorithm = algorithm
        self.background = background
        self.n_background = n_background
        self.max_evals = max_evals
        self.seed = seed
        self.patch_size = patch_size
        self.image_shape = image_shape
        self.groups = groups
        self.all_classes = all_classes
        self.progress = progress
        self.mask_value = mask_value
        self.clustering = clustering
        self.linkage = linkage
        self.fixed_context = fixed_context

    def players(self, runner: ModelRunner, X: np.ndarray) -> FeatureGroups:
        """The players of the game on rows ``X``: features, the given groups, image patches
        or windows of a series' steps.

        Images are recognised from ``image_shape`` or, without ``groups``, from the shape the
        model records (a CNN records its images); series from the order a network reading
        series records (``series_order``), unless ``groups``, ``image_shape`` or
        ``patch_size`` is given.
        """
        image_shape = self.image_shape
        if image_shape is None and self.groups is None:
            image_shape = getattr(runner.model, "image_shape", None)
        order = getattr(runner.model, "series_order", None)
        given = (self.groups, image_shape, self.patch_size)
        if isinstance(order, str) and all(v is None for v in given):
            return series_windows(recorded_layout(X.shape[1:], order))
        return resolve_groups(
            X.shape[1:], groups=self.groups, patch_size=self.patch_size, image_shape=image_shape
        )

    @classmethod
    def explain_texts(cls, model: Any, texts: Any, **options: Any) -> Explanation:
        """shap's Partition explainer with its Text masker: :func:`xai_shap.text.explain_shap_texts`."""
        from xai_shap.text import explain_shap_texts

        return explain_shap_texts(model, texts, **options)

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """Shapley values of ``runner``'s output ``target`` for each row of ``X``.

        Parameters
        ----------
        runner : ModelRunner
        X : ndarray of shape (n_samples, *input_shape)
        target : ndarray of int64 of shape (n_samples,)

        Returns
        -------
        Explanation
            ``values`` of shape (n_samples, *input_shape), ``base_values`` of shape (n_samples,).
        """
        start = time.perf_counter()
        if self.algorithm == "partition":
            return self._explain_partition(runner, X, target, start)
        self._refuse_partition_options()
        # -- every check before any model evaluation (options: by the core, from constraints)
        seed = self.run_seed()
        max_evals = None if self.max_evals == "auto" else int(self.max_evals)
        n_background = self.n_background
        all_classes = bool(self.all_classes)
        progress = self.progress
        groups = self.players(runner, X)
        feature_names = getattr(runner.model, "feature_names", None)
        background, bg_desc = resolve_background(
            self.background,
            n_background,
            X,
            seed,
            feature_names,
            allow_nan=bool(getattr(runner.model, "allow_nan", False)),
        )
        algorithm, helper, budget = self._plan(runner, groups, background, max_evals, X)

        # -- the work -------------------------------------------------------------------------
        model = CountedModel(runner, X.shape[1:])
        fx = alg.tree_predictions(helper, runner.model, X) if algorithm == "tree" else None
        if fx is None:
            fx = model(X.reshape(len(X), -1))
        n_outputs = fx.shape[1]
        output_space = "model output"
        if algorithm == "exact":
            values, base = alg.run_exact(model, X, background, groups, progress=progress)
        elif algorithm == "permutation":
            values, base = alg.run_permutation(
                model,
                X,
                background,
                groups,
                max_evals=budget,
                seeds=self.row_seeds(len(X)),
                progress=progress,
            )
        elif algorithm == "kernel":
            wanted = np.tile(np.arange(n_outputs), (len(X), 1)) if all_classes else target[:, None]
            values, base = alg.run_kernel(
                model,
                X,
                background,
                groups,
                fx=fx,
                outputs=wanted,
                n_samples=budget,
                rngs=self.row_rngs(len(X)),
                progress=progress,
            )
            if not all_classes:  # scatter the one explained output into its column
                full_v = np.zeros(values.shape[:2] + (n_outputs,))
                full_b = np.zeros((len(X), n_outputs))
                full_v[np.arange(len(X)), :, target] = values[:, :, 0]
                full_b[np.arange(len(X)), target] = base[:, 0]
                values, base = full_v, full_b
        elif algorithm == "tree":
            output_space = helper[1]
            values, base = alg.run_tree(helper, X, n_outputs)
        else:
            explainer, output_space = helper
            values, base = alg.run_linear(explainer, X, n_outputs)
            if output_space == "decision_function":
                fx = self._margins(runner, X, n_outputs)

        rows = np.arange(len(X))
        group_values = values[rows, :, target]  # (n, n_groups)
        base_values = base[rows, target]
        reached = base_values + group_values.sum(axis=1)
        additivity = np.abs(reached - fx[rows, target])
        meta: dict[str, Any] = {
            "algorithm": algorithm,
            "n_evals": model.n_rows,
            "additivity_error": additivity,
            "seed": seed,
            "max_evals": budget,
            "background": bg_desc,
            "n_background": len(background),
            "players": groups.description,
            "output_space": output_space,
        }
        if not groups.is_identity:
            meta["group_values"] = group_values
            meta["groups"] = groups.labels.reshape(X.shape[1:])
        if groups.image_shape is not None:
            meta["image_shape"] = groups.image_shape  # reports draw heatmaps of these images
        if all_classes:
            spread = groups.spread(values)  # (n, n_features, n_outputs)
            meta["all_values"] = np.moveaxis(spread, 2, 1).reshape(
                (len(X), n_outputs, *X.shape[1:])
            )
            meta["all_base_values"] = base
        meta["seconds"] = time.perf_counter() - start
        return Explanation(
            values=groups.spread(group_values).reshape(X.shape),
            base_values=base_values,
            target=target,
            meta=meta,
        )

    def estimate_cost(self, runner: ModelRunner, X: np.ndarray) -> Cost | None:
        """Model rows and peak memory of this request (:mod:`xai_shap.cost`), before any work."""
        from xai_shap.cost import shap_cost

        return shap_cost(self, runner, X)

    def prepare(self, runner: ModelRunner, X: np.ndarray) -> dict[str, Any]:
        """The background summarised from all rows, when none is given (see :class:`Explainer`)."""
        if self.background is not None:
            return {}
        if self.algorithm == "partition":
            from xai_shap.partition_run import partition_layout

            if partition_layout(self, runner, X) is not None:
                return {}  # images: hidden pixels take mask_value, no background
        feature_names = getattr(runner.model, "feature_names", None)
        background, _ = resolve_background(
            None,
            self.n_background,
            X,
            self.run_seed(),
            feature_names,
            allow_nan=bool(getattr(runner.model, "allow_nan", False)),
        )
        return {"background": background, "n_background": None}

    # -- helpers ----------------------------------------------------------------------------------
    def _refuse_partition_options(self) -> None:
        for name in ("mask_value", "clustering", "linkage", "fixed_context"):
            if getattr(self, name) is not None:
                raise ValidationError(
                    f"{name} applies to algorithm='partition'; got {name}="
                    f"{getattr(self, name)!r} with algorithm={self.algorithm!r}."
                )

    def _explain_partition(
        self, runner: ModelRunner, X: np.ndarray, target: np.ndarray, start: float
    ) -> Explanation:
        """Partition SHAP (:mod:`xai_shap.partition_run`): every check, then the walk."""
        from xai_shap.partition_run import partition_game

        seed = self.run_seed()
        budget = alg.check_partition(None if self.max_evals == "auto" else int(self.max_evals))
        game = partition_game(self, runner, X, resolve_background)
        model = CountedModel(runner, X.shape[1:])
        fx = model(X.reshape(len(X), -1))
        values, base = game.run(
            model,
            X,
            max_evals=budget,
            seeds=self.row_seeds(len(X)),
            fixed_context=self.fixed_context,
            progress=self.progress,
            outputs=None if self.all_classes else target[:, None],
        )
        rows = np.arange(len(X))
        # only the targets' values are carried through the walk unless every class is asked for
        chosen = values[rows, :, target] if self.all_classes else values[:, :, 0]
        base_values = base[rows, target]
        meta: dict[str, Any] = {
            "algorithm": "partition",
            "n_evals": model.n_rows,
            "additivity_error": np.abs(base_values + chosen.sum(axis=1) - fx[rows, target]),
            "seed": seed,
            "max_evals": budget,
            "fixed_context": self.fixed_context,
            "output_space": "model output",
            **game.meta,
        }
        if game.layout is not None:
            meta["image_shape"] = game.layout.shape  # reports draw heatmaps of these images
        if self.all_classes:
            meta["all_values"] = np.moveaxis(values, 2, 1).reshape(
                (len(X), values.shape[2], *X.shape[1:])
            )
            meta["all_base_values"] = base
        meta["seconds"] = time.perf_counter() - start
        return Explanation(
            values=chosen.reshape(X.shape), base_values=base_values, target=target, meta=meta
        )

    def _plan(self, runner: ModelRunner, groups, background: np.ndarray, max_evals: int | None, X):
        """The algorithm to run, its shap helper (tree, linear) and its budget; raises before
        the explanation's work (a tree helper is first checked on the background and ``X``)."""
        algorithm = self.algorithm
        m = groups.n_groups
        if algorithm == "auto":
            algorithm, helper = self._auto(runner, groups, background, X)
            if helper is not None:
                return algorithm, helper, None
        if algorithm in ("tree", "linear") and not groups.is_identity:
            raise ValidationError(
                f"algorithm={algorithm!r} attributes single features; groups and image patches "
                "need algorithm='exact', 'permutation' or 'kernel'."
            )
        if algorithm == "tree":
            return algorithm, alg.tree_explainer(runner, background, X), None
        if algorithm == "linear":
            return algorithm, alg.linear_explainer(runner.model, background), None
        if algorithm == "exact":
            return algorithm, None, alg.check_exact(m, max_evals)
        if algorithm == "permutation":
            return algorithm, None, alg.check_permutation(m, max_evals)
        return algorithm, None, alg.check_kernel(m, max_evals)

    @staticmethod
    def _auto(runner: ModelRunner, groups, background: np.ndarray, X) -> tuple[str, Any]:
        """tree for tree models, linear for linear regressors, else exact or permutation by size."""
        estimator, method = alg.estimator_kind(runner.model)
        if estimator is not None and groups.is_identity:
            from sklearn.base import is_regressor

            if alg.is_tree_model(estimator):
                try:
                    return "tree", alg.tree_explainer(runner, background, X)
                except CapabilityError:  # not a tree model shap supports: fall through
                    pass
            if is_regressor(estimator) and method == "predict" and hasattr(estimator, "coef_"):
                return "linear", alg.linear_explainer(runner.model, background)
        if groups.n_groups <= alg.AUTO_EXACT_MAX_FEATURES:
            return "exact", None
        return "permutation", None

    @staticmethod
    def _margins(runner: ModelRunner, X: np.ndarray, n_outputs: int) -> np.ndarray:
        """A linear classifier's decision_function on ``X``, one column per class."""
        estimator, _ = alg.estimator_kind(runner.model)
        flat = X.reshape(len(X), -1)
        names = getattr(runner.model, "feature_names", None)
        if names is not None:
            import pandas as pd

            flat = pd.DataFrame(flat, columns=list(names))
        margin = np.asarray(estimator.decision_function(flat), dtype=np.float64)
        if margin.ndim == 1:
            margin = np.stack([-margin, margin], axis=1) if n_outputs == 2 else margin[:, None]
        return margin
