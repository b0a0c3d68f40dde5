"""Reading ONNX files: hostile or unsupported models fail clearly before any work."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import xai_core as xai


def _model(nodes, inits=(), inputs=None, outputs=None, value_info=()):
    graph = helper.make_graph(
        nodes,
        "g",
        inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        outputs or [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        list(inits),
        value_info=list(value_info),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_unsupported_operator_names_op_node_and_list():
    """The error names the operator, its node and the supported operators, before building."""
    m = _model(
        [
            helper.make_node("Relu", ["x"], ["h"]),
            helper.make_node("Det", ["h"], ["y"], name="my_det"),
        ]
    )
    with pytest.raises(xai.CapabilityError) as info:
        xai.from_onnx(m)
    text = str(info.value)
    assert "'Det'" in text and "'my_det'" in text and "Gemm" in text and "HardSwish" in text


def test_initializer_shape_disagreeing_with_its_bytes_is_refused():
    """A weight declaring more elements than its raw bytes hold is refused before allocation."""
    t = numpy_helper.from_array(np.ones((4, 3), np.float32), "B")
    t.dims[:] = [4000, 3000]
    m = _model([helper.make_node("MatMul", ["x", "B"], ["y"])], inits=[t])
    with pytest.raises(xai.ModelFormatError, match=r"'B' declares shape \[4000, 3000\]"):
        xai.from_onnx(m.SerializeToString())


def test_external_weights_outside_the_directory_are_refused(tmp_path):
    """Weights in a file outside the model's directory are not followed."""
    t = numpy_helper.from_array(np.ones((4, 3), np.float32), "B")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value="../../secret.bin")
    m = _model([helper.make_node("MatMul", ["x", "B"], ["y"])], inits=[t])
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    with pytest.raises(xai.ModelFormatError, match="'../../secret.bin'.*climbs out"):
        xai.from_onnx(path)


def test_declared_shape_is_checked_against_the_computed_one():
    """A value_info that disagrees with what the network computes is a ModelFormatError."""
    B = numpy_helper.from_array(np.ones((4, 3), np.float32), "B")
    wrong = helper.make_tensor_value_info("h", TensorProto.FLOAT, ["n", 5])
    m = _model(
        [
            helper.make_node("MatMul", ["x", "B"], ["h"], name="mm"),
            helper.make_node("Relu", ["h"], ["y"]),
        ],
        inits=[B],
        value_info=[wrong],
    )
    with pytest.raises(
        xai.ModelFormatError, match=r"'h' \(node 'mm'\) is declared with per-sample shape \(5,\)"
    ):
        xai.from_onnx(m)


def test_not_onnx_and_bad_arguments(tmp_path):
    """Garbage bytes, a missing file, two inputs, an unknown sample size: each a clear error."""
    with pytest.raises(xai.ModelFormatError, match="not an ONNX model"):
        xai.from_onnx(b"\x00\x01garbage")
    with pytest.raises(xai.ValidationError, match="is not a file"):
        xai.from_onnx(tmp_path / "missing.onnx")
    with pytest.raises(xai.ValidationError, match="path_or_model"):
        xai.from_onnx(3.5)
    two = [
        helper.make_tensor_value_info(n, TensorProto.FLOAT, [k, 4]) for n, k in zip("ab", (2, 3))
    ]
    with pytest.raises(xai.CapabilityError, match="different batch sizes"):
        xai.from_onnx(_model([helper.make_node("Add", ["a", "b"], ["y"])], inputs=two))
    free = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "features"])]
    with pytest.raises(xai.ModelFormatError, match="sample sizes must be known"):
        xai.from_onnx(_model([helper.make_node("Relu", ["x"], ["y"])], inputs=free))


def test_symbolic_sample_sizes_are_fixed_by_input_shapes():
    """A torch export with a free height and width names the input and the argument;
    ``input_shapes`` fixes them and the network equals onnxruntime at that size."""
    import io

    import onnxruntime as ort
    import torch

    torch.manual_seed(0)
    module = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1)
    ).eval()
    buf = io.BytesIO()
    torch.onnx.export(
        module,
        (torch.zeros(1, 3, 8, 8),),
        buf,
        input_names=["image"],
        output_names=["y"],
        dynamic_axes={"image": {0: "n", 2: "height", 3: "width"}},
        dynamo=False,
    )
    data = buf.getvalue()
    with pytest.raises(xai.ModelFormatError, match=r"input_shapes=\{'image': \(3, 128, 128\)\}"):
        xai.from_onnx(data)
    X = np.random.default_rng(0).normal(size=(2, 3, 20, 24)).astype(np.float32)
    (want,) = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"image": X})
    for shapes in [(3, 20, 24), {"image": [3, 20, 24]}]:
        net = xai.from_onnx(data, input_shapes=shapes)
        assert net.input_shape == (3, 20, 24)
        np.testing.assert_allclose(net.predict(X), want.reshape(2, -1), rtol=1e-5, atol=1e-6)


def test_input_shapes_of_several_inputs_and_its_errors():
    """Every input with free sizes is named at once; a mapping fixes them; an unknown name,
    a shape of the wrong rank and a change of a fixed size are refused naming them."""
    free = [helper.make_tensor_value_info(k, TensorProto.FLOAT, ["n", "seq", 4]) for k in "ab"]
    m = _model([helper.make_node("Add", ["a", "b"], ["y"])], inputs=free)
    with pytest.raises(xai.ModelFormatError, match=r"'a' declares .*'b' declares"):
        xai.from_onnx(m)
    net = xai.from_onnx(m, input_shapes={"a": (5, 4), "b": (5, 4)})
    assert m.graph.input[0].type.tensor_type.shape.dim[1].dim_param == "seq"  # not changed
    a, b = np.ones((2, 5, 4), np.float32), np.full((2, 5, 4), 2.0, np.float32)
    np.testing.assert_array_equal(net.predict_outputs({"a": a, "b": b})[net.outputs[0]], a + b)
    with pytest.raises(xai.UnknownNameError, match="Available: a, b"):
        xai.from_onnx(m, input_shapes={"c": (5, 4)})
    with pytest.raises(xai.ValidationError, match="a mapping of input name to shape"):
        xai.from_onnx(m, input_shapes=(5, 4))
    with pytest.raises(xai.ValidationError, match=r"2 positive integers.*got \(5,\)"):
        xai.from_onnx(m, input_shapes={"a": (5,), "b": (5, 4)})
    with pytest.raises(
        xai.ValidationError, match="axis 2 the size 3; the ONNX model fixes it at 4"
    ):
        xai.from_onnx(m, input_shapes={"a": (5, 3), "b": (5, 4)})


def test_file_path_and_class_names_from_metadata(tmp_path):
    """A path imports like the bytes; class names come from metadata_props."""
    B = numpy_helper.from_array(np.eye(4, 3, dtype=np.float32), "B")
    m = _model(
        [helper.make_node("MatMul", ["x", "B"], ["h"]), helper.make_node("Softmax", ["h"], ["y"])],
        inits=[B],
    )
    helper.set_model_props(m, {"class_names": '["a", "b", "<c>"]'})
    onnx.save(m, tmp_path / "m.onnx")
    net = xai.from_onnx(tmp_path / "m.onnx")
    assert net.output_names == ("a", "b", "<c>")
    assert net.predict(np.zeros((2, 4), np.float32)).shape == (2, 3)
