"""A native network as a full-integer TFLite graph: the converter's post-training int8 scheme.

:func:`build_int8_graph` turns a float network (a :class:`~xai_core.nn.Graph` or
:class:`~xai_core.nn.Sequential`, batch norms folded) and the value range of every node on
calibration rows into a :class:`~xai_core.importers.tflite.TFLiteGraph`:

- weights int8, symmetric, one scale per output channel (``max |w| / 127``);
- activations int8, asymmetric, one scale and zero point per tensor, from the calibration
  range (zero always representable);
- biases int32 at scale ``s_in * s_w``;
- a ReLU or ReLU6 that is a convolution's or dense layer's only consumer is fused into it;
- tanh, the logistic function and softmax get TFLite's fixed output scales (1/128; 1/256
  with zero point -128); pools keep their input's parameters; the inputs of a concatenation
  are requantised to its output's parameters where they differ (TFLite's int8 kernel needs
  them equal);
- images are NHWC inside the graph: an NCHW network's image is transposed once, and back
  before it is flattened, so the flattened order (and the next dense layer's weights) stay
  the network's.

The graph then runs on TFLite's int8 kernels (:mod:`xai_core.importers.tflite`), bit-exact
with LiteRT, and is what :func:`xai_core.to_tflite` writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core.errors import CapabilityError
from xai_core.importers.tflite.reader import OperatorInfo, TensorInfo, TFLiteGraph

__all__ = ["QUANTISABLE", "build_int8_graph", "check_quantisable"]

#: Layer types that quantise, by class name.
QUANTISABLE = (
    "Add", "AvgPool2D", "Clip", "Concatenate", "Constant", "Conv2D", "Dense", "DepthwiseConv2D",
    "Dropout", "Flatten", "GlobalAveragePooling2D", "HardSwish", "Identity", "Linear",
    "MaxPool2D", "Multiply", "ReLU", "ReLU6", "Reshape", "Sigmoid", "Softmax", "Subtract", "Tanh",
    "ZeroPadding2D",
)  # fmt: skip

QMIN, QMAX = -128, 127
#: TFLite's fixed output parameters of the bounded activations.
FIXED_OUTPUT = {"Tanh": (1 / 128, 0), "Sigmoid": (1 / 256, -128), "Softmax": (1 / 256, -128)}


def _params(lo: float, hi: float) -> tuple[float, int]:
    from xai_core.nn.quantize import QuantParams

    p = QuantParams.from_range(lo, hi)
    return p.scale, p.zero_point


@dataclass
class _Value:
    """A node's output in the int8 graph: its tensor, and whether it holds an NCHW image as NHWC."""

    tensor: int
    nhwc_of_nchw: bool = False


class _Builder:
    def __init__(self, int8: bool = True) -> None:
        self.int8 = int8  # False: a float32 graph with the same operators
        self.tensors: list[TensorInfo] = []
        self.ops: list[OperatorInfo] = []

    def activation(self, name: str, shape, scale: float, zero_point: int) -> int:
        """An activation tensor: int8 at ``scale`` / ``zero_point``, or float32."""
        if self.int8:
            return self.tensor(name, shape, scale=scale, zero_point=zero_point)
        return self.tensor(name, shape, np.float32)

    def weights(self, name: str, w_oc: np.ndarray, layout, qdim: int = 0):
        """Weights with the output channel first, laid out by ``layout(w)``; int8 or float32.

        Returns the tensor index and the per-channel scales (``None`` for float)."""
        if not self.int8:
            data = np.ascontiguousarray(layout(np.asarray(w_oc, np.float32)))
            return self.tensor(name, data.shape, np.float32, data=data), None
        q, scale = _quantize_weight(w_oc)
        data = np.ascontiguousarray(layout(q))
        n = len(scale)
        return self.tensor(
            name, data.shape, scale=scale, zero_point=np.zeros(n), qdim=qdim, data=data
        ), scale

    def bias(self, name: str, bias, n: int, x: int, s_w) -> int:
        """A bias: int32 at scale ``s_in * s_w``, or float32."""
        if not self.int8:
            data = np.zeros(n, np.float32) if bias is None else np.asarray(bias, np.float32)
            return self.tensor(name, (n,), np.float32, data=data)
        s_in = self.params_of(x)[0]
        return self.tensor(
            name,
            (n,),
            np.int32,
            scale=s_in * s_w,
            zero_point=np.zeros(n),
            data=_bias(bias, n, s_in, s_w),
        )

    def tensor(
        self, name, shape, dtype=np.int8, scale=None, zero_point=None, qdim=0, data=None
    ) -> int:
        scale = None if scale is None else np.atleast_1d(np.asarray(scale, np.float32))
        zp = None if zero_point is None else np.atleast_1d(np.asarray(zero_point, np.int64))
        self.tensors.append(
            TensorInfo(
                len(self.tensors),
                name,
                tuple(int(d) for d in shape),
                np.dtype(dtype),
                scale,
                zp,
                qdim,
                data,
            )
        )
        return len(self.tensors) - 1

    def like(self, name: str, src: int, shape) -> int:
        t = self.tensors[src]
        return self.tensor(name, shape, t.dtype, t.scale, t.zero_point)

    def op(self, op: str, inputs, outputs, options_type=None, **options) -> int:
        self.ops.append(
            OperatorInfo(
                len(self.ops), op, tuple(inputs), tuple(outputs), options, None, options_type
            )
        )
        return outputs[0]

    def const_int32(self, name: str, values) -> int:
        data = np.asarray(values, np.int32)
        return self.tensor(name, data.shape, np.int32, data=data)

    def params_of(self, t: int) -> tuple[float, int]:
        return float(self.tensors[t].scale[0]), int(self.tensors[t].zero_point[0])


