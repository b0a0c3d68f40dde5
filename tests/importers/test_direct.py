"""import_model: torch modules, Keras models and model files passed directly, imported once."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import keras
import numpy as np
import pytest
import torch
from torch import nn as tnn

import xai_core as xai
from xai_core.importers import direct, torch_import

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tflite"
RNG = np.random.default_rng(0)
X = RNG.normal(size=(12, 6)).astype(np.float32)
IG = {"method": "ig", "steps": 8}


def torch_mlp(seed: int = 0) -> tnn.Module:
    """Dense, batch norm, ReLU, dropout, dense: train and eval mode compute different things."""
    torch.manual_seed(seed)
    m = tnn.Sequential(
        tnn.Linear(6, 8), tnn.BatchNorm1d(8), tnn.ReLU(), tnn.Dropout(0.5), tnn.Linear(8, 3)
    )
    with torch.no_grad():
        m[1].running_mean.uniform_(-0.5, 0.5)
        m[1].running_var.uniform_(0.5, 1.5)
    return m.eval()


def keras_mlp() -> keras.Model:
    keras.utils.set_random_seed(0)
    inp = keras.Input((6,), name="x")
    h = keras.layers.Dense(8, activation="relu", name="hidden")(inp)
    return keras.Model(inp, keras.layers.Dense(3, name="out")(h), name="mlp")


@pytest.fixture
def exports(monkeypatch):
    """Counts torch.onnx.export calls: one per trace of a torch module."""
    calls = []
    real = torch.onnx.export

    def counted(*args, **kwargs):
        calls.append(type(args[0]).__name__)  # not the module: the cache must be able to drop it
        return real(*args, **kwargs)

    monkeypatch.setattr(torch.onnx, "export", counted)
    return calls


def counting(monkeypatch, module, name):
    """Replace ``module.name`` with a wrapper that records each call."""
    calls = []
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


# -- torch modules ------------------------------------------------------------------------------


def test_a_torch_module_explains_as_its_explicit_import():
    """explain(module, X) gives exactly what explain(from_torch(module, X), X) gives, by default too."""
    m = torch_mlp()
    net = xai.from_torch(m, X)
    direct_ig = xai.explain(m, X, **IG)
    assert np.array_equal(direct_ig.values, xai.explain(net, X, **IG).values)
    default, explicit = xai.explain(m, X), xai.explain(net, X)
    assert default.method == explicit.method == "ig"
    assert np.array_equal(default.values, explicit.values)
    with torch.no_grad():  # and the network is the module's (torch is the oracle)
        want = m(torch.from_numpy(X)).numpy()
    np.testing.assert_allclose(xai.import_model(m, X).predict(X), want, rtol=1e-5, atol=1e-6)


def test_an_image_module_takes_its_input_shape_from_X():
    """The sample shape of X (channels, height, width) is the imported network's input shape."""
    torch.manual_seed(1)
    m = tnn.Sequential(tnn.Conv2d(2, 4, 3), tnn.ReLU(), tnn.Flatten(), tnn.Linear(4 * 5 * 3, 2))
    images = RNG.random((3, 2, 7, 5)).astype(np.float32)
    net = xai.import_model(m, images)
    assert net.input_shape == (2, 7, 5)
    e = xai.explain(m, images, **IG)
    assert np.array_equal(e.values, xai.explain(xai.from_torch(m, images), images, **IG).values)


def test_output_names_name_the_imported_classes():
    m = torch_mlp()
    net = xai.import_model(m, X, output_names=["a", "b", "c"])
    assert net.output_names == ("a", "b", "c")
    with pytest.raises(xai.ShapeError, match="output_names has 2 names"):
        xai.import_model(m, X, output_names=["a", "b"])


def test_a_module_in_training_mode_is_exported_in_eval_and_left_as_it_was():
    """The import runs eval mode (batch norm's running statistics, no dropout) and restores train."""
    m = torch_mlp()
    stats = m[1].running_mean.clone()
    want = xai.explain(xai.from_torch(m, X), X, **IG).values  # m is in eval mode here
    m.train()
    e = xai.explain(m, X, **IG)
    assert m.training and all(c.training for c in m.modules())
    assert torch.equal(m[1].running_mean, stats)  # no batch went through in train mode
    assert np.array_equal(e.values, want)


