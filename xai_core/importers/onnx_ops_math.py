"""ONNX elementwise math, normalisation, softmax and reduction operators as native layers.

The unary functions (``HardSigmoid``, ``Erf``, ``Gelu``, ``Sqrt``, ``Exp``, ...) become the
layers of :mod:`xai_core.nn.elementwise` and fold at import when their input is a
constant; ``Pow`` takes a constant exponent, a constant base or both computed; ``LayerNormalization`` becomes :class:`~xai_core.nn.LayerNormalization`;
``Softmax`` and ``LogSoftmax`` work on any axis, with the opset's own semantics (before
opset 13 the input is coerced to 2-D at ``axis``); the reductions take their axes from the
attribute or, from the opset that moved them there, from the second input. Each converter
is registered for the opset range whose semantics it implements.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from xai_core import nn
from xai_core.importers.ir import IRNode
from xai_core.importers.onnx_ops import Builder, _axis, _f32, _store
from xai_core.importers.onnx_registry import register
from xai_core.nn.activations import UnaryFunction

__all__ = ["UNARY"]


def _constant(b: Builder, node: IRNode, name: str) -> np.ndarray:
    """A constant input that is a number array (not a shape holding the batch size)."""
    value = np.asarray(b.value(node, name))
    if value.dtype == object:
        raise b.fail(node, "arithmetic on the batch size is not supported.")
    return value


def _unary(make: Callable[[IRNode], UnaryFunction]) -> Callable[[Builder, IRNode], None]:
    """A converter adding ``make(node)``, or folding it when its input is a constant."""

    def op(b: Builder, node: IRNode) -> None:
        layer = make(node)
        x = node.inputs[0]
        if b.is_act(x):
            b.add(node, layer, x)
        else:
            value = _constant(b, node, x)
            with np.errstate(all="ignore"):  # NaN where ONNX gives NaN (sqrt of a negative)
                _store(b, node, layer.fn(value.astype(np.result_type(value, np.float32))))

    return op


def _attr(node: IRNode, key: str, default: float) -> float:
    return _f32(node.attrs.get(key, default))


def _gelu(node: IRNode) -> nn.Gelu:
    approximate = node.attrs.get("approximate", "none")
    if isinstance(approximate, bytes):
        approximate = approximate.decode("utf-8", "replace")
    if approximate not in ("none", "tanh"):
        raise ValueError(approximate)
    return nn.Gelu(approximate)


#: Unary operators: (ONNX name, first opset, layer from the node, limits).
UNARY: list[tuple[str, int, Callable[[IRNode], Any], str]] = [
    ("HardSigmoid", 1, lambda n: nn.HardSigmoid(_attr(n, "alpha", 0.2), _attr(n, "beta", 0.5)), ""),
    ("Erf", 9, lambda n: nn.Erf(), ""),
    ("Sqrt", 1, lambda n: nn.Sqrt(), ""),
    ("Exp", 1, lambda n: nn.Exp(), ""),
    ("Log", 1, lambda n: nn.Log(), ""),
    ("Neg", 1, lambda n: nn.Neg(), "float tensors"),
    ("Abs", 1, lambda n: nn.Abs(), "float tensors"),
    ("Reciprocal", 1, lambda n: nn.Reciprocal(), ""),
    ("Softplus", 1, lambda n: nn.Softplus(), ""),
    ("Softsign", 1, lambda n: nn.Softsign(), ""),
    ("Mish", 18, lambda n: nn.Mish(), ""),
    ("Celu", 12, lambda n: nn.Celu(_attr(n, "alpha", 1.0)), "alpha not 0"),
    ("Elu", 1, lambda n: nn.Elu(_attr(n, "alpha", 1.0)), ""),
    (
        "Selu",
        1,
        lambda n: nn.Selu(
            _attr(n, "alpha", 1.67326319217681884765625),
            _attr(n, "gamma", 1.05070102214813232421875),
        ),
        "",
    ),
    ("Sin", 7, lambda n: nn.Sin(), ""),
    ("Cos", 7, lambda n: nn.Cos(), ""),
]


def op_gelu(b: Builder, node: IRNode) -> None:
    """``Gelu`` (opset 20): exact or ``approximate="tanh"``."""
    try:
        make = _gelu(node)
    except ValueError as exc:
        raise b.fail(node, f"approximate must be 'none' or 'tanh'; got {exc.args[0]!r}.") from None
    _unary(lambda n: make)(b, node)


#: The most distinct values a constant exponent tensor may hold (one Power layer each).
_EXPONENTS = 8


def _pow_by_constant(b: Builder, node: IRNode, x: str, exponent: np.ndarray) -> None:
    """``x ** exponent`` for a constant exponent: one :class:`~xai_core.nn.Power` layer per
    distinct value, each picked where the exponent holds it by a :class:`~xai_core.nn.Where`
    of a constant condition (so a NaN of ``(-2) ** 0.5`` where it is not picked stays out)."""
    values = np.unique(exponent.astype(np.float64))
    if exponent.size == 1 or values.size == 1:
        if exponent.ndim >= b.rank(node, x) and exponent.size > 1:
            raise b.fail(node, f"an exponent of shape {exponent.shape} broadcasts the batch.")
        b.add(node, nn.Power(float(values[0])), x)
        return
    if values.size > _EXPONENTS:
        raise b.fail(
            node,
            f"the exponent holds {values.size} distinct values; at most {_EXPONENTS} are "
            "supported (one Power layer each).",
        )
    rank = b.rank(node, x)
    out = b.add(node, nn.Power(float(values[-1])), x, suffix=f"/pow{len(values) - 1}")
    for k in range(len(values) - 2, -1, -1):
        cond = b.value_node(node, (exponent == values[k]).astype(np.float64), rank)
        power = b.add(node, nn.Power(float(values[k])), x, suffix=f"/pow{k}")
        out = b.add(node, nn.Where(), [cond, power, out], suffix="" if k == 0 else f"/pick{k}")


def op_pow(b: Builder, node: IRNode) -> None:
    """``Pow``: a constant exponent (of at most :data:`_EXPONENTS` distinct values), a
    constant base or both computed (:class:`~xai_core.nn.Exponentiate`), or folded."""
    x, y = node.inputs[:2]
    if not b.is_act(x) and not b.is_act(y):
        with np.errstate(all="ignore"):
            base, exponent = _constant(b, node, x), _constant(b, node, y)
            out = np.power(base.astype(np.result_type(base, np.float32)), exponent)
        _store(b, node, out.astype(base.dtype) if base.dtype.kind == "f" else out)
        return
    if b.is_act(x) and not b.is_act(y):
        _pow_by_constant(b, node, x, _constant(b, node, y))
        return
    if b.is_act(x) and b.is_act(y):
        b.add(node, nn.Exponentiate(), [x, y])
        return
    # a constant base: numpy's power, exact where the power is (whole bases and exponents)
    base = b.value_node(node, _constant(b, node, x).astype(np.float64), b.rank(node, y))
    b.add(node, nn.Exponentiate(), [base, y])


def op_sum(b: Builder, node: IRNode) -> None:
    """``Sum`` of one or more inputs, broadcast (folded when every input is a constant)."""
    ins = [i for i in node.inputs if i]
    acts = [i for i in ins if b.is_act(i)]
    if not acts:
        values = [_constant(b, node, i) for i in ins]
        _store(b, node, sum(values[1:], values[0]))
        return
    if len(ins) == 1:
        b.add(node, nn.Identity(), ins[0])
        return
    rank = max(b.rank(node, i) for i in acts)
    operands = [i if b.is_act(i) else b.constant_node(node, i, rank) for i in ins]
    b.add(node, nn.Add(), operands)


def op_prelu(b: Builder, node: IRNode) -> None:
    """``PRelu`` with a constant slope, which becomes the layer's (trainable) ``slope``."""
    x = node.inputs[0]
    rank = b.rank(node, x)
    slope = np.asarray(_constant(b, node, node.inputs[1]), dtype=np.float64)
    if slope.ndim > rank:
        raise b.fail(node, f"a slope of shape {slope.shape} has more axes than the input.")
    if slope.ndim == rank:
        if slope.shape[0] != 1:
            raise b.fail(node, f"a slope of shape {slope.shape} varies along the batch axis.")
        slope = slope[0]
    name = b.add(node, nn.PRelu(slope.shape), x)
    b.g.set_params(name, slope=slope)


