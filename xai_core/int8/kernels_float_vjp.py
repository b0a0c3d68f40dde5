"""The backward passes of TFLite's float kernels (:mod:`.kernels_float`): one per operator.

Each ``vjp(op, tensors, inputs, output, grad, backend)`` takes what the float kernel took
(the operator, the graph's tensors with float constants, the real inputs as a list in the
order of ``op.inputs``), the kernel's output and ``grad`` (d loss / d that output, of its
shape), and returns a list with d loss / d each input (None where an input has no
gradient: weights, indices, shapes). Products go through ``backend.matmul`` and
``backend.batched_matmul``, so the backward pass is counted as the forward pass is.

A fused activation is differentiated from the kernel's output: 1 strictly inside its
clamp, 0 on it (ReLU's derivative at 0 is 0, as torch's). :mod:`.ste` walks these in
reverse over an int8 graph with the straight-through estimator at every quantise step.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xai_core.int8.geometry import batch_matmul_stacks
from xai_core.int8.kernels_int8 import _same_padding, window_patches

__all__ = ["FLOAT_VJPS", "window_scatter"]

#: TFLite's fused activations: the open interval where each passes gradients.
_FUSED_OPEN = {1: (0.0, np.inf), 2: (-1.0, 1.0), 3: (0.0, 6.0)}


def _fused_grad(op, output: np.ndarray, grad: np.ndarray) -> np.ndarray:
    bounds = _FUSED_OPEN.get(int(op.options.get("FusedActivationFunction", 0)))
    if bounds is None:
        return grad
    return np.where((output > bounds[0]) & (output < bounds[1]), grad, 0)


def window_scatter(
    patches: np.ndarray, x_shape: tuple[int, ...], kh: int, kw: int, opts: dict
) -> np.ndarray:
    """The adjoint of :func:`~.kernels_int8.window_patches`: gradients of the patches, of shape
    (n, oh, ow, kh, kw, c), summed into an input of shape ``x_shape`` (n, h, w, c); what
    fell on the padding is dropped."""
    sh, sw = int(opts.get("StrideH", 1)), int(opts.get("StrideW", 1))
    dh, dw = int(opts.get("DilationHFactor", 1)), int(opts.get("DilationWFactor", 1))
    n, h, w, c = x_shape
    top = bottom = left = right = 0
    if int(opts.get("Padding", 1)) == 0:  # SAME
        _, top, bottom = _same_padding(h, kh, sh, dh)
        _, left, right = _same_padding(w, kw, sw, dw)
    oh, ow = patches.shape[1:3]
    full = np.zeros((n, h + top + bottom, w + left + right, c), patches.dtype)
    for fy in range(kh):
        for fx in range(kw):
            full[:, fy * dh : fy * dh + (oh - 1) * sh + 1 : sh, fx * dw : fx * dw + (ow - 1) * sw + 1 : sw] += patches[:, :, :, fy, fx]  # fmt: skip
    return full[:, top : top + h, left : left + w]


def _only_first(inputs, dx):
    return [dx, *([None] * (len(inputs) - 1))]


def conv_2d(op, tensors, inputs, output, grad, backend):
    x = inputs[0]
    w = tensors[op.inputs[1]].data  # (out_c, kh, kw, in_c)
    oc, kh, kw, ic = w.shape
    groups = x.shape[-1] // ic
    g = _fused_grad(op, output, grad)
    n, oh, ow = g.shape[:3]
    g2 = g.reshape(-1, oc)
    if groups == 1:
        d = np.asarray(backend.matmul(g2, w.reshape(oc, -1)))
        d = d.reshape(n, oh, ow, kh, kw, ic)
    else:
        per = oc // groups
        gk = np.ascontiguousarray(g2.reshape(-1, groups, per).transpose(1, 0, 2))
        wk = np.ascontiguousarray(w.reshape(groups, per, kh * kw * ic))
        d = np.asarray(backend.batched_matmul(gk, wk)).reshape(groups, -1, kh * kw, ic)
        d = d.transpose(1, 2, 0, 3).reshape(n, oh, ow, kh, kw, groups * ic)
    return _only_first(inputs, window_scatter(d, x.shape, kh, kw, op.options))


def depthwise_conv_2d(op, tensors, inputs, output, grad, backend):
    x = inputs[0]
    w = tensors[op.inputs[1]].data  # (1, kh, kw, out_c)
    _, kh, kw, oc = w.shape
    ic = x.shape[-1]
    mult = oc // ic
    g = _fused_grad(op, output, grad)
    n, oh, ow = g.shape[:3]
    gk = np.ascontiguousarray(g.reshape(-1, ic, mult).transpose(1, 0, 2))  # (ic, M, mult)
    wk = np.ascontiguousarray(w.reshape(kh * kw, ic, mult).transpose(1, 2, 0))  # (ic, mult, T)
    d = np.asarray(backend.batched_matmul(gk, wk)).transpose(1, 2, 0)  # (M, T, ic)
    d = d.reshape(n, oh, ow, kh, kw, ic)
    return _only_first(inputs, window_scatter(d, x.shape, kh, kw, op.options))


def fully_connected(op, tensors, inputs, output, grad, backend):
    x = inputs[0]
    w = tensors[op.inputs[1]].data  # (units, k)
    g = _fused_grad(op, output, grad).reshape(-1, w.shape[0])
    return _only_first(inputs, np.asarray(backend.matmul(g, w)).reshape(x.shape))


def _unbroadcast(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``g`` summed over the axes an operand of ``shape`` was broadcast along."""
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead))) if lead else g
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    return (g.sum(axis=axes, keepdims=True) if axes else g).reshape(shape)