def test_the_import_is_kept_until_the_weights_change(exports):
    """A second explain does not export again; an in-place change to a weight is seen."""
    m = torch_mlp()
    first = xai.explain(m, X, **IG)
    assert len(exports) == 1
    again = xai.explain(m, X[:5], **IG)  # other rows, same sample shape: the same import
    assert len(exports) == 1 and np.array_equal(again.values, first.values[:5])
    assert xai.ModelRunner(m, example=X).model is xai.import_model(m, X)
    with torch.no_grad():
        m[0].weight.mul_(2.0)  # an in-place change bumps the tensor's version
    changed = xai.explain(m, X, **IG)
    assert len(exports) == 2
    assert not np.array_equal(changed.values, first.values)
    assert np.array_equal(changed.values, xai.explain(xai.from_torch(m, X), X, **IG).values)
    m.load_state_dict(torch_mlp(seed=5).state_dict())
    xai.explain(m, X, **IG)
    assert len(exports) == 4  # the explicit from_torch above, then this one


def test_the_cache_is_per_object_and_goes_with_it(exports):
    import gc

    a, b = torch_mlp(), torch_mlp()
    xai.import_model(a, X)
    xai.import_model(b, X)
    assert len(exports) == 2
    gc.collect()  # what earlier tests left unreachable goes first, so only ``a`` is counted
    n = len(direct._objects)
    del a
    gc.collect()
    assert len(direct._objects) == n - 1
    assert b in direct._objects


def test_an_unsupported_operator_names_every_one_and_the_black_box_way():
    """The import failure says what failed, names each unsupported operator, and the way out."""

    class Determinant(tnn.Module):
        def __init__(self):
            super().__init__()
            self.fc = tnn.Linear(6, 9)

        def forward(self, x):
            h = self.fc(x)
            return torch.linalg.det(h.view(-1, 3, 3)).unsqueeze(1) + torch.topk(h, 2).values

    with pytest.raises(xai.CapabilityError) as info:
        xai.explain(Determinant(), X, method="ig")
    message = str(info.value)
    assert message.startswith("model: importing the torch.nn.Module Determinant failed")
    assert "'Det'" in message and "'TopK'" in message
    assert "xai.BlackBoxModel(model)" in message


def test_a_module_without_rows_is_refused_naming_X():
    with pytest.raises(xai.ValidationError, match=r"X: a torch.nn.Module \(Sequential\).*example"):
        xai.ModelRunner(torch_mlp())
    with pytest.raises(xai.ShapeError, match=r"X must have shape \(n_samples, "):
        xai.import_model(torch_mlp(), X[0])


@pytest.mark.slow
def test_the_black_box_route_runs_the_module_as_a_function():
    """xai.BlackBoxModel(module) is the module as a function of a batch: predictions, no gradients."""
    m = torch_mlp().train()

    def by_hand(A):
        m.eval()
        try:
            with torch.no_grad():
                return m(torch.from_numpy(np.array(A, dtype=np.float32))).numpy()
        finally:
            m.train()

    shap = {"method": "shap", "background": X[:4], "nsamples": 64, "seed": 0}
    box = xai.explain(xai.BlackBoxModel(m), X[:3], **shap)
    assert np.array_equal(box.values, xai.explain(by_hand, X[:3], **shap).values)
    assert m.training
    with pytest.raises(xai.CapabilityError, match="black box.*xai.from_torch"):
        xai.explain(xai.BlackBoxModel(m), X, method="ig")
    assert isinstance(xai.as_model(m), xai.BlackBoxModel)  # as_model never imports


# -- Keras models -------------------------------------------------------------------------------


