"""ONNX's backend test suite through the backend adapter: no case of a supported operator
fails, every refusal is a CapabilityError, and docs/onnx_conformance.md is the fresh run's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import xai_core as xai
from xai_core.errors import CapabilityError
from xai_core.importers.onnx_import import SUPPORTED_ONNX_OPS

pytest.importorskip("onnx")
pytest.importorskip("onnx.backend.test.case.node")

from xai_core.importers import onnx_conformance as conf  # noqa: E402
from xai_core.importers.onnx_backend import XaiBackend  # noqa: E402

PAGE = Path(__file__).parents[2] / "docs" / "onnx_conformance.md"


@pytest.fixture(scope="module")
def results():
    """Every node case of the installed onnx, run once for the module."""
    return conf.run_cases(conf.node_cases())


@pytest.mark.slow
@pytest.mark.parametrize("op", SUPPORTED_ONNX_OPS)
def test_no_case_of_a_supported_operator_fails(results, op):
    """Each case of the operator passes, or is refused with a CapabilityError naming why."""
    mine = [r for r in results if r.op == op]
    if not mine:
        pytest.skip(f"the suite has no case of {op}")
    failed = [f"{r.case}: {r.detail}" for r in mine if r.status == "failed"]
    assert not failed, "\n".join(failed)
    assert all(r.detail for r in mine if r.status == "refused")


@pytest.mark.slow
def test_the_whole_suite_has_no_failure_and_120_operators_are_supported(results):
    """No case of any operator fails (unsupported ones are refused up front), at least 120 of
    the suite's operators are supported, and most of their cases pass or are refused."""
    totals = conf.totals(results)
    assert totals["failed"] == 0, [r for r in results if r.status == "failed"][:5]
    rows = conf.summary(results)
    assert sum(row["listed"] for row in rows.values()) >= 120
    assert conf.totals(results, listed_only=True)["passed"] >= 400


@pytest.mark.slow
def test_the_page_is_the_fresh_run(results):
    """docs/onnx_conformance.md equals what the run generates (regenerate it with
    ``python -m xai_core.importers.onnx_conformance --markdown > docs/onnx_conformance.md``)."""
    assert PAGE.read_text(encoding="utf-8") == conf.markdown(results)


def test_the_adapter_is_an_onnx_backend():
    """XaiBackend is onnx's Backend; prepare returns a BackendRep whose run gives outputs."""
    from onnx import TensorProto, helper
    from onnx.backend.base import Backend, BackendRep

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("ArgMax", ["x"], ["i"], axis=1)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("i", TensorProto.INT64, [2, 1]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    assert issubclass(XaiBackend, Backend)
    rep = XaiBackend.prepare(model)
    assert isinstance(rep, BackendRep)
    x = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, 0.5]], np.float32)
    y, i = rep.run([x])
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    assert i.dtype == np.int64 and i.tolist() == [[2], [1]]


def test_a_case_is_classified_passed_refused_or_failed():
    """A case that runs right passes, one the importer cannot take is refused with its
    reason, and one whose expected output is wrong fails."""
    from onnx import TensorProto, helper

    def case(op, want, shape=(2, 3)):
        graph = helper.make_graph(
            [helper.make_node(op, ["x"], ["y"])],
            op,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        x = np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape)
        return conf.Case(f"test_{op}", op, model, (([x], [want(x)]),))

    assert conf.run_case(case("Relu", lambda x: np.maximum(x, 0))).status == "passed"
    wrong = conf.run_case(case("Relu", lambda x: x))
    assert wrong.status == "failed" and "wrong output" in wrong.detail
    refused = conf.run_case(case("Det", lambda x: x))
    assert refused.status == "refused" and "'Det'" in refused.detail
    with pytest.raises(CapabilityError, match="no floating-point input.*Sigmoid are not"):
        graph = case("Sigmoid", lambda x: x).model
        graph.graph.input[0].type.tensor_type.elem_type = TensorProto.INT32
        XaiBackend.prepare(graph)


