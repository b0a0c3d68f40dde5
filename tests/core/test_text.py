"""Text explanations: tokenizers, attributions at the embedding against Captum, rendering."""

import numpy as np
import pytest
import torch

import xai_core as xai
from xai_core.errors import UnknownNameError, ValidationError

WORDS = "[PAD] [UNK] [CLS] [SEP] [MASK] the a cat dog sat on mat play ##ing ##s runs < script >"
VOCAB = {w: i for i, w in enumerate(WORDS.split())}
SEQ = 9
TEXTS = ["the cat sat on the mat", "a dog playing", "dogs runs"]


def _wordpiece():
    """An in-memory BERT-style WordPiece tokenizer ([CLS] text [SEP])."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    tok = Tokenizer(models.WordPiece(VOCAB, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    return tok


class Classifier(torch.nn.Module):
    """Embedding, tanh, a dense layer over the flattened sequence."""

    def __init__(self, vocab=19, dim=6, seq=SEQ):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.lin = torch.nn.Linear(dim * seq, 3)

    def forward(self, ids):
        return self.lin(torch.tanh(self.emb(ids)).flatten(1))


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    module = Classifier().double().eval()
    ids = torch.zeros((2, SEQ), dtype=torch.int64)
    net = xai.from_torch(module, ids.numpy(), dtype="float64")
    return module, net, xai.get_backend("cpu", dtype="float64"), _wordpiece()


def _ids(tok, texts):
    out = np.zeros((len(texts), SEQ), np.int64)
    for i, enc in enumerate(tok.encode_batch(texts)):
        out[i, : len(enc.ids)] = enc.ids
    return torch.tensor(out)


def _rel(got, want):
    return np.abs(got - want).max() / np.abs(want).max()


@pytest.mark.parametrize("base", [None, "[MASK]"], ids=["pad", "mask"])
def test_ig_equals_captum_layer_integrated_gradients(setup, base):
    """IG per token is Captum's LayerIntegratedGradients on the embedding, summed."""
    from captum.attr import LayerIntegratedGradients

    module, net, be, tok = setup
    e = xai.explain(
        net,
        TEXTS,
        tokenizer=tok,
        method="ig",
        backend=be,
        target=1,
        steps=16,
        baseline_token=base,
    )
    ids = _ids(tok, TEXTS)
    fill = 0 if base is None else VOCAB[base]
    baseline = torch.where(ids != 0, fill, 0)
    ref = LayerIntegratedGradients(module, module.emb).attribute(
        ids, baselines=baseline, target=1, n_steps=16
    )
    ref = ref.sum(-1).detach().numpy()
    assert _rel(e.values, ref) < 1e-4
    assert np.abs(e.meta["convergence_delta"]).max() < 1e-8


@pytest.mark.parametrize(
    "method, multiply", [("gradient_x_input", True), ("saliency", False)], ids=["gxi", "saliency"]
)
def test_gradient_methods_equal_captum(setup, method, multiply):
    """Gradient x input is LayerGradientXActivation; saliency is |gradient| at the layer."""
    from captum.attr import LayerGradientXActivation

    module, net, be, tok = setup
    e = xai.explain(net, TEXTS, tokenizer=tok, method=method, backend=be, target=2)
    ref = LayerGradientXActivation(module, module.emb, multiply_by_inputs=multiply).attribute(
        _ids(tok, TEXTS), target=2
    )
    ref = ref.detach().numpy()
    ref = ref.sum(-1) if multiply else np.abs(ref).sum(-1)
    mask = _ids(tok, TEXTS).numpy() != 0
    assert _rel(e.values, ref * mask) < 1e-4


def test_smoothgrad_without_noise_is_gradient_x_input(setup):
    """At stdev 0 SmoothGrad is gradient x input; with noise it differs, reproducibly."""
    _, net, be, tok = setup
    gxi = xai.explain(net, TEXTS, tokenizer=tok, method="gradient_x_input", backend=be)
    flat = xai.explain(net, TEXTS, tokenizer=tok, method="smoothgrad", backend=be, stdev=0.0)
    np.testing.assert_allclose(flat.values, gxi.values, atol=1e-12)
    a = xai.explain(net, TEXTS, tokenizer=tok, method="smoothgrad", backend=be, seed=3)
    b = xai.explain(net, TEXTS, tokenizer=tok, method="smoothgrad", backend=be, seed=3)
    np.testing.assert_array_equal(a.values, b.values)
    assert not np.allclose(a.values, gxi.values)


