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
    with pytest.raises(xai.ModelFormatError, match="known sample sizes"):
        xai.from_onnx(_model([helper.make_node("Relu", ["x"], ["y"])], inputs=free))


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
