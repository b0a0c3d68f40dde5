"""More ONNX elementwise operators, comparisons, extremes and composite reductions.

Unary functions (``Tan``, ``Asin`` ... ``Atanh``, ``Floor``, ``Ceil``, ``Round``, ``Sign``,
``IsNaN``, ``IsInf``, ``ThresholdedRelu``, ``Shrink``, ``Swish``) become the layers of
:mod:`xai_core.nn.elementwise_math` (folded at import when the input is a constant); the
comparisons ``Greater``, ``GreaterOrEqual``, ``Less``, ``LessOrEqual`` become
:class:`~xai_core.nn.Compare`; ``Max``, ``Min`` and ``Mean`` of one or more inputs become
:class:`~xai_core.nn.Maximum`, :class:`~xai_core.nn.Minimum` and a scaled
:class:`~xai_core.nn.Add`; ``ArgMax``, ``ArgMin`` and ``Hardmax`` the layers of
:mod:`xai_core.nn.compare`; ``ReduceL1``, ``ReduceSumSquare``, ``ReduceLogSum`` and
``ReduceLogSumExp`` are composed of an elementwise function and a sum
(:class:`~xai_core.nn.Reduce`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from xai_core import nn
from xai_core.importers.ir import IRNode
from xai_core.importers.onnx_ops import Builder, _axis, _f32, _store
from xai_core.importers.onnx_registry import register

__all__ = ["UNARY_MORE"]


def _constant(b: Builder, node: IRNode, name: str) -> np.ndarray:
    value = np.asarray(b.value(node, name))
    if value.dtype == object:
        raise b.fail(node, "arithmetic on the batch size is not supported.")
    return value


def _unary(make: Callable[[IRNode], Any]) -> Callable[[Builder, IRNode], None]:
    """Add ``make(node)`` reading the input, or fold it when the input is a constant."""

    def op(b: Builder, node: IRNode) -> None:
        layer = make(node)
        x = node.inputs[0]
        if b.is_act(x):
            b.add(node, layer, x)
            return
        value = _constant(b, node, x)
        with np.errstate(all="ignore"):
            _store(b, node, layer.fn(value.astype(np.result_type(value, np.float32))))

    return op


def _attr(node: IRNode, key: str, default: float) -> float:
    return _f32(node.attrs.get(key, default))


_FINITE = (
    "float tensors computed in the network (explained inputs are finite; "
    "`predict_outputs(allow_nan=True)` runs any)"
)

#: (ONNX name, first opset, layer from the node, limits).
UNARY_MORE: list[tuple[str, int, Callable[[IRNode], Any], str]] = [
    ("Tan", 7, lambda n: nn.Tan(), ""),
    ("Asin", 7, lambda n: nn.Asin(), ""),
    ("Acos", 7, lambda n: nn.Acos(), ""),
    ("Atan", 7, lambda n: nn.Atan(), ""),
    ("Sinh", 9, lambda n: nn.Sinh(), ""),
    ("Cosh", 9, lambda n: nn.Cosh(), ""),
    ("Asinh", 9, lambda n: nn.Asinh(), ""),
    ("Acosh", 9, lambda n: nn.Acosh(), ""),
    ("Atanh", 9, lambda n: nn.Atanh(), ""),
    ("Floor", 1, lambda n: nn.Floor(), "float tensors (gradient 0)"),
    ("Ceil", 1, lambda n: nn.Ceil(), "float tensors (gradient 0)"),
    ("Round", 11, lambda n: nn.Round(), "float tensors (gradient 0)"),
    ("Sign", 9, lambda n: nn.Sign(), "float tensors (gradient 0)"),
    ("IsNaN", 9, lambda n: nn.IsNaN(), f"{_FINITE}; the output is 0/1 (gradient 0)"),
    (
        "IsInf",
        10,
        lambda n: nn.IsInf(
            bool(n.attrs.get("detect_negative", 1)), bool(n.attrs.get("detect_positive", 1))
        ),
        f"{_FINITE}; detect_negative, detect_positive; the output is 0/1 (gradient 0)",
    ),
    ("ThresholdedRelu", 10, lambda n: nn.ThresholdedReLU(_attr(n, "alpha", 1.0)), ""),
    ("Shrink", 9, lambda n: nn.Shrink(_attr(n, "bias", 0.0), _attr(n, "lambd", 0.5)), ""),
    ("Swish", 24, lambda n: nn.Swish(_attr(n, "alpha", 1.0)), ""),
]


def _operands(b: Builder, node: IRNode, names: list[str]) -> list[str]:
    """The native nodes of ``names`` (activations as they are, constants as Constant nodes)."""
    rank = max(b.rank(node, i) for i in names if b.is_act(i))
    return [i if b.is_act(i) else b.constant_node(node, i, rank) for i in names]


_COMPARE = {
    "Greater": ("greater", np.greater),
    "GreaterOrEqual": ("greater_equal", np.greater_equal),
    "Less": ("less", np.less),
    "LessOrEqual": ("less_equal", np.less_equal),
}


def _compare(op: str) -> Callable[[Builder, IRNode], None]:
    kind, fn = _COMPARE[op]

    def convert(b: Builder, node: IRNode) -> None:
        x, y = node.inputs[:2]
        if not b.is_act(x) and not b.is_act(y):
            _store(b, node, fn(_constant(b, node, x), _constant(b, node, y)))
            return
        b.add(node, nn.Compare(kind), _operands(b, node, [x, y]))

    return convert


_EXTREMES = {"Max": (nn.Maximum, np.maximum), "Min": (nn.Minimum, np.minimum)}


def _extreme(op: str) -> Callable[[Builder, IRNode], None]:
    layer, fn = _EXTREMES[op]

    def convert(b: Builder, node: IRNode) -> None:
        ins = [i for i in node.inputs if i]
        if not any(b.is_act(i) for i in ins):
            values = [_constant(b, node, i) for i in ins]
            out = values[0]
            for v in values[1:]:
                out = fn(out, v)
            _store(b, node, out)
            return
        if len(ins) == 1:
            b.add(node, nn.Identity(), ins[0])
            return
        b.add(node, layer(), _operands(b, node, ins))

    return convert


def op_mean(b: Builder, node: IRNode) -> None:
    """``Mean`` of one or more inputs, broadcast: their sum times ``1 / n``."""
    ins = [i for i in node.inputs if i]
    if not any(b.is_act(i) for i in ins):
        values = [_constant(b, node, i) for i in ins]
        _store(b, node, (sum(values[1:], values[0]) / len(values)).astype(values[0].dtype))
        return
    if len(ins) == 1:
        b.add(node, nn.Identity(), ins[0])
        return
    total = b.add(node, nn.Add(), _operands(b, node, ins), suffix="/sum")
    rank = len(b.g.shape_of(total)) + 1
    share = b.value_node(node, np.full([1] * rank, 1.0 / len(ins)), rank)
    b.add(node, nn.Multiply(), [total, share])


def _arg(largest: bool) -> Callable[[Builder, IRNode], None]:
    def convert(b: Builder, node: IRNode) -> None:
        x = node.inputs[0]
        keep = bool(node.attrs.get("keepdims", 1))
        last = bool(node.attrs.get("select_last_index", 0))
        axis = int(node.attrs.get("axis", 0))
        if not b.is_act(x):
            v = _constant(b, node, x)
            v = v if largest else -v
            if last:
                idx = v.shape[axis] - 1 - np.argmax(np.flip(v, axis=axis), axis=axis)
            else:
                idx = np.argmax(v, axis=axis)
            _store(b, node, np.expand_dims(idx, axis) if keep else idx)
            return
        rank = b.rank(node, x)
        b.add(node, nn.ArgExtreme(largest, _axis(b, node, axis, rank), keep, last), x)

    return convert


def _hardmax(legacy: bool) -> Callable[[Builder, IRNode], None]:
    def convert(b: Builder, node: IRNode) -> None:
        x = node.inputs[0]
        rank = b.rank(node, x)
        axis = _axis(b, node, int(node.attrs.get("axis", 1 if legacy else -1)), rank)
        shape = b.g.shape_of(b.node_of(node, x))
        if axis == len(shape) - 1 or not legacy:
            b.add(node, nn.Hardmax(axis), x)
            return
        flat = b.add(node, nn.Reshape((*shape[:axis], -1)), x, suffix="/flat")
        out = b.add(node, nn.Hardmax(-1), flat, suffix="/hardmax")
        b.add(node, nn.Reshape(tuple(shape)), out)

    return convert


def _sample_axes(b: Builder, node: IRNode, x: str, axes_input: bool) -> list[int] | None:
    """The reduction's per-sample axes, or None for ``noop_with_empty_axes``."""
    if axes_input:
        given = len(node.inputs) > 1 and bool(node.inputs[1])
        axes = b.ints(node, node.inputs[1]) if given else []
        if not axes and node.attrs.get("noop_with_empty_axes", 0):
            return None
    else:
        axes = [int(a) for a in node.attrs.get("axes", [])]
    if not axes:
        raise b.fail(
            node, "no axes given: the reduction over every axis would mix the batch's samples."
        )
    rank = b.rank(node, x)
    out = sorted({_axis(b, node, a, rank) for a in axes})
    if len(out) != len(axes):
        raise b.fail(node, f"axes {axes} name one axis twice.")
    return out


