"""A transformers text classifier exported to ONNX as users export it (input ids and an
attention mask as run-time inputs, batch and sequence length dynamic) imports and runs
with any mask, as onnxruntime runs it."""

from __future__ import annotations

import copy
import io
import warnings

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

import xai_core as xai
from xai_core.errors import CapabilityError

pytestmark = pytest.mark.slow  # the export and import take several seconds

SEQ = 8


@pytest.fixture(scope="module")
def exported():
    """A 2-layer BERT (random weights, 3 classes) exported with dynamic batch and length."""
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64, num_labels=3,
    )  # fmt: skip
    model = BertForSequenceClassification(config).eval()
    ids = torch.randint(1, 100, (2, SEQ))
    mask = torch.ones(2, SEQ, dtype=torch.int64)
    buf = io.BytesIO()
    axes = {0: "batch", 1: "sequence"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (ids, mask), buf, input_names=["input_ids", "attention_mask"],
            output_names=["logits"], opset_version=17, dynamo=False,
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "logits": {0: "batch"}},
        )  # fmt: skip
    return model, buf.getvalue()


def test_a_run_time_attention_mask_is_read_per_sample_as_onnxruntime_reads_it(exported):
    """Fixed to 8 tokens by input_shapes, the network equals onnxruntime and torch for
    masks of several lengths in one batch (transformers' per-sample mask lookup is a
    Gather of the flattened batch, read here per sample)."""
    import onnxruntime as ort

    model, data = exported
    with pytest.raises(xai.ModelFormatError, match="input_shapes="):
        xai.from_onnx(data)
    net = xai.from_onnx(data, input_shapes={"input_ids": (SEQ,), "attention_mask": (SEQ,)})
    assert net.inputs == ("input_ids", "attention_mask")
    rng = np.random.default_rng(3)
    ids = rng.integers(1, 100, (4, SEQ))
    mask = (np.arange(SEQ)[None] < np.array([[8], [5], [3], [1]])).astype(np.int64)
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"input_ids": ids, "attention_mask": mask})
    got = net.predict_outputs(
        {"input_ids": ids.astype(np.float32), "attention_mask": mask.astype(np.float32)}
    )
    np.testing.assert_allclose(got[net.outputs[0]], want, rtol=1e-4, atol=1e-6)
    with torch.no_grad():
        logits = model(torch.tensor(ids), attention_mask=torch.tensor(mask)).logits.numpy()
    np.testing.assert_allclose(got[net.outputs[0]], logits, rtol=1e-4, atol=1e-6)


def _where_model(reader: str) -> bytes:
    """``Where(x > 0, 0, -inf)`` read by ``reader`` (an ``Add`` then ``Softmax``, or a ``Relu``)."""
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["keep"]),
        helper.make_node("Where", ["keep", "zero", "minus_inf"], ["bias"], name="mask"),
    ]
    if reader == "softmax":
        nodes += [
            helper.make_node("Add", ["x", "bias"], ["scores"]),
            helper.make_node("Softmax", ["scores"], ["y"], axis=-1),
        ]
    else:
        nodes.append(helper.make_node("Relu", ["bias"], ["y"]))
    graph = helper.make_graph(
        nodes,
        "where",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.float32(0), "zero"),
            numpy_helper.from_array(np.float32(-np.inf), "minus_inf"),
        ],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def test_a_minus_infinity_mask_is_held_finite_only_before_a_softmax():
    """``-inf`` in a Where that masks softmax scores gives the weights onnxruntime gives
    (exactly 0 where masked); anywhere else it is refused, as every infinite constant is."""
    import onnxruntime as ort

    X = np.array([[1.0, -2.0, 0.5, -0.1, 3.0], [0.2, 0.3, -1.0, 2.0, -3.0]], np.float32)
    data = _where_model("softmax")
    (want,) = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": X})
    got = xai.from_onnx(data).predict(X)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)
    assert np.all(got[X <= 0] == 0)
    with pytest.raises(CapabilityError, match="infinite"):
        xai.from_onnx(_where_model("relu"))