def test_weights_given_as_inputs_are_constants_of_the_run():
    """A Conv whose weights W (and bias) are graph inputs, W of X's first axis by chance, runs
    with them as constants and equals onnx's reference; a CastLike's float8 ``like`` input
    is read for its type alone, and the float16 input is fed exactly."""
    import ml_dtypes
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(5)
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("CastLike", ["c", "like"], ["y"]),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 3, 5, 5]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT16, [2, 3, 3, 3]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT16, [2]),
            helper.make_tensor_value_info("like", TensorProto.FLOAT8E4M3FN, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT8E4M3FN, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    feeds = {
        "x": rng.standard_normal((2, 3, 5, 5)).astype(np.float16),
        "w": (rng.standard_normal((2, 3, 3, 3)) / 4).astype(np.float16),
        "b": rng.standard_normal(2).astype(np.float16),
        "like": np.zeros(2, ml_dtypes.float8_e4m3fn),
    }
    (y,) = XaiBackend.prepare(model).run(list(feeds.values()))
    f32 = {k: v.astype(np.float32) for k, v in feeds.items() if k != "like"}
    graph32 = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT8E4M3FN),
        ],
        "g32",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in f32.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT8E4M3FN, None)],
    )
    ref = helper.make_model(graph32, opset_imports=[helper.make_opsetid("", 19)])
    (want,) = ReferenceEvaluator(ref).run(None, f32)
    assert y.dtype == ml_dtypes.float8_e4m3fn and y.shape == (2, 2, 5, 5)
    np.testing.assert_array_equal(y.astype(np.float32), want.astype(np.float32))


def test_integer_models_run_exactly_and_overflow_is_refused():
    """A model of integer inputs alone, of operators exact on integers in float64, equals
    onnx's reference (int64 values near 2**40 included); a uint8 difference below 0, which
    ONNX wraps around, is refused; so is an operator not exact on integers (PRelu)."""
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    def model(op, elem):
        graph = helper.make_graph(
            [helper.make_node(op, ["a", "b"], ["y"])],
            op,
            [helper.make_tensor_value_info(k, elem, [3, 4]) for k in "ab"],
            [helper.make_tensor_value_info("y", elem, None)],
        )
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])

    rng = np.random.default_rng(3)
    a, b = rng.integers(-(2**40), 2**40, (2, 3, 4))
    for op in ("Sub", "Max", "Mul"):
        m = model(op, TensorProto.INT64)
        small = op == "Mul"
        feeds = {"a": a // 2**21 if small else a, "b": b // 2**21 if small else b}
        (want,) = ReferenceEvaluator(m).run(None, feeds)
        (got,) = XaiBackend.prepare(m).run(list(feeds.values()))
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)
    # powers up to 19 ** 12 (about 2.2e15, below 2**53), negative bases included
    feeds = {"a": rng.integers(-19, 20, (3, 4)), "b": rng.integers(0, 13, (3, 4))}
    (want,) = ReferenceEvaluator(model("Pow", TensorProto.INT64)).run(None, feeds)
    (got,) = XaiBackend.prepare(model("Pow", TensorProto.INT64)).run(list(feeds.values()))
    np.testing.assert_array_equal(got, want)
    x = np.full((3, 4), 2, np.uint8)
    with pytest.raises(CapabilityError, match="wraps"):
        XaiBackend.prepare(model("Sub", TensorProto.UINT8)).run([x, x + 1])
    with pytest.raises(CapabilityError, match="PRelu are not"):
        XaiBackend.prepare(model("PRelu", TensorProto.INT32))


