"""ONNX normalisations composed of native layers: RMS, instance, group, mean-variance, Lp.

Each is built of reductions (:class:`~xai_core.nn.Reduce`), elementwise functions and
broadcasting arithmetic with constants, so its gradient is that of the composition:

- ``RMSNormalization`` (opset 23): ``x / sqrt(mean(x**2) + epsilon) * scale`` over the axes
  from ``axis`` on;
- ``InstanceNormalization``: per sample and channel, over the spatial axes, with a
  per-channel scale and bias;
- ``GroupNormalization`` (opset 21): per sample and group of channels, then a per-channel
  scale and bias;
- ``MeanVarianceNormalization``: ``(x - mean) / (std + 1e-9)`` over ``axes``;
- ``LpNormalization``: ``x / ||x||_p`` along ``axis`` (p 1 or 2), 0 where the norm is 0
  (as the ONNX reference and onnxruntime give).

Scales and biases are constants (initialisers, or inputs of another batch size, which the
backend adapter folds in).
"""

from __future__ import annotations

import numpy as np

from xai_core import nn
from xai_core.importers.ir import IRNode
from xai_core.importers.onnx_ops import Builder, _axis, _f32
from xai_core.importers.onnx_registry import register

__all__: list[str] = []


def _per_sample(b: Builder, node: IRNode, x: str) -> tuple[int, ...]:
    return b.g.shape_of(b.node_of(node, x))


def _const(b: Builder, node: IRNode, k: int, shape: tuple[int, ...], what: str) -> np.ndarray:
    """Input ``k`` as a constant broadcast to the per-sample ``shape``."""
    value = np.asarray(b.numbers(node, node.inputs[k]), dtype=np.float64)
    try:
        return np.broadcast_to(value, shape)
    except ValueError:
        raise b.fail(
            node, f"the {what} of shape {value.shape} does not broadcast to {tuple(shape)}."
        ) from None


def _standardise(
    b: Builder, node: IRNode, src: str, axes: tuple[int, ...], eps: float, *, centre: bool
) -> str:
    """``(x - mean) / sqrt(var + eps)`` of the native node ``src`` over the per-sample
    ``axes`` (``centre=False``: ``x / sqrt(mean(x**2) + eps)``); returns the native node."""
    rank = len(b.g.shape_of(src)) + 1
    if centre:
        mean = b.add(node, nn.Reduce("mean", axes, keepdims=True), src, suffix="/mean")
        src = b.add(node, nn.Subtract(), [src, mean], suffix="/centred")
    sq = b.add(node, nn.Power(2.0), src, suffix="/square")
    var = b.add(node, nn.Reduce("mean", axes, keepdims=True), sq, suffix="/var")
    if eps:
        var = b.add(
            node, nn.Add(), [var, b.value_node(node, np.full([1] * rank, eps), rank)], suffix="/eps"
        )
    std = b.add(node, nn.Sqrt(), var, suffix="/std")
    return b.add(node, nn.Divide(), [src, std], suffix="/normalised")


def _affine(b: Builder, node: IRNode, src: str, scale, bias, rank: int) -> None:
    """``src * scale + bias`` (either may be None), the last layer the node's output."""
    if scale is not None:
        src = b.add(
            node,
            nn.Multiply(),
            [src, b.value_node(node, scale, rank)],
            suffix="/scaled" if bias is not None else "",
        )
    if bias is not None:
        b.add(node, nn.Add(), [src, b.value_node(node, bias, rank)])
    elif scale is None:
        b.add(node, nn.Identity(), src)


def op_rms_norm(b: Builder, node: IRNode) -> None:
    """``RMSNormalization`` over the axes from ``axis``, with a constant scale."""
    if any(node.outputs[1:]):
        raise b.fail(node, "only the normalised output Y is supported.")
    x = node.inputs[0]
    shape = _per_sample(b, node, x)
    rank = len(shape) + 1
    axis = _axis(b, node, int(node.attrs.get("axis", -1)), rank)
    axes = tuple(range(axis, len(shape)))
    eps = _f32(node.attrs.get("epsilon", 1e-5))
    out = _standardise(b, node, b.node_of(node, x), axes, eps, centre=False)
    _affine(b, node, out, _const(b, node, 1, shape[axis:], "scale"), None, rank)


def op_instance_norm(b: Builder, node: IRNode) -> None:
    """``InstanceNormalization``: over the spatial axes of (C, *spatial) samples."""
    x = node.inputs[0]
    shape = _per_sample(b, node, x)
    if len(shape) < 2:
        raise b.fail(node, f"needs (C, *spatial) samples; got {shape}.")
    c, spatial = shape[0], len(shape) - 1
    per_channel = (c, *([1] * spatial))
    scale = _const(b, node, 1, (c,), "scale").reshape(per_channel)
    bias = _const(b, node, 2, (c,), "bias").reshape(per_channel)
    eps = _f32(node.attrs.get("epsilon", 1e-5))
    out = _standardise(b, node, b.node_of(node, x), tuple(range(1, len(shape))), eps, centre=True)
    _affine(b, node, out, scale, bias, len(shape) + 1)


