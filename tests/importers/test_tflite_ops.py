"""TFLite operators one at a time: one-operator models written by xai-core, run by LiteRT's
reference kernels (the oracle) and by from_tflite."""

from __future__ import annotations

import numpy as np
import pytest

import xai_core as xai
from xai_core.importers.tflite.writer import graph_to_bytes
from xai_core.int8.graph import OperatorInfo, TensorInfo, TFLiteGraph

litert = pytest.importorskip(
    "ai_edge_litert.interpreter", reason="the tflite extra is not installed"
)
ROWS = 6
F32, I8, I32 = np.dtype(np.float32), np.dtype(np.int8), np.dtype(np.int32)


class Builder:
    """A one-subgraph graph, tensor by tensor (batch 1, as converters write)."""

    def __init__(self) -> None:
        self.tensors: list[TensorInfo] = []
        self.operators: list[OperatorInfo] = []

    def tensor(self, shape, dtype=F32, data=None, quant=None) -> int:
        scale = zp = None
        if quant is not None:
            scale = np.asarray([quant[0]], np.float32)
            zp = np.asarray([quant[1]], np.int64)
        k = len(self.tensors)
        if data is not None:
            data = np.asarray(data, dtype).reshape(shape)
        self.tensors.append(
            TensorInfo(k, f"t{k}", tuple(shape), np.dtype(dtype), scale, zp, 0, data)
        )
        return k

    def op(self, name, inputs, outputs, options_type=None, custom=None, **options) -> None:
        self.operators.append(
            OperatorInfo(
                len(self.operators),
                name,
                tuple(inputs),
                tuple(outputs),
                options,
                custom,
                options_type,
            )
        )

    def graph(self, inputs, outputs) -> TFLiteGraph:
        return TFLiteGraph(
            tuple(self.tensors), tuple(self.operators), tuple(inputs), tuple(outputs)
        )

    def bytes(self, inputs, outputs) -> bytes:
        return graph_to_bytes(self.graph(inputs, outputs))


def litert_run(blob: bytes, X: np.ndarray) -> list[np.ndarray]:
    """Every output of LiteRT's reference kernels, row by row (batch 1)."""
    it = litert.Interpreter(
        model_content=blob, experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF
    )
    it.allocate_tensors()
    index = it.get_input_details()[0]["index"]
    outs = [[] for _ in it.get_output_details()]
    for row in X:
        it.set_tensor(index, row[None])
        it.invoke()
        for k, d in enumerate(it.get_output_details()):
            outs[k].append(it.get_tensor(d["index"]).copy())
    return [np.concatenate(o) for o in outs]


def check(blob: bytes, X: np.ndarray, *, exact: bool) -> xai.TFLiteModel:
    """from_tflite's every output against LiteRT's: bit-identical, or to float32 rounding."""
    model = xai.from_tflite(blob)
    ours = model.run(X)
    for t, ref in zip(model.graph.outputs, litert_run(blob, X)):
        got = ours[t].reshape(ref.shape)
        if exact:
            np.testing.assert_array_equal(got, ref)
        else:
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    return model


