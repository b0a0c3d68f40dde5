"""LIME on texts against lime's LimeTextExplainer: same samples, distances, kernel, surrogate."""

import numpy as np
import pytest
import torch
from lime.lime_base import LimeBase
from lime.lime_text import IndexedString, LimeTextExplainer

import xai_core as xai
from xai_core.errors import CapabilityError, ValidationError
from xai_lime.surrogate import exponential_kernel, fit_surrogates
from xai_lime.text import lime_distances, sample_removals

WORDS = (
    "[PAD] [UNK] [CLS] [SEP] [MASK] the a cat dog sat on mat good bad movie was very not".split()
)
VOCAB = {w: i for i, w in enumerate(WORDS)}
TEXTS = ["the movie was very good", "the cat sat on the mat the end", "not bad"]
SEQ = 12


def _tokenizer():
    """An in-memory WordLevel tokenizer: words split at spaces, [CLS] text [SEP]."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    tok = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tok.add_special_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    return tok


def _bag_of_words():
    """A string model: softmax of random word weights summed over the words."""
    W = np.random.default_rng(0).normal(size=(len(VOCAB), 3))

    def predict(strings):
        X = np.zeros((len(strings), len(VOCAB)))
        for i, s in enumerate(strings):
            for w in s.split():
                X[i, VOCAB.get(w, 1)] += 1
        z = X @ W
        z = np.exp(z - z.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)

    return predict


class MeanClassifier(torch.nn.Module):
    """Embedding, mean over the positions, a dense layer."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(len(VOCAB), 5)
        self.lin = torch.nn.Linear(5, 3)

    def forward(self, ids):
        return self.lin(self.emb(ids).mean(dim=1))


@pytest.fixture(scope="module")
def tok():
    return _tokenizer()


def _lime_weights(ex, label, n_words):
    w = np.zeros(n_words)
    for j, v in ex.local_exp[label]:
        w[j] = v
    return w


@pytest.mark.parametrize("bow", [True, False], ids=["bow", "positions"])
@pytest.mark.parametrize("solver", ["lime", "batched"])
def test_string_model_equals_lime_text_explainer(tok, bow, solver):
    """Each text's weights, intercept and score are LimeTextExplainer's with random_state seed + i."""
    fn = _bag_of_words()
    e = xai.explain(
        fn, TEXTS, method="lime", tokenizer=tok, n_samples=400, seed=3, bow=bow, solver=solver
    )
    assert e.meta["merge"] == "words" and e.method == "lime"
    for i, text in enumerate(TEXTS):
        label = int(e.target[i])
        ex = LimeTextExplainer(random_state=3 + i, bow=bow).explain_instance(
            text, fn, labels=(label,), num_samples=400
        )
        words = ex.domain_mapper.indexed_string.inverse_vocab
        assert e.meta["features"][i] == list(words)
        want = _lime_weights(ex, label, len(words))
        got = e.meta["feature_weights"][i]
        if solver == "lime":
            np.testing.assert_array_equal(got, want)
            assert e.meta["intercept"][i] == ex.intercept[label]
            assert e.meta["score"][i] == ex.score  # lime keeps the last label's
        else:
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)
            np.testing.assert_allclose(e.meta["intercept"][i], ex.intercept[label], atol=1e-10)
        # every occurrence of a word shows its weight, special tokens none
        for w, word in enumerate(e.meta["tokens"][i]):
            if word in ("[CLS]", "[SEP]", ""):
                assert e.values[i, w] == 0
            elif bow:
                assert e.values[i, w] == got[list(words).index(word)]
        if not bow:
            np.testing.assert_array_equal(e.values[i, 1 : 1 + len(words)], got)


def test_samples_distances_and_surrogate_equal_lime_on_one_matrix(tok):
    """Given lime's own perturbation matrix and labels, each step is lime's, bit for bit."""
    fn = _bag_of_words()
    text = TEXTS[1]
    lime = LimeTextExplainer(random_state=11)
    indexed = IndexedString(text, bow=True)
    data, labels, distances = lime._LimeTextExplainer__data_labels_distances(
        indexed, fn, 300, "cosine"
    )
    ours = sample_removals(indexed.num_words(), 300, np.random.RandomState(11))
    np.testing.assert_array_equal(ours, data)
    np.testing.assert_array_equal(lime_distances(data), distances)
    kernel = exponential_kernel(25.0)
    np.testing.assert_array_equal(kernel(distances), lime.base.kernel_fn(distances))
    base = LimeBase(kernel, random_state=np.random.RandomState(0))
    for selection in ("highest_weights", "forward_selection", "none"):
        b0, pairs, score, _ = base.explain_instance_with_data(
            data, labels, distances, 1, 4, feature_selection=selection
        )
        want = np.zeros(data.shape[1])
        for j, v in pairs:
            want[j] = v
        for solver in ("lime", "batched"):
            fit = fit_surrogates(
                data[None],
                labels[None, :, 1],
                distances[None],
                kernel_width=25.0,
                n_features=4,
                feature_selection=selection,
                solver=solver,
            )
            tol = 0 if solver == "lime" or selection == "forward_selection" else 1e-12
            np.testing.assert_allclose(fit.coef[0], want, rtol=0, atol=tol)
            np.testing.assert_allclose(fit.intercept[0], b0, rtol=0, atol=tol)


