"""LimeExplainer: lime's local surrogate explanations for tables and small images."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from lime.discretize import BaseDiscretizer
from tqdm.auto import tqdm

from xai_core import (
    Explainer,
    Explanation,
    ModelRunner,
    ShapeError,
    ValidationError,
    XaiWarning,
)
from xai_lime._checks import check_bool, check_choice, check_float, check_int, check_matrix
from xai_lime.image import (
    cosine_distances_to_all_on,
    image_layout_of,
    perturb,
    segment,
    segmentation_function,
)
from xai_lime.stability import pairwise_stability
from xai_lime.surrogate import FEATURE_SELECTIONS, SurrogateFit, fit_surrogates
from xai_lime.tabular import DISCRETIZERS, TabularSampler

__all__ = ["LimeExplainer"]

MODES = ("auto", "tabular", "image")
SOLVERS = ("batched", "lime")
#: Perturbed values held at once (rows x samples x features); bounds memory per block.
_BLOCK_ELEMENTS = 2**22


class _Run:
    """The surrogates of every row under one seed."""

    def __init__(self, n_rows: int) -> None:
        self.coef: list[np.ndarray | None] = [None] * n_rows
        self.intercept = np.zeros(n_rows)
        self.score = np.zeros(n_rows)
        self.local_pred = np.zeros(n_rows)
        self.prediction = np.zeros(n_rows)
        self.n_selected = 0

    def store(self, rows: np.ndarray, fit: SurrogateFit, prediction: np.ndarray) -> None:
        """Keep the fits of ``rows`` and the model's output at each row."""
        for j, r in enumerate(rows):
            self.coef[r] = fit.coef[j]
        self.intercept[rows] = fit.intercept
        self.score[rows] = fit.score
        self.local_pred[rows] = fit.local_pred
        self.prediction[rows] = prediction
        self.n_selected = max(self.n_selected, fit.n_selected)