def int8_inputs(shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(-128, 128, (ROWS, *shape)).astype(np.int8)


def float_inputs(shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 1, (ROWS, *shape)).astype(np.float32)


# -- RESIZE_BILINEAR ------------------------------------------------------------------------

RESIZES = [
    pytest.param((5, 7), (9, 12), {}, id="up"),
    pytest.param((8, 6), (3, 4), {}, id="down"),
    pytest.param((5, 7), (9, 12), {"AlignCorners": True}, id="up-align-corners"),
    pytest.param((8, 6), (3, 5), {"AlignCorners": True}, id="down-align-corners"),
    pytest.param((5, 7), (9, 12), {"HalfPixelCenters": True}, id="up-half-pixel"),
    pytest.param((8, 6), (3, 4), {"HalfPixelCenters": True}, id="down-half-pixel"),
    pytest.param((4, 4), (1, 1), {"AlignCorners": True}, id="to-one-pixel"),
]


def resize_model(src, dst, options, dtype) -> bytes:
    b = Builder()
    quant = (0.05, 3) if dtype == I8 else None
    x = b.tensor((1, *src, 3), dtype, quant=quant)
    size = b.tensor((2,), I32, data=dst)
    y = b.tensor((1, *dst, 3), dtype, quant=quant)
    defaults = {"AlignCorners": False, "HalfPixelCenters": False}
    b.op("RESIZE_BILINEAR", [x, size], [y], "ResizeBilinearOptions", **{**defaults, **options})
    return b.bytes([x], [y])


@pytest.mark.parametrize("src, dst, options", RESIZES)
def test_resize_bilinear_float_matches_litert(src, dst, options):
    """Float RESIZE_BILINEAR in every coordinate mode equals LiteRT's reference kernel."""
    check(resize_model(src, dst, options, F32), float_inputs((*src, 3)), exact=False)


@pytest.mark.parametrize("src, dst, options", RESIZES)
def test_resize_bilinear_int8_is_bit_identical_to_litert(src, dst, options):
    """Int8 RESIZE_BILINEAR (1/1024 positions, 2**20 rounding) gives LiteRT's integers."""
    check(resize_model(src, dst, options, I8), int8_inputs((*src, 3)), exact=True)


def test_resize_bilinear_refuses_both_coordinate_modes():
    """AlignCorners with HalfPixelCenters is refused, naming the options."""
    blob = resize_model((4, 4), (8, 8), {"AlignCorners": True, "HalfPixelCenters": True}, F32)
    with pytest.raises(xai.ModelFormatError, match="AlignCorners and HalfPixelCenters"):
        xai.from_tflite(blob)


# -- PRELU ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "alpha_shape", [(1, 1, 4), (4,), (5, 6, 4)], ids=["per-channel", "vector", "full"]
)
def test_prelu_float_matches_litert(alpha_shape):
    """Float PRELU with a broadcast constant slope equals LiteRT's kernel."""
    b = Builder()
    x = b.tensor((1, 5, 6, 4))
    alpha = b.tensor(alpha_shape, data=np.random.default_rng(1).uniform(-0.5, 0.5, alpha_shape))
    y = b.tensor((1, 5, 6, 4))
    b.op("PRELU", [x, alpha], [y])
    check(b.bytes([x], [y]), float_inputs((5, 6, 4)), exact=False)


# -- STRIDED_SLICE --------------------------------------------------------------------------

SLICES = [
    pytest.param([0, 1, 0, 1], [1, 4, 6, 3], [1, 1, 2, 1], {}, (1, 3, 3, 2), id="plain"),
    pytest.param([0, 3, 0, 0], [1, 0, 0, 0], [1, -1, 1, 1], {"EndMask": 0b1110}, (1, 4, 6, 3), id="reversed-rows"),
    pytest.param([0, 1, 2, 0], [1, 0, 0, 3], [1, 2, 1, 1], {"EndMask": 0b0110}, (1, 2, 4, 3), id="end-mask"),
    pytest.param([0, 2, 0, 1], [1, 0, 5, 3], [1, 1, 1, 1], {"BeginMask": 0b0100, "EndMask": 0b0010}, (1, 3, 5, 2), id="begin-mask"),
    pytest.param([0, 2, 0, 0], [1, 3, 6, 3], [1, 1, 1, 1], {"ShrinkAxisMask": 0b0010}, (1, 6, 3), id="shrink"),
    pytest.param([0, 1], [1, 2], [1, 1], {"ShrinkAxisMask": 0b10, "EndMask": 0}, (1, 6, 3), id="short-spec"),
    pytest.param([0, -3, 1, -2], [1, -1, 5, 3], [1, 1, 2, 1], {}, (1, 2, 2, 2), id="negative"),
]  # fmt: skip


@pytest.mark.parametrize("begin, end, strides, masks, out_shape", SLICES)
@pytest.mark.parametrize("dtype", [F32, I8], ids=["float", "int8"])
def test_strided_slice_matches_litert(begin, end, strides, masks, out_shape, dtype):
    """STRIDED_SLICE with begin, end, shrink masks and negative strides equals LiteRT's kernel."""
    b = Builder()
    quant = (0.1, -2) if dtype == I8 else None
    x = b.tensor((1, 5, 6, 3), dtype, quant=quant)
    consts = [b.tensor((len(begin),), I32, data=v) for v in (begin, end, strides)]
    y = b.tensor(out_shape, dtype, quant=quant)
    options = {"BeginMask": 0, "EndMask": 0, "EllipsisMask": 0, "NewAxisMask": 0}
    options.update({"ShrinkAxisMask": 0, "Offset": False, **masks})
    b.op("STRIDED_SLICE", [x, *consts], [y], "StridedSliceOptions", **options)
    X = int8_inputs((5, 6, 3)) if dtype == I8 else float_inputs((5, 6, 3))
    check(b.bytes([x], [y]), X, exact=True)


