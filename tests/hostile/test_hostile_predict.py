"""ModelRunner.predict on black boxes that return NaN or infinity: one error naming the rows.

``OUTPUTS`` is one row per black box: what it does to its outputs, and the rows
:class:`~xai_core.ModelOutputError` must name (``None``: the outputs are finite and come back
as they are). Explainers and the what-if tool keep naming themselves (``test_hostile_outputs``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import xai_core as xai
from xai_core.errors import ModelOutputError

X = np.random.default_rng(0).uniform(0, 1, (6, 3))
X[[1, 4], 0] = 2.0


def _spoil(value: float, where: Callable[[np.ndarray], np.ndarray]) -> Callable:
    def f(Z: np.ndarray) -> np.ndarray:
        out = np.stack([Z.sum(1), -Z.sum(1)], axis=1)
        out[where(Z)] = value
        return out

    return f


#: name -> (the black box, the rows named or None)
# fmt: off
OUTPUTS: dict[str, tuple[Callable, list[int] | None]] = {
    "finite": (_spoil(0.0, lambda Z: np.zeros(len(Z), bool)), None),
    "inf-on-two-rows": (_spoil(np.inf, lambda Z: Z[:, 0] > 1.5), [1, 4]),
    "minus-inf-on-two-rows": (_spoil(-np.inf, lambda Z: Z[:, 0] > 1.5), [1, 4]),
    "nan-on-two-rows": (_spoil(np.nan, lambda Z: Z[:, 0] > 1.5), [1, 4]),
    "inf-everywhere": (_spoil(np.inf, lambda Z: np.ones(len(Z), bool)), [0, 1, 2, 3, 4, 5]),
}
# fmt: on


@pytest.mark.parametrize("case", list(OUTPUTS), ids=list(OUTPUTS))
@pytest.mark.parametrize("batch_size", [None, 2], ids=["one-batch", "batches-of-2"])
def test_predict_refuses_non_finite_outputs(case: str, batch_size: int | None) -> None:
    """Infinite or NaN outputs never pass ModelRunner.predict; finite ones are returned as given."""
    f, rows = OUTPUTS[case]
    options = {} if batch_size is None else {"batch_size": batch_size}
    runner = xai.ModelRunner(xai.as_model(f, input_shape=(3,)), **options)
    if rows is None:
        np.testing.assert_allclose(runner.predict(X), f(X), rtol=1e-6)  # (float32 inputs)
        return
    with pytest.raises(ModelOutputError) as info:
        runner.predict(X)
    assert info.value.method == "ModelRunner.predict" and list(info.value.rows) == rows
    assert "NaN or infinite outputs" in str(info.value)
    assert runner.predict_validated(X).shape == (6, 2)  # the unchecked path, for the methods
