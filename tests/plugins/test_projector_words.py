"""Word embeddings in the projector: a network's embedding table with its words as labels,
searched by word, neighbours by cosine against scipy, exported as TensorBoard reads it."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy.spatial.distance import cdist

import xai_core as xai
from xai_projector import load_tensorboard

torch = pytest.importorskip("torch")

WORDS = "[PAD] [UNK] [CLS] [SEP] cat cats kitten dog dogs car truck ##ing".split()
VOCAB = {w: i for i, w in enumerate(WORDS)}

# JavaScript's String.prototype.trim() whitespace: TensorBoard drops metadata lines that trim to "".
_JS_SPACE = re.compile(
    "^[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]*$"
)


def _tensorboard_metadata(text: str) -> tuple[list[str] | None, list[list[str]]]:
    """The Projector's metadata parser (data-provider's parseMetadata): lines split on
    newlines, blank ones dropped, a header when there are several columns, cells split on tabs."""
    lines = [line for line in text.split("\n") if not _JS_SPACE.match(line)]
    header = lines[0].split("\t") if lines and "\t" in lines[0] else None
    rows = lines[1:] if header else lines
    return header, [r.split("\t") for r in rows]


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = torch.nn.Embedding(len(WORDS), 6)
        self.position = torch.nn.Embedding(4, 6)
        self.head = torch.nn.Linear(6, 2)

    def forward(self, ids):
        return self.head((self.embedding(ids) + self.position.weight[: ids.shape[1]]).mean(1))


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return Classifier().eval()


def _wordpiece():
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordPiece(VOCAB, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tok


def test_torch_table_by_name_with_words(model):
    """The table is the module's weight, row i labelled with word i; an id column is added."""
    p = xai.project(model, layer="embedding", vocabulary=WORDS)
    np.testing.assert_array_equal(p.vectors, model.embedding.weight.detach().numpy())
    assert p.labels.tolist() == WORDS
    assert p.metadata["id"].tolist() == [str(i) for i in range(len(WORDS))]
    assert p.meta["embedding_layer"] == "embedding"
    by_index = xai.project(model, layer=1, vocabulary=list("abcd"))
    np.testing.assert_array_equal(by_index.vectors, model.position.weight.detach().numpy())


def test_vocabulary_kinds_agree(model):
    """A list, a dict word -> id (in any order), a tokenizers and a transformers tokenizer."""
    from transformers import PreTrainedTokenizerFast

    tok = _wordpiece()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]")
    shuffled = dict(reversed(list(VOCAB.items())))
    for vocabulary in (shuffled, tok, fast):
        p = xai.project(model, layer="embedding", vocabulary=vocabulary)
        assert p.labels.tolist() == WORDS


def test_native_network_only_embedding_is_the_default():
    """A native network with one Embedding: no layer= needed; its node's table."""
    net = xai.nn.Sequential(
        [xai.nn.Embedding(len(WORDS), 5), xai.nn.Flatten(), xai.nn.Dense(2)],
        input_shape=(3,),
        seed=0,
    )
    p = xai.project(net, vocabulary=VOCAB)
    table = next(n.layer for n in net.nodes if isinstance(n.layer, xai.nn.Embedding)).weight
    np.testing.assert_array_equal(p.vectors, table)
    assert p.labels.tolist() == WORDS


def test_imported_network_matches_the_module(model):
    """The same table through the import (an ONNX Gather node) as from the module."""
    net = xai.import_model(torch.nn.Sequential(model.embedding), np.zeros((1, 3), np.int64))
    p = xai.project(net, vocabulary=WORDS)
    np.testing.assert_allclose(p.vectors, model.embedding.weight.detach().numpy())


