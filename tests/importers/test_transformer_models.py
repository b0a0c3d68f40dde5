"""Transformers from timm, torchvision, torch and transformers, imported with from_torch.

Each model (random weights, the smallest variant at a small input) imports, equals
torch's forward within 1e-4 relative on a batch unlike the one it was traced on, gives
integrated gradients whose sum is f(x) - f(baseline), and runs on the TPU with every
matrix product of attention counted as a GEMM. BERT is explained with respect to its
input embeddings (``inputs_embeds``), with a fixed attention mask of ones.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import xai_core as xai

timm = pytest.importorskip("timm")
transformers = pytest.importorskip("transformers")


# -- the model builders: (eval-mode module, per-sample input shape, import options) ---------
def build_vit():
    """timm's ViT-Tiny at 32 x 32 pixels, 8 x 8 patches (16 patches and a class token)."""
    m = timm.create_model(
        "vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8, num_classes=10
    )
    return m.eval(), (3, 32, 32), {}


def build_deit():
    """timm's DeiT-Tiny at 32 x 32 pixels, 8 x 8 patches."""
    m = timm.create_model(
        "deit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8, num_classes=10
    )
    return m.eval(), (3, 32, 32), {}


def build_swin():
    """timm's Swin-T at 32 x 32 pixels with 2 x 2 windows (shifted windows, relative
    position bias, the attention mask of the shifted windows, patch merging)."""
    m = timm.create_model(
        "swin_tiny_patch4_window7_224",
        pretrained=False,
        img_size=32,
        window_size=2,
        num_classes=10,
    )
    return m.eval(), (3, 32, 32), {}


def build_convnext():
    """timm's ConvNeXt-Atto at 32 x 32 pixels (7 x 7 depthwise convolutions, LayerNorm2d)."""
    return (
        timm.create_model("convnext_atto", pretrained=False, num_classes=10).eval(),
        (3, 32, 32),
        {},
    )


def build_torchvision_vit():
    """torchvision's VisionTransformer (nn.MultiheadAttention inside), a small config."""
    from torchvision.models.vision_transformer import VisionTransformer

    m = VisionTransformer(
        image_size=32,
        patch_size=8,
        num_layers=2,
        num_heads=2,
        hidden_dim=32,
        mlp_dim=64,
        num_classes=10,
    )
    torch.nn.init.normal_(m.heads.head.weight, std=0.5)  # torchvision starts it at zero
    return m.eval(), (3, 32, 32), {}


def build_torchvision_swin():
    """torchvision's SwinTransformer (shifted windows; the window mask built by Concat of
    constants), a small config at 32 x 32 pixels with 2 x 2 windows."""
    from torchvision.models.swin_transformer import SwinTransformer

    m = SwinTransformer(
        patch_size=[4, 4],
        embed_dim=24,
        depths=[2, 2],
        num_heads=[2, 4],
        window_size=[2, 2],
        num_classes=10,
    )
    return m.eval(), (3, 32, 32), {}


def build_transformer_encoder_layer():
    """torch's nn.TransformerEncoderLayer as constructed by default: (seq, batch, d_model),
    imported with batch_axis=1 (the network takes (batch, seq, d_model))."""
    m = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0)
    return m.eval(), (6, 32), {"batch_axis": 1}


def build_transformer_encoder_layer_batch_first():
    """nn.TransformerEncoderLayer(batch_first=True), GELU, norm first."""
    m = torch.nn.TransformerEncoderLayer(
        32, 4, 64, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
    )
    return m.eval(), (6, 32), {}


class BertOnEmbeddings(torch.nn.Module):
    """BertForSequenceClassification as a function of its input embeddings.

    Input ``inputs_embeds`` of shape (batch, seq, hidden); attention mask of ones (fixed);
    output the classification logits (batch, num_labels).
    """

    def __init__(self, model, seq: int) -> None:
        super().__init__()
        self.model = model
        self.register_buffer("mask", torch.ones(1, seq, dtype=torch.long))

    def forward(self, x):
        mask = self.mask.expand(x.shape[0], -1)
        return self.model(inputs_embeds=x, attention_mask=mask).logits


def build_bert(attn_implementation: str = "sdpa"):
    """A 2-layer BERT (hidden 32, 2 heads) classifying 8 embeddings into 3 classes."""
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        vocab_size=100,
        num_labels=3,
        attn_implementation=attn_implementation,
    )
    model = BertForSequenceClassification(config).eval()
    return BertOnEmbeddings(model, 8).eval(), (8, 32), {}


def build_bert_eager():
    """BERT with transformers' eager attention (an additive mask instead of a boolean one)."""
    return build_bert("eager")


BUILDERS = {
    "vit": build_vit,
    "deit": build_deit,
    "swin": build_swin,
    "convnext": build_convnext,
    "torchvision_vit": build_torchvision_vit,
    "torchvision_swin": build_torchvision_swin,
    "transformer_encoder_layer": build_transformer_encoder_layer,
    "transformer_encoder_layer_batch_first": build_transformer_encoder_layer_batch_first,
    "bert": build_bert,
    "bert_eager": build_bert_eager,
}
#: Models whose import alone takes about 5 s or more on a small machine.
SLOW = {"vit", "deit", "swin", "convnext", "torchvision_swin", "bert", "bert_eager"}
MODELS = [pytest.param(k, marks=pytest.mark.slow) if k in SLOW else k for k in BUILDERS]