def test_strided_slice_of_the_batch_is_refused():
    """A slice that drops samples is refused: the kernels keep the batch axis."""
    b = Builder()
    x = b.tensor((2, 4))
    consts = [b.tensor((2,), I32, data=v) for v in ([1, 0], [2, 4], [1, 1])]
    y = b.tensor((1, 4))
    b.op("STRIDED_SLICE", [x, *consts], [y], "StridedSliceOptions")
    with pytest.raises(xai.ModelFormatError, match="batch axis"):
        xai.from_tflite(b.bytes([x], [y]))


# -- DEPTH_TO_SPACE -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [F32, I8], ids=["float", "int8"])
def test_depth_to_space_matches_litert(dtype):
    """DEPTH_TO_SPACE moves each channel block to its pixel as LiteRT does."""
    b = Builder()
    quant = (0.1, 1) if dtype == I8 else None
    x = b.tensor((1, 3, 4, 12), dtype, quant=quant)
    y = b.tensor((1, 6, 8, 3), dtype, quant=quant)
    b.op("DEPTH_TO_SPACE", [x], [y], "DepthToSpaceOptions", BlockSize=2)
    X = int8_inputs((3, 4, 12)) if dtype == I8 else float_inputs((3, 4, 12))
    check(b.bytes([x], [y]), X, exact=True)


# -- TRANSPOSE_CONV and MediaPipe's Convolution2DTransposeBias ------------------------------

TRANSPOSE_CONVS = [
    pytest.param((4, 5), (8, 10), 3, 2, 0, True, id="same-stride2-k3"),
    pytest.param((4, 5), (8, 10), 2, 2, 0, True, id="same-stride2-k2"),
    pytest.param((4, 5), (9, 11), 3, 2, 1, True, id="valid-stride2"),
    pytest.param((4, 5), (4, 5), 3, 1, 0, False, id="same-stride1-no-bias"),
    pytest.param((3, 3), (9, 9), 4, 3, 0, True, id="same-stride3-k4"),
]


@pytest.mark.parametrize("src, dst, k, stride, padding, bias", TRANSPOSE_CONVS)
def test_transpose_conv_float_matches_litert(src, dst, k, stride, padding, bias):
    """Float TRANSPOSE_CONV (SAME and VALID, strides, with and without bias) equals LiteRT's."""
    rng = np.random.default_rng(3)
    b = Builder()
    shape = b.tensor((4,), I32, data=[1, *dst, 5])
    w = b.tensor((5, k, k, 3), data=rng.normal(0, 1, (5, k, k, 3)))
    x = b.tensor((1, *src, 3))
    inputs = [shape, w, x]
    if bias:
        inputs.append(b.tensor((5,), data=rng.normal(0, 1, 5)))
    y = b.tensor((1, *dst, 5))
    b.op(
        "TRANSPOSE_CONV",
        inputs,
        [y],
        "TransposeConvOptions",
        Padding=padding,
        StrideH=stride,
        StrideW=stride,
    )
    check(b.bytes([x], [y]), float_inputs((*src, 3)), exact=False)


