"""Every keras.applications model Keras builds on torch imports, predicts as Keras does, and explains.

Random weights (``weights=None``), small inputs and five classes with linear logits; the
oracle is Keras's own ``model.predict``. The family representatives go through a saved
``.keras`` file; their larger siblings (same blocks, more of them) through the live model,
which the same converters build. A builder still refused is listed with its reason in
:data:`REFUSED`, so the test fails when that changes.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import zipfile
from collections.abc import Iterator

import keras
import numpy as np
import pytest

import xai_core as xai
from xai_core.backends.cpu import CPUBackend
from xai_core.errors import ModelFormatError

#: Builders whose preprocessing is inside the model: they take pixel values 0..255.
PIXELS = ("EfficientNet", "ConvNeXt", "MobileNetV3")

#: name -> (input size, representative of its family: saved to .keras, or not).
CATALOGUE: dict[str, tuple[int, bool]] = {
    "ConvNeXtTiny": (32, True),
    "ConvNeXtSmall": (32, False),
    "ConvNeXtBase": (32, False),
    "ConvNeXtLarge": (32, False),
    "ConvNeXtXLarge": (32, False),
    "DenseNet121": (32, True),
    "DenseNet169": (32, False),
    "DenseNet201": (32, False),
    "EfficientNetB0": (32, True),
    "EfficientNetB1": (32, False),
    "EfficientNetB2": (32, False),
    "EfficientNetB3": (32, False),
    "EfficientNetB4": (32, False),
    "EfficientNetB5": (32, False),
    "EfficientNetB6": (32, False),
    "EfficientNetB7": (32, False),
    "EfficientNetV2B0": (32, True),
    "EfficientNetV2B1": (32, False),
    "EfficientNetV2B2": (32, False),
    "EfficientNetV2B3": (32, False),
    "EfficientNetV2S": (32, False),
    "EfficientNetV2M": (32, False),
    "EfficientNetV2L": (32, False),
    "InceptionResNetV2": (75, True),
    "InceptionV3": (75, True),
    "MobileNet": (32, True),
    "MobileNetV2": (32, True),
    "MobileNetV3Small": (32, True),
    "MobileNetV3Large": (32, False),
    "NASNetLarge": (32, True),
    "ResNet50": (32, True),
    "ResNet101": (32, False),
    "ResNet152": (32, False),
    "ResNet50V2": (32, True),
    "ResNet101V2": (32, False),
    "ResNet152V2": (32, False),
    "VGG16": (32, True),
    "VGG19": (32, False),
    "Xception": (71, True),
}

#: Builders Keras itself does not build on the torch backend, with the words of its refusal.
KERAS_REFUSES = {"NASNetMobile": "not available with the torch backend"}

#: (builder, target) -> (error type, words of the refusal): what is not supported yet.
REFUSED = {
    # random weights shrink the MobileNets' activations to ~1e-11: a requantisation scale
    # above 2**31, which TFLite's int8 kernels cannot express (xai_core.int8 checks it)
    ("MobileNetV2", "edgetpu"): (ModelFormatError, "rescale by at most 2\\*\\*31"),
    ("MobileNetV3Small", "edgetpu"): (ModelFormatError, "rescale by at most 2\\*\\*31"),
}

#: Models run on the tpu backend and, quantised, on edgetpu.
DEVICES = ("MobileNetV2", "MobileNetV3Small", "EfficientNetB0", "ConvNeXtTiny", "ResNet50")

#: Builders that take at most about 5 s on two cores (build, save, import, predict, IG).
FAST = ("MobileNet", "MobileNetV2", "MobileNetV3Small", "VGG16")


def application(name: str, size: int | None = None) -> keras.Model:
    """``keras.applications.<name>`` with random weights, 5 linear logits, a small input.

    Parameters
    ----------
    name : str
        A builder of ``keras.applications`` (a key of :data:`CATALOGUE`).
    size : int, optional
        Height and width of the input; default the catalogue's.

    Returns
    -------
    keras.Model
        Input ``(size, size, 3)``, output of shape ``(n, 5)``.
    """
    keras.utils.set_random_seed(0)
    size = CATALOGUE[name][0] if size is None else size
    return getattr(keras.applications, name)(
        weights=None, input_shape=(size, size, 3), classes=5, classifier_activation=None
    )


def inputs(name: str, n: int, size: int) -> np.ndarray:
    """``n`` random images for builder ``name``: pixels 0..255 where it preprocesses them."""
    hi = 255.0 if name.startswith(PIXELS) else 1.0
    return np.random.default_rng(1).uniform(0, hi, (n, size, size, 3)).astype(np.float32)


def relative_error(ours: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(ours - ref).max() / np.abs(ref).max())


def test_the_catalogue_lists_every_builder():
    """Every keras.applications builder is in the catalogue or refused by Keras itself."""
    builders = {
        n for n, f in inspect.getmembers(keras.applications) if callable(f) and n[:1].isupper()
    }
    assert builders == set(CATALOGUE) | set(KERAS_REFUSES)


@pytest.mark.parametrize("name", list(KERAS_REFUSES))
def test_keras_still_refuses(name):
    """Keras builds no NASNetMobile on torch (when it does, it joins the catalogue)."""
    with pytest.raises(ValueError, match=KERAS_REFUSES[name]):
        getattr(keras.applications, name)(weights=None, input_shape=(32, 32, 3), classes=5)


#: Builders whose random-weight network is too ill-conditioned for any float32 result to be
#: held to 1e-4: their import is checked in float64 against Keras in float64 instead.
ILL_CONDITIONED = {
    "EfficientNetV2L": "79 residual blocks with random weights grow activations to ~2e3, and "
    "each squeeze-and-excite gate (a sigmoid of those) turns float32 rounding into an O(1) "
    "change: Keras's own float32 logits are ~0.8 (relative) from its float64 ones",
}


@contextlib.contextmanager
def keras_float64() -> Iterator[None]:
    """Keras building and computing in float64 throughout, restored on exit.

    A ``float64`` dtype policy alone is not enough: Keras, following JAX's default, narrows
    every 64-bit promotion to 32 bits (``dtypes.BIT64_TO_BIT32_DTYPE``), and its
    ``BatchNormalization`` and ``mean`` promote their input with ``float32``, so they would
    compute in float32 (1e-7 off). That narrowing is switched off here too.
    """
    from keras.src.backend.common import dtypes

    floatx, policy = keras.config.floatx(), keras.config.dtype_policy()
    narrowing = dtypes.BIT64_TO_BIT32_DTYPE
    keras.config.set_floatx("float64")
    keras.config.set_dtype_policy("float64")
    dtypes.BIT64_TO_BIT32_DTYPE = {}
    try:
        yield
    finally:
        dtypes.BIT64_TO_BIT32_DTYPE = narrowing
        keras.config.set_dtype_policy(policy)
        keras.config.set_floatx(floatx)


def float64_reference(name: str, model: keras.Model, X: np.ndarray) -> np.ndarray:
    """Keras's logits for ``X`` from builder ``name`` in float64, with ``model``'s weights.

    Returns
    -------
    ndarray of float64 of shape (n_samples, 5)
    """
    with keras_float64():
        wide = application(name, model.input_shape[1])
        wide.set_weights([w.astype(np.float64) for w in model.get_weights()])
        return wide.predict(X.astype(np.float64), verbose=0)


def _marks(name):
    return [] if name in FAST else [pytest.mark.slow]


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n), id=n) for n in CATALOGUE])
def test_application_imports_predicts_and_explains(name, tmp_path):
    """Import (.keras for representatives), logits within 1e-4 of Keras's, IG finite.

    An :data:`ILL_CONDITIONED` builder's float32 logits cannot be held to 1e-4 of anything:
    a change of the input by one float32 rounding (2**-24, relative) moves EfficientNetV2L's
    float64 logits by ~0.5 relative, and Keras's own float32 ``predict`` is ~0.8 from its
    float64 one. So its import is checked where rounding does not reach: the network as
    imported (batch norms kept, as folding rounds them into float32 weights) run in float64,
    against Keras in float64 (:func:`keras_float64`), agree to ~1e-7. That the builder is
    still ill-conditioned is checked too, so the exception ends when it does.
    """
    size, saved = CATALOGUE[name]
    model = application(name)
    if saved:
        path = tmp_path / f"{name}.keras"
        model.save(path)
        net = xai.from_keras(path)
    else:
        net = xai.from_keras(model)
    assert net.input_shape == (size, size, 3)
    X = inputs(name, 2, size)
    ref = model.predict(X, verbose=0)
    if name in ILL_CONDITIONED:
        exact = float64_reference(name, model, X)
        assert relative_error(ref, exact) > 0.1  # Keras's float32 is far from its float64
        unfolded = xai.from_keras(model, fold_batch_norm=False)
        wide = unfolded.predict(X, backend=CPUBackend(dtype="float64"))
        assert wide.dtype == np.float64 and relative_error(wide, exact) < 1e-4
        assert np.all(np.isfinite(net.predict(X)))
    else:
        assert relative_error(net.predict(X), ref) < 1e-4
    e = xai.explain(net, X[:1], method="ig", steps=2, target=0, progress=False)
    assert e.values.shape == (1, size, size, 3) and np.all(np.isfinite(e.values))


def test_keras_float64_reference_is_float64_throughout():
    """Keras's float64 policy still computes batch norms and means in float32; the reference
    switches that off, and then an SE block of EfficientNetV2's kind imports exactly.

    The oracle is numpy's float64 formula for the batch norm and Keras itself for the block;
    the first assertion fails when Keras stops narrowing, and :func:`keras_float64` can go.
    """
    rng = np.random.default_rng(0)
    x = rng.normal(0, 30, (2, 4, 4, 8))
    gamma, beta, mean, var = (rng.uniform(0.5, 2, 8) for _ in range(4))
    exact = (x - mean) / np.sqrt(var + 1e-3) * gamma + beta

    def keras_batch_norm() -> np.ndarray:
        bn = keras.layers.BatchNormalization(epsilon=1e-3, dtype="float64")
        bn.build(x.shape)
        bn.set_weights([gamma, beta, mean, var])
        return keras.ops.convert_to_numpy(bn(x, training=False))

    assert relative_error(keras_batch_norm(), exact) > 1e-8  # float32 inside
    with keras_float64():
        assert relative_error(keras_batch_norm(), exact) < 1e-14
        keras.utils.set_random_seed(0)
        inp = keras.Input((4, 4, 8))
        h = keras.layers.BatchNormalization(name="bn")(inp)
        h = keras.layers.Activation("silu")(h)
        s = keras.layers.GlobalAveragePooling2D(keepdims=True)(h)
        s = keras.layers.Conv2D(2, 1, activation="silu")(s)
        s = keras.layers.Conv2D(8, 1, activation="sigmoid")(s)
        model = keras.Model(inp, keras.layers.Multiply()([h, s]))
        model.get_layer("bn").set_weights([gamma, beta, mean, var])
        # float32 values, so that the imported (float32) weights are the same numbers
        model.set_weights([w.astype(np.float32).astype(np.float64) for w in model.get_weights()])
        ref = model.predict(x, verbose=0)
        assert ref.dtype == np.float64
        net = xai.from_keras(model, fold_batch_norm=False)
    ours = net.predict(x, backend=CPUBackend(dtype="float64"))
    assert relative_error(ours.reshape(ref.shape), ref) < 1e-12


@pytest.fixture(scope="module")
def device_nets():
    """The DEVICES imported once, each with its Keras logits on four images."""
    out = {}
    for name in DEVICES:
        size = CATALOGUE[name][0]
        model = application(name)
        X = inputs(name, 4, size)
        out[name] = (xai.from_keras(model), X, model.predict(X, verbose=0))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", DEVICES)
def test_application_on_tpu(name, device_nets):
    """The tpu backend (bf16 products) gives Keras's logits within 5%."""
    net, X, ref = device_nets[name]
    tpu = xai.ModelRunner(net, backend="tpu").predict(X)
    assert relative_error(tpu, ref) < 5e-2


