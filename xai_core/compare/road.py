"""ROAD: remove and debias (Rong et al., 2022; Quantus's ``ROAD``).

For each percentage ``p``, the ``int(n_pixels * p / 100)`` features with the largest
attribution (MoRF, most relevant first) or the smallest (LeRF) are removed and the model
runs again; the curve is the explained output (and the share of rows that keep their
predicted class, Quantus's figure) against ``p``. A faithful attribution makes the MoRF
curve fall fast and the LeRF curve stay high.

Removal depends on the data:

- **Images** (rows that are ``(C, H, W)``, ``(H, W, C)`` or ``(H, W)``): pixels are ranked by
  their channel-summed signed attribution, and every channel of a removed pixel is replaced
  by the *noisy linear imputation* of the paper (as Quantus's ``noisy_linear_imputation``):
  the removed values solve the sparse linear system in which each removed pixel equals the
  weighted mean of its in-image neighbours, weight 1/6 for the 4 direct and 1/12 for the 4
  diagonal ones (divided by the sum of the weights of the neighbours inside the image);
  then Gaussian noise of standard deviation ``noise`` is added. Imputing from the neighbours
  stops the removal's shape from leaking class information (the "debias" of the name).
- **Tabular** rows (flat features): a removed feature takes its mean over ``background``
  (``X`` by default), with no noise: there is no neighbourhood to impute from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core.errors import ShapeError, ValidationError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ROAD", "road", "noisy_linear_imputation"]

#: Neighbour offsets (row, column) and weights of the imputation (Rong et al., 2022).
NEIGHBOURS = (
    ((1, 1), 1 / 12),
    ((0, 1), 1 / 6),
    ((-1, 1), 1 / 12),
    ((1, -1), 1 / 12),
    ((0, -1), 1 / 6),
    ((-1, -1), 1 / 12),
    ((1, 0), 1 / 6),
    ((-1, 0), 1 / 6),
)


def noisy_linear_imputation(
    image: np.ndarray, removed: np.ndarray, noise: float = 0.01, rng: Any = None
) -> np.ndarray:
    """One image with its ``removed`` pixels imputed from their neighbours, plus noise.

    Parameters
    ----------
    image : ndarray of shape (C, H, W)
    removed : ndarray of bool of shape (H, W)
    noise : float, default=0.01
        Standard deviation of the Gaussian noise added to the imputed values.
    rng : numpy.random.Generator, optional

    Returns
    -------
    ndarray of shape (C, H, W), float64
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import spsolve

    c, h, w = image.shape
    flat = image.reshape(c, h * w).astype(np.float64)
    idx = np.flatnonzero(removed)
    m = len(idx)
    out = flat.copy()
    if m == 0:
        return out.reshape(c, h, w)
    var = np.full(h * w, -1)
    var[idx] = np.arange(m)
    rows, cols = idx // w, idx % w
    b = np.zeros((m, c))
    total = np.ones(m)
    a_rows, a_cols, a_vals = [], [], []
    for (dr, dc), weight in NEIGHBOURS:
        r, q = rows + dr, cols + dc
        inside = (r >= 0) & (r < h) & (q >= 0) & (q < w)
        total[~inside] -= weight
        nb = np.where(inside, r * w + q, 0)
        known = inside & (var[nb] < 0)
        b[known] -= weight * flat[:, nb[known]].T
        unknown = inside & (var[nb] >= 0)
        a_rows.append(np.flatnonzero(unknown))
        a_cols.append(var[nb[unknown]])
        a_vals.append(np.full(int(unknown.sum()), weight))
    a_rows.append(np.arange(m))
    a_cols.append(np.arange(m))
    a_vals.append(-total)
    A = coo_matrix(
        (np.concatenate(a_vals), (np.concatenate(a_rows), np.concatenate(a_cols))), shape=(m, m)
    ).tocsc()
    solution = np.asarray(spsolve(A, b)).reshape(m, c)
    rng = np.random.default_rng() if rng is None else rng
    out[:, idx] = solution.T + noise * rng.standard_normal((c, m))
    return out.reshape(c, h, w)


@dataclass(frozen=True, eq=False)
class ROAD:
    """ROAD curves of one explanation.

    Attributes
    ----------
    percentages : ndarray of shape (n_steps,)
    morf, lerf : ndarray of shape (n_samples, n_steps)
        Explained output with the most (least) relevant ``p`` % of features removed.
    morf_kept, lerf_kept : ndarray of bool of shape (n_samples, n_steps)
        Whether the row keeps its predicted class.
    imputation : str
        ``"noisy_linear"`` (images) or ``"background_mean"`` (tabular).
    """

    percentages: np.ndarray
    morf: np.ndarray
    lerf: np.ndarray
    morf_kept: np.ndarray
    lerf_kept: np.ndarray
    method: str
    imputation: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def curve(self) -> pd.DataFrame:
        """Per percentage: mean output and share of kept predictions, both orders."""
        import pandas as pd

        return pd.DataFrame(
            {
                "percentage": self.percentages,
                "morf_output": self.morf.mean(axis=0),
                "lerf_output": self.lerf.mean(axis=0),
                "morf_kept": self.morf_kept.mean(axis=0),
                "lerf_kept": self.lerf_kept.mean(axis=0),
            }
        )

    def __repr__(self) -> str:
        return (
            f"ROAD(method={self.method!r}, imputation={self.imputation!r}, mean output "
            f"MoRF {self.morf.mean():.4g}, LeRF {self.lerf.mean():.4g})"
        )


