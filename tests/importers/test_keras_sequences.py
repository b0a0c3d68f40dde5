"""Keras's Conv1D, 1-D pools, LSTM and GRU through from_keras, against Keras's own predict."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import xai_core as xai

L = keras.layers
# Keras's torch backend converts its tensors with a numpy 1 call numpy 2 warns about
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")

#: id -> (per-sample input shape, the layers after the input).
MODELS = {
    "conv1d-valid": ((12, 3), lambda: [L.Conv1D(4, 3, activation="relu")]),
    "conv1d-same-strided": ((12, 3), lambda: [L.Conv1D(4, 4, strides=2, padding="same")]),
    "conv1d-causal-dilated": ((12, 3), lambda: [L.Conv1D(5, 3, padding="causal", dilation_rate=2)]),
    "conv1d-grouped": ((12, 4), lambda: [L.Conv1D(6, 3, groups=2, use_bias=False)]),
    "conv1d-channels-first": ((3, 12), lambda: [L.Conv1D(4, 3, data_format="channels_first")]),
    "conv1d-causal-channels-first": (
        (3, 12),
        lambda: [L.Conv1D(4, 3, padding="causal", data_format="channels_first")],
    ),
    "maxpool1d-same": ((11, 3), lambda: [L.MaxPooling1D(3, strides=2, padding="same")]),
    "avgpool1d-same": ((11, 3), lambda: [L.AveragePooling1D(3, strides=2, padding="same")]),
    "global-average": ((9, 3), lambda: [L.GlobalAveragePooling1D()]),
    "global-max-keepdims": ((9, 3), lambda: [L.GlobalMaxPooling1D(keepdims=True)]),
    "lstm-last": ((7, 3), lambda: [L.LSTM(5)]),
    "lstm-sequences-backwards": (
        (7, 3),
        lambda: [L.LSTM(4, return_sequences=True, go_backwards=True)],
    ),
    "gru-reset-after": ((7, 3), lambda: [L.GRU(5, return_sequences=True)]),
    "gru-reset-before": ((7, 3), lambda: [L.GRU(4, reset_after=False)]),
    "gru-backwards-no-bias": ((7, 3), lambda: [L.GRU(4, go_backwards=True, use_bias=False)]),
    "classifier": (
        (16, 2),
        lambda: [
            L.Conv1D(6, 5, padding="same", activation="relu"),
            L.MaxPooling1D(2),
            L.LSTM(8, return_sequences=True),
            L.GRU(4, return_sequences=True),
            L.GlobalAveragePooling1D(),
            L.Dense(3, activation="softmax"),
        ],
    ),
}


def build(shape, layers, seed=0):
    model = keras.Sequential([keras.Input(shape), *layers()])
    rng = np.random.default_rng(seed)
    for v in model.weights:  # non-trivial biases and weights everywhere
        v.assign((rng.normal(size=v.shape) * 0.5).astype("float32"))
    return model


@pytest.mark.parametrize("case", list(MODELS), ids=list(MODELS))
def test_layer_equals_keras_predict(case):
    """Each sequence layer imported from a live model predicts what Keras predicts."""
    shape, layers = MODELS[case]
    model = build(shape, layers)
    X = np.random.default_rng(1).normal(size=(4, *shape)).astype("float32")
    net = xai.from_keras(model)
    want = model.predict(X, verbose=0)
    got = net.forward(X, xai.get_backend("cpu"))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_saved_keras_file_equals_keras_predict(tmp_path):
    """A .keras file of the Conv1D + LSTM + GRU classifier reads its cells' weights."""
    shape, layers = MODELS["classifier"]
    model = build(shape, layers, seed=2)
    model.save(tmp_path / "m.keras")
    X = np.random.default_rng(3).normal(size=(5, *shape)).astype("float32")
    net = xai.from_keras(tmp_path / "m.keras")
    np.testing.assert_allclose(net.predict(X), model.predict(X, verbose=0), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("layers", "words"),
    [
        (lambda: [L.LSTM(3, activation="relu")], "activation='relu'"),
        (lambda: [L.GRU(3, recurrent_activation="hard_sigmoid")], "recurrent_activation"),
    ],
    ids=["lstm-relu", "gru-hard-sigmoid"],
)
def test_unsupported_recurrent_options_are_refused(layers, words):
    """Activations other than tanh / sigmoid are refused, naming the option."""
    model = build((6, 3), layers)
    with pytest.raises(xai.CapabilityError, match=words):
        xai.from_keras(model)


def test_bidirectional_wrapper_is_refused_by_name():
    """Keras's Bidirectional wrapper is not imported; the refusal names it."""
    model = keras.Sequential([keras.Input((6, 3)), L.Bidirectional(L.LSTM(3))])
    with pytest.raises(xai.CapabilityError, match="Bidirectional"):
        xai.from_keras(model)
