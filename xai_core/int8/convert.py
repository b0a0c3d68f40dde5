"""A native network as a full-integer TFLite graph: the converter's post-training int8 scheme.

:func:`build_int8_graph` turns a float network (a :class:`~xai_core.nn.Graph` or
:class:`~xai_core.nn.Sequential`, batch norms folded) and the value range of every node on
calibration rows into a :class:`~xai_core.int8.graph.TFLiteGraph`:

- weights int8, symmetric, one scale per output channel (``max |w| / 127``);
- activations int8, asymmetric, one scale and zero point per tensor, from the calibration
  range (zero always representable);
- biases int32 at scale ``s_in * s_w``;
- a ReLU or ReLU6 that is the only consumer of a convolution, a dense layer, an addition,
  subtraction or multiplication, or an unfolded batch norm is fused into it;
- a grouped convolution is a CONV_2D whose filters take ``channels / groups`` inputs (one
  group per channel: DEPTHWISE_CONV_2D); a batch norm nothing folds into is MUL by its
  per-channel scale and ADD of its shift, int8 constants, the MUL's output calibrated
  through the converter's ``intermediates`` hook;
- tanh, the logistic function and softmax get TFLite's fixed output scales (1/128; 1/256
  with zero point -128); pools keep their input's parameters; the inputs of a concatenation
  are requantised to its output's parameters where they differ (TFLite's int8 kernel needs
  them equal);
- images are NHWC inside the graph: an NCHW network's image is transposed once, and back
  before it is flattened, so the flattened order (and the next dense layer's weights) stay
  the network's.

Each layer class has one converter, a small function registered with :func:`add_converter`
and found along the layer's MRO (:func:`converter_for`), so a subclass of a layer converts as
its base class does::

    @add_converter(MyLayer)
    def _my_layer(b: Builder, c: Conversion) -> Value:
        out = b.output(c, b.tensors[c.x.tensor].shape)
        b.op("RELU", [c.x.tensor], [out])
        return Value(out, c.x.nhwc_of_nchw)

The graph then runs on TFLite's int8 kernels (:mod:`xai_core.int8.kernels_int8`), bit-exact
with LiteRT, and is what :func:`xai_core.to_tflite` writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core.errors import CapabilityError, ValidationError
from xai_core.int8.graph import OperatorInfo, TensorInfo, TFLiteGraph
from xai_core.int8.numerics import QMIN, QuantParams, round_half_away
from xai_core.kernels.im2col import same_pads
from xai_core.nn.layers import (
    Add,
    AvgPool2D,
    BatchNormalization,
    Clip,
    Concatenate,
    Constant,
    Conv2D,
    Dense,
    DepthwiseConv2D,
    Divide,
    Dropout,
    Exp,
    Flatten,
    Gather,
    Gelu,
    GlobalAveragePooling2D,
    HardSigmoid,
    HardSwish,
    Identity,
    LayerNormalization,
    LeakyReLU,
    Linear,
    Log,
    MatMul,
    MaxPool2D,
    Multiply,
    PRelu,
    Reduce,
    ReLU,
    ReLU6,
    ReplaceNaN,
    Reshape,
    Sigmoid,
    Slice,
    Softmax,
    Subtract,
    Tanh,
    Transpose,
    ZeroPadding2D,
)

__all__ = [
    "CONVERTERS",
    "QUANTISABLE",
    "Builder",
    "Conversion",
    "Converter",
    "Value",
    "add_converter",
    "build_int8_graph",
    "check_quantisable",
    "converter_for",
]


def _params(lo: float, hi: float) -> tuple[float, int]:
    p = QuantParams.from_range(lo, hi)
    return p.scale, p.zero_point


@dataclass
class Value:
    """A node's output in the int8 graph: its tensor, and whether it holds an NCHW image as NHWC."""

    tensor: int
    nhwc_of_nchw: bool = False


@dataclass(frozen=True)
class Conversion:
    """What a converter converts: a node of the network, its inputs, its output's parameters.

    Attributes
    ----------
    node : xai_core.nn.Node
        The node (``name``, ``layer``, ``inputs``).
    args : list of Value
        The values of its inputs, in order.
    name : str
        The output tensor's name (the fused activation's node when one is fused).
    scale, zero_point : float and int, or None
        The output's int8 parameters (None in a float graph).
    activation : int
        TFLite's fused activation: 0 none, 1 ReLU, 3 ReLU6.
    """

    node: Any
    args: list[Value]
    name: str
    scale: float | None
    zero_point: int | None
    activation: int = 0

    @property
    def layer(self) -> Any:
        return self.node.layer

    @property
    def x(self) -> Value:
        """The first input."""
        return self.args[0]


@dataclass(frozen=True)
class Converter:
    """A layer class's converter and how the graph builder treats the layer around it.

    Attributes
    ----------
    convert : callable
        ``convert(builder, conversion) -> Value``.
    fuses_activation : bool
        A ReLU or ReLU6 that is the layer's only consumer (through identities) is fused into
        its clamp (convolutions, dense layers).
    fused_activation : int or None
        TFLite's fused-activation code when this layer is fused into the layer before it
        (ReLU 1, ReLU6 3).
    passes_through : bool
        The layer's output is its input (Identity, Dropout, Linear): a fusion looks past it.
    fixed_output : (float, int) or None
        TFLite's fixed output scale and zero point (Tanh, Sigmoid, Softmax).
    intermediates : callable or None
        ``intermediates(layer, x) -> {key: array}``: float values of tensors inside the
        layer's operators (a batch norm's ``x * scale`` before its ADD) on the network's
        input ``x`` of the layer; calibration records their ranges as ``"<node>/<key>"``
        (:meth:`Builder.range_of`), as the converter's calibration sees every tensor.
    refuses : callable or None
        ``refuses(layer) -> str or None``: why this layer's settings cannot be quantised
        (``Clip(-1, 2)``, an L2 reduction), checked with every other layer before any work.
    """

    convert: Callable[[Builder, Conversion], Value]
    fuses_activation: bool = False
    fused_activation: int | None = None
    passes_through: bool = False
    fixed_output: tuple[float, int] | None = None
    intermediates: Callable[[Any, np.ndarray], dict[str, np.ndarray]] | None = None
    refuses: Callable[[Any], str | None] | None = None


