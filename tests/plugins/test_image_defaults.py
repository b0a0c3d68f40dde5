"""A network that records its image shape gets image explanations by default: superpixels, patches."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import xai_core as xai


@pytest.fixture(scope="module")
def cnn():
    """A native CNN over 1 x 12 x 12 images (it records image_shape), and two flat rows."""
    net = xai.nn.cnn((1, 12, 12))
    return net, np.random.default_rng(0).random((2, 144)).astype(np.float32)


def test_lime_uses_superpixels_when_the_model_knows_the_image(cnn):
    """No image_shape passed: LIME segments the 12 x 12 image instead of 144 tabular features."""
    net, X = cnn
    e = xai.explain(net, X, method="lime", n_samples=100, seed=0, progress=False)
    assert e.meta["image_shape"] == (12, 12)
    n_segments = np.asarray(e.meta["n_segments"])
    assert (n_segments < 144).all() and (n_segments > 1).all()
    # every pixel of a superpixel shares its weight
    seg = np.asarray(e.meta["segments"])[0].ravel()
    v = e.values[0].reshape(-1)
    for s in np.unique(seg):
        assert np.ptp(v[seg == s]) == 0
    assert e.top_features(0, 1)[0][0].startswith("pixel_")  # named by position, not x42


def test_shap_uses_patches_when_the_model_knows_the_image(cnn):
    """No image_shape passed: SHAP plays 4 x 4 patches (9 players), not 144 pixels."""
    net, X = cnn
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", xai.XaiWarning)  # the documented default background
        e = xai.explain(net, X, method="shap", seed=0, progress=False)
    assert "9 patches of 4x4 pixels" in str(e.meta["players"])
    v = e.values[0].reshape(12, 12)
    assert np.ptp(v[:4, :4]) == 0 and np.ptp(v[4:8, 8:]) == 0  # one value per patch


def test_tabular_data_keeps_tabular_lime(cnn):
    """Passing training_data asks for tabular LIME: the model's image shape does not override it."""
    net, X = cnn
    e = xai.explain(
        net,
        X,
        method="lime",
        training_data=np.random.default_rng(1).random((20, 144)),
        n_samples=100,
        seed=0,
        progress=False,
    )
    assert "segments" not in e.meta
