"""from_tflite: TFLite files made by TensorFlow's converter, run against the LiteRT interpreter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import xai_core as xai

litert = pytest.importorskip(
    "ai_edge_litert.interpreter", reason="the tflite extra is not installed"
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tflite"
INT8 = [
    "cnn_int8",
    "separable_int8",
    "mlp_int8",
    "elementwise_int8",
    "mlp_int8_float_io",
    "cnn_int8_uint8_io",
]
FLOAT = ["cnn_float", "separable_float", "mlp_float", "elementwise_float"]
ROWS = 200


def reference(name: str):
    """LiteRT with its reference kernels, keeping every intermediate tensor."""
    it = litert.Interpreter(
        str(FIXTURES / f"{name}.tflite"),
        experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF,
        experimental_preserve_all_tensors=True,
    )
    it.allocate_tensors()
    return it


def random_inputs(it, n: int, seed: int = 0) -> np.ndarray:
    """Inputs of the interpreter's input type: every int8 / uint8 value, or floats in [0, 1)."""
    detail = it.get_input_details()[0]
    rng = np.random.default_rng(seed)
    shape = (n, *detail["shape"][1:])
    if detail["dtype"] in (np.int8, np.uint8):
        info = np.iinfo(detail["dtype"])
        return rng.integers(info.min, info.max + 1, shape).astype(detail["dtype"])
    return rng.uniform(0, 1, shape).astype(np.float32)


def run_reference(it, X: np.ndarray, tensors: list[int]) -> dict[int, np.ndarray]:
    """Each listed tensor for each row of X (the interpreter runs batch 1)."""
    detail = it.get_input_details()[0]
    out: dict[int, list[np.ndarray]] = {t: [] for t in tensors}
    for row in X:
        it.set_tensor(detail["index"], row[None])
        it.invoke()
        for t in tensors:
            out[t].append(it.get_tensor(t).copy())
    return {t: np.concatenate(v) for t, v in out.items()}


@pytest.mark.parametrize("name", INT8)
def test_every_int8_operator_equals_litert_reference_kernels(name):
    """Each operator's int8 output equals LiteRT's reference kernel on every value, fed the same inputs."""
    model = xai.from_tflite(FIXTURES / f"{name}.tflite")
    it = reference(name)
    X = random_inputs(it, ROWS)
    graph = model.graph
    wanted = sorted(
        {
            t
            for op in graph.operators
            for t in (*op.inputs, *op.outputs)
            if t >= 0 and graph.tensors[t].data is None
        }
    )
    ref = run_reference(it, X, wanted)
    from xai_core.backends.cpu import CPUBackend

    for op, kernel in zip(graph.operators, model._kernels):
        args = [
            ref[t] if graph.tensors[t].data is None else graph.tensors[t].data
            for t in op.inputs
            if t >= 0
        ]
        ours = kernel(op, graph.tensors, args, CPUBackend())
        expected = ref[op.outputs[0]]
        np.testing.assert_array_equal(
            ours.reshape(expected.shape), expected, err_msg=f"{name}: {op.op} (operator {op.index})"
        )


@pytest.mark.parametrize("name", INT8)
def test_int8_model_end_to_end_equals_litert(name):
    """The whole int8 pipeline, our integers throughout, equals LiteRT's output on every row."""
    model = xai.from_tflite(FIXTURES / f"{name}.tflite")
    it = reference(name)
    X = random_inputs(it, ROWS, seed=1)
    out = model.graph.outputs[0]
    np.testing.assert_array_equal(model.run(X)[out], run_reference(it, X, [out])[out])


@pytest.mark.parametrize("name", FLOAT)
def test_float_model_matches_litert(name):
    """Float32 kernels agree with LiteRT's float kernels to fp32 rounding."""
    model = xai.from_tflite(FIXTURES / f"{name}.tflite")
    it = reference(name)
    X = random_inputs(it, 50)
    out = model.graph.outputs[0]
    np.testing.assert_allclose(
        model.predict(X), run_reference(it, X, [out])[out].reshape(50, -1), atol=1e-5
    )


@pytest.mark.parametrize("backend", ["gpu", "tpu", "edgetpu"])
def test_int8_model_is_bit_identical_on_every_backend(backend):
    """The int8 depthwise-separable model gives the cpu's integers on every backend, and each counts the MACs."""
    model = xai.from_tflite(FIXTURES / "separable_int8.tflite")
    X = np.random.default_rng(2).uniform(0, 1, (30, 12, 12, 3)).astype(np.float32)
    cpu = xai.ModelRunner(model, "cpu")
    runner = xai.ModelRunner(model, backend)
    np.testing.assert_array_equal(runner.predict(X), cpu.predict(X))
    # every product of the 30 images is counted (17,920 MACs per image); on the Edge TPU the
    # operators after the unmapped HARD_SWISH are counted on its host
    c = runner.counters
    assert c["macs"] + c.get("host_macs", 0) == cpu.counters["macs"] == 30 * macs_per_image(model)


