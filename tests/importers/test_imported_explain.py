"""Imported networks work unchanged with every explainer, comparison, the projector and the report."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import xai_core as xai

from .conftest import TORCH_MODELS, randomize_batchnorm
from .test_from_keras import keras_cnn

SHAP = {
    "algorithm": "kernel",
    "max_evals": 300,
    "patch_size": 4,
    "background": np.zeros((1, 1, 12, 12), np.float32),
    "progress": False,
}
LIME = {"n_samples": 150, "progress": False}


@pytest.fixture(scope="module")
def imported_cnn():
    """The ResNet-style CNN imported from PyTorch, with class names, and a few inputs."""
    torch.manual_seed(0)
    make, shape = TORCH_MODELS["resnet"]
    names = [f"digit <{i}>" for i in range(10)]
    net = xai.from_torch(randomize_batchnorm(make()), torch.zeros(2, *shape), output_names=names)
    X = np.random.default_rng(0).uniform(0, 1, (6, *shape)).astype(np.float32)
    return net, X


@pytest.mark.parametrize("backend", ["cpu", "gpu", "tpu"])
def test_ig_shap_lime_on_every_backend(imported_cnn, backend):
    """IG, SHAP and LIME explain the imported CNN on each backend; IG stays complete."""
    net, X = imported_cnn
    ig = xai.explain(net, X[:2], method="ig", backend=backend, steps=16, progress=False)
    assert ig.values.shape == (2, 1, 12, 12)
    tol = 1e-3 if backend != "tpu" else 5e-2
    assert np.all(np.abs(ig.meta["convergence_delta"]) <= tol)
    for method, options in (("shap", SHAP), ("lime", LIME)):
        e = xai.explain(net, X[:1], method=method, backend=backend, **options)
        assert e.values.shape == (1, 1, 12, 12) and np.isfinite(e.values).all()
        assert np.abs(e.values).max() > 0


def test_keras_nhwc_network_compares_across_backends():
    """An imported NHWC Keras CNN runs on gpu and tpu and agrees with the cpu."""
    net = xai.from_keras(keras_cnn())
    X = np.random.default_rng(1).uniform(0, 1, (2, 9, 10, 3)).astype(np.float32)
    c = xai.compare_backends(
        net, X, method="ig", backends=("cpu", "gpu", "tpu"), steps=8, progress=False
    )
    cos = c.summary["mean_cosine"]
    assert cos["gpu"] > 0.9999 and cos["tpu"] > 0.99


def test_compare_methods_faithfulness_projector_report(imported_cnn, tmp_path):
    """compare_methods, faithfulness, the projector of a named node and the report all take it."""
    net, X = imported_cnn
    m = xai.compare_methods(
        net,
        X[:2],
        methods=("ig", "shap"),
        method_options={"ig": {"steps": 8, "progress": False}, "shap": SHAP},
    )
    assert set(m.explanations) == {"ig", "shap"}
    ig = m.explanations["ig"]
    f = xai.faithfulness(net, ig, steps=6, n_random=2, infidelity_samples=10)
    assert np.isfinite(f.summary.select_dtypes("number").to_numpy()).all()
    acts = xai.ModelRunner(net, "cpu").activations(X, "/layer1/Add")
    assert acts.shape == (6, 8, 12, 12)
    p = xai.project(net, X, layer="/layer2/Relu_1", labels=net.predict(X).argmax(1))
    assert p.coordinates.shape == (6, 2) and p.vectors.shape == (6, 16 * 6 * 6)
    r = xai.Report("imported <CNN>", seed=0)
    r.add(ig)
    r.add(p)
    html = r.save(tmp_path / "r.html").read_text(encoding="utf-8")
    assert "digit &lt;" in html and "digit <" not in html


def test_imported_network_saves_and_loads(imported_cnn, tmp_path):
    """An imported network saves as weights plus JSON and loads to the same outputs."""
    net, X = imported_cnn
    net.save(tmp_path / "cnn.npz")
    back = xai.load_model(tmp_path / "cnn.npz")
    np.testing.assert_array_equal(back.predict(X), net.predict(X))
    assert back.output_names == net.output_names
