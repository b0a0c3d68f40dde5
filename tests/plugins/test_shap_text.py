"""SHAP on texts against shap's own Partition explainer with its Text masker."""

import numpy as np
import pytest
import torch

import xai_core as xai
from xai_core.errors import CapabilityError, ValidationError

WORDS = "[PAD] [UNK] [CLS] [SEP] [MASK] the a cat dog sat on mat good bad movie was very not play ##ing".split()
VOCAB = {w: i for i, w in enumerate(WORDS)}
TEXTS = ["the movie was very good", "the cat sat on the mat the end", "not bad playing"]
SEQ = 12
SPECIAL = {
    "unk_token": "[UNK]",
    "sep_token": "[SEP]",
    "cls_token": "[CLS]",
    "pad_token": "[PAD]",
    "mask_token": "[MASK]",
}

pytestmark = pytest.mark.slow  # shap's Partition explainer compiles its numba helpers once


def _tokenizer():
    """An in-memory BERT-style WordPiece tokenizer ([CLS] text [SEP]), [MASK] a special token."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    tok = Tokenizer(models.WordPiece(VOCAB, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tok.add_special_tokens(list(SPECIAL.values()))
    return tok


def _bag_of_words():
    W = np.random.default_rng(0).normal(size=(len(VOCAB), 3))

    def predict(strings):
        X = np.zeros((len(strings), len(VOCAB)))
        for i, s in enumerate(strings):
            for w in str(s).split():
                X[i, VOCAB.get(w, 1)] += 1
        z = X @ W
        z = np.exp(z - z.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)

    return predict


class MeanClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(len(VOCAB), 5)
        self.lin = torch.nn.Linear(5, 3)

    def forward(self, ids):
        return self.lin(self.emb(ids).mean(dim=1))


@pytest.fixture(scope="module")
def tok():
    return _tokenizer()


@pytest.fixture(scope="module")
def hf(tok):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=tok, **SPECIAL)


def _shap(f, hf, texts, max_evals):
    import shap

    return shap.Explainer(f, shap.maskers.Text(hf))(texts, max_evals=max_evals, silent=True)


@pytest.mark.parametrize("given", ["tokenizers", "transformers"])
def test_string_model_equals_shap_partition_text(tok, hf, given):
    """Per token, shap.Explainer(f, shap.maskers.Text(tokenizer))'s values and base values."""
    fn = _bag_of_words()
    e = xai.explain(
        fn, TEXTS, method="shap", tokenizer=tok if given == "tokenizers" else hf, max_evals=120
    )
    ref = _shap(fn, hf, TEXTS, 120)
    for i in range(len(TEXTS)):
        t = int(e.target[i])
        want = np.asarray(ref.values[i])[:, t]
        m = int(e.meta["mask"][i].sum())
        assert m == len(want)
        np.testing.assert_allclose(e.values[i, :m], want, rtol=0, atol=1e-10)
        assert not e.values[i, m:].any()
        np.testing.assert_allclose(e.base_values[i], ref.base_values[i][t], rtol=0, atol=1e-10)
        assert list(e.meta["tokens"][i, :m])[0] == "[CLS]"
    # additive, as Owen values are: base + sum = the model on the text
    np.testing.assert_allclose(e.base_values + e.values.sum(1), e.meta["output"], atol=1e-10)


def test_network_equals_shap_on_its_string_function(tok, hf):
    """A torch network: shap's values of the same network called on the masked strings."""
    torch.manual_seed(0)
    module = MeanClassifier().double().eval()
    net = xai.from_torch(module, np.zeros((2, SEQ), np.int64), dtype="float64")
    be = xai.get_backend("cpu", dtype="float64")

    def f(strings):
        ids = np.zeros((len(strings), SEQ), np.int64)
        for i, enc in enumerate(tok.encode_batch([str(s) for s in strings])):
            ids[i, : len(enc.ids)] = enc.ids
        with torch.no_grad():
            return module(torch.tensor(ids)).numpy()

    e = xai.explain(net, TEXTS, method="shap", tokenizer=tok, backend=be, max_evals=100)
    ref = _shap(f, hf, TEXTS, 100)
    for i in range(len(TEXTS)):
        want = np.asarray(ref.values[i])[:, int(e.target[i])]
        np.testing.assert_allclose(e.values[i, : len(want)], want, rtol=0, atol=1e-10)
    words = xai.explain(
        net, TEXTS, method="shap", tokenizer=tok, backend=be, max_evals=100, merge="words"
    )
    assert list(words.meta["tokens"][2][:4]) == ["[CLS]", "not", "bad", "playing"]
    np.testing.assert_allclose(words.values.sum(1), e.values.sum(1), atol=1e-12)
    assert e._repr_html_() and e.plot.text() is not None
    assert list(e.to_shap()[0].data)[:2] == ["[CLS]", "the"]


def test_auto_is_shap_for_a_string_model(tok):
    e = xai.explain(_bag_of_words(), TEXTS[:1], tokenizer=tok, max_evals=40)
    assert e.method == "shap"


def test_bad_input_is_named(tok):
    fn = _bag_of_words()
    with pytest.raises(ValidationError, match=r"texts\[0\] is empty"):
        xai.explain(fn, [" "], method="shap", tokenizer=tok)
    with pytest.raises(ValidationError, match="tokenizer must be"):
        xai.explain(fn, ["good"], method="shap", tokenizer=object())
    with pytest.raises(CapabilityError, match="tokenizer: method 'shap'"):
        xai.explain(fn, ["good"], method="shap", tokenizer=lambda s: [5])
    with pytest.raises(ValidationError, match="unknown option 'steps'"):
        xai.explain(fn, ["good"], method="shap", tokenizer=tok, steps=3)