def macs_per_image(model) -> int:
    """Multiply-accumulates of one image through the convolutions and dense layers, from the shapes."""
    total = 0
    for op in model.graph.operators:
        out = model.graph.tensors[op.outputs[0]].shape
        if op.op in ("CONV_2D", "FULLY_CONNECTED"):
            w = model.graph.tensors[op.inputs[1]].shape
            total += int(np.prod(out)) * int(np.prod(w[1:]))
        elif op.op == "DEPTHWISE_CONV_2D":
            w = model.graph.tensors[op.inputs[1]].shape
            total += int(np.prod(out)) * w[1] * w[2]
    return total


def test_predict_quantises_real_inputs_as_tflite_does():
    """predict() on real values equals LiteRT on the same values through its QUANTIZE op."""
    int8_io = xai.from_tflite(FIXTURES / "mlp_int8.tflite")
    float_io = reference("mlp_int8_float_io")
    X = np.random.default_rng(3).uniform(0, 1, (40, 20)).astype(np.float32)
    out = float_io.get_output_details()[0]["index"]
    expected = run_reference(float_io, X, [out])[out]
    np.testing.assert_array_equal(
        xai.from_tflite(FIXTURES / "mlp_int8_float_io.tflite").predict(X), expected
    )
    assert int8_io.predict(X).shape == (40, 3)


def test_model_describes_itself():
    """Input shape, image layout, quantisation and operators are read from the file."""
    m = xai.from_tflite(FIXTURES / "cnn_int8.tflite", output_names=list("abcde"))
    assert m.input_shape == (12, 12, 1) and m.image_shape == (12, 12, 1)
    assert m.is_quantized and m.n_outputs == 5 and m.output_names == tuple("abcde")
    assert m.operators[0] == "CONV_2D" and "int8" in repr(m)
    assert not xai.from_tflite(FIXTURES / "cnn_float.tflite").is_quantized


def test_activations_of_a_named_operator():
    """activations() reads any operator's output by index or tensor name, dequantised."""
    m = xai.from_tflite(FIXTURES / "cnn_int8.tflite")
    X = np.random.default_rng(4).uniform(0, 1, (3, 12, 12, 1)).astype(np.float32)
    by_index = m.activations(X, 1)
    name = m.graph.tensors[m.graph.operators[1].outputs[0]].name
    np.testing.assert_array_equal(m.activations(X, name), by_index)
    assert by_index.shape == (3, 6, 6, 4) and by_index.dtype == np.float32
    with pytest.raises(xai.UnknownNameError):
        m.activations(X, "no such tensor")


@pytest.mark.parametrize("method", ["shap", "lime"])
def test_an_int8_tflite_model_is_explained_on_the_edge_tpu(method):
    """Black-box methods explain an int8 .tflite model on the edgetpu backend."""
    m = xai.from_tflite(FIXTURES / "mlp_int8.tflite")
    X = np.random.default_rng(5).uniform(0, 1, (2, 20)).astype(np.float32)
    options = {"background": X} if method == "shap" else {"training_data": X}
    e = xai.explain(m, X, method=method, backend="edgetpu", seed=0, **options)
    assert e.values.shape == (2, 20) and np.isfinite(e.values).all() and e.backend == "edgetpu"


def test_gradient_methods_get_a_clear_error():
    """IG on a .tflite model says why and what to use instead."""
    m = xai.from_tflite(FIXTURES / "mlp_float.tflite")
    with pytest.raises(xai.CapabilityError, match="predictions|gradient"):
        xai.explain(m, np.zeros((1, 20), np.float32), method="ig")


@pytest.mark.parametrize(
    "blob, match",
    [
        (b"", "TFL3"),
        (b"\x00" * 64, "TFL3"),
        (b"\x18\x00\x00\x00TFL3" + b"\xff" * 40, "corrupt"),
    ],
    ids=["empty", "zeros", "garbage"],
)
def test_hostile_bytes_are_refused(blob, match):
    """Files that are not TFLite flatbuffers raise ModelFormatError, never a raw error."""
    with pytest.raises(xai.ModelFormatError, match=match):
        xai.from_tflite(blob)


