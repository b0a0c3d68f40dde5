"""ONNX operators on tensors and shapes: values against onnxruntime, gradients against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

import xai_core as xai
from xai_core.errors import CapabilityError, ResourceError

from .conftest import ort_run

RNG = np.random.default_rng(31)

#: Operators these cases cover (the completeness check of ``test_onnx_ops`` reads it).
TESTED = {
    "MaxPool",
    "AveragePool",
    "ConstantOfShape",
    "Expand",
    "Range",
    "Split",
    "Equal",
    "Where",
    "Not",
    "Mod",
    "ScatterND",
    "MatMul",
    "Slice",
    "DepthToSpace",
    "Resize",
    "Ceil",
    "Floor",
}


#: The Unsqueeze case's (1, 1, 3, 4) factor.
SCALE = (np.random.default_rng(7).standard_normal((1, 1, 3, 4)) * 0.5).astype(np.float32)


def w(*shape):
    return (RNG.standard_normal(shape) * 0.5).astype(np.float32)


def i64(*values):
    return np.array(values, dtype=np.int64)


def model(nodes, shape, inits=None, opset=17):
    """A model reading ``x`` of per-sample ``shape`` (batch dynamic), writing ``y``."""
    graph = helper.make_graph(
        nodes,
        "tensor_ops",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", *shape])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=f"{op.lower()}_{outs[0]}", **attrs)


def pool(op, shape, opset=17, **attrs):
    return model([node(op, ["x"], ["y"], **attrs)], shape, opset=opset)


def fill(value, dtype=np.float32):
    return numpy_helper.from_array(np.array([value], dtype=dtype))


def resize(shape, scales=None, sizes=None, roi=(), opset=13, **attrs):
    """A Resize by constant scales, or to sizes (n, c, *sizes) built from the input's shape."""
    inits = {"roi": np.float32(roi), "sc": np.float32(scales or [])}
    ins, nodes = ["x", "roi", "sc"], []
    if sizes is not None:
        inits = {"hw": i64(*sizes), "s0": i64(0), "s2": i64(2)}
        nodes = [
            node("Shape", ["x"], ["shp"]),
            node("Slice", ["shp", "s0", "s2"], ["nc"]),
            node("Concat", ["nc", "hw"], ["sz"], axis=0),
        ]
        ins = ["x", "", "", "sz"]
    return model([*nodes, node("Resize", ins, ["y"], **attrs)], shape, inits, opset=opset)


def _resize_torch(mode, scale, align=None, size=None, antialias=False):
    def fn(x):
        kw = {"size": size} if size else {"scale_factor": scale}
        return F.interpolate(x, mode=mode, align_corners=align, antialias=antialias, **kw)

    return fn


# -- the cases: (ONNX model, per-sample shape, the same function in torch) ---------------
C3 = w(2, 5, 3)
VEC3, VEC4 = w(3), w(4)
COND = np.array([[True, False, True, True]])
SCATTER = np.array([0.0, 2.0, 0.0, -1.0], np.float32)