@pytest.mark.parametrize(
    "padding, src, dst", [(1, (4, 5), (8, 10)), (2, (4, 5), (9, 11))], ids=["same", "valid"]
)
def test_mediapipe_transpose_conv_bias_equals_litert_transpose_conv(padding, src, dst):
    """Convolution2DTransposeBias (its TfLiteTransposeConvParams read from the custom options)
    computes LiteRT's TRANSPOSE_CONV with the same weights, bias and padding."""
    rng = np.random.default_rng(4)
    weights, bias = rng.normal(0, 1, (2, 3, 3, 4)), rng.normal(0, 1, 2)
    custom = Builder()
    x = custom.tensor((1, *src, 4))
    w = custom.tensor((2, 3, 3, 4), data=weights)
    bb = custom.tensor((2,), data=bias)
    y = custom.tensor((1, *dst, 2))
    custom.op("CUSTOM", [x, w, bb], [y], custom="Convolution2DTransposeBias")
    params = np.array([padding, 2, 2], "<i4").tobytes()  # padding, stride width, stride height
    custom.operators[0] = OperatorInfo(
        0, "CUSTOM", (x, w, bb), (y,), {}, "Convolution2DTransposeBias", None, params
    )
    builtin = Builder()
    shape = builtin.tensor((4,), I32, data=[1, *dst, 2])
    w2 = builtin.tensor((2, 3, 3, 4), data=weights)
    x2 = builtin.tensor((1, *src, 4))
    b2 = builtin.tensor((2,), data=bias)
    y2 = builtin.tensor((1, *dst, 2))
    builtin.op(
        "TRANSPOSE_CONV",
        [shape, w2, x2, b2],
        [y2],
        "TransposeConvOptions",
        Padding=padding - 1,
        StrideH=2,
        StrideW=2,
    )
    X = float_inputs((*src, 4))
    model = xai.from_tflite(custom.bytes([x], [y]))
    assert model.graph.operators[0].options == {"Padding": padding - 1, "StrideW": 2, "StrideH": 2}
    (ref,) = litert_run(builtin.bytes([x2], [y2]), X)
    np.testing.assert_allclose(model.predict_outputs(X)["t3"], ref, rtol=1e-5, atol=1e-5)


def test_mediapipe_transpose_conv_bias_refuses_short_options():
    """Custom options shorter than TfLiteTransposeConvParams are refused, naming the operator."""
    b = Builder()
    x = b.tensor((1, 4, 4, 2))
    w = b.tensor((1, 2, 2, 2), data=np.ones(8))
    bb = b.tensor((1,), data=[0.0])
    y = b.tensor((1, 8, 8, 1))
    b.operators.append(
        OperatorInfo(
            0, "CUSTOM", (x, w, bb), (y,), {}, "Convolution2DTransposeBias", None, b"\x01\x00"
        )
    )
    with pytest.raises(xai.ModelFormatError, match="Convolution2DTransposeBias.*12"):
        xai.from_tflite(b.bytes([x], [y]))


# -- several outputs ------------------------------------------------------------------------


def two_output_model() -> bytes:
    b = Builder()
    x = b.tensor((1, 4, 4, 2))
    alpha = b.tensor((2,), data=[0.25, -0.5])
    y = b.tensor((1, 4, 4, 2))
    z = b.tensor((1, 4, 4, 2))
    b.op("PRELU", [x, alpha], [y])
    b.op("LOGISTIC", [x], [z])
    b.tensors[y] = TensorInfo(y, "boxes", (1, 4, 4, 2), F32)
    b.tensors[z] = TensorInfo(z, "scores", (1, 4, 4, 2), F32)
    return b.bytes([x], [y, z])


def test_every_output_of_a_two_output_model_matches_litert():
    """outputs names the file's outputs; predict_outputs gives each, as LiteRT computes them."""
    blob = two_output_model()
    model = check(blob, float_inputs((4, 4, 2)), exact=False)
    assert model.outputs == ("boxes", "scores")
    X = float_inputs((4, 4, 2), seed=1)
    out = model.predict_outputs(X)
    assert list(out) == ["boxes", "scores"] and out["scores"].shape == (ROWS, 4, 4, 2)
    for name, ref in zip(model.outputs, litert_run(blob, X)):
        np.testing.assert_allclose(out[name], ref, rtol=1e-6)