def test_search_by_word_then_its_neighbours_by_cosine(model):
    """Words are searched (not the id column); a word's neighbours equal scipy's cosine ranking."""
    p = xai.project(model, layer="embedding", vocabulary=WORDS)
    assert p.search("cat").indices.tolist() == [VOCAB["cat"], VOCAB["cats"]]
    assert len(p.search("1")) == 0  # ids are a column, but not searched by default
    assert p.search("1", fields="id").indices.tolist() == [1, 10, 11]
    nb = p.neighbors(3, rows="kitten")
    D = cdist(p.vectors[[VOCAB["kitten"]]], p.vectors, "cosine")[0]
    D[VOCAB["kitten"]] = np.inf
    np.testing.assert_array_equal(nb.indices[0], np.argsort(D)[:3])
    np.testing.assert_allclose(nb.distances[0], np.sort(D)[:3], atol=1e-6)
    with pytest.raises(xai.UnknownNameError, match="kitten"):
        p.neighbors(3, rows="kiten")


def test_matrix_with_words_as_labels_or_vocabulary():
    X = np.random.default_rng(0).normal(size=(len(WORDS), 4))
    a = xai.project(X, labels=WORDS)
    b = xai.project(X, vocabulary=VOCAB)
    assert a.labels.tolist() == b.labels.tolist() == WORDS
    assert "id" not in b.metadata  # a matrix's rows are not token ids


def test_tensorboard_files_carry_awkward_words(tmp_path, model):
    """Words with tabs, line breaks, blanks and the empty word keep one metadata row each."""
    words = [*WORDS[:-4], "a\tb", "c\nd", "", " "]
    p = xai.project(model, layer="embedding", vocabulary=words)
    files = p.export_tensorboard(tmp_path)
    header, rows = _tensorboard_metadata(files["metadata"].read_text(encoding="utf-8"))
    assert len(rows) == len(words)  # no row dropped, so no label shifted
    col = header.index("label")
    assert [r[col] for r in rows] == [*WORDS[:-4], "a b", "c d", "", " "]
    assert [r[header.index("id")] for r in rows] == [str(i) for i in range(len(words))]
    tensors = np.loadtxt(files["tensors"], delimiter="\t")
    np.testing.assert_array_equal(tensors.astype(np.float32), p.vectors)
    back = load_tensorboard(tmp_path)
    assert back["metadata"]["label"] == [r[col] for r in rows]


def test_tensorboard_word_column_alone(tmp_path):
    """One column of words: no header, one line per row."""
    X = np.random.default_rng(0).normal(size=(len(WORDS), 3))
    files = xai.project(X, vocabulary=WORDS).export_tensorboard(tmp_path)
    header, rows = _tensorboard_metadata(files["metadata"].read_text(encoding="utf-8"))
    assert header is None and [r[0] for r in rows] == WORDS


def test_clear_errors(model):
    with pytest.raises(xai.ShapeError, match=r"11 words.*12 rows"):
        xai.project(model, layer="embedding", vocabulary=WORDS[:-1])
    with pytest.raises(xai.UnknownNameError, match="embedding, position"):
        xai.project(model, layer="emb", vocabulary=WORDS)
    with pytest.raises(xai.CapabilityError, match="2 Embedding layers"):
        xai.project(model, vocabulary=WORDS)
    with pytest.raises(xai.CapabilityError, match="no Embedding layer"):
        xai.project(torch.nn.Linear(3, 2), vocabulary=WORDS)
    with pytest.raises(xai.ValidationError, match="out of range"):
        xai.project(model, layer=2, vocabulary=WORDS)
    with pytest.raises(xai.ValidationError, match="each of 0 .. 11 once"):
        xai.project(model, layer=0, vocabulary={**VOCAB, "[UNK]": 0})
    with pytest.raises(xai.ValidationError, match="not both"):
        xai.project(model, layer=0, vocabulary=WORDS, labels=WORDS)


def test_transformers_model_defaults_to_its_input_embeddings():
    """BERT has word, position and token-type embeddings; the default is the word table."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(WORDS),
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=16,
    )
    bert = BertModel(config).eval()
    p = xai.project(bert, vocabulary=_wordpiece())
    assert p.meta["embedding_layer"] == "embeddings.word_embeddings"
    np.testing.assert_array_equal(p.vectors, bert.embeddings.word_embeddings.weight.detach())
    assert p.labels.tolist() == WORDS
