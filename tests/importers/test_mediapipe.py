"""MediaPipe's detection and landmark models (float32, float16 and sparse weights, several
outputs) read by from_tflite and run against LiteRT's reference kernels.

The files come from MediaPipe's wheel on PyPI (Apache 2.0), extracted by
``tests/fixtures/fetch_mediapipe.py`` into its cache directory; these tests never download.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import xai_core as xai

litert = pytest.importorskip(
    "ai_edge_litert.interpreter", reason="the tflite extra is not installed"
)

FETCH = Path(__file__).resolve().parents[1] / "fixtures" / "fetch_mediapipe.py"
_spec = importlib.util.spec_from_file_location("fetch_mediapipe", FETCH)
fetch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fetch)

SLOW = pytest.mark.slow
#: Every file MediaPipe ships that from_tflite reads (the > 5 s ones marked slow).
MODELS = [
    pytest.param("face_detection_short_range.tflite", id="face_detection_short_range"),
    pytest.param("face_detection_full_range_sparse.tflite", id="face_detection_full_range_sparse"),
    pytest.param("face_landmark.tflite", id="face_landmark"),
    pytest.param("hand_landmark_full.tflite", id="hand_landmark_full", marks=SLOW),
    pytest.param("hand_landmark_lite.tflite", id="hand_landmark_lite"),
    pytest.param("hand_recrop.tflite", id="hand_recrop"),
    pytest.param("iris_landmark.tflite", id="iris_landmark"),
    pytest.param("palm_detection_full.tflite", id="palm_detection_full", marks=SLOW),
    pytest.param("palm_detection_lite.tflite", id="palm_detection_lite", marks=SLOW),
    pytest.param("pose_detection.tflite", id="pose_detection", marks=SLOW),
    pytest.param("pose_landmark_full.tflite", id="pose_landmark_full", marks=SLOW),
    pytest.param("selfie_segmentation.tflite", id="selfie_segmentation"),
    pytest.param("selfie_segmentation_landscape.tflite", id="selfie_segmentation_landscape"),
]
TOLERANCE = 1e-5


def mediapipe(name: str) -> Path:
    """The extracted file: a failure in CI, a skip elsewhere, when it has not been fetched."""
    path = fetch.model_path(name)
    if not path.is_file():
        message = (
            f"MediaPipe's {name} is not in {path.parent}: run "
            "`python tests/fixtures/fetch_mediapipe.py` first (it downloads MediaPipe's wheel "
            "with pip and extracts the models)."
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def litert_bytes(path: Path) -> bytes:
    """The file as LiteRT's builtin kernels run it: MediaPipe's custom
    Convolution2DTransposeBias rewritten as the builtin TRANSPOSE_CONV it computes (same
    weights, bias, padding and strides; TRANSPOSE_CONV takes the output shape first)."""
    from xai_core.importers.tflite import read_tflite
    from xai_core.importers.tflite.writer import graph_to_bytes
    from xai_core.int8.graph import OperatorInfo, TensorInfo

    graph = read_tflite(path)
    if not any(op.custom_code for op in graph.operators):
        return path.read_bytes()
    tensors, operators = list(graph.tensors), []
    for op in graph.operators:
        if op.custom_code == "Convolution2DTransposeBias":
            out = tensors[op.outputs[0]]
            shape = np.asarray(out.shape, np.int32)
            tensors.append(
                TensorInfo(len(tensors), f"{out.name}/shape", (4,), shape.dtype, data=shape)
            )
            x, w, b = op.inputs
            op = OperatorInfo(
                op.index,
                "TRANSPOSE_CONV",
                (len(tensors) - 1, w, x, b),
                op.outputs,
                dict(op.options),
                None,
                "TransposeConvOptions",
            )
        operators.append(op)
    return graph_to_bytes(replace(graph, tensors=tuple(tensors), operators=tuple(operators)))


def interpreter(blob: bytes, resolver=None, keep: bool = False):
    it = litert.Interpreter(
        model_content=blob,
        experimental_op_resolver_type=resolver or litert.OpResolverType.BUILTIN_REF,
        experimental_preserve_all_tensors=keep,
    )
    it.allocate_tensors()
    return it


def invoke(it, row: np.ndarray) -> dict[str, np.ndarray]:
    it.set_tensor(it.get_input_details()[0]["index"], row[None])
    it.invoke()
    return {d["name"]: it.get_tensor(d["index"]).copy() for d in it.get_output_details()}


def inputs(model, n: int, seed: int = 0) -> np.ndarray:
    """Images in [0, 1), MediaPipe's input range."""
    return np.random.default_rng(seed).uniform(0, 1, (n, *model.input_shape)).astype(np.float32)


def error(ours: np.ndarray, ref: np.ndarray) -> float:
    """Largest difference over the output's scale (its largest magnitude, at least 1)."""
    return float(np.max(np.abs(ours - ref)) / max(float(np.max(np.abs(ref))), 1.0))