CASES = {
    # pooling the native layers do not cover, by gathering each window's taps
    "MaxPool_dilated": (
        pool(
            "MaxPool",
            (2, 7, 8),
            kernel_shape=[2, 3],
            dilations=[2, 1],
            strides=[1, 2],
            pads=[1, 1, 1, 1],
        ),
        (2, 7, 8),
        lambda x: F.max_pool2d(x, (2, 3), stride=(1, 2), padding=1, dilation=(2, 1)),
    ),
    "MaxPool_3d_ceil": (
        pool(
            "MaxPool",
            (2, 6, 6, 5),
            kernel_shape=[2, 3, 2],
            strides=[2, 1, 2],
            pads=[1, 1, 0, 1, 1, 0],
            ceil_mode=1,
        ),
        (2, 6, 6, 5),
        lambda x: F.max_pool3d(x, (2, 3, 2), stride=(2, 1, 2), padding=(1, 1, 0), ceil_mode=True),
    ),
    "AveragePool_3d_ceil_padding_not_counted": (
        pool(
            "AveragePool",
            (2, 5, 6, 7),
            kernel_shape=[3] * 3,
            strides=[2] * 3,
            pads=[1] * 6,
            ceil_mode=1,
        ),
        (2, 5, 6, 7),
        lambda x: F.avg_pool3d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    ),
    "AveragePool_dilated_padding_counted": (
        pool(
            "AveragePool",
            (3, 8, 7),
            opset=19,
            kernel_shape=[3, 2],
            dilations=[2, 3],
            pads=[2, 1, 2, 0],
            count_include_pad=1,
        ),
        (3, 8, 7),
        None,
    ),
    "AveragePool_pads_wider_than_half_the_kernel": (
        pool("AveragePool", (2, 5, 6), kernel_shape=[3, 3], pads=[2, 2, 2, 1]),
        (2, 5, 6),
        None,
    ),
    "LpPool_1d": (
        pool("LpPool", (3, 9), kernel_shape=[3], strides=[2]),
        (3, 9),
        lambda x: F.lp_pool1d(x, 2, 3, stride=2),
    ),
    "LpPool_dilated_p3": (
        pool("LpPool", (2, 7, 6), opset=18, kernel_shape=[2, 2], dilations=[2, 2], p=3),
        (2, 7, 6),
        None,
    ),
    "MaxPool_ceil": (
        pool("MaxPool", (3, 7, 8), kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        (3, 7, 8),
        lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True),
    ),
    "MaxPool_ceil_pads": (
        pool("MaxPool", (2, 6, 7), kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4, ceil_mode=1),
        (2, 6, 7),
        lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True),
    ),
    "MaxPool_ceil_asymmetric_pads": (
        pool(
            "MaxPool",
            (2, 7, 6),
            kernel_shape=[2, 3],
            strides=[2, 2],
            pads=[0, 1, 1, 0],
            ceil_mode=1,
        ),
        (2, 7, 6),
        None,
    ),
    "AveragePool_ceil_exclude_pad": (
        pool("AveragePool", (3, 7, 9), kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        (3, 7, 9),
        lambda x: F.avg_pool2d(x, 2, 2, ceil_mode=True, count_include_pad=False),
    ),
    "AveragePool_ceil_pads_exclude_pad": (
        pool(
            "AveragePool", (2, 6, 7), kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4, ceil_mode=1
        ),
        (2, 6, 7),
        lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
    ),
    "AveragePool_ceil_pads_include_pad": (
        pool(
            "AveragePool",
            (2, 6, 7),
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1] * 4,
            ceil_mode=1,
            count_include_pad=1,
        ),
        (2, 6, 7),
        lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=True),
    ),
    "AveragePool_ceil_include_pad_no_pads": (
        pool(
            "AveragePool",
            (2, 7, 5),
            kernel_shape=[3, 2],
            strides=[2, 2],
            ceil_mode=1,
            count_include_pad=1,
        ),
        (2, 7, 5),
        lambda x: F.avg_pool2d(x, (3, 2), 2, ceil_mode=True, count_include_pad=True),
    ),
    "Expand_two_way": (
        model([node("Expand", ["x", "s"], ["y"])], (3, 1, 4), {"s": i64(3, 5, 1)}),
        (3, 1, 4),
        lambda x: torch.broadcast_to(x, (len(x), 3, 5, 4)),
    ),
    "Expand_full_rank": (
        model([node("Expand", ["x", "s"], ["y"])], (1, 4), {"s": i64(1, 3, 4)}),
        (1, 4),
        lambda x: torch.broadcast_to(x, (len(x), 3, 4)),
    ),
    "Where_constant_condition": (
        model([node("Where", ["c", "x", "k"], ["y"])], (3, 4), {"c": COND, "k": np.float32(0.25)}),
        (3, 4),
        lambda x: torch.where(torch.tensor(COND), x, torch.tensor(0.25, dtype=x.dtype)),
    ),
    "Where_two_activations": (
        model(
            [node("Mul", ["x", "two"], ["x2"]), node("Where", ["c", "x2", "x"], ["y"])],
            (2, 4),
            {"c": COND, "two": np.float32(2.0)},
        ),
        (2, 4),
        lambda x: torch.where(torch.tensor(COND), 2 * x, x),
    ),
    "Split_attribute_opset11": (
        model(
            [
                node("Split", ["x"], ["a", "b", "c"], axis=1, split=[1, 2, 3]),
                node("Concat", ["c", "a", "b"], ["y"], axis=1),
            ],
            (6, 4),
            opset=11,
        ),
        (6, 4),
        lambda x: torch.cat([x[:, 3:], x[:, :1], x[:, 1:3]], 1),
    ),
    "Split_input_opset13": (
        model(
            [node("Split", ["x", "s"], ["a", "b"], axis=-1), node("Mul", ["a", "b"], ["y"])],
            (3, 4),
            {"s": i64(2, 2)},
            opset=13,
        ),
        (3, 4),
        lambda x: x[..., :2] * x[..., 2:],
    ),
    "Split_equal_parts": (
        model(
            [node("Split", ["x"], ["a", "b"], axis=3), node("Sub", ["b", "a"], ["y"])],
            (2, 3, 6),
            opset=13,
        ),
        (2, 3, 6),
        lambda x: x[..., 3:] - x[..., :3],
    ),
    "Split_num_outputs_opset18": (
        model(
            [
                node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3),
                node("Concat", ["c", "b", "a"], ["y"], axis=1),
            ],
            (7, 2),
            opset=18,
        ),
        (7, 2),
        lambda x: torch.cat([x[:, 6:], x[:, 3:6], x[:, :3]], 1),
    ),
    "Slice_activation_two_axes": (
        model(
            [node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])],
            (4, 6, 5),
            {"st": i64(1, -4), "en": i64(3, 2**62), "ax": i64(1, 3), "sp": i64(1, 2)},
        ),
        (4, 6, 5),
        lambda x: x[:, 1:3, :, -4::2],
    ),
    "Slice_activation_opset9_attributes": (
        model([node("Slice", ["x"], ["y"], starts=[0], ends=[2], axes=[2])], (3, 4), opset=9),
        (3, 4),
        lambda x: x[:, :, :2],
    ),
    "DepthToSpace_DCR": (
        model([node("DepthToSpace", ["x"], ["y"], blocksize=2)], (8, 3, 2)),
        (8, 3, 2),
        lambda x: (
            x.reshape(len(x), 2, 2, 2, 3, 2).permute(0, 3, 4, 1, 5, 2).reshape(len(x), 2, 6, 4)
        ),
    ),
    "DepthToSpace_CRD": (
        model([node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")], (8, 3, 2)),
        (8, 3, 2),
        lambda x: F.pixel_shuffle(x, 2),
    ),
    "Resize_nearest_asymmetric_floor": (
        resize(
            (2, 3, 4),
            [1, 1, 2, 2],
            mode="nearest",
            coordinate_transformation_mode="asymmetric",
            nearest_mode="floor",
        ),
        (2, 3, 4),
        _resize_torch("nearest", 2),
    ),
    "Resize_nearest_half_pixel_round": (
        resize((2, 5, 4), [1, 1, 1.5, 0.75], mode="nearest"),
        (2, 5, 4),
        None,
    ),
    "Resize_bilinear_half_pixel": (
        resize((2, 3, 4), [1, 1, 2, 1.5], mode="linear"),
        (2, 3, 4),
        _resize_torch("bilinear", (2, 1.5), align=False),
    ),
    "Resize_bilinear_pytorch_half_pixel_downscale": (
        resize(
            (2, 6, 5),
            [1, 1, 0.5, 0.6],
            mode="linear",
            coordinate_transformation_mode="pytorch_half_pixel",
        ),
        (2, 6, 5),
        None,
    ),
    "Resize_bilinear_align_corners_sizes": (
        resize(
            (2, 3, 4),
            sizes=[5, 7],
            mode="linear",
            coordinate_transformation_mode="align_corners",
        ),
        (2, 3, 4),
        _resize_torch("bilinear", None, align=True, size=(5, 7)),
    ),
    "Resize_bicubic_half_pixel": (
        resize((2, 9, 8), [1, 1, 1.6, 0.5], mode="cubic"),
        (2, 9, 8),
        _resize_torch("bicubic", (1.6, 0.5), align=False),
    ),
    "Resize_bicubic_align_corners_sizes": (
        resize(
            (2, 4, 6), sizes=[5, 11], mode="cubic", coordinate_transformation_mode="align_corners"
        ),
        (2, 4, 6),
        _resize_torch("bicubic", None, align=True, size=(5, 11)),
    ),
    # torch's antialiasing (PIL's: a = -0.5 for bicubic) leaves out the taps past the border
    "Resize_bilinear_antialias_exclude_outside": (
        resize(
            (2, 9, 8), [1, 1, 0.5, 0.4], opset=18, mode="linear", antialias=1, exclude_outside=1
        ),
        (2, 9, 8),
        _resize_torch("bilinear", (0.5, 0.4), align=False, antialias=True),
    ),
    "Resize_bicubic_antialias_exclude_outside": (
        resize(
            (2, 9, 8),
            [1, 1, 0.7, 1.5],
            opset=18,
            mode="cubic",
            cubic_coeff_a=-0.5,
            antialias=1,
            exclude_outside=1,
        ),
        (2, 9, 8),
        _resize_torch("bicubic", (0.7, 1.5), align=False, antialias=True),
    ),
    "Resize_cubic_antialias_edge_repeated": (
        resize((2, 7, 9), [1, 1, 0.6, 0.5], opset=18, mode="cubic", antialias=1),
        (2, 7, 9),
        None,
    ),
    "Resize_tf_crop_and_resize_extrapolated": (
        resize(
            (2, 5, 6),
            [1, 1, 0.8, 1.5],
            roi=[0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4],
            mode="linear",
            coordinate_transformation_mode="tf_crop_and_resize",
            extrapolation_value=2.5,
        ),
        (2, 5, 6),
        None,
    ),
    "Resize_bilinear_asymmetric": (
        resize((1, 3, 3), [1, 1, 2, 3], mode="linear", coordinate_transformation_mode="asymmetric"),
        (1, 3, 3),
        None,
    ),
    "Resize_linear_half_pixel_symmetric_downscale": (
        model(
            [
                node(
                    "Resize",
                    ["x", "", "sc"],
                    ["y"],
                    mode="linear",
                    coordinate_transformation_mode="half_pixel_symmetric",
                )
            ],
            (2, 5, 7),
            {"sc": np.float32([1, 1, 0.6, 0.7])},  # 7 * 0.7 = 4.9: 4 columns, centred
            opset=19,
        ),
        (2, 5, 7),
        None,
    ),
    "Resize_nearest_axes_3_2_scales": (
        model(
            [
                node(
                    "Resize",
                    ["x", "", "sc"],
                    ["y"],
                    axes=[3, -2],
                    mode="nearest",
                    coordinate_transformation_mode="asymmetric",
                    nearest_mode="floor",
                )
            ],
            (2, 3, 4),
            {"sc": np.float32([2, 3])},
            opset=18,
        ),
        (2, 3, 4),
        _resize_torch("nearest", (3, 2)),
    ),
    "Resize_linear_axes_sizes_not_larger": (
        model(
            [
                node(
                    "Resize",
                    ["x", "", "", "sz"],
                    ["y"],
                    axes=[2, 3],
                    mode="linear",
                    keep_aspect_ratio_policy="not_larger",
                )
            ],
            (2, 3, 4),
            {"sz": i64(7, 5)},
            opset=18,
        ),
        (2, 3, 4),
        None,
    ),
    "Resize_nearest_sizes_not_smaller": (
        model(
            [
                node(
                    "Resize",
                    ["x", "", "", "sz"],
                    ["y"],
                    axes=[3, 2],
                    mode="nearest",
                    keep_aspect_ratio_policy="not_smaller",
                )
            ],
            (2, 5, 4),
            {"sz": i64(3, 2)},
            opset=18,
        ),
        (2, 5, 4),
        None,
    ),
    "Slice_constant_opset9_attributes": (
        model(
            [
                node("Slice", ["k"], ["k2"], starts=[1], ends=[3], axes=[0]),
                node("Add", ["x", "k2"], ["y"]),
            ],
            (2,),
            {"k": np.float32([1.0, 2.0, 3.0, 4.0])},
            opset=9,
        ),
        (2,),
        lambda x: x + torch.tensor([2.0, 3.0], dtype=x.dtype),
    ),
    "MatMul_QKt": (
        model(
            [node("Transpose", ["x"], ["t"], perm=[0, 1, 3, 2]), node("MatMul", ["x", "t"], ["y"])],
            (2, 3, 4),
        ),
        (2, 3, 4),
        lambda x: x @ x.transpose(-1, -2),
    ),
    "MatMul_broadcast_heads": (
        model(
            [
                node("Split", ["x"], ["a", "b"], axis=1),
                node("Transpose", ["x"], ["t"], perm=[0, 1, 3, 2]),
                node("MatMul", ["a", "t"], ["y"]),
            ],
            (2, 3, 4),
        ),
        (2, 3, 4),
        lambda x: x[:, :1] @ x.transpose(-1, -2),
    ),
    "MatMul_constant_first": (
        model([node("MatMul", ["c", "x"], ["y"])], (2, 3, 4), {"c": C3}),
        (2, 3, 4),
        lambda x: torch.tensor(C3, dtype=x.dtype) @ x,
    ),
    # numpy's vectors: (n, 2, 3, 4) @ (4,) and (3,) @ (n, 2, 3, 4)
    "MatMul_vector_second": (
        model([node("MatMul", ["x", "v"], ["y"])], (2, 3, 4), {"v": VEC4}),
        (2, 3, 4),
        lambda x: x @ torch.tensor(VEC4, dtype=x.dtype),
    ),
    "MatMul_vector_first": (
        model([node("MatMul", ["v", "x"], ["y"])], (2, 3, 4), {"v": VEC3}),
        (2, 3, 4),
        lambda x: torch.tensor(VEC3, dtype=x.dtype) @ x,
    ),
    "MatMul_attention": (
        model(
            [
                node("Transpose", ["x"], ["kt"], perm=[0, 2, 1]),
                node("MatMul", ["x", "kt"], ["s"]),
                node("Mul", ["s", "scale"], ["ss"]),
                node("Softmax", ["ss"], ["p"], axis=-1),
                node("MatMul", ["p", "x"], ["y"]),
            ],
            (5, 4),
            {"scale": np.float32(0.5)},
        ),
        (5, 4),
        lambda x: torch.softmax(x @ x.transpose(-1, -2) * 0.5, -1) @ x,
    ),
    "ConstantOfShape_scale": (
        model(
            [
                helper.make_node("ConstantOfShape", ["s"], ["k"], value=fill(0.5)),
                node("Mul", ["x", "k"], ["y"]),
            ],
            (3, 4, 5),
            {"s": i64(3, 1, 1)},
        ),
        (3, 4, 5),
        lambda x: x * 0.5,
    ),
    "Range_int_cast": (
        model(
            [
                node("Range", ["r0", "r1", "r2"], ["r"]),
                node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
                node("Add", ["x", "rf"], ["y"]),
            ],
            (3, 4),
            {"r0": np.int64(0), "r1": np.int64(8), "r2": np.int64(2)},
        ),
        (3, 4),
        lambda x: x + torch.arange(0, 8, 2, dtype=x.dtype),
    ),
    "Range_float_negative_delta": (
        model(
            [node("Range", ["r0", "r1", "r2"], ["r"]), node("Mul", ["x", "r"], ["y"])],
            (4,),
            {"r0": np.float32(2.0), "r1": np.float32(0.9), "r2": np.float32(-0.3)},
        ),
        (4,),
        lambda x: x * torch.tensor([2.0, 1.7, 1.4, 1.1], dtype=x.dtype),
    ),
    "ScatterND_on_ConstantOfShape": (
        model(
            [
                helper.make_node("ConstantOfShape", ["s"], ["z"], value=fill(0.0)),
                node("ScatterND", ["z", "idx", "upd"], ["k"]),
                node("Add", ["x", "k"], ["y"]),
            ],
            (3, 4),
            {"s": i64(4), "idx": i64(1, 3).reshape(2, 1), "upd": np.float32([2.0, -1.0])},
        ),
        (3, 4),
        lambda x: x + torch.tensor(SCATTER, dtype=x.dtype),
    ),
    "ScatterND_add_duplicates_opset16": (
        model(
            [
                node("ScatterND", ["z", "idx", "upd"], ["k"], reduction="add"),
                node("Add", ["x", "k"], ["y"]),
            ],
            (2, 2),
            {
                "z": np.ones((2, 2), np.float32),
                "idx": i64(0, 1, 0, 1, 1, 0).reshape(3, 2),
                "upd": np.float32([1.0, 2.0, 3.0]),
            },
            opset=16,
        ),
        (2, 2),
        lambda x: x + torch.tensor([[1.0, 4.0], [4.0, 1.0]], dtype=x.dtype),
    ),
    "Unsqueeze_Mul_Squeeze_of_an_activation": (
        model(
            [
                node("Unsqueeze", ["x", "a2"], ["u"]),
                node("Mul", ["u", "c"], ["m"]),
                node("Squeeze", ["m", "a1"], ["y"]),
            ],
            (3, 4),
            {"a2": i64(1), "c": SCALE, "a1": i64(1)},
        ),
        (3, 4),
        lambda x: (x.unsqueeze(1) * torch.tensor(SCALE, dtype=x.dtype)).squeeze(1),
    ),
    "Ceil_and_Floor_fold_a_traced_padding": (
        model(
            [
                node("Shape", ["x"], ["shp"]),
                node("Gather", ["shp", "two"], ["h"], axis=0),
                node("Cast", ["h"], ["hf"], to=TensorProto.FLOAT),
                node("Div", ["hf", "three"], ["q"]),
                node("Ceil", ["q"], ["up"]),
                node("Floor", ["q"], ["down"]),
                node("Sub", ["up", "down"], ["one"]),  # ceil(5 / 3) - floor(5 / 3) = 1
                node("Cast", ["one"], ["p"], to=TensorProto.INT64),
                node("Concat", ["zeros", "p", "p", "zeros", "p", "p"], ["pads"], axis=0),
                node("Pad", ["x", "pads"], ["y"]),
            ],
            (2, 5, 4),
            {"two": i64(2), "three": np.float32(3), "zeros": i64(0, 0)},
        ),
        (2, 5, 4),
        lambda x: F.pad(x, (1, 1, 1, 1)),
    ),
    "Pad_of_channels_last_windows": (
        model([node("Pad", ["x", "p"], ["y"])], (3, 5, 2), {"p": i64(0, 0, 1, 0, 0, 2, 0, 0)}),
        (3, 5, 2),
        lambda x: F.pad(x, (0, 0, 1, 0, 0, 2)),
    ),
    "Pad_with_a_value_on_every_sample_axis": (
        model(
            [node("Pad", ["x", "p", "v"], ["y"])],
            (2, 3, 4),
            {"p": i64(0, 1, 0, 2, 0, 2, 1, 0), "v": np.float32(0.5)},
        ),
        (2, 3, 4),
        lambda x: F.pad(x, (2, 0, 0, 1, 1, 2), value=0.5),
    ),
    "Clip_of_a_constant_folds": (
        model(
            [node("Clip", ["c", "lo", "hi"], ["k"]), node("Add", ["x", "k"], ["y"])],
            (4,),
            {"c": np.float32([-2, -0.5, 0.5, 2]), "lo": np.float32(-1), "hi": np.float32(1)},
        ),
        (4,),
        lambda x: x + torch.tensor([-1, -0.5, 0.5, 1], dtype=x.dtype),
    ),
    "Equal_Not_Mod_Where_build_an_Expand_target": (
        model(
            [
                node("Shape", ["x"], ["shp"]),
                node("Mod", ["eleven", "six"], ["five"]),
                node("Concat", ["m1", "three", "five", "four"], ["k"], axis=0),
                node("Equal", ["k", "m1"], ["eq"]),
                node("Not", ["eq"], ["ne"]),
                node("Where", ["ne", "k", "shp"], ["tgt"]),
                node("Expand", ["x", "tgt"], ["y"]),
            ],
            (3, 1, 4),
            {
                "eleven": i64(11),
                "six": i64(6),
                "m1": i64(-1),
                "three": i64(3),
                "four": i64(4),
            },
        ),
        (3, 1, 4),
        lambda x: torch.broadcast_to(x, (len(x), 3, 5, 4)),
    ),
}


def _batch(shape, n=4):
    return RNG.standard_normal((n, *shape)).astype(np.float32)


@pytest.mark.parametrize("case", sorted(CASES), ids=sorted(CASES))
def test_values_match_onnxruntime(case):
    """The imported network's output equals onnxruntime's within 1e-5 relative, in float32."""
    data, shape, _ = CASES[case]
    X = _batch(shape)
    want = ort_run(data, X).reshape(len(X), -1)
    got = xai.from_onnx(data).predict(X)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * np.abs(want).max())