@pytest.mark.parametrize("elem", ["INT32", "INT64", "UINT32"])
@pytest.mark.parametrize(("op", "attrs"), [("Div", {}), ("Mod", {}), ("Mod", {"fmod": 1})])
def test_integer_div_truncates_and_mod_follows_the_divisor_as_onnxruntime(op, attrs, elem):
    """Integer Div truncates toward zero, Mod (fmod=0) takes the divisor's sign and fmod=1
    the dividend's: mixed signs, exact quotients and int64 values near 2**40 equal
    onnxruntime's exactly."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    t = getattr(TensorProto, elem)
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(t))
    graph = helper.make_graph(
        [helper.make_node(op, ["a", "b"], ["y"], **attrs)],
        op,
        [helper.make_tensor_value_info(k, t, [4, 6]) for k in "ab"],
        [helper.make_tensor_value_info("y", t, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    rng = np.random.default_rng(11)
    hi = min(int(np.iinfo(dtype).max), 2**40)
    lo = 0 if dtype.kind == "u" else -hi
    a = rng.integers(lo, hi, (4, 6), endpoint=True)
    b = rng.integers(1, 9, (4, 6)) * (1 if dtype.kind == "u" else rng.choice([-1, 1], (4, 6)))
    a[0, :3] = b[0, :3] * 3  # exact quotients
    a, b = a.astype(dtype), b.astype(dtype)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"a": a, "b": b})
    (got,) = XaiBackend.prepare(model).run([a, b])
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)
    if op == "Div" and dtype.kind == "i":
        np.testing.assert_array_equal(got, (np.sign(a) * np.sign(b)) * (np.abs(a) // np.abs(b)))


def _one_node(op, inputs, attrs=None, opset=18, out_type=None, inits=()):
    """A one-node model of ``op`` over float inputs of the given shapes (dict name -> shape)."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node(op, [*inputs, *(t.name for t in inits)], ["y"], **(attrs or {}))],
        op,
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(s)) for k, s in inputs.items()],
        [helper.make_tensor_value_info("y", out_type or TensorProto.FLOAT, None)],
        list(inits),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _random(shape):
    """A float32 constant of ``shape`` (seeded)."""
    return np.random.default_rng(3).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize(
    ("op", "shapes", "attrs", "extra"),
    [
        ("ArgMax", {"x": (3, 4)}, {}, None),  # default axis 0: the batch axis
        ("Softmax", {"x": (3, 4, 2)}, {"axis": 0}, None),
        ("Concat", {"a": (2,), "b": (3,)}, {"axis": 0}, None),  # 1-D: no sample axis
        ("ReduceSum", {"x": (3, 4)}, {}, None),  # every axis, the batch's included
        ("ReduceMax", {"x": (2, 3, 4)}, {"keepdims": 1}, np.array([0, -1], np.int64)),
        ("CumSum", {"x": (5,)}, {"reverse": 1}, np.array(0, np.int32)),
        ("Trilu", {"x": (4, 5)}, {"upper": 0}, None),
        ("Flatten", {"x": (2, 3, 4)}, {"axis": 2}, None),  # to (6, 4): rows mix samples
        ("Squeeze", {"x": (1, 3, 4)}, {}, np.array([0], np.int64)),
        ("Tile", {"x": (2, 3)}, {}, np.array([3, 2], np.int64)),
        ("Reshape", {"x": (2, 3, 4)}, {}, np.array([4, 0, -1], np.int64)),
        ("Expand", {"x": (3, 1)}, {}, np.array([2, 1, 6], np.int64)),  # an axis before all
        ("Expand", {"x": (4,)}, {}, np.array([2, 3, 1], np.int64)),  # two, of a vector
        ("Transpose", {"x": (2, 3, 4)}, {}, None),  # the default reverses every axis
        ("Transpose", {"x": (2, 3, 4)}, {"perm": [1, 2, 0]}, None),
        ("LpNormalization", {"x": (3, 4)}, {"axis": 0, "p": 1}, None),
        ("Einsum", {"x": (3, 4)}, {"equation": "ij->ji"}, None),
        ("Einsum", {"x": (3, 4)}, {"equation": "ij"}, None),  # implicit: ij->ij
        ("Einsum", {"a": (5,), "b": (5,)}, {"equation": "i,i"}, None),  # a scalar: 2 axes
        ("Einsum", {"x": (3, 4)}, {"equation": "ij,jk->ki"}, _random((4, 2))),
        (
            "Gemm",
            {"a": (4, 3), "b": (4, 5), "c": (3, 5)},
            {"transA": 1, "alpha": 0.5, "beta": 2.0},
            None,
        ),
        ("Gemm", {"a": (4, 3)}, {"transA": 1, "transB": 1, "alpha": 3.0}, _random((5, 4))),
        ("Compress", {"x": (3, 4)}, {}, np.array([1, 0, 1, 1, 0, 1], bool)),  # no axis
    ],
)
def test_a_model_on_the_batch_axis_runs_as_one_sample(op, shapes, attrs, extra):
    """A model that works on the first axis, or whose inputs have no sample axis, equals
    onnxruntime: it runs as one sample, its axes shifted past a leading axis of 1 (two when
    a sample's outputs are scalars). (onnx's reference evaluator normalises
    ``LpNormalization`` over axis 0 wrongly: onnxruntime and numpy agree.)"""
    import onnxruntime as ort
    from onnx import TensorProto, numpy_helper

    inits = [numpy_helper.from_array(extra, "axes")] if extra is not None else []
    out = TensorProto.INT64 if op == "ArgMax" else None
    model = _one_node(op, shapes, attrs, out_type=out, inits=inits)
    rng = np.random.default_rng(7)
    feeds = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    (got,) = XaiBackend.prepare(model).run(list(feeds.values()))
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_model_that_cannot_run_as_one_sample_keeps_its_refusal():
    """A Squeeze of every axis of size 1 (no axes: the new one would go too) is not run as
    one sample: the first import's refusal is raised."""
    model = _one_node("Squeeze", {"x": (1, 3)}, {})
    with pytest.raises(CapabilityError, match="Squeeze"):
        XaiBackend.prepare(model).run([np.ones((1, 3), np.float32)])