def test_with_output_is_a_view_on_one_output():
    """with_output (by name or index) predicts that output; explain(output=) explains it."""
    model = xai.from_tflite(two_output_model())
    X = float_inputs((4, 4, 2), seed=2)
    scores = model.with_output("scores")
    assert model.with_output(1).output == "scores" and model.with_output(0) is model
    np.testing.assert_array_equal(
        scores.predict(X), model.predict_outputs(X)["scores"].reshape(ROWS, -1)
    )
    np.testing.assert_array_equal(
        model.predict(X), model.predict_outputs(X)["boxes"].reshape(ROWS, -1)
    )
    assert scores.n_outputs == 32 and model.output == "boxes"
    with pytest.raises(xai.UnknownNameError, match="boxes, scores|'boxes', 'scores'"):
        model.with_output("landmarks")
    with pytest.raises(xai.ValidationError, match="out of range"):
        model.with_output(2)
    e = xai.explain(model, X[:2], method="shap", output="scores", target=5, background=X, seed=0)
    direct = xai.explain(scores, X[:2], method="shap", target=5, background=X, seed=0)
    np.testing.assert_array_equal(e.values, direct.values)
    assert e.values.shape == (2, 4, 4, 2)


def test_every_unsupported_operator_is_listed_in_one_error():
    """A file with several operators the kernels lack is refused once, naming each."""
    b = Builder()
    x = b.tensor((1, 4))
    y = b.tensor((1, 4))
    z = b.tensor((1, 4))
    b.op("SIN", [x], [y])
    b.op("CUSTOM", [y], [z], custom="TransformLandmarks")
    with pytest.raises(
        xai.ModelFormatError, match="SIN .*operator 0.*custom 'TransformLandmarks' .*operator 1"
    ):
        xai.from_tflite(b.bytes([x], [z]))


# -- DENSIFY: sparse constants --------------------------------------------------------------


