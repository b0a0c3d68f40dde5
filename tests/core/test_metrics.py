"""Agreement metrics against closed forms and scipy, vectorised over rows."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.stats import spearmanr

import xai_core as xai
from xai_core.compare import metrics

rows = arrays(
    np.float64,
    st.tuples(st.integers(1, 5), st.integers(2, 12)),
    elements=st.floats(-100, 100, allow_nan=False, width=64),
)


@settings(max_examples=50, deadline=None)
@given(rows)
def test_identical_attributions_agree_perfectly(a):
    """An attribution compared with itself has cosine 1, full overlap, rho 1 and zero difference."""
    table = metrics.agreement(a, a.copy(), k=3)
    np.testing.assert_allclose(table["cosine"], 1.0)
    np.testing.assert_array_equal(table["top_k_overlap"], 1.0)
    np.testing.assert_allclose(table["spearman"], 1.0)
    np.testing.assert_array_equal(table["max_abs_diff"], 0.0)
    np.testing.assert_array_equal(table["max_rel_diff"], 0.0)


def test_against_closed_forms_and_scipy():
    """Cosine, Spearman and top-k equal their definitions on random rows."""
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(6, 20)), rng.normal(size=(6, 20))
    cos = [x @ y / np.linalg.norm(x) / np.linalg.norm(y) for x, y in zip(a, b)]
    np.testing.assert_allclose(metrics.cosine_similarity(a, b), cos)
    np.testing.assert_allclose(
        metrics.spearman(a, b), [spearmanr(x, y).statistic for x, y in zip(a, b)]
    )
    top = [
        len(set(np.argsort(-abs(x))[:5]) & set(np.argsort(-abs(y))[:5])) / 5 for x, y in zip(a, b)
    ]
    np.testing.assert_allclose(metrics.top_k_overlap(a, b, k=5), top)


def test_scale_and_sign():
    """Cosine and Spearman ignore a positive scale; a sign flip gives -1."""
    a = np.array([[1.0, -2.0, 3.0, 0.5]])
    assert metrics.cosine_similarity(a, 7 * a)[0] == pytest.approx(1.0)
    assert metrics.spearman(a, -a)[0] == pytest.approx(-1.0)
    assert metrics.max_rel_difference(a, 2 * a)[0] == pytest.approx(1.0)


def test_zero_rows():
    """Two zero rows agree; a zero row against a non-zero one does not."""
    z, a = np.zeros((1, 3)), np.array([[1.0, 2.0, 3.0]])
    assert metrics.cosine_similarity(z, z)[0] == 1.0 and metrics.cosine_similarity(z, a)[0] == 0.0
    assert metrics.max_rel_difference(z, a)[0] == np.inf


def test_images_are_flattened_and_shapes_checked():
    """Image-shaped attributions compare per row; mismatched shapes are an error."""
    a = np.random.default_rng(0).normal(size=(2, 4, 4))
    assert metrics.cosine_similarity(a, a).shape == (2,)
    with pytest.raises(xai.ShapeError, match=r"got \(2, 4, 4\) and \(2, 16\)"):
        metrics.cosine_similarity(a, a.reshape(2, 16))
