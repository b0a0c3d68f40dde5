"""The supported-operator page is generated from the registries, and the ONNX registry keys by opset."""

from pathlib import Path

import pytest

import xai_core as xai
from xai_core.errors import CapabilityError, DuplicateNameError
from xai_core.importers.onnx_registry import find_converter, operator_table, register
from xai_core.importers.operators import operators_markdown

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

PAGE = Path(__file__).parents[2] / "docs" / "operators.md"


def test_the_page_is_what_the_registries_generate():
    """docs/operators.md equals the generated table (regenerate it with the module's __main__)."""
    assert PAGE.read_text(encoding="utf-8") == operators_markdown()


def test_every_registered_operator_is_on_the_page_and_supported():
    """Each converter shows up in the table, and SUPPORTED_ONNX_OPS lists each operator."""
    text = PAGE.read_text(encoding="utf-8")
    for row in operator_table():
        assert f"| `{row['op']}` | {row['opsets']} |" in text
        assert row["op"] in xai.importers.SUPPORTED_ONNX_OPS


def test_converters_are_found_by_opset():
    """A converter covers its range only: HardSwish exists from opset 14, Reshape from 5."""
    assert find_converter("HardSwish", 14) is not None
    assert find_converter("HardSwish", 13) is None
    assert find_converter("Reshape", 4) is None
    assert find_converter("NoSuchOp", 13) is None


def test_an_overlapping_converter_is_refused_naming_both():
    """Registering a second converter for opsets another covers names the one there."""
    with pytest.raises(DuplicateNameError, match=r"'Relu'.*\(opsets 1\+\).*\(opsets 6\+\)"):
        register("Relu", lambda b, n: None, since=6)


def _model(ops: list[str]) -> bytes:
    """A one-input chain of the given unary operators, opset 13."""
    nodes, prev = [], "x"
    for i, op in enumerate(ops):
        nodes.append(helper.make_node(op, [prev], [f"t{i}"], name=f"n{i}"))
        prev = f"t{i}"
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def test_a_refusal_names_every_unsupported_operator_at_once():
    """Two unknown operators (one twice) in one file: one message naming both, with their nodes."""
    with pytest.raises(CapabilityError) as info:
        xai.from_onnx(_model(["Relu", "Foo", "Bar", "Foo"]))
    message = str(info.value)
    assert "2 operators are not supported" in message
    assert "'Bar' (node 'n2')" in message and "'Foo' (nodes 'n1', 'n3')" in message
    assert "opset 13" in message