GRAD_CASES = sorted(c for c in CASES if CASES[c][2] is not None)


@pytest.mark.parametrize("case", GRAD_CASES, ids=GRAD_CASES)
def test_gradients_match_torch_autograd(case):
    """``ModelRunner.gradient`` equals torch autograd of the same function (float64 oracle)."""
    data, shape, fn = CASES[case]
    X = _batch(shape)
    net = xai.from_onnx(data, dtype="float64")
    n_out = net.predict(X[:1]).shape[1]
    target = RNG.integers(0, n_out, len(X))
    got = xai.ModelRunner(net).gradient(X, target)
    x = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    out = fn(x).reshape(len(X), -1)
    assert out.shape[1] == n_out
    out[torch.arange(len(X)), torch.as_tensor(target)].sum().backward()
    want = x.grad.numpy()  # the cpu backend computes in float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * (np.abs(want).max() + 1e-30))


@pytest.mark.parametrize("case", sorted(CASES), ids=sorted(CASES))
def test_runs_on_tpu_close_to_cpu(case):
    """On the systolic TPU (bf16) the output stays within bf16 tolerance of the CPU's."""
    data, shape, _ = CASES[case]
    net = xai.from_onnx(data)
    X = _batch(shape)
    cpu = xai.ModelRunner(net, backend="cpu").predict(X)
    runner = xai.ModelRunner(net, backend="tpu")
    tpu = runner.predict(X)
    np.testing.assert_allclose(tpu, cpu, rtol=0, atol=0.05 * (np.abs(cpu).max() + 1))
    if case.startswith("MatMul"):
        assert runner.counters["macs"] > 0