def op_group_norm(b: Builder, node: IRNode) -> None:
    """``GroupNormalization`` (opset 21): per group of channels, then per-channel affine."""
    x = node.inputs[0]
    shape = _per_sample(b, node, x)
    groups = int(node.attrs["num_groups"])
    if len(shape) < 2 or groups < 1 or shape[0] % groups:
        raise b.fail(node, f"{groups} groups do not divide the channels of samples {shape}.")
    c = shape[0]
    grouped = b.add(node, nn.Reshape((groups, -1)), x, suffix="/groups")
    eps = _f32(node.attrs.get("epsilon", 1e-5))
    out = _standardise(b, node, grouped, (1,), eps, centre=True)
    back = b.add(node, nn.Reshape(tuple(shape)), out, suffix="/channels")
    per_channel = (c, *([1] * (len(shape) - 1)))
    scale = _const(b, node, 1, (c,), "scale").reshape(per_channel)
    bias = _const(b, node, 2, (c,), "bias").reshape(per_channel)
    _affine(b, node, back, scale, bias, len(shape) + 1)


def op_mvn(b: Builder, node: IRNode) -> None:
    """``MeanVarianceNormalization``: ``(x - mean) / (std + 1e-9)`` over ``axes``."""
    x = node.inputs[0]
    rank = b.rank(node, x)
    given = [int(a) for a in node.attrs.get("axes", [0, 2, 3])]
    axes = tuple(sorted({_axis(b, node, a, rank) for a in given}))
    src = b.node_of(node, x)
    mean = b.add(node, nn.Reduce("mean", axes, keepdims=True), src, suffix="/mean")
    centred = b.add(node, nn.Subtract(), [src, mean], suffix="/centred")
    sq = b.add(node, nn.Power(2.0), centred, suffix="/square")
    var = b.add(node, nn.Reduce("mean", axes, keepdims=True), sq, suffix="/var")
    std = b.add(node, nn.Sqrt(), var, suffix="/std")
    tiny = b.value_node(node, np.full([1] * rank, 1e-9), rank)
    std = b.add(node, nn.Add(), [std, tiny], suffix="/eps")
    b.add(node, nn.Divide(), [centred, std])


def op_lp_norm(b: Builder, node: IRNode) -> None:
    """``LpNormalization``: ``x / ||x||_p`` along ``axis``, p 1 or 2.

    Where the norm is 0 (an all-zero slice) the output is 0, not ``0 / 0``: the divisor is
    ``norm + (norm == 0)``, so such a slice is divided by 1. The comparison has derivative 0
    and the norms' derivatives are 0 at 0, so the gradient there is that of ``x / 1``; it
    is unchanged elsewhere.
    """
    x = node.inputs[0]
    rank = b.rank(node, x)
    axis = _axis(b, node, int(node.attrs.get("axis", -1)), rank)
    p = int(node.attrs.get("p", 2))
    src = b.node_of(node, x)
    if p == 2:
        norm = b.add(node, nn.Reduce("l2", (axis,), keepdims=True), src, suffix="/norm")
    elif p == 1:
        a = b.add(node, nn.Abs(), src, suffix="/abs")
        norm = b.add(node, nn.Reduce("sum", (axis,), keepdims=True), a, suffix="/norm")
    else:
        raise b.fail(node, f"p must be 1 or 2; got {p}.")
    zero = b.value_node(node, np.zeros([1] * rank), rank)
    is_zero = b.add(node, nn.Compare("equal"), [norm, zero], suffix="/is_zero")
    safe = b.add(node, nn.Add(), [norm, is_zero], suffix="/safe_norm")
    b.add(node, nn.Divide(), [src, safe])


_CONST = "constant scale and bias"
for _op, _fn, _since, _limits in [
    ("RMSNormalization", op_rms_norm, 23, "constant scale; not over the batch axis; output Y only"),
    ("InstanceNormalization", op_instance_norm, 6, f"{_CONST} (per channel)"),
    ("GroupNormalization", op_group_norm, 21, f"{_CONST} (per channel)"),
    ("MeanVarianceNormalization", op_mvn, 9, "axes not including the batch axis"),
    ("LpNormalization", op_lp_norm, 1, "p 1 or 2; any axis but the batch's"),
]:
    register(_op, _fn, since=_since, limits=_limits)