def _binary(partials):
    """The VJP of a broadcasting binary operator from its partial derivatives ``(da, db)``."""

    def vjp(op, tensors, inputs, output, grad, backend):
        a, b = (np.asarray(v) for v in inputs)
        g = _fused_grad(op, output, grad)
        da, db = partials(a, b)
        return [
            _unbroadcast(g * da, a.shape),
            _unbroadcast(g * db, b.shape),
        ]

    return vjp


def _pool_grad(op, inputs, output, grad):
    return inputs[0], _fused_grad(op, output, grad)


def average_pool_2d(op, tensors, inputs, output, grad, backend):
    x, g = _pool_grad(op, inputs, output, grad)
    kh, kw = int(op.options["FilterHeight"]), int(op.options["FilterWidth"])
    ones = np.ones((1, *x.shape[1:3], 1), np.float64)
    counts = window_patches(ones, kh, kw, op.options, 0.0).sum(axis=(3, 4))
    share = (g / counts)[:, :, :, None, None, :]
    d = np.broadcast_to(share, (*g.shape[:3], kh, kw, g.shape[3]))
    return _only_first(inputs, window_scatter(d, x.shape, kh, kw, op.options))


def max_pool_2d(op, tensors, inputs, output, grad, backend):
    """The gradient goes to the first maximum of each window (row by row), as torch's."""
    x, g = _pool_grad(op, inputs, output, grad)
    kh, kw = int(op.options["FilterHeight"]), int(op.options["FilterWidth"])
    patches = window_patches(x, kh, kw, op.options, -np.inf)
    n, oh, ow = patches.shape[:3]
    flat = patches.reshape(n, oh, ow, kh * kw, -1)
    first = np.argmax(flat, axis=3)
    hit = np.arange(kh * kw)[None, None, None, :, None] == first[:, :, :, None, :]
    d = (hit * g[:, :, :, None, :]).reshape(n, oh, ow, kh, kw, -1)
    return _only_first(inputs, window_scatter(d, x.shape, kh, kw, op.options))


def mean(op, tensors, inputs, output, grad, backend):
    x = inputs[0]
    axes = tuple(int(a) % x.ndim for a in np.ravel(tensors[op.inputs[1]].data))
    g = grad if op.options.get("KeepDims") else np.expand_dims(grad, axes)
    count = int(np.prod([x.shape[a] for a in axes]))
    return _only_first(inputs, np.broadcast_to(g / count, x.shape).copy())


