"""LimeExplainer: lime's local surrogate explanations for tables and small images."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from lime.discretize import BaseDiscretizer

from xai_core import (
    Cost,
    Explainer,
    Explanation,
    ModelRunner,
    ShapeError,
    ValidationError,
    XaiWarning,
)
from xai_core.attribution.options import Alias, Bool, Choice, Float, ImageShape, Int, TypeOf
from xai_core.attribution.seeds import rngs_for_rows
from xai_core.series import recorded_layout
from xai_core.validation import check_array
from xai_lime.image import (
    SeriesImage,
    cosine_distances_to_all_on,
    image_layout_of,
    perturb,
    segment,
    segmentation_function,
)
from xai_lime.runs import Run, lime_meta, model_outputs, run_seeds
from xai_lime.shared import Neighbourhoods
from xai_lime.surrogate import FEATURE_SELECTIONS, fit_surrogates
from xai_lime.tabular import DISCRETIZERS, TabularSampler

__all__ = ["LimeExplainer"]

MODES = ("auto", "tabular", "image", "series")
SOLVERS = ("batched", "lime")
NEIGHBOURHOODS = ("shared", "per_row")
#: Perturbed values held at once (rows x samples x features); bounds memory per block.
_BLOCK_ELEMENTS = 2**22


class LimeExplainer(Explainer):
    """LIME: a weighted linear surrogate fitted on random perturbations of each row.

    Tabular rows are perturbed by lime's ``LimeTabularExplainer`` sampling scheme,
    images by switching superpixels off as ``LimeImageExplainer`` does; both are drawn
    in whole blocks and the model sees them in large batches through the runner. The
    surrogate is lime's (``LimeBase``): kernel-weighted ridge regression after feature
    selection.

    Parameters
    ----------
    mode : {"auto", "tabular", "image", "series"}, default="auto"
        ``"auto"``: a series when the model reads series (a network with sequence
        layers: ``series_order``), images when samples have two or more dimensions or
        ``image_shape`` is given, tabular otherwise. A series is explained per window of
        consecutive steps, every channel of a window switched off together.
    n_samples : int, optional
        Perturbed samples per row (sample 0 is the row itself); lime's defaults, 5000
        for tables and 1000 for images. Alias ``num_samples`` (lime's spelling).
    max_features : int, optional
        Most features (superpixels) in each surrogate: the explanation's length. Alias
        ``num_features`` (lime's spelling); ``n_features`` is its deprecated old name.
        Default 10 for tables and every superpixel for images.
    kernel_width : float, optional
        Width of lime's kernel ``sqrt(exp(-d**2 / width**2))``; default
        ``0.75 * sqrt(n_columns)`` (``n_columns``: the width of ``X``) for tables
        (euclidean distances) and 0.25 for images (cosine distances).
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
    background : array-like of shape (n_train, n_columns), optional
        Tables: the reference data lime takes its statistics from (bins, means, standard
        deviations, frequencies), usually the training set; lime's ``training_data``
        (accepted as a deprecated alias). Default: ``X`` itself (all rows, also when they
        are explained in chunks), with a warning. The statistics are computed in the
        dtype the model sees, so a row of the background passed as ``X`` falls in the
        same bins.
    training_labels : array-like of shape (n_train,), optional
        Tables: labels of ``background``, needed by the ``"entropy"`` discretizer.
    sample_around_instance : bool, default=False
        Tables without discretisation: centre draws on the row rather than the mean.
    image_shape : tuple of int, optional
        Images given as flat samples: ``(height, width)``, ``(height, width, channels)``
        or ``(channels, height, width)``, e.g. ``(28, 28)`` for 784 pixels.
    segmentation : {"slic", "quickshift", "felzenszwalb", "grid"} or callable, optional
        Images: superpixels, ``"slic"`` by default; see :mod:`xai_lime.image`. A callable
        maps an image of shape (height, width, channels) to integer labels of shape
        (height, width). Series: ten windows of near-equal length by default, or
        ``"grid"``'s windows of ``size`` steps (a series is an image one row high, its
        channels the colours).
    segmentation_params : dict, optional
        Images: keyword arguments of the scikit-image function, or ``{"size": s}`` for
        the grid's s-by-s cells. Series: ``{"size": s}``, windows of ``s`` steps.
    hide_color : float, optional
        Images: value of a switched-off superpixel; default its mean colour (lime's).
    neighbourhood : {"shared", "per_row"}, default="shared"
        Tables: ``"shared"`` draws one neighbourhood per seed and gives it to every row
        (each row keeps its own sample 0, its 1/0 "same bin" representation, distances
        and weights), so the model sees ``n_samples - 1`` perturbed rows once instead of
        once per row; ``"per_row"`` draws each row's own, as lime does. lime's perturbed
        samples do not depend on the row (they are drawn from the training statistics;
        only ``sample_around_instance`` without discretisation centres them on it, and
        then each row gets its own whatever this says), so each row's explanation has
        exactly lime's distribution either way. What sharing changes is between rows:
        their explanations share one draw's sampling noise (two rows' weights err
        together, and averaging weights over rows does not average that noise away).
        ``meta["neighbourhood"]`` records what was used.
    solver : {"batched", "lime"}, default="batched"
        ``"batched"`` solves the surrogates of many rows at once in closed form (equal to
        ``LimeBase``'s up to rounding, for highest-weights or no feature selection);
        ``"lime"`` calls ``LimeBase.explain_instance_with_data`` row by row.
    seed : int or None, default=0
        Row ``i``'s neighbourhood comes from ``numpy.random.default_rng([seed, i])``,
        ``i`` its index in the caller's data (whatever chunk it is explained in);
        quickshift and lime's discretizers get ``seed`` too. Global random state is never
        read. ``None`` draws a seed, recorded in ``meta["seed"]``.
    stability_seeds : int, default=0
        Extra runs with seeds ``seed + 1 ... seed + stability_seeds`` from which the
        stability figures are computed (each one the work of the explanation again);
        0, the default, skips them, as lime does.
    top_k : int, default=5
        Size of the top-feature sets compared by the stability figure.
    progress : bool or None, default=None
        Show a progress bar; ``None``: for long work only (10 blocks of rows or more).

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
    ``kernel_width``, ``n_selected`` (features in the largest surrogate; also under its
    old key ``n_features``), ``feature_selection``, ``stability`` (means over
    rows, seeds and ``top_k``) and ``timings`` (seconds in sampling, model, surrogate).
    """

    name: ClassVar[str] = "lime"
    requires: ClassVar[frozenset[str]] = frozenset({"predict"})
    default_for: ClassVar[Mapping[str, int]] = {"compare": 1}  # compare_methods, after SHAP
    constraints: ClassVar[dict] = {
        "mode": Choice(MODES),
        "n_samples": Int(2, allow_none=True),
        "max_features": Int(1, allow_none=True),
        "kernel_width": Float(allow_none=True),
        "feature_selection": Choice(FEATURE_SELECTIONS),
        "discretize_continuous": Bool(),
        "discretizer": Choice(DISCRETIZERS, types=(BaseDiscretizer,)),
        "sample_around_instance": Bool(),
        "image_shape": ImageShape(),
        "segmentation_params": TypeOf((Mapping,), "a dict"),
        "hide_color": Float(low=-np.inf, allow_none=True),
        "solver": Choice(SOLVERS),
        "neighbourhood": Choice(NEIGHBOURHOODS),
        "stability_seeds": Int(0),
        "top_k": Int(1),
    }
    aliases: ClassVar[dict] = {
        "num_samples": Alias("n_samples", anchor="lime"),
        "num_features": Alias("max_features", anchor="lime"),
        "n_features": Alias(
            "max_features", deprecated=True, note="n_features also meant the width of X"
        ),
        "training_data": Alias("background", deprecated=True),
    }

    def __init__(
        self,
        *,
        mode: str = "auto",
        n_samples: int | None = None,
        max_features: int | None = None,
        kernel_width: float | None = None,
        feature_selection: str = "auto",
        discretize_continuous: bool = True,
        discretizer: str | BaseDiscretizer = "quartile",
        categorical_features: Sequence[int] | None = None,
        background: Any = None,
        training_labels: Any = None,
        sample_around_instance: bool = False,
        image_shape: Sequence[int] | None = None,
        segmentation: str | Callable[[np.ndarray], np.ndarray] | None = None,
        segmentation_params: Mapping[str, Any] | None = None,
        hide_color: float | None = None,
        solver: str = "batched",
        neighbourhood: str = "shared",
        seed: int | None = 0,
        stability_seeds: int = 0,
        top_k: int = 5,
        progress: bool | None = None,
    ) -> None:
        self.mode = mode
        self.n_samples = n_samples
        self.max_features = max_features
        self.kernel_width = kernel_width
        self.feature_selection = feature_selection
        self.discretize_continuous = discretize_continuous
        self.discretizer = discretizer
        self.categorical_features = categorical_features
        self.background = background
        self.training_labels = training_labels
        self.sample_around_instance = sample_around_instance
        self.image_shape = image_shape
        self.segmentation = segmentation
        self.segmentation_params = segmentation_params
        self.hide_color = hide_color
        self.solver = solver
        self.neighbourhood = neighbourhood
        self.seed = seed
        self.stability_seeds = stability_seeds
        self.top_k = top_k
        self.progress = progress

    @classmethod
    def explain_texts(cls, model: Any, texts: Any, **options: Any) -> Explanation:
        """LIME on texts, as lime's ``LimeTextExplainer``: :func:`xai_lime.text.explain_lime_texts`."""
        from xai_lime.text import explain_lime_texts

        return explain_lime_texts(model, texts, **options)

    # -- checks -----------------------------------------------------------------------
    def _resolve_mode(self, runner: ModelRunner, X: np.ndarray) -> str:
        """``mode``, or what ``"auto"`` makes of the model and the rows."""
        if self.mode != "auto":
            return self.mode
        known = self.image_shape is not None or self._model_image_shape(runner) is not None
        if isinstance(getattr(runner.model, "series_order", None), str) and not known:
            return "series"
        return "image" if X.ndim > 2 or known else "tabular"

    def _model_image_shape(self, runner: ModelRunner) -> Any:
        """The image shape the model records (a CNN's input), unless tabular data was given."""
        if self.image_shape is not None or self.background is not None:
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
        self.run_seed()
        mode = self._resolve_mode(runner, X)
        if mode == "tabular":
            return self._explain_tabular(runner, X, target)
        if mode == "series":
            order = getattr(runner.model, "series_order", None)
            layout = SeriesImage(recorded_layout(X.shape[1:], order))
            return self._explain_image(runner, X, target, layout)
        return self._explain_image(runner, X, target)

    def estimate_cost(self, runner: ModelRunner, X: np.ndarray) -> Cost | None:
        """Model rows and peak memory of this request (:mod:`xai_lime.cost`), before any work."""
        from xai_lime.cost import lime_cost

        return lime_cost(self, runner, X, self._resolve_mode(runner, X))

    def _seeds(self) -> list[int]:
        return [self.run_seed() + s for s in range(int(self.stability_seeds) + 1)]

    def prepare(self, runner: ModelRunner, X: np.ndarray) -> dict[str, Any]:
        """Tables without a background: all rows of ``X`` become it (see :class:`Explainer`)."""
        if self.background is not None or self._resolve_mode(runner, X) != "tabular":
            return {}
        rows = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
        self._training(rows, X.dtype)  # warns, once, as one call on all rows would
        return {"background": np.asarray(X).reshape(len(X), -1)}

    # -- tabular ----------------------------------------------------------------------
    def _training(self, rows: np.ndarray, dtype: Any) -> np.ndarray:
        """``background`` checked (or the rows, with a warning), in the model's dtype."""
        if self.background is None:
            warnings.warn(
                f"background not given: LIME's sampling statistics come from the {len(rows)} "
                "explained row(s) themselves. Pass background=<the training set> for a "
                "meaningful neighbourhood.",
                XaiWarning,
                stacklevel=6,
            )
            training = rows
        else:
            training = check_array(
                self.background,
                "background",
                feature_shape=(rows.shape[1],),
                dtype=np.float64,
                flatten=True,
                rows="n_rows",
            )
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
                f"background; got shape {labels.shape}."
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
        max_features = int(self.max_features) if self.max_features is not None else 10
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
            random_state=np.random.RandomState(self.run_seed()),
        )
        timings = {"sampling": 0.0, "model": 0.0, "surrogate": 0.0}
        global_rows = self.rows(n_rows)

        neighbourhoods = Neighbourhoods(
            sampler,
            runner,
            X,
            target,
            n_samples,
            global_rows,
            shared=self.neighbourhood == "shared",
            timings=timings,
        )

        def process(run_seed: int, block: np.ndarray):
            interp, out, distances = neighbourhoods(run_seed, block)
            t2 = time.perf_counter()
            fit = fit_surrogates(
                interp,
                out,
                distances,
                kernel_width=kernel_width,
                n_features=max_features,
                feature_selection=self.feature_selection,
                solver=self.solver,
                random_state=np.random.RandomState(self.run_seed()),
            )
            timings["surrogate"] += time.perf_counter() - t2
            yield block, fit, out[:, 0]

        per_block = max(1, _BLOCK_ELEMENTS // (n_samples * n_cols))
        runs = run_seeds(
            self._seeds(), n_rows, per_block, process, unit="row", progress=self.progress
        )
        values = np.stack(runs[0].coef).reshape(X.shape)
        meta = self._meta(runs, n_samples, kernel_width, "tabular", timings)
        meta["training_rows"] = len(training)
        meta["neighbourhood"] = "shared" if neighbourhoods.shared else "per_row"
        meta.update(sampler.describe())
        return Explanation(values=values, base_values=runs[0].intercept, target=target, meta=meta)

    # -- images -----------------------------------------------------------------------
    def _explain_image(
        self,
        runner: ModelRunner,
        X: np.ndarray,
        target: np.ndarray,
        series: SeriesImage | None = None,
    ) -> Explanation:
        """Images, or a series as an image one row high (``series``)."""
        kind = "image" if series is None else "series"
        if series is None:
            image_shape = self.image_shape
            if image_shape is None:
                image_shape = self._model_image_shape(runner)
            layout: Any = image_layout_of(X.shape[1:], image_shape)
            named = self.segmentation or "slic"
        else:
            layout = series
            named = self.segmentation or ("grid" if self.segmentation_params else "windows")
        for name in ("background", "training_labels", "categorical_features"):
            if getattr(self, name) is not None:
                raise ValidationError(f"{name} applies to tabular mode; got it in {kind} mode.")
        if named == "windows" and series is not None:
            if self.segmentation_params:
                raise ValidationError(
                    "segmentation='windows' (ten windows) takes no segmentation_params; "
                    "segmentation='grid' with {'size': s} makes windows of s steps."
                )
            labels = series.layout.windows(10)[None]  # the image is one row high
            seg_fn = lambda image, seed: labels  # noqa: E731
        else:
            seg_fn = segmentation_function(named, self.segmentation_params)
        n_rows = len(X)
        n_samples = int(self.n_samples) if self.n_samples is not None else 1000
        kernel_width = float(self.kernel_width) if self.kernel_width is not None else 0.25
        images = layout.to_hwc(X)
        timings = {"segmentation": 0.0, "sampling": 0.0, "model": 0.0, "surrogate": 0.0}
        t0 = time.perf_counter()
        seed = self.run_seed()
        segments = np.stack([segment(seg_fn, images[i], seed) for i in range(n_rows)])
        timings["segmentation"] = time.perf_counter() - t0
        n_segments = segments.reshape(n_rows, -1).max(axis=1) + 1
        shape = (layout.height, layout.width, layout.channels)
        global_rows = self.rows(n_rows)

        def process(run_seed: int, block: np.ndarray):
            t0 = time.perf_counter()
            copies = np.empty((len(block), n_samples, *shape), X.dtype)
            masks = []
            for j, (i, rng) in enumerate(zip(block, rngs_for_rows(run_seed, global_rows[block]))):
                mask, copies[j] = perturb(
                    images[i], segments[i], n_samples, rng, self.hide_color, X.dtype
                )
                masks.append(mask)
            model_in = layout.from_hwc(copies.reshape(-1, *shape), X.shape[1:])
            t1 = time.perf_counter()
            out = model_outputs(runner, model_in, block, target, n_samples)
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
                    n_features=int(self.max_features) if self.max_features is not None else int(k),
                    feature_selection=self.feature_selection,
                    solver=self.solver,
                    random_state=np.random.RandomState(seed),
                )
                yield block[group], fit, out[group, 0]
            timings["sampling"] += t1 - t0
            timings["model"] += t2 - t1
            timings["surrogate"] += time.perf_counter() - t2

        per_block = max(1, _BLOCK_ELEMENTS // (n_samples * int(np.prod(shape))))
        runs = run_seeds(
            self._seeds(), n_rows, per_block, process, unit="image", progress=self.progress
        )
        weights = np.stack([runs[0].coef[i][segments[i]] for i in range(n_rows)])  # (n, H, W)
        hwc = np.broadcast_to(weights[..., None], (*weights.shape, layout.channels))
        values = layout.from_hwc(np.ascontiguousarray(hwc), X.shape[1:])
        meta = self._meta(runs, n_samples, kernel_width, kind, timings)
        meta["segments"] = segments
        meta["n_segments"] = n_segments
        if series is None:
            meta["image_shape"] = layout.shape  # reports draw heatmaps of these images
        else:
            meta["series_order"] = series.layout.order
        meta["segmentation"] = named if isinstance(named, str) else "callable"
        return Explanation(values=values, base_values=runs[0].intercept, target=target, meta=meta)

    # -- meta -------------------------------------------------------------------------
    def _meta(
        self,
        runs: list[Run],
        n_samples: int,
        kernel_width: float,
        mode: str,
        timings: dict[str, float],
    ) -> dict[str, Any]:
        meta = lime_meta(
            runs,
            seeds=self._seeds(),
            top_k=int(self.top_k),
            settings={
                "mode": mode,
                "n_samples": n_samples,
                "seed": self.run_seed(),
                "kernel_width": kernel_width,
                "feature_selection": self.feature_selection,
                "solver": self.solver,
                "timings": timings,
            },
        )
        meta["n_features"] = meta["n_selected"]  # the old key, kept for readers of saved results
        return meta
