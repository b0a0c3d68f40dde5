"""Texts across hardware: compare_backends explains texts on each backend through explain's
text path, names the tokens that moved, and renders them highlighted in the report."""

import numpy as np
import pytest

import xai_core as xai

torch = pytest.importorskip("torch")
pytest.importorskip("tokenizers")

WORDS = "[PAD] [UNK] [CLS] [SEP] [MASK] the a cat dog sat on mat play ##ing ##s runs < script >"
VOCAB = {w: i for i, w in enumerate(WORDS.split())}
SEQ = 9
TEXTS = ["the cat sat on the mat", "a dog playing", "dogs runs <script>"]


def _wordpiece():
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    tok = Tokenizer(models.WordPiece(VOCAB, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    return tok


class Classifier(torch.nn.Module):
    def __init__(self, vocab=19, dim=6, seq=SEQ):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.lin = torch.nn.Linear(dim * seq, 3)

    def forward(self, ids):
        return self.lin(torch.tanh(self.emb(ids)).flatten(1))


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    module = Classifier().eval()
    tok = _wordpiece()
    c = xai.compare_backends(
        module, TEXTS, tokenizer=tok, method="ig", steps=16, max_length=SEQ,
        backends=["tpu", "gpu", "edgetpu"],
    )  # fmt: skip
    return module, tok, c


def test_each_backend_is_explain_on_that_backend(setup):
    """One mechanism: each backend's explanation is xai.explain's on texts there, same target."""
    module, tok, c = setup
    assert list(c.explanations) == ["cpu", "tpu", "gpu"]
    ref = xai.explain(module, TEXTS, tokenizer=tok, method="ig", steps=16, max_length=SEQ)
    np.testing.assert_array_equal(c.explanations["cpu"].values, ref.values)
    for name in ("tpu", "gpu"):
        e = xai.explain(
            module, TEXTS, tokenizer=tok, steps=16, max_length=SEQ, backend=name, target=ref.target
        )
        np.testing.assert_array_equal(c.explanations[name].values, e.values)
        np.testing.assert_array_equal(c.explanations[name].target, ref.target)
        assert c.explanations[name].backend == name


def test_explanations_carry_the_tokens(setup):
    _, tok, c = setup
    want = ["[CLS]", "a", "dog", "play", "##ing", "[SEP]", "", "", ""]
    for e in c.explanations.values():
        assert list(e.meta["tokens"][1]) == want
        assert (e.values[~e.meta["mask"]] == 0).all()


def test_bf16_moves_the_values_little_and_fp32_backends_agree(setup):
    """bf16 operands move the values (but not the ranking); the gpu's fp32 stays within rounding."""
    _, _, c = setup
    cpu, tpu, gpu = (np.asarray(c.explanations[n].values) for n in ("cpu", "tpu", "gpu"))
    assert np.abs(tpu - cpu).max() > 0
    np.testing.assert_allclose(gpu, cpu, rtol=0, atol=1e-5 * np.abs(cpu).max())
    rows = c.rows.set_index(["backend", "row"])
    assert (rows.loc["tpu", "cosine"] > 0.99).all()
    assert not c.rows["flipped"].any()
    assert "inference only" in c.skipped["edgetpu"]
    assert c.summary.loc["tpu", "explanation_cycles"] > 0


def test_token_shifts_name_the_tokens_that_moved(setup):
    """Top tokens by |value - reference| per text, as numpy ranks them."""
    _, _, c = setup
    shifts = c.token_shifts(top=2)
    cpu = np.asarray(c.explanations["cpu"].values)
    tokens = c.explanations["cpu"].meta["tokens"]
    for name in ("tpu", "gpu"):
        d = np.asarray(c.explanations[name].values) - cpu
        for row in range(len(TEXTS)):
            got = shifts[(shifts.backend == name) & (shifts.row == row)]
            want = np.argsort(-np.abs(d[row]), kind="stable")[:2]
            assert got["position"].tolist() == want.tolist()
            assert got["token"].tolist() == [tokens[row][p] for p in want]
            np.testing.assert_allclose(got["difference"], d[row, want])
    assert set(shifts.backend) == {"tpu", "gpu"}


def test_report_highlights_the_tokens_of_every_backend(setup):
    """The section shows each backend's tokens and their difference, escaped, no heatmap grid."""
    _, _, c = setup
    html = xai.Report("texts").add(c).to_html()
    assert "tpu \u2212 cpu" in html and "gpu \u2212 cpu" in html
    assert "Tokens that moved most" in html
    assert 'title="dog: ' in html
    assert 'title="&lt;: ' in html  # the token "<" is escaped
    assert "xai-heatmap" not in html.split("xai-analysis")[1]


def test_token_ids_take_the_same_path():
    """Integer ids on a network read by an Embedding: the text path, tokens are the ids."""
    torch.manual_seed(1)
    module = Classifier().eval()
    ids = np.array([[2, 5, 7, 3, 0, 0, 0, 0, 0], [2, 6, 8, 9, 3, 0, 0, 0, 0]])
    net = xai.from_torch(module, ids)
    c = xai.compare_backends(net, ids, method="saliency", backends=["tpu"])
    assert list(c.explanations["tpu"].meta["tokens"][0][:4]) == ["2", "5", "7", "3"]
    e = xai.explain(net, ids, method="saliency", backend="tpu", target=c.explanations["cpu"].target)
    np.testing.assert_array_equal(c.explanations["tpu"].values, e.values)


def test_texts_refuse_what_they_do_not_take(setup):
    module, tok, _ = setup
    with pytest.raises(xai.ValidationError, match="chunk_size"):
        xai.compare_backends(module, TEXTS, tokenizer=tok, chunk_size=2, max_length=SEQ)
    with pytest.raises(xai.ValidationError, match="tokenizer="):
        xai.compare_backends(module, TEXTS, backends=["tpu"])
    with pytest.raises(xai.ValidationError, match="text method"):
        xai.compare_backends(
            module, TEXTS, tokenizer=tok, method=xai.Explainer, max_length=SEQ, backends=["tpu"]
        )


@pytest.mark.slow
def test_bert_classifier_drift_is_in_the_matrix_products():
    """A tiny BERT: tokens carried on every backend; on the tpu only matrix products add error
    (softmax and layer norm run on its fp32 vector unit), as docs/text.md reports."""
    from transformers import BertConfig, BertForSequenceClassification

    from xai_core.text import TextTokenizer
    from xai_core.text.transformers_models import network_for_length

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=16, num_labels=2,
    )  # fmt: skip
    bert = BertForSequenceClassification(config).eval()
    tok = _wordpiece()
    c = xai.compare_backends(bert, TEXTS[:2], tokenizer=tok, steps=8, backends=["tpu"])
    assert list(c.explanations["tpu"].meta["tokens"][1][:3]) == ["[CLS]", "a", "dog"]
    assert np.abs(c.explanations["tpu"].values - c.explanations["cpu"].values).max() > 0

    enc = TextTokenizer(tok).encode(TEXTS[:1])
    ids = enc.ids
    net = network_for_length(bert, ids.shape[1], ids.shape[1], ids, "float32")
    cpu, tpu = xai.get_backend("cpu"), xai.get_backend("tpu")
    values = {net.input_name: ids.astype(np.float32)}
    local: dict[str, list[float]] = {}
    for node in net.nodes:
        args = [values[name] for name in node.inputs]
        x = args[0] if node.layer.n_inputs == 1 else args
        ref = np.asarray(node.layer.apply(x, cpu, {}))
        low = np.asarray(node.layer.apply(x, tpu, {}))
        values[node.name] = ref
        if ref.dtype.kind == "f" and np.abs(ref).max() > 0:
            err = float(np.abs(low - ref).max() / np.abs(ref).max())
            local.setdefault(type(node.layer).__name__, []).append(err)
    assert max(local["Softmax"]) == 0 and max(local["LayerNormalization"]) == 0
    assert min(local["MatMul"]) > 0
    assert max(max(v) for v in local.values()) < 2**-6  # bf16 rounding of the operands