def test_a_keras_model_explains_as_its_explicit_import():
    k = keras_mlp()
    e = xai.explain(k, X, **IG)
    assert np.array_equal(e.values, xai.explain(xai.from_keras(k), X, **IG).values)
    box = xai.BlackBoxModel(k)  # the black-box route: keras's own predict
    np.testing.assert_array_equal(box.predict(X), k.predict(X, verbose=0))


def test_a_keras_import_is_kept_until_a_weight_is_assigned(monkeypatch):
    from xai_core.importers import keras_import

    calls = counting(monkeypatch, keras_import, "from_keras")
    k = keras_mlp()
    first = xai.explain(k, X, **IG)
    xai.explain(k, X, **IG)
    assert len(calls) == 1
    kernel = k.get_layer("hidden").kernel
    kernel.assign(np.asarray(kernel.numpy()) * 2.0)
    changed = xai.explain(k, X, **IG)
    assert len(calls) == 2 and not np.array_equal(changed.values, first.values)


def test_a_keras_model_of_two_inputs_is_refused():
    a, b = keras.Input((3,), name="left"), keras.Input((3,), name="right")
    two = keras.Model([a, b], keras.layers.Dense(2)(keras.layers.Concatenate()([a, b])))
    with pytest.raises(xai.ValidationError, match=r"model: the Keras model .* has 2 inputs"):
        xai.explain(two, X)


# -- files --------------------------------------------------------------------------------------


@pytest.fixture
def onnx_file(tmp_path):
    path = tmp_path / "mlp.onnx"
    path.write_bytes(torch_import.export_onnx(torch_mlp(), torch.from_numpy(X)))
    return path


@pytest.mark.parametrize("as_path", [str, Path], ids=["str", "Path"])
def test_an_onnx_file_explains_as_its_explicit_import(onnx_file, as_path):
    e = xai.explain(as_path(onnx_file), X, **IG)
    assert np.array_equal(e.values, xai.explain(xai.from_onnx(onnx_file), X, **IG).values)


def test_a_file_is_read_once_until_it_changes(onnx_file, monkeypatch):
    from xai_core import importers

    calls = counting(monkeypatch, importers, "from_onnx")
    xai.explain(onnx_file, X, **IG)
    xai.explain(str(onnx_file), X, **IG)
    assert len(calls) == 1
    onnx_file.write_bytes(torch_import.export_onnx(torch_mlp(seed=3), torch.from_numpy(X)))
    stat = onnx_file.stat()
    os.utime(onnx_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    e = xai.explain(onnx_file, X, **IG)
    assert len(calls) == 2
    assert np.array_equal(
        e.values, xai.explain(xai.from_torch(torch_mlp(seed=3), X), X, **IG).values
    )


def test_a_tflite_file_explains_as_its_explicit_import():
    path = FIXTURES / "mlp_int8.tflite"
    rows = RNG.random((3, 20)).astype(np.float32)
    shap = {"method": "shap", "background": rows[:2], "nsamples": 64, "seed": 0}
    e = xai.explain(path, rows, **shap)
    assert np.array_equal(e.values, xai.explain(xai.from_tflite(path), rows, **shap).values)
    assert xai.import_model(path).is_quantized


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_keras_files_explain_as_their_explicit_import(tmp_path, suffix):
    path = tmp_path / f"mlp{suffix}"
    keras_mlp().save(path)
    e = xai.explain(path, X, **IG)
    assert np.array_equal(e.values, xai.explain(xai.from_keras(path), X, **IG).values)


def test_a_saved_network_file_explains_as_the_loaded_one(tmp_path):
    net = xai.nn.mlp(6, hidden=(5,), n_outputs=2, seed=0)
    net.save(tmp_path / "m.npz")
    e = xai.explain(tmp_path / "m.npz", X, **IG)
    assert np.array_equal(e.values, xai.explain(xai.load_model(tmp_path / "m.npz"), X, **IG).values)


@pytest.mark.parametrize("zipped", [False, True], ids=["folder", "zip"])
def test_a_teachable_machine_export_explains_as_its_explicit_import(tmp_path, zipped):
    pytest.importorskip("tflite", reason="the tflite extra is not installed")
    folder = tmp_path / "converted_tflite"
    folder.mkdir()
    (folder / "model_unquant.tflite").write_bytes((FIXTURES / "cnn_float.tflite").read_bytes())
    (folder / "labels.txt").write_text("".join(f"{i} c{i}\n" for i in range(5)))
    path = folder
    if zipped:
        path = tmp_path / "export.zip"
        with zipfile.ZipFile(path, "w") as z:
            for f in folder.iterdir():
                z.write(f, f"converted_tflite/{f.name}")
    images = RNG.random((2, 12, 12, 1)).astype(np.float32)
    shap = {"method": "shap", "algorithm": "permutation", "background": images[:1], "seed": 0}
    model = xai.import_model(path)
    assert model.output_names == ("c0", "c1", "c2", "c3", "c4")
    e = xai.explain(path, images, **shap)
    explicit = xai.explain(xai.from_teachable_machine(path), images, **shap)
    assert np.array_equal(e.values, explicit.values)


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("missing.onnx", r"model: no model file or folder at .*missing.onnx"),
        ("weights.pt", r"suffix must be one of .*\.onnx.*load the module with torch"),
    ],
    ids=["missing", "torch-file"],
)
def test_bad_paths_are_refused_naming_model(tmp_path, name, match):
    if name.endswith(".pt"):
        (tmp_path / name).write_bytes(b"\0")
    with pytest.raises(xai.ValidationError, match=match):
        xai.explain(tmp_path / name, X)


