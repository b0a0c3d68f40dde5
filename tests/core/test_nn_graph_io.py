"""Saving and loading graph networks; hostile files refused before anything is allocated."""

import json
import zipfile

import numpy as np
import pytest

import xai_core as xai
import xai_core.nn.io as nn_io

nn = xai.nn


def graph() -> "nn.Graph":
    """A graph with every kind of node: parameters, buffers, constants, several inputs."""
    rng = np.random.default_rng(0)
    g = nn.Graph((6, 6, 2), input_name="img", layout="NHWC", output_names=["a", "b"], name="g")
    h = g.add(nn.Conv2D(3, 3, stride=2, padding="same", layout="NHWC"), "img", name="conv")
    h = g.add(nn.BatchNormalization(axis=-1), h, name="bn")
    d = g.add(nn.DepthwiseConv2D(3, padding=1, layout="NHWC"), h, name="dw")
    s = g.add(nn.Add(), [h, d], name="res")
    c = g.add(nn.Constant(rng.normal(size=(3,))), name="c")
    s = g.add(nn.Multiply(), [s, c])
    s = g.add(nn.Transpose((2, 0, 1)), s)
    s = g.add(nn.ZeroPadding2D((0, 1, 1, 0)), s)
    g.add(nn.GlobalAveragePooling2D(), s)
    g.add(nn.Dense(2), name="logits")
    g.add(nn.Softmax(), name="probs")
    g.set_params("bn", mean=rng.normal(size=3), variance=rng.uniform(1, 2, 3))
    return g


def test_graph_round_trip_is_exact(tmp_path):
    """A saved and loaded graph predicts and differentiates bit-for-bit alike, names and layout kept."""
    g = graph()
    X = np.random.default_rng(1).normal(size=(5, 6, 6, 2)).astype(np.float32)
    g.save(tmp_path / "g.npz")
    loaded = xai.load_model(tmp_path / "g.npz")
    assert isinstance(loaded, nn.Graph)
    np.testing.assert_array_equal(loaded.predict(X), g.predict(X))
    np.testing.assert_array_equal(loaded.gradient(X, 1), g.gradient(X, 1))
    assert repr(loaded) == repr(g)
    assert (loaded.input_name, loaded.layout, loaded.output) == ("img", "NHWC", "probs")
    assert [n.inputs for n in loaded.nodes] == [n.inputs for n in g.nodes]
    np.testing.assert_array_equal(loaded["bn"].buffers["mean"], g["bn"].buffers["mean"])


def rewrite(path, arrays=None, arch=None, drop=()):
    """Rewrite a saved model with some arrays or the architecture replaced."""
    with np.load(path, allow_pickle=False) as npz:
        out = {k: npz[k] for k in npz.files if k not in drop}
    if arch is not None:
        out["architecture"] = np.frombuffer(json.dumps(arch).encode(), dtype=np.uint8)
    out.update(arrays or {})
    with open(path, "wb") as fh:
        np.savez(fh, **out)


def arch_of(path):
    """The JSON architecture of a saved model."""
    with np.load(path, allow_pickle=False) as npz:
        return json.loads(npz["architecture"].tobytes())


def refused(path, words):
    """Loading ``path`` raises ModelFormatError naming the file and ``words``."""
    with pytest.raises(xai.ModelFormatError) as info:
        xai.load_model(path)
    assert path.name in str(info.value) and words in str(info.value), str(info.value)


def test_non_finite_weights_are_refused(tmp_path):
    """A NaN or infinite weight, bias or constant is refused at load."""
    path = tmp_path / "m.npz"
    graph().save(path)
    w = np.load(path)["layer_0.weight"].copy()
    w.flat[3] = np.nan
    rewrite(path, {"layer_0.weight": w})
    refused(path, "layer_0.weight holds NaN or infinite values")
    graph().save(path)
    rewrite(path, {"layer_4.value": np.array([0.0, np.inf, 1.0])})
    refused(path, "layer_4.value holds NaN or infinite values")


def test_declared_shapes_must_match_the_arrays(tmp_path):
    """A JSON shape that disagrees with the array in the file is refused before reading the arrays."""
    path = tmp_path / "m.npz"
    graph().save(path)
    arch = arch_of(path)
    arch["layers"][0]["shapes"]["weight"] = [3, 2, 30, 30]
    rewrite(path, arch=arch)
    refused(path, "expected floats of shape (3, 2, 30, 30)")


def test_a_huge_layer_in_the_json_is_refused_without_allocating(tmp_path):
    """Dense(10**8) with a small weight array is refused by shape, before any weight is made."""
    path = tmp_path / "m.npz"
    nn.mlp(2).save(path)
    arch = arch_of(path)
    arch["layers"][0]["config"]["units"] = 10**8
    rewrite(path, arch=arch)
    refused(path, "expected floats of shape (2, 100000000)")


