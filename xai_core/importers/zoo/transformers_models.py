"""Hugging Face transformers' encoders, small configurations with random weights.

``bert_tiny``: a 2-layer BERT (hidden 32, 2 heads, intermediate 64) classifying a sequence
of 8 token embeddings into 3 classes, as a function of its input embeddings (the token
lookup is outside the network, so the network takes real values, as every zoo model does)
with an attention mask of ones.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from xai_core.importers.zoo import register
from xai_core.optional import require

__all__ = ["MODELS", "build"]

#: name -> (sequence length, hidden size, layers, heads, slow).
MODELS: dict[str, tuple[int, int, int, int, bool]] = {
    "bert_tiny": (8, 32, 2, 2, False),
}


def _transformers() -> Any:
    return require("transformers", extra="zoo", need="the transformers models of the zoo")


def build(name: str, seed: int = 0) -> Any:
    """The encoder ``name`` with random weights (``seed``), in eval mode, taking embeddings
    of shape (batch, sequence, hidden) and returning the logits (batch, 3)."""
    import torch

    transformers = _transformers()
    seq, hidden, layers, heads, _slow = MODELS[name]
    torch.manual_seed(seed)
    config = transformers.BertConfig(
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=2 * hidden,
        vocab_size=100,
        num_labels=3,
    )
    model = transformers.BertForSequenceClassification(config).eval()

    class OnEmbeddings(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model
            self.register_buffer("mask", torch.ones(1, seq, dtype=torch.long))

        def forward(self, x):
            mask = self.mask.expand(x.shape[0], -1)
            return self.model(inputs_embeds=x, attention_mask=mask).logits

    return OnEmbeddings().eval()


def _register() -> None:
    _transformers()
    for name, (seq, hidden, _layers, _heads, slow) in MODELS.items():
        register("transformers", name, "torch", partial(build, name), (seq, hidden), slow=slow)


_register()