_CACHE: dict[str, tuple] = {}


def imported(name: str):
    """(module, network, per-sample shape, options): each model built and imported once."""
    if name not in _CACHE:
        torch.manual_seed(0)
        module, shape, options = BUILDERS[name]()
        example = torch.randn(2, *shape).movedim(0, options.get("batch_axis", 0))
        net = xai.from_torch(module, example, **options)
        _CACHE[name] = module, net, shape, options
    return _CACHE[name]


def _torch_forward(module, X: np.ndarray, options) -> np.ndarray:
    """The module's output on the batch-first ``X``, batch first, one row per sample."""
    x = torch.tensor(X)
    axis = options.get("batch_axis", 0)
    with torch.no_grad():
        out = module(x.movedim(0, axis)).movedim(axis, 0)
    return out.numpy().reshape(len(X), -1)


def _batch(shape, n, seed):
    return np.random.default_rng(seed).standard_normal((n, *shape)).astype(np.float32)


@pytest.mark.parametrize("name", MODELS)
def test_forward_equals_torch(name):
    """On a fresh batch the network's output equals torch's within 1e-4 relative."""
    module, net, shape, options = imported(name)
    X = _batch(shape, 3, 1)
    want = _torch_forward(module, X, options)
    got = net.predict(X)
    assert got.shape == want.shape and np.abs(want).max() > 1e-3  # not a trivial output
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("name", MODELS)
def test_integrated_gradients_are_complete(name):
    """IG's attributions sum to f(x) - f(baseline) (the quadrature's delta is small).

    The baseline is another random input: along the path from zero, layer norms are
    scale-invariant, so f changes almost all at once near the baseline and 32 nodes miss it.
    """
    _, net, shape, _ = imported(name)
    X, baseline = _batch(shape, 1, 2), _batch(shape, 1, 9)
    e = xai.explain(net, X, method="ig", target=1, steps=32, baseline=baseline)
    assert e.values.shape == X.shape and np.all(np.isfinite(e.values))
    gap = net.predict(X)[:, 1] - e.base_values
    total = e.values.reshape(len(X), -1).sum(axis=1)
    np.testing.assert_allclose(total, gap, rtol=0.05, atol=0.02 * (np.abs(gap).max() + 1e-3))


def _attention_gemms(net, n: int) -> int:
    """Matrix products of two activations (attention's Q K^T and P V) per batch of n: one
    GEMM per sample and broadcast matrix pair (head, window)."""
    constants = {node.name for node in net.nodes if isinstance(node.layer, xai.nn.Constant)}
    total = 0
    for node in net.nodes:
        if isinstance(node.layer, xai.nn.MatMul) and not constants & set(node.inputs):
            total += n * int(np.prod(node.layer.output_shape[:-2], dtype=np.int64))
    return total


@pytest.mark.parametrize("name", MODELS)
def test_tpu_runs_and_counts_every_product(name):
    """On the TPU (bf16 products, fp32 accumulation) the outputs stay near the CPU's, and
    the TPU counts the same GEMMs and MACs as the CPU, attention's products among them."""
    _, net, shape, _ = imported(name)
    X = _batch(shape, 2, 3)
    cpu = xai.ModelRunner(net, backend="cpu")
    tpu = xai.ModelRunner(net, backend="tpu")
    want, got = cpu.predict(X), tpu.predict(X)
    scale = np.abs(want).max() + 1e-3
    assert np.abs(got - want).max() <= 0.1 * scale
    assert tpu.counters["matmuls"] == cpu.counters["matmuls"]
    assert tpu.counters["macs"] == cpu.counters["macs"]
    assert tpu.counters["cycles"] > 0
    if name != "convnext":  # ConvNeXt has no attention
        assert _attention_gemms(net, len(X)) > 0
        assert tpu.counters["matmuls"] >= _attention_gemms(net, len(X))


@pytest.mark.parametrize(
    "name", [pytest.param("bert", marks=pytest.mark.slow), "transformer_encoder_layer"]
)
def test_integrated_gradients_on_the_tpu_agree_with_the_cpu(name):
    """IG through the TPU's bf16 products stays close to the CPU's attributions."""
    _, net, shape, _ = imported(name)
    X, baseline = _batch(shape, 1, 4), _batch(shape, 1, 5)
    options = {"method": "ig", "target": 0, "steps": 16, "baseline": baseline}
    cpu = xai.explain(net, X, backend="cpu", **options).values.reshape(-1)
    tpu = xai.explain(net, X, backend="tpu", **options).values.reshape(-1)
    assert np.all(np.isfinite(tpu))
    assert np.corrcoef(cpu, tpu)[0, 1] > 0.95
