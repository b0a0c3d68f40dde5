"""One tabular neighbourhood per seed, shared by every row explained.

lime draws a row's perturbed samples from the training statistics alone (bins with their
frequencies, values inside bins, categories; continuous features around the training
mean): apart from its sample 0, the row itself, a neighbourhood does not depend on the
row. What does is the row's view of it: the 1/0 "same bin (or category) as the row"
representation, the distances to the row and so the kernel weights. So one draw serves
every row: the model sees its ``n_samples - 1`` samples once, not once per row, and each
row's explanation has exactly lime's distribution. The rows' explanations then share that
draw's sampling noise, which per-row neighbourhoods do not.

The draw comes from the seed's shared stream (:func:`xai_core.attribution.seeds.shared_rng`),
so every chunk of rows, on any executor, sees the same samples.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from xai_core import ModelRunner
from xai_core.attribution.seeds import rngs_for_rows, shared_rng
from xai_lime.runs import model_outputs
from xai_lime.tabular import _CHUNK, TabularSampler

__all__ = ["Neighbourhoods", "draw_shared", "instance_free", "shared_views"]


def instance_free(sampler: TabularSampler) -> bool:
    """Whether the perturbed samples do not depend on the row (all but its sample 0).

    With discretisation, and for continuous features drawn around the training mean,
    lime draws every perturbed sample from the training statistics alone: the row
    only decides its sample 0, the 1/0 "same bin" representation and the distances.
    """
    return not (sampler.sample_around_instance and len(sampler.continuous))


def draw_shared(
    sampler: TabularSampler, n: int, rng: np.random.Generator, dtype: Any = np.float64
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` perturbed samples that do not depend on any row (see :func:`instance_free`).

    Parameters
    ----------
    n : int
        Samples drawn (a neighbourhood of ``n + 1`` with each row's own sample 0).
    rng : numpy.random.Generator
        The one stream they come from.
    dtype : numpy dtype, default=float64
        Dtype of ``inverse`` (the dtype the model takes).

    Returns
    -------
    indices : ndarray of int of shape (n, n_drawn)
        The drawn bin (or category) of each drawn feature, as an index into its values.
    standard : ndarray of shape (n, n_continuous)
        The standard-normal draws of the continuous features.
    inverse : ndarray of shape (n, n_features)
        The perturbed inputs the model sees.
    """
    draw = np.float32 if np.dtype(dtype) == np.float32 else np.float64
    inverse = np.empty((n, sampler.n_features), dtype=dtype)
    indices = np.zeros((n, len(sampler.drawn)), dtype=np.intp)
    standard = np.zeros((n, len(sampler.continuous)), dtype=draw)
    step = max(1, _CHUNK // sampler.n_features)
    for start in range(0, n, step):
        stop = min(start + step, n)
        part = slice(start, stop)
        if len(sampler.drawn):
            u = rng.random((stop - start, len(sampler.drawn)), dtype=draw)
            idx = sampler._draw_indices(u)
            indices[part] = idx
            sampler._drawn_values(u, idx, rng, inverse[part])
        if len(sampler.continuous):
            z = rng.standard_normal((stop - start, len(sampler.continuous)), dtype=draw)
            standard[part] = z
            scale, mean = sampler.scale[sampler.continuous], sampler.mean[sampler.continuous]
            inverse[part, sampler.continuous] = z * scale + mean
    return indices, standard, inverse


def shared_views(
    sampler: TabularSampler, rows: np.ndarray, indices: np.ndarray, standard: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's surrogate inputs and distances over one shared neighbourhood.

    Parameters
    ----------
    rows : ndarray of float64 of shape (n_rows, n_features)
    indices, standard : ndarray
        From :func:`draw_shared` (``n`` samples).

    Returns
    -------
    interpretable : ndarray of float64 of shape (n_rows, n + 1, n_features)
        As :meth:`TabularSampler.sample`'s: sample 0 is the row, then the shared samples.
    distances : ndarray of float64 of shape (n_rows, n + 1)
    """
    rows = np.asarray(rows, dtype=np.float64)
    n_rows, n = len(rows), len(indices)
    own = sampler._row_indices(rows)
    interp0 = (rows - sampler.mean) / sampler.scale
    interpretable = np.empty((n_rows, n + 1, sampler.n_features))
    squared = np.zeros((n_rows, n + 1))
    every = len(sampler.drawn) == sampler.n_features
    continuous = standard.astype(np.float64)
    for r in range(n_rows):  # one row's (n, n_features) at a time: the temporaries stay small
        view = interpretable[r, 1:]
        if len(sampler.drawn):
            same = indices == own[r]
            if every:
                view[...] = same
            else:
                view[:, sampler.drawn] = same
            squared[r, 1:] += len(sampler.drawn) - np.count_nonzero(same, axis=1)
        if len(sampler.continuous):
            view[:, sampler.continuous] = continuous
            diff = continuous - interp0[r, sampler.continuous]
            squared[r, 1:] += np.einsum("nf,nf->n", diff, diff)
    interpretable[:, 0] = interp0
    interpretable[:, 0, sampler.drawn] = 1.0
    return interpretable, np.sqrt(squared)


class Neighbourhoods:
    """The surrogate inputs, model outputs and distances of blocks of rows, under any seed.

    Parameters
    ----------
    sampler : TabularSampler
    runner : ModelRunner
    X : ndarray of shape (n_samples, *input_shape)
        The validated rows (the model's dtype).
    target : ndarray of int64 of shape (n_samples,)
    n_samples : int
        Neighbourhood size per row (sample 0 is the row).
    global_rows : ndarray of int64 of shape (n_samples,)
        Each row's index in the caller's data (the per-row streams).
    shared : bool
        One neighbourhood per seed for every row (when :func:`instance_free` allows it),
        or one per row.
    timings : dict
        ``"sampling"`` and ``"model"`` seconds are added to it.
    """

    def __init__(
        self,
        sampler: TabularSampler,
        runner: ModelRunner,
        X: np.ndarray,
        target: np.ndarray,
        n_samples: int,
        global_rows: np.ndarray,
        *,
        shared: bool,
        timings: dict[str, float],
    ) -> None:
        self.sampler, self.runner, self.X, self.target = sampler, runner, X, target
        self.rows = X.reshape(len(X), -1).astype(np.float64)
        self.n_samples, self.global_rows, self.timings = n_samples, global_rows, timings
        self.shared = bool(shared) and instance_free(sampler)
        self._drawn: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def _shared_draws(self, run_seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The seed's shared samples and the model's outputs on them, drawn once."""
        if run_seed not in self._drawn:
            self._drawn.clear()
            t0 = time.perf_counter()
            indices, standard, inverse = draw_shared(
                self.sampler, self.n_samples - 1, shared_rng(run_seed), self.X.dtype
            )
            t1 = time.perf_counter()
            preds = self.runner.predict_validated(inverse.reshape(-1, *self.X.shape[1:]))
            self._drawn[run_seed] = (indices, standard, np.asarray(preds, dtype=np.float64))
            self.timings["sampling"] += t1 - t0
            self.timings["model"] += time.perf_counter() - t1
        return self._drawn[run_seed]

    def __call__(
        self, run_seed: int, block: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``interpretable`` (n_block, n_samples, n_features), ``labels`` (n_block, n_samples)
        and ``distances`` (n_block, n_samples) of the rows ``block`` (local positions)."""
        n_samples, target = self.n_samples, self.target
        t0 = time.perf_counter()
        if not self.shared:
            rngs = rngs_for_rows(run_seed, self.global_rows[block])
            interp, inverse, distances = self.sampler.sample(
                self.rows[block], n_samples, rngs, self.X.dtype
            )
            t1 = time.perf_counter()
            model_in = inverse.reshape(-1, *self.X.shape[1:])
            labels = model_outputs(self.runner, model_in, block, target, n_samples)
        else:
            indices, standard, preds = self._shared_draws(run_seed)
            t0 = time.perf_counter()
            interp, distances = shared_views(self.sampler, self.rows[block], indices, standard)
            t1 = time.perf_counter()
            at_rows = np.asarray(self.runner.predict_validated(self.X[block]), dtype=np.float64)
            labels = np.empty((len(block), n_samples))
            labels[:, 0] = at_rows[np.arange(len(block)), target[block]]
            labels[:, 1:] = preds[:, target[block]].T
        self.timings["sampling"] += t1 - t0
        self.timings["model"] += time.perf_counter() - t1
        return interp, labels, distances
