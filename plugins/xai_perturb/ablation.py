"""Occlusion and feature ablation: the output's drop when a set of features takes a baseline.

For each set of features ``k`` (a window, a group of a feature mask) and each row ``x``,
the model runs on ``x`` with the set replaced, and the drop ``f(x)[t] - f(x_k)[t]`` is given
to every feature of the set. Feature ablation's sets are disjoint, so each feature gets its
group's drop; occlusion's windows overlap, and each feature gets the mean drop of the
windows covering it (Captum's ``Occlusion`` and ``FeatureAblation``, to the same values).

All perturbed copies of a block of sets are built with one ``where`` and evaluated in one
model call: ``perturbations_per_eval`` sets per row per call, by default as many as fit in
4M input elements.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from xai_core import Cost, Explainer, Explanation, ModelRunner, ShapeError, ValidationError
from xai_core.attribution.cost import format_bytes
from xai_core.attribution.options import Alias, Int, Progress
from xai_core.progress import progress_bar
from xai_perturb.sets import Groups, Windows

__all__ = ["Occlusion", "FeatureAblation", "output_drops", "MAX_CHUNK_ELEMENTS"]

#: Input elements of the perturbed copies evaluated in one model call, by default.
MAX_CHUNK_ELEMENTS = 1 << 22


def _sets_per_call(per_eval: int | None, n: int, d: int) -> int:
    if per_eval is not None:
        return per_eval
    return max(1, MAX_CHUNK_ELEMENTS // max(1, n * d))


def output_drops(
    runner: ModelRunner,
    X: np.ndarray,
    target: np.ndarray,
    sets: Windows | Groups,
    fill: Callable[[int, int], Any],
    rows: np.ndarray,
    *,
    per_eval: int | None,
    progress: bool | None,
    desc: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Sum over the sets of the output's drop when the set takes the values ``fill`` gives.

    Parameters
    ----------
    X : ndarray of shape (n, *input_shape)
    target : ndarray of int64 of shape (n,)
    sets : Windows or Groups
    fill : callable
        ``fill(start, stop)``: the values put in sets ``start`` to ``stop``, broadcastable
        to (n, stop - start, *input_shape).
    rows : ndarray of int64 of shape (n,)
        The rows' global indices (for per-row masks).

    Returns
    -------
    total : ndarray of float64 of shape (n, *input_shape)
        ``sum_k (f(x)[t] - f(x_k)[t]) * mask_k``.
    output : ndarray of float64 of shape (n,)
        ``f(x)[t]``.
    """
    n, shape = len(X), X.shape[1:]
    d = math.prod(shape)
    picked = np.arange(n)
    output = np.asarray(runner.predict_validated(X), dtype=np.float64)[picked, target]
    total = np.zeros((n, d))
    per_call = _sets_per_call(per_eval, n, d)
    n_calls = math.ceil(sets.count / per_call)
    with progress_bar(n_calls, progress=progress, desc=desc, unit="batch") as bar:
        for start in range(0, sets.count, per_call):
            stop = min(start + per_call, sets.count)
            masks = sets.masks(start, stop, rows)  # (1 or n, k, *shape)
            copies = np.where(masks, fill(start, stop), X[:, None]).astype(X.dtype, copy=False)
            k = stop - start
            out = runner.predict_validated(copies.reshape(n * k, *shape))
            drop = (
                output[:, None]
                - np.asarray(out, dtype=np.float64).reshape(n, k, -1)[picked, :, target]
            )
            flat = masks.reshape(len(masks), k, d)
            if len(flat) == 1:
                total += drop @ flat[0]
            else:
                total += np.einsum("nk,nkd->nd", drop, flat)
            bar.update(1)
    return total.reshape(X.shape), output


def _baselines(value: Any, X: np.ndarray, rows: np.ndarray, n_rows: int | None) -> np.ndarray:
    """``baselines`` as an array broadcastable to (n, 1, *input_shape): a number, one sample,
    or one per row (picked by global index)."""
    shape = X.shape[1:]
    base = np.asarray(value, dtype=np.float64)
    if base.dtype.kind not in "fiub" or not np.all(np.isfinite(base)):
        raise ValidationError("baselines must be finite numbers.")
    if base.ndim == 0:
        return base.reshape((1, 1) + (1,) * len(shape))
    if base.shape == shape:
        return base[None, None]
    if base.shape[1:] == shape and len(base) == 1:
        return base[:, None]
    if base.shape[1:] == shape and (n_rows is None or len(base) == n_rows):
        if len(base) <= rows.max(initial=0):
            raise ShapeError(f"baselines has {len(base)} rows; row {rows.max()} is explained.")
        return base[rows][:, None]
    rows_word = f"{n_rows}" if n_rows is not None else "n_samples"
    raise ShapeError(
        f"baselines must be a number, one sample of shape {shape}, or ({rows_word}, *{shape}) "
        f"with one per row; got shape {base.shape}."
    )