@pytest.mark.parametrize("case", sorted(CASES), ids=sorted(CASES))
def test_save_and_load_keep_the_outputs(case, tmp_path):
    """Weights + JSON: a saved network loads and computes the same outputs."""
    data, shape, _ = CASES[case]
    net = xai.from_onnx(data)
    net.save(tmp_path / "m.npz")
    X = _batch(shape)
    np.testing.assert_array_equal(xai.load_model(tmp_path / "m.npz").predict(X), net.predict(X))


def test_attention_products_are_counted_as_gemms_on_tpu():
    """Each broadcast matrix pair of Q @ K^T is one GEMM on the TPU, forward and backward."""
    data, shape, _ = CASES["MatMul_QKt"]
    runner = xai.ModelRunner(xai.from_onnx(data), backend="tpu")
    X = _batch(shape, n=3)
    runner.predict(X)
    assert runner.counters["matmuls"] == 3 * 2
    assert runner.counters["macs"] == 3 * 2 * 3 * 4 * 3


LAYER_POOLS = [
    ("max_last_window_dropped", "max", (2, 5, 5), 3, 3, 1, True),
    ("avg_include_last_window_dropped", "avg", (2, 5, 5), 3, 3, 1, True),
    ("avg_exclude_last_window_dropped", "avg", (2, 5, 5), 3, 3, 1, False),
    ("max_stride_over_kernel", "max", (1, 8, 9), 2, 3, 0, True),
    ("max_no_window_dropped", "max", (2, 7, 6), 3, 2, 1, True),
    ("avg_include_stride_over_kernel", "avg", (1, 8, 9), 2, 3, 0, True),
]