#: Layer class -> its converter; filled by :func:`add_converter`, read by :func:`converter_for`.
CONVERTERS: dict[type, Converter] = {}


def add_converter(
    *layer_types: type,
    fuses_activation: bool = False,
    fused_activation: int | None = None,
    passes_through: bool = False,
    fixed_output: tuple[float, int] | None = None,
    intermediates: Callable[[Any, np.ndarray], dict[str, np.ndarray]] | None = None,
    refuses: Callable[[Any], str | None] | None = None,
) -> Callable:
    """Register the decorated function as the converter of ``layer_types`` (and their subclasses).

    Parameters
    ----------
    *layer_types : type
        Layer classes; a later registration of a class replaces the earlier one.
    fuses_activation, fused_activation, passes_through, fixed_output, intermediates, refuses
        As in :class:`Converter`.

    Returns
    -------
    callable
        The decorator; it returns the function unchanged.
    """
    for cls in layer_types:
        if not isinstance(cls, type):
            raise ValidationError(f"add_converter takes layer classes; got {cls!r}.")

    def register(fn: Callable[[Builder, Conversion], Value]) -> Callable:
        converter = Converter(
            fn,
            fuses_activation,
            fused_activation,
            passes_through,
            fixed_output,
            intermediates,
            refuses,
        )
        for cls in layer_types:
            CONVERTERS[cls] = converter
        return fn

    return register


def converter_for(layer: Any) -> Converter | None:
    """The converter of the first class along ``type(layer).__mro__`` that has one, or None."""
    for cls in type(layer).__mro__:
        found = CONVERTERS.get(cls)
        if found is not None:
            return found
    return None


class Builder:
    """The tensors and operators of the graph being built, and how to add to them."""

    def __init__(self, int8: bool = True, ranges: dict | None = None) -> None:
        self.int8 = int8  # False: a float32 graph with the same operators
        self.ranges = ranges or {}
        self.layout = "NCHW"  # the network's image layout (convert sets it)
        self.tensors: list[TensorInfo] = []
        self.ops: list[OperatorInfo] = []
        self.values: dict[int, np.ndarray] = {}  # a constant tensor's float64 value

    def range_of(self, name: str) -> tuple[float, int]:
        """The int8 scale and zero point of the calibrated tensor ``name``."""
        if name not in self.ranges:
            raise ValidationError(f"no calibration range for {name!r}; quantise with xai.quantize.")
        return _params(*self.ranges[name])

    def constant(self, name: str, value, *, dtype=None) -> int:
        """A constant: int8 at its own range (zero included), or float32."""
        value = np.asarray(value, np.float64)
        if not self.int8:
            t = self.tensor(name, value.shape, np.float32, data=value.astype(np.float32))
        else:
            cs, cz = _params(min(float(value.min()), 0.0), max(float(value.max()), 0.0))
            q = QuantParams(cs, cz).quantize(value)
            t = self.tensor(name, q.shape, scale=cs, zero_point=cz, data=q)
        self.values[t] = value
        return t

    def value_of(self, t: int) -> np.ndarray | None:
        """The float64 value of the constant tensor ``t`` (before quantisation), or None for
        an activation."""
        return self.values.get(t)

    def activation(self, name: str, shape, scale: float, zero_point: int) -> int:
        """An activation tensor: int8 at ``scale`` / ``zero_point``, or float32."""
        if self.int8:
            return self.tensor(name, shape, scale=scale, zero_point=zero_point)
        return self.tensor(name, shape, np.float32)

    def output(self, c: Conversion, shape) -> int:
        """The output tensor of the conversion ``c``, of ``shape``, at its parameters."""
        return self.activation(c.name, shape, c.scale, c.zero_point)

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
    flat = np.asarray(w_oc, np.float64).reshape(len(w_oc), -1)
    peak = np.abs(flat).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0)
    q = np.clip(round_half_away(flat / scale[:, None]), -127, 127).astype(np.int8)
    return q.reshape(w_oc.shape), scale


def _bias(b: np.ndarray | None, n: int, s_in: float, s_w: np.ndarray) -> np.ndarray:
    b = np.zeros(n) if b is None else np.asarray(b, np.float64)
    return np.clip(round_half_away(b / (s_in * s_w)), -(2**31), 2**31 - 1).astype(np.int32)


def _live(net: Any) -> set[str]:
    """The nodes the output reads, directly or not (the converter prunes the rest: an
    importer's dead ``IsNaN`` beside the ``Where`` it fed)."""
    by_name = {node.name: node for node in net.nodes}
    live, todo = set(), [net.output]
    while todo:
        name = todo.pop()
        if name in live or name not in by_name:
            continue
        live.add(name)
        todo.extend(by_name[name].inputs)
    return live


def check_quantisable(net: Any) -> None:
    """Raise :class:`CapabilityError` naming every layer of ``net`` that cannot be quantised
    (of those the output reads)."""
    refused = []
    live = _live(net)
    for node in net.nodes:
        if node.name not in live:
            continue
        converter = converter_for(node.layer)
        why = None
        if converter is None:
            why = "no int8 conversion"
        elif converter.refuses is not None:
            why = converter.refuses(node.layer)
        if why is not None:
            refused.append(f"{node.name!r} ({type(node.layer).__name__}: {why})")
    if refused:
        names = sorted(cls.__name__ for cls in CONVERTERS)
        which = "layer" if len(refused) == 1 else f"{len(refused)} layers"
        raise CapabilityError(
            f"{which} cannot be quantised: {'; '.join(refused)}. Quantisable layers: "
            f"{', '.join(names)}."
        )


