"""ONNX ``LSTM`` and ``GRU``: :class:`~xai_core.nn.LSTM` and :class:`~xai_core.nn.GRU`.

A native network keeps the batch axis outside every sample, so a series sample is
(steps, features). ONNX's ``layout=1`` (batch first) reads a plain activation; its
default ``layout=0`` (time major, ``X`` of shape (steps, batch, features)) reads a tensor
whose batch axis was moved to position 1, as PyTorch's export writes (a ``Transpose`` of
a batch-first activation: a view, :mod:`xai_core.importers.onnx_batch_views`). A time-major
``X`` whose first axis is the network's batch axis would run the recurrence across
samples, and is refused. ``Y`` and ``Y_h`` / ``Y_c`` come back in the layout asked for,
as views again for ``layout=0``. An LSTM's peepholes ``P`` (not all zero) make an LSTM
layer with ``peepholes=True``. Each output something reads is a node of its own (the
recurrence runs once per output read); an output nothing reads is not built.

Refused, named: activations other than the defaults, ``activation_alpha`` / ``beta``,
``clip``, ``input_forget=1``, ``sequence_lens`` not
equal to the steps for every sample, and initial states computed at run time or varying
over the batch.
"""

from __future__ import annotations

import numpy as np

from xai_core import nn
from xai_core.importers.ir import IRNode
from xai_core.importers.onnx_ops import BATCH, Builder, _given
from xai_core.importers.onnx_registry import register

__all__ = ["batch_fill", "check_fill_readers", "fill_slice", "op_gru", "op_lstm"]

_DEFAULTS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"]}
_STATES = {"LSTM": ("initial_h", "initial_c"), "GRU": ("initial_h",)}


def _fills(b: Builder) -> dict[str, int]:
    return b.__dict__.setdefault("batch_fills", {})


def batch_fill(b: Builder, node: IRNode) -> bool:
    """``ConstantOfShape`` of a shape holding the batch size once (PyTorch's zero initial
    states, ``(directions, batch, H)``): held as a constant whose batch axis has size 1, for
    an ``LSTM`` or ``GRU`` to read; False (nothing done) for any other ``ConstantOfShape``."""
    if node.op != "ConstantOfShape" or node.inputs[0] not in b.shape:
        return False
    shape = list(np.asarray(b.shape[node.inputs[0]]).reshape(-1))
    axes = [i for i, d in enumerate(shape) if d is BATCH]
    if len(axes) != 1 or any(
        not isinstance(d, (int, np.integer)) for i, d in enumerate(shape) if i != axes[0]
    ):
        return False
    value = np.asarray(node.attrs.get("value", np.zeros(1, dtype=np.float32))).reshape(-1)
    shape[axes[0]] = 1
    b.const[node.outputs[0]] = np.full([int(d) for d in shape], value[0], dtype=value.dtype)
    _fills(b)[node.outputs[0]] = axes[0]
    return True


def fill_slice(b: Builder, node: IRNode) -> bool:
    """A ``Slice`` of a batch fill along other axes (a stacked LSTM's per-layer states): a
    batch fill again; False (nothing done) for any other node."""
    fills = _fills(b)
    if node.op != "Slice" or not node.inputs or node.inputs[0] not in fills or b.opset < 10:
        return False
    data = b.const[node.inputs[0]]
    batch_axis = fills[node.inputs[0]]
    starts, ends = (b.ints(node, i) for i in node.inputs[1:3])
    axes = b.ints(node, node.inputs[3]) if _given(node, 3) else list(range(len(starts)))
    steps = b.ints(node, node.inputs[4]) if _given(node, 4) else [1] * len(starts)
    index = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = axis + data.ndim if axis < 0 else axis
        if axis == batch_axis:
            raise b.fail(node, "slices the batch axis of a constant of the batch size's shape.")
        index[axis] = slice(start, end, step)
    b.const[node.outputs[0]] = data[tuple(index)]
    fills[node.outputs[0]] = batch_axis
    return True


def check_fill_readers(b: Builder, node: IRNode) -> None:
    """Refuse a node other than an ``LSTM`` / ``GRU`` initial state reading a batch fill."""
    fills = _fills(b)
    if not fills or node.op in ("LSTM", "GRU") or (node.op == "Slice" and b.opset >= 10):
        return
    for name in node.inputs:
        if name in fills:
            raise b.fail(
                node,
                f"input {name!r} is a constant of the batch size's shape (ConstantOfShape); "
                "only an LSTM's or GRU's initial state may be one here.",
            )


def _refuse_attributes(b: Builder, node: IRNode, directions: int) -> None:
    acts = node.attrs.get("activations")
    if acts is not None:
        names = [a.decode() if isinstance(a, bytes) else str(a) for a in acts]
        want = _DEFAULTS[node.op] * directions
        if [n.lower() for n in names] != [w.lower() for w in want]:
            raise b.fail(
                node,
                f"activations {names} are not supported; only the defaults "
                f"{_DEFAULTS[node.op]} per direction.",
            )
    for key in ("activation_alpha", "activation_beta", "clip"):
        if key in node.attrs:
            raise b.fail(node, f"the {key} attribute is not supported.")
    if node.attrs.get("input_forget", 0):
        raise b.fail(node, "input_forget=1 (coupled input and forget gates) is not supported.")