@pytest.mark.parametrize(
    "kind,shape,k,s,p,include", [c[1:] for c in LAYER_POOLS], ids=[c[0] for c in LAYER_POOLS]
)
def test_ceil_mode_layer_drops_a_window_starting_in_the_trailing_padding(
    kind, shape, k, s, p, include
):
    """The last window starts inside the input or the leading padding, as in torch.

    (ONNX's own shape inference still counts such a window, so an ONNX file with one is
    refused by the declared-shape check; the layer itself follows torch and onnxruntime.)
    """
    if kind == "max":
        layer = xai.nn.MaxPool2D(k, stride=s, padding=p, ceil_mode=True)
        fn = lambda x: F.max_pool2d(x, k, s, p, ceil_mode=True)  # noqa: E731
    else:
        layer = xai.nn.AvgPool2D(k, stride=s, padding=p, count_include_pad=include, ceil_mode=True)
        fn = lambda x: F.avg_pool2d(x, k, s, p, ceil_mode=True, count_include_pad=include)  # noqa: E731
    net = xai.nn.Sequential([layer], input_shape=shape, dtype="float64")
    X = _batch(shape, n=3).astype(np.float64)
    x = torch.tensor(X, requires_grad=True)
    want = fn(x)
    assert layer.output_shape == tuple(want.shape[1:])
    np.testing.assert_allclose(net.predict(X), want.detach().numpy().reshape(3, -1), rtol=1e-6)
    want.reshape(3, -1)[:, 2].sum().backward()
    got = xai.ModelRunner(net).gradient(X, 2)
    np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-6, atol=1e-9)


def test_ceil_mode_keeps_the_plain_pool_identical():
    """ceil_mode=0 builds exactly the layer it built before (no ceil_mode in its config)."""
    net = xai.from_onnx(pool("MaxPool", (3, 7, 8), kernel_shape=[3, 3], strides=[2, 2]))
    layer = net.layers[-1]
    assert type(layer).__name__ == "MaxPool2D"
    assert "ceil_mode" not in layer.get_config()
    ceil = xai.from_onnx(CASES["MaxPool_ceil"][0]).layers[-1]
    assert ceil.get_config()["ceil_mode"] is True


