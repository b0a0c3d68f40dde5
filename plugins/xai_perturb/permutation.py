"""Feature permutation: the output's drop when a feature's values are shuffled across rows.

Captum's ``FeaturePermutation``: for each feature (or group of a feature mask), every row
takes that feature's values from another row of the data, by a random permutation of the
rows drawn per group, and the drop of the target output is the feature's attribution. The
permutation of group ``k`` is drawn from ``[seed, k]`` over all the rows of the request,
so a seeded result is the same whatever the chunks or the executor.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from xai_core import Cost, Explainer, Explanation, ModelRunner, ValidationError
from xai_core.attribution.options import Int, Progress, Seed
from xai_perturb.ablation import _sets_per_call, output_drops
from xai_perturb.sets import Groups

__all__ = ["FeaturePermutation"]


class FeaturePermutation(Explainer):
    """Shuffle each feature, or each group of a feature mask, across the rows; record the drop.

    Parameters
    ----------
    feature_mask : array-like of int, optional
        A group id per feature, of a sample's shape (shared by every row); default every
        feature on its own.
    data : array-like of shape (n_rows, *input_shape), optional
        The rows whose values are permuted into each feature. Default: the rows explained
        (Captum's semantics, a permutation within the batch), all of them even when the
        request runs in chunks.
    seed : int, optional
        Seeds the permutations (one per group); ``None`` draws one, kept in ``meta``.
    perturbations_per_eval : int, optional
        Groups per row evaluated in one model call.
    progress : bool, optional

    Notes
    -----
    Needs at least two rows of ``data``. ``values`` has shape (n_samples, *input_shape);
    ``base_values`` is ``f(x)[target]`` (the method is not additive).
    """

    name: ClassVar[str] = "feature_permutation"
    requires: ClassVar[frozenset[str]] = frozenset({"predict"})
    constraints: ClassVar[dict] = {
        "perturbations_per_eval": Int(1, allow_none=True),
        "progress": Progress(),
        "seed": Seed(),
    }

    def __init__(
        self,
        feature_mask: Any = None,
        data: Any = None,
        seed: int | None = 0,
        perturbations_per_eval: int | None = None,
        progress: bool | None = None,
    ) -> None:
        self.feature_mask = feature_mask
        self.data = data
        self.seed = seed
        self.perturbations_per_eval = perturbations_per_eval
        self.progress = progress

    def prepare(self, runner: ModelRunner, X: np.ndarray) -> dict[str, Any]:
        """Every chunk permutes the values of all the rows, not of its own."""
        return {"data": X} if self.data is None else {}

    def _data(self, runner: ModelRunner, X: np.ndarray) -> np.ndarray:
        data = X if self.data is None else runner.check_X(self.data)
        if len(data) < 2:
            raise ValidationError(
                f"feature_permutation shuffles values across rows and needs at least 2; "
                f"got {len(data)}. Pass more rows, or data= rows to draw values from."
            )
        return data

    def estimate_cost(self, runner: ModelRunner, X: np.ndarray) -> Cost:
        n, d = len(X), math.prod(X.shape[1:])
        groups = Groups(X.shape[1:], self.feature_mask, 1)
        self._data(runner, X)
        per_call = min(_sets_per_call(self.perturbations_per_eval, n, d), groups.count)
        return Cost(
            model_rows=n * (groups.count + 1),
            peak_bytes=n * per_call * d * (2 * X.itemsize + 9) + n * d * 8,
            detail=f"{n} rows x {groups.count} feature groups",
            advice="group features with feature_mask, or lower perturbations_per_eval",
        )

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """The drop of ``output[target]`` when each feature's group is permuted across rows."""
        groups = Groups(X.shape[1:], self.feature_mask, 1)
        data = self._data(runner, X)
        rows = self.rows(len(X))
        seed = self.run_seed()

        def fill(start: int, stop: int) -> np.ndarray:
            # per group k, row r takes the values of data row perm_k[r] (perm over all rows)
            perms = np.stack(
                [
                    np.random.default_rng([seed, k]).permutation(len(data))
                    for k in range(start, stop)
                ]
            )
            source = perms[:, rows % len(data)].T  # (n, k)
            return data[source]

        values, output = output_drops(
            runner,
            X,
            target,
            groups,
            fill,
            rows,
            per_eval=self.perturbations_per_eval,
            progress=self.progress,
            desc=self.name,
        )
        meta = {"output": output, "groups": groups.count, "seed": seed}
        return Explanation(values=values, base_values=output, target=target, data=X, meta=meta)
