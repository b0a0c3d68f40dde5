"""ONNX external data: weights kept in files beside the model, read equal to onnxruntime."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

import xai_core as xai
from xai_core.importers.torch_import import export_onnx

from .conftest import TORCH_MODELS, ort_run, randomize_batchnorm

RNG = np.random.default_rng(0)
X4 = RNG.standard_normal((6, 4)).astype(np.float32)


def _model(nodes, inits, output="y") -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _mlp() -> onnx.ModelProto:
    """MatMul, bias, Relu, a float16 weight cast up, and a Reshape whose target is external."""
    w = numpy_helper.from_array(RNG.standard_normal((4, 6)).astype(np.float32), "W")
    b = numpy_helper.from_array(RNG.standard_normal(6).astype(np.float32), "b")
    h = numpy_helper.from_array(RNG.standard_normal((6, 6)).astype(np.float16), "H")
    shape = numpy_helper.from_array(np.array([-1, 2, 3], np.int64), "shape")
    return _model(
        [
            helper.make_node("MatMul", ["x", "W"], ["m"], name="mm"),
            helper.make_node("Add", ["m", "b"], ["a"], name="bias"),
            helper.make_node("Relu", ["a"], ["r"], name="relu"),
            helper.make_node("Cast", ["H"], ["h32"], name="cast", to=TensorProto.FLOAT),
            helper.make_node("MatMul", ["r", "h32"], ["z"], name="mm2"),
            helper.make_node("Reshape", ["z", "shape"], ["y"], name="reshape"),
        ],
        [w, b, h, shape],
    )


def _ort(whole: bytes) -> np.ndarray:
    """onnxruntime's output on ``X4``, flat per sample as ``predict`` gives it."""
    return ort_run(whole, X4).reshape(len(X4), -1)


def _save(model: onnx.ModelProto, path: Path, **kw) -> bytes:
    """Save ``model`` with every tensor external; return its self-contained bytes (the oracle's)."""
    whole = model.SerializeToString()
    kw = {"all_tensors_to_one_file": True, "location": f"{path.stem}.data", **kw}
    onnx.save_model(model, path, save_as_external_data=True, size_threshold=0, **kw)
    return whole


def _external(path: Path) -> list[onnx.TensorProto]:
    m = onnx.load(path, load_external_data=False)
    return [t for t in m.graph.initializer if t.data_location == TensorProto.EXTERNAL]


def test_one_file_of_external_data_equals_onnxruntime(tmp_path):
    """Every tensor (float32, float16, int64 reshape target) in one file beside the model."""
    path = tmp_path / "mlp.onnx"
    whole = _save(_mlp(), path)
    assert len(_external(path)) == 4 and (tmp_path / "mlp.data").is_file()
    net = xai.from_onnx(path)
    assert net.output_shape == (2, 3)  # the external reshape target was read
    np.testing.assert_allclose(net.predict(X4), _ort(whole), rtol=1e-5, atol=1e-6)


def test_a_file_per_tensor_named_by_location_alone_imports(tmp_path):
    """One file per tensor with only its location (no offset, no length), as torch's
    exporter writes them: each tensor is its whole file. The model given as a str."""
    path = tmp_path / "mlp.onnx"
    whole = _save(_mlp(), path, all_tensors_to_one_file=False)
    m = onnx.load(path, load_external_data=False)
    for t in m.graph.initializer:
        kept = [(e.key, e.value) for e in t.external_data if e.key == "location"]
        del t.external_data[:]
        for key, value in kept:
            t.external_data.add(key=key, value=value)
    path.write_bytes(m.SerializeToString())
    assert all(len(t.external_data) == 1 for t in _external(path))
    assert len({t.external_data[0].value for t in _external(path)}) == 4
    net = xai.from_onnx(str(path))
    np.testing.assert_allclose(net.predict(X4), _ort(whole), rtol=1e-5, atol=1e-6)


def test_a_location_in_a_subdirectory_and_a_matching_checksum_import(tmp_path):
    """``weights/mlp.data`` beside the model, its SHA-1 declared and checked."""
    path = tmp_path / "mlp.onnx"
    whole = _save(_mlp(), path)
    (tmp_path / "weights").mkdir()
    (tmp_path / "mlp.data").rename(tmp_path / "weights" / "mlp.data")
    digest = hashlib.sha1((tmp_path / "weights" / "mlp.data").read_bytes()).hexdigest()
    m = onnx.load(path, load_external_data=False)
    for t in m.graph.initializer:
        next(e for e in t.external_data if e.key == "location").value = "weights/mlp.data"
        t.external_data.add(key="checksum", value=digest)
    path.write_bytes(m.SerializeToString())
    np.testing.assert_allclose(xai.from_onnx(path).predict(X4), _ort(whole), rtol=1e-5, atol=1e-6)


def test_onnx_load_with_its_external_data_is_a_model_proto_that_imports(tmp_path):
    """``onnx.load`` reads the data into the ModelProto itself: that proto imports too."""
    path = tmp_path / "mlp.onnx"
    whole = _save(_mlp(), path)
    net = xai.from_onnx(onnx.load(path))
    np.testing.assert_allclose(net.predict(X4), _ort(whole), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["resnet", "mobilenetv2"])
def test_torch_networks_saved_with_external_data_equal_onnxruntime(tmp_path, name):
    """A small ResNet and MobileNetV2, every weight external, against onnxruntime on the same bytes."""
    torch.manual_seed(0)
    make, shape = TORCH_MODELS[name]
    module = randomize_batchnorm(make())
    model = onnx.load_model_from_string(export_onnx(module, torch.zeros(2, *shape)))
    path = tmp_path / f"{name}.onnx"
    whole = _save(model, path)
    assert _external(path)
    X = RNG.standard_normal((4, *shape)).astype(np.float32)
    net = xai.from_onnx(path)
    np.testing.assert_allclose(net.predict(X), ort_run(whole, X), rtol=1e-5, atol=1e-5)