def test_member_sizes_must_match_their_headers(tmp_path):
    """An .npy member whose header claims more data than the member holds is refused."""
    path = tmp_path / "m.npz"
    nn.mlp(2).save(path)
    with zipfile.ZipFile(path) as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    data = members["layer_0.weight.npy"]
    members["layer_0.weight.npy"] = data.replace(b"(2, 4)", b"(2, 9)", 1)
    with zipfile.ZipFile(path, "w") as zf:
        for name, blob in members.items():
            zf.writestr(name, blob)
    refused(path, "declares shape (2, 9) of float32")


def test_oversized_and_deep_json_are_refused(tmp_path, monkeypatch):
    """The architecture document is bounded in bytes and in nesting depth."""
    path = tmp_path / "m.npz"
    nn.mlp(2).save(path)
    arch = arch_of(path)
    deep = "deep"
    for _ in range(40):
        deep = [deep]
    arch["name"] = deep
    rewrite(path, arch=arch)
    refused(path, "nests deeper than 32 levels")
    nn.mlp(2).save(path)
    monkeypatch.setattr(nn_io, "MAX_JSON_BYTES", 100)
    refused(path, "at most 100 are read")


def test_non_npy_members_and_version_one_files(tmp_path):
    """A stray zip member is refused; a version-1 file (no buffers listed) still loads."""
    path = tmp_path / "m.npz"
    net = nn.mlp(3)
    net.save(path)
    arch = arch_of(path)
    arch["format_version"] = 1
    for spec in arch["layers"]:
        del spec["buffers"], spec["shapes"]
    rewrite(path, arch=arch)
    X = np.random.default_rng(0).normal(size=(4, 3))
    np.testing.assert_array_equal(xai.load_model(path).predict(X), net.predict(X))
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("run_me.py", b"print('hi')")
    refused(path, "'run_me.py' is not a .npy array")


LAYERS = {
    "ReLU6": lambda: nn.ReLU6(),
    "Clip": lambda: nn.Clip(-0.2, 0.4),
    "LeakyReLU": lambda: nn.LeakyReLU(0.3),
    "HardSwish": lambda: nn.HardSwish(),
    "Dropout": lambda: nn.Dropout(0.25),
    "Identity": lambda: nn.Identity(),
    "MaxPool2D": lambda: nn.MaxPool2D(3, stride=(2, 1), padding="same"),
    "AvgPool2D": lambda: nn.AvgPool2D(3, stride=2, padding=(1, 0, 1, 1), count_include_pad=False),
    "Conv2D": lambda: nn.Conv2D(4, 2, stride=2, padding="valid", dilation=(2, 1), groups=2),
    "DepthwiseConv2D": lambda: nn.DepthwiseConv2D(3, depth_multiplier=3, use_bias=False),
    "ZeroPadding2D": lambda: nn.ZeroPadding2D((2, 0, 0, 1)),
    "Transpose": lambda: nn.Transpose((2, 1, 0)),
    "Reshape": lambda: nn.Reshape((-1, 2)),
}


@pytest.mark.parametrize("kind", sorted(LAYERS))
def test_every_new_layer_round_trips(tmp_path, kind):
    """Each new layer's arguments survive a save and load: identical outputs and identical repr."""
    rng = np.random.default_rng(0)
    g = nn.Graph((2, 7, 6), dtype="float64")
    g.add(LAYERS[kind](), name="layer")
    a = g.add(nn.Flatten(), name="flat")
    b = g.add(nn.Flatten(), "input", name="flat_in")
    b = g.add(nn.Dense(g.shape_of("flat")[0]), b, name="proj")
    s = g.add(nn.Subtract(), [a, b])
    d = g.add(nn.Divide(), [s, g.add(nn.Constant(2.0), name="two")])
    g.add(nn.Concatenate(axis=-1), [d, a])
    for layer in g.layers:
        for key, p in layer.params.items():
            layer.params[key] = rng.normal(size=p.shape)
    X = rng.normal(size=(3, 2, 7, 6))
    g.save(tmp_path / "m.npz")
    loaded = xai.load_model(tmp_path / "m.npz")
    assert repr(loaded) == repr(g) and loaded["layer"].get_config() == g["layer"].get_config()
    np.testing.assert_array_equal(loaded.predict(X), g.predict(X))


def test_a_huge_activation_in_the_json_is_refused(tmp_path):
    """A padding that would make each sample's tensor enormous is refused at load, not at predict."""
    path = tmp_path / "m.npz"
    g = nn.Graph((1, 4, 4))
    g.add(nn.ZeroPadding2D(1), name="pad")
    g.add(nn.GlobalAveragePooling2D())
    g.save(path)
    arch = arch_of(path)
    arch["layers"][0]["config"]["padding"] = [10**6, 10**6, 10**6, 10**6]
    rewrite(path, arch=arch)
    refused(path, "more than 1073741824 values")