def test_truncated_file_is_refused():
    """A fixture cut in half is refused with ModelFormatError."""
    blob = (FIXTURES / "cnn_int8.tflite").read_bytes()
    with pytest.raises(xai.ModelFormatError):
        xai.from_tflite(blob[: len(blob) // 2])


def test_missing_file_names_the_path(tmp_path):
    """A path that is not a file is named in the error."""
    with pytest.raises(xai.ModelFormatError, match="not a file"):
        xai.from_tflite(tmp_path / "missing.tflite")


def test_output_names_must_match_the_outputs():
    """Five outputs need five names."""
    with pytest.raises(xai.ModelFormatError, match="5 names"):
        xai.from_tflite(FIXTURES / "cnn_int8.tflite", output_names=["a", "b"])


def test_written_file_runs_in_litert_like_the_original(tmp_path):
    """to_tflite of a read model is a file LiteRT runs with the same integers as the original."""
    model = xai.from_tflite(FIXTURES / "separable_int8.tflite")
    path = xai.to_tflite(model, tmp_path / "copy.tflite")
    original, copy = (
        reference("separable_int8"),
        litert.Interpreter(
            str(path), experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF
        ),
    )
    copy.allocate_tensors()
    X = random_inputs(original, 20, seed=6)
    out_a, out_b = original.get_output_details()[0]["index"], copy.get_output_details()[0]["index"]
    np.testing.assert_array_equal(
        run_reference(copy, X, [out_b])[out_b], run_reference(original, X, [out_a])[out_a]
    )
    assert xai.from_tflite(path).operators == model.operators


def test_to_tflite_refuses_what_is_not_a_network():
    """A black box has no graph to write."""
    with pytest.raises(xai.CapabilityError, match="native networks"):
        xai.to_tflite(xai.as_model(lambda X: X), "unused.tflite")


def test_edge_tpu_placement_stops_at_the_first_unmapped_operator():
    """HARD_SWISH is not mapped, so it and everything after it run on the host CPU."""
    m = xai.from_tflite(FIXTURES / "separable_int8.tflite")
    table = m.placement_table()
    first = table.index[table.device == "host"][0]
    assert table.op[first] == "HARD_SWISH" and table.reason[first] == "Operation not supported"
    assert (table.device[:first] == "edgetpu").all() and (table.device[first:] == "host").all()
    assert (table.reason[first + 1 :] == "More than one subgraph is not supported").all()


def test_edge_tpu_counts_each_device_share():
    """On edgetpu the mapped part is counted on the array and the rest on the host, with the same integers."""
    m = xai.from_tflite(FIXTURES / "separable_int8.tflite")
    X = np.random.default_rng(7).uniform(0, 1, (10, 12, 12, 3)).astype(np.float32)
    runner = xai.ModelRunner(m, "edgetpu")
    np.testing.assert_array_equal(runner.predict(X), xai.ModelRunner(m, "cpu").predict(X))
    table = m.placement_table()
    c = runner.counters
    # one batch: each operator runs once, on its device
    assert c["edgetpu_operators"] == (table.device == "edgetpu").sum()
    assert c["host_operators"] == (table.device == "host").sum()
    assert c["macs"] == 10 * table.macs[table.device == "edgetpu"].sum() > 0
    assert c["host_macs"] == 10 * table.macs[table.device == "host"].sum() > 0
    assert c["total_est_seconds"] == pytest.approx(c["est_seconds"] + c["host_est_seconds"])


def test_a_fully_mapped_model_runs_wholly_on_the_edge_tpu():
    """The uint8-input CNN maps every operator, QUANTIZE included."""
    m = xai.from_tflite(FIXTURES / "cnn_int8_uint8_io.tflite")
    assert (m.placement_table().device == "edgetpu").all()
    runner = xai.ModelRunner(m, "edgetpu")
    runner.predict(np.zeros((2, 12, 12, 1), np.float32))
    assert runner.counters["host_operators"] == 0 and runner.counters["host_macs"] == 0


def test_float_input_quantize_runs_on_the_host_ahead_of_the_edge_tpu():
    """A float model input's QUANTIZE stays on the host without ending the mapped part; DEQUANTIZE is not mapped."""
    table = xai.from_tflite(FIXTURES / "mlp_int8_float_io.tflite").placement_table()
    assert list(table.device) == ["host"] + ["edgetpu"] * 7 + ["host"]


def test_float_models_stay_on_the_host():
    """Float operators do not map: the compiler needs 8-bit tensors."""
    table = xai.from_tflite(FIXTURES / "cnn_float.tflite").placement_table()
    assert (table.device == "host").all()
    assert table.reason[0] == "Operation is working on an unsupported data type"


def test_a_file_compiled_for_the_edge_tpu_points_to_the_uncompiled_one():
    """A graph holding edgetpu-custom-op (what the compiler writes) is refused with the reason."""
    from dataclasses import replace

    from xai_core.importers.tflite import read_tflite
    from xai_core.importers.tflite.writer import graph_to_bytes

    graph = read_tflite(FIXTURES / "mlp_int8.tflite")
    first = graph.operators[0]
    custom = replace(
        first, op="CUSTOM", options={}, options_type=None, custom_code="edgetpu-custom-op"
    )
    compiled = replace(graph, operators=(custom, *graph.operators[1:]))
    with pytest.raises(
        xai.ModelFormatError, match="compiled for the Edge TPU.*without the _edgetpu suffix"
    ):
        xai.from_tflite(graph_to_bytes(compiled))


def test_an_unsupported_operator_is_named_with_the_supported_list():
    """An operator outside the kernels is refused up front, naming it and what is supported."""
    from dataclasses import replace

    from xai_core.importers.tflite import read_tflite
    from xai_core.importers.tflite.writer import graph_to_bytes

    graph = read_tflite(FIXTURES / "mlp_int8.tflite")
    odd = replace(graph.operators[2], op="SIN", options={}, options_type=None)
    ops = (*graph.operators[:2], odd, *graph.operators[3:])
    with pytest.raises(
        xai.ModelFormatError,
        match=r"unsupported TFLite operators: SIN \(operator 2.*Supported: ADD",
    ):
        xai.from_tflite(graph_to_bytes(replace(graph, operators=ops)))
