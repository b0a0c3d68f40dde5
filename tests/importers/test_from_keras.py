"""Keras models imported from the object, .keras, .h5 and TF.js: predictions equal Keras's own."""

from __future__ import annotations

import json
import subprocess
import sys

import keras
import numpy as np
import pytest

import xai_core as xai

RNG = np.random.default_rng(0)


def keras_cnn():
    """A functional NHWC CNN: strided 'same' conv, batch norm, ReLU6, depthwise, residual add."""
    keras.utils.set_random_seed(0)
    inp = keras.Input((9, 10, 3), name="image")
    x = keras.layers.Conv2D(8, 3, strides=2, padding="same", name="conv")(inp)
    x = keras.layers.BatchNormalization(name="bn")(x)
    x = keras.layers.ReLU(6.0, name="relu6")(x)
    y = keras.layers.DepthwiseConv2D(3, padding="same", use_bias=False, name="dw")(x)
    y = keras.layers.BatchNormalization(name="dw_bn")(y)
    x = keras.layers.Add(name="residual")([x, y])
    x = keras.layers.Conv2D(6, 1, activation="relu", name="project")(x)
    z = keras.layers.MaxPooling2D(2, padding="same", name="pool")(x)
    z = keras.layers.Flatten(name="flat")(z)
    w = keras.layers.GlobalAveragePooling2D(name="gap")(x)
    x = keras.layers.Concatenate(name="concat")([z, w])
    x = keras.layers.Dropout(0.3, name="drop")(x)
    out = keras.layers.Dense(4, activation="softmax", name="probs")(x)
    model = keras.Model(inp, out, name="cnn")
    for layer in model.layers:  # non-trivial batch-norm statistics
        if isinstance(layer, keras.layers.BatchNormalization):
            n = layer.gamma.shape[0]
            layer.set_weights(
                [
                    RNG.uniform(0.5, 1.5, n),
                    RNG.uniform(-0.5, 0.5, n),
                    RNG.uniform(-0.5, 0.5, n),
                    RNG.uniform(0.5, 1.5, n),
                ]
            )
    return model


def keras_mlp():
    """A Sequential MLP with a nested Sequential inside."""
    keras.utils.set_random_seed(1)
    inner = keras.Sequential(
        [keras.Input((6,)), keras.layers.Dense(8, activation="tanh")], name="inner"
    )
    return keras.Sequential(
        [
            keras.Input((6,)),
            inner,
            keras.layers.Dense(5),
            keras.layers.LeakyReLU(0.1),
            keras.layers.Dense(3, activation="softmax"),
        ],
        name="mlp",
    )


def write_tfjs(model, folder, *, wrap=True):
    """A TF.js layers model as the converter writes it: model.json and two weight shards."""
    folder.mkdir()
    kind = "Sequential" if isinstance(model, keras.Sequential) else "Functional"
    config = {"class_name": kind, "config": model.get_config()}
    topology = (
        {"model_config": config, "keras_version": keras.__version__, "backend": "torch"}
        if wrap
        else config
    )
    specs, blobs = [], []
    for v in model.weights:
        arr = np.asarray(keras.ops.convert_to_numpy(v), dtype="<f4")
        specs.append({"name": v.path, "shape": list(arr.shape), "dtype": "float32"})
        blobs.append(arr.tobytes())
    data = b"".join(blobs)
    half = len(data) // 2
    (folder / "group1-shard1of2.bin").write_bytes(data[:half])
    (folder / "group1-shard2of2.bin").write_bytes(data[half:])
    manifest = [{"paths": ["group1-shard1of2.bin", "group1-shard2of2.bin"], "weights": specs}]
    doc = {
        "format": "layers-model",
        "generatedBy": "keras",
        "modelTopology": topology,
        "weightsManifest": manifest,
    }
    (folder / "model.json").write_text(json.dumps(doc))
    return folder / "model.json"


