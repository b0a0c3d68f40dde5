"""LIME's runs: the surrogates of every row under each seed, and the figures drawn from them."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from xai_core import ModelRunner
from xai_core.progress import LONG_WORK_UNITS, progress_bar
from xai_lime.stability import pairwise_stability
from xai_lime.surrogate import SurrogateFit

__all__ = ["Run", "lime_meta", "model_outputs", "run_seeds"]


class Run:
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


def run_seeds(
    seeds: list[int],
    n_rows: int,
    per_block: int,
    process: Callable[[int, np.ndarray], Iterator[tuple[np.ndarray, Any, np.ndarray]]],
    *,
    unit: str,
    progress: bool | None,
) -> list[Run]:
    """Explain every row under every seed, a block of rows at a time.

    ``process(seed, block)`` yields ``(rows, fit, model output at the rows)``; ``block``
    holds local row positions. A bar is shown as :func:`xai_core.progress.show_progress`
    decides, counting blocks as the units of work.
    """
    n_blocks = -(-n_rows // per_block) * len(seeds)
    runs = []
    total = n_rows * len(seeds)
    with progress_bar(
        total, progress=progress, desc="lime", unit=unit, long=n_blocks >= LONG_WORK_UNITS
    ) as bar:
        for run_seed in seeds:
            run = Run(n_rows)
            for start in range(0, n_rows, per_block):
                block = np.arange(start, min(start + per_block, n_rows))
                for rows, fit, prediction in process(run_seed, block):
                    run.store(rows, fit, prediction)
                bar.update(len(block))
            runs.append(run)
    return runs


def model_outputs(
    runner: ModelRunner, model_in: np.ndarray, block: np.ndarray, target: np.ndarray, n_samples: int
) -> np.ndarray:
    """The explained output of every perturbed sample of a block of rows, (n_rows, n_samples)."""
    preds = np.asarray(runner.predict_validated(model_in), dtype=np.float64)
    preds = preds.reshape(len(block), n_samples, -1)
    return preds[np.arange(len(block)), :, target[block]]


def lime_meta(
    runs: list[Run],
    *,
    seeds: list[int],
    top_k: int,
    settings: dict[str, Any],
) -> dict[str, Any]:
    """``meta`` of a LIME explanation: the first run's per-row figures and the stability of all runs.

    Parameters
    ----------
    runs : list of Run
        The run with the main seed first.
    seeds : list of int
        The seed of each run.
    top_k : int
        Size of the top-feature sets compared across runs.
    settings : dict
        Entries added as they are (mode, n_samples, kernel width...).
    """
    main = runs[0]
    n_rows = len(main.coef)
    meta: dict[str, Any] = {
        "score": main.score,
        "local_pred": main.local_pred,
        "intercept": main.intercept,
        "prediction": main.prediction,
        "n_selected": main.n_selected,
        **settings,
    }
    if len(runs) < 2:
        meta["stability"] = None
        return meta
    k = max(1, min(int(top_k), max(r.n_selected for r in runs)))
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
        "seeds": list(seeds),
    }
    return meta
