"""Integrated gradients per token on a BERT-style text classifier: xai-core against Captum.

Run from the repository root::

    python benchmarks/bench_text.py [--repeats 3] [--texts 20] [--tokens 64] [--steps 32]

A random 2-layer ``transformers`` BERT classifier (hidden 64, 4 heads, intermediate 128,
vocabulary 1000) explains ``--texts`` texts of ``--tokens`` ids each (a plain callable
tokenizer) with ``--steps`` Gauss-Legendre steps from the pad baseline:
``xai.explain(model, texts, tokenizer=..., method="ig")`` on the ``cpu`` backend (the
network imported once before timing, as a second call finds it) against Captum's
``LayerIntegratedGradients`` on ``bert.embeddings.word_embeddings`` with the mask as an
additional argument, 1 thread, interleaved, medians of ``--repeats``. Prints both, their
ratio and the largest relative difference of the attributions.
"""

from __future__ import annotations

import argparse

import numpy as np
from _pinning import interleaved, machine_note, pinned

import xai_core as xai


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--texts", type=int, default=20)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--steps", type=int, default=32)
    a = p.parse_args()

    import torch
    from captum.attr import LayerIntegratedGradients
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=1000,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=a.tokens,
        num_labels=2,
    )
    model = BertForSequenceClassification(config).eval()
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(1, 998)]
    texts = [" ".join(rng.choice(words, a.tokens - 2)) for _ in range(a.texts)]

    def tokenizer(text: str) -> list[int]:
        return [1, *(int(w[1:]) + 2 for w in text.split()), 999]

    def ours():
        return xai.explain(model, texts, tokenizer=tokenizer, method="ig", steps=a.steps, target=1)

    lig = LayerIntegratedGradients(
        lambda ids, mask: model(input_ids=ids, attention_mask=mask).logits,
        model.bert.embeddings.word_embeddings,
    )
    ids = torch.tensor([tokenizer(t) for t in texts])
    mask = torch.ones_like(ids)

    def captum():
        return (
            lig.attribute(
                ids,
                baselines=torch.zeros_like(ids),
                additional_forward_args=(mask,),
                target=1,
                n_steps=a.steps,
            )
            .sum(-1)
            .detach()
            .numpy()
        )

    with pinned(1):
        ours()  # the import, once
        (t_ours, e), (t_captum, ref) = interleaved(ours, captum, repeats=a.repeats)
    rel = float(np.abs(e.values - ref).max() / np.abs(ref).max())
    print(machine_note())
    print(
        f"{a.texts} texts x {a.tokens} tokens, IG {a.steps} steps, 1 thread, median of "
        f"{a.repeats}: xai-core {t_ours:.3f} s, Captum {t_captum:.3f} s, ratio "
        f"{t_ours / t_captum:.2f}; max relative difference {rel:.2e} (float32)"
    )


if __name__ == "__main__":
    main()