@pytest.fixture(scope="module", params=["cnn", "mlp"])
def saved(request, tmp_path_factory):
    """A Keras model, its predictions on random inputs, and its .keras / .h5 / TF.js exports."""
    model = keras_cnn() if request.param == "cnn" else keras_mlp()
    X = RNG.standard_normal((20, *model.input_shape[1:])).astype(np.float32)
    want = keras.ops.convert_to_numpy(model(X, training=False))
    d = tmp_path_factory.mktemp(request.param)
    model.save(d / "m.keras")
    model.save(d / "m.h5")
    paths = {"keras": d / "m.keras", "h5": d / "m.h5", "tfjs": write_tfjs(model, d / "tfjs")}
    return model, X, want, paths


@pytest.mark.parametrize("source", ["object", "keras", "h5", "tfjs"])
def test_predictions_equal_keras(saved, source):
    """Each source imports to a network whose probabilities equal Keras's to 1e-5."""
    model, X, want, paths = saved
    net = xai.from_keras(model if source == "object" else paths[source])
    assert net.input_shape == tuple(model.input_shape[1:])
    np.testing.assert_allclose(net.predict(X), want, atol=1e-5, rtol=0)
    if len(net.input_shape) == 3:
        assert net.layout == "NHWC" and net.image_shape == (9, 10, 3)
        assert net.folded_batch_norms == {"bn": "conv", "dw_bn": "dw"}  # NHWC channels
        kept = xai.from_keras(paths["h5"], fold_batch_norm=False)
        assert isinstance(kept["bn"], xai.nn.BatchNormalization)
        np.testing.assert_allclose(kept.predict(X), want, atol=1e-5, rtol=0)