def op_layer_norm(b: Builder, node: IRNode) -> None:
    """``LayerNormalization`` (opset 17) over the axes from ``axis``, with constant scale and
    bias; the Mean and InvStdDev outputs, when read, are reductions of their own."""
    x = node.inputs[0]
    rank = b.rank(node, x)
    axis = _axis(b, node, int(node.attrs.get("axis", -1)), rank)
    shape = b.g.shape_of(b.node_of(node, x))[axis:]

    def operand(i: int, default: float) -> np.ndarray:
        if len(node.inputs) <= i or not node.inputs[i]:
            return np.full(shape, default)
        value = np.asarray(_constant(b, node, node.inputs[i]), dtype=np.float64)
        try:
            return np.broadcast_to(value, shape)
        except ValueError:
            raise b.fail(
                node, f"input {i} of shape {value.shape} does not broadcast to {tuple(shape)}."
            ) from None

    layer = nn.LayerNormalization(axis=axis, epsilon=_attr(node, "epsilon", 1e-5))
    name = b.add(node, layer, x)
    b.g.set_params(name, gamma=operand(1, 1.0), beta=operand(2, 0.0))
    if any(node.outputs[1:]):
        _layer_norm_statistics(b, node, axis, rank, layer.epsilon)


def _layer_norm_statistics(b: Builder, node: IRNode, axis: int, rank: int, eps: float) -> None:
    """LayerNormalization's Mean and InvStdDev outputs: ``mean(x)`` and
    ``1 / sqrt(mean((x - mean)**2) + epsilon)`` over the normalised axes, kept as size 1."""
    x = b.node_of(node, node.inputs[0])
    axes = tuple(range(axis, rank - 1))
    mean = b.add(node, nn.Reduce("mean", axes, keepdims=True), x, suffix="/mean")
    centred = b.add(node, nn.Subtract(), [x, mean], suffix="/centred")
    square = b.add(node, nn.Power(2.0), centred, suffix="/square")
    var = b.add(node, nn.Reduce("mean", axes, keepdims=True), square, suffix="/var")
    eps_node = b.value_node(node, np.full([1] * rank, eps), rank)
    shifted = b.add(node, nn.Add(), [var, eps_node], suffix="/var_eps")
    std = b.add(node, nn.Sqrt(), shifted, suffix="/std")
    inv = b.add(node, nn.Reciprocal(), std, suffix="/inv_std")
    for k, made in ((1, mean), (2, inv)):
        if len(node.outputs) > k and node.outputs[k]:
            b.act[node.outputs[k]] = made


