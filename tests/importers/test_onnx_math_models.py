"""Blocks exported from torch that need the math operators: MobileNetV3's and a transformer's."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn as tnn

import xai_core as xai

from .conftest import randomize_batchnorm


class SqueezeExcite(tnn.Module):
    """MobileNetV3's squeeze-and-excitation: pool, 1x1 down, ReLU, 1x1 up, hard sigmoid gate."""

    def __init__(self, c: int, r: int = 4) -> None:
        super().__init__()
        self.down = tnn.Conv2d(c, c // r, 1)
        self.up = tnn.Conv2d(c // r, c, 1)
        self.gate = tnn.Hardsigmoid()

    def forward(self, x):
        s = x.mean(dim=(2, 3), keepdim=True)
        return x * self.gate(self.up(torch.relu(self.down(s))))


class MobileNetV3Block(tnn.Module):
    """Expansion, depthwise 3x3, squeeze-excitation, projection; hard-swish, a residual."""

    def __init__(self, c: int = 8, hidden: int = 16, classes: int = 5) -> None:
        super().__init__()
        self.stem = tnn.Sequential(tnn.Conv2d(3, c, 3, 2, 1), tnn.BatchNorm2d(c), tnn.Hardswish())
        self.expand = tnn.Sequential(
            tnn.Conv2d(c, hidden, 1), tnn.BatchNorm2d(hidden), tnn.Hardswish()
        )
        self.dw = tnn.Sequential(
            tnn.Conv2d(hidden, hidden, 3, 1, 1, groups=hidden),
            tnn.BatchNorm2d(hidden),
            tnn.Hardswish(),
        )
        self.se = SqueezeExcite(hidden)
        self.project = tnn.Sequential(tnn.Conv2d(hidden, c, 1), tnn.BatchNorm2d(c))
        self.fc = tnn.Linear(c, classes)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.project(self.se(self.dw(self.expand(x))))
        return torch.softmax(self.fc(x.mean(dim=(2, 3))), dim=1)


class EncoderBlock(tnn.Module):
    """A transformer encoder block without attention, on one token: embedding, a learned
    positional embedding, pre-norm MLPs with GELU (exact and tanh) and residuals, a head."""

    def __init__(self, d: int = 16, features: int = 10, classes: int = 4) -> None:
        super().__init__()
        self.embed = tnn.Linear(features, d)
        self.pos = tnn.Parameter(torch.randn(d) * 0.1)
        self.norm1 = tnn.LayerNorm(d)
        self.mlp = tnn.Sequential(tnn.Linear(d, 2 * d), tnn.GELU(), tnn.Linear(2 * d, d))
        self.norm2 = tnn.LayerNorm(d)
        self.mlp2 = tnn.Sequential(tnn.Linear(d, d), tnn.GELU(approximate="tanh"))
        self.head = tnn.Linear(d, classes)

    def forward(self, x):
        h = self.embed(x) + self.pos
        h = h + self.mlp(self.norm1(h))
        h = h + self.mlp2(self.norm2(h))
        return torch.log_softmax(self.head(h), dim=-1)


class TokenNorms(tnn.Module):
    """Tokens of a sequence: sinusoidal positions, LayerNorm per token and over the whole
    sequence, GELU, a softmax over the tokens, flattened into a head."""

    def __init__(self, tokens: int = 6, d: int = 8, classes: int = 3) -> None:
        super().__init__()
        pos = torch.arange(tokens, dtype=torch.float32)[:, None] * torch.ones(d)
        self.register_buffer("angles", pos / 10.0 ** (torch.arange(d) / d))
        self.norm = tnn.LayerNorm(d)
        self.norm_all = tnn.LayerNorm((tokens, d))
        self.head = tnn.Linear(tokens * d, classes)

    def forward(self, x):
        h = x + torch.sin(self.angles) + 0.5 * torch.cos(self.angles)
        h = self.norm_all(tnn.functional.gelu(self.norm(h)))
        h = h * torch.softmax(h, dim=1)
        return self.head(torch.flatten(h, 1))


def _with_random_layer_norms(module: tnn.Module) -> tnn.Module:
    g = torch.Generator().manual_seed(1)
    for m in module.modules():
        if isinstance(m, tnn.LayerNorm):
            with torch.no_grad():
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.rand(m.bias.shape, generator=g) - 0.5)
    return module.eval()


MODELS = {
    "mobilenetv3_block": (lambda: randomize_batchnorm(MobileNetV3Block()), (3, 16, 16)),
    "encoder_block": (lambda: _with_random_layer_norms(EncoderBlock()), (10,)),
    "token_norms": (lambda: _with_random_layer_norms(TokenNorms()), (6, 8)),
}


@pytest.fixture(scope="module", params=sorted(MODELS), ids=sorted(MODELS))
def imported(request):
    """(torch module, imported network, inputs)."""
    torch.manual_seed(0)
    make, shape = MODELS[request.param]
    module = make()
    X = np.random.default_rng(3).standard_normal((4, *shape)).astype(np.float32)
    net = xai.from_torch(module, torch.from_numpy(X[:2]))
    return request.param, module, net, X


def test_block_imports_and_equals_torch(imported):
    """The exported block (opset 17) imports and its outputs equal torch's within 1e-5 relative."""
    name, module, net, X = imported
    kinds = {type(n.layer).__name__ for n in net.nodes}
    assert (
        {"HardSigmoid", "HardSwish"} if name.startswith("mobile") else {"LayerNormalization"}
    ) <= kinds
    with torch.no_grad():
        want = module(torch.from_numpy(X)).numpy()
    np.testing.assert_allclose(net.predict(X), want, rtol=1e-5, atol=1e-6)


def test_block_gradient_equals_torch_autograd(imported):
    """d output[target] / d X equals torch's autograd gradient."""
    _, module, net, X = imported
    target = np.arange(len(X)) % net.n_outputs
    xt = torch.from_numpy(X).requires_grad_(True)
    out = module(xt)
    out[torch.arange(len(X)), torch.from_numpy(target)].sum().backward()
    np.testing.assert_allclose(net.gradient(X, target), xt.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("backend", ["cpu", "tpu"], ids=["cpu", "tpu"])
def test_block_explains_with_ig(imported, backend):
    """Integrated gradients run on cpu and tpu; on tpu close to cpu (bf16 products)."""
    _, _, net, X = imported
    e = xai.explain(net, X, method="ig", steps=8, backend=backend, target=0)
    assert e.values.shape == X.shape and np.all(np.isfinite(e.values))
    tpu = xai.ModelRunner(net, backend="tpu").predict(X)
    np.testing.assert_allclose(tpu, net.predict(X), rtol=5e-2, atol=5e-2)
    if backend == "tpu":
        cpu = xai.explain(net, X, method="ig", steps=8, backend="cpu", target=0).values
        cos = np.sum(cpu * e.values) / (np.linalg.norm(cpu) * np.linalg.norm(e.values))
        assert cos > 0.95


def test_layer_norm_and_gelu_exported_before_opset_17_import_as_arithmetic():
    """At opset 16 torch writes LayerNorm as ReduceMean, Sub, Pow, Sqrt, Div: it imports too."""
    from xai_core.importers.torch_import import export_onnx

    torch.manual_seed(0)
    module = _with_random_layer_norms(EncoderBlock())
    X = np.random.default_rng(4).standard_normal((4, 10)).astype(np.float32)
    net = xai.from_onnx(export_onnx(module, torch.from_numpy(X[:2]), opset=16))
    kinds = {type(n.layer).__name__ for n in net.nodes}
    assert {"Reduce", "Power", "Sqrt", "Erf"} <= kinds and "LayerNormalization" not in kinds
    with torch.no_grad():
        want = module(torch.from_numpy(X)).numpy()
    np.testing.assert_allclose(net.predict(X), want, rtol=1e-5, atol=1e-6)