def _fusion(net, node, consumers) -> tuple[Any, list[str]]:
    """The ReLU / ReLU6 node fused into ``node`` (or None), and the identities passed to reach it."""
    fused = None
    passed: list[str] = []  # identities between the layer and its activation
    after = consumers.get(node.name, [])
    if not converter_for(node.layer).fuses_activation:
        return fused, passed
    while len(after) == 1:
        nxt = net.node(after[0])
        found = converter_for(nxt.layer)
        if found.fused_activation is not None:
            fused = nxt
            break
        if not found.passes_through:
            break
        passed.append(nxt.name)
        after = consumers.get(nxt.name, [])
    return fused, passed


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
    b = Builder(int8=ranges is not None, ranges=ranges)
    b.layout = getattr(net, "layout", "NCHW")  # how the network lays out its images
    consumers = _consumers(net)
    input_shape = tuple(net.input_shape)
    s, z = _params(*ranges[net.input_name]) if b.int8 else (None, None)
    x = b.activation(net.input_name, (1, *input_shape), s, z)
    values: dict[str, Value] = {net.input_name: Value(x)}
    if len(input_shape) == 3 and getattr(net, "layout", "NCHW") == "NCHW":
        values[net.input_name] = Value(_to_nhwc(b, x, input_shape, net.input_name), True)
    skip: set[str] = {node.name for node in net.nodes} - _live(net)
    for node in net.nodes:
        if node.name in skip:
            continue
        converter = converter_for(node.layer)
        fused, passed = _fusion(net, node, consumers)
        out_name = fused.name if fused is not None else node.name
        s_out, z_out = _params(*ranges[out_name]) if b.int8 else (None, None)
        if b.int8 and converter.fixed_output is not None:
            s_out, z_out = converter.fixed_output
        activation = 0 if fused is None else converter_for(fused.layer).fused_activation
        args = [values[n] for n in node.inputs]
        c = Conversion(node, args, out_name, s_out, z_out, activation)
        values[out_name] = converter.convert(b, c)
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


def _to_nhwc(b: Builder, t: int, chw, name: str) -> int:
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


def _to_nchw(b: Builder, t: int, name: str) -> int:
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
    pads = tuple(layer.pads)
    if not any(pads):
        return 1, None
    kernel = getattr(layer, "kernel_size", getattr(layer, "pool_size", None))
    dilation = getattr(layer, "dilation", (1, 1))
    if pads == tuple(same_pads(in_hw, kernel, layer.strides, dilation)):
        return 0, None
    return 1, pads


def _pad(b: Builder, t: int, pads, name: str, value: int | None = None) -> int:
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


def _out_shape(layer, v: Value) -> tuple[int, ...]:
    shape = tuple(layer.output_shape)
    if len(shape) == 3 and (v.nhwc_of_nchw or getattr(layer, "layout", "NCHW") == "NCHW"):
        c, h, w = shape
        return (1, h, w, c)
    return (1, *shape)


# -- the converters, one per layer kind ------------------------------------------------------


@add_converter(Identity, Dropout, Linear, passes_through=True)
def _identity(b: Builder, c: Conversion) -> Value:
    return c.x


@add_converter(Constant)
def _constant(b: Builder, c: Conversion) -> Value:
    value = np.asarray(c.layer.value, np.float64)
    return Value(b.constant(c.name, value.reshape((1, *value.shape))))