#: Composite reductions: (before the sum, after it) as layer factories, and numpy.
_COMPOSITE = {
    "ReduceL1": (nn.Abs, None, lambda v, a, k: np.sum(np.abs(v), axis=a, keepdims=k)),
    "ReduceSumSquare": (
        lambda: nn.Power(2.0),
        None,
        lambda v, a, k: np.sum(v * v, axis=a, keepdims=k),
    ),
    "ReduceLogSum": (None, nn.Log, lambda v, a, k: np.log(np.sum(v, axis=a, keepdims=k))),
}


def _composite(op: str, axes_input: bool) -> Callable[[Builder, IRNode], None]:
    def convert(b: Builder, node: IRNode) -> None:
        x = node.inputs[0]
        keep = bool(node.attrs.get("keepdims", 1))
        if not b.is_act(x):
            value = _constant(b, node, x)
            axes = b.ints(node, node.inputs[1]) if axes_input and len(node.inputs) > 1 else None
            axes = axes if axes_input else node.attrs.get("axes")
            chosen = tuple(axes) if axes else None
            with np.errstate(all="ignore"):
                if op == "ReduceLogSumExp":
                    out = np.log(np.sum(np.exp(value), axis=chosen, keepdims=keep))
                else:
                    out = _COMPOSITE[op][2](value, chosen, keep)
            _store(b, node, out.astype(value.dtype))
            return
        axes = _sample_axes(b, node, x, axes_input)
        if axes is None:  # noop_with_empty_axes: the input, with the elementwise step only
            if op in ("ReduceL1", "ReduceSumSquare"):
                b.add(node, _COMPOSITE[op][0](), x)
            elif op == "ReduceLogSum":
                b.add(node, nn.Log(), x)
            else:  # log(exp(x)) = x
                b.add(node, nn.Identity(), x)
            return
        if op == "ReduceLogSumExp":  # m + log(sum(exp(x - m))), m the max along the axes
            m = b.add(node, nn.Reduce("max", tuple(axes), keepdims=True), x, suffix="/max")
            shifted = b.add(node, nn.Subtract(), [x, m], suffix="/shift")
            e = b.add(node, nn.Exp(), shifted, suffix="/exp")
            s = b.add(node, nn.Reduce("sum", tuple(axes), keepdims=keep), e, suffix="/sum")
            log = b.add(node, nn.Log(), s, suffix="/log")
            if not keep:
                m = b.add(node, nn.Reshape(b.g.shape_of(log)), m, suffix="/max_flat")
            b.add(node, nn.Add(), [log, m])
            return
        before, after, _ = _COMPOSITE[op]
        src = b.add(node, before(), x, suffix="/elementwise") if before else x
        reduce = nn.Reduce("sum", tuple(axes), keepdims=keep)
        if after is None:
            b.add(node, reduce, src)
        else:
            total = b.add(node, reduce, src, suffix="/sum")
            b.add(node, after(), total)

    return convert


