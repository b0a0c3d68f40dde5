"""The model as the Shapley game sees it: a counted prediction function.

Every model evaluation of the plugin goes through :class:`CountedModel`, which calls the
runner (so a native network runs on the chosen backend, in its numerics) and counts the
rows evaluated for ``meta["n_evals"]``. The rows and the background are validated once
per explanation; the masked samples built from them skip the runner's per-call checks
(:meth:`~xai_core.ModelRunner.predict_validated`).

Masked inputs are built from the rows and the background by
:func:`~xai_shap.kernel.coalition_values`, for plain features and for groups (image
patches, user groups) alike.
"""

from __future__ import annotations

import numpy as np

from xai_core import ModelRunner

__all__ = ["CountedModel"]


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