class LimeExplainer(Explainer):
    """LIME: a weighted linear surrogate fitted on random perturbations of each row.

    Tabular rows are perturbed by lime's ``LimeTabularExplainer`` sampling scheme,
    images by switching superpixels off as ``LimeImageExplainer`` does; both are drawn
    in whole blocks and the model sees them in large batches through the runner. The
    surrogate is lime's (``LimeBase``): kernel-weighted ridge regression after feature
    selection.

    Parameters
    ----------
    mode : {"auto", "tabular", "image"}, default="auto"
        ``"auto"``: images when samples have two or more dimensions or ``image_shape``
        is given, tabular otherwise.
    n_samples : int, optional
        Perturbed samples per row (sample 0 is the row itself); lime's defaults, 5000
        for tables and 1000 for images.
    n_features : int, optional
        Most features (superpixels) in each surrogate, lime's ``num_features``; default
        10 for tables and every superpixel for images.
    kernel_width : float, optional
        Width of lime's kernel ``sqrt(exp(-d**2 / width**2))``; default
        ``0.75 * sqrt(n_features)`` for tables (euclidean distances) and 0.25 for images
        (cosine distances).
    feature_selection : {"auto", "forward_selection", "highest_weights", "lasso_path", "none"}
        lime's feature selection; ``"auto"`` is forward selection for at most 6
        features, highest weights otherwise.
    discretize_continuous : bool, default=True
        Tables: explain continuous features through bins ("x in this quartile") as lime
        does by default, or through their standardised values.
    discretizer : {"quartile", "decile", "entropy"} or lime BaseDiscretizer
        Tables: the bins, with ``discretize_continuous``.
    categorical_features : sequence of int, optional
        Tables: columns holding categories (drawn from their training frequencies).
    training_data : array-like of shape (n_train, n_features), optional
        Tables: the data lime takes its statistics from (bins, means, standard deviations,
        frequencies), usually the training set. Default: ``X`` itself, with a warning.
        The statistics are computed in the dtype the model sees, so a row of the
        training data passed as ``X`` falls in the same bins.
    training_labels : array-like of shape (n_train,), optional
        Tables: labels of ``training_data``, needed by the ``"entropy"`` discretizer.
    sample_around_instance : bool, default=False
        Tables without discretisation: centre draws on the row rather than the mean.
    image_shape : tuple of int, optional
        Images given as flat samples: ``(height, width)``, ``(height, width, channels)``
        or ``(channels, height, width)``, e.g. ``(28, 28)`` for 784 pixels.
    segmentation : {"slic", "quickshift", "felzenszwalb", "grid"} or callable
        Images: superpixels; see :mod:`xai_lime.image`. A callable maps an image of shape
        (height, width, channels) to integer labels of shape (height, width).
    segmentation_params : dict, optional
        Images: keyword arguments of the scikit-image function, or ``{"size": s}`` for
        the grid's s-by-s cells.
    hide_color : float, optional
        Images: value of a switched-off superpixel; default its mean colour (lime's).
    solver : {"batched", "lime"}, default="batched"
        ``"batched"`` solves the surrogates of many rows at once in closed form (equal to
        ``LimeBase``'s up to rounding, for highest-weights or no feature selection);
        ``"lime"`` calls ``LimeBase.explain_instance_with_data`` row by row.
    seed : int, default=0
        Row ``i``'s neighbourhood comes from ``numpy.random.default_rng([seed, i])``;
        quickshift and lime's discretizers get ``seed`` too. Global random state is never
        read.
    stability_seeds : int, default=3
        Extra runs with seeds ``seed + 1 ... seed + stability_seeds`` from which the
        stability figures are computed; 0 skips them (and costs nothing extra).
    top_k : int, default=5
        Size of the top-feature sets compared by the stability figure.
    progress : bool, default=True
        Show a progress bar.

    Notes
    -----
    ``values`` has the shape of ``X``. For tables, ``values[i, j]`` is the surrogate's
    weight of feature ``j`` (of its "same bin as row i" indicator with discretisation,
    of its standardised value without); features not selected get 0. For images every
    pixel (and every channel of it) gets the weight of its superpixel; the superpixels
    are in ``meta["segments"]``. ``base_values`` is the surrogate's intercept.

    ``meta`` holds per row ``score`` (the surrogate's weighted R²), ``local_pred`` (the
    surrogate at the row), ``intercept``, ``prediction`` (the model at the row),
    ``stability_jaccard`` and ``stability_spearman``; and ``n_samples``, ``seed``,
    ``kernel_width``, ``n_features``, ``feature_selection``, ``stability`` (means over
    rows, seeds and ``top_k``) and ``timings`` (seconds in sampling, model, surrogate).
    """

    name: ClassVar[str] = "lime"
    requires: ClassVar[frozenset[str]] = frozenset({"predict"})

    def __init__(
        self,
        *,
        mode: str = "auto",
        n_samples: int | None = None,
        n_features: int | None = None,
        kernel_width: float | None = None,
        feature_selection: str = "auto",
        discretize_continuous: bool = True,
        discretizer: str | BaseDiscretizer = "quartile",
        categorical_features: Sequence[int] | None = None,
        training_data: Any = None,
        training_labels: Any = None,
        sample_around_instance: bool = False,
        image_shape: Sequence[int] | None = None,
        segmentation: str | Callable[[np.ndarray], np.ndarray] = "slic",
        segmentation_params: Mapping[str, Any] | None = None,
        hide_color: float | None = None,
        solver: str = "batched",
        seed: int = 0,
        stability_seeds: int = 3,
        top_k: int = 5,
        progress: bool = True,
    ) -> None:
        self.mode = mode
        self.n_samples = n_samples
        self.n_features = n_features
        self.kernel_width = kernel_width
        self.feature_selection = feature_selection
        self.discretize_continuous = discretize_continuous
        self.discretizer = discretizer
        self.categorical_features = categorical_features
        self.training_data = training_data
        self.training_labels = training_labels
        self.sample_around_instance = sample_around_instance
        self.image_shape = image_shape
        self.segmentation = segmentation
        self.segmentation_params = segmentation_params
        self.hide_color = hide_color
        self.solver = solver
        self.seed = seed
        self.stability_seeds = stability_seeds
        self.top_k = top_k
        self.progress = progress

    # -- checks -----------------------------------------------------------------------
    def _check_common(self) -> None:
        check_choice(self.mode, "mode", MODES)
        check_int(self.n_samples, "n_samples", 2, allow_none=True)
        check_int(self.n_features, "n_features", 1, allow_none=True)
        check_float(self.kernel_width, "kernel_width", allow_none=True)
        check_choice(self.feature_selection, "feature_selection", FEATURE_SELECTIONS)
        check_choice(self.solver, "solver", SOLVERS)
        check_int(self.seed, "seed", 0)
        check_int(self.stability_seeds, "stability_seeds", 0)
        check_int(self.top_k, "top_k", 1)
        check_bool(self.progress, "progress")
        check_bool(self.discretize_continuous, "discretize_continuous")
        check_bool(self.sample_around_instance, "sample_around_instance")
        if not isinstance(self.discretizer, BaseDiscretizer):
            check_choice(self.discretizer, "discretizer", DISCRETIZERS)
        if self.hide_color is not None and not (
            isinstance(self.hide_color, (int, float, np.integer, np.floating))
            and not isinstance(self.hide_color, bool)
            and np.isfinite(self.hide_color)
        ):
            raise ValidationError(
                f"hide_color must be a finite number or None; got {self.hide_color!r}."
            )
        if self.image_shape is not None:
            shape = self.image_shape
            if (
                isinstance(shape, (str, bytes))
                or not hasattr(shape, "__len__")
                or len(shape) not in (2, 3)
                or any(
                    isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1
                    for d in shape
                )
            ):
                raise ValidationError(
                    "image_shape must be (height, width), (height, width, channels) or "
                    f"(channels, height, width) of positive integers; got {shape!r}."
                )

    def _resolve_mode(self, X: np.ndarray, model_shape: Any = None) -> str:
        if self.mode != "auto":
            return self.mode
        known = self.image_shape is not None or model_shape is not None
        return "image" if X.ndim > 2 or known else "tabular"

    def _model_image_shape(self, runner: ModelRunner) -> Any:
        """The image shape the model records (a CNN's input), unless tabular data was given."""
        if self.image_shape is not None or self.training_data is not None:
            return None
        shape = getattr(runner.model, "image_shape", None)
        return None if shape is None else tuple(int(d) for d in shape)

    def _categorical(self, n_columns: int) -> list[int]:
        cats = self.categorical_features
        if cats is None:
            return []
        if isinstance(cats, (str, bytes)) or not hasattr(cats, "__iter__"):
            raise ValidationError(
                f"categorical_features must be a sequence of column indices; got {cats!r}."
            )
        out = []
        for c in cats:
            if (
                isinstance(c, bool)
                or not isinstance(c, (int, np.integer))
                or not 0 <= c < n_columns
            ):
                raise ValidationError(
                    f"categorical_features must hold column indices in [0, {n_columns}); got {c!r}."
                )
            out.append(int(c))
        if len(set(out)) != len(out):
            raise ValidationError(
                f"categorical_features must not repeat a column; got {list(cats)}."
            )
        return out

    # -- explain ----------------------------------------------------------------------
    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """LIME weights of ``runner``'s output ``target`` of each row of ``X``.

        Parameters
        ----------
        runner : ModelRunner
            The model on its backend; perturbed samples go through ``runner.predict``.
        X : ndarray of shape (n_samples, *input_shape)
            Validated rows.
        target : ndarray of int64 of shape (n_samples,)
            Output explained per row.

        Returns
        -------
        Explanation
            ``values`` of the shape of ``X``; see the class notes for ``meta``.
        """
        X = np.asarray(X)
        target = np.asarray(target, dtype=np.int64)
        self._check_common()
        mode = self._resolve_mode(X, self._model_image_shape(runner))
        if mode == "tabular":
            return self._explain_tabular(runner, X, target)
        return self._explain_image(runner, X, target)

    def _seeds(self) -> list[int]:
        return [int(self.seed) + s for s in range(int(self.stability_seeds) + 1)]

    def _run_all(
        self,
        n_rows: int,
        per_block: int,
        process: Callable[[int, np.ndarray], Iterator[tuple[np.ndarray, SurrogateFit, np.ndarray]]],
        unit: str,
    ) -> list[_Run]:
        """Explain every row under every seed, a block of rows at a time.

        ``process(seed, block)`` yields ``(rows, fit, model output at the rows)``.
        """
        seeds = self._seeds()
        runs = []
        with tqdm(
            total=n_rows * len(seeds), desc="lime", unit=unit, disable=not self.progress
        ) as bar:
            for run_seed in seeds:
                run = _Run(n_rows)
                for start in range(0, n_rows, per_block):
                    block = np.arange(start, min(start + per_block, n_rows))
                    for rows, fit, prediction in process(run_seed, block):
                        run.store(rows, fit, prediction)
                    bar.update(len(block))
                runs.append(run)
        return runs

    # -- tabular ----------------------------------------------------------------------
    def _training(self, rows: np.ndarray, dtype: Any) -> np.ndarray:
        """``training_data`` checked (or the rows, with a warning), in the model's dtype."""
        if self.training_data is None:
            warnings.warn(
                f"training_data not given: LIME's sampling statistics come from the {len(rows)} "
                "explained row(s) themselves. Pass training_data=<the training set> for a "
                "meaningful neighbourhood.",
                XaiWarning,
                stacklevel=5,
            )
            training = rows
        else:
            training = check_matrix(self.training_data, "training_data", rows.shape[1])
        # in the model's dtype, so rows of the training data fall in the same bins in X
        return training.astype(dtype).astype(np.float64)

    def _training_labels(self, n_train: int) -> np.ndarray | None:
        if self.training_labels is None:
            if self.discretize_continuous and self.discretizer == "entropy":
                raise ValidationError("the 'entropy' discretizer needs training_labels.")
            return None
        labels = np.asarray(self.training_labels)
        if labels.shape != (n_train,):
            raise ShapeError(
                f"training_labels must have shape ({n_train},), one per row of "
                f"training_data; got shape {labels.shape}."
            )
        return labels

    def _explain_tabular(
        self, runner: ModelRunner, X: np.ndarray, target: np.ndarray
    ) -> Explanation:
        if self.image_shape is not None:
            raise ValidationError("image_shape applies to image mode; got it in tabular mode.")
        n_rows, n_cols = len(X), int(np.prod(X.shape[1:]))
        rows = X.reshape(n_rows, n_cols).astype(np.float64)
        categorical = self._categorical(n_cols)
        training = self._training(rows, X.dtype)
        labels = self._training_labels(len(training))
        n_samples = int(self.n_samples) if self.n_samples is not None else 5000
        n_features = int(self.n_features) if self.n_features is not None else 10
        kernel_width = (
            float(self.kernel_width) if self.kernel_width is not None else 0.75 * np.sqrt(n_cols)
        )
        sampler = TabularSampler(
            training,
            categorical_features=categorical,
            discretize_continuous=bool(self.discretize_continuous),
            discretizer=self.discretizer,
            training_labels=labels,
            sample_around_instance=bool(self.sample_around_instance),
            random_state=np.random.RandomState(int(self.seed)),
        )
        timings = {"sampling": 0.0, "model": 0.0, "surrogate": 0.0}

        def process(run_seed: int, block: np.ndarray):
            t0 = time.perf_counter()
            rngs = [np.random.default_rng([run_seed, int(i)]) for i in block]
            interp, inverse, distances = sampler.sample(rows[block], n_samples, rngs, X.dtype)
            t1 = time.perf_counter()
            out = _outputs(runner, inverse.reshape(-1, *X.shape[1:]), block, target, n_samples)
            del inverse
            t2 = time.perf_counter()
            fit = fit_surrogates(
                interp,
                out,
                distances,
                kernel_width=kernel_width,
                n_features=n_features,
                feature_selection=self.feature_selection,
                solver=self.solver,
                random_state=np.random.RandomState(int(self.seed)),
            )
            timings["sampling"] += t1 - t0
            timings["model"] += t2 - t1
            timings["surrogate"] += time.perf_counter() - t2
            yield block, fit, out[:, 0]

        per_block = max(1, _BLOCK_ELEMENTS // (n_samples * n_cols))
        runs = self._run_all(n_rows, per_block, process, "row")
        values = np.stack(runs[0].coef).reshape(X.shape)
        meta = self._meta(runs, n_samples, kernel_width, "tabular", timings)
        meta["training_rows"] = len(training)
        meta.update(sampler.describe())
        return Explanation(values=values, base_values=runs[0].intercept, target=target, meta=meta)

    # -- images -----------------------------------------------------------------------
    def _explain_image(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        image_shape = self.image_shape
        if image_shape is None:
            image_shape = self._model_image_shape(runner)
        layout = image_layout_of(X.shape[1:], image_shape)
        for name in ("training_data", "training_labels", "categorical_features"):
            if getattr(self, name) is not None:
                raise ValidationError(f"{name} applies to tabular mode; got it in image mode.")
        seg_fn = segmentation_function(self.segmentation, self.segmentation_params)
        n_rows = len(X)
        n_samples = int(self.n_samples) if self.n_samples is not None else 1000
        kernel_width = float(self.kernel_width) if self.kernel_width is not None else 0.25
        images = layout.to_hwc(X)
        timings = {"segmentation": 0.0, "sampling": 0.0, "model": 0.0, "surrogate": 0.0}
        t0 = time.perf_counter()
        segments = np.stack([segment(seg_fn, images[i], int(self.seed)) for i in range(n_rows)])
        timings["segmentation"] = time.perf_counter() - t0
        n_segments = segments.reshape(n_rows, -1).max(axis=1) + 1
        shape = (layout.height, layout.width, layout.channels)

        def process(run_seed: int, block: np.ndarray):
            t0 = time.perf_counter()
            copies = np.empty((len(block), n_samples, *shape), X.dtype)
            masks = []
            for j, i in enumerate(block):
                rng = np.random.default_rng([run_seed, int(i)])
                mask, copies[j] = perturb(
                    images[i], segments[i], n_samples, rng, self.hide_color, X.dtype
                )
                masks.append(mask)
            model_in = layout.from_hwc(copies.reshape(-1, *shape), X.shape[1:])
            t1 = time.perf_counter()
            out = _outputs(runner, model_in, block, target, n_samples)
            del model_in, copies
            t2 = time.perf_counter()
            sizes = n_segments[block]
            for k in np.unique(sizes):  # images with as many superpixels are fitted together
                group = np.flatnonzero(sizes == k)
                stacked = np.stack([masks[j] for j in group])
                fit = fit_surrogates(
                    stacked,
                    out[group],
                    cosine_distances_to_all_on(stacked),
                    kernel_width=kernel_width,
                    n_features=int(self.n_features) if self.n_features is not None else int(k),
                    feature_selection=self.feature_selection,
                    solver=self.solver,
                    random_state=np.random.RandomState(int(self.seed)),
                )
                yield block[group], fit, out[group, 0]
            timings["sampling"] += t1 - t0
            timings["model"] += t2 - t1
            timings["surrogate"] += time.perf_counter() - t2

        per_block = max(1, _BLOCK_ELEMENTS // (n_samples * int(np.prod(shape))))
        runs = self._run_all(n_rows, per_block, process, "image")
        weights = np.stack([runs[0].coef[i][segments[i]] for i in range(n_rows)])  # (n, H, W)
        hwc = np.broadcast_to(weights[..., None], (*weights.shape, layout.channels))
        values = layout.from_hwc(np.ascontiguousarray(hwc), X.shape[1:])
        meta = self._meta(runs, n_samples, kernel_width, "image", timings)
        meta["segments"] = segments
        meta["n_segments"] = n_segments
        meta["image_shape"] = layout.shape  # reports draw heatmaps of these images
        meta["segmentation"] = (
            self.segmentation if isinstance(self.segmentation, str) else "callable"
        )
        return Explanation(values=values, base_values=runs[0].intercept, target=target, meta=meta)

    # -- meta -------------------------------------------------------------------------
    def _meta(
        self,
        runs: list[_Run],
        n_samples: int,
        kernel_width: float,
        mode: str,
        timings: dict[str, float],
    ) -> dict[str, Any]:
        main = runs[0]
        n_rows = len(main.coef)
        meta: dict[str, Any] = {
            "mode": mode,
            "score": main.score,
            "local_pred": main.local_pred,
            "intercept": main.intercept,
            "prediction": main.prediction,
            "n_samples": n_samples,
            "seed": int(self.seed),
            "kernel_width": kernel_width,
            "n_features": main.n_selected,
            "feature_selection": self.feature_selection,
            "solver": self.solver,
            "timings": timings,
        }
        if len(runs) < 2:
            meta["stability"] = None
            return meta
        k = max(1, min(int(self.top_k), max(r.n_selected for r in runs)))
        jaccard = np.zeros(n_rows)
        rho = np.zeros(n_rows)
        sizes = np.array([len(c) for c in main.coef])
        for size in np.unique(sizes):
            group = np.flatnonzero(sizes == size)
            weights = [np.stack([run.coef[i] for i in group]) for run in runs]
            jaccard[group], rho[group] = pairwise_stability(weights, k)
        meta["stability_jaccard"] = jaccard
        meta["stability_spearman"] = rho
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean_rho = float(np.nanmean(rho)) if np.isfinite(rho).any() else float("nan")
        meta["stability"] = {
            "jaccard": float(jaccard.mean()),
            "spearman": mean_rho,
            "top_k": k,
            "seeds": self._seeds(),
        }
        return meta


def _outputs(
    runner: ModelRunner, model_in: np.ndarray, block: np.ndarray, target: np.ndarray, n_samples: int
) -> np.ndarray:
    """The explained output of every perturbed sample of a block of rows, (n_rows, n_samples)."""
    preds = np.asarray(runner.predict(model_in), dtype=np.float64)
    preds = preds.reshape(len(block), n_samples, -1)
    return preds[np.arange(len(block)), :, target[block]]