def sparse_model(dense: np.ndarray, block: int | None, *, segments=None) -> bytes:
    """x (1, k) -> FULLY_CONNECTED with weights DENSIFY(sparse constant of ``dense``).

    The sparse tensor is CSR over rows (or, with ``block``, over blocks of ``block`` columns),
    written with LiteRT's own schema objects.
    """
    from ai_edge_litert import schema_py_generated as schema

    units, k = dense.shape
    b = Builder()
    x = b.tensor((1, k))
    w = b.tensor((units, k), data=dense)
    wd = b.tensor((units, k))
    y = b.tensor((1, units))
    b.op("DENSIFY", [w], [wd])
    b.op("FULLY_CONNECTED", [x, wd], [y], "FullyConnectedOptions")
    model = schema.ModelT.InitFromPackedBuf(b.bytes([x], [y]), 0)
    cols = k // (block or 1)
    blocks = dense.reshape(units, cols, block or 1)
    keep = np.abs(blocks).sum(axis=2) != 0  # (units, cols): the stored (blocks of) values
    counts = keep.sum(axis=1)
    seg = segments if segments is not None else np.concatenate([[0], np.cumsum(counts)])
    meta = [schema.DimensionMetadataT(), schema.DimensionMetadataT()]
    meta[0].format, meta[0].denseSize = schema.DimensionType.DENSE, units
    meta[1].format = schema.DimensionType.SPARSE_CSR
    meta[1].arraySegmentsType = schema.SparseIndexVector.Int32Vector
    meta[1].arraySegments = schema.Int32VectorT()
    meta[1].arraySegments.values = [int(s) for s in seg]
    meta[1].arrayIndicesType = schema.SparseIndexVector.Uint8Vector
    meta[1].arrayIndices = schema.Uint8VectorT()
    meta[1].arrayIndices.values = [int(c) for c in np.nonzero(keep)[1]]
    sparsity = schema.SparsityParametersT()
    sparsity.traversalOrder, sparsity.dimMetadata = [0, 1], meta
    if block:
        inner = schema.DimensionMetadataT()
        inner.format, inner.denseSize = schema.DimensionType.DENSE, block
        sparsity.traversalOrder, sparsity.blockMap = [0, 1, 2], [1]
        sparsity.dimMetadata = [*meta, inner]
    tensor = model.subgraphs[0].tensors[w]
    tensor.sparsity = sparsity
    values = blocks[keep].astype(np.float32).ravel()
    model.buffers[tensor.buffer].data = values.view(np.uint8).tolist()
    import flatbuffers

    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def sparse_weights(units: int, k: int, block: int) -> np.ndarray:
    rng = np.random.default_rng(8)
    dense = rng.normal(0, 1, (units, k)).astype(np.float32)
    mask = rng.uniform(0, 1, (units, k // block)) < 0.4
    return dense * np.repeat(mask, block, axis=1)


@pytest.mark.parametrize("block", [None, 2], ids=["csr", "block-csr"])
def test_densify_of_a_sparse_constant_matches_litert(block):
    """A sparse constant (CSR, or CSR of column blocks) read through DENSIFY equals LiteRT's."""
    dense = sparse_weights(5, 8, block or 1)
    blob = sparse_model(dense, block)
    model = check(blob, float_inputs((8,)), exact=False)
    assert "DENSIFY" not in model.operators  # folded into the constant
    np.testing.assert_array_equal(
        model.graph.tensors[model.graph.operators[0].inputs[1]].data, dense
    )


@pytest.mark.parametrize(
    "segments, match",
    [
        ([0, 1, 2, 30, 30, 30], "segment offsets"),
        ([0, 1, 2], "segment offsets for parent positions"),
        ([0, 3, 2, 4, 5, 6], "segment offsets"),
    ],
    ids=["past-the-indices", "too-few", "falling"],
)
def test_densify_refuses_inconsistent_sparsity(segments, match):
    """Segments that leave the index arrays, are too few or fall are refused before allocation."""
    blob = sparse_model(sparse_weights(5, 8, 1), None, segments=np.array(segments))
    with pytest.raises(xai.ModelFormatError, match=match):
        xai.from_tflite(blob)


# -- the Edge TPU ---------------------------------------------------------------------------


def slice_then_resize(stride: int) -> bytes:
    b = Builder()
    q = (0.05, 3)
    x = b.tensor((1, 6, 6, 3), I8, quant=q)
    consts = [b.tensor((4,), I32, data=v) for v in ([0, 0, 0, 0], [1, 6, 6, 3], [1, stride, 1, 1])]
    s = b.tensor((1, 6 // stride, 6, 3), I8, quant=q)
    b.op("STRIDED_SLICE", [x, *consts], [s], "StridedSliceOptions")
    size = b.tensor((2,), I32, data=[12 // stride, 12])
    y = b.tensor((1, 12 // stride, 12, 3), I8, quant=q)
    b.op("RESIZE_BILINEAR", [s, size], [y], "ResizeBilinearOptions", HalfPixelCenters=True)
    return b.bytes([x], [y])


@pytest.mark.parametrize("stride", [1, 2], ids=["stride-1", "stride-2"])
def test_edge_tpu_maps_unit_stride_slices_and_resizes(stride):
    """STRIDED_SLICE maps to the Edge TPU only with strides of 1 (Coral's table); RESIZE_BILINEAR
    maps; on edgetpu the integers are the cpu's (and LiteRT's) either way."""
    blob = slice_then_resize(stride)
    model = check(blob, int8_inputs((6, 6, 3)), exact=True)
    table = model.placement_table()
    if stride == 1:
        assert list(table.device) == ["edgetpu", "edgetpu"]
    else:
        assert list(table.device) == ["host", "host"] and "strides of 1" in table.reason[0]
    X = np.random.default_rng(9).uniform(-1, 1, (4, 6, 6, 3)).astype(np.float32)
    runner = xai.ModelRunner(model, "edgetpu")
    np.testing.assert_array_equal(runner.predict(X), xai.ModelRunner(model, "cpu").predict(X))
    assert runner.counters["edgetpu_operators"] == (table.device == "edgetpu").sum()


# -- SHAPE and PACK -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [F32, I8], ids=["float", "int8"])
def test_a_reshape_to_a_computed_shape_matches_litert(dtype):
    """SHAPE -> STRIDED_SLICE (shrink) -> PACK with a constant -> RESHAPE: the shape arithmetic
    converters write folds to a constant, and the reshape runs on any batch as LiteRT's."""
    b = Builder()
    quant = (0.1, 0) if dtype == I8 else None
    x = b.tensor((1, 4, 6), dtype, quant=quant)
    shape = b.tensor((3,), I32)
    b.op("SHAPE", [x], [shape], "ShapeOptions", OutType=2)
    consts = [b.tensor((1,), I32, data=v) for v in ([0], [1], [1])]
    batch = b.tensor((), I32)
    b.op("STRIDED_SLICE", [shape, *consts], [batch], "StridedSliceOptions", ShrinkAxisMask=1)
    width = b.tensor((), I32, data=24)
    target = b.tensor((2,), I32)
    b.op("PACK", [batch, width], [target], "PackOptions", ValuesCount=2, Axis=0)
    y = b.tensor((1, 24), dtype, quant=quant)
    b.op("RESHAPE", [x, target], [y], "ReshapeOptions")
    X = int8_inputs((4, 6)) if dtype == I8 else float_inputs((4, 6))
    model = check(b.bytes([x], [y]), X, exact=True)
    assert model.operators == ["RESHAPE"]  # SHAPE, STRIDED_SLICE and PACK folded


@pytest.mark.parametrize("axis", [1, 2, -1], ids=["axis-1", "axis-2", "axis-minus-1"])
@pytest.mark.parametrize("dtype", [F32, I8], ids=["float", "int8"])
def test_pack_of_activations_matches_litert(axis, dtype):
    """PACK of computed tensors along a new non-batch axis equals LiteRT's kernel."""
    b = Builder()
    quant = (0.1, -3) if dtype == I8 else None
    x = b.tensor((1, 3, 4), dtype, quant=quant)
    r = b.tensor((1, 3, 4), dtype, quant=quant)
    b.op("RELU", [x], [r])
    out_shape = {1: (1, 2, 3, 4), 2: (1, 3, 2, 4), -1: (1, 3, 4, 2)}[axis]
    y = b.tensor(out_shape, dtype, quant=quant)
    b.op("PACK", [x, r], [y], "PackOptions", ValuesCount=2, Axis=axis)
    X = int8_inputs((3, 4)) if dtype == I8 else float_inputs((3, 4))
    check(b.bytes([x], [y]), X, exact=True)


def test_pack_along_the_batch_axis_is_refused():
    """PACK along axis 0 would stack samples: refused, naming the batch axis."""
    b = Builder()
    x = b.tensor((1, 4))
    r = b.tensor((1, 4))
    b.op("RELU", [x], [r])
    y = b.tensor((2, 1, 4))
    b.op("PACK", [x, r], [y], "PackOptions", ValuesCount=2, Axis=0)
    with pytest.raises(xai.ModelFormatError, match="batch axis"):
        xai.from_tflite(b.bytes([x], [y]))


@pytest.mark.parametrize("alpha_shape", [(1, 1, 4), (4,)], ids=["per-channel", "vector"])
def test_prelu_int8_is_bit_identical_to_litert(alpha_shape):
    """Int8 PRELU (two fixed-point rescalings, one per sign) gives LiteRT's integers."""
    b = Builder()
    x = b.tensor((1, 5, 6, 4), I8, quant=(0.05, 4))
    slopes = np.random.default_rng(5).integers(-128, 128, alpha_shape)
    alpha = b.tensor(alpha_shape, I8, data=slopes, quant=(0.004, 2))
    y = b.tensor((1, 5, 6, 4), I8, quant=(0.03, -7))
    b.op("PRELU", [x, alpha], [y])
    check(b.bytes([x], [y]), int8_inputs((5, 6, 4)), exact=True)


@pytest.mark.parametrize("src, dst, k, stride, padding, bias", TRANSPOSE_CONVS)
def test_transpose_conv_int8_is_bit_identical_to_litert(src, dst, k, stride, padding, bias):
    """Int8 TRANSPOSE_CONV (per-channel weights, int32 bias) gives LiteRT's integers."""
    rng = np.random.default_rng(6)
    b = Builder()
    shape = b.tensor((4,), I32, data=[1, *dst, 5])
    w = b.tensor((5, k, k, 3), I8, data=rng.integers(-127, 128, (5, k, k, 3)))
    scales = rng.uniform(0.002, 0.01, 5).astype(np.float32)
    b.tensors[w] = TensorInfo(
        w, "w", (5, k, k, 3), I8, scales, np.zeros(5, np.int64), 0, b.tensors[w].data
    )
    x = b.tensor((1, *src, 3), I8, quant=(0.05, -4))
    inputs = [shape, w, x]
    if bias:
        bias_t = b.tensor((5,), I32, data=rng.integers(-2000, 2000, 5))
        b.tensors[bias_t] = TensorInfo(
            bias_t,
            "b",
            (5,),
            I32,
            scales * np.float32(0.05),
            np.zeros(5, np.int64),
            0,
            b.tensors[bias_t].data,
        )
        inputs.append(bias_t)
    y = b.tensor((1, *dst, 5), I8, quant=(0.08, 6))
    b.op(
        "TRANSPOSE_CONV",
        inputs,
        [y],
        "TransposeConvOptions",
        Padding=padding,
        StrideH=stride,
        StrideW=stride,
    )
    check(b.bytes([x], [y]), int8_inputs((*src, 3)), exact=True)


def test_densify_refuses_a_dense_shape_past_the_format_limit():
    """A sparse constant declaring 16 GB dense is refused before anything is allocated."""
    from ai_edge_litert import schema_py_generated as schema

    model = schema.ModelT.InitFromPackedBuf(sparse_model(sparse_weights(5, 8, 1), None), 0)
    tensor = next(t for t in model.subgraphs[0].tensors if t.sparsity is not None)
    tensor.shape = [2**20, 2**12]
    tensor.sparsity.dimMetadata[0].denseSize = 2**20
    import flatbuffers

    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    with pytest.raises(xai.ModelFormatError, match="2 GB"):
        xai.from_tflite(bytes(builder.Output()))


def encode_sparse(dense: np.ndarray, formats: str):
    """TFLite's sparse encoding of ``dense`` (traversal in axis order): ``formats`` has one
    letter per axis, ``d`` (DENSE) or ``s`` (SPARSE_CSR, keeping the children with a non-zero
    below them). Returns the DimensionMetadata values and the stored values."""
    paths, meta = [()], []
    for axis, kind in enumerate(formats):
        size = dense.shape[axis]
        if kind == "d":
            paths = [p + (i,) for p in paths for i in range(size)]
            meta.append(("d", size))
            continue
        segments, indices, kept = [0], [], []
        for p in paths:
            for i in range(size):
                if np.any(dense[p + (i,)] != 0):
                    indices.append(i)
                    kept.append(p + (i,))
            segments.append(len(indices))
        paths = kept
        meta.append(("s", segments, indices))
    return meta, np.array([dense[p] for p in paths], np.float32)


def test_densify_of_several_sparse_levels_matches_litert():
    """A 4-D sparse constant with two CSR levels, DENSIFY then ADD to the input, equals LiteRT."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    rng = np.random.default_rng(11)
    dense = rng.normal(0, 1, (1, 4, 3, 5)).astype(np.float32)
    dense *= rng.uniform(0, 1, dense.shape) < 0.3
    dense[0, 2] = 0  # a whole empty row of the first sparse level
    b = Builder()
    x = b.tensor((1, 4, 3, 5))
    c = b.tensor((1, 4, 3, 5), data=dense)
    cd = b.tensor((1, 4, 3, 5))
    y = b.tensor((1, 4, 3, 5))
    b.op("DENSIFY", [c], [cd])
    b.op("ADD", [x, cd], [y], "AddOptions")
    model = schema.ModelT.InitFromPackedBuf(b.bytes([x], [y]), 0)
    meta, values = encode_sparse(dense, "ddss")
    dims = []
    for m in meta:
        dm = schema.DimensionMetadataT()
        if m[0] == "d":
            dm.format, dm.denseSize = schema.DimensionType.DENSE, m[1]
        else:
            dm.format = schema.DimensionType.SPARSE_CSR
            dm.arraySegmentsType = schema.SparseIndexVector.Uint16Vector
            dm.arraySegments = schema.Uint16VectorT()
            dm.arraySegments.values = m[1]
            dm.arrayIndicesType = schema.SparseIndexVector.Int32Vector
            dm.arrayIndices = schema.Int32VectorT()
            dm.arrayIndices.values = m[2]
        dims.append(dm)
    tensor = model.subgraphs[0].tensors[c]
    tensor.sparsity = schema.SparsityParametersT()
    tensor.sparsity.traversalOrder, tensor.sparsity.dimMetadata = [0, 1, 2, 3], dims
    model.buffers[tensor.buffer].data = values.view(np.uint8).tolist()
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    blob = bytes(builder.Output())
    ours = check(blob, float_inputs((4, 3, 5)), exact=True)
    np.testing.assert_array_equal(ours.graph.tensors[c].data, dense)