# -- ShuffleNet's channel shuffle, exported from torch with a dynamic batch ------------------
class ShuffleBlock(torch.nn.Module):
    """A ShuffleNet v2 unit's tail: convolution, channel shuffle, ceil-mode max pool."""

    def __init__(self, channels=8, groups=2):
        super().__init__()
        self.groups = groups
        self.conv = torch.nn.Conv2d(channels, channels, 1)
        self.pool = torch.nn.MaxPool2d(3, 2, ceil_mode=True)

    def forward(self, x):
        x = self.conv(x)
        b, c, h, w = x.size()
        x = x.view(b, self.groups, c // self.groups, h, w).transpose(1, 2).reshape(b, -1, h, w)
        return self.pool(x)


def _import_equals_torch(module, X, target):
    """``from_torch(module)``: its outputs and its gradient of output ``target`` equal
    torch's (1e-5 and 1e-4 relative); the network, for further checks."""
    n = len(X)
    net = xai.from_torch(module, torch.tensor(X))
    want = module(torch.tensor(X)).detach().numpy().reshape(n, -1)
    np.testing.assert_allclose(net.predict(X), want, rtol=1e-5, atol=1e-6)
    x = torch.tensor(X, requires_grad=True)
    module(x).reshape(n, -1)[:, target].sum().backward()
    np.testing.assert_allclose(
        xai.ModelRunner(net).gradient(X, target), x.grad.numpy(), rtol=1e-4, atol=1e-6
    )
    return net


def test_shufflenet_channel_shuffle_imports_from_torch():
    """Reshape to a folded shape holding the batch size and c // g: forward and gradient equal torch."""
    torch.manual_seed(0)
    net = _import_equals_torch(ShuffleBlock().eval(), _batch((8, 7, 6), n=3), 5)
    assert not any(type(layer).__name__ in ("Divide", "Constant") for layer in net.layers)


class Fire(torch.nn.Module):
    """SqueezeNet's fire module: squeeze, then two expands concatenated."""

    def __init__(self, cin, squeeze, expand):
        super().__init__()
        self.squeeze = torch.nn.Conv2d(cin, squeeze, 1)
        self.e1 = torch.nn.Conv2d(squeeze, expand, 1)
        self.e3 = torch.nn.Conv2d(squeeze, expand, 3, padding=1)

    def forward(self, x):
        s = torch.relu(self.squeeze(x))
        return torch.cat([torch.relu(self.e1(s)), torch.relu(self.e3(s))], 1)


def squeezenet_like():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, 2),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(3, 2, ceil_mode=True),
        Fire(8, 4, 8),
        torch.nn.MaxPool2d(3, 2, ceil_mode=True),
        torch.nn.Conv2d(16, 5, 1),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
    )


class InceptionLike(torch.nn.Module):
    """GoogLeNet's pooling branch (a stride-1 ceil-mode max pool) beside a convolution."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.pool = torch.nn.MaxPool2d(3, 1, 1, ceil_mode=True)
        self.proj = torch.nn.Conv2d(3, 4, 1)
        self.down = torch.nn.MaxPool2d(3, 2, ceil_mode=True)

    def forward(self, x):
        return self.down(torch.cat([self.conv(x), self.proj(self.pool(x))], 1))


def resnet_d_downsample():
    """ResNet-D's shortcut: a ceil-mode average pool (padding not counted), then a 1x1 conv."""
    return torch.nn.Sequential(
        torch.nn.AvgPool2d(2, 2, ceil_mode=True, count_include_pad=False),
        torch.nn.Conv2d(3, 6, 1),
    )


NETS = {"squeezenet": squeezenet_like, "googlenet": InceptionLike, "resnet_d": resnet_d_downsample}


@pytest.mark.parametrize("name", sorted(NETS), ids=sorted(NETS))
def test_ceil_mode_networks_from_torch(name):
    """The networks blocked by ceil_mode=1 import from torch: forward, gradient, TPU, IG."""
    torch.manual_seed(0)
    module = NETS[name]().eval()
    X = _batch((3, 15, 13), n=2)
    net = xai.from_torch(module, torch.tensor(X))
    want = module(torch.tensor(X)).detach().numpy().reshape(2, -1)
    np.testing.assert_allclose(net.predict(X), want, rtol=1e-5, atol=1e-6 * np.abs(want).max())
    x = torch.tensor(X, requires_grad=True)
    module(x).reshape(2, -1)[:, 1].sum().backward()
    grad = xai.ModelRunner(net).gradient(X, 1)
    np.testing.assert_allclose(grad, x.grad.numpy(), rtol=1e-4, atol=1e-6 * np.abs(grad).max())
    tpu = xai.ModelRunner(net, backend="tpu").predict(X)
    np.testing.assert_allclose(tpu, want, rtol=0, atol=0.05 * (np.abs(want).max() + 1))
    e = xai.explain(net, X, method="ig", target=1, steps=8)
    assert e.values.shape == X.shape and np.all(np.isfinite(e.values))


# -- multi-head attention exported by from_torch ------------------------------------------------
def test_transformer_encoder_layer_exports_without_the_fused_fast_path():
    """A ViT-style block exports (no aten::_native_multi_head_attention); a refusal names
    exactly the operators the importer lacks; with none missing it imports."""
    import onnx

    from xai_core.importers.onnx_registry import supported_ops
    from xai_core.importers.torch_import import export_onnx

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()
    X = _batch((5, 8), n=2)
    data = export_onnx(layer, torch.tensor(X))
    ops = {n.op_type for n in onnx.load_from_string(data).graph.node}
    assert "MatMul" in ops and "Softmax" in ops
    assert torch.backends.mha.get_fastpath_enabled()  # restored after the export
    missing = ops - set(supported_ops(17)) - {"Constant"}
    if not missing:
        # torch's attention computes in (sequence, batch * heads, features) layout inside:
        # held as views of per-sample tensors, so the layer imports and equals torch.
        net = xai.from_torch(layer, torch.tensor(X))
        want = layer(torch.tensor(X)).detach().numpy().reshape(len(X), -1)
        np.testing.assert_allclose(net.predict(X), want, rtol=1e-5, atol=1e-5)
        return
    with pytest.raises(CapabilityError) as info:
        xai.from_torch(layer, torch.tensor(X))
    message = str(info.value).split("Supported operators:")[0]
    assert (f"{len(missing)} operators are" if len(missing) > 1 else "operator is") in message
    for op in missing:
        assert f"'{op}'" in message
    for op in ops - missing:
        assert f"'{op}'" not in message


class Attention(torch.nn.Module):
    """Single-head self-attention as ViT computes it, with a scale known in Python."""

    def __init__(self, d=8):
        super().__init__()
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.scale = d**-0.5

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return torch.softmax(q @ k.transpose(-2, -1) * self.scale, dim=-1) @ v


def _imported_like_torch(module, X: np.ndarray, output: int):
    """``module`` imported from torch: its outputs and the gradient of ``output`` equal
    torch's, and the TPU's outputs are within bf16's reach. Returns the network and the
    TPU runner, its counters from that one prediction."""
    net = xai.from_torch(module, torch.tensor(X))
    want = module(torch.tensor(X)).detach().numpy().reshape(len(X), -1)
    np.testing.assert_allclose(net.predict(X), want, rtol=1e-5, atol=1e-6)
    x = torch.tensor(X, requires_grad=True)
    module(x).reshape(len(X), -1)[:, output].sum().backward()
    np.testing.assert_allclose(
        xai.ModelRunner(net).gradient(X, output), x.grad.numpy(), rtol=1e-4, atol=1e-6
    )
    tpu = xai.ModelRunner(net, backend="tpu")
    np.testing.assert_allclose(tpu.predict(X), want, rtol=0, atol=0.05 * (np.abs(want).max() + 1))
    return net, tpu