def _consumers(net) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for node in net.nodes:
        for name in node.inputs:
            out.setdefault(name, []).append(node.name)
    return out


def _quantize_weight(w_oc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-output-channel symmetric int8 of weights whose first axis is the output channel."""
    from xai_core.nn.quantize import _round_half_away

    flat = np.asarray(w_oc, np.float64).reshape(len(w_oc), -1)
    peak = np.abs(flat).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0)
    q = np.clip(_round_half_away(flat / scale[:, None]), -127, 127).astype(np.int8)
    return q.reshape(w_oc.shape), scale


def _bias(b: np.ndarray | None, n: int, s_in: float, s_w: np.ndarray) -> np.ndarray:
    from xai_core.nn.quantize import _round_half_away

    b = np.zeros(n) if b is None else np.asarray(b, np.float64)
    return np.clip(_round_half_away(b / (s_in * s_w)), -(2**31), 2**31 - 1).astype(np.int32)


def check_quantisable(net: Any) -> None:
    """Raise :class:`CapabilityError` naming the first layer of ``net`` that cannot be quantised."""
    for node in net.nodes:
        kind = type(node.layer).__name__
        if kind not in QUANTISABLE:
            raise CapabilityError(
                f"layer {node.name!r} ({kind}) cannot be quantised; quantisable layers: "
                f"{', '.join(QUANTISABLE)}."
            )


def build_int8_graph(
    net: Any, ranges: dict[str, tuple[float, float]] | None
) -> tuple[TFLiteGraph, dict[str, tuple[int, bool]]]:
    """The int8 TFLite graph of ``net`` for the calibration ``ranges`` (node name -> (lo, hi)).

    ``ranges`` also holds ``net.input_name``. With ``ranges=None`` the graph is float32: the
    same operators and layouts, the network's own weights (what :func:`xai_core.to_tflite`
    writes for a float network without calibration rows).

    Returns
    -------
    graph : TFLiteGraph
    nodes : dict of str to (int, bool)
        Per node of ``net``: the tensor that holds its output, and whether that tensor holds
        the network's NCHW image as NHWC.
    """
    check_quantisable(net)
    b = _Builder(int8=ranges is not None)
    consumers = _consumers(net)
    input_shape = tuple(net.input_shape)
    s, z = _params(*ranges[net.input_name]) if b.int8 else (None, None)
    x = b.activation(net.input_name, (1, *input_shape), s, z)
    values: dict[str, _Value] = {net.input_name: _Value(x)}
    if len(input_shape) == 3 and getattr(net, "layout", "NCHW") == "NCHW":
        values[net.input_name] = _Value(_to_nhwc(b, x, input_shape, net.input_name), True)
    skip: set[str] = set()
    for node in net.nodes:
        if node.name in skip:
            continue
        layer, kind = node.layer, type(node.layer).__name__
        after = consumers.get(node.name, [])
        fused = None
        passed: list[str] = []  # identities between the layer and its activation
        while kind in ("Conv2D", "DepthwiseConv2D", "Dense") and len(after) == 1:
            nxt = net.node(after[0])
            nxt_kind = type(nxt.layer).__name__
            if nxt_kind in ("ReLU", "ReLU6"):
                fused = nxt
                break
            if nxt_kind not in ("Identity", "Dropout", "Linear"):
                break
            passed.append(nxt.name)
            after = consumers.get(nxt.name, [])
        out_name = fused.name if fused is not None else node.name
        rng = ranges[out_name] if b.int8 else (0.0, 0.0)
        args = [values[n] for n in node.inputs]
        values[out_name] = _convert(b, net, node, kind, layer, args, rng, fused, out_name)
        if fused is not None:  # the layer's own name reads its clamped output
            for name in (node.name, *passed):
                values[name] = values[out_name]
            skip.update((fused.name, *passed))
    out = values[net.output]
    result = out.tensor
    if out.nhwc_of_nchw:
        result = _to_nchw(b, result, net.output)
    graph = TFLiteGraph(tuple(b.tensors), tuple(b.ops), (x,), (result,), "xai-core int8")
    return graph, {name: (v.tensor, v.nhwc_of_nchw) for name, v in values.items()}


def _to_nhwc(b: _Builder, t: int, chw, name: str) -> int:
    c, h, w = chw
    if c == 1:
        return b.op(
            "RESHAPE",
            [t],
            [b.like(f"{name}/nhwc", t, (1, h, w, 1))],
            "ReshapeOptions",
            NewShape=np.array([1, h, w, 1]),
        )
    perm = b.const_int32(f"{name}/perm", [0, 2, 3, 1])
    return b.op(
        "TRANSPOSE", [t, perm], [b.like(f"{name}/nhwc", t, (1, h, w, c))], "TransposeOptions"
    )


def _to_nchw(b: _Builder, t: int, name: str) -> int:
    _, h, w, c = b.tensors[t].shape
    if c == 1:
        return b.op(
            "RESHAPE",
            [t],
            [b.like(f"{name}/nchw", t, (1, 1, h, w))],
            "ReshapeOptions",
            NewShape=np.array([1, 1, h, w]),
        )
    perm = b.const_int32(f"{name}/perm", [0, 3, 1, 2])
    return b.op(
        "TRANSPOSE", [t, perm], [b.like(f"{name}/nchw", t, (1, c, h, w))], "TransposeOptions"
    )


def _padding_option(layer, in_hw) -> tuple[int, tuple[int, int, int, int] | None]:
    """TFLite's SAME (0) or VALID (1), and explicit pads still to apply with PAD (or None)."""
    from xai_core.kernels.im2col import same_pads

    pads = tuple(layer.pads)
    if not any(pads):
        return 1, None
    kernel = getattr(layer, "kernel_size", getattr(layer, "pool_size", None))
    dilation = getattr(layer, "dilation", (1, 1))
    if pads == tuple(same_pads(in_hw, kernel, layer.strides, dilation)):
        return 0, None
    return 1, pads


