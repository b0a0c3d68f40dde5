"""Imported weights are the file's, bit for bit, and importing draws no random numbers."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper

import xai_core as xai
from xai_core.importers.onnx_reader import read_onnx
from xai_core.importers.torch_import import export_onnx

from .conftest import ResNetCNN, randomize_batchnorm


@pytest.fixture(scope="module")
def resnet_onnx() -> bytes:
    """A small ResNet (convolutions, batch norms, a dense head) exported to ONNX bytes."""
    torch.manual_seed(0)
    module = randomize_batchnorm(ResNetCNN(1, 10))
    return export_onnx(module, torch.zeros(2, 1, 12, 12))


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def test_imported_weights_equal_the_files_bitwise(resnet_onnx):
    """Every Conv, Gemm and BatchNormalization parameter equals its initializer exactly."""
    model = onnx.load_model_from_string(resnet_onnx)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    net = xai.from_onnx(resnet_onnx, fold_batch_norm=False)
    seen = 0
    for node in model.graph.node:
        if node.op_type not in ("Conv", "Gemm", "BatchNormalization"):
            continue
        layer = net.node(node.name).layer
        bias = inits[node.input[2]] if len(node.input) > 2 and node.input[2] else None
        if node.op_type == "Conv":
            want = {"weight": inits[node.input[1]], "bias": bias}
        elif node.op_type == "Gemm":
            want = {"weight": inits[node.input[1]].T, "bias": bias}
        else:
            keys = ("gamma", "beta", "mean", "variance")
            want = {k: inits[i] for k, i in zip(keys, node.input[1:5])}
        for key, value in want.items():
            if value is None:
                continue
            got = layer.params.get(key, layer.buffers.get(key))
            assert got.dtype == np.float32 and got.shape == value.shape, (node.name, key)
            np.testing.assert_array_equal(_bits(got), _bits(value), err_msg=f"{node.name}.{key}")
            seen += 1
    assert seen >= 20  # 5 convolutions, 5 batch norms (4 arrays each), the dense layer


class _CountingRng:
    """A numpy Generator that counts every method called on it (draws included)."""

    calls: list[str] = []

    def __init__(self, seed=None):
        self._rng = np.random.Generator(np.random.PCG64(seed))

    def __getattr__(self, name):
        method = getattr(self._rng, name)

        def counted(*args, **kwargs):
            _CountingRng.calls.append(name)
            return method(*args, **kwargs)

        return counted


def test_import_draws_no_random_numbers(resnet_onnx, monkeypatch):
    """from_onnx builds its layers without drawing initial weights; a user's add still draws."""
    monkeypatch.setattr(np.random, "default_rng", _CountingRng)
    _CountingRng.calls = []
    net = xai.from_onnx(resnet_onnx)
    assert _CountingRng.calls == []
    g = xai.nn.Graph((4,))
    g.add(xai.nn.Dense(3))
    assert _CountingRng.calls == ["uniform"]  # the mock sees the ordinary path's draw
    assert net.n_params > 0


def test_in_place_fold_gives_what_the_copying_fold_gives(resnet_onnx):
    """from_onnx's fold (in place) equals folding an unfolded import (a copy), bitwise."""
    X = np.random.default_rng(0).standard_normal((3, 1, 12, 12)).astype(np.float32)
    unfolded = xai.from_onnx(resnet_onnx, fold_batch_norm=False)
    before = unfolded.predict(X)
    copied = unfolded.fold_batch_norm()
    folded = xai.from_onnx(resnet_onnx)
    assert folded.folded_batch_norms == copied.folded_batch_norms and folded.folded_batch_norms
    np.testing.assert_array_equal(folded.predict(X), copied.predict(X))
    np.testing.assert_array_equal(unfolded.predict(X), before)  # the copy left it alone
    for a, b in zip(folded.get_weights(), copied.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_shape_inference_without_the_weights_infers_every_shape(resnet_onnx):
    """The declared shapes read equal those ONNX infers on the whole model (weights in)."""
    model = onnx.load_model_from_string(resnet_onnx)
    full = onnx.shape_inference.infer_shapes(model).graph
    want = {}
    for vi in [*full.value_info, *full.output]:
        dims = [
            d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim
        ]
        if dims and all(isinstance(d, int) and d > 0 for d in dims[1:]):
            want[vi.name] = tuple(dims[1:])
    assert len(want) > 10
    assert read_onnx(resnet_onnx).declared == want