@add_converter(Conv2D, DepthwiseConv2D, fuses_activation=True)
def _conv(b: Builder, c: Conversion) -> Value:
    layer, a, name = c.layer, c.x, c.node.name
    t = a.tensor
    if not (a.nhwc_of_nchw or layer.layout == "NHWC"):
        raise CapabilityError(f"layer {name!r}: its input is not an image the graph knows.")
    _, h, w, channels = b.tensors[t].shape
    padding, pads = _padding_option(layer, (h, w))
    if pads is not None:
        t = _pad(b, t, pads, name)
        padding = 1
    weight = np.asarray(layer.weight, np.float64)  # (f, c / groups, kh, kw)
    f, _, kh, kw = weight.shape
    # one group per channel is TFLite's DEPTHWISE_CONV_2D; other groups stay a CONV_2D whose
    # filters take channels / groups inputs, as the converter writes a grouped convolution
    depthwise = layer.groups == channels and layer.groups > 1
    sh, sw = layer.strides
    dh, dw = layer.dilation
    if depthwise:  # TFLite: (1, kh, kw, f), quantised along the last axis
        w_t, s_w = b.weights(
            f"{name}/weight",
            weight,
            lambda w: w.reshape(f, kh, kw).transpose(1, 2, 0)[None],
            qdim=3,
        )
        op, options = "DEPTHWISE_CONV_2D", {"DepthMultiplier": f // channels}
        opts_type = "DepthwiseConv2DOptions"
    else:  # TFLite: (f, kh, kw, c / groups)
        w_t, s_w = b.weights(f"{name}/weight", weight, lambda w: w.transpose(0, 2, 3, 1))
        op, options, opts_type = "CONV_2D", {}, "Conv2DOptions"
    bias_t = b.bias(f"{name}/bias", layer.bias, f, a.tensor, s_w)
    out = b.output(c, _out_shape(layer, a))
    b.op(op, [t, w_t, bias_t], [out], opts_type, Padding=padding, StrideH=sh, StrideW=sw,
         DilationHFactor=dh, DilationWFactor=dw, FusedActivationFunction=c.activation, **options)  # fmt: skip
    return Value(out, a.nhwc_of_nchw or layer.layout == "NCHW")


@add_converter(Dense, fuses_activation=True)
def _dense(b: Builder, c: Conversion) -> Value:
    name = c.node.name
    weight = np.asarray(c.layer.weight, np.float64).T  # (units, n_in)
    units = len(weight)
    w_t, s_w = b.weights(f"{name}/weight", weight, lambda w: w)
    bias_t = b.bias(f"{name}/bias", c.layer.bias, units, c.x.tensor, s_w)
    out = b.output(c, (1, units))
    b.op(
        "FULLY_CONNECTED",
        [c.x.tensor, w_t, bias_t],
        [out],
        "FullyConnectedOptions",
        FusedActivationFunction=c.activation,
    )
    return Value(out)


@add_converter(Flatten, Reshape)
def _reshape(b: Builder, c: Conversion) -> Value:
    a, name, out_shape = c.x, c.node.name, c.layer.output_shape
    t = _to_nchw(b, a.tensor, name) if a.nhwc_of_nchw else a.tensor
    shape = (1, *out_shape)
    t = b.op("RESHAPE", [t], [b.like(c.name, t, shape)], "ReshapeOptions", NewShape=np.array(shape))
    if len(out_shape) == 3 and b.layout == "NCHW":
        return Value(_to_nhwc(b, t, out_shape, name), True)  # an NCHW image, laid out NHWC
    return Value(t)


@add_converter(Transpose)
def _transpose(b: Builder, c: Conversion) -> Value:
    """TRANSPOSE of the tensor in the layer's own (NCHW) order: ShuffleNet's channel shuffle."""
    a, name, out_shape = c.x, c.node.name, c.layer.output_shape
    t = _to_nchw(b, a.tensor, name) if a.nhwc_of_nchw else a.tensor
    perm = b.const_int32(f"{name}/transpose_perm", [0, *(p + 1 for p in c.layer.perm)])
    out = b.like(c.name, t, (1, *out_shape))
    t = b.op("TRANSPOSE", [t, perm], [out], "TransposeOptions")
    if len(out_shape) == 3:
        return Value(_to_nhwc(b, t, out_shape, name), True)
    return Value(t)


def _pool(b: Builder, c: Conversion, op: str) -> Value:
    """MAX_POOL_2D or AVERAGE_POOL_2D, with explicit padding as PAD / PADV2 before it."""
    layer, a, name = c.layer, c.x, c.node.name
    t = a.tensor
    _, h, w, _ = b.tensors[t].shape
    padding, pads = _padding_option(layer, (h, w))
    average = op == "AVERAGE_POOL_2D"
    include_pad = average and getattr(layer, "count_include_pad", True)
    if pads is not None and not average and b.int8 and b.params_of(t)[1] == QMIN:
        t = _pad(b, t, pads, name)  # the zero point is QMIN already (a ReLU's output): PAD
    elif pads is not None and not average:  # a value that never wins a max: PADV2
        t = _pad(b, t, pads, name, value=QMIN if b.int8 else float(np.finfo(np.float32).min))
    elif pads is not None and include_pad:
        t = _pad(b, t, pads, name)  # zeros that count, as the layer counts them
    elif pads is not None or (padding == 0 and include_pad):
        raise CapabilityError(
            f"layer {name!r}: this average pool's padding cannot be expressed in TFLite's "
            "int8 kernel (which leaves padding out of the count)."
        )
    if pads is not None:
        padding = 1
    ph, pw = layer.pool_size
    out = b.like(c.name, t, _out_shape(layer, a))
    b.op(op, [t], [out], "Pool2DOptions", Padding=padding, StrideH=layer.strides[0],
         StrideW=layer.strides[1], FilterHeight=ph, FilterWidth=pw, FusedActivationFunction=0)  # fmt: skip
    return Value(out, a.nhwc_of_nchw)


@add_converter(MaxPool2D)
def _max_pool(b: Builder, c: Conversion) -> Value:
    return _pool(b, c, "MAX_POOL_2D")


@add_converter(AvgPool2D)
def _average_pool(b: Builder, c: Conversion) -> Value:
    return _pool(b, c, "AVERAGE_POOL_2D")


@add_converter(GlobalAveragePooling2D)
def _global_average_pool(b: Builder, c: Conversion) -> Value:
    a = c.x
    axes = b.const_int32(f"{c.node.name}/axes", [1, 2])
    keep = bool(getattr(c.layer, "keepdims", False))
    _, h, w, channels = b.tensors[a.tensor].shape
    out = b.output(c, (1, 1, 1, channels) if keep else (1, channels))
    b.op("MEAN", [a.tensor, axes], [out], "ReducerOptions", KeepDims=keep)
    return Value(out, a.nhwc_of_nchw and keep)


@add_converter(ZeroPadding2D)
def _zero_padding(b: Builder, c: Conversion) -> Value:
    return Value(_pad(b, c.x.tensor, c.layer.pads, c.name), c.x.nhwc_of_nchw)


def _unary(b: Builder, c: Conversion, op: str, options_type=None, **options) -> Value:
    """An elementwise operator of one input, its output of the input's shape."""
    a = c.x
    out = b.output(c, b.tensors[a.tensor].shape)
    b.op(op, [a.tensor], [out], options_type, **options)
    return Value(out, a.nhwc_of_nchw)


@add_converter(ReLU, fused_activation=1)
def _relu(b: Builder, c: Conversion) -> Value:
    return _unary(b, c, "RELU")


@add_converter(ReLU6, fused_activation=3)
def _relu6(b: Builder, c: Conversion) -> Value:
    return _unary(b, c, "RELU6")


def _clip_refuses(layer) -> str | None:
    if (layer.min_value, layer.max_value) != (0.0, 6.0):
        return f"Clip({layer.min_value}, {layer.max_value}); only Clip(0, 6), ReLU6, quantises"
    return None


@add_converter(Clip, refuses=_clip_refuses)
def _clip(b: Builder, c: Conversion) -> Value:
    return _unary(b, c, "RELU6")


@add_converter(LeakyReLU)
def _leaky_relu(b: Builder, c: Conversion) -> Value:
    return _unary(b, c, "LEAKY_RELU", "LeakyReluOptions", Alpha=float(c.layer.alpha))


@add_converter(PRelu)
def _prelu(b: Builder, c: Conversion) -> Value:
    """PRELU with the slope as an int8 constant laid out as the graph holds the samples."""
    a, name = c.x, c.node.name
    shape = b.tensors[a.tensor].shape
    rank = len(shape) - 1
    slope = np.asarray(c.layer.slope, np.float64)
    slope = slope.reshape((1,) * (rank - slope.ndim) + slope.shape)
    if a.nhwc_of_nchw:
        slope = slope.transpose(1, 2, 0)
    alpha = b.constant(f"{name}/slope", slope[None])
    out = b.output(c, shape)
    b.op("PRELU", [a.tensor, alpha], [out])
    return Value(out, a.nhwc_of_nchw)


@add_converter(Gelu)
def _gelu(b: Builder, c: Conversion) -> Value:
    approximate = c.layer.approximate == "tanh"
    return _unary(b, c, "GELU", "GeluOptions", Approximate=approximate)


def _hard_sigmoid_scaled(layer, x: np.ndarray) -> dict[str, np.ndarray]:
    return {"scaled": np.asarray(x, np.float64) * layer.alpha}


@add_converter(HardSigmoid, fixed_output=(1 / 255, -128), intermediates=_hard_sigmoid_scaled)
def _hard_sigmoid(b: Builder, c: Conversion) -> Value:
    """``clip(alpha x + beta, 0, 1)``: MUL and ADD, the ADD's output quantised over exactly
    [0, 1] so that its int8 saturation is the clip (both operators map to the Edge TPU)."""
    a, name = c.x, c.node.name
    shape = b.tensors[a.tensor].shape
    one = (1,) * len(shape)
    alpha = b.constant(f"{name}/alpha", np.full(one, c.layer.alpha))
    beta = b.constant(f"{name}/beta", np.full(one, c.layer.beta))
    ms, mz = b.range_of(f"{name}/scaled") if b.int8 else (None, None)
    scaled = b.activation(f"{name}/scaled", shape, ms, mz)
    b.op("MUL", [a.tensor, alpha], [scaled], "MulOptions", FusedActivationFunction=0)
    if b.int8:
        out = b.output(c, shape)
        b.op("ADD", [scaled, beta], [out], "AddOptions", FusedActivationFunction=0)
        return Value(out, a.nhwc_of_nchw)
    # a float graph clips explicitly
    shifted = b.activation(f"{name}/shifted", shape, None, None)
    b.op("ADD", [scaled, beta], [shifted], "AddOptions", FusedActivationFunction=0)
    out = b.output(c, shape)
    b.op("RELU_0_TO_1", [shifted], [out])
    return Value(out, a.nhwc_of_nchw)


@add_converter(Tanh, fixed_output=(1 / 128, 0))
def _tanh(b: Builder, c: Conversion) -> Value:
    return _unary(b, c, "TANH")


@add_converter(Sigmoid, fixed_output=(1 / 256, -128))
def _sigmoid(b: Builder, c: Conversion) -> Value:
    return _unary(b, c, "LOGISTIC")


@add_converter(Softmax, fixed_output=(1 / 256, -128))
def _softmax(b: Builder, c: Conversion) -> Value:
    """SOFTMAX over the last axis; an NCHW image's last axis (width) is found by going back
    to NCHW first, and the result is laid out NHWC again."""
    a = c.x
    if not a.nhwc_of_nchw:
        return _unary(b, c, "SOFTMAX", "SoftmaxOptions", Beta=1.0)
    t = _to_nchw(b, a.tensor, c.node.name)
    out = b.output(c, b.tensors[t].shape)
    b.op("SOFTMAX", [t], [out], "SoftmaxOptions", Beta=1.0)
    return Value(_to_nhwc(b, out, b.tensors[t].shape[1:], c.name), True)


_REDUCERS = {"max": "REDUCE_MAX", "min": "REDUCE_MIN", "mean": "MEAN"}


def _reduce_refuses(layer) -> str | None:
    if layer.reduction not in _REDUCERS:
        return f"a {layer.reduction!r} reduction; max, min and mean quantise"
    return None


@add_converter(Reduce, refuses=_reduce_refuses)
def _reduce(b: Builder, c: Conversion) -> Value:
    """MEAN (requantised to its output's range), REDUCE_MAX or REDUCE_MIN (the input's
    parameters kept, as the converter ties them) over the layer's axes."""
    layer, a, name = c.layer, c.x, c.node.name
    rank = len(layer.input_shape)
    axes = sorted({int(ax) % rank for ax in layer.axes})
    t, image = a.tensor, a.nhwc_of_nchw
    if image and not layer.keepdims:
        kept = [_channel_axis(a, k, rank) for k in range(rank) if k not in axes]
        if kept != sorted(kept):  # the axes left would come out in another order
            t, image = _to_nchw(b, t, name), False
    graph_axes = sorted(_channel_axis(Value(t, image), ax, rank) for ax in axes)
    shape = list(b.tensors[t].shape)
    for ax in graph_axes:
        shape[ax] = 1
    if not layer.keepdims:
        shape = [d for k, d in enumerate(shape) if k not in graph_axes]
    op = _REDUCERS[layer.reduction]
    axes_t = b.const_int32(f"{name}/axes", graph_axes)
    out = b.output(c, tuple(shape)) if op == "MEAN" else b.like(c.name, t, tuple(shape))
    b.op(op, [t, axes_t], [out], "ReducerOptions", KeepDims=bool(layer.keepdims))
    return Value(out, image and bool(layer.keepdims))


@add_converter(Slice)
def _slice(b: Builder, c: Conversion) -> Value:
    """STRIDED_SLICE along the layer's axis (in the graph's layout), every other axis whole;
    the output keeps the input's parameters (no arithmetic)."""
    layer, a, name = c.layer, c.x, c.node.name
    shape = list(b.tensors[a.tensor].shape)
    axis = _channel_axis(a, layer.axis, len(shape) - 1)
    start, stop, step = slice(layer.start, layer.stop, layer.step).indices(shape[axis])
    begin, end, strides = [0] * len(shape), list(shape), [1] * len(shape)
    begin[axis], end[axis], strides[axis] = start, stop, step
    shape[axis] = len(range(start, stop, step))
    mask = ((1 << len(shape)) - 1) & ~(1 << axis)  # every axis but the sliced one taken whole
    tensors = [a.tensor, *(b.const_int32(f"{name}/{k}", v) for k, v in
               (("begin", begin), ("end", end), ("strides", strides)))]  # fmt: skip
    out = b.like(c.name, a.tensor, tuple(shape))
    b.op("STRIDED_SLICE", tensors, [out], "StridedSliceOptions", BeginMask=mask, EndMask=mask)
    return Value(out, a.nhwc_of_nchw)


@add_converter(Transpose)
def _transpose(b: Builder, c: Conversion) -> Value:
    a, name, perm = c.x, c.node.name, c.layer.perm
    t = _to_nchw(b, a.tensor, name) if a.nhwc_of_nchw else a.tensor
    src = b.tensors[t].shape
    shape = (1, *(src[p + 1] for p in perm))
    perm_t = b.const_int32(f"{name}/perm", [0, *(p + 1 for p in perm)])
    t = b.op("TRANSPOSE", [t, perm_t], [b.like(c.name, t, shape)], "TransposeOptions")
    if len(perm) == 3:  # an image again: NHWC inside, as after a reshape
        return Value(_to_nhwc(b, t, shape[1:], name), True)
    return Value(t)


@add_converter(HardSwish)
def _hard_swish(b: Builder, c: Conversion) -> Value:
    return _unary(b, c, "HARD_SWISH")


def _elementwise(b: Builder, c: Conversion, op: str, options_type: str) -> Value:
    """ADD, SUB or MUL of two inputs, broadcast; an NCHW constant laid out NHWC beside an image."""
    args = c.args
    if len(args) != 2:
        kind = type(c.layer).__name__
        raise CapabilityError(f"layer {c.node.name!r}: only two-input {kind} layers quantise.")
    image = any(v.nhwc_of_nchw for v in args)

    def lays_out(v: Value) -> bool:  # an input that goes NHWC beside an image
        t = b.tensors[v.tensor]
        single = all(d == 1 for d in t.shape)
        return v.nhwc_of_nchw or (t.data is not None and (len(t.shape) == 4 or single))

    if image and not all(lays_out(v) for v in args):
        # beside a tensor of another rank or layout (attention's scores and mask), the images
        # go back to the network's order, where the network broadcasts them
        args = [Value(_to_nchw(b, v.tensor, f"{c.node.name}/input_{k}")) if v.nhwc_of_nchw
                else v for k, v in enumerate(args)]  # fmt: skip
        image = False
    tensors = []
    for v in args:
        t = b.tensors[v.tensor]
        if image and not v.nhwc_of_nchw and t.data is not None and len(t.shape) == 4:
            # a constant of NCHW per-sample shape (c, h, w): a copy laid out NHWC (another
            # operator may read the constant as it is)
            data = np.ascontiguousarray(t.data.transpose(0, 2, 3, 1))
            tensors.append(
                b.tensor(f"{t.name}/nhwc", data.shape, t.dtype, t.scale, t.zero_point, data=data)
            )
            continue
        tensors.append(v.tensor)
    shape = np.broadcast_shapes(*(b.tensors[t].shape for t in tensors))
    out = b.output(c, tuple(shape))
    b.op(op, tensors, [out], options_type, FusedActivationFunction=c.activation)
    return Value(out, image)


@add_converter(Add, fuses_activation=True)
def _add(b: Builder, c: Conversion) -> Value:
    return _elementwise(b, c, "ADD", "AddOptions")


@add_converter(Subtract, fuses_activation=True)
def _subtract(b: Builder, c: Conversion) -> Value:
    return _elementwise(b, c, "SUB", "SubOptions")


@add_converter(Multiply, fuses_activation=True)
def _multiply(b: Builder, c: Conversion) -> Value:
    return _elementwise(b, c, "MUL", "MulOptions")


def _channel_axis(v: Value, axis: int, ndim: int) -> int:
    """The graph tensor's axis of a layer's per-sample ``axis`` (images NHWC inside)."""
    return {0: 3, 1: 1, 2: 2}[axis] if v.nhwc_of_nchw else axis + 1


def _batch_norm_scaled(layer, x: np.ndarray) -> dict[str, np.ndarray]:
    from xai_core.backends.cpu import CPUBackend

    scale, _ = layer.scale_shift(CPUBackend(dtype=np.float64))
    return {"scaled": np.asarray(x, np.float64) * scale.reshape(layer._shape())}


@add_converter(BatchNormalization, fuses_activation=True, intermediates=_batch_norm_scaled)
def _batch_norm(b: Builder, c: Conversion) -> Value:
    """A batch norm nothing folds into (after a concatenation, a pool, the input): the
    converter's MUL by the per-channel scale, then ADD of the per-channel shift, a ReLU or
    ReLU6 after it fused into the ADD."""
    from xai_core.backends.cpu import CPUBackend

    layer, a, name = c.layer, c.x, c.node.name
    scale, shift = (np.asarray(v, np.float64) for v in layer.scale_shift(CPUBackend(np.float64)))
    shape_in = b.tensors[a.tensor].shape
    shape = [1] * len(shape_in)
    shape[_channel_axis(a, layer.channel_axis, len(shape_in))] = len(scale)
    s_t = b.constant(f"{name}/scale", scale.reshape(shape))
    t_t = b.constant(f"{name}/shift", shift.reshape(shape))
    ms, mz = b.range_of(f"{name}/scaled") if b.int8 else (None, None)
    scaled = b.activation(f"{name}/scaled", shape_in, ms, mz)
    b.op("MUL", [a.tensor, s_t], [scaled], "MulOptions", FusedActivationFunction=0)
    out = b.output(c, shape_in)
    b.op("ADD", [scaled, t_t], [out], "AddOptions", FusedActivationFunction=c.activation)
    return Value(out, a.nhwc_of_nchw)


@add_converter(Concatenate)
def _concatenate(b: Builder, c: Conversion) -> Value:
    args, name = c.args, c.node.name
    image = args[0].nhwc_of_nchw
    ndim = len(b.tensors[args[0].tensor].shape)
    axis = int(c.layer.axis) % (ndim - 1)
    axis = {0: 3, 1: 1, 2: 2}[axis] if image else axis + 1
    parts = []
    for k, v in enumerate(args):
        if b.int8 and b.params_of(v.tensor) != (float(np.float32(c.scale)), c.zero_point):
            shape = b.tensors[v.tensor].shape
            requant = b.tensor(f"{name}/input_{k}", shape, scale=c.scale, zero_point=c.zero_point)
            parts.append(b.op("QUANTIZE", [v.tensor], [requant]))
        else:
            parts.append(v.tensor)
    shapes = [b.tensors[t].shape for t in parts]
    shape = list(shapes[0])
    shape[axis] = sum(sh[axis] for sh in shapes)
    out = b.output(c, tuple(shape))
    b.op(
        "CONCATENATION",
        parts,
        [out],
        "ConcatenationOptions",
        Axis=axis,
        FusedActivationFunction=0,
    )
    return Value(out, image)


# -- transformers: matrix products of activations, layer norms, division by constants ------


def _sample_layout(b: Builder, v: Value, name: str) -> int:
    """The tensor of ``v`` in the network's own per-sample order (an NHWC image back to NCHW)."""
    return _to_nchw(b, v.tensor, name) if v.nhwc_of_nchw else v.tensor


def _back_to_image(b: Builder, t: int, name: str) -> Value:
    """``t`` (network order) as the graph holds it: a 3-D sample is an image, laid out NHWC."""
    shape = b.tensors[t].shape
    if len(shape) == 4 and b.layout == "NCHW":
        return Value(_to_nhwc(b, t, shape[1:], name), True)
    return Value(t)


@add_converter(MatMul)
def _matmul(b: Builder, c: Conversion) -> Value:
    """A product by a constant matrix is the converter's FULLY_CONNECTED (``KeepNumDims``,
    per-channel int8 weights, a zero int32 bias); a product of two activations (attention's
    ``Q K^T`` and ``A V``) is BATCH_MATMUL, int8 with per-tensor scales."""
    name = c.node.name
    a, w = (_sample_layout(b, v, f"{name}/input_{k}") for k, v in enumerate(c.args))
    weight = b.value_of(w)
    a_shape = b.tensors[a].shape
    if b.value_of(a) is None and weight is not None and weight.ndim == 3 and len(a_shape) >= 2:
        kernel = weight[0].T  # (units, k): the matrix of ``x @ W``
        units = len(kernel)
        w_t, s_w = b.weights(f"{name}/weight", kernel, lambda m: m)
        bias_t = b.bias(f"{name}/bias", None, units, a, s_w)
        out = b.output(c, (*a_shape[:-1], units))
        b.op("FULLY_CONNECTED", [a, w_t, bias_t], [out], "FullyConnectedOptions",
             FusedActivationFunction=0, KeepNumDims=True)  # fmt: skip
        return _back_to_image(b, out, c.name)
    out = b.output(c, (1, *c.layer.output_shape))
    b.op("BATCH_MATMUL", [a, w], [out], "BatchMatMulOptions", AdjX=False, AdjY=False)
    return _back_to_image(b, out, c.name)


def _divide_refuses(layer) -> str | None:
    if len(layer.input_shape) != 2:
        return "a Divide of more than two inputs"
    return None


@add_converter(Divide, refuses=_divide_refuses)
def _divide(b: Builder, c: Conversion) -> Value:
    """Division by a constant is MUL by its reciprocal, as the converter rewrites it (TFLite
    has no int8 DIV); division by an activation is refused."""
    divisor = b.value_of(c.args[1].tensor)
    if divisor is None or np.any(divisor == 0):
        raise CapabilityError(
            f"layer {c.node.name!r}: only a Divide by a non-zero constant quantises (it becomes "
            "MUL by the reciprocal); TFLite has no int8 DIV of two activations."
        )
    reciprocal = b.constant(f"{c.node.name}/reciprocal", 1.0 / divisor)
    args = [c.args[0], Value(reciprocal, c.args[1].nhwc_of_nchw)]
    return _elementwise(
        b, Conversion(c.node, args, c.name, c.scale, c.zero_point), "MUL", "MulOptions"
    )


#: The tensors inside a lowered layer norm, in the order its operators write them.
_LAYER_NORM_STEPS = (
    "mean",
    "centred",
    "squared",
    "variance",
    "shifted",
    "rsqrt",
    "normalised",
    "scaled",
)


def _layer_norm_steps(layer, x: np.ndarray) -> dict[str, np.ndarray]:
    """The float value of every tensor of the lowered layer norm, on its input ``x``."""
    x = np.asarray(x, np.float64)
    axes = tuple(range(layer.first_axis + 1, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    centred = x - mean
    squared = centred * centred
    variance = squared.mean(axis=axes, keepdims=True)
    shifted = variance + layer.epsilon
    rsqrt = 1.0 / np.sqrt(shifted)
    normalised = centred * rsqrt
    scaled = normalised * np.asarray(layer.gamma, np.float64)
    values = (mean, centred, squared, variance, shifted, rsqrt, normalised, scaled)
    return dict(zip(_LAYER_NORM_STEPS, values))


@add_converter(LayerNormalization, intermediates=_layer_norm_steps)
def _layer_norm(b: Builder, c: Conversion) -> Value:
    """The converter's int8 layer norm: MEAN, SUB (centred), SQUARED_DIFFERENCE, MEAN
    (variance), ADD epsilon, RSQRT, MUL, then MUL by gamma and ADD beta; every tensor between
    them calibrated (``intermediates``). The image of an NCHW network is normalised in its own
    order (back to NCHW first)."""
    layer, name = c.layer, c.node.name
    t = _sample_layout(b, c.x, name)
    shape = b.tensors[t].shape
    axes = list(range(layer.first_axis + 1, len(shape)))
    kept = tuple(1 if k in axes else d for k, d in enumerate(shape))

    def tensor(key: str, shp) -> int:
        s, z = b.range_of(f"{name}/{key}") if b.int8 else (None, None)
        return b.activation(f"{name}/{key}", shp, s, z)

    def param(key: str, value) -> int:
        value = np.asarray(value, np.float64)
        return b.constant(
            f"{name}/{key}", value.reshape((1,) * (len(shape) - value.ndim) + value.shape)
        )

    axes_t = b.const_int32(f"{name}/axes", axes)
    no_act = {"FusedActivationFunction": 0}
    mean = b.op("MEAN", [t, axes_t], [tensor("mean", kept)], "ReducerOptions", KeepDims=True)
    centred = b.op("SUB", [t, mean], [tensor("centred", shape)], "SubOptions", **no_act)
    squared = b.op(
        "SQUARED_DIFFERENCE", [t, mean], [tensor("squared", shape)], "SquaredDifferenceOptions"
    )
    variance = b.op(
        "MEAN", [squared, axes_t], [tensor("variance", kept)], "ReducerOptions", KeepDims=True
    )
    epsilon = param("epsilon", layer.epsilon)
    shifted = b.op("ADD", [variance, epsilon], [tensor("shifted", kept)], "AddOptions", **no_act)
    rsqrt = b.op("RSQRT", [shifted], [tensor("rsqrt", kept)])
    normalised = b.op(
        "MUL", [centred, rsqrt], [tensor("normalised", shape)], "MulOptions", **no_act
    )
    scaled = b.op("MUL", [normalised, param("gamma", layer.gamma)], [tensor("scaled", shape)],
                  "MulOptions", **no_act)  # fmt: skip
    out = b.output(c, shape)
    b.op("ADD", [scaled, param("beta", layer.beta)], [out], "AddOptions", **no_act)
    return _back_to_image(b, out, c.name) if c.x.nhwc_of_nchw else Value(out)


@add_converter(Gather)
def _gather(b: Builder, c: Conversion) -> Value:
    """One index (a class token's row) is STRIDED_SLICE with the axis shrunk away, as the
    converter writes ``x[:, 0]``; several are GATHER of int32 indices. Both keep the input's
    parameters (no arithmetic)."""
    layer, name = c.layer, c.node.name
    t = _sample_layout(b, c.x, name)
    shape = list(b.tensors[t].shape)
    axis = layer.axis + 1
    index = np.where(layer.indices < 0, layer.indices + shape[axis], layer.indices)
    out_shape = (1, *layer.output_shape)
    if index.ndim == 0:
        begin, end, strides = [0] * len(shape), list(shape), [1] * len(shape)
        begin[axis], end[axis] = int(index), int(index) + 1
        mask = ((1 << len(shape)) - 1) & ~(1 << axis)
        tensors = [t, *(b.const_int32(f"{name}/{k}", v) for k, v in
                   (("begin", begin), ("end", end), ("strides", strides)))]  # fmt: skip
        out = b.like(c.name, t, out_shape)
        b.op("STRIDED_SLICE", tensors, [out], "StridedSliceOptions", BeginMask=mask,
             EndMask=mask, ShrinkAxisMask=1 << axis)  # fmt: skip
    else:
        indices = b.const_int32(f"{name}/indices", index)
        out = b.like(c.name, t, out_shape)
        b.op("GATHER", [t, indices], [out], "GatherOptions", Axis=axis, BatchDims=0)
    return _back_to_image(b, out, c.name)


@add_converter(ReplaceNaN, passes_through=True)
def _replace_nan(b: Builder, c: Conversion) -> Value:
    """An int8 tensor holds no NaN: ``Where(IsNaN(p), 0, p)`` after a masked softmax is ``p``.
    A float graph has no such operator here, and is refused."""
    if not b.int8:
        raise CapabilityError(
            f"layer {c.node.name!r}: ReplaceNaN has no float TFLite operator here; it is written "
            "only in an int8 graph (where it is the identity)."
        )
    return c.x


@add_converter(Exp)
def _exp(b: Builder, c: Conversion) -> Value:
    """EXP: TFLite's int8 kernel is a 256-entry table of ``exp`` (as LOGISTIC's)."""
    return _unary(b, c, "EXP")


@add_converter(Log)
def _log(b: Builder, c: Conversion) -> Value:
    """LOG: TFLite's int8 kernel is a 256-entry table of ``log`` (an input at the zero point,
    ``log 0``, gives -128)."""
    return _unary(b, c, "LOG")


#: The built-in quantisable layer classes, by name (:data:`CONVERTERS` holds the classes).
QUANTISABLE: tuple[str, ...] = tuple(sorted(cls.__name__ for cls in CONVERTERS))