def test_attention_from_torch_matches_torch_on_cpu_and_tpu():
    """softmax(Q K^T / sqrt(d)) V from torch: forward and gradient equal torch; the TPU agrees."""
    torch.manual_seed(0)
    _imported_like_torch(Attention().eval(), _batch((5, 8), n=3), 7)


class MultiHeadBatchFirst(torch.nn.Module):
    """Multi-head self-attention as BERT-style encoders write it (the batch axis kept first)."""

    def __init__(self, d=8, heads=2):
        super().__init__()
        self.heads, self.d = heads, d
        self.q, self.k, self.v = (torch.nn.Linear(d, d) for _ in range(3))
        self.out = torch.nn.Linear(d, d)

    def split(self, t):
        b, n, _ = t.size()
        return t.view(b, n, self.heads, self.d // self.heads).permute(0, 2, 1, 3)

    def forward(self, x):
        b, n, _ = x.size()
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scores = q @ k.transpose(-1, -2) / (self.d // self.heads) ** 0.5
        ctx = torch.softmax(scores, dim=-1) @ v
        return self.out(ctx.permute(0, 2, 1, 3).reshape(b, n, self.d))


def test_multi_head_attention_written_batch_first_imports_and_counts_gemms():
    """Heads via view/permute with the batch size from x.size(): forward, gradient and IG;
    the TPU counts the attention products as GEMMs (one per sample and head)."""
    torch.manual_seed(0)
    X = _batch((5, 8), n=3)
    net, runner = _imported_like_torch(MultiHeadBatchFirst().eval(), X, 11)
    products = [layer for layer in net.layers if type(layer).__name__ == "MatMul"]
    assert len(products) >= 2 + 4  # Q @ K^T, P @ V, and the four projections of sequences
    assert runner.counters["matmuls"] >= 3 * 2 * 2
    e = xai.explain(net, X, method="ig", target=11, steps=8)
    assert e.values.shape == X.shape and np.all(np.isfinite(e.values))


# -- refusals: each names the node and what was expected ---------------------------------------
REFUSALS = [
    (
        "ceil_same_upper",
        pool("MaxPool", (2, 6, 6), kernel_shape=[3, 3], auto_pad="SAME_UPPER", ceil_mode=1),
        CapabilityError,
        "ceil_mode=1 with auto_pad='SAME_UPPER' is not supported",
    ),
    (
        "maxpool_indices",
        model([node("MaxPool", ["x"], ["y", "idx"], kernel_shape=[2, 2])], (2, 4, 4)),
        CapabilityError,
        "the Indices output of MaxPool",
    ),
    (
        "equal_batch_vs_positive",
        model(
            [
                node("Shape", ["x"], ["s"]),
                node("Equal", ["s", "two"], ["e"]),
                node("Where", ["e", "x", "x"], ["y"]),
            ],
            (3,),
            {"two": i64(2)},
        ),
        CapabilityError,
        "compares the batch size with a positive number",
    ),
    (
        "scatter_nd_shapes",
        model(
            [node("ScatterND", ["z", "idx", "upd"], ["k"]), node("Add", ["x", "k"], ["y"])],
            (4,),
            {"z": np.zeros(4, np.float32), "idx": i64(1).reshape(1, 1), "upd": np.float32([1, 2])},
        ),
        CapabilityError,
        "do not fit data of shape (4,)",
    ),
    (
        "scatter_nd_index_out_of_range",
        model(
            [node("ScatterND", ["z", "idx", "upd"], ["k"]), node("Add", ["x", "k"], ["y"])],
            (4,),
            {"z": np.zeros(4, np.float32), "idx": i64(4).reshape(1, 1), "upd": np.float32([1])},
        ),
        CapabilityError,
        "an index is outside data of shape (4,)",
    ),
    (
        "split_sizes_do_not_add_up",
        model(
            [node("Split", ["x", "s"], ["a", "b"], axis=1), node("Add", ["a", "b"], ["y"])],
            (4,),
            {"s": i64(1, 2)},
            opset=13,
        ),
        CapabilityError,
        "split sizes [1, 2] for 2 outputs of an axis of size 4",
    ),
    (
        "split_batch_axis",
        model([node("Split", ["x"], ["a", "y"], axis=0)], (4,), opset=13),
        CapabilityError,
        "the batch axis cannot be touched",
    ),
    (
        "expand_sets_the_batch",
        model([node("Expand", ["x", "s"], ["y"])], (4,), {"s": i64(3, 4)}),
        CapabilityError,
        "sets the batch size to 3",
    ),
    (
        "slice_zero_step",
        model(
            [node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])],
            (4,),
            {"st": i64(3), "en": i64(0), "ax": i64(1), "sp": i64(0)},
        ),
        CapabilityError,
        "a step of 0",
    ),
    (
        "pool_window_of_padding_only",
        pool("MaxPool", (1, 4, 4), kernel_shape=[2, 2], pads=[2, 0, 0, 0]),
        CapabilityError,
        "leave a window that holds padding only",
    ),
    (
        "resize_nearest_antialias",
        resize((1, 3, 3), [1, 1, 0.5, 0.5], opset=18, mode="nearest", antialias=1),
        CapabilityError,
        "antialias with mode='nearest'",
    ),
    (
        "resize_channels",
        resize((1, 3, 3), [1, 2, 2, 2]),
        CapabilityError,
        "must be 1 on the batch and channel axes",
    ),
    (
        "depth_to_space_blocks",
        model([node("DepthToSpace", ["x"], ["y"], blocksize=2)], (6, 2, 2)),
        CapabilityError,
        "6 channels do not split into blocks of 2 x 2",
    ),
    (
        "resize_sizes_fix_the_batch",
        model([node("Resize", ["x", "", "", "sz"], ["y"])], (2, 3, 3), {"sz": i64(1, 2, 6, 6)}),
        CapabilityError,
        "must keep the batch size and the 2 channels",
    ),
    (
        "range_delta_zero",
        model(
            [node("Range", ["a", "a", "z"], ["r"]), node("Add", ["x", "r"], ["y"])],
            (1,),
            {"a": np.float32(0), "z": np.float32(0)},
        ),
        CapabilityError,
        "delta is 0",
    ),
    (
        "constant_of_shape_negative",
        model(
            [
                helper.make_node("ConstantOfShape", ["s"], ["k"], name="neg"),
                node("Add", ["x", "k"], ["y"]),
            ],
            (2,),
            {"s": i64(-2)},
        ),
        CapabilityError,
        "the shape [-2] has a negative size",
    ),
    (
        "mod_by_zero",
        model(
            [node("Mod", ["a", "z"], ["m"]), node("Reshape", ["x", "m"], ["y"])],
            (2,),
            {"a": i64(3), "z": i64(0)},
        ),
        CapabilityError,
        "division by zero",
    ),
    (
        "matmul_vector_samples",
        model([node("MatMul", ["x", "x"], ["y"])], (4,)),
        CapabilityError,
        "has one axis per sample",
    ),
]


