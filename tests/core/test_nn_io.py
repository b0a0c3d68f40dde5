"""Saving and loading networks: exact round trips, no pickle, clear errors for bad files."""

import json

import numpy as np
import pytest

import xai_core as xai

nn = xai.nn


def cnn() -> "nn.Sequential":
    """A small CNN with every saveable layer type."""
    return nn.Sequential(
        [
            nn.Reshape((1, 8, 8)),
            nn.Conv2D(3, 3, stride=1, padding="same"),
            nn.ReLU(),
            nn.MaxPool2D(2),
            nn.Conv2D(2, 2, stride=2, padding=1, name="second"),
            nn.Tanh(),
            nn.AvgPool2D(2, stride=1),
            nn.Flatten(),
            nn.Dense(4),
            nn.Sigmoid(),
            nn.Dense(3),
            nn.Linear(),
            nn.Softmax(),
        ],
        input_shape=(64,),
        output_names=["a", "b", "c"],
        seed=5,
        name="tiny",
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"], ids=["f32", "f64"])
def test_round_trip_gives_identical_predictions(tmp_path, dtype):
    """A saved and loaded CNN predicts bit-for-bit the same and keeps names, dtype and geometry."""
    net = cnn() if dtype == "float32" else nn.mlp(5, (7, 3), 3, dtype="float64", seed=2)
    X = np.random.default_rng(0).random((10, *net.input_shape))
    path = tmp_path / "model.npz"
    net.save(path)
    loaded = xai.load_model(path)
    np.testing.assert_array_equal(loaded.predict(X), net.predict(X))
    np.testing.assert_array_equal(loaded.gradient(X, 1), net.gradient(X, 1))
    assert [layer.name for layer in loaded] == [layer.name for layer in net]
    assert repr(loaded) == repr(net) and loaded.dtype == net.dtype
    assert loaded.output_names == net.output_names and loaded.name == net.name


def test_trained_classes_survive(tmp_path):
    """String class labels learnt by fit come back from the file, and predict_classes agrees."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2)).astype(np.float32)
    y = np.where(X[:, 0] > 0, "right", "left")
    net = nn.mlp(2).fit(X, y, epochs=5, progress=False)
    net.save(tmp_path / "m.npz")
    loaded = xai.load_model(tmp_path / "m.npz")
    assert loaded.classes_.tolist() == ["left", "right"]
    np.testing.assert_array_equal(loaded.predict_classes(X), net.predict_classes(X))


def test_file_is_plain_arrays_with_a_json_architecture(tmp_path):
    """The archive holds only numeric .npy arrays (no object arrays) and a versioned JSON document."""
    path = tmp_path / "no-suffix"
    nn.mlp(3).save(path)
    assert path.is_file() and not (tmp_path / "no-suffix.npz").exists()
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    assert all(a.dtype != object for a in arrays.values())
    arch = json.loads(arrays["architecture"].tobytes())
    assert (
        arch["format"] == "xai_core.nn.Sequential" and arch["format_version"] == nn.FORMAT_VERSION
    )
    assert [spec["type"] for spec in arch["layers"]] == [
        "Dense",
        "Tanh",
        "Dense",
        "Tanh",
        "Dense",
        "Softmax",
    ]


def rewrite(path, arch=None, drop=(), extra=None):
    """Rewrite a saved model with a modified architecture or arrays."""
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files if k not in drop}
    if arch is not None:
        arrays["architecture"] = np.frombuffer(json.dumps(arch).encode(), dtype=np.uint8)
    arrays.update(extra or {})
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def arch_of(path):
    """The JSON architecture of a saved model."""
    with np.load(path, allow_pickle=False) as npz:
        return json.loads(npz["architecture"].tobytes())


def test_newer_format_version_is_refused(tmp_path):
    """A file from a newer format version names the file, both versions and the fix."""
    path = tmp_path / "new.npz"
    nn.mlp(2).save(path)
    arch = arch_of(path)
    arch["format_version"] = nn.FORMAT_VERSION + 1
    rewrite(path, arch)
    with pytest.raises(
        xai.ModelFormatError,
        match=rf"new\.npz.*version {nn.FORMAT_VERSION + 1}.*up to {nn.FORMAT_VERSION}.*Upgrade",
    ):
        xai.load_model(path)


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        ("truncate", "corrupt or not an .npz archive"),
        ("garbage", "corrupt or not an .npz archive"),
        ("npy", "single .npy array"),
        ("no-architecture", "no 'architecture' entry"),
        ("bad-json", "not valid JSON"),
        ("other-format", "not 'xai_core.nn.Sequential'"),
        ("unknown-layer", "unknown type 'Attention'"),
        ("missing-weight", "layer_0.weight is missing"),
        ("wrong-shape", "expected floats of shape (2, 4)"),
        ("pickled", "corrupt or not an .npz archive"),
    ],
    ids=[
        "truncate",
        "garbage",
        "npy",
        "no-arch",
        "bad-json",
        "other-format",
        "unknown-layer",
        "missing-weight",
        "wrong-shape",
        "pickled",
    ],
)
def test_damaged_files_get_a_model_format_error(tmp_path, damage, words):
    """Corrupt, truncated, foreign or tampered files raise ModelFormatError naming the file and the fault."""
    path = tmp_path / "m.npz"
    nn.mlp(2).save(path)
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "garbage":
        path.write_bytes(b"definitely not a model\x00\x01" * 10)
    elif damage == "npy":
        with open(path, "wb") as fh:
            np.save(fh, np.zeros(3))
    elif damage == "no-architecture":
        rewrite(path, drop=("architecture",))
    elif damage == "bad-json":
        rewrite(
            path,
            drop=("architecture",),
            extra={"architecture": np.frombuffer(b"{oops", dtype=np.uint8)},
        )
    elif damage == "other-format":
        rewrite(path, {"format": "keras", "format_version": 1})
    elif damage == "unknown-layer":
        arch = arch_of(path)
        arch["layers"][1]["type"] = "Attention"
        rewrite(path, arch)
    elif damage == "missing-weight":
        rewrite(path, drop=("layer_0.weight",))
    elif damage == "wrong-shape":
        rewrite(path, extra={"layer_0.weight": np.zeros((3, 3))})
    elif damage == "pickled":
        rewrite(
            path, extra={"layer_0.bias": np.array([{"x": 1}], dtype=object)}
        )  # needs unpickling
    with pytest.raises(xai.ModelFormatError) as info:
        xai.load_model(path)
    assert "m.npz" in str(info.value) and words in str(info.value)


def test_missing_file_and_unbuilt_network():
    """A missing path is FileNotFoundError; an unbuilt network cannot be saved."""
    with pytest.raises(FileNotFoundError, match="no model file"):
        xai.load_model("does-not-exist.npz")
    with pytest.raises(xai.ValidationError, match="no weights yet"):
        nn.Sequential([nn.Dense(2)]).save("never-written.npz")
