"""What a LIME request will cost, from shapes and options alone (no model call).

``n`` rows, ``S`` samples per row, ``R = stability_seeds + 1`` runs, ``c`` columns (or
input elements of an image), ``K`` outputs: ``n * S * R`` model rows. A block of rows
(at least one) is perturbed at once; tables hold the interpretable and inverse samples,
their distances and the model's outputs, ``S * (c * (16 + itemsize) + 8 (K + 2))`` bytes
per row of the block, images their perturbed copies twice (the model's layout) and the
outputs, ``S * (2 c * itemsize + 8 (K + 2))``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core import Cost, ModelRunner

__all__ = ["lime_cost"]

#: Input elements of one block of perturbed rows (the explainer's ``_BLOCK_ELEMENTS``).
BLOCK_ELEMENTS = 2**22


def lime_cost(explainer: Any, runner: ModelRunner, X: np.ndarray, mode: str) -> Cost:
    """The :class:`xai_core.Cost` of ``explainer`` (a LimeExplainer) on ``X`` in ``mode``."""
    n = len(X)
    c = int(np.prod(X.shape[1:], dtype=np.int64))
    k = runner.n_outputs or 1
    runs = int(explainer.stability_seeds) + 1
    default = 5000 if mode == "tabular" else 1000
    s = int(explainer.n_samples) if explainer.n_samples is not None else default
    per_block = min(n, max(1, BLOCK_ELEMENTS // (s * c)))
    item = X.dtype.itemsize
    if mode == "tabular":
        per_row = s * (c * (16 + item) + 8 * (k + 2))
    else:
        per_row = s * (2 * c * item + 8 * (k + 2))
    detail = f"{n} rows x {s:,} samples x {runs:,} run(s)"
    advice = "lower n_samples (num_samples=) or stability_seeds"
    return Cost(n * s * runs + n, per_block * per_row, detail, advice)