def pad(op, tensors, inputs, output, grad, backend):
    widths = tensors[op.inputs[1]].data.astype(np.int64)
    key = tuple(slice(int(lo), int(lo) + s) for (lo, _), s in zip(widths, inputs[0].shape))
    return _only_first(inputs, grad[key])


def reshape(op, tensors, inputs, output, grad, backend):
    return _only_first(inputs, grad.reshape(inputs[0].shape))


def transpose(op, tensors, inputs, output, grad, backend):
    perm = [int(a) for a in np.ravel(tensors[op.inputs[1]].data)]
    return _only_first(inputs, np.ascontiguousarray(grad.transpose(np.argsort(perm))))


def concatenation(op, tensors, inputs, output, grad, backend):
    axis = int(op.options.get("Axis", 0)) % inputs[0].ndim
    g = _fused_grad(op, output, grad)
    edges = np.cumsum([v.shape[axis] for v in inputs])[:-1]
    parts = np.split(g, edges, axis=axis)
    return [_unbroadcast(p, v.shape) for p, v in zip(parts, inputs)]


def strided_slice(op, tensors, inputs, output, grad, backend):
    from xai_core.int8.geometry import strided_slice_key, whole_batch

    begin, end, strides = (tensors[t].data.astype(np.int64).ravel() for t in op.inputs[1:4])
    key = whole_batch(strided_slice_key(begin, end, strides, op.options), inputs[0].shape[0])
    out = np.zeros(inputs[0].shape, grad.dtype)
    out[key] = grad.reshape(out[key].shape)
    return _only_first(inputs, out)


def gather(op, tensors, inputs, output, grad, backend):
    x = inputs[0]
    axis = int(op.options.get("Axis", 0)) % x.ndim
    indices = tensors[op.inputs[1]].data.astype(np.int64).ravel()
    g = grad.reshape(*x.shape[:axis], indices.size, *x.shape[axis + 1 :])
    out = np.zeros(x.shape, grad.dtype)
    np.add.at(np.moveaxis(out, axis, 0), indices, np.moveaxis(g, axis, 0))
    return _only_first(inputs, out)


def pack(op, tensors, inputs, output, grad, backend):
    axis = int(op.options.get("Axis", 0)) % (inputs[0].ndim + 1)
    return [np.take(grad, k, axis=axis) for k in range(len(inputs))]


def batch_matmul(op, tensors, inputs, output, grad, backend):
    a, b = inputs[0], inputs[1]
    adj_a, adj_b = bool(op.options.get("AdjX")), bool(op.options.get("AdjY"))
    a3, b3, lead = batch_matmul_stacks(a, b, adj_a, adj_b)
    m, k, n = a3.shape[1], a3.shape[2], b3.shape[2]
    rank = len(lead) + 2
    a_shape = (1,) * (rank - a.ndim) + (np.swapaxes(a, -1, -2) if adj_a else a).shape
    b_shape = (1,) * (rank - b.ndim) + (np.swapaxes(b, -1, -2) if adj_b else b).shape
    g3 = np.ascontiguousarray(grad.reshape(-1, m, n))
    bt = np.ascontiguousarray(b3.transpose(0, 2, 1))
    at = np.ascontiguousarray(a3.transpose(0, 2, 1))
    da = np.asarray(backend.batched_matmul(g3, bt)).reshape(*lead, m, k)
    db = np.asarray(backend.batched_matmul(at, g3)).reshape(*lead, k, n)
    da = _unbroadcast(da, a_shape).reshape(a_shape[rank - a.ndim :])
    db = _unbroadcast(db, b_shape).reshape(b_shape[rank - b.ndim :])
    return [np.swapaxes(da, -1, -2) if adj_a else da, np.swapaxes(db, -1, -2) if adj_b else db]


