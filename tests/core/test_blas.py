"""BLAS threads during an explanation: set as asked inside, the caller's settings back after."""

from __future__ import annotations

import numpy as np
import pytest
import threadpoolctl

import xai_core as xai
from xai_core.attribution.blas import blas_threads


def blas_counts() -> list[int]:
    """The thread count of every BLAS threadpoolctl sees (the oracle)."""
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


@pytest.mark.parametrize("outer", [1, 2])
def test_the_model_runs_on_the_asked_threads_and_the_callers_come_back(outer):
    """A black box sees blas_threads=1 inside explain(), whatever the caller set; after it the
    caller's count is back, and blas_threads=None leaves the caller's count alone."""
    seen: list[list[int]] = []

    def fn(X):
        seen.append(blas_counts())
        return np.tanh(np.asarray(X) @ np.ones((3, 2)))

    # two named outputs: the core needs no probe call to learn the output width
    model = xai.BlackBoxModel(fn, input_shape=(3,), output_names=["a", "b"])
    X = np.random.default_rng(0).normal(size=(4, 3))
    xai.explain(model, X, method="shap", algorithm="exact", background=X, target=0)  # imports
    seen.clear()
    with threadpoolctl.threadpool_limits(limits=outer, user_api="blas"):
        before = blas_counts()
        assert before
        xai.explain(model, X, method="shap", algorithm="exact", background=X, target=0)
        assert blas_counts() == before
        assert seen and all(counts == [1] * len(before) for counts in seen)
        seen.clear()
        xai.explain(
            model, X, method="shap", algorithm="exact", background=X, target=0, blas_threads=None
        )
        assert seen and all(counts == before for counts in seen)


def test_nested_blocks_share_the_first_limit():
    """An inner block (a chunk inside a chunked run) keeps the outer block's limit and does not
    restore the caller's settings before the outer block ends."""
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        before = blas_counts()
        assert before  # numpy's BLAS is loaded: there is something to limit
        with blas_threads(1):
            with blas_threads(3):
                assert blas_counts() == [1] * len(before)
            assert blas_counts() == [1] * len(before)
        assert blas_counts() == before
