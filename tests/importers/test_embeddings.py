"""Token-id models: ONNX Gather of a table, Keras Embedding, a BERT classifier on input_ids."""

import numpy as np
import pytest
import torch

import xai_core as xai
from xai_core.errors import CapabilityError, ValidationError


def _gather_model(vocab=12, dim=3, seq=5, axis=0) -> tuple[bytes, np.ndarray]:
    from onnx import TensorProto, helper, numpy_helper

    table = np.random.default_rng(0).normal(size=(vocab, dim)).astype(np.float32)
    node = helper.make_node("Gather", ["table", "ids"], ["y"], axis=axis, name="lookup")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", seq])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(table, "table")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString(), table


def test_onnx_gather_of_a_table_by_ids_equals_onnxruntime():
    """Gather(table, ids) with run-time ids imports as an Embedding; outputs equal ORT's."""
    import onnxruntime as ort

    data, _ = _gather_model()
    net = xai.from_onnx(data)
    assert isinstance(net.nodes[0].layer, xai.nn.Embedding)
    ids = np.random.default_rng(1).integers(0, 12, (4, 5))
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"ids": ids})
    np.testing.assert_array_equal(net.predict(ids), want.reshape(4, -1))


def test_onnx_gather_of_a_table_along_another_axis_is_refused():
    """Run-time ids pick rows only; axis 1 is refused naming the table's shape."""
    data, _ = _gather_model(axis=1)
    with pytest.raises(CapabilityError, match="axis 1"):
        xai.from_onnx(data)


def test_keras_embedding_equals_keras():
    """A Keras Embedding imports as one Embedding node with the same outputs."""
    import keras

    model = keras.Sequential(
        [
            keras.Input((6,), dtype="int32"),
            keras.layers.Embedding(30, 4),
            keras.layers.Flatten(),
            keras.layers.Dense(3),
        ]
    )
    ids = np.random.default_rng(0).integers(0, 30, (5, 6))
    net = xai.from_keras(model)
    want = np.asarray(model(ids).detach().cpu())
    np.testing.assert_allclose(net.predict(ids), want, atol=1e-5)


def test_keras_mask_zero_is_refused():
    """mask_zero=True changes the layers after it; it is refused by name."""
    import keras

    model = keras.Sequential(
        [keras.Input((4,), dtype="int32"), keras.layers.Embedding(9, 2, mask_zero=True)]
    )
    with pytest.raises(CapabilityError, match="mask_zero"):
        xai.from_keras(model)


class BertOnIds(torch.nn.Module):
    """BertForSequenceClassification on its input_ids (attention mask of ones)."""

    def __init__(self, model) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids).logits


def _bert(seq=12):
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=60,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=seq,
        num_labels=3,
        attn_implementation="eager",
    )
    return BertOnIds(BertForSequenceClassification(config).eval()).eval()


@pytest.mark.slow
def test_bert_on_input_ids_equals_torch_and_captum():
    """A random BERT imports on input_ids; IG per token equals Captum's LIG on word_embeddings."""
    from captum.attr import LayerIntegratedGradients

    module = _bert().double()
    ids = torch.randint(1, 60, (3, 12))
    ids[1, 8:] = 0
    net = xai.from_torch(module, ids, dtype="float64")
    np.testing.assert_allclose(net.predict(ids.numpy()), module(ids).detach().numpy(), atol=1e-9)
    be = xai.get_backend("cpu", dtype="float64")
    e = xai.explain(net, ids.numpy(), backend=be, target=2, steps=12)
    emb = module.model.bert.embeddings.word_embeddings
    ref = LayerIntegratedGradients(module, emb).attribute(
        ids, baselines=torch.zeros_like(ids), target=2, n_steps=12
    )
    ref = ref.sum(-1).detach().numpy()
    assert np.abs(e.values - ref).max() / np.abs(ref).max() < 1e-4


def test_bert_past_its_maximum_length_is_refused():
    """Ids longer than the position table are refused before tracing, naming both lengths."""
    module = _bert(seq=8)
    with pytest.raises(ValidationError, match="10 token ids per row.*at most 8"):
        xai.from_torch(module, torch.randint(1, 60, (2, 10)))


def test_texts_past_a_bert_maximum_length_are_named():
    """A text longer than the module's maximum length is named with both lengths."""
    module = _bert(seq=8)

    def tokenizer(text):
        return [1 + len(w) % 50 for w in text.split()]

    with pytest.raises(
        ValidationError, match=r"texts\[1\] .* 10 tokens; the model takes at most 8"
    ):
        xai.explain(module, ["a b", "a b c d e f g h i j"], tokenizer=tokenizer)
    e = xai.explain(module, ["a b", "a b c d e f g h i j"], tokenizer=tokenizer, truncation=True)
    assert e.values.shape == (2, 8)


@pytest.mark.slow
def test_transformers_classifier_with_padding_equals_captum_with_its_mask():
    """A transformers classifier explained on padded texts equals Captum's LIG given the mask."""
    from captum.attr import LayerIntegratedGradients
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=60,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        num_labels=3,
    )
    model = BertForSequenceClassification(config).eval()

    def tokenizer(text):
        return [2, *(5 + 7 * len(w) % 50 for w in text.split()), 3]

    texts = ["the cat sat on the mat", "a dog playing", "dogs run"]
    e = xai.explain(model, texts, tokenizer=tokenizer, target=1, steps=16)
    assert e.meta["networks"] == 3 and e.values.shape == (3, 8)
    assert model.config._attn_implementation == "sdpa"  # restored after tracing
    ids = torch.tensor(e.data)
    mask = torch.tensor(e.meta["mask"]).long()

    def forward(ids, mask):
        return model(input_ids=ids, attention_mask=mask).logits

    ref = LayerIntegratedGradients(forward, model.bert.embeddings.word_embeddings).attribute(
        ids, baselines=torch.zeros_like(ids), additional_forward_args=(mask,), target=1, n_steps=16
    )
    ref = ref.sum(-1).detach().numpy()
    assert np.abs(e.values - ref).max() / np.abs(ref).max() < 1e-4
    np.testing.assert_allclose(e.meta["output"], forward(ids, mask)[:, 1].detach(), atol=1e-5)