def _pad(b: _Builder, t: int, pads, name: str, value: int | None = None) -> int:
    """PAD with the zero point (a real zero), or PADV2 with the int8 ``value``."""
    top, bottom, left, right = pads
    n, h, w, c = b.tensors[t].shape
    widths = b.const_int32(f"{name}/paddings", [[0, 0], [top, bottom], [left, right], [0, 0]])
    out = b.like(f"{name}/padded", t, (n, h + top + bottom, w + left + right, c))
    if value is None:
        return b.op("PAD", [t, widths], [out], "PadOptions")
    src = b.tensors[t]
    constant = b.tensor(
        f"{name}/pad_value",
        (),
        src.dtype,
        scale=src.scale,
        zero_point=src.zero_point,
        data=np.array(value, src.dtype),
    )
    return b.op("PADV2", [t, widths, constant], [out], "PadV2Options")


def _out_shape(layer, v: _Value) -> tuple[int, ...]:
    shape = tuple(layer.output_shape)
    if len(shape) == 3 and (v.nhwc_of_nchw or getattr(layer, "layout", "NCHW") == "NCHW"):
        c, h, w = shape
        return (1, h, w, c)
    return (1, *shape)


def _convert(b: _Builder, net, node, kind, layer, args, rng, fused, out_name) -> _Value:
    s_out, z_out = _params(*rng) if b.int8 else (None, None)
    if b.int8 and kind in FIXED_OUTPUT:
        s_out, z_out = FIXED_OUTPUT[kind]
    a = args[0] if args else None
    activation = {None: 0, "ReLU": 1, "ReLU6": 3}[
        None if fused is None else type(fused.layer).__name__
    ]

    def new(shape):
        return b.activation(out_name, shape, s_out, z_out)

    if kind in ("Identity", "Dropout", "Linear"):
        return a
    if kind == "Constant":
        value = np.asarray(layer.value, np.float64)
        if not b.int8:
            data = value.astype(np.float32).reshape((1, *value.shape))
            return _Value(b.tensor(out_name, data.shape, np.float32, data=data))
        cs, cz = _params(min(value.min(), 0.0), max(value.max(), 0.0))
        from xai_core.nn.quantize import QuantParams

        q = QuantParams(cs, cz).quantize(value).reshape((1, *value.shape))
        return _Value(b.tensor(out_name, q.shape, scale=cs, zero_point=cz, data=q))
    if kind in ("Conv2D", "DepthwiseConv2D"):
        t = a.tensor
        if not (a.nhwc_of_nchw or layer.layout == "NHWC"):
            raise CapabilityError(
                f"layer {node.name!r}: its input is not an image the graph knows."
            )
        _, h, w, c = b.tensors[t].shape
        padding, pads = _padding_option(layer, (h, w))
        if pads is not None:
            t = _pad(b, t, pads, node.name)
            padding = 1
        weight = np.asarray(layer.weight, np.float64)  # (f, c / groups, kh, kw)
        f, _, kh, kw = weight.shape
        depthwise = layer.groups == c and layer.groups > 1
        if layer.groups != 1 and not depthwise:
            raise CapabilityError(
                f"layer {node.name!r}: grouped convolutions with 1 < groups < channels cannot be quantised."
            )
        sh, sw = layer.strides
        dh, dw = layer.dilation
        if depthwise:  # TFLite: (1, kh, kw, f), quantised along the last axis
            w_t, s_w = b.weights(
                f"{node.name}/weight",
                weight,
                lambda w: w.reshape(f, kh, kw).transpose(1, 2, 0)[None],
                qdim=3,
            )
            op, options = "DEPTHWISE_CONV_2D", {"DepthMultiplier": f // c}
            opts_type = "DepthwiseConv2DOptions"
        else:  # TFLite: (f, kh, kw, c)
            w_t, s_w = b.weights(f"{node.name}/weight", weight, lambda w: w.transpose(0, 2, 3, 1))
            op, options, opts_type = "CONV_2D", {}, "Conv2DOptions"
        bias_t = b.bias(f"{node.name}/bias", layer.bias, f, a.tensor, s_w)
        out = new(_out_shape(layer, a))
        b.op(op, [t, w_t, bias_t], [out], opts_type, Padding=padding, StrideH=sh, StrideW=sw,
             DilationHFactor=dh, DilationWFactor=dw, FusedActivationFunction=activation, **options)  # fmt: skip
        return _Value(out, a.nhwc_of_nchw or layer.layout == "NCHW")
    if kind == "Dense":
        weight = np.asarray(layer.weight, np.float64).T  # (units, n_in)
        units = len(weight)
        w_t, s_w = b.weights(f"{node.name}/weight", weight, lambda w: w)
        bias_t = b.bias(f"{node.name}/bias", layer.bias, units, a.tensor, s_w)
        out = new((1, units))
        b.op(
            "FULLY_CONNECTED",
            [a.tensor, w_t, bias_t],
            [out],
            "FullyConnectedOptions",
            FusedActivationFunction=activation,
        )
        return _Value(out)
    if kind in ("Flatten", "Reshape"):
        t = _to_nchw(b, a.tensor, node.name) if a.nhwc_of_nchw else a.tensor
        shape = (1, *layer.output_shape)
        t = b.op(
            "RESHAPE", [t], [b.like(out_name, t, shape)], "ReshapeOptions", NewShape=np.array(shape)
        )
        if len(layer.output_shape) == 3:
            return _Value(_to_nhwc(b, t, layer.output_shape, node.name), True)
        return _Value(t)
    if kind in ("MaxPool2D", "AvgPool2D"):
        t = a.tensor
        _, h, w, _ = b.tensors[t].shape
        padding, pads = _padding_option(layer, (h, w))
        include_pad = kind == "AvgPool2D" and getattr(layer, "count_include_pad", True)
        if pads is not None and kind == "MaxPool2D":  # a value that never wins a max
            t = _pad(
                b, t, pads, node.name, value=QMIN if b.int8 else float(np.finfo(np.float32).min)
            )
        elif pads is not None and include_pad:
            t = _pad(b, t, pads, node.name)  # zeros that count, as the layer counts them
        elif pads is not None or (padding == 0 and include_pad):
            raise CapabilityError(
                f"layer {node.name!r}: this average pool's padding cannot be expressed in TFLite's "
                "int8 kernel (which leaves padding out of the count)."
            )
        if pads is not None:
            padding = 1
        ph, pw = layer.pool_size
        op = "MAX_POOL_2D" if kind == "MaxPool2D" else "AVERAGE_POOL_2D"
        out = b.like(out_name, t, _out_shape(layer, a))
        b.op(op, [t], [out], "Pool2DOptions", Padding=padding, StrideH=layer.strides[0],
             StrideW=layer.strides[1], FilterHeight=ph, FilterWidth=pw, FusedActivationFunction=0)  # fmt: skip
        return _Value(out, a.nhwc_of_nchw)
    if kind == "GlobalAveragePooling2D":
        axes = b.const_int32(f"{node.name}/axes", [1, 2])
        keep = bool(getattr(layer, "keepdims", False))
        _, h, w, c = b.tensors[a.tensor].shape
        out = new((1, 1, 1, c) if keep else (1, c))
        b.op("MEAN", [a.tensor, axes], [out], "ReducerOptions", KeepDims=keep)
        return _Value(out, a.nhwc_of_nchw and keep)
    if kind == "ZeroPadding2D":
        return _Value(_pad(b, a.tensor, layer.pads, out_name), a.nhwc_of_nchw)
    if kind in ("ReLU", "ReLU6", "Clip"):
        if kind == "Clip" and (layer.min_value, layer.max_value) != (0.0, 6.0):
            raise CapabilityError(f"layer {node.name!r}: only Clip(0, 6) (ReLU6) quantises.")
        op = "RELU" if kind == "ReLU" else "RELU6"
        out = new(b.tensors[a.tensor].shape)
        b.op(op, [a.tensor], [out])
        return _Value(out, a.nhwc_of_nchw)
    if kind in ("Tanh", "Sigmoid", "Softmax", "HardSwish"):
        op = {
            "Tanh": "TANH",
            "Sigmoid": "LOGISTIC",
            "Softmax": "SOFTMAX",
            "HardSwish": "HARD_SWISH",
        }[kind]
        out = new(b.tensors[a.tensor].shape)
        if kind == "Softmax":
            b.op(op, [a.tensor], [out], "SoftmaxOptions", Beta=1.0)
        else:
            b.op(op, [a.tensor], [out])
        return _Value(out, a.nhwc_of_nchw)
    if kind in ("Add", "Subtract", "Multiply"):
        return _elementwise(b, node, kind, args, new)
    if kind == "Concatenate":
        axis = int(layer.axis)
        image = args[0].nhwc_of_nchw
        ndim = len(b.tensors[args[0].tensor].shape)
        axis = axis % (ndim - 1)
        if image:
            axis = {0: 3, 1: 1, 2: 2}[axis]
        else:
            axis = axis + 1
        parts = []
        for k, v in enumerate(args):
            if b.int8 and b.params_of(v.tensor) != (float(np.float32(s_out)), z_out):
                shape = b.tensors[v.tensor].shape
                requant = b.tensor(f"{node.name}/input_{k}", shape, scale=s_out, zero_point=z_out)
                parts.append(b.op("QUANTIZE", [v.tensor], [requant]))
            else:
                parts.append(v.tensor)
        shapes = [b.tensors[t].shape for t in parts]
        shape = list(shapes[0])
        shape[axis] = sum(sh[axis] for sh in shapes)
        out = new(tuple(shape))
        b.op(
            "CONCATENATION",
            parts,
            [out],
            "ConcatenationOptions",
            Axis=axis,
            FusedActivationFunction=0,
        )
        return _Value(out, image)
    raise CapabilityError(f"layer {node.name!r} ({kind}) cannot be quantised.")  # pragma: no cover


def _elementwise(b: _Builder, node, kind, args, new) -> _Value:
    if len(args) != 2:
        raise CapabilityError(f"layer {node.name!r}: only two-input {kind} layers quantise.")
    image = any(v.nhwc_of_nchw for v in args)
    tensors = []
    for v in args:
        t = b.tensors[v.tensor]
        if image and not v.nhwc_of_nchw and t.data is not None and len(t.shape) == 4:
            # a constant of NCHW per-sample shape (c, h, w): lay it out NHWC too
            data = t.data.transpose(0, 2, 3, 1)
            b.tensors[v.tensor] = TensorInfo(
                t.index, t.name, data.shape, t.dtype, t.scale, t.zero_point, 0, data
            )
        tensors.append(v.tensor)
    shape = np.broadcast_shapes(*(b.tensors[t].shape for t in tensors))
    out = new(tuple(shape))
    op = {"Add": "ADD", "Subtract": "SUB", "Multiply": "MUL"}[kind]
    b.op(
        op,
        tensors,
        [out],
        {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions"}[op],
        FusedActivationFunction=0,
    )
    return _Value(out, image)
