"""The model as the Shapley game sees it: a counted prediction function, and masked inputs.

Every model evaluation of the plugin goes through :class:`CountedModel`, which calls the
runner (so a native network runs on the chosen backend, in its numerics) and counts the
rows evaluated for ``meta["n_evals"]``. The rows and the background are validated once
per explanation; the masked samples built from them skip the runner's per-call checks
(:meth:`~xai_core.ModelRunner.predict_validated`).

shap's explainers mask features of a row with background values. For grouped features
(image patches, user groups) :class:`GroupGame` gives them an equivalent game over the
groups: the row explained is encoded as its index ``i >= 0`` in every group column and
background row ``b`` as ``-(b + 1)``, so each masked sample shap builds says, per group,
whether its features come from ``X[i]`` or from ``background[b]``; the game decodes that
into full inputs, all rows of a batch at once, and calls the model.
"""

from __future__ import annotations

import numpy as np

from xai_core import ModelRunner
from xai_shap.groups import FeatureGroups

__all__ = ["CountedModel", "GroupGame"]


class CountedModel:
    """``runner.predict_validated`` on flattened inputs, counting the rows evaluated.

    Parameters
    ----------
    runner : ModelRunner
    input_shape : tuple of int
        Shape of one sample; flattened inputs are reshaped to it.

    Attributes
    ----------
    n_rows : int
        Rows evaluated so far.
    n_outputs : int or None
        Width of the output, once known.
    """

    def __init__(self, runner: ModelRunner, input_shape: tuple[int, ...]) -> None:
        self.runner = runner
        self.input_shape = tuple(input_shape)
        self.n_rows = 0
        self.n_outputs: int | None = runner.n_outputs
        #: The dtype the runner gives the model inputs in (build them in it to skip a cast).
        self.dtype = runner.input_dtype

    def __call__(self, flat: np.ndarray) -> np.ndarray:
        """Outputs of shape (n_rows, n_outputs), float64, for inputs of shape (n_rows, n_features)."""
        flat = np.asarray(flat)
        n = len(flat)
        if n == 0:
            return np.zeros((0, self.n_outputs or 1))
        out = self.runner.predict_validated(flat.reshape((n, *self.input_shape)))
        self.n_rows += n
        self.n_outputs = out.shape[1]
        return out if out.dtype == np.float64 else out.astype(np.float64)


class GroupGame:
    """A game over feature groups that shap's tabular maskers can play.

    Parameters
    ----------
    model : CountedModel
    X : ndarray of shape (n_samples, n_features)
        The rows explained, flattened.
    background : ndarray of shape (n_background, n_features)
    groups : FeatureGroups
    """

    def __init__(
        self, model: CountedModel, X: np.ndarray, background: np.ndarray, groups: FeatureGroups
    ) -> None:
        self.model = model
        self.X = X
        self.background = background
        self.labels = groups.labels
        self.n_groups = groups.n_groups

    def rows(self) -> np.ndarray:
        """The explained rows as shap sees them: row ``i`` is ``i`` in every group, shape (n_samples, n_groups)."""
        return np.repeat(np.arange(len(self.X), dtype=np.float64)[:, None], self.n_groups, axis=1)

    def background_rows(self) -> np.ndarray:
        """The background as shap sees it: row ``b`` is ``-(b + 1)``, shape (n_background, n_groups)."""
        codes = -np.arange(1, len(self.background) + 1, dtype=np.float64)
        return np.repeat(codes[:, None], self.n_groups, axis=1)

    def __call__(self, codes: np.ndarray) -> np.ndarray:
        """Outputs for masked samples encoded as above, of shape (n_masked, n_groups)."""
        codes = np.asarray(codes)
        from_x = codes >= 0
        row = np.clip(codes.max(axis=1), 0, None).astype(np.int64)
        bg = np.clip(-codes.min(axis=1) - 1, 0, None).astype(np.int64)
        inputs = np.where(from_x[:, self.labels], self.X[row], self.background[bg])
        return self.model(inputs)