def op_lrn(b: Builder, node: IRNode) -> None:
    """``LRN`` across the channels of an NCHW tensor (AlexNet, GoogLeNet, ZFNet)."""
    x = node.inputs[0]
    if b.rank(node, x) < 3 or b.g.layout != "NCHW":
        raise b.fail(node, "LRN needs an NCHW tensor of rank 3 or more (channels on axis 1).")
    if "size" not in node.attrs:
        raise b.fail(node, "the size attribute is required.")
    if int(node.attrs["size"]) % 2 == 0:  # as onnxruntime, which takes odd windows only
        raise b.fail(node, f"an odd size is supported (onnxruntime's); got {node.attrs['size']}.")
    layer = nn.LocalResponseNormalization(
        int(node.attrs["size"]),
        alpha=_attr(node, "alpha", 1e-4),
        beta=_attr(node, "beta", 0.75),
        bias=_attr(node, "bias", 1.0),
    )
    b.add(node, layer, x)


def _softmax(log: bool, legacy: bool) -> Callable[[Builder, IRNode], None]:
    """Softmax or LogSoftmax; ``legacy``: opsets before 13 (coerced to 2-D at ``axis``)."""

    def op(b: Builder, node: IRNode) -> None:
        x = node.inputs[0]
        rank = b.rank(node, x)
        axis = _axis(b, node, int(node.attrs.get("axis", 1 if legacy else -1)), rank)
        shape = b.g.shape_of(b.node_of(node, x))
        last = len(shape) - 1
        make = nn.LogSoftmax if log else nn.Softmax
        if axis == last:
            b.add(node, make(), x)
        elif legacy:  # one softmax over every axis from ``axis`` on
            flat = b.add(node, nn.Reshape((*shape[:axis], -1)), x, suffix="/flat")
            out = b.add(node, make(), flat, suffix="/softmax")
            b.add(node, nn.Reshape(tuple(shape)), out)
        elif log:
            b.add(node, nn.LogSoftmax(axis=axis), x)
        else:  # nn.Softmax works on the last axis: swap the axis there and back
            perm = list(range(len(shape)))
            perm[axis], perm[last] = last, axis
            moved = b.add(node, nn.Transpose(tuple(perm)), x, suffix="/to_last")
            out = b.add(node, nn.Softmax(), moved, suffix="/softmax")
            b.add(node, nn.Transpose(tuple(perm)), out)

    return op