def test_files_are_read_without_keras_or_tensorflow(saved, tmp_path):
    """In a process where keras and tensorflow cannot be imported, every file still imports."""
    model, X, want, paths = saved
    np.save(tmp_path / "X.npy", X)
    script = (
        "import sys, numpy as np\n"
        "sys.modules['keras'] = sys.modules['tensorflow'] = sys.modules['tensorflowjs'] = None\n"
        "import xai_core as xai\n"
        f"X = np.load({str(tmp_path / 'X.npy')!r})\n"
        f"for p in {[str(p) for p in paths.values()]!r}:\n"
        "    np.save(p + '.out.npy', xai.from_keras(p).predict(X))\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    for p in paths.values():
        np.testing.assert_allclose(np.load(str(p) + ".out.npy"), want, atol=1e-5, rtol=0)


def test_teachable_machine_style_tfjs_with_labels(tmp_path):
    """An unwrapped modelTopology and metadata.json labels, as Teachable Machine writes them."""
    model = keras_mlp()
    write_tfjs(model, tmp_path / "tm", wrap=False)
    (tmp_path / "tm" / "metadata.json").write_text(
        json.dumps({"labels": ["cat", "dog", "<b>bird</b>"]})
    )
    net = xai.from_keras(tmp_path / "tm")
    X = RNG.standard_normal((5, 6)).astype(np.float32)
    np.testing.assert_allclose(net.predict(X), keras.ops.convert_to_numpy(model(X)), atol=1e-5)
    assert net.output_names == ("cat", "dog", "<b>bird</b>")


def test_unsupported_layer_is_named_before_any_work(tmp_path):
    """A SimpleRNN fails naming the layer class, the layer and the supported list."""
    model = keras.Sequential([keras.Input((4, 3)), keras.layers.SimpleRNN(2, name="memory")])
    model.save(tmp_path / "rnn.keras")
    with pytest.raises(
        xai.CapabilityError, match=r"'SimpleRNN' \(layer 'memory'\).*Supported layers: .*Conv2D"
    ):
        xai.from_keras(tmp_path / "rnn.keras")


def test_subclassed_model_is_refused_clearly():
    """A subclassed model has no layer graph: a CapabilityError says so and what to do."""

    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.d = keras.layers.Dense(2)

        def call(self, x):
            return self.d(x)

    with pytest.raises(xai.CapabilityError, match="subclassed Keras model"):
        xai.from_keras(Net())


def test_hostile_tfjs_files_are_refused(tmp_path):
    """A shard outside the folder, or fewer bytes than declared, is a ModelFormatError."""
    path = write_tfjs(keras_mlp(), tmp_path / "bad")
    doc = json.loads(path.read_text())
    doc["weightsManifest"][0]["paths"][0] = "../../etc/passwd"
    path.write_text(json.dumps(doc))
    with pytest.raises(xai.ModelFormatError, match="not a file name beside it"):
        xai.from_keras(path)
    path = write_tfjs(keras_mlp(), tmp_path / "short")
    shard = tmp_path / "short" / "group1-shard2of2.bin"
    shard.write_bytes(shard.read_bytes()[:-8])
    with pytest.raises(xai.ModelFormatError, match="needs bytes"):
        xai.from_keras(path)


def test_not_a_model_is_a_clear_error(tmp_path):
    """A text file named .keras, an .h5 of weights only, an unknown suffix."""
    (tmp_path / "x.keras").write_text("hello")
    with pytest.raises(xai.ModelFormatError, match="not a .keras archive"):
        xai.from_keras(tmp_path / "x.keras")
    model = keras_mlp()
    model.save_weights(tmp_path / "w.weights.h5")
    (tmp_path / "w.weights.h5").rename(tmp_path / "w.h5")
    with pytest.raises(xai.ModelFormatError, match="model_config"):
        xai.from_keras(tmp_path / "w.h5")
    with pytest.raises(xai.ValidationError, match="model_or_path"):
        xai.from_keras(tmp_path / "x.txt")
    with pytest.raises(xai.ValidationError, match="model_or_path must be"):
        xai.from_keras(42)


def test_tfjs_uint8_quantised_weights(tmp_path):
    """A kernel stored as uint8 with the converter's scale and min dequantises to q * scale + min."""
    model = keras_mlp()
    path = write_tfjs(model, tmp_path / "q")
    doc = json.loads(path.read_text())
    specs = doc["weightsManifest"][0]["weights"]
    folder = tmp_path / "q"
    data = b"".join((folder / p).read_bytes() for p in doc["weightsManifest"][0]["paths"])
    arrays, offset = [], 0
    for spec in specs:
        n = int(np.prod(spec["shape"]))
        arrays.append(np.frombuffer(data, "<f4", n, offset).reshape(spec["shape"]))
        offset += 4 * n
    k = arrays[0]
    lo, scale = float(k.min()), float(k.max() - k.min()) / 255
    q = np.round((k - lo) / scale).astype(np.uint8)
    specs[0]["quantization"] = {"dtype": "uint8", "scale": scale, "min": lo}
    blob = q.tobytes() + b"".join(a.astype("<f4").tobytes() for a in arrays[1:])
    (folder / "group1-shard1of2.bin").write_bytes(blob)
    (folder / "group1-shard2of2.bin").write_bytes(b"")
    path.write_text(json.dumps(doc))
    net = xai.from_keras(path)
    model.weights[0].assign(q.astype(np.float32) * np.float32(scale) + np.float32(lo))
    X = RNG.standard_normal((5, 6)).astype(np.float32)
    np.testing.assert_allclose(net.predict(X), keras.ops.convert_to_numpy(model(X)), atol=1e-5)


def test_keras2_style_teachable_machine_topology(tmp_path):
    """A Keras 2 / tfjs-layers topology (nested Sequential > Model > layers, list-style inbound
    nodes, batch_input_shape, depthwise_kernel names) imports to Keras's own predictions."""
    keras.utils.set_random_seed(3)
    inp = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(4, 3, strides=2, padding="same", name="Conv1")(inp)
    x = keras.layers.BatchNormalization(name="bn_Conv1")(x)
    x = keras.layers.ReLU(6.0, name="Conv1_relu")(x)
    x = keras.layers.DepthwiseConv2D(3, padding="same", use_bias=False, name="dw")(x)
    x = keras.layers.GlobalAveragePooling2D(name="gap")(x)
    model = keras.Model(inp, keras.layers.Dense(3, activation="softmax", name="dense_Dense1")(x))
    bn = model.get_layer("bn_Conv1")
    bn.set_weights(
        [RNG.uniform(0.5, 1.5, 4) for _ in range(2)]
        + [RNG.uniform(-0.5, 0.5, 4), RNG.uniform(0.5, 1.5, 4)]
    )

    def layer(kind, name, config, inbound):
        return {
            "class_name": kind,
            "config": {"name": name, **config},
            "name": name,
            "inbound_nodes": [[[inbound, 0, 0, {}]]] if inbound else [],
        }

    conv = {
        "filters": 4,
        "kernel_size": [3, 3],
        "strides": [2, 2],
        "padding": "same",
        "data_format": "channels_last",
        "dilation_rate": [1, 1],
        "activation": "linear",
        "use_bias": True,
    }
    inner = {
        "class_name": "Model",
        "config": {
            "name": "model1",
            "layers": [
                layer(
                    "InputLayer",
                    "input_1",
                    {"batch_input_shape": [None, 8, 8, 3], "dtype": "float32"},
                    None,
                ),
                layer("Conv2D", "Conv1", conv, "input_1"),
                layer(
                    "BatchNormalization",
                    "bn_Conv1",
                    {"axis": [3], "epsilon": 0.001, "center": True, "scale": True},
                    "Conv1",
                ),
                layer(
                    "ReLU",
                    "Conv1_relu",
                    {"max_value": 6.0, "negative_slope": 0.0, "threshold": 0.0},
                    "bn_Conv1",
                ),
                layer(
                    "DepthwiseConv2D",
                    "dw",
                    {**conv, "strides": [1, 1], "depth_multiplier": 1, "use_bias": False},
                    "Conv1_relu",
                ),
                layer("GlobalAveragePooling2D", "gap", {"data_format": "channels_last"}, "dw"),
            ],
            "input_layers": [["input_1", 0, 0]],
            "output_layers": [["gap", 0, 0]],
        },
    }
    head = {
        "class_name": "Sequential",
        "config": {
            "name": "sequential_3",
            "layers": [
                {
                    "class_name": "Dense",
                    "config": {
                        "name": "dense_Dense1",
                        "units": 3,
                        "activation": "softmax",
                        "use_bias": True,
                    },
                }
            ],
        },
    }
    topology = {
        "class_name": "Sequential",
        "config": {"name": "sequential_4", "layers": [inner, head]},
        "keras_version": "tfjs-layers 1.3.1",
        "backend": "tensor_flow.js",
    }
    names = {"dw/kernel": "dw/depthwise_kernel"}
    specs, blobs = [], []
    for v in model.weights:
        arr = np.asarray(keras.ops.convert_to_numpy(v), dtype="<f4")
        specs.append(
            {"name": names.get(v.path, v.path), "shape": list(arr.shape), "dtype": "float32"}
        )
        blobs.append(arr.tobytes())
    folder = tmp_path / "tm"
    folder.mkdir()
    (folder / "weights.bin").write_bytes(b"".join(blobs))
    manifest = [{"paths": ["weights.bin"], "weights": specs}]
    (folder / "model.json").write_text(
        json.dumps({"modelTopology": topology, "weightsManifest": manifest})
    )
    net = xai.from_keras(folder / "model.json")
    X = RNG.standard_normal((6, 8, 8, 3)).astype(np.float32)
    np.testing.assert_allclose(net.predict(X), keras.ops.convert_to_numpy(model(X)), atol=1e-5)