def test_tokens_and_padding_are_carried(setup):
    """Rows carry their tokens; padded positions are masked and attributed zero."""
    _, net, be, tok = setup
    e = xai.explain(net, TEXTS, tokenizer=tok, backend=be)
    assert list(e.meta["tokens"][1][:5]) == ["[CLS]", "a", "dog", "play", "##ing"]
    assert e.meta["mask"].sum(axis=1).tolist() == [8, 6, 5]
    assert not e.values[~e.meta["mask"]].any()
    one = xai.explain(net, TEXTS[1], tokenizer=tok, backend=be)
    assert one.feature_names[:3] == ("[CLS]", "a", "dog")


def test_merge_words_sums_the_pieces(setup):
    """merge='words' sums "play ##ing" into "playing"; the words' text comes from offsets."""
    _, net, be, tok = setup
    e = xai.explain(net, TEXTS, tokenizer=tok, backend=be, target=0)
    w = xai.explain(net, TEXTS, tokenizer=tok, backend=be, target=0, merge="words")
    assert list(w.meta["tokens"][1][:5]) == ["[CLS]", "a", "dog", "playing", "[SEP]"]
    assert w.values[1, 3] == pytest.approx(e.values[1, 3] + e.values[1, 4])
    np.testing.assert_allclose(w.values.sum(axis=1), e.values.sum(axis=1))


def test_transformers_tokenizer_and_callable_agree(setup):
    """A transformers tokenizer and a plain callable give the same ids, so the same values."""
    from transformers import PreTrainedTokenizerFast

    _, net, be, tok = setup
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]")
    ref = xai.explain(net, TEXTS, tokenizer=tok, backend=be, target=1)
    got = xai.explain(net, TEXTS, tokenizer=fast, backend=be, target=1, merge=None)
    np.testing.assert_allclose(got.values, ref.values)
    fn = xai.explain(net, TEXTS, tokenizer=lambda t: tok.encode(t).ids, backend=be, target=1)
    np.testing.assert_allclose(fn.values, ref.values)


def test_long_texts_are_refused_or_truncated(setup):
    """A text over the model's length is named, with both lengths; truncation keeps [SEP]."""
    _, net, be, tok = setup
    long = "the cat sat on the mat on the mat"
    with pytest.raises(ValidationError, match=r"texts\[1\] 'the cat sat.*11 tokens.*at most 9"):
        xai.explain(net, ["a dog", long], tokenizer=tok, backend=be)
    e = xai.explain(net, ["a dog", long], tokenizer=tok, backend=be, truncation=True)
    assert e.meta["tokens"][1][-1] == "[SEP]" and e.meta["mask"][1].all()


@pytest.mark.parametrize(
    "texts, words",
    [([""], "empty"), (["fine", "  "], r"texts\[1\] is empty"), ([3], "must be a string")],
    ids=["empty", "blank", "not-a-string"],
)
def test_bad_texts_are_refused(setup, texts, words):
    """Empty or non-string texts are ValidationErrors naming the text."""
    _, net, be, tok = setup
    with pytest.raises(ValidationError, match=words):
        xai.explain(net, texts, tokenizer=tok, backend=be)


def test_strings_without_a_tokenizer_and_unknown_methods_are_refused(setup):
    """A list of strings needs tokenizer=; an unknown method lists the known ones."""
    _, net, be, tok = setup
    with pytest.raises(ValidationError, match="tokenizer="):
        xai.explain(net, TEXTS, backend=be)
    with pytest.raises(UnknownNameError, match="gradient_x_input"):
        xai.explain(net, TEXTS, tokenizer=tok, method="occlusion2", backend=be)


@pytest.mark.parametrize("method", ["ig", "lime"])
def test_a_bad_batch_size_is_refused_for_texts(setup, method):
    """batch_size=0 names the argument on the text paths too, not a silent default."""
    _, net, be, tok = setup
    with pytest.raises(ValidationError, match="batch_size"):
        xai.explain(net, TEXTS, tokenizer=tok, method=method, backend=be, batch_size=0)


def test_ids_outside_the_vocabulary_are_refused(setup):
    """A tokenizer id past the embedding's table is refused before any model call."""
    _, net, be, _ = setup
    with pytest.raises(ValidationError, match=r"\[0, 19\)"):
        xai.explain(net, ["x"], tokenizer=lambda t: [2, 40, 3], backend=be)


def test_a_tokenizer_with_more_tokens_than_the_table_is_named():
    """A tokenizer of 19 tokens against a table of 12 rows may not be the model's: a warning
    names both sizes when the texts' ids fit; an id past the table is refused."""
    torch.manual_seed(0)
    small = xai.from_torch(Classifier(vocab=12).eval(), np.zeros((1, SEQ), np.int64))
    for method in ("ig", "lime"):
        with pytest.warns(xai.XaiWarning, match="vocabulary of 19 tokens.*has 12 rows"):
            xai.explain(small, ["the cat"], tokenizer=_wordpiece(), method=method)
        with pytest.warns(xai.XaiWarning), pytest.raises(ValidationError, match=r"\[0, 12\)"):
            xai.explain(small, ["the dog runs"], tokenizer=_wordpiece(), method=method)