def test_texts_on_the_exported_classifier_feed_its_mask_and_equal_captum(exported):
    """``xai.explain(net, texts, tokenizer=...)`` on the two-input network feeds each text's
    attention mask: IG per token equals Captum's LayerIntegratedGradients on the torch
    model's word embeddings given the same mask and a baseline of padding (float64), and
    LIME and SHAP run on it."""
    from captum.attr import LayerIntegratedGradients
    from tokenizers import Tokenizer, models, pre_tokenizers

    model, data = exported
    words = ["[PAD]", "[UNK]", *(f"w{i}" for i in range(2, 100))]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    texts = ["w5 w17 w3 w40 w8 w9 w61", "w12 w2 w90", "w33 w7 w7 w50 w1"]
    net = xai.from_onnx(
        data, dtype="float64", input_shapes={"input_ids": (SEQ,), "attention_mask": (SEQ,)}
    )
    be = xai.get_backend("cpu", dtype="float64")
    e = xai.explain(net, texts, tokenizer=tok, backend=be, target=1, steps=16)
    assert e.meta["networks"] == 3  # one mask per text length
    enc = [tok.encode(t).ids for t in texts]
    ids = torch.tensor([row + [0] * (SEQ - len(row)) for row in enc])
    mask = (ids != 0).long()
    module = copy.deepcopy(model).double()

    def forward(i, m):
        return module(i, attention_mask=m).logits

    ref = LayerIntegratedGradients(forward, module.bert.embeddings.word_embeddings).attribute(
        ids, baselines=torch.zeros_like(ids), additional_forward_args=(mask,), target=1, n_steps=16
    )
    ref = ref.sum(-1).detach().numpy() * mask.numpy()
    assert np.abs(e.values - ref).max() / np.abs(ref).max() < 1e-6
    for method in ("lime", "shap"):
        other = xai.explain(net, texts, tokenizer=tok, backend=be, target=1, method=method)
        assert other.values.shape == e.values.shape and np.isfinite(other.values).all()
    # what LIME and SHAP call: the network fed each text's own mask, as onnxruntime is
    import onnxruntime as ort

    from xai_core.text.perturb import text_model

    tm = text_model(net, texts, tok, backend=be)
    (want,) = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(
        None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
    )
    np.testing.assert_allclose(
        tm.predict_ids(ids.numpy(), mask.numpy().astype(bool)), want, rtol=1e-4, atol=1e-6
    )


def test_a_flatten_merging_the_batch_axis_is_refused_unless_a_gather_reads_it():
    """Only a Gather by a batch-derived index reads a Flatten that merges the batch axis;
    anything else reading it (here: nothing but the graph's output) is refused by name."""
    graph = helper.make_graph(
        [helper.make_node("Flatten", ["x"], ["y"], axis=2)],
        "flatten",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    with pytest.raises(CapabilityError, match=r"only Flatten\(axis=1\) keeps the batch axis"):
        xai.from_onnx(m.SerializeToString())


def _merged_gather(multiplier: int) -> bytes:
    """``Gather(Flatten(x, axis=2), Unsqueeze(Range(0, n) * multiplier) + [[0, 2]])`` of
    x (n, 3, 4): rows 0 and 2 of each sample when the multiplier is its 3 rows."""

    def const(name, value):
        return numpy_helper.from_array(np.array(value, np.int64), name)

    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
        helper.make_node("Range", ["zero", "n", "one"], ["samples"]),
        helper.make_node("Mul", ["samples", "multiplier"], ["first_rows"]),
        helper.make_node("Unsqueeze", ["first_rows", "axis1"], ["first"]),
        helper.make_node("Add", ["first", "positions"], ["index"]),
        helper.make_node("Flatten", ["x"], ["rows"], axis=2),
        helper.make_node("Gather", ["rows", "index"], ["y"], axis=0),
    ]
    graph = helper.make_graph(
        nodes,
        "merged",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [const("zero", 0), const("one", 1), const("multiplier", multiplier),
         const("axis1", [1]), const("positions", [[0, 2]])],
    )  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize("multiplier", [3, 1, 0])
def test_a_per_sample_lookup_of_the_flattened_batch_is_read_only_in_its_own_form(multiplier):
    """Range(0, n) * rows + position reads each sample's own rows (onnxruntime's values);
    another multiplier mixes the batch's samples and is refused naming the form."""
    import onnxruntime as ort

    data = _merged_gather(multiplier)
    if multiplier != 3:
        with pytest.raises(CapabilityError, match=r"Range\(0, batch size\) \* 3"):
            xai.from_onnx(data)
        return
    X = np.random.default_rng(0).standard_normal((4, 3, 4)).astype(np.float32)
    (want,) = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": X})
    np.testing.assert_allclose(xai.from_onnx(data).predict(X).reshape(want.shape), want)