def test_a_corrupt_file_says_which_file_failed(tmp_path):
    path = tmp_path / "broken.onnx"
    path.write_bytes(b"not a model")
    with pytest.raises(xai.ModelFormatError, match="model: importing the model file 'broken.onnx'"):
        xai.explain(path, X)


def test_output_names_only_for_what_is_imported():
    with pytest.raises(xai.ValidationError, match="output_names names the outputs"):
        xai.explain(lambda A: A[:, :2], X, output_names=["a", "b"])
    runner = xai.ModelRunner(xai.nn.mlp(6, hidden=(4,), n_outputs=2, seed=0))
    with pytest.raises(xai.ValidationError, match="output_names .* ModelRunner"):
        xai.explain(runner, X, output_names=["a", "b"])


# -- the other entry points ---------------------------------------------------------------------


def test_every_entry_point_imports_the_same_way(onnx_file, exports):
    """compare_methods, compare_backends, faithfulness and what_if take a module or a path too."""
    m = torch_mlp()
    net = xai.import_model(m, X)
    methods = xai.compare_methods(m, X[:4], methods=["saliency", "gradient_x_input"])
    explicit = xai.compare_methods(net, X[:4], methods=["saliency", "gradient_x_input"])
    assert np.array_equal(
        methods.explanations["saliency"].values, explicit.explanations["saliency"].values
    )
    backends = xai.compare_backends(m, X[:4], method="saliency", backends=["cpu", "gpu"])
    assert set(backends.explanations) == {"cpu", "gpu"}
    e = xai.explain(m, X[:4], method="saliency")
    f = xai.faithfulness(m, e, steps=3, n_random=2, infidelity_samples=4)
    assert f is not None
    assert len(exports) == 1  # one trace for all of them
    w = xai.what_if(onnx_file, X)
    np.testing.assert_allclose(w.outputs, xai.from_onnx(onnx_file).predict(X), rtol=1e-6)


def test_the_projector_reads_an_imported_layer():
    """project(module, X, layer=) reads the imported network's node, as the explicit import's."""
    m = torch_mlp()
    net = xai.from_torch(m, X)
    layer = net.nodes[-2].name
    p = xai.project(m, X, layer=layer, method="pca")
    np.testing.assert_array_equal(p.vectors, xai.project(net, X, layer=layer, method="pca").vectors)


def test_rows_with_nan_are_refused_before_the_trace(exports):
    bad = X.copy()
    bad[2, 1] = np.nan
    with pytest.raises(xai.ValidationError, match="X"):
        xai.explain(torch_mlp(), bad)
    assert exports == []