def _unary(derivative: Callable[[np.ndarray], np.ndarray]):
    """The VJP of an elementwise operator from its derivative at the input."""

    def vjp(op, tensors, inputs, output, grad, backend):
        x = np.asarray(inputs[0], np.float64)
        return _only_first(inputs, grad * derivative(x))

    return vjp


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _hard_swish(x: np.ndarray) -> np.ndarray:
    return np.where(x < -3, 0.0, np.where(x <= 3, x / 3 + 0.5, 1.0))


def gelu(op, tensors, inputs, output, grad, backend):
    x = np.asarray(inputs[0], np.float64)
    if op.options.get("Approximate"):
        k = np.sqrt(2.0 / np.pi)
        t = np.tanh(k * (x + 0.044715 * x**3))
        d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x)
    else:
        from scipy.special import erf

        d = 0.5 * (1 + erf(x / np.sqrt(2.0))) + x * np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)
    return _only_first(inputs, grad * d)


def leaky_relu(op, tensors, inputs, output, grad, backend):
    alpha = float(np.float32(op.options.get("Alpha", 0.2)))
    return _only_first(inputs, grad * np.where(inputs[0] > 0, 1.0, alpha))


def prelu(op, tensors, inputs, output, grad, backend):
    x, alpha = inputs
    return [grad * np.where(x > 0, 1.0, alpha), None]


def softmax(op, tensors, inputs, output, grad, backend):
    beta = float(np.float32(op.options.get("Beta", 1.0)))
    x = np.asarray(inputs[0], np.float64)
    e = np.exp((x - x.max(axis=-1, keepdims=True)) * beta)
    y = e / e.sum(axis=-1, keepdims=True)
    return _only_first(inputs, beta * y * (grad - (grad * y).sum(axis=-1, keepdims=True)))


def _identity_vjp(op, tensors, inputs, output, grad, backend):
    return _only_first(inputs, grad)


#: Operator name -> vjp(op, tensors, inputs, output, grad, backend) -> list of input gradients.
#: QUANTIZE and DEQUANTIZE pass the gradient on (their rounding is the estimator's business).
FLOAT_VJPS: dict[str, Callable[..., list]] = {
    "ADD": _binary(lambda a, b: (1.0, 1.0)),
    "AVERAGE_POOL_2D": average_pool_2d,
    "BATCH_MATMUL": batch_matmul,
    "CONCATENATION": concatenation,
    "CONV_2D": conv_2d,
    "DEPTHWISE_CONV_2D": depthwise_conv_2d,
    "DEQUANTIZE": _identity_vjp,
    "DIV": _binary(lambda a, b: (1.0 / b, -a / (b * b))),
    "EXP": _unary(np.exp),
    "FULLY_CONNECTED": fully_connected,
    "GATHER": gather,
    "GELU": gelu,
    "HARD_SWISH": _unary(_hard_swish),
    "LEAKY_RELU": leaky_relu,
    "LOG": _unary(lambda x: 1.0 / x),
    "LOGISTIC": _unary(lambda x: _sigmoid(x) * (1 - _sigmoid(x))),
    "MAX_POOL_2D": max_pool_2d,
    "MEAN": mean,
    "MUL": _binary(lambda a, b: (b, a)),
    "PACK": pack,
    "PAD": pad,
    "PADV2": pad,
    "PRELU": prelu,
    "QUANTIZE": _identity_vjp,
    "RELU": _unary(lambda x: (x > 0).astype(np.float64)),
    "RELU6": _unary(lambda x: ((x > 0) & (x < 6)).astype(np.float64)),
    "RELU_0_TO_1": _unary(lambda x: ((x > 0) & (x < 1)).astype(np.float64)),
    "RESHAPE": reshape,
    "RSQRT": _unary(lambda x: -0.5 * x**-1.5),
    "SOFTMAX": softmax,
    "SQUARED_DIFFERENCE": _binary(lambda a, b: (2 * (a - b), -2 * (a - b))),
    "SQUEEZE": reshape,
    "STRIDED_SLICE": strided_slice,
    "SUB": _binary(lambda a, b: (1.0, -1.0)),
    "TANH": _unary(lambda x: 1 - np.tanh(x) ** 2),
    "TRANSPOSE": transpose,
}