@pytest.mark.parametrize("name,data,error,fragment", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_name_the_node_and_the_reason(name, data, error, fragment):
    """Each unsupported use is refused at import with the node named and the reason."""
    with pytest.raises(error) as info:
        xai.from_onnx(data)
    assert fragment in str(info.value)
    assert "node '" in str(info.value)


HUGE = [
    (
        "ConstantOfShape",
        [
            helper.make_node("ConstantOfShape", ["s"], ["k"], value=fill(1.0), name="huge"),
            node("Mul", ["x", "k"], ["y"]),
        ],
        {"s": i64(2**20, 2**20, 4)},
    ),
    (
        "Range",
        [
            helper.make_node("Range", ["r0", "r1", "r2"], ["k"], name="huge"),
            node("Cast", ["k"], ["kf"], to=TensorProto.FLOAT),
            node("Mul", ["x", "kf"], ["y"]),
        ],
        {"r0": np.int64(0), "r1": np.int64(2**42), "r2": np.int64(1)},
    ),
    (
        "Expand",
        [
            helper.make_node("Expand", ["c", "s"], ["k"], name="huge"),
            node("Mul", ["x", "k"], ["y"]),
        ],
        {"c": np.float32([1.0]), "s": i64(2**21, 2**21, 1)},
    ),
    (
        "Resize",
        [
            node("Shape", ["x"], ["shp"]),
            node("Slice", ["shp", "s0", "s2"], ["nc"]),
            node("Concat", ["nc", "hw"], ["sz"], axis=0),
            helper.make_node("Resize", ["x", "", "", "sz"], ["y"], name="huge"),
        ],
        {"hw": i64(2**20, 2**20), "s0": i64(0), "s2": i64(2)},
    ),
]


@pytest.mark.parametrize("op,nodes,inits", HUGE, ids=[h[0] for h in HUGE])
def test_a_folded_tensor_over_the_memory_limit_is_refused_before_allocation(op, nodes, inits):
    """A declared terabyte-sized constant or output is refused by the memory limit in force
    (the default: a fraction of the available memory), naming the node, never allocated."""
    shape = (2, 3, 3) if op == "Resize" else (4,)
    with pytest.raises(ResourceError, match=f"{op} node 'huge'"):
        xai.from_onnx(model(nodes, shape, inits))


def test_the_memory_limit_set_by_the_user_applies():
    """A 16 MB constant passes the default limit and is refused under a 1 MB limit."""
    data = model(
        [
            helper.make_node("ConstantOfShape", ["s"], ["k"], value=fill(1.0), name="big"),
            node("Slice", ["k", "s0", "s4"], ["k4"]),
            node("Mul", ["x", "k4"], ["y"]),
        ],
        (4,),
        {"s": i64(2**22), "s0": i64(0), "s4": i64(4)},
    )
    assert xai.from_onnx(data).predict(np.ones((1, 4), np.float32)).shape == (1, 4)
    previous = xai.set_resource_limits(max_bytes=2**20)
    try:
        with pytest.raises(ResourceError, match="ConstantOfShape node 'big'"):
            xai.from_onnx(data)
    finally:
        xai.set_resource_limits(max_bytes=previous.max_bytes)


PADS = {
    "reflect": lambda: torch.nn.ReflectionPad2d((2, 1, 1, 3)),
    "replicate": lambda: torch.nn.ReplicationPad2d((1, 2, 3, 0)),
    "circular": lambda: torch.nn.CircularPad2d((2, 2, 1, 0)),
}


@pytest.mark.parametrize("mode", sorted(PADS), ids=sorted(PADS))
def test_reflect_edge_and_wrap_padding_from_torch(mode):
    """torch's reflection, replication and circular padding (ONNX ``Pad`` of mode reflect,
    edge, wrap): forward and gradient equal torch's, where the gradient adds up at the
    positions read twice."""
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 1), PADS[mode](), torch.nn.Conv2d(4, 2, 3))
    module = module.eval()
    X = _batch((3, 6, 5), n=2)
    net = _import_equals_torch(module, X, 7)
    assert np.isfinite(xai.ModelRunner(net, backend="tpu").predict(X)).all()


def test_reflect_padding_as_wide_as_the_axis_is_refused():
    """A reflection needs pads below the axis size (onnxruntime refuses the rest too)."""
    data = helper.make_model(
        helper.make_graph(
            [helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2, 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(np.array([0, 0, 3, 0, 0, 0], np.int64), "p")],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    with pytest.raises(CapabilityError, match="reflect pads of axis 2 must be below its size 3"):
        xai.from_onnx(data)


def test_flip_from_torch_slices_backwards():
    """``torch.flip`` (a Slice of step -1) and a step of -2: forward and gradient equal torch's."""
    torch.manual_seed(0)

    class Flips(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 1)

        def forward(self, x):
            h = self.conv(x)
            return torch.flip(h, dims=[2, 3]) + h[:, :, :, 1:].flip(3).repeat(1, 1, 1, 2)[..., :5]

    _import_equals_torch(Flips().eval(), _batch((3, 4, 5), n=2), 3)
    data = helper.make_model(
        helper.make_graph(
            [helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 7])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [
                numpy_helper.from_array(np.array(v, np.int64), k)
                for k, v in {"s": [-1], "e": [-100], "a": [1], "t": [-2]}.items()
            ],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    X7 = RNG.standard_normal((3, 7)).astype(np.float32)
    got = xai.from_onnx(data).predict(X7)
    np.testing.assert_array_equal(got, ort_run(data.SerializeToString(), X7))
    np.testing.assert_array_equal(got, X7[:, ::-2])
