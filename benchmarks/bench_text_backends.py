"""How far bf16 moves token attributions of a small BERT classifier, and where the drift comes from.

``python benchmarks/bench_text_backends.py`` builds a random BERT-style classifier
(``transformers.BertForSequenceClassification``, 2 layers, hidden 64, 4 heads), explains
texts with integrated gradients on ``cpu`` (fp32), ``tpu`` (bf16 matrix units) and ``gpu``
through ``xai.compare_backends``, and then runs the imported network node by node on
``cpu`` and ``tpu``: for each node its error against fp32 (the drift accumulated so far)
and its *local* error (the node run on ``tpu`` from the fp32 inputs: what that node adds),
summed up per kind of layer. The figures in docs/text.md come from this script.
"""

from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import xai_core as xai  # noqa: E402

WORDS = (
    "[PAD] [UNK] [CLS] [SEP] [MASK] the a cat dog sat on mat play ##ing ##s runs big small red "
    "blue green house tree car road fast slow good bad very not it was is"
).split()
TEXTS = [
    "the cat sat on the mat",
    "a dog playing on the road",
    "the big red car was very fast",
    "it is not a good house",
    "small cats sat on a tree",
    "the blue car is slow",
    "a very bad road",
    "the green tree was big",
]


def tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {w: i for i, w in enumerate(WORDS)}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    return tok


def model(seed: int = 0):
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(WORDS),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=32,
        num_labels=2,
    )
    return BertForSequenceClassification(config).eval()


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    """||a - b|| / ||b|| over the whole batch."""
    den = float(np.linalg.norm(b))
    return float(np.linalg.norm(a - b)) / den if den else 0.0


def node_errors(net, X: np.ndarray) -> list[dict]:
    """Per node: kind, accumulated error on tpu, local error (tpu from fp32 inputs)."""
    cpu, tpu = xai.get_backend("cpu"), xai.get_backend("tpu")
    ref = {net.input_name: X.astype(np.float32)}
    low = dict(ref)
    out = []

    def run(node, values, backend):
        args = [values[name] for name in node.inputs]
        x = args[0] if node.layer.n_inputs == 1 else args
        return np.asarray(node.layer.apply(x, backend, {}))

    for node in net.nodes:
        ref[node.name] = run(node, ref, cpu)
        low[node.name] = run(node, low, tpu)
        local = run(node, ref, tpu)
        if ref[node.name].dtype.kind != "f":
            continue
        out.append(
            {
                "node": node.name,
                "kind": type(node.layer).__name__,
                "accumulated": _rel(low[node.name], ref[node.name]),
                "local": _rel(local, ref[node.name]),
            }
        )
    return out


def main() -> None:
    import pandas as pd

    torch.set_num_threads(1)
    tok, clf = tokenizer(), model()
    c = xai.compare_backends(
        clf, TEXTS, tokenizer=tok, method="ig", steps=32, backends=["tpu", "gpu"]
    )
    cols = ["mean_cosine", "min_cosine", "mean_top_k_overlap", "mean_spearman", "max_abs_diff"]
    print(c.summary[cols + ["flipped", "mean_delta"]].to_string())
    rows = c.rows
    print(
        rows.groupby("backend")["max_rel_diff"].agg(["mean", "max"]).to_string(float_format="%.3g")
    )
    print("tokens per text:", c.explanations["cpu"].meta["mask"].sum(axis=1).tolist())
    shifts = c.token_shifts(top=3)
    tpu = shifts[shifts.backend == "tpu"]
    print("tokens that moved most on tpu (top 1 per text):")
    print(tpu.groupby("row").head(1).to_string(index=False))
    print("position of the largest move per text:", tpu.groupby("row").head(1)["token"].tolist())
    ref = c.explanations["cpu"]
    ranked = [
        (
            np.argsort(-np.abs(ref.values), axis=1)[:, :3]
            == np.argsort(-np.abs(e.values), axis=1)[:, :3]
        ).all()
        for e in c.explanations.values()
    ]
    print("top-3 tokens identical on every backend:", all(ranked))

    # Where the drift comes from: one network (the texts of the most common length).
    from xai_core.text import TextTokenizer
    from xai_core.text.transformers_models import network_for_length

    enc = TextTokenizer(tok).encode(TEXTS)
    lengths = enc.mask.sum(axis=1)
    k = int(np.bincount(lengths).argmax())
    ids = enc.ids[lengths == k]
    net = network_for_length(clf, enc.ids.shape[1], k, ids, "float32")
    table = pd.DataFrame(node_errors(net, ids))
    by_kind = (
        table.groupby("kind")
        .agg(nodes=("node", "size"), mean_local=("local", "mean"), max_local=("local", "max"))
        .sort_values("max_local", ascending=False)
    )
    print(f"{len(ids)} texts of {k} tokens (padded to {enc.ids.shape[1]}):")
    print(by_kind.to_string())
    print("largest accumulated error:", table["accumulated"].max())
    print(table.tail(8).to_string(index=False))


if __name__ == "__main__":
    main()