class _Ablation(Explainer):
    """What occlusion and feature ablation share: baselines, blocks, progress, cost.

    The rows' values are only copied, never computed with, so rows with missing values
    (NaN) of a model that handles them are explained (:attr:`Explainer.handles_missing`).
    """

    requires: ClassVar[frozenset[str]] = frozenset({"predict"})
    handles_missing: ClassVar[bool] = True
    constraints: ClassVar[dict] = {
        "perturbations_per_eval": Int(1, allow_none=True),
        "progress": Progress(),
    }
    aliases: ClassVar[dict] = {"baseline": Alias("baselines")}
    baselines: Any
    perturbations_per_eval: int | None
    progress: bool | None

    def _sets(self, X: np.ndarray, n_rows: int | None) -> Windows | Groups:
        raise NotImplementedError

    def estimate_cost(self, runner: ModelRunner, X: np.ndarray) -> Cost:
        """``n * (sets + 1)`` model rows; a block of perturbed copies at a time."""
        n, d = len(X), math.prod(X.shape[1:])
        sets = self._sets(X, n)  # checks the options against X before any model call
        _baselines(self.baselines, X, np.arange(n), n)
        per_call = min(_sets_per_call(self.perturbations_per_eval, n, d), sets.count)
        peak = n * per_call * d * (X.itemsize + 1 + 8)  # copies, masks, their products
        return Cost(
            model_rows=n * (sets.count + 1),
            peak_bytes=peak + n * d * 8,
            detail=f"{n} rows x {sets.count} feature sets, {format_bytes(peak)} per call",
            advice="use larger windows or strides, fewer groups, or a smaller "
            "perturbations_per_eval",
        )

    def _drops(self, runner, X, target, sets, rows):
        fill = _baselines(self.baselines, X, rows, None)
        return output_drops(
            runner,
            X,
            target,
            sets,
            lambda start, stop: fill,
            rows,
            per_eval=self.perturbations_per_eval,
            progress=self.progress,
            desc=self.name,
        )


class Occlusion(_Ablation):
    """Slide a window over each sample, set it to a baseline, and record the output's drop.

    Captum's ``Occlusion`` (Zeiler and Fergus, 2014): each feature's attribution is the
    mean drop of the target output over the windows that cover it.

    Parameters
    ----------
    sliding_window_shapes : tuple of int
        The window's extent along every axis of a sample (``(1, 8, 8)`` for 8x8 patches
        of one channel of a ``(C, H, W)`` image, ``(3, 8, 8)`` for all channels).
    strides : int or tuple of int, default=1
        Steps between windows along each axis; at most the window where it is smaller
        than the sample, so no feature is skipped. The last window along an axis is cut
        at the edge.
    baselines : float or array-like, default=0.0
        The values a window takes: a number, one sample, or one per row of ``X``.
        ``baseline`` is accepted too.
    perturbations_per_eval : int, optional
        Windows per row evaluated in one model call; by default as many as fit in 4M
        input elements.
    progress : bool, optional
        A bar over model calls; by default only when there are 10 or more.

    Notes
    -----
    ``values`` has shape (n_samples, *input_shape). The method is not additive:
    ``base_values`` is the explained output ``f(x)[target]``, also ``meta["output"]``;
    ``meta["windows"]`` counts the windows. Needs only predictions: it runs on every
    backend, ``edgetpu`` included, and on black boxes.
    """

    name: ClassVar[str] = "occlusion"
    aliases: ClassVar[dict] = {**_Ablation.aliases, "window": Alias("sliding_window_shapes")}

    def __init__(
        self,
        sliding_window_shapes: Any = None,
        strides: Any = 1,
        baselines: Any = 0.0,
        perturbations_per_eval: int | None = None,
        progress: bool | None = None,
    ) -> None:
        self.sliding_window_shapes = sliding_window_shapes
        self.strides = strides
        self.baselines = baselines
        self.perturbations_per_eval = perturbations_per_eval
        self.progress = progress

    def _sets(self, X: np.ndarray, n_rows: int | None) -> Windows:
        if self.sliding_window_shapes is None:
            raise ValidationError(
                "occlusion needs sliding_window_shapes=, the window's extent along every "
                f"axis of a sample {X.shape[1:]} (e.g. {(1,) * (X.ndim - 3) + (8, 8)})."
            )
        return Windows(X.shape[1:], self.sliding_window_shapes, self.strides)

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """Mean drop of ``output[target]`` over the windows covering each feature of ``X``."""
        windows = self._sets(X, None)
        total, output = self._drops(runner, X, target, windows, self.rows(len(X)))
        values = total / windows.coverage()
        meta = {"output": output, "windows": windows.count}
        return Explanation(values=values, base_values=output, target=target, data=X, meta=meta)


class FeatureAblation(_Ablation):
    """Set each feature, or each group of a feature mask, to a baseline and record the drop.

    Captum's ``FeatureAblation``: every feature of a group gets the drop of the target
    output when the whole group takes its baseline.

    Parameters
    ----------
    feature_mask : array-like of int, optional
        A group id per feature, of a sample's shape (shared by every row) or
        ``(n_samples, *input_shape)`` (one mask per row): superpixels, image patches,
        groups of columns. Default: every feature on its own.
    baselines : float or array-like, default=0.0
        As for :class:`Occlusion`.
    perturbations_per_eval : int, optional
        Groups per row evaluated in one model call.
    progress : bool, optional

    Notes
    -----
    ``values`` has shape (n_samples, *input_shape); ``base_values`` is ``f(x)[target]``
    (the method is not additive); ``meta["groups"]`` counts the groups.
    """

    name: ClassVar[str] = "feature_ablation"

    def __init__(
        self,
        feature_mask: Any = None,
        baselines: Any = 0.0,
        perturbations_per_eval: int | None = None,
        progress: bool | None = None,
    ) -> None:
        self.feature_mask = feature_mask
        self.baselines = baselines
        self.perturbations_per_eval = perturbations_per_eval
        self.progress = progress

    def _sets(self, X: np.ndarray, n_rows: int | None) -> Groups:
        return Groups(X.shape[1:], self.feature_mask, n_rows)

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """The drop of ``output[target]`` when each feature's group of ``X`` is ablated."""
        groups = self._sets(X, None)
        values, output = self._drops(runner, X, target, groups, self.rows(len(X)))
        meta = {"output": output, "groups": groups.count}
        return Explanation(values=values, base_values=output, target=target, data=X, meta=meta)
