"""ONNX ConvTranspose, 1-D and 2-D: every padding rule against onnxruntime (an output_shape
beyond the kernel's reach included); a torch decoder's gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import xai_core as xai
from xai_core.errors import ValidationError

from .conftest import one_node_model, ort_run

ATTRS = [
    {"strides": [2, 2]},
    {"strides": [2, 2], "pads": [1, 0, 1, 2], "output_padding": [1, 1]},
    {"strides": [2, 1], "dilations": [1, 2], "group": 2},
    {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
    {"strides": [3, 2], "auto_pad": "SAME_LOWER"},
    {"strides": [2, 2], "output_shape": [11, 12]},
    {"strides": [3, 2], "output_shape": [17, 14]},  # beyond the reach: 2 and 1 bias-only
    {"auto_pad": "VALID", "kernel_shape": [3, 3]},
]

ATTRS_1D = [
    {"strides": [2]},
    {"strides": [2], "pads": [1, 2], "output_padding": [1]},
    {"dilations": [2], "group": 2},
    {"strides": [2], "auto_pad": "SAME_UPPER"},
    {"strides": [3], "output_shape": [23]},  # 2 steps beyond the kernel's reach
]


@pytest.mark.parametrize("attrs", ATTRS, ids=lambda a: "-".join(map(str, a.items())))
def test_equals_onnxruntime(attrs):
    rng = np.random.default_rng(0)
    groups = attrs.get("group", 1)
    inits = {"w": rng.standard_normal((4, 3, 3, 3)).astype(np.float32)}
    inits["b"] = rng.standard_normal(3 * groups).astype(np.float32)
    model = one_node_model("ConvTranspose", attrs, inits, shape=(4, 5, 6))
    X = rng.standard_normal((2, 4, 5, 6)).astype(np.float32)
    net = xai.from_onnx(model)
    expected = ort_run(model, X)
    np.testing.assert_allclose(net.predict(X), expected.reshape(2, -1), rtol=1e-5, atol=1e-5)
    assert net.output_shape == expected.shape[1:]


@pytest.mark.parametrize("attrs", ATTRS_1D, ids=lambda a: "-".join(map(str, a.items())))
def test_1d_equals_onnxruntime(attrs):
    rng = np.random.default_rng(1)
    groups = attrs.get("group", 1)
    inits = {"w": rng.standard_normal((4, 3, 3)).astype(np.float32)}
    inits["b"] = rng.standard_normal(3 * groups).astype(np.float32)
    model = one_node_model("ConvTranspose", attrs, inits, shape=(4, 7))
    X = rng.standard_normal((2, 4, 7)).astype(np.float32)
    net = xai.from_onnx(model)
    expected = ort_run(model, X)
    np.testing.assert_allclose(net.predict(X), expected.reshape(2, -1), rtol=1e-5, atol=1e-5)
    assert net.output_shape == expected.shape[1:]


def test_a_torch_1d_decoder_has_torchs_gradients():
    torch.manual_seed(0)
    module = torch.nn.Sequential(
        torch.nn.Conv1d(2, 6, 3, stride=2),
        torch.nn.ReLU(),
        torch.nn.ConvTranspose1d(6, 3, 4, stride=2, padding=1, groups=3),
        torch.nn.Tanh(),
        torch.nn.Flatten(),
        torch.nn.Linear(3 * 14, 2),
    ).eval()
    net = xai.from_torch(module, torch.zeros(2, 2, 15))
    X = np.random.default_rng(2).standard_normal((3, 2, 15)).astype(np.float32)
    x = torch.tensor(X, requires_grad=True)
    out = module(x)
    np.testing.assert_allclose(net.predict(X), out.detach().numpy(), rtol=1e-4, atol=1e-5)
    out[:, 1].sum().backward()
    np.testing.assert_allclose(net.gradient(X, 1), x.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_a_torch_decoder_has_torchs_gradients():
    torch.manual_seed(0)
    module = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, stride=2, padding=1),
        torch.nn.ReLU(),
        torch.nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1),
        torch.nn.Tanh(),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 8 * 8, 3),
    ).eval()
    net = xai.from_torch(module, torch.zeros(2, 3, 8, 8))
    X = np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32)
    x = torch.tensor(X, requires_grad=True)
    out = module(x)
    np.testing.assert_allclose(net.predict(X), out.detach().numpy(), rtol=1e-4, atol=1e-5)
    out[:, 2].sum().backward()
    np.testing.assert_allclose(net.gradient(X, 2), x.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_an_output_padding_as_large_as_the_stride_is_refused():
    w = np.zeros((2, 2, 3, 3), np.float32)
    model = one_node_model(
        "ConvTranspose", {"strides": [2, 2], "output_padding": [2, 0]}, {"w": w}, shape=(2, 4, 4)
    )
    with pytest.raises(ValidationError, match="output_padding"):
        xai.from_onnx(model)