for _op, _since, _make, _limits in UNARY_MORE:
    register(_op, _unary(_make), since=_since, limits=_limits)

for _op in _COMPARE:
    register(
        _op,
        _compare(_op),
        since=7 if _op in ("Greater", "Less") else 12,
        limits="broadcasting; the output is 0/1 (gradient 0)",
    )
for _op in _EXTREMES:
    register(_op, _extreme(_op), since=8, limits="one or more inputs, broadcasting")
register("Mean", op_mean, since=8, limits="one or more inputs, broadcasting")
register(
    "ArgMax", _arg(True), since=1, limits="any axis but the batch's; keepdims; select_last_index"
)
register(
    "ArgMin", _arg(False), since=1, limits="any axis but the batch's; keepdims; select_last_index"
)
register("Hardmax", _hardmax(True), since=1, until=12, limits="any axis but the batch's (2-D)")
register("Hardmax", _hardmax(False), since=13, limits="any axis but the batch's")

_NOT_BATCH = "axes not including the batch axis; keepdims"
for _op in ("ReduceL1", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"):
    register(_op, _composite(_op, False), since=1, until=17, limits=f"{_NOT_BATCH} (attribute)")
    register(
        _op,
        _composite(_op, True),
        since=18,
        limits=f"{_NOT_BATCH}; constant axes input; noop_with_empty_axes",
    )
