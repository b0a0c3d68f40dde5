"""One call of an explainer on validated rows: the step shared by serial runs and chunk workers.

:func:`run_explainer` builds the explainer from resolved options, tells it the global index
of its rows, hands it a read-only view of ``X``, runs it under the BLAS thread limit (with
one progress bar over the rows, :mod:`xai_core.progress`), checks every model output it
receives (:mod:`xai_core.attribution.guard`) and fills in what every explanation carries
(data, names, method, backend, ``meta["seconds"]``,
``meta["options"]``, ``meta["seed"]``).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core.attribution.blas import blas_threads as limit_blas
from xai_core.attribution.explanation import Explanation
from xai_core.attribution.guard import GuardedRunner
from xai_core.kernels.weight_cache import weights_fixed
from xai_core.model.base import STRAIGHT_THROUGH_NOTE
from xai_core.progress import job_label, progress_bar

if TYPE_CHECKING:
    from xai_core.attribution.explainer import Explainer
    from xai_core.model.runner import ModelRunner

__all__ = ["ExplainJob", "read_only", "run_explainer"]


def read_only(X: np.ndarray) -> np.ndarray:
    """A view of ``X`` that cannot be written through (the caller's array stays as it was)."""
    view = X.view()
    view.flags.writeable = False
    return view


@dataclass(frozen=True)
class ExplainJob:
    """What one call of :func:`xai_core.explain` asks for, validated; every chunk shares it.

    Attributes
    ----------
    method : Explainer subclass
    options : dict
        Resolved options (:func:`~xai_core.attribution.options.resolve_options`), the seed
        already drawn.
    feature_names : tuple of str, optional
    blas_threads : int or None, default=1
        BLAS threads during the computation (:mod:`xai_core.attribution.blas`).
    """

    method: type[Explainer]
    options: dict[str, Any]
    feature_names: tuple[str, ...] | None = None
    blas_threads: int | None = 1


def run_explainer(
    runner: ModelRunner, X: np.ndarray, target: np.ndarray, job: ExplainJob, rows: np.ndarray
) -> Explanation:
    """Explain the validated rows ``X`` with ``job.method(**job.options)``.

    Parameters
    ----------
    runner : ModelRunner
    X : ndarray of shape (n_samples, *input_shape)
        Validated rows.
    target : ndarray of int64 of shape (n_samples,), or None
        None when the method picks the predicted class itself (``picks_target``).
    job : ExplainJob
    rows : ndarray of int64 of shape (n_samples,)
        Global index of each row in the caller's data.

    Returns
    -------
    Explanation
    """
    cls, options = job.method, job.options
    explainer = cls(**options)
    explainer.row_index = np.asarray(rows, dtype=np.int64)
    view = read_only(X)
    guarded = GuardedRunner(runner, cls.name, view, explainer.row_index)
    start = time.perf_counter()
    # one bar over the rows; the explainer's own bar (backward passes, blocks...) drives it
    bar = progress_bar(
        len(X),
        progress=options.get("progress"),
        desc=job_label(cls.name, len(X)),
        unit="row",
        long=False,
    )
    with limit_blas(job.blas_threads), weights_fixed(), bar, bar.part(len(X)):
        result = explainer.explain(guarded, view, None if target is None else read_only(target))
    seconds = time.perf_counter() - start
    meta = {"seconds": seconds, "options": explainer.get_options(), **result.meta}
    if "seed" in options:
        meta["seed"] = options["seed"]
    image_shape = getattr(runner.model, "image_shape", None)
    if image_shape is not None and "image_shape" not in meta:
        meta["image_shape"] = tuple(image_shape)
    if "gradient" in cls.requires and "straight_through" in runner.model.capabilities:
        meta["gradient"] = STRAIGHT_THROUGH_NOTE  # an int8 model's: forward int8, backward float
    series_order = getattr(runner.model, "series_order", None)
    if isinstance(series_order, str) and "series_order" not in meta:
        meta["series_order"] = series_order
    return dataclasses.replace(
        result,
        data=result.data if result.data is not None else view,
        feature_names=result.feature_names or job.feature_names,
        output_names=result.output_names or runner.model.output_names,
        method=result.method or cls.name,
        backend=result.backend or runner.backend.name,
        meta=meta,
    )