def test_axes_of_constant_nodes_move_too():
    """A softmax over the first axis spelled out (ReduceMax, Exp, ReduceSum of axes from a
    Constant node) runs as one sample and equals onnx's reference."""
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    nodes = [
        helper.make_node("Constant", [], ["axes"], value_ints=[0]),
        helper.make_node("ReduceMax", ["x", "axes"], ["m"]),
        helper.make_node("Sub", ["x", "m"], ["d"]),
        helper.make_node("Exp", ["d"], ["e"]),
        helper.make_node("ReduceSum", ["e", "axes"], ["s"]),
        helper.make_node("Div", ["e", "s"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "softmax0",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    x = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    (got,) = XaiBackend.prepare(model).run([x])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_time_major_recurrence_runs_batch_first():
    """A GRU of layout 0 (X of shape (seq, batch, input)) runs with its batch axis first and
    its outputs transposed back: Y and Y_h equal onnx's reference."""
    from onnx import TensorProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(4)
    seq, batch, n_in, hidden = 5, 3, 2, 4
    w = numpy_helper.from_array(rng.standard_normal((1, 3 * hidden, n_in)).astype(np.float32), "w")
    r = numpy_helper.from_array(
        (rng.standard_normal((1, 3 * hidden, hidden)) / 2).astype(np.float32), "r"
    )
    graph = helper.make_graph(
        [helper.make_node("GRU", ["x", "w", "r"], ["y", "y_h"], hidden_size=hidden)],
        "gru",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, batch, n_in])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [seq, 1, batch, hidden]),
            helper.make_tensor_value_info("y_h", TensorProto.FLOAT, [1, batch, hidden]),
        ],
        [w, r],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    x = rng.standard_normal((seq, batch, n_in)).astype(np.float32)
    want = ReferenceEvaluator(model).run(None, {"x": x})
    got = XaiBackend.prepare(model).run([x])
    assert [g.shape for g in got] == [(seq, 1, batch, hidden), (1, batch, hidden)]
    for g, w_ in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w_, rtol=1e-4, atol=1e-5)