def test_torch_module_is_traced_on_the_ids():
    """A torch module is imported on the padded ids and explained like a native network."""
    torch.manual_seed(1)
    module = Classifier().eval()
    e = xai.explain(module, TEXTS, tokenizer=_wordpiece(), max_length=SEQ, target=0)
    assert e.values.shape == (3, SEQ)


def test_html_highlights_and_escapes(setup):
    """Tokens are coloured red or blue and every user string is escaped."""
    _, net, be, tok = setup
    e = xai.explain(net, ["the < script > cat"], tokenizer=tok, backend=be)
    html = xai.text.text_html(e)
    assert "&lt;" in html and "<script" not in html
    # the largest |value| in full colour, with the ink that reads on it set beside it
    assert (
        "background:rgb(178,24,43);color:#fff" in html
        or "background:rgb(33,102,172);color:#fff" in html
    )
    assert html.count("background:") == html.count(";color:#")
    page = e._repr_html_()
    assert "xai-text" in page and "<script >" not in page
    shared = xai.text.text_html(e, scale="shared")
    assert shared.count("<span title") == html.count("<span title")


def test_plot_text_and_to_shap(setup):
    """e.plot.text() draws a figure; to_shap() is what shap.plots.text draws."""
    import shap

    _, net, be, tok = setup
    e = xai.explain(net, TEXTS, tokenizer=tok, backend=be)
    fig = e.plot.text()
    assert len(fig.axes[0].texts) == int(e.meta["mask"].sum())
    png = e._repr_mimebundle_()["image/png"]
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    s = e.to_shap()
    assert list(s.data[1]) == list(e.meta["tokens"][1][:6])
    html = shap.plots.text(s[1], display=False)
    assert "playing" not in html and "play" in html


def test_integer_ids_are_explained_at_the_embedding(setup):
    """explain(net, ids) on an embedding network is the text path without a tokenizer."""
    _, net, be, tok = setup
    ids = _ids(tok, TEXTS).numpy()
    ref = xai.explain(net, TEXTS, tokenizer=tok, backend=be, target=1, steps=8)
    got = xai.explain(net, ids, backend=be, target=1, steps=8)
    np.testing.assert_allclose(got.values, ref.values)
    assert got.meta["tokens"][0][1] == str(ids[0, 1])


def test_float_ids_are_refused(setup):
    """Float ids for an embedding network are a ValidationError naming the dtype."""
    _, net, be, tok = setup
    with pytest.raises(ValidationError, match="integer array; got dtype float64"):
        xai.explain(net, _ids(tok, TEXTS).numpy().astype(np.float64), backend=be)


def test_options_texts_do_not_take_are_refused_by_name(setup):
    """executor=, chunk_size=, output= and feature_names= are refused for texts."""
    _, net, be, tok = setup
    with pytest.raises(ValidationError, match="chunk_size="):
        xai.explain(net, TEXTS, tokenizer=tok, backend=be, chunk_size=1)
    with pytest.raises(ValidationError, match="feature_names="):
        xai.explain(net, TEXTS, tokenizer=tok, backend=be, feature_names=["a"] * SEQ)


def test_provenance_is_recorded(setup):
    """The explanation records its time and options, as every explanation does."""
    _, net, be, tok = setup
    e = xai.explain(net, TEXTS, tokenizer=tok, backend=be, steps=7)
    assert e.meta["seconds"] > 0 and e.meta["options"]["steps"] == 7
    assert e.method == "ig" and e.backend == be.name


def test_truncation_numbers_the_kept_words_without_gaps():
    """A truncated text's words are the kept ones, numbered 0, 1, ... (the final [SEP] next)."""
    from xai_core.text.tokenize import TextTokenizer

    enc = TextTokenizer(_wordpiece()).encode(
        ["a dog", "the cat sat on the mat on the mat"], SEQ, truncation=True
    )
    assert list(enc.words[1]) == list(range(SEQ))
    assert enc.word_text[1] == ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "on", "[SEP]"]


def test_trapezoid_of_one_step_is_refused(setup):
    """The trapezoid rule needs both ends: one step is a ValidationError, not zero values."""
    _, net, be, tok = setup
    with pytest.raises(ValidationError, match="steps must be at least 2.*riemann_trapezoid"):
        xai.explain(
            net, TEXTS, tokenizer=tok, method="ig", backend=be, target=1, steps=1,
            integration="riemann_trapezoid",
        )  # fmt: skip
