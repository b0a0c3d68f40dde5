"""Hostile ONNX files: each is imported with onnxruntime's outputs or refused naming the problem.

``CASES`` is one row per hole: the model (built here with ``onnx.helper``), then either
``None`` (it must import and agree with onnxruntime) or the error class and the words its
message must hold. Every refusal names the file. ``test_fuzzed_onnx_gives_our_errors_only``
mutates a small valid file (truncation, bit flips, overwritten bytes) in a child process
under a memory cap and a time limit: only xai-core's own errors, or a model that runs, may
come out.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import xai_core as xai
from xai_core.errors import CapabilityError, ModelFormatError

from .hostile_files import assert_refused, chain, run_fuzz

X4 = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)


def _vi(name: str, dims) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def _model(nodes, inits=(), inputs=None, output="y", opset=17, **graph_kw) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        inputs or [_vi("x", ["n", 4])],
        [_vi(output, None)],
        list(inits),
        **graph_kw,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _const(name: str, value) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value), name)


C = _const("c", np.full(4, 0.5, np.float32))
W = _const("W", np.arange(12, dtype=np.float32).reshape(4, 3) / 10)


def _relu(i: str, o: str, name: str = "") -> onnx.NodeProto:
    return helper.make_node("Relu", [i], [o], name=name or f"relu_{o}")


def _tensor_with(dims=None, **fields) -> onnx.TensorProto:
    t = numpy_helper.from_array(np.ones((4, 3), np.float32), "W")
    if dims is not None:
        t.dims[:] = dims
    for k, v in fields.items():
        setattr(t, k, v)
    return t


def _external() -> onnx.ModelProto:
    t = _tensor_with()
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value="../../../etc/passwd")
    return _model([helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")], [t])


def _if_node() -> onnx.ModelProto:
    branch = helper.make_graph([_relu("x", "z")], "b", [], [_vi("z", None)])
    cond = _const("cond", np.array(True))
    node = helper.make_node(
        "If", ["cond"], ["y"], name="if", then_branch=branch, else_branch=branch
    )
    return _model([node], [cond])


def _divide_by_batch() -> onnx.ModelProto:
    """What ``x / x.shape[0]`` exports to."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
        helper.make_node("Cast", ["n"], ["nf"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("Div", ["x", "nf"], ["y"], name="divide"),
    ]
    return _model(nodes, [_const("zero", np.array(0, np.int64))])


#: name -> (model, what must come back): ``None``, it imports and agrees with onnxruntime on
#: it; a model, it imports and agrees with onnxruntime on that one; (error, words) otherwise.
CASES: dict[str, tuple[onnx.ModelProto | bytes, Any]] = {
    # -- one writer per tensor, every input written, order -------------------------------
    "two-nodes-write-one-tensor": (
        _model(
            [
                _relu("x", "h", "first"),
                helper.make_node("Neg", ["x"], ["h"], name="second"),
                _relu("h", "y"),
            ]
        ),
        (ModelFormatError, ("tensor 'h' is written twice", "'first'", "'second'")),
    ),
    "node-writes-the-graph-input": (
        _model([_relu("x", "x", "loop"), _relu("x", "y")]),
        (ModelFormatError, ("tensor 'x' is written twice", "the graph input", "'loop'")),
    ),
    "node-writes-an-initializer": (
        _model([_relu("x", "c", "over"), helper.make_node("Add", ["x", "c"], ["y"])], [C]),
        (ModelFormatError, ("tensor 'c' is written twice", "an initializer", "'over'")),
    ),
    "two-initializers-one-name": (
        _model([helper.make_node("Add", ["x", "c"], ["y"])], [C, C]),
        (ModelFormatError, ("two initializers are named 'c'",)),
    ),
    "reads-a-tensor-nothing-writes": (
        _model([helper.make_node("Add", ["x", "ghost"], ["y"], name="add")]),
        (ModelFormatError, ("node 0 (Add 'add') reads tensor 'ghost'", "no node")),
    ),
    "nodes-in-a-cycle": (
        _model([_relu("b", "a", "ra"), _relu("a", "b", "rb"), _relu("a", "y")]),
        (ModelFormatError, ("depends on its own output", "cycle")),
    ),
    "node-writes-nothing": (
        _model([helper.make_node("Relu", ["x"], [""], name="silent"), _relu("x", "y")]),
        (ModelFormatError, ("node 0 (Relu 'silent') writes no tensor",)),
    ),
    "graph-output-written-by-nothing": (
        _model([_relu("x", "h")]),
        (ModelFormatError, ("graph output 'y' is written by no node",)),
    ),
    "nodes-out-of-order-are-sorted": (
        _model([_relu("h", "y", "last"), helper.make_node("Add", ["x", "c"], ["h"])], [C]),
        None,
    ),
    "two-nodes-one-name-are-renamed": (  # onnxruntime refuses the names: run it renamed
        _model(
            [_relu("x", "h", "same"), helper.make_node("Add", ["h", "c"], ["y"], name="same")], [C]
        ),
        _model(
            [_relu("x", "h", "same"), helper.make_node("Add", ["h", "c"], ["y"], name="s2")], [C]
        ),
    ),
    # -- the operator's schema -----------------------------------------------------------
    "gemm-with-one-input": (
        _model([helper.make_node("Gemm", ["x"], ["y"], name="fc")]),
        (ModelFormatError, ("node 0 (Gemm 'fc') has 1 inputs", "Gemm takes 2 to 3")),
    ),
    "relu-with-two-outputs": (
        _model([helper.make_node("Relu", ["x"], ["y", "z"], name="r")]),
        (ModelFormatError, ("has 2 outputs", "Relu takes 1")),
    ),
    "concat-without-axis": (
        _model([helper.make_node("Concat", ["x", "x"], ["y"], name="cat")]),
        (ModelFormatError, ("lacks the attribute 'axis'",)),
    ),
    "required-input-left-empty": (
        _model([helper.make_node("MatMul", ["x", ""], ["y"], name="mm")]),
        (ModelFormatError, ("node 0 (MatMul 'mm') leaves its required input 1 empty",)),
    ),
    "transpose-perm-out-of-range": (
        _model([helper.make_node("Transpose", ["x"], ["y"], name="t", perm=[0, 5])]),
        (ModelFormatError, ("node 't'", "perm [0, 5] is not a permutation")),
    ),
    "clip-min-of-no-values": (
        _model(
            [helper.make_node("Clip", ["x", "e"], ["y"], name="clip")],
            [_const("e", np.zeros(0, np.float32))],
        ),
        (ModelFormatError, ("Clip node 'clip'", "min has shape (0,)")),
    ),
    "string-weights": (
        _model(
            [helper.make_node("MatMul", ["x", "S"], ["y"], name="mm")],
            [helper.make_tensor("S", TensorProto.STRING, [4, 1], [b"a", b"b", b"c", b"d"])],
        ),
        (ModelFormatError, ("MatMul node 'mm': input 'S' holds strings where numbers",)),
    ),
    # -- tensors --------------------------------------------------------------------------
    "external-data-outside-the-directory": (
        _external(),
        (ModelFormatError, ("'W'", "'../../../etc/passwd'", "climbs out of the model's directory")),
    ),
    "raw-data-shorter-than-declared": (
        _model([helper.make_node("MatMul", ["x", "W"], ["y"])], [_tensor_with(dims=[400, 300])]),
        (ModelFormatError, ("'W' declares shape [400, 300]", "48 bytes")),
    ),
    "negative-dimension": (
        _model([helper.make_node("MatMul", ["x", "W"], ["y"])], [_tensor_with(dims=[-4, -3])]),
        (ModelFormatError, ("'W' declares negative dimensions",)),
    ),
    "2**40-elements-declared": (
        _model(
            [helper.make_node("MatMul", ["x", "W"], ["y"])], [_tensor_with(dims=[2**20, 2**20])]
        ),
        (ModelFormatError, ("more than the 2147483648 elements allowed",)),
    ),
    "100-dimensions": (
        _model([helper.make_node("MatMul", ["x", "W"], ["y"])], [_tensor_with(dims=[1] * 100)]),
        (ModelFormatError, ("declares 100 dimensions; at most 32",)),
    ),
    "unknown-data-type": (
        _model([helper.make_node("MatMul", ["x", "W"], ["y"])], [_tensor_with(data_type=99)]),
        (ModelFormatError, ("unknown data type 99",)),
    ),
    "not-protobuf": (b"\xff\xfe not an onnx model", (ModelFormatError, ("is not an ONNX model",))),
    "truncated": (
        _model([helper.make_node("MatMul", ["x", "W"], ["y"])], [W]).SerializeToString()[:-20],
        (ModelFormatError, ("is not an ONNX model",)),
    ),
    "empty-file": (b"", (ModelFormatError, ("it has no graph",))),
    # -- what a network here cannot compute ----------------------------------------------
    "divide-by-the-batch-size": (
        _divide_by_batch(),
        (CapabilityError, ("Div node 'divide'", "computed from the batch size", "x.shape[0]")),
    ),
    "control-flow-subgraph": (_if_node(), (CapabilityError, ("has a subgraph",))),
    "custom-domain": (
        _model([helper.make_node("Relu", ["x"], ["y"], name="r", domain="com.example")]),
        (CapabilityError, ("from the domain 'com.example'",)),
    ),
    "unsupported-operator": (
        _model([helper.make_node("Det", ["x"], ["y"], name="det")]),
        (CapabilityError, ("not supported: 'Det' (node 'det')", "Supported operators")),
    ),
    "two-inputs-two-batch-sizes": (
        _model(
            [helper.make_node("Add", ["x", "z"], ["y"])],
            inputs=[_vi("x", [2, 4]), _vi("z", [3, 4])],
        ),
        (CapabilityError, ("different batch sizes", "'x': 2, 'z': 3")),
    ),
    "input-without-sample-shape": (
        _model([_relu("x", "y")], inputs=[_vi("x", ["n", "features"])]),
        (ModelFormatError, ("sample sizes must be known; 'x' declares", "input_shapes=")),
    ),
    "declared-shape-disagrees": (
        _model(
            [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"), _relu("h", "y")],
            [W],
            value_info=[_vi("h", ["n", 5])],
        ),
        (ModelFormatError, ("'h' (node 'mm') is declared with per-sample shape (5,)",)),
    ),
    "constant-without-value": (
        _model(
            [
                helper.make_node("Constant", [], ["k"], name="k"),
                helper.make_node("Add", ["x", "k"], ["y"]),
            ]
        ),
        (CapabilityError, ("Constant node 'k' has none of value",)),
    ),
    # -- size ---------------------------------------------------------------------------
    "one-constant-read-by-2000-adds": (chain(4000), None),
}


def _ort(data: bytes, X: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: X})[0]


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_hostile_onnx(tmp_path: Path, case: str) -> None:
    """Each file imports with onnxruntime's outputs, or is refused naming the file and the problem."""
    model, expected = CASES[case]
    data = model if isinstance(model, bytes) else model.SerializeToString()
    path = tmp_path / f"{case}.onnx"
    path.write_bytes(data)
    if expected is None or isinstance(expected, onnx.ModelProto):
        oracle = data if expected is None else expected.SerializeToString()
        net = xai.from_onnx(path)
        np.testing.assert_allclose(net.predict(X4), _ort(oracle, X4), rtol=1e-5, atol=1e-5)
        return
    assert_refused(xai.from_onnx, path, *expected)


W_BYTES = numpy_helper.to_array(W).tobytes()  # 48 bytes: W is float32 of shape (4, 3)


def _external_model(
    tmp: Path, location: str = "w.bin", data: bytes | None = W_BYTES, **keys
) -> Path:
    """``tmp/model/model.onnx``, whose weight W is kept in ``location`` (holding ``data``,
    unless None) under the external-data keys given (``offset``, ``length`` ...; None leaves
    a key out; by default offset 0, length 48)."""
    t = numpy_helper.from_array(numpy_helper.to_array(W), "W")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for key, value in {"location": location, "offset": "0", "length": "48", **keys}.items():
        if value is not None:
            t.external_data.add(key=key, value=str(value))
    folder = tmp / "model"
    folder.mkdir(exist_ok=True)
    if data is not None:
        (folder / location).write_bytes(data)
    path = folder / "model.onnx"
    path.write_bytes(
        _model([helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")], [t]).SerializeToString()
    )
    return path


def _symlink_out(tmp: Path) -> Path:
    (tmp / "secret.bin").write_bytes(W_BYTES)
    path = _external_model(tmp, data=None)
    (path.parent / "w.bin").symlink_to(tmp / "secret.bin")
    return path


def _climb(tmp: Path, location: str) -> Path:
    (tmp / "w.bin").write_bytes(W_BYTES)  # there to be read, were ".." followed
    return _external_model(tmp, location, data=None)


def _symlink_loop(tmp: Path) -> Path:
    path = _external_model(tmp, data=None)
    (path.parent / "w.bin").symlink_to(path.parent / "w.bin")
    return path


def _directory_named_like_the_file(tmp: Path) -> Path:
    path = _external_model(tmp, data=None)
    (path.parent / "w.bin").mkdir()
    return path


#: name -> (builder of the model's path in a temporary directory, error, words of the message).
EXTERNAL: dict[str, tuple[Any, type[Exception], tuple[str, ...]]] = {
    "parent-directory": (
        lambda t: _climb(t, "../w.bin"),
        ModelFormatError,
        ("tensor 'W'", "'../w.bin'", "climbs out of the model's directory"),
    ),
    "parent-directory-backslashes": (
        lambda t: _climb(t, "sub\\..\\..\\w.bin"),
        ModelFormatError,
        ("tensor 'W'", "climbs out of the model's directory"),
    ),
    "absolute-path": (
        lambda t: _climb(t, str(t / "w.bin")),
        ModelFormatError,
        ("tensor 'W'", "w.bin", "is an absolute path"),
    ),
    "symbolic-link-out-of-the-directory": (
        _symlink_out,
        ModelFormatError,
        (
            "tensor 'W'",
            "'w.bin'",
            "leads outside the model's directory",
            "symbolic link",
            "secret.bin",
        ),
    ),
    "symbolic-link-to-itself": (
        _symlink_loop,
        ModelFormatError,
        ("tensor 'W'", "'w.bin'", "cannot be"),  # resolved (3.11) or read (ELOOP)
    ),
    "missing-file": (
        lambda t: _external_model(t, data=None),
        ModelFormatError,
        ("tensor 'W'", "'w.bin'", "does not exist"),
    ),
    "not-a-regular-file": (
        _directory_named_like_the_file,
        ModelFormatError,
        ("tensor 'W'", "'w.bin'", "is not a regular file"),
    ),
    "file-shorter-than-the-tensor": (
        lambda t: _external_model(t, data=W_BYTES[:40]),
        ModelFormatError,
        ("tensor 'W'", "'w.bin'", "holds 40 bytes", "0 to 48", "run past its end"),
    ),
    "offset-beyond-the-end": (
        lambda t: _external_model(t, offset=100, length=None),
        ModelFormatError,
        ("tensor 'W'", "'w.bin'", "holds 48 bytes", "offset 100 lies beyond its end"),
    ),
    "length-disagrees-with-the-shape": (
        lambda t: _external_model(t, data=W_BYTES * 2, length=40),
        ModelFormatError,
        ("external file 'w.bin'", "'W' declares shape [4, 3] (48 bytes)", "holds 40 bytes"),
    ),
    "no-length-and-more-bytes-than-the-shape": (
        lambda t: _external_model(t, data=W_BYTES * 2, length=None),
        ModelFormatError,
        ("external file 'w.bin'", "'W' declares shape [4, 3] (48 bytes)", "holds 96 bytes"),
    ),
    "2**40-elements-declared-in-a-short-file": (
        lambda t: _external_model(t, length=2**42),
        ModelFormatError,
        ("tensor 'W'", "holds 48 bytes", "run past its end"),
    ),
    "negative-offset": (
        lambda t: _external_model(t, offset=-8),
        ModelFormatError,
        ("tensor 'W'", "an offset of '-8', not a whole number"),
    ),
    "no-location": (
        lambda t: _external_model(t, data=None, location=None),
        ModelFormatError,
        ("tensor 'W'", "names none"),
    ),
    "checksum-disagrees": (
        lambda t: _external_model(t, checksum="0" * 40),
        ModelFormatError,
        ("tensor 'W'", "'w.bin'", "has the SHA-1", "declares '" + "0" * 40),
    ),
}


@pytest.mark.parametrize("case", list(EXTERNAL), ids=list(EXTERNAL))
def test_hostile_external_data(tmp_path: Path, case: str) -> None:
    """Each external-data file that is outside the model's directory, missing, short or
    disagrees with its tensor is refused naming the model, the tensor and the file."""
    make, error, words = EXTERNAL[case]
    assert_refused(xai.from_onnx, make(tmp_path), error, words)


def test_external_data_read_within_its_bounds_imports(tmp_path: Path) -> None:
    """The same layout with the right offset and length imports equal to onnxruntime."""
    path = _external_model(tmp_path, data=b"\0" * 8 + W_BYTES + b"\0" * 8, offset=8)
    inline = _model([helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")], [W])
    np.testing.assert_allclose(
        xai.from_onnx(path).predict(X4), _ort(inline.SerializeToString(), X4), rtol=1e-6
    )


@pytest.mark.parametrize("form", ["bytes", "stream", "ModelProto"])
def test_external_data_without_a_directory_is_refused(tmp_path: Path, form: str) -> None:
    """A model given as bytes, a stream or a ModelProto has no directory to read external data from."""
    import io

    data = _external_model(tmp_path).read_bytes()
    source = {
        "bytes": data,
        "stream": io.BytesIO(data),
        "ModelProto": onnx.load_model_from_string(data),
    }[form]
    with pytest.raises(
        ModelFormatError,
        match=r"tensor 'W' keeps its data in the external file 'w.bin'; .* pass the .onnx file's path",
    ):
        xai.from_onnx(source)


def test_a_file_over_2_gib_is_not_read(tmp_path: Path) -> None:
    """A sparse 2 GiB + 1 byte file is refused from its size, before a byte is read."""
    path = tmp_path / "huge.onnx"
    with open(path, "wb") as fh:
        fh.truncate(2**31 + 1)
    with pytest.raises(ModelFormatError, match=r"huge.onnx holds 2,147,483,649 bytes, over"):
        xai.from_onnx(path)


def test_a_shared_constant_is_one_node() -> None:
    """2000 Add nodes reading one initializer hold it once, not 2000 copies."""
    net = xai.from_onnx(chain(4000))
    constants = [n for n in net.nodes if type(n.layer).__name__ == "Constant"]
    assert len(constants) == 1 and len(net.nodes) == 4001


@pytest.mark.slow
def test_a_100000_node_chain_imports_in_linear_time() -> None:
    """100,000 nodes (about 3 MB) import and run; quadratic steps took minutes for 30,000.

    In a child process with a generous time limit, so a quadratic regression fails by
    the timeout instead of hanging the suite.
    """
    code = textwrap.dedent(
        """
        import numpy as np, sys
        sys.path.insert(0, {here!r})
        from hostile_files import chain
        import xai_core as xai
        net = xai.from_onnx(chain(100_000).SerializeToString())
        x = np.full((1, 4), -1.0, np.float32)
        print(len(net.nodes), net.predict(x)[0, 0])
        """
    ).format(here=str(Path(__file__).parent))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True
    )
    nodes, value = out.stdout.split()[-2:]
    # relu(-1) = 0, then 50,000 additions of 0.5 with relus between them
    assert int(nodes) == 100_001 and float(value) == pytest.approx(25_000.0)


def test_fuzzed_onnx_gives_our_errors_only() -> None:
    """Truncated, bit-flipped and overwritten copies of a small valid .onnx: an XaiError or a model that runs."""
    assert "fuzzed 150 mutants" in run_fuzz("small_onnx", "from_onnx", 150)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[" * 100_000, "'class_names' nests .* 100,000 deep"),
        ('{"0": "cat"', "class_names"),
        ("cat, dog, bird, fish", ["cat", "dog", "bird", "fish"]),
    ],
    ids=["deep-json", "broken-json", "comma-names"],
)
def test_class_names_in_the_metadata_are_read_within_bounds(text: str, expected) -> None:
    """The metadata's class names go through the bounded JSON reader: a deep or broken JSON
    document is one ModelFormatError (no RecursionError), plain text is comma-separated names."""
    model = _model([_relu("x", "y")])
    helper.set_model_props(model, {"class_names": text})
    if isinstance(expected, list):
        assert list(xai.from_onnx(model.SerializeToString()).output_names) == expected
        return
    with pytest.raises(ModelFormatError, match=expected):
        xai.from_onnx(model.SerializeToString())