def test_shape_arithmetic_is_folded_to_run_as_one_sample():
    """An RMS normalisation over every axis spelled out as the expanded functions are
    (a ``Flatten`` at axis -1, ``Range(0, Size(Shape(x2d)), 1)`` as the reduced axes, a
    ``Reshape`` back to ``Shape(x)``; a ``ConstantOfShape`` of ones after it) runs as one
    sample, its shape arithmetic folded to constants, and equals onnxruntime."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    def c(name, value):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value))

    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Size", ["shape"], ["rank"]),
        c("zero", np.array(0, np.int64)),
        c("one", np.array(1, np.int64)),
        helper.make_node("Identity", ["zero"], ["start"]),
        helper.make_node("Flatten", ["x"], ["x2"], axis=-1),
        helper.make_node("Shape", ["x2"], ["shape2d"]),
        helper.make_node("Size", ["shape2d"], ["rank2d"]),
        helper.make_node("Range", ["start", "rank2d", "one"], ["axes"]),
        helper.make_node("Mul", ["x2", "x2"], ["sq"]),
        helper.make_node("ReduceMean", ["sq", "axes"], ["ms"]),
        c("eps", np.array(1e-5, np.float32)),
        helper.make_node("Add", ["ms", "eps"], ["mse"]),
        helper.make_node("Sqrt", ["mse"], ["rms"]),
        helper.make_node("Div", ["x2", "rms"], ["n2"]),
        helper.make_node("Reshape", ["n2", "shape"], ["n"]),
        c("one_1d", np.array([1], np.int64)),
        c("end", np.array([100], np.int64)),
        helper.make_node(
            "ConstantOfShape",
            ["one_1d"],
            ["ones"],
            value=numpy_helper.from_array(np.array([1], np.int64)),
        ),
        c("zero_1d", np.array([0], np.int64)),
        helper.make_node("Slice", ["shape", "zero_1d", "ones"], ["head"]),
        helper.make_node("Slice", ["shape", "ones", "end"], ["tail"]),
        helper.make_node("Concat", ["ones", "head", "tail"], ["shape2"], axis=0),
        helper.make_node("Reshape", ["n", "shape2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "rms_all_axes_expanded",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    x = np.random.default_rng(5).standard_normal((3, 4, 5)).astype(np.float32)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"x": x})
    (got,) = XaiBackend.prepare(model).run([x])
    assert got.shape == want.shape == (1, 3, 4, 5) and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("elem", "axis", "per_axis"),
    [("INT8", 1, False), ("UINT8", 1, True), ("UINT8", -1, True), ("INT8", 2, True)],
)
def test_dequantize_linear_per_tensor_and_per_axis_equals_onnxruntime(elem, axis, per_axis):
    """``(x - zero_point) * scale`` of integer tensors of a batch axis, one scale or one per
    channel of ``axis`` or one per block of ``axis`` (``block_size``), equals onnxruntime's."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    t = getattr(TensorProto, elem)
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(t))
    shape = (2, 3, 4)
    rng = np.random.default_rng(8)
    n = shape[axis] if per_axis else 1
    scale = (rng.random(n) * 0.1 + 0.01).astype(np.float32)
    zp = rng.integers(np.iinfo(dtype).min // 2, np.iinfo(dtype).max // 2, n).astype(dtype)
    if not per_axis:
        scale, zp = scale.reshape(()), zp.reshape(())

    def model(**attrs):
        graph = helper.make_graph(
            [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=axis, **attrs)],
            "dq",
            [helper.make_tensor_value_info("x", t, list(shape))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zp, "z")],
        )
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
        m.ir_version = 9
        return m

    x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, shape, endpoint=True)
    x = x.astype(dtype)
    sess = ort.InferenceSession(model().SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"x": x})
    (got,) = XaiBackend.prepare(model()).run([x])
    assert got.dtype == np.float32 and got.shape == shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    if per_axis and axis % 3:  # blocks of 2 along the axis, the same for both samples
        blocks = [*shape]
        blocks[axis] = -(-shape[axis] // 2)
        scale = np.repeat((rng.random((1, *blocks[1:])) * 0.1 + 0.01).astype(np.float32), 2, 0)
        zp = np.repeat(rng.integers(-3, 4, (1, *blocks[1:])), 2, 0).astype(dtype)
        blocked = model(block_size=2)
        blocked.opset_import[0].version = 21
        del blocked.graph.initializer[:]
        blocked.graph.initializer.extend(
            [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zp, "z")]
        )
        sess = ort.InferenceSession(blocked.SerializeToString(), providers=["CPUExecutionProvider"])
        (want,) = sess.run(None, {"x": x})
        (got,) = XaiBackend.prepare(blocked).run([x])
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_a_shape_the_model_returns_is_not_folded_when_lifting():
    """A model returning ``Shape(x)`` beside an ArgMax over the batch axis is not lifted
    (the lifted tensor's shape would be another): the first refusal is raised."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [
            helper.make_node("ArgMax", ["x"], ["y"], axis=0),
            helper.make_node("Shape", ["x"], ["s"]),
        ],
        "argmax_and_shape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [
            helper.make_tensor_value_info("y", TensorProto.INT64, None),
            helper.make_tensor_value_info("s", TensorProto.INT64, None),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with pytest.raises(CapabilityError, match="ArgMax"):
        XaiBackend.prepare(model).run([np.ones((3, 4), np.float32)])


def test_an_output_whose_batch_axis_moved_is_named_as_such():
    """from_onnx refuses an output whose batch axis a Transpose moved, naming that node
    (not calling it a constant); the adapter then runs the model as one sample."""
    model = _one_node("Transpose", {"x": (None, 2, 3)}, {"perm": [1, 0, 2]})
    with pytest.raises(CapabilityError, match=r"batch axis at position 1 \(moved by node"):
        xai.from_onnx(model)
    X = np.random.default_rng(2).standard_normal((4, 2, 3)).astype(np.float32)
    (got,) = XaiBackend.prepare(model).run([X])
    np.testing.assert_array_equal(got, X.transpose(1, 0, 2))
