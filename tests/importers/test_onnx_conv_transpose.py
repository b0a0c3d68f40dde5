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


def test_speecht5_hifigan_vocoder_equals_torch():
    """transformers' SpeechT5 HiFi-GAN vocoder (a small config, random weights): its 1-D
    transposed convolutions upsample mel frames to a waveform; values and gradients equal
    torch's."""
    from transformers import SpeechT5HifiGan, SpeechT5HifiGanConfig

    torch.manual_seed(0)
    config = SpeechT5HifiGanConfig(
        model_in_dim=16,
        upsample_initial_channel=32,
        upsample_rates=[4, 2],
        upsample_kernel_sizes=[8, 4],
        resblock_kernel_sizes=[3, 5],
        resblock_dilation_sizes=[[1, 3], [1, 3]],
    )
    vocoder = SpeechT5HifiGan(config).eval()
    for p in vocoder.parameters():  # its own initialisation leaves the output near 1e-4
        p.data.normal_(0, 0.1)

    class Waveform(torch.nn.Module):  # the vocoder's forward, with its keyword defaults
        def __init__(self):
            super().__init__()
            self.vocoder = vocoder

        def forward(self, mel):
            return self.vocoder(mel)

    module = Waveform().eval()
    x = torch.randn(2, 12, 16)
    net = xai.from_torch(module, x)
    kinds = [type(layer).__name__ for layer in net.layers]
    assert kinds.count("Conv2DTranspose") == 2
    X = x.numpy()
    with torch.no_grad():
        want = module(x).numpy()
    got = net.predict(X)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * np.abs(want).max())
    xt = x.clone().requires_grad_(True)
    module(xt)[:, 40].sum().backward()
    grad = xt.grad.numpy()
    np.testing.assert_allclose(net.gradient(X, 40), grad, rtol=0, atol=1e-4 * np.abs(grad).max())


def _decoder_2d():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, stride=2, padding=1),
        torch.nn.ReLU(),
        torch.nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1),
        torch.nn.Tanh(),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 8 * 8, 3),
    )


def _decoder_1d():
    return torch.nn.Sequential(
        torch.nn.Conv1d(2, 6, 3, stride=2),
        torch.nn.ReLU(),
        torch.nn.ConvTranspose1d(6, 3, 4, stride=2, padding=1, groups=3),
        torch.nn.Tanh(),
        torch.nn.Flatten(),
        torch.nn.Linear(3 * 14, 2),
    )


@pytest.mark.parametrize(
    ("make", "shape", "n", "target"),
    [(_decoder_2d, (3, 8, 8), 2, 2), (_decoder_1d, (2, 15), 3, 1)],
    ids=["2d", "1d"],
)
def test_a_torch_decoder_has_torchs_gradients(make, shape, n, target):
    torch.manual_seed(0)
    module = make().eval()
    net = xai.from_torch(module, torch.zeros(2, *shape))
    X = np.random.default_rng(n - 1).standard_normal((n, *shape)).astype(np.float32)
    x = torch.tensor(X, requires_grad=True)
    out = module(x)
    np.testing.assert_allclose(net.predict(X), out.detach().numpy(), rtol=1e-4, atol=1e-5)
    out[:, target].sum().backward()
    np.testing.assert_allclose(net.gradient(X, target), x.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_an_output_padding_as_large_as_the_stride_is_refused():
    w = np.zeros((2, 2, 3, 3), np.float32)
    model = one_node_model(
        "ConvTranspose", {"strides": [2, 2], "output_padding": [2, 0]}, {"w": w}, shape=(2, 4, 4)
    )
    with pytest.raises(ValidationError, match="output_padding"):
        xai.from_onnx(model)
