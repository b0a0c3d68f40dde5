"""One Keras layer at a time: the imported node's output equals Keras's, its gradient torch's.

Keras runs on its torch backend, so the gradient oracle is torch autograd through the
Keras model itself; the native network's gradient comes from its own backward pass.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import torch

import xai_core as xai
from xai_core import nn
from xai_core.errors import CapabilityError, ValidationError

RNG = np.random.default_rng(0)


def _adapted_normalization():
    layer = keras.layers.Normalization(axis=-1)
    layer.adapt(RNG.normal(2.0, 3.0, (64, 5, 6, 3)).astype(np.float32))
    return layer


#: id -> (per-sample input shape, a function making the layer (or a function of a tensor)).
LAYERS = {
    "normalization-config": (
        (5, 6, 3),
        lambda: keras.layers.Normalization(mean=[1.0, -2.0, 0.5], variance=[4.0, 0.25, 1.0]),
    ),
    "normalization-adapted": ((5, 6, 3), _adapted_normalization),
    "normalization-invert": (
        (5, 6, 3),
        lambda: keras.layers.Normalization(
            mean=[1.0, -2.0, 0.5], variance=[4.0, 0.25, 1.0], invert=True
        ),
    ),
    "rescaling-per-channel": (
        (5, 6, 3),
        lambda: keras.layers.Rescaling([0.5, 2.0, -1.0], offset=[0.1, 0.0, -0.3]),
    ),
    "layer-norm": ((5, 6, 4), lambda: keras.layers.LayerNormalization(epsilon=1e-6)),
    "layer-norm-flat-no-centre": (
        (7,),
        lambda: keras.layers.LayerNormalization(center=False),
    ),
    "cropping": ((7, 8, 2), lambda: keras.layers.Cropping2D(((1, 2), (0, 3)))),
    "cropping-rows": ((7, 8, 2), lambda: keras.layers.Cropping2D(((2, 1), (0, 0)))),
    "dense-on-pixels": ((4, 5, 3), lambda: keras.layers.Dense(6, activation="gelu")),
    "dense-on-tokens": ((4, 3), lambda: keras.layers.Dense(5, activation="silu")),
    "ops-add-number": ((4, 5, 3), lambda: lambda x: x + 3.0),
    "ops-number-minus": ((4, 5, 3), lambda: lambda x: 3.0 - x),
    "ops-times-number": ((4, 5, 3), lambda: lambda x: x * (1.0 / 6.0)),
    "ops-divide-channels": ((4, 5, 3), lambda: lambda x: x / keras.ops.array([2.0, 4.0, -1.0])),
    "hard-swish": (
        (4, 5, 3),
        lambda: lambda x: x * keras.layers.ReLU(6.0)(x + 3.0) * (1.0 / 6.0),
    ),
    "relu-negative-slope": ((6,), lambda: keras.layers.ReLU(negative_slope=0.1)),
    "relu-max-value": ((6,), lambda: keras.layers.ReLU(max_value=2.5)),
    "activation-elu": ((6,), lambda: keras.layers.Activation("elu")),
    "activation-softplus": ((6,), lambda: keras.layers.Activation("softplus")),
    "activation-selu": ((6,), lambda: keras.layers.Activation("selu")),
    "activation-mish": ((6,), lambda: keras.layers.Activation("mish")),
    "activation-softsign": ((6,), lambda: keras.layers.Activation("softsign")),
    "activation-hard-sigmoid": ((6,), lambda: keras.layers.Activation("hard_sigmoid")),
    "gap-keepdims": ((4, 5, 3), lambda: keras.layers.GlobalAveragePooling2D(keepdims=True)),
}


def one_layer_model(shape, make) -> keras.Model:
    """``Input(shape) -> layer``, then a Flatten and a Dense(2) so there is one output per class."""
    keras.utils.set_random_seed(3)
    inp = keras.Input(shape)
    y = make()(inp)
    if len(y.shape) > 2:
        y = keras.layers.Flatten()(y)
    return keras.Model(inp, keras.layers.Dense(2, name="head")(y))


def _layer_norm_weights(model):
    for layer in model.layers:  # non-trivial scale and offset
        if isinstance(layer, keras.layers.LayerNormalization):
            layer.set_weights([RNG.uniform(0.5, 1.5, w.shape) for w in layer.get_weights()])


@pytest.mark.parametrize("case", list(LAYERS))
def test_layer_equals_keras_and_its_gradient_torch(case, tmp_path):
    """Saved and imported, outputs within 1e-5 of Keras's; input gradients within 1e-4 of torch's."""
    shape, make = LAYERS[case]
    model = one_layer_model(shape, make)
    _layer_norm_weights(model)
    path = tmp_path / "m.keras"
    model.save(path)
    net = xai.from_keras(path)
    X = RNG.normal(0.0, 2.0, (3, *shape)).astype(np.float32)
    ref = model.predict(X, verbose=0)
    np.testing.assert_allclose(net.predict(X), ref, rtol=1e-5, atol=1e-5)
    xt = torch.tensor(X, requires_grad=True)
    model(xt)[:, 1].sum().backward()
    grad = net.gradient(X, np.ones(3, dtype=int))
    np.testing.assert_allclose(grad, xt.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_live_layer_scale_and_custom_scale_equal_keras():
    """ConvNeXt's LayerScale and InceptionResNetV2's CustomScaleLayer, from the applications modules."""
    from keras.src.applications.convnext import LayerScale
    from keras.src.applications.inception_resnet_v2 import CustomScaleLayer

    keras.utils.set_random_seed(4)
    inp = keras.Input((4, 5, 3))
    a = keras.layers.Conv2D(3, 1, name="a")(inp)
    scaled = LayerScale(0.5, 3, name="ls")(a)
    out = CustomScaleLayer(0.17, name="cs")([inp, scaled])
    model = keras.Model(inp, keras.layers.Flatten()(out))
    model.get_layer("ls").set_weights([np.array([0.5, -2.0, 3.0])])
    X = RNG.normal(size=(2, 4, 5, 3)).astype(np.float32)
    np.testing.assert_allclose(
        xai.from_keras(model).predict(X), model.predict(X, verbose=0), rtol=1e-5, atol=1e-6
    )


def test_unsupported_options_are_refused_by_name():
    """rms_scaling and a non-last Normalization axis are named CapabilityErrors."""
    for layer, words in (
        (keras.layers.LayerNormalization(rms_scaling=True), "rms_scaling"),
        (keras.layers.Normalization(axis=1, mean=[0.0] * 4, variance=[1.0] * 4), "axis"),
    ):
        inp = keras.Input((4, 5, 3))
        model = keras.Model(inp, layer(inp))
        with pytest.raises(CapabilityError, match=words):
            xai.from_keras(model)


@pytest.mark.parametrize("layer", [nn.Add, nn.Multiply, nn.Subtract], ids=lambda c: c.__name__)
def test_a_native_merge_of_one_input_is_refused_when_added(layer):
    """Graph.add of a one-input Add is a ValidationError naming it (no IndexError in predict)."""
    g = nn.Graph((3,), input_name="x")
    with pytest.raises(ValidationError, match="'m' takes 2"):
        g.add(layer(), ["x"], name="m")


def attention_model(value_dim=None, cross=False) -> keras.Model:
    """Tokens (5, 8) -> MultiHeadAttention(2 heads) -> LayerNorm -> Flatten -> Dense(2)."""
    keras.utils.set_random_seed(5)
    inp = keras.Input((5, 8))
    x = keras.layers.Dense(8, name="embed")(inp)
    other = keras.layers.Dense(6, name="memory")(inp) if cross else x
    att = keras.layers.MultiHeadAttention(2, 3, value_dim=value_dim, name="mha")(x, other)
    x = keras.layers.LayerNormalization(name="ln")(keras.layers.Add()([x, att]))
    return keras.Model(inp, keras.layers.Dense(2, name="head")(keras.layers.Flatten()(x)))


@pytest.mark.parametrize(
    "value_dim, cross, saved",
    [(None, False, True), (4, True, True), (None, False, False)],
    ids=["self-saved", "cross-value-dim-saved", "self-live"],
)
def test_multi_head_attention_equals_keras_and_torch(value_dim, cross, saved, tmp_path):
    """A transformer block with MultiHeadAttention: Keras's outputs, torch's input gradients."""
    model = attention_model(value_dim, cross)
    for layer in model.layers:  # biases that matter
        if isinstance(layer, keras.layers.MultiHeadAttention):
            layer.set_weights([RNG.normal(0, 0.5, w.shape) for w in layer.get_weights()])
    if saved:
        model.save(tmp_path / "m.keras")
    net = xai.from_keras(tmp_path / "m.keras" if saved else model)
    X = RNG.normal(size=(3, 5, 8)).astype(np.float32)
    np.testing.assert_allclose(net.predict(X), model.predict(X, verbose=0), rtol=1e-5, atol=1e-5)
    xt = torch.tensor(X, requires_grad=True)
    model(xt)[:, 0].sum().backward()
    grad = net.gradient(X, np.zeros(3, dtype=int))
    np.testing.assert_allclose(grad, xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    e = xai.explain(net, X[:1], method="ig", steps=4, target=0, progress=False)
    assert np.all(np.isfinite(e.values))


def test_attention_with_a_mask_is_refused():
    """A causal mask is named, not ignored."""
    inp = keras.Input((5, 8))
    out = keras.layers.MultiHeadAttention(2, 3, name="mha")(inp, inp, use_causal_mask=True)
    with pytest.raises(CapabilityError, match="use_causal_mask"):
        xai.from_keras(keras.Model(inp, out))
