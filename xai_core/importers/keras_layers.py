"""Keras layers as native graph nodes (NHWC, as Keras lays images out).

One function per Keras layer class, taking the layer's configuration and weights, and
one schema per class (:data:`LAYER_CONFIGS`) for the fields that function reads, checked
when the file is read. Keras kernels are converted to the native NCHW weight layout: a
``Conv2D`` kernel ``(kh, kw, in, out)`` becomes ``(out, in, kh, kw)``; a depthwise kernel
``(kh, kw, c, m)`` becomes ``(c * m, 1, kh, kw)``. Every stored weight's shape is compared
with the one the configuration and the layer's input imply before the layer is built, so
``units=10**9`` beside a stored 4 x 3 kernel is refused before anything is allocated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from xai_core import nn
from xai_core.errors import CapabilityError, ModelFormatError
from xai_core.importers.ir import unique_node_name
from xai_core.importers.keras_sequences import SEQUENCE_LAYERS
from xai_core.jsonfile import ANYTHING, Bool, Either, Int, List, Num, Obj, Str

__all__ = ["LAYERS", "LAYER_CONFIGS", "ACTIVATIONS", "OPS_PREFIX", "KerasBuilder", "layer_key"]

#: Prefix of the keys of ``keras.ops`` operations called on tensors (``x + 3.0`` is
#: ``keras.ops.Add``); Keras writes them with a ``keras.src.ops`` module.
OPS_PREFIX = "keras.ops."


def layer_key(layer: dict) -> str:
    """The key of a Keras configuration entry in :data:`LAYERS`.

    A layer's class name (``"Add"``), or for a ``keras.ops`` operation, whose class name
    can be a layer's too, :data:`OPS_PREFIX` and the name (``"keras.ops.Add"``).
    """
    module = layer.get("module")
    kind = layer["class_name"]
    if isinstance(module, str) and module.startswith(("keras.src.ops.", "keras.ops.")):
        return OPS_PREFIX + kind
    return kind


#: Keras activation names to the native layer that computes them (``None``: identity).
ACTIVATIONS: dict[str, Callable[[], Any] | None] = {
    "linear": None,
    "relu": nn.ReLU,
    "relu6": nn.ReLU6,
    "sigmoid": nn.Sigmoid,
    "tanh": nn.Tanh,
    "softmax": nn.Softmax,
    "hard_swish": nn.HardSwish,
    "hard_silu": nn.HardSwish,
    "leaky_relu": lambda: nn.LeakyReLU(0.2),
    "gelu": nn.Gelu,
    "elu": nn.Elu,
    "selu": nn.Selu,
    "softplus": nn.Softplus,
    "softsign": nn.Softsign,
    "mish": nn.Mish,
    "exponential": nn.Exp,
    "hard_sigmoid": lambda: nn.HardSigmoid(1 / 6, 0.5),
    "silu": None,  # x * sigmoid(x): a Sigmoid and a Multiply (see KerasBuilder.activation)
    "swish": None,
}
#: Activations built as ``x * sigmoid(x)``: two nodes.
_SWISH = ("silu", "swish")


class KerasBuilder:
    """Adds Keras layers to a native NHWC graph."""

    def __init__(self, graph: nn.Graph, where: str) -> None:
        self.g = graph
        self.where = where

    def fail(self, kind: str, name: str, message: str) -> CapabilityError:
        return CapabilityError(f"{self.where}: {kind} layer {name!r}: {message}")

    def unique(self, base: str) -> str:
        return unique_node_name(self.g, base)

    def add(self, layer: Any, inputs: list[str], name: str, params: Any = None) -> str:
        """Add ``layer``; ``params`` (the file's weights) are set as it is built, drawing none."""
        return self.g.add(layer, inputs, name=self.unique(name), params=params)

    def activation(self, kind: str, name: str, act: Any, x: str) -> str:
        """``x`` followed by the Keras activation ``act`` (a name), as a separate node."""
        if isinstance(act, dict):  # a serialised activation function
            inner = act.get("config")
            if isinstance(inner, dict):
                inner = inner.get("name")
            act = inner if isinstance(inner, str) else act.get("class_name")
        if act is None:
            act = "linear"
        if not isinstance(act, str) or act not in ACTIVATIONS:
            raise self.fail(
                kind,
                name,
                f"activation {act!r} is not supported; supported: {', '.join(sorted(ACTIVATIONS))}.",
            )
        if act in _SWISH:
            gate = self.add(nn.Sigmoid(), [x], f"{name}/{act}_gate")
            return self.add(nn.Multiply(), [x, gate], f"{name}/{act}")
        make = ACTIVATIONS[act]
        return x if make is None else self.add(make(), [x], f"{name}/{act}")

    def constant(self, value: Any, name: str) -> str:
        """A Constant node holding one sample's ``value`` (in the graph's dtype)."""
        return self.add(nn.Constant(np.asarray(value, dtype=self.g.dtype)), [], name)

    def affine(self, x: str, scale: Any, offset: Any, name: str) -> str:
        """``x * scale + offset`` (each a scalar or per channel); the last node is ``name``."""
        steps = [
            (layer, np.asarray(v, np.float64), suffix)
            for layer, v, suffix, neutral in (
                (nn.Multiply, scale, "scale", 1.0),
                (nn.Add, offset, "offset", 0.0),
            )
            if np.asarray(v).shape or float(v) != neutral
        ]
        if not steps:
            return self.add(nn.Identity(), [x], name)
        for i, (layer, v, suffix) in enumerate(steps):
            const = self.constant(v, f"{name}/{suffix}_value")
            x = self.add(layer(), [x, const], name if i == len(steps) - 1 else f"{name}/{suffix}")
        return x


def _weights(kind: str, name: str, w: dict[str, np.ndarray], *keys: str, where: str) -> list:
    out = []
    for key in keys:
        alt = {"kernel": "depthwise_kernel"}.get(key)
        value = w.get(key, w.get(alt) if alt else None)
        if value is None:
            raise ModelFormatError(
                f"{where}: {kind} layer {name!r} has no {key!r} weight (it has {sorted(w)})."
            )
        out.append(np.asarray(value))
    return out


def _pair(v: Any) -> tuple[int, int]:
    return (int(v), int(v)) if isinstance(v, (int, float)) else (int(v[0]), int(v[1]))


def _layout(b: KerasBuilder, kind: str, name: str, c: dict) -> str:
    fmt = c.get("data_format") or "channels_last"
    if fmt != "channels_last":
        raise b.fail(kind, name, f"data_format={fmt!r}; only channels_last is supported.")
    return "NHWC"


def _padding(b: KerasBuilder, kind: str, name: str, c: dict) -> str:
    p = c.get("padding", "valid")
    if p not in ("valid", "same"):
        raise b.fail(kind, name, f"padding={p!r}; 'valid' and 'same' are supported.")
    return p


def _expect(b, kind: str, name: str, what: str, arr: np.ndarray, shape: tuple, why: str) -> None:
    """Refuse a stored weight whose shape is not the one the configuration implies."""
    if tuple(arr.shape) != tuple(shape):
        raise ModelFormatError(
            f"{b.where}: {kind} layer {name!r}: the stored {what} has shape {tuple(arr.shape)} "
            f"but {why} need {tuple(shape)}."
        )


def _channels(b, ins) -> int:
    return int(b.g.shape_of(ins[0])[-1])


def k_dense(b, kind, name, c, w, ins):
    use_bias = c.get("use_bias", True)
    (kernel,) = _weights(kind, name, w, "kernel", where=b.where)
    units, n_in = int(c["units"]), _channels(b, ins)
    why = f"units={units} and {n_in} inputs"
    _expect(b, kind, name, "kernel", kernel, (n_in, units), why)
    bias = _weights(kind, name, w, "bias", where=b.where)[0] if use_bias else None
    if bias is not None:
        _expect(b, kind, name, "bias", bias, (units,), why)
    shape = tuple(b.g.shape_of(ins[0]))
    if len(shape) == 1:
        params = {"weight": kernel} | ({"bias": bias} if use_bias else {})
        node = b.add(nn.Dense(units, use_bias=use_bias), ins, name, params)
    else:
        node = _dense_on_last_axis(b, kind, name, ins[0], shape, kernel, bias)
    return b.activation(kind, name, c.get("activation", "linear"), node)


def k_embedding(b, kind, name, c, w, ins):
    """Token ids looked up in the ``embeddings`` table (:class:`~xai_core.nn.Embedding`)."""
    if c.get("mask_zero"):
        raise b.fail(
            kind,
            name,
            "mask_zero=True (id 0 masks the layers after it) is not supported; padding is "
            "read as token 0.",
        )
    (table,) = _weights(kind, name, w, "embeddings", where=b.where)
    vocab, dim = int(c["input_dim"]), int(c["output_dim"])
    _expect(
        b, kind, name, "embeddings", table, (vocab, dim), f"input_dim={vocab}, output_dim={dim}"
    )
    return b.add(nn.Embedding(vocab, dim), ins, name, {"weight": table})


def _dense_on_last_axis(b, kind, name, x, shape, kernel, bias):
    """Keras's Dense on samples of rank 2 or 3 (tokens, pixels): a 1 x 1 NHWC convolution."""
    if len(shape) > 3:
        raise b.fail(kind, name, f"inputs of per-sample shape {shape}: at most 3 axes.")
    if len(shape) == 2:  # (tokens, features) as an image of one column
        x = b.add(nn.Reshape((shape[0], 1, shape[1])), [x], f"{name}/as_image")
    conv = nn.Conv2D(kernel.shape[1], kernel_size=1, use_bias=bias is not None, layout="NHWC")
    params = {"weight": kernel.T[:, :, None, None]} | ({"bias": bias} if bias is not None else {})
    node = b.add(conv, [x], name if len(shape) == 3 else f"{name}/conv", params)
    if len(shape) == 2:
        node = b.add(nn.Reshape((shape[0], kernel.shape[1])), [node], name)
    return node


def _conv(b, kind, name, c, ins, weight, bias, *, depthwise=False, filters=None):
    args = dict(
        kernel_size=_pair(c["kernel_size"]),
        stride=_pair(c.get("strides", 1)),
        padding=_padding(b, kind, name, c),
        dilation=_pair(c.get("dilation_rate", 1)),
        use_bias=bias is not None,
        layout=_layout(b, kind, name, c),
    )
    if depthwise:
        layer = nn.DepthwiseConv2D(depth_multiplier=int(c.get("depth_multiplier", 1)), **args)
    else:
        layer = nn.Conv2D(filters, groups=int(c.get("groups", 1)), **args)
    params = {"weight": weight} if bias is None else {"weight": weight, "bias": bias}
    return b.add(layer, ins, name, params)


def _bias(b, kind, name, c, w, n: int, why: str):
    if not c.get("use_bias", True):
        return None
    bias = _weights(kind, name, w, "bias", where=b.where)[0]
    _expect(b, kind, name, "bias", bias, (n,), why)
    return bias


def k_conv2d(b, kind, name, c, w, ins):
    (kernel,) = _weights(kind, name, w, "kernel", where=b.where)
    filters, groups, cin = int(c["filters"]), int(c.get("groups", 1)), _channels(b, ins)
    kh, kw = _pair(c["kernel_size"])
    why = f"filters={filters}, kernel_size={(kh, kw)}, groups={groups} and {cin} input channels"
    if cin % groups:
        raise ModelFormatError(f"{b.where}: {kind} layer {name!r}: {why} do not divide evenly.")
    _expect(b, kind, name, "kernel", kernel, (kh, kw, cin // groups, filters), why)
    bias = _bias(b, kind, name, c, w, filters, why)
    node = _conv(b, kind, name, c, ins, kernel.transpose(3, 2, 0, 1), bias, filters=filters)
    return b.activation(kind, name, c.get("activation", "linear"), node)


def _depthwise_weight(kernel: np.ndarray) -> np.ndarray:
    kh, kw, ch, m = kernel.shape
    return kernel.reshape(kh, kw, ch * m).transpose(2, 0, 1)[:, None]


def k_depthwise(b, kind, name, c, w, ins):
    (kernel,) = _weights(kind, name, w, "kernel", where=b.where)
    m, cin = int(c.get("depth_multiplier", 1)), _channels(b, ins)
    kh, kw = _pair(c["kernel_size"])
    why = f"depth_multiplier={m}, kernel_size={(kh, kw)} and {cin} input channels"
    _expect(b, kind, name, "kernel", kernel, (kh, kw, cin, m), why)
    bias = _bias(b, kind, name, c, w, cin * m, why)
    node = _conv(b, kind, name, c, ins, _depthwise_weight(kernel), bias, depthwise=True)
    return b.activation(kind, name, c.get("activation", "linear"), node)


def k_separable(b, kind, name, c, w, ins):
    dk, pk = _weights(kind, name, w, "depthwise_kernel", "pointwise_kernel", where=b.where)
    m, cin, filters = int(c.get("depth_multiplier", 1)), _channels(b, ins), int(c["filters"])
    kh, kw = _pair(c["kernel_size"])
    why = (
        f"filters={filters}, depth_multiplier={m}, kernel_size={(kh, kw)} and {cin} input channels"
    )
    _expect(b, kind, name, "depthwise_kernel", dk, (kh, kw, cin, m), why)
    _expect(b, kind, name, "pointwise_kernel", pk, (1, 1, cin * m, filters), why)
    bias = _bias(b, kind, name, c, w, filters, why)
    d = _conv(b, kind, f"{name}/depthwise", c, ins, _depthwise_weight(dk), None, depthwise=True)
    point = dict(c, kernel_size=1, strides=1, padding="valid", dilation_rate=1, groups=1)
    node = _conv(b, kind, name, point, [d], pk.transpose(3, 2, 0, 1), bias, filters=filters)
    return b.activation(kind, name, c.get("activation", "linear"), node)


def k_batchnorm(b, kind, name, c, w, ins):
    _last_axis(b, kind, name, c, ins)
    mean, var = _weights(kind, name, w, "moving_mean", "moving_variance", where=b.where)
    gamma = w.get("gamma") if c.get("scale", True) else None
    beta = w.get("beta") if c.get("center", True) else None
    n = _channels(b, ins)
    for what, arr in (
        ("moving_mean", mean),
        ("moving_variance", var),
        ("gamma", gamma),
        ("beta", beta),
    ):
        if arr is not None:
            _expect(b, kind, name, what, np.asarray(arr), (n,), f"{n} input channels")
    node = b.add(nn.BatchNormalization(epsilon=float(c.get("epsilon", 1e-3)), axis=-1), ins, name)
    b.g.set_params(
        node,
        gamma=np.ones_like(mean) if gamma is None else gamma,
        beta=np.zeros_like(mean) if beta is None else beta,
        mean=mean,
        variance=var,
    )
    return node


def k_activation(b, kind, name, c, w, ins):
    out = b.activation(kind, name, c.get("activation", "linear"), ins[0])
    return out if out != ins[0] else b.add(nn.Identity(), ins, name)


def k_relu(b, kind, name, c, w, ins):
    hi = c.get("max_value")
    slope = float(c.get("negative_slope", 0.0) or 0.0)
    if float(c.get("threshold", 0.0) or 0.0) != 0.0:
        raise b.fail(kind, name, "a non-zero threshold is not supported.")
    if slope and hi is None:
        return b.add(nn.LeakyReLU(slope), ins, name)
    if slope:
        raise b.fail(kind, name, "negative_slope together with max_value is not supported.")
    if hi is None:
        return b.add(nn.ReLU(), ins, name)
    return b.add(nn.ReLU6() if float(hi) == 6.0 else nn.Clip(0.0, float(hi)), ins, name)


def k_leaky(b, kind, name, c, w, ins):
    slope = c.get("negative_slope", c.get("alpha", 0.3))
    return b.add(nn.LeakyReLU(float(slope)), ins, name)


def k_softmax(b, kind, name, c, w, ins):
    axis = c.get("axis", -1)
    if axis not in (-1, len(b.g.shape_of(ins[0]))):
        raise b.fail(kind, name, f"axis={axis}; only the last axis is supported.")
    return b.add(nn.Softmax(), ins, name)


def _pool(max_pool: bool):
    def build(b, kind, name, c, w, ins):
        size = _pair(c.get("pool_size", 2))
        stride = _pair(c.get("strides") or size)
        layout = _layout(b, kind, name, c)
        padding = _padding(b, kind, name, c)
        if max_pool:
            layer = nn.MaxPool2D(size, stride=stride, padding=padding, layout=layout)
        else:
            layer = nn.AvgPool2D(
                size, stride=stride, padding=padding, count_include_pad=False, layout=layout
            )
        return b.add(layer, ins, name)

    return build


def k_gap(b, kind, name, c, w, ins):
    layer = nn.GlobalAveragePooling2D(
        keepdims=bool(c.get("keepdims", False)), layout=_layout(b, kind, name, c)
    )
    return b.add(layer, ins, name)


def k_concat(b, kind, name, c, w, ins):
    axis = int(c.get("axis", -1))
    rank = len(b.g.shape_of(ins[0])) + 1
    axis = axis + rank if axis < 0 else axis
    if axis == 0:
        raise b.fail(kind, name, "concatenation along the batch axis is not supported.")
    return b.add(nn.Concatenate(axis=axis - 1), ins, name)


def k_flatten(b, kind, name, c, w, ins):
    return b.add(nn.Flatten(), ins, name)


def k_reshape(b, kind, name, c, w, ins):
    return b.add(nn.Reshape(tuple(int(d) for d in c["target_shape"])), ins, name)


def k_permute(b, kind, name, c, w, ins):
    return b.add(nn.Transpose(tuple(int(d) - 1 for d in c["dims"])), ins, name)


def k_zero_pad(b, kind, name, c, w, ins):
    p = c.get("padding", 1)
    (top, bottom), (left, right) = (
        (x, x) if isinstance(x, int) else (x[0], x[1])
        for x in ([p, p] if isinstance(p, int) else p)
    )
    pads = (top, bottom, left, right)
    return b.add(nn.ZeroPadding2D(pads, layout=_layout(b, kind, name, c)), ins, name)


def k_identity(b, kind, name, c, w, ins):
    return b.add(nn.Identity(), ins, name)


def k_rescaling(b, kind, name, c, w, ins):
    return b.affine(ins[0], c.get("scale", 1.0), c.get("offset", 0.0), name)


def _last_axis(b, kind, name, c, ins, what: str = "axis") -> None:
    """Refuse an ``axis`` other than the last (channel) one."""
    axis = c.get("axis", -1)
    axis = axis[0] if isinstance(axis, (list, tuple)) and len(axis) == 1 else axis
    rank = len(b.g.shape_of(ins[0])) + 1
    if axis not in (-1, rank - 1):
        raise b.fail(
            kind, name, f"{what}={c.get('axis')}; only the last (channel) axis is supported."
        )


def k_normalization(b, kind, name, c, w, ins):
    _last_axis(b, kind, name, c, ins)
    n = _channels(b, ins)
    if c.get("mean") is not None:
        mean, var = (np.asarray(c[k], np.float64).reshape(-1) for k in ("mean", "variance"))
    else:
        mean, var = (
            np.asarray(a, np.float64)
            for a in _weights(kind, name, w, "mean", "variance", where=b.where)
        )
    for what, arr in (("mean", mean), ("variance", var)):
        if arr.size not in (1, n):
            raise ModelFormatError(
                f"{b.where}: {kind} layer {name!r}: {what} has {arr.size} values; "
                f"{n} input channels need {n} (or 1)."
            )
    if (var < 0).any():
        raise ModelFormatError(f"{b.where}: {kind} layer {name!r}: a variance is negative.")
    std = np.maximum(np.sqrt(var), _KERAS_EPSILON)  # Keras divides by max(sqrt(var), epsilon)
    if c.get("invert", False):
        return b.affine(ins[0], std, mean, name)
    return b.affine(ins[0], 1 / std, -mean / std, name)


def k_layer_norm(b, kind, name, c, w, ins):
    _last_axis(b, kind, name, c, ins)
    if c.get("rms_scaling", False):
        raise b.fail(kind, name, "rms_scaling=True is not supported.")
    n = _channels(b, ins)
    gamma = _weights(kind, name, w, "gamma", where=b.where)[0] if c.get("scale", True) else None
    beta = _weights(kind, name, w, "beta", where=b.where)[0] if c.get("center", True) else None
    for what, arr in (("gamma", gamma), ("beta", beta)):
        if arr is not None:
            _expect(b, kind, name, what, arr, (n,), f"{n} input channels")
    node = b.add(nn.LayerNormalization(-1, epsilon=float(c.get("epsilon", 1e-3))), ins, name)
    b.g.set_params(
        node,
        gamma=np.ones(n) if gamma is None else gamma,
        beta=np.zeros(n) if beta is None else beta,
    )
    return node


def k_layer_scale(b, kind, name, c, w, ins):
    if "gamma" not in w and len(w) == 1:  # a live model names it after its variable
        w = {"gamma": next(iter(w.values()))}
    (gamma,) = _weights(kind, name, w, "gamma", where=b.where)
    n = _channels(b, ins)
    _expect(b, kind, name, "gamma", gamma, (n,), f"{n} input channels")
    return b.affine(ins[0], gamma, 0.0, name)


def k_custom_scale(b, kind, name, c, w, ins):
    if len(ins) != 2:
        raise ModelFormatError(
            f"{b.where}: {kind} layer {name!r} adds a scaled second input to the first: it "
            f"takes 2 inputs; got {len(ins)}."
        )
    scaled = b.affine(ins[1], float(c["scale"]), 0.0, f"{name}/scaled")
    return b.add(nn.Add(), [ins[0], scaled], name)


def k_cropping(b, kind, name, c, w, ins):
    _layout(b, kind, name, c)
    p = c.get("cropping", 0)
    (top, bottom), (left, right) = (
        (x, x) if isinstance(x, int) else (x[0], x[1])
        for x in ([p, p] if isinstance(p, int) else p)
    )
    h, wd = b.g.shape_of(ins[0])[:2]
    if top + bottom >= h or left + right >= wd:
        raise ModelFormatError(
            f"{b.where}: {kind} layer {name!r}: cropping {p} leaves nothing of a {h} x {wd} image."
        )
    x = ins[0]
    cuts = [
        (axis, lo, size - hi)
        for axis, lo, hi, size in ((0, top, bottom, h), (1, left, right, wd))
        if lo or hi
    ]
    if not cuts:
        return b.add(nn.Identity(), [x], name)
    for i, (axis, start, stop) in enumerate(cuts):
        x = b.add(nn.Slice(axis, start, stop), [x], name if i == len(cuts) - 1 else f"{name}/rows")
    return x


def _merge(layer_cls, arity: int | None = None):
    def build(b, kind, name, c, w, ins):
        ok = len(ins) == arity if arity else len(ins) >= 2
        if not ok:
            need = f"{arity}" if arity else "2 or more"
            raise ModelFormatError(
                f"{b.where}: {kind} layer {name!r} takes {need} inputs; its call has {len(ins)}."
            )
        return b.add(layer_cls(), ins, name)

    return build


#: MultiHeadAttention's projections: the weight-name prefix of each (a live model's scope).
MHA_PROJECTIONS = ("query", "key", "value", "attention_output")


def _tokens_dense(b, kind, name, x, kernel, bias):
    """A projection of tokens ``(n, d)`` by ``kernel`` of shape ``(d, units)``."""
    shape = tuple(b.g.shape_of(x))
    return _dense_on_last_axis(b, kind, name, x, shape, kernel, bias)


def k_mha(b, kind, name, c, w, ins):
    if len(ins) not in (2, 3):
        raise ModelFormatError(
            f"{b.where}: {kind} layer {name!r} takes query, value (and key); its call has "
            f"{len(ins)} inputs."
        )
    query, value = ins[0], ins[1]
    key = ins[2] if len(ins) == 3 else value
    shapes = [tuple(b.g.shape_of(t)) for t in (query, key, value)]
    if any(len(s) != 2 for s in shapes):
        raise b.fail(kind, name, f"inputs of per-sample shapes {shapes}: tokens (n, d) only.")
    if c.get("attention_axes") not in (None, [1], (1,)) or c.get("use_gate", False):
        raise b.fail(
            kind, name, "attention_axes other than the tokens, or use_gate, is not supported."
        )
    if c.get("output_shape") is not None or c.get("sliding_window") is not None:
        raise b.fail(kind, name, "output_shape and sliding_window are not supported.")
    heads, kd = int(c["num_heads"]), int(c["key_dim"])
    vd = int(c.get("value_dim") or kd)
    use_bias = c.get("use_bias", True)
    d_out = shapes[0][1]
    need = {
        "query": ((shapes[0][1], heads, kd), (heads, kd)),
        "key": ((shapes[1][1], heads, kd), (heads, kd)),
        "value": ((shapes[2][1], heads, vd), (heads, vd)),
        "attention_output": ((heads, vd, d_out), (d_out,)),
    }
    why = f"num_heads={heads}, key_dim={kd}, value_dim={vd} and inputs {shapes}"
    params = {}
    for proj, (k_shape, b_shape) in need.items():
        (kernel,) = _weights(kind, name, w, f"{proj}/kernel", where=b.where)
        _expect(b, kind, name, f"{proj} kernel", kernel, k_shape, why)
        bias = None
        if use_bias:
            (bias,) = _weights(kind, name, w, f"{proj}/bias", where=b.where)
            _expect(b, kind, name, f"{proj} bias", bias, b_shape, why)
        params[proj] = (kernel, bias)

    def heads_of(x, proj, depth, perm):
        kernel, bias = params[proj]
        y = _tokens_dense(
            b,
            kind,
            f"{name}/{proj}",
            x,
            kernel.reshape(kernel.shape[0], -1),
            None if bias is None else bias.reshape(-1),
        )
        n = b.g.shape_of(y)[0]
        y = b.add(nn.Reshape((n, heads, depth)), [y], f"{name}/{proj}_heads")
        return b.add(nn.Transpose(perm), [y], f"{name}/{proj}_by_head")

    q = heads_of(query, "query", kd, (1, 0, 2))  # (heads, n_q, key_dim)
    q = b.affine(q, 1.0 / np.sqrt(kd), 0.0, f"{name}/query_scaled")
    k = heads_of(key, "key", kd, (1, 2, 0))  # (heads, key_dim, n_k)
    v = heads_of(value, "value", vd, (1, 0, 2))  # (heads, n_k, value_dim)
    scores = b.add(nn.MatMul(), [q, k], f"{name}/scores")
    probs = b.add(nn.Softmax(), [scores], f"{name}/attention")
    mixed = b.add(nn.MatMul(), [probs, v], f"{name}/mixed")  # (heads, n_q, value_dim)
    mixed = b.add(nn.Transpose((1, 0, 2)), [mixed], f"{name}/mixed_by_token")
    n_q = shapes[0][0]
    mixed = b.add(nn.Reshape((n_q, heads * vd)), [mixed], f"{name}/concat_heads")
    kernel, bias = params["attention_output"]
    out = _tokens_dense(b, kind, f"{name}/output", mixed, kernel.reshape(heads * vd, d_out), bias)
    return b.add(nn.Identity(), [out], name)


#: ``keras.backend.epsilon()``, the floor of the standard deviation Normalization divides by.
_KERAS_EPSILON = 1e-7


#: Keras layer classes ``from_keras`` builds, each to the function that adds it.
LAYERS: dict[str, Callable] = {
    "Dense": k_dense,
    "Embedding": k_embedding,
    "Conv2D": k_conv2d,
    "DepthwiseConv2D": k_depthwise,
    "SeparableConv2D": k_separable,
    "BatchNormalization": k_batchnorm,
    "Activation": k_activation,
    "ReLU": k_relu,
    "LeakyReLU": k_leaky,
    "Softmax": k_softmax,
    "MaxPooling2D": _pool(True),
    "AveragePooling2D": _pool(False),
    "GlobalAveragePooling2D": k_gap,
    "Add": _merge(nn.Add),
    "Subtract": _merge(nn.Subtract, 2),
    "Multiply": _merge(nn.Multiply),
    "Concatenate": k_concat,
    "Flatten": k_flatten,
    "Reshape": k_reshape,
    "Permute": k_permute,
    "ZeroPadding2D": k_zero_pad,
    "Dropout": k_identity,
    "SpatialDropout2D": k_identity,
    "GaussianNoise": k_identity,
    "GaussianDropout": k_identity,
    "Rescaling": k_rescaling,
    "Normalization": k_normalization,
    "LayerNormalization": k_layer_norm,
    "Cropping2D": k_cropping,
    "LayerScale": k_layer_scale,  # keras.applications.convnext
    "CustomScaleLayer": k_custom_scale,  # keras.applications.inception_resnet_v2
    "MultiHeadAttention": k_mha,
    **SEQUENCE_LAYERS,  # Conv1D, the 1-D pools, LSTM, GRU
    # keras.ops arithmetic on tensors and numbers (x + 3.0): numbers become Constant nodes
    f"{OPS_PREFIX}Add": _merge(nn.Add, 2),
    f"{OPS_PREFIX}Subtract": _merge(nn.Subtract, 2),
    f"{OPS_PREFIX}Multiply": _merge(nn.Multiply, 2),
    f"{OPS_PREFIX}Divide": _merge(nn.Divide, 2),
    f"{OPS_PREFIX}TrueDivide": _merge(nn.Divide, 2),
}


# -- the configuration fields each builder reads ------------------------------------------
_BIG = 2**31  # no dimension of a tensor may be larger (xai_core.importers.ir.MAX_ELEMENTS)
_POS = Int(lo=1, hi=_BIG)
_PAIR = Either(_POS, List(_POS, min_len=2, max_len=2))
_NONNEG_PAIR = Either(Int(lo=0, hi=_BIG), List(Int(lo=0, hi=_BIG), min_len=2, max_len=2))
_FORMAT = Either(None, Str())
_ACTIVATION = Either(None, Str(), Obj())
_NUMBER_OR_NULL = Either(None, Num())
_NUMBERS = Either(Num(), List(Num()))
_CONV = {
    "strides": _PAIR,
    "padding": Str(),
    "dilation_rate": _PAIR,
    "use_bias": Bool(),
    "activation": _ACTIVATION,
    "data_format": _FORMAT,
}
_SHAPE = Either(None, List(Either(None, Int(lo=1))))
_ONE = Either(_POS, List(_POS, min_len=1, max_len=1))
_POOL = Obj(
    optional={
        "pool_size": _PAIR,
        "strides": Either(None, _PAIR),
        "padding": Str(),
        "data_format": _FORMAT,
    }
)

#: Keras layer classes to the schema of the configuration fields their builder reads
#: (:mod:`xai_core.jsonfile`); other fields are allowed and ignored.
LAYER_CONFIGS: dict[str, Any] = {
    "InputLayer": Obj(optional={"batch_shape": _SHAPE, "batch_input_shape": _SHAPE}),
    "Dense": Obj(
        required={"units": _POS}, optional={"use_bias": Bool(), "activation": _ACTIVATION}
    ),
    "Embedding": Obj(
        required={"input_dim": _POS, "output_dim": _POS}, optional={"mask_zero": Bool()}
    ),
    "Conv2D": Obj(
        required={"filters": _POS, "kernel_size": _PAIR}, optional={**_CONV, "groups": _POS}
    ),
    "DepthwiseConv2D": Obj(
        required={"kernel_size": _PAIR}, optional={**_CONV, "depth_multiplier": _POS}
    ),
    "SeparableConv2D": Obj(
        required={"filters": _POS, "kernel_size": _PAIR},
        optional={**_CONV, "depth_multiplier": _POS},
    ),
    "BatchNormalization": Obj(
        optional={
            "axis": Either(Int(), List(Int(), min_len=1)),
            "epsilon": Num(lo=0),
            "scale": Bool(),
            "center": Bool(),
        }
    ),
    "Activation": Obj(optional={"activation": _ACTIVATION}),
    "ReLU": Obj(
        optional={
            "max_value": _NUMBER_OR_NULL,
            "negative_slope": _NUMBER_OR_NULL,
            "threshold": _NUMBER_OR_NULL,
        }
    ),
    "LeakyReLU": Obj(optional={"negative_slope": Num(), "alpha": Num()}),
    "Softmax": Obj(optional={"axis": Either(Int(), List(Int()))}),
    "MaxPooling2D": _POOL,
    "AveragePooling2D": _POOL,
    "GlobalAveragePooling2D": Obj(optional={"keepdims": Bool(), "data_format": _FORMAT}),
    "Concatenate": Obj(optional={"axis": Int()}),
    "Reshape": Obj(required={"target_shape": List(Int(lo=-1))}),
    "Permute": Obj(required={"dims": List(Int(lo=1))}),
    "ZeroPadding2D": Obj(
        optional={
            "padding": Either(Int(lo=0, hi=_BIG), List(_NONNEG_PAIR, min_len=2, max_len=2)),
            "data_format": _FORMAT,
        }
    ),
    "Rescaling": Obj(optional={"scale": _NUMBERS, "offset": _NUMBERS}),
    "Normalization": Obj(
        optional={
            "axis": Either(None, Int(), List(Int())),
            "mean": Either(None, _NUMBERS),
            "variance": Either(None, _NUMBERS),
            "invert": Bool(),
        }
    ),
    "LayerNormalization": Obj(
        optional={
            "axis": Either(Int(), List(Int(), min_len=1)),
            "epsilon": Num(lo=0),
            "center": Bool(),
            "scale": Bool(),
            "rms_scaling": Bool(),
        }
    ),
    "Cropping2D": Obj(
        optional={
            "cropping": Either(Int(lo=0, hi=_BIG), List(_NONNEG_PAIR, min_len=2, max_len=2)),
            "data_format": _FORMAT,
        }
    ),
    "CustomScaleLayer": Obj(required={"scale": Num()}),
    "MultiHeadAttention": Obj(
        required={"num_heads": _POS, "key_dim": _POS},
        optional={
            "value_dim": Either(None, _POS),
            "use_bias": Bool(),
            "use_gate": Bool(),
            "attention_axes": Either(None, Int(), List(Int())),
        },
    ),
    "LayerScale": Obj(values=ANYTHING),
    "Conv1D": Obj(
        required={"filters": _POS, "kernel_size": _ONE},
        optional={**_CONV, "strides": _ONE, "dilation_rate": _ONE, "groups": _POS},
    ),
    **{
        k: Obj(
            optional={
                "pool_size": _ONE,
                "strides": Either(None, _ONE),
                "padding": Str(),
                "data_format": _FORMAT,
            }
        )
        for k in ("MaxPooling1D", "AveragePooling1D")
    },
    **{
        k: Obj(optional={"keepdims": Bool(), "data_format": _FORMAT})
        for k in ("GlobalAveragePooling1D", "GlobalMaxPooling1D")
    },
    **{
        k: Obj(
            required={"units": _POS},
            optional={
                "activation": _ACTIVATION,
                "recurrent_activation": _ACTIVATION,
                "use_bias": Bool(),
                "return_sequences": Bool(),
                "return_state": Bool(),
                "go_backwards": Bool(),
                "stateful": Bool(),
                "reset_after": Bool(),
            },
        )
        for k in ("LSTM", "GRU")
    },
    **{k: Obj(values=ANYTHING) for k in ("Add", "Subtract", "Multiply", "Flatten")},
    **{OPS_PREFIX + k: Obj() for k in ("Add", "Subtract", "Multiply", "Divide", "TrueDivide")},
    **{k: Obj() for k in ("Dropout", "SpatialDropout2D", "GaussianNoise", "GaussianDropout")},
}
