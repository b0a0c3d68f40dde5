"""Gradients of an int8 graph by the straight-through estimator, as quantisation-aware training takes them.

The forward pass is the int8 graph itself (:meth:`~xai_core.int8.model.TFLiteModel.run`,
the integers LiteRT computes). The backward pass goes through the fake-quantised float
graph at the same points: every tensor dequantised with its scale and zero point, each
operator's float kernel (:mod:`.kernels_float`) run on its dequantised inputs and constants
to give the value before the output's quantise step, and that kernel's vector-Jacobian
product (:mod:`.kernels_float_vjp`). Each quantise step passes the gradient where its
integer before clamping, ``rint(y / scale) + zero_point``, lies in the type's range and
stops it elsewhere: ``torch.fake_quantize_per_tensor_affine``'s backward. The input's
quantisation is one such step.

The walk is the executor's (:func:`xai_core.nn.executor.run_backward`): operators in
reverse, the gradients of a tensor read by several operators summed on the backend.
An inference-only device (the Edge TPU) runs the forward pass; the float backward runs on
its host (``backend.host``, counted as ``host_*``), else on a new CPU backend.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core.int8.graph import TensorInfo, TFLiteGraph

__all__ = [
    "backward_backend",
    "float_tensors",
    "missing_backward",
    "straight_through_gradient",
    "straight_through_mask",
]

_INTEGER = (np.dtype(np.int8), np.dtype(np.uint8))


def missing_backward(graph: TFLiteGraph) -> list[str]:
    """The operators of ``graph`` with no backward rule here (``"RESIZE_BILINEAR (operator 4)"``)."""
    from xai_core.int8.kernels_float_vjp import FLOAT_VJPS

    return [
        f"{op.kind} (operator {op.index})" for op in graph.operators if op.kind not in FLOAT_VJPS
    ]


def backward_backend(backend: Any) -> Any:
    """Where the float backward runs: ``backend`` if it computes gradients, else its host."""
    if getattr(backend, "supports_gradients", True):
        return backend
    host = getattr(backend, "host", None)
    if host is not None:
        return host
    from xai_core.backends.cpu import CPUBackend

    return CPUBackend()


def _dequantized(t: TensorInfo) -> np.ndarray:
    scale = np.asarray(t.scale, np.float64)
    zp = np.asarray(t.zero_point if t.zero_point is not None else 0, np.float64)
    if scale.size > 1:  # per channel along quantized_dimension
        shape = [1] * t.data.ndim
        shape[t.quantized_dimension] = scale.size
        scale, zp = scale.reshape(shape), (zp.reshape(shape) if zp.size > 1 else zp)
    return scale * (t.data.astype(np.float64) - zp)


def float_tensors(graph: TFLiteGraph) -> tuple[TensorInfo, ...]:
    """The graph's tensors with every quantised constant (weights, biases) dequantised to float64.

    Constants without quantisation (shapes, axes, indices) are kept as they are.
    """
    from dataclasses import replace

    out = []
    for t in graph.tensors:
        if t.data is not None and t.scale is not None and t.data.dtype.kind in "iu":
            t = replace(t, data=_dequantized(t), dtype=np.dtype(np.float64))
        out.append(t)
    return tuple(out)


def _real(value: np.ndarray, t: TensorInfo) -> np.ndarray:
    if value.dtype in _INTEGER and t.scale is not None:
        zp = int(t.zero_point[0]) if t.zero_point is not None else 0
        return np.float64(t.scale[0]) * (value.astype(np.float64) - zp)
    return value


def straight_through_mask(y: np.ndarray, t: TensorInfo) -> np.ndarray:
    """Where the quantise step to ``t`` passes gradients: ``rint(y / scale) + zero_point`` in range.

    Parameters
    ----------
    y : ndarray of float
        Real values before the step.
    t : TensorInfo
        The quantised tensor (int8 or uint8, one scale).

    Returns
    -------
    ndarray of bool, the shape of ``y``
    """
    info = np.iinfo(t.dtype)
    zp = int(t.zero_point[0]) if t.zero_point is not None else 0
    q = np.rint(np.asarray(y, np.float64) / np.float64(t.scale[0])) + zp
    return (q >= info.min) & (q <= info.max)


def _quantized(t: TensorInfo) -> bool:
    return t.dtype in _INTEGER and t.scale is not None


def straight_through_gradient(
    model: Any, X: np.ndarray, target: np.ndarray, backend: Any
) -> np.ndarray:
    """d output[target] / d X of an int8 model: its int8 forward, the fake-quantised float backward.

    Parameters
    ----------
    model : TFLiteModel
        A full-integer model whose operators all have a backward rule
        (:func:`missing_backward` is empty).
    X : ndarray of shape (n_samples, *input_shape)
        Real inputs, validated.
    target : ndarray of int of shape (n_samples,)
        Output index per row (of the model's selected output, flattened).
    backend : Backend
        Runs the int8 forward pass; the backward runs on :func:`backward_backend`.

    Returns
    -------
    ndarray of shape (n_samples, *input_shape), in the backward backend's dtype
    """
    from xai_core.int8.kernels_float import FLOAT_KERNELS
    from xai_core.int8.kernels_float_vjp import FLOAT_VJPS

    graph = model.graph
    tensors = graph.tensors
    twin = model.float_tensors()
    values = model.run(model.quantize_input(X), backend)
    host = backward_backend(backend)
    out_index = model.output_tensor.index
    n = len(X)
    seed = np.zeros((n, model.n_outputs), np.float64)
    seed[np.arange(n), np.asarray(target, np.int64)] = 1.0
    grads: dict[int, np.ndarray] = {out_index: seed.reshape(values[out_index].shape)}
    for op in reversed(graph.operators):
        g = grads.pop(op.outputs[0], None)
        if g is None:
            continue
        present = [i for i in op.inputs if i >= 0]
        args = [_real(values[i], tensors[i]) if i in values else twin[i].data for i in present]
        if op.kind in ("QUANTIZE", "DEQUANTIZE"):
            y = args[0]
        else:
            y = FLOAT_KERNELS[op.kind](op, twin, args, host)
        out_t = tensors[op.outputs[0]]
        if _quantized(out_t):
            g = np.where(straight_through_mask(y, out_t), g, 0)
        parts = FLOAT_VJPS[op.kind](op, twin, args, y, g, host)
        for i, part in zip(present, parts):
            if part is None or i not in values:  # a constant
                continue
            grads[i] = host.elementwise(np.add, grads[i], part) if i in grads else part
    input_t = tensors[graph.inputs[0]]
    gX = grads.get(input_t.index)
    if gX is None:
        gX = np.zeros(X.shape, np.float64)
    gX = np.asarray(gX).reshape(X.shape)
    if _quantized(input_t):  # the input's own quantisation
        gX = np.where(straight_through_mask(X, input_t), gX, 0)
    return np.ascontiguousarray(gX, dtype=getattr(host, "dtype", np.float64))