def _removal_masks(scores: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(MoRF, LeRF) masks of the ``count`` highest / lowest scores per row (stable ties)."""
    n, nf = scores.shape
    most = np.argsort(-scores, axis=1, kind="stable")[:, :count]
    least = np.argsort(scores, axis=1, kind="stable")[:, :count]
    morf = np.zeros((n, nf), dtype=bool)
    lerf = np.zeros((n, nf), dtype=bool)
    np.put_along_axis(morf, most, True, axis=1)
    np.put_along_axis(lerf, least, True, axis=1)
    return morf, lerf


def road(
    model: Any,
    explanation: Any,
    *,
    percentages: Any = None,
    noise: float = 0.01,
    background: Any = None,
    backend: Any = "cpu",
    seed: int | None = 0,
) -> ROAD:
    """MoRF and LeRF curves with neighbour imputation (images) or mean replacement (tabular).

    Parameters
    ----------
    model : Model, ModelRunner, torch.nn.Module, keras.Model, str, path, estimator or callable
    explanation : Explanation
        With ``data`` (the explained rows) and ``target``.
    percentages : sequence of float, optional
        In [0, 100]; Quantus's default ``range(1, 100, 2)``.
    noise : float, default=0.01
        Standard deviation of the imputation noise (images).
    background : array-like of shape (n_background, *input_shape), optional
        Tabular data: rows whose mean replaces a removed feature; ``explanation.data`` by default.
    backend : str or Backend, default="cpu"
    seed : int or None, default=0
        Seeds the imputation noise: row ``i`` at step ``s`` draws from
        ``numpy.random.default_rng([seed, i, s])``.

    Returns
    -------
    ROAD
    """
    from xai_core.attribution.explanation import Explanation
    from xai_core.attribution.seeds import resolve_seed
    from xai_core.images import sample_layout
    from xai_core.model.runner import ModelRunner

    if not isinstance(explanation, Explanation) or explanation.data is None:
        raise ValidationError("explanation must be an Explanation with data (the explained rows).")
    explanation = explanation.as_batch()  # e[0]: one row
    seed = resolve_seed(seed)
    pct = np.asarray(list(range(1, 100, 2)) if percentages is None else percentages, float)
    if pct.ndim != 1 or not len(pct) or (pct < 0).any() or (pct > 100).any():
        raise ValidationError(f"percentages must be numbers in [0, 100]; got {percentages!r}.")
    runner = (
        model
        if isinstance(model, ModelRunner)
        else ModelRunner(model, backend, example=explanation.data)
    )
    X = runner.check_X(explanation.data, "explanation.data")
    values = np.asarray(explanation.values, dtype=np.float64)
    if values.shape != X.shape:
        raise ShapeError(f"explanation.values must have shape {X.shape}; got {values.shape}.")
    n = len(X)
    target = np.asarray(explanation.target)
    out0 = runner.predict(X)
    predicted = out0.argmax(axis=1)
    layout = sample_layout(X.shape[1:], strict=False) if X.ndim > 2 else None
    if layout is not None:
        chw, scores = layout.to_chw(X), layout.to_chw(values).sum(axis=1).reshape(n, -1)
        imputation = "noisy_linear"
    else:
        flat = X.reshape(n, -1).astype(np.float64)
        bg = (
            flat
            if background is None
            else np.asarray(background, np.float64).reshape(-1, flat.shape[1])
        )
        fill, scores = bg.mean(axis=0), values.reshape(n, -1)
        imputation = "background_mean"
    curves = {k: np.empty((n, len(pct))) for k in ("morf", "lerf")}
    kept = {k: np.empty((n, len(pct)), dtype=bool) for k in ("morf", "lerf")}
    for s, p in enumerate(pct):
        masks = dict(zip(("morf", "lerf"), _removal_masks(scores, int(scores.shape[1] * p / 100))))
        for order, mask in masks.items():
            if layout is not None:
                images = np.stack(
                    [
                        noisy_linear_imputation(
                            chw[i],
                            mask[i].reshape(chw.shape[2:]),
                            noise,
                            np.random.default_rng([seed, i, s]),
                        )
                        for i in range(n)
                    ]
                )
                batch = layout.from_chw(images, X.shape[1:])
            else:
                batch = np.where(mask, fill, flat).reshape(X.shape)
            out = runner.predict(np.asarray(batch, dtype=X.dtype))
            curves[order][:, s] = out[np.arange(n), target]
            kept[order][:, s] = out.argmax(axis=1) == predicted
    return ROAD(
        percentages=pct,
        morf=curves["morf"],
        lerf=curves["lerf"],
        morf_kept=kept["morf"],
        lerf_kept=kept["lerf"],
        method=explanation.method,
        imputation=imputation,
        options={"noise": noise, "seed": seed},
    )