@pytest.mark.parametrize("name", MODELS)
def test_every_operator_equals_litert_reference_kernels(name):
    """Fed LiteRT's own inputs, each operator's float32 output is LiteRT's to 1e-5."""
    from xai_core.backends.cpu import CPUBackend

    model = xai.from_tflite(mediapipe(name))
    it = interpreter(litert_bytes(mediapipe(name)), keep=True)
    invoke(it, inputs(model, 1)[0])
    graph = model.graph
    for op, kernel in zip(graph.operators, model._kernels):
        args = [
            graph.tensors[t].data if graph.tensors[t].data is not None else it.get_tensor(t)
            for t in op.inputs
            if t >= 0
        ]
        ref = it.get_tensor(op.outputs[0])
        ours = kernel(op, graph.tensors, args, CPUBackend()).reshape(ref.shape)
        scale = float(np.max(np.abs(ref))) if ref.size else 0.0
        np.testing.assert_allclose(
            ours,
            ref,
            rtol=TOLERANCE,
            atol=TOLERANCE * scale + 1e-30,
            err_msg=f"{name}: {op.kind} (operator {op.index})",
        )


@pytest.mark.parametrize("name", MODELS)
def test_every_output_equals_litert(name):
    """Every output of the whole model equals LiteRT's reference kernels' to 1e-5 of its
    scale, or, where LiteRT's own optimised kernels disagree with its reference kernels by
    more, to twice that disagreement."""
    path = mediapipe(name)
    model = xai.from_tflite(path)
    assert len(model.outputs) == len(model.graph.outputs) >= 1
    blob = litert_bytes(path)
    reference = interpreter(blob)
    optimised = interpreter(blob, litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    X = inputs(model, 2, seed=1)
    ours = model.predict_outputs(X)
    assert list(ours) == list(model.outputs)
    for row in range(len(X)):
        ref, opt = invoke(reference, X[row]), invoke(optimised, X[row])
        assert set(ref) == set(ours)
        for out, value in ref.items():
            spread = error(opt[out], value)
            got = ours[out][row : row + 1]
            assert got.shape == value.shape, out
            # Both sides are float32 summed in different orders: LiteRT's optimised and
            # reference kernels differ by `spread`, and a multi-threaded BLAS blocks our sums
            # differently again (each operator alone equals LiteRT's to 1e-5, tested above).
            assert error(got, value) <= max(TOLERANCE, 4 * spread), (
                f"{name}: output {out!r}: error {error(got, value):.2e}, LiteRT's own "
                f"spread {spread:.2e}"
            )


def test_a_float_model_runs_on_cpu_and_gpu_and_is_refused_by_the_edge_tpu():
    """A float MediaPipe model runs on cpu (as predict does) and gpu (counted), and the
    edgetpu backend, which runs int8 models only, says so and what to do."""
    model = xai.from_tflite(mediapipe("hand_recrop.tflite"))
    assert not model.is_quantized and (model.placement_table().device == "host").all()
    X = inputs(model, 2, seed=2)
    cpu = xai.ModelRunner(model, "cpu").predict(X)
    np.testing.assert_array_equal(cpu, model.predict(X))
    gpu = xai.ModelRunner(model, "gpu")
    np.testing.assert_allclose(gpu.predict(X), cpu, rtol=1e-5, atol=1e-5 * np.abs(cpu).max())
    assert gpu.counters["cycles"] > 0
    with pytest.raises(xai.CapabilityError, match="int8"):
        xai.ModelRunner(model, "edgetpu").predict(X)


@SLOW
def test_one_output_of_a_landmark_model_is_explained():
    """explain(model.with_output(k)) explains the iris output of iris_landmark (black box)."""
    model = xai.from_tflite(mediapipe("iris_landmark.tflite"))
    assert model.outputs == ("output_eyes_contours_and_brows", "output_iris")
    iris = model.with_output("output_iris")
    X = inputs(model, 1, seed=3)
    e = xai.explain(iris, X, method="lime", target=2, seed=0, n_samples=20)
    assert e.values.shape == (1, 64, 64, 3) and np.isfinite(e.values).all()
    assert np.abs(e.values).sum() > 0
    np.testing.assert_array_equal(
        iris.predict(X), model.predict_outputs(X)["output_iris"].reshape(1, 15)
    )


def test_the_attention_face_mesh_is_refused_naming_every_custom_operator():
    """face_landmark_with_attention needs MediaPipe's own custom operators: one error names
    all three (and where each is), and lists what is supported."""
    with pytest.raises(xai.ModelFormatError) as info:
        xai.from_tflite(mediapipe("face_landmark_with_attention.tflite"))
    message = str(info.value)
    for op in ("Landmarks2TransformMatrix", "TransformTensorBilinear", "TransformLandmarks"):
        assert f"custom {op!r}" in message
    assert "Supported: " in message and "face_landmark_with_attention.tflite" in message


def test_the_licence_is_apache():
    """The extracted models come with MediaPipe's Apache 2.0 licence."""
    mediapipe("face_landmark.tflite")
    text = (fetch.cache_dir() / fetch.VERSION / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0" in text


def test_a_written_copy_runs_in_litert_like_the_original(tmp_path):
    """to_tflite of a MediaPipe model (its float16 weights folded to float32) is a file
    LiteRT runs with the original's outputs."""
    path = mediapipe("face_detection_short_range.tflite")
    model = xai.from_tflite(path)
    assert "DEQUANTIZE" not in model.operators
    copy = xai.to_tflite(model, tmp_path / "copy.tflite")
    X = inputs(model, 1, seed=4)
    original = invoke(interpreter(path.read_bytes()), X[0])
    written = invoke(interpreter(copy.read_bytes()), X[0])
    assert set(original) == set(written)
    for name, value in original.items():
        np.testing.assert_array_equal(written[name], value)