_NUMPY_REDUCE = {
    "max": np.max,
    "min": np.min,
    "sum": np.sum,
    "mean": np.mean,
    "l2": lambda v, axis, keepdims: np.sqrt(np.sum(v * v, axis=axis, keepdims=keepdims)),
}


def _reduce(kind: str, axes_input: bool) -> Callable[[Builder, IRNode], None]:
    """A reduction; ``axes_input``: the axes come from the second input, not the attribute."""

    def op(b: Builder, node: IRNode) -> None:
        x = node.inputs[0]
        keep = bool(node.attrs.get("keepdims", 1))
        if axes_input:
            given = len(node.inputs) > 1 and bool(node.inputs[1])
            axes = b.ints(node, node.inputs[1]) if given else []
            if not axes and node.attrs.get("noop_with_empty_axes", 0):
                if b.is_act(x):
                    b.add(node, nn.Identity(), x)
                else:
                    b.alias(node, x)
                return
        else:
            axes = [int(a) for a in node.attrs.get("axes", [])]
        if not b.is_act(x):
            value = _constant(b, node, x).astype(np.float64)
            chosen = tuple(axes) if axes else None
            _store(b, node, _NUMPY_REDUCE[kind](value, axis=chosen, keepdims=keep))
            return
        rank = b.rank(node, x)
        if not axes:
            raise b.fail(
                node, "no axes given: the reduction over every axis would mix the batch's samples."
            )
        sample_axes = sorted({_axis(b, node, a, rank) for a in axes})
        if len(sample_axes) != len(axes):
            raise b.fail(node, f"axes {axes} name one axis twice.")
        if kind == "mean" and rank == 4 and sample_axes == [1, 2]:
            b.add(node, nn.GlobalAveragePooling2D(keepdims=keep), x)  # NCHW height and width
            return
        b.add(node, nn.Reduce(kind, tuple(sample_axes), keepdims=keep), x)

    return op


for _op, _since, _make, _limits in UNARY:
    register(_op, _unary(_make), since=_since, limits=_limits)

for _op, _fn, _since, _until, _limits in [
    ("Gelu", op_gelu, 20, None, "approximate 'none' and 'tanh'"),
    (
        "Pow",
        op_pow,
        7,
        None,
        "a constant exponent (at most 8 distinct values, broadcast), a constant base, or both "
        "computed (numpy's power, torch's gradients); both constant: folded",
    ),
    ("PRelu", op_prelu, 7, None, "a constant slope broadcast per sample"),
    ("Sum", op_sum, 8, None, "broadcasting"),
    (
        "LayerNormalization",
        op_layer_norm,
        17,
        None,
        "constant scale and bias; not over the batch axis; Mean and InvStdDev outputs",
    ),
    ("LRN", op_lrn, 1, None, "NCHW tensors, across the channels; odd sizes (as onnxruntime)"),
    ("Softmax", _softmax(False, True), 1, 12, "any axis but the batch's (coerced to 2-D at axis)"),
    ("Softmax", _softmax(False, False), 13, None, "any axis but the batch's"),
    ("LogSoftmax", _softmax(True, True), 1, 12, "any axis but the batch's (coerced to 2-D)"),
    ("LogSoftmax", _softmax(True, False), 13, None, "any axis but the batch's"),
]:
    register(_op, _fn, since=_since, until=_until, limits=_limits)

_NOT_BATCH = "axes not including the batch axis; keepdims"
for _op, _kind, _moved in [
    ("ReduceMax", "max", 18),
    ("ReduceMin", "min", 18),
    ("ReduceSum", "sum", 13),
    ("ReduceMean", "mean", 18),
    ("ReduceL2", "l2", 18),
]:
    register(
        _op, _reduce(_kind, False), since=1, until=_moved - 1, limits=f"{_NOT_BATCH} (attribute)"
    )
    register(
        _op,
        _reduce(_kind, True),
        since=_moved,
        limits=f"{_NOT_BATCH}; constant axes input; noop_with_empty_axes",
    )