@pytest.mark.slow
@pytest.mark.parametrize("name", DEVICES)
def test_application_quantised_on_edgetpu(name, device_nets):
    """Quantised on its inputs, edgetpu gives the logits within 15% of the largest, or a known refusal."""
    net, X, ref = device_nets[name]
    if (name, "edgetpu") in REFUSED:
        kind, words = REFUSED[(name, "edgetpu")]
        with pytest.raises(kind, match=words):
            xai.ModelRunner(xai.quantize(net, X), "edgetpu").predict(X)
        return
    q = xai.quantize(net, X)
    out = xai.ModelRunner(q, "edgetpu").predict(X)
    assert relative_error(out, ref) < 0.15


def test_a_merge_with_one_operand_is_refused_when_imported(tmp_path):
    """An Add whose call lost an operand is a ModelFormatError naming the layer, not an IndexError."""
    inp = keras.Input((4,))
    out = keras.layers.Dense(3, name="d")(inp)
    model = keras.Model(inp, keras.layers.Add(name="plus")([out, out]))
    path = tmp_path / "m.keras"
    model.save(path)

    def drop_an_operand(config):
        for layer in config["config"]["layers"]:
            if layer["name"] == "plus":
                del layer["inbound_nodes"][0]["args"][0][1]

    _rewrite_config(path, drop_an_operand)
    with pytest.raises(ModelFormatError, match="'plus' takes 2 or more inputs; its call has 1"):
        xai.from_keras(path)


def _rewrite_config(path, edit) -> None:
    """Apply ``edit`` to the parsed ``config.json`` of a saved ``.keras`` archive."""
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    config = json.loads(members["config.json"])
    edit(config)
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(path, "w") as zf:
        for n, data in members.items():
            zf.writestr(n, data)