def _x_layout(b: Builder, node: IRNode, layout: int) -> str:
    """The native node of ``X`` as (steps, features) samples, or a refusal naming why."""
    from xai_core.importers import onnx_batch_views as views

    x = node.inputs[0]
    view = views.view_of(b, x)
    if layout == 1:
        if view is not None:
            raise b.fail(
                node,
                f"layout=1 reads a batch-first X; its batch axis was moved (by {view.origin!r}).",
            )
        return b.node_of(node, x)
    if view is None:
        raise b.fail(
            node,
            "layout=0 (time major) with X's first axis the batch axis: the recurrence would run "
            "across samples. Export the model with batch-first inputs (PyTorch: batch_first=True, "
            "or transpose (batch, steps, features) to (steps, batch, features) inside the model).",
        )
    if len(b.g.shape_of(view.node)) != 2 or view.pos != 1 or view.before or view.after:
        raise b.fail(node, "layout=0 needs X of shape (steps, batch, features).")
    return view.node


def _state(b: Builder, node: IRNode, i: int, layout: int, d: int, h: int) -> np.ndarray | None:
    """A constant initial state as (directions, H), the same for every sample; else refused."""
    if not _given(node, i):
        return None
    name = node.inputs[i]
    if b.is_act(name) or name not in b.const:
        raise b.fail(
            node, f"initial state {name!r} must be a constant; it is computed at run time."
        )
    batch_axis = _fills(b).get(name)
    if batch_axis is not None and batch_axis != (1 if layout == 0 else 0):
        raise b.fail(node, f"initial state {name!r} has the batch size on axis {batch_axis}.")
    v = np.asarray(b.value(node, name), dtype=np.float64)
    if v.ndim != 3:
        raise b.fail(node, f"initial state {name!r} must have rank 3; got shape {v.shape}.")
    v = v if layout == 0 else v.transpose(1, 0, 2)  # (D, N, H)
    if v.ndim != 3 or v.shape[0] != d or v.shape[2] != h:
        raise b.fail(
            node, f"initial state {name!r} must have shape ({d}, batch, {h}); got {v.shape}."
        )
    if not np.all(v == v[:, :1]):
        raise b.fail(node, f"initial state {name!r} varies over the batch; it must not.")
    return v[:, 0]


def _recurrent(b: Builder, node: IRNode) -> None:
    from xai_core.importers import onnx_batch_views as views

    gates = 4 if node.op == "LSTM" else 3
    w = np.asarray(b.numbers(node, node.inputs[1]))
    r = np.asarray(b.numbers(node, node.inputs[2]))
    d, gh, features = w.shape
    h = r.shape[-1]
    direction = node.attrs.get("direction", "forward")
    direction = direction.decode() if isinstance(direction, bytes) else str(direction)
    if direction not in ("forward", "reverse", "bidirectional"):
        raise b.fail(node, f"direction {direction!r} is not forward, reverse or bidirectional.")
    if gh != gates * h or d != (2 if direction == "bidirectional" else 1):
        raise b.fail(
            node, f"W of shape {w.shape} and R of shape {r.shape} disagree with {direction}."
        )
    if int(node.attrs.get("hidden_size", h)) != h:
        raise b.fail(node, f"hidden_size {node.attrs['hidden_size']} but R has {h} columns.")
    _refuse_attributes(b, node, d)
    layout = int(node.attrs.get("layout", 0))
    source = _x_layout(b, node, layout)
    steps = b.g.shape_of(source)[0]
    if _given(node, 4):
        lens = np.asarray(b.numbers(node, node.inputs[4]))
        if not np.all(lens == steps):
            raise b.fail(node, f"sequence_lens {lens.tolist()} other than the {steps} steps.")
    peephole = None
    if node.op == "LSTM" and _given(node, 7):
        peephole = np.asarray(b.numbers(node, node.inputs[7]))
        if peephole.shape != (d, 3 * h):
            raise b.fail(node, f"P of shape {peephole.shape}; expected ({d}, {3 * h}).")
        if not np.any(peephole):
            peephole = None
    bias = (
        np.asarray(b.numbers(node, node.inputs[3]))
        if _given(node, 3)
        else np.zeros((d, 2 * gh), dtype=w.dtype)
    )
    params = {"weight": w, "recurrent_weight": r, "bias": bias}
    if peephole is not None:
        params["peephole"] = peephole
    for key, i in zip(_STATES[node.op], (5, 6)):
        state = _state(b, node, i, layout, d, h)
        params[key] = np.zeros((d, h)) if state is None else state
    kinds = ("sequence", "hidden", "cell")
    read = b.read
    for out, kind in zip(node.outputs, kinds):
        if not out or (read is not None and out not in read):
            continue  # an output nothing reads is not built
        if node.op == "LSTM":
            layer = nn.LSTM(h, direction, kind, peepholes=peephole is not None)
        else:
            lbr = bool(node.attrs.get("linear_before_reset", 0))
            layer = nn.GRU(h, direction, kind, linear_before_reset=lbr)
        made = b.add(node, layer, [source], suffix=f"/{kind}", params=params)
        if layout == 1:
            b.act[out] = made
        else:  # Y: (T, D, N, H); Y_h, Y_c: (D, N, H)
            views.put_view(b, out, made, 2 if kind == "sequence" else 1, node.name)


def op_lstm(b: Builder, node: IRNode) -> None:
    """``LSTM`` (gates i, o, f, c) as :class:`~xai_core.nn.LSTM` nodes, one per output read."""
    _recurrent(b, node)


def op_gru(b: Builder, node: IRNode) -> None:
    """``GRU`` (gates z, r, h; ``linear_before_reset``) as :class:`~xai_core.nn.GRU` nodes."""
    _recurrent(b, node)


_LIMITS = (
    "layout 1, or layout 0 on a tensor whose batch axis was moved to axis 1 (PyTorch's "
    "export); forward, reverse, bidirectional; constant initial states the same for every "
    "sample; default activations only; no clip{extra}, no sequence_lens shorter than the steps"
)
register("LSTM", op_lstm, since=7, limits=_LIMITS.format(extra=", no input_forget") + "; peepholes")
register("GRU", op_gru, since=7, limits=_LIMITS.format(extra="") + "; linear_before_reset")