def _ids(tok, strings):
    out = np.zeros((len(strings), SEQ), np.int64)
    for i, enc in enumerate(tok.encode_batch(list(strings))):
        out[i, : len(enc.ids)] = enc.ids
    return out


def test_network_equals_lime_with_pad_for_removed_tokens(tok):
    """A torch network: removed tokens become [PAD], as lime with bow=False, mask_string='[PAD]'."""
    torch.manual_seed(0)
    module = MeanClassifier().double().eval()
    net = xai.from_torch(module, np.zeros((2, SEQ), np.int64), dtype="float64")
    be = xai.get_backend("cpu", dtype="float64")

    def classifier(strings):
        with torch.no_grad():
            return module(torch.tensor(_ids(tok, strings))).numpy()

    e = xai.explain(
        net, TEXTS, method="lime", tokenizer=tok, backend=be, n_samples=300, bow=False, seed=5
    )
    assert e.values.shape == (3, SEQ) and "merge" not in e.meta
    assert e.meta["removal"] == "token id 0"
    for i, text in enumerate(TEXTS):
        label = int(e.target[i])
        ex = LimeTextExplainer(random_state=5 + i, bow=False, mask_string="[PAD]").explain_instance(
            text, classifier, labels=(label,), num_samples=300
        )
        n = len(text.split())
        want = _lime_weights(ex, label, n)
        np.testing.assert_allclose(e.values[i, 1 : 1 + n], want, rtol=0, atol=1e-9)
        assert e.values[i, 0] == 0 and not e.values[i, n + 1 :].any()


def test_network_mask_token_and_words(tok):
    """mask_token= names the removal id; merge='words' gives one value per word."""
    torch.manual_seed(1)
    module = MeanClassifier().eval()
    e = xai.explain(
        module,
        TEXTS,
        method="lime",
        tokenizer=tok,
        n_samples=200,
        mask_token="[MASK]",
        max_length=SEQ,
    )
    assert e.meta["removal"] == "token id 4"
    w = xai.explain(
        module, TEXTS, method="lime", tokenizer=tok, n_samples=200, merge="words", max_length=SEQ
    )
    assert w.meta["merge"] == "words"
    assert list(w.meta["tokens"][2][:4]) == ["[CLS]", "not", "bad", "[SEP]"]


def test_views_work(tok):
    """The explanation renders as the gradient methods' do, and converts to shap."""
    e = xai.explain(_bag_of_words(), TEXTS[:2], method="lime", tokenizer=tok, n_samples=100)
    html = e._repr_html_()
    assert "movie" in html
    fig = e.plot.text()
    assert fig is not None
    s = e.to_shap()
    assert list(s[0].data)[:3] == ["[CLS]", "the", "movie"]


def test_seeded(tok):
    fn = _bag_of_words()
    a = xai.explain(fn, TEXTS, method="lime", tokenizer=tok, n_samples=100, seed=2)
    b = xai.explain(fn, TEXTS, method="lime", tokenizer=tok, num_samples=100, random_state=2)
    c = xai.explain(fn, TEXTS, method="lime", tokenizer=tok, n_samples=100, seed=4)
    np.testing.assert_array_equal(a.values, b.values)
    assert not np.array_equal(a.values, c.values)


@pytest.mark.parametrize(
    "texts, tokenizer, options, match",
    [
        (["good", ""], "tok", {}, r"texts\[1\] is empty"),
        (["good", 3], "tok", {}, r"texts\[1\] must be a string"),
        (["good"], 42, {}, "tokenizer must be a tokenizers.Tokenizer"),
        (["good"], "tok", {"n_sample": 10}, "unknown option 'n_sample'"),
        (["good"], "tok", {"neighbourhood": "shared"}, "neighbourhood must be 'per_row'"),
        (["good"], "tok", {"mask_token": "[MASK]"}, "mask_string"),
    ],
)
def test_bad_input_is_named(tok, texts, tokenizer, options, match):
    with pytest.raises(ValidationError, match=match):
        xai.explain(
            _bag_of_words(),
            texts,
            method="lime",
            tokenizer=tok if tokenizer == "tok" else tokenizer,
            **options,
        )


def test_string_model_needs_offsets_and_no_gradients(tok):
    with pytest.raises(ValidationError, match="character offsets"):
        xai.explain(_bag_of_words(), ["good"], method="lime", tokenizer=lambda s: [5, 6])
    with pytest.raises(CapabilityError, match="needs gradients"):
        xai.explain(_bag_of_words(), ["good"], method="ig", tokenizer=tok)


@pytest.mark.slow  # transformers' import and lime's 600 calls of a BERT
def test_transformers_classifier_equals_lime_with_pad(tok):
    """A transformers classifier runs in torch with its attention mask; removals to [PAD]."""
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        num_labels=3,
    )
    model = BertForSequenceClassification(config).double().eval()
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]")

    def classifier(strings):
        batch = hf(list(strings), padding=True, return_tensors="pt")
        with torch.no_grad():
            return model(**batch).logits.numpy()

    e = xai.explain(model, TEXTS, method="lime", tokenizer=tok, n_samples=200, bow=False)
    for i, text in enumerate(TEXTS):
        label = int(e.target[i])
        ex = LimeTextExplainer(random_state=i, bow=False, mask_string="[PAD]").explain_instance(
            text, classifier, labels=(label,), num_samples=200
        )
        n = len(text.split())
        np.testing.assert_allclose(
            e.values[i, 1 : 1 + n], _lime_weights(ex, label, n), rtol=0, atol=1e-9
        )
