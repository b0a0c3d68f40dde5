"""Weight forms kept for one explanation: made once inside the scope, fresh outside it."""

from __future__ import annotations

import threading

import numpy as np

import xai_core as xai
from xai_core import nn
from xai_core.kernels.weight_cache import derived, weights_fixed


def counting_transpose():
    calls = []

    def make(w):
        calls.append(1)
        return w.T.copy()

    return make, calls


def test_forms_are_made_once_inside_the_scope_and_every_time_outside():
    w = np.arange(6.0).reshape(2, 3)
    make, calls = counting_transpose()
    derived(w, "t", make)
    derived(w, "t", make)
    assert len(calls) == 2
    with weights_fixed():
        a = derived(w, "t", make)
        assert derived(w, "t", make) is a
        derived(w, "other form", make)
        derived(w.copy(), "t", make)  # another array: its own form
    assert len(calls) == 5
    np.testing.assert_array_equal(a, w.T)


def test_a_nested_scope_starts_afresh_and_gives_the_outer_forms_back():
    w = np.ones((2, 2))
    make, calls = counting_transpose()
    with weights_fixed():
        outer = derived(w, "t", make)
        with weights_fixed():
            assert derived(w, "t", make) is not outer
        assert derived(w, "t", make) is outer
    assert len(calls) == 2


def test_another_thread_makes_its_own_forms():
    w = np.ones((2, 2))
    make, calls = counting_transpose()
    with weights_fixed():
        derived(w, "t", make)
        worker = threading.Thread(target=lambda: [derived(w, "t", make) for _ in range(2)])
        worker.start()
        worker.join()
    assert len(calls) == 3  # the worker is outside any scope: a new form per call


def cnn(seed=0) -> nn.Sequential:
    layers = [
        nn.Reshape((1, 8, 8)),
        nn.Conv2D(4, 3, padding=1),
        nn.ReLU(),
        nn.Conv2D(4, 3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Dense(2),
        nn.Softmax(),
    ]
    return nn.Sequential(layers, input_shape=(64,), seed=seed)


def test_explanations_after_training_in_place_read_the_new_weights(tmp_path):
    """Training between two explanations changes the weights in place: the second explanation
    equals one of a fresh copy of the trained network, not the first."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 64)).astype(np.float32)
    y = (X[:, :32].sum(axis=1) > 0).astype(np.int64)
    net = cnn()
    before = xai.explain(net, X[:3], method="saliency", target=0, progress=False).values
    net.fit(X, y, epochs=3, learning_rate=0.5, batch_size=8)
    after = xai.explain(net, X[:3], method="saliency", target=0, progress=False).values
    net.save(tmp_path / "trained.xai")
    fresh = xai.load_model(tmp_path / "trained.xai")
    expected = xai.explain(fresh, X[:3], method="saliency", target=0, progress=False).values
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, expected, rtol=1e-6, atol=1e-7)


def test_a_form_dies_with_its_array():
    """Temporaries (a weight cast for one call) leave no form behind inside the scope."""
    from xai_core.kernels import weight_cache

    w = np.ones((3, 3), dtype=np.float32)
    make, calls = counting_transpose()
    with weights_fixed():
        for _ in range(50):
            derived(w.astype(np.float64), "t", make)
        derived(w, "t", make)
        assert len(weight_cache._local.forms) == 1
