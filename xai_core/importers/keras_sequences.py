"""Keras's sequence layers as native nodes: Conv1D, the 1-D pools, LSTM and GRU.

One function per Keras layer class, as in :mod:`xai_core.importers.keras_layers` (which
lists them in its ``LAYERS`` table). A Keras ``Conv1D`` kernel ``(k, in / groups, out)``
becomes ``(out, in / groups, k)``. Keras's LSTM gates are i, f, c, o in ``kernel`` (features,
4 H) and ``recurrent_kernel`` (H, 4 H) with one bias; they become ONNX's i, o, f, c rows
(:class:`~xai_core.nn.LSTM`). A GRU's gates are z, r, h in both; ``reset_after`` (Keras's
default, two biases) is ``linear_before_reset``. Refused, named: activations other than
``tanh`` / ``sigmoid``, ``return_state``, ``stateful``, and ``Bidirectional`` (not listed).
"""

from __future__ import annotations

import numpy as np

from xai_core import nn
from xai_core.errors import ModelFormatError

__all__ = ["SEQUENCE_LAYERS"]


def _one(v) -> int:
    return int(v[0]) if isinstance(v, (list, tuple)) else int(v)


def _layout(b, kind, name, c) -> str:
    fmt = c.get("data_format") or "channels_last"
    if fmt not in ("channels_last", "channels_first"):
        raise b.fail(kind, name, f"data_format={fmt!r}; channels_last or channels_first.")
    return "NWC" if fmt == "channels_last" else "NCW"


def _channels(b, ins, layout) -> int:
    shape = b.g.shape_of(ins[0])
    if len(shape) != 2:
        raise ModelFormatError(
            f"{b.where}: a 1-D layer needs series samples of rank 2; got {tuple(shape)}."
        )
    return int(shape[-1] if layout == "NWC" else shape[0])


def _weights(b, kind, name, w, *keys):
    """The stored variables ``keys`` (a live model's cell prefixes ``lstm_cell/`` dropped)."""
    flat = {k.rpartition("/")[2]: v for k, v in w.items()}
    out = []
    for key in keys:
        if key not in flat:
            raise ModelFormatError(
                f"{b.where}: {kind} layer {name!r} has no {key!r} weight (it has {sorted(w)})."
            )
        out.append(np.asarray(flat[key]))
    return out


def _expect(b, kind, name, what, arr, shape, why):
    if tuple(arr.shape) != tuple(shape):
        raise ModelFormatError(
            f"{b.where}: {kind} layer {name!r}: the stored {what} has shape {tuple(arr.shape)} "
            f"but {why} need {tuple(shape)}."
        )


def k_conv1d(b, kind, name, c, w, ins):
    layout = _layout(b, kind, name, c)
    (kernel,) = _weights(b, kind, name, w, "kernel")
    filters, groups = int(c["filters"]), int(c.get("groups", 1))
    k, cin = _one(c["kernel_size"]), _channels(b, ins, layout)
    why = f"filters={filters}, kernel_size={k}, groups={groups} and {cin} input channels"
    if cin % groups:
        raise ModelFormatError(f"{b.where}: {kind} layer {name!r}: {why} do not divide evenly.")
    _expect(b, kind, name, "kernel", kernel, (k, cin // groups, filters), why)
    padding = c.get("padding", "valid")
    if padding not in ("valid", "same", "causal"):
        raise b.fail(kind, name, f"padding={padding!r}; 'valid', 'same' and 'causal'.")
    use_bias = bool(c.get("use_bias", True))
    params = {"weight": kernel.transpose(2, 1, 0)}
    if use_bias:
        (bias,) = _weights(b, kind, name, w, "bias")
        _expect(b, kind, name, "bias", bias, (filters,), why)
        params["bias"] = bias
    layer = nn.Conv1D(
        filters,
        k,
        _one(c.get("strides", 1)),
        padding,
        _one(c.get("dilation_rate", 1)),
        groups,
        use_bias,
        layout,
    )
    node = b.add(layer, ins, name, params)
    return b.activation(kind, name, c.get("activation", "linear"), node)


def _pool(max_pool: bool):
    def build(b, kind, name, c, w, ins):
        layout = _layout(b, kind, name, c)
        _channels(b, ins, layout)
        size = _one(c.get("pool_size", 2))
        stride = _one(c.get("strides") or size)
        padding = c.get("padding", "valid")
        if padding not in ("valid", "same"):
            raise b.fail(kind, name, f"padding={padding!r}; 'valid' and 'same' are supported.")
        if max_pool:
            layer = nn.MaxPool1D(size, stride, padding, layout)
        else:
            layer = nn.AvgPool1D(size, stride, padding, False, layout)
        return b.add(layer, ins, name)

    return build


def _global(cls):
    def build(b, kind, name, c, w, ins):
        layout = _layout(b, kind, name, c)
        _channels(b, ins, layout)
        return b.add(cls(bool(c.get("keepdims", False)), layout), ins, name)

    return build


def _act_name(act) -> str | None:
    if isinstance(act, dict):
        inner = act.get("config")
        inner = inner.get("name") if isinstance(inner, dict) else inner
        return inner if isinstance(inner, str) else act.get("class_name")
    return act


def _recurrent(gates: int):
    keras_to_onnx = [0, 3, 1, 2] if gates == 4 else [0, 1, 2]  # LSTM ifco -> iofc; GRU zrh

    def rows(a: np.ndarray, h: int) -> np.ndarray:
        """Columns of a Keras kernel (..., G * H) as ONNX gate rows (G * H, ...)."""
        return np.concatenate([a[..., i * h : (i + 1) * h] for i in keras_to_onnx], -1).T

    def build(b, kind, name, c, w, ins):
        for key, want in (("activation", "tanh"), ("recurrent_activation", "sigmoid")):
            got = _act_name(c.get(key, want))
            if got != want:
                raise b.fail(kind, name, f"{key}={got!r} is not supported; only {want!r}.")
        for key in ("return_state", "stateful"):
            if c.get(key):
                raise b.fail(kind, name, f"{key}=True is not supported.")
        shape = b.g.shape_of(ins[0])
        if len(shape) != 2:
            raise b.fail(kind, name, f"needs (steps, features) samples; got {tuple(shape)}.")
        steps, features = (int(d) for d in shape)
        h = int(c["units"])
        kernel, recurrent = _weights(b, kind, name, w, "kernel", "recurrent_kernel")
        why = f"units={h} and {features} features"
        _expect(b, kind, name, "kernel", kernel, (features, gates * h), why)
        _expect(b, kind, name, "recurrent_kernel", recurrent, (h, gates * h), why)
        reset_after = gates == 3 and bool(c.get("reset_after", True))
        bias = np.zeros(2 * gates * h, dtype=kernel.dtype)
        if c.get("use_bias", True):
            (stored,) = _weights(b, kind, name, w, "bias")
            want = (2, gates * h) if reset_after else (gates * h,)
            _expect(b, kind, name, "bias", stored, want, why)
            stored = stored.reshape(-1, gates * h)
            bias[: gates * h] = rows(stored[0], h)
            if reset_after:
                bias[gates * h :] = rows(stored[1], h)
        params = {
            "weight": rows(kernel, h)[None],
            "recurrent_weight": rows(recurrent, h)[None],
            "bias": bias[None],
            "initial_h": np.zeros((1, h)),
        }
        sequences = bool(c.get("return_sequences", False))
        backwards = bool(c.get("go_backwards", False))
        direction = "reverse" if backwards else "forward"
        output = "sequence" if sequences else "hidden"
        if gates == 4:
            params["initial_c"] = np.zeros((1, h))
            layer = nn.LSTM(h, direction, output)
        else:
            layer = nn.GRU(h, direction, output, linear_before_reset=reset_after)
        node = b.add(layer, ins, f"{name}/recurrence", params)
        if sequences and backwards:  # Keras returns a backward pass's outputs reversed
            node = b.add(nn.Gather(0, np.arange(steps)[::-1].copy()), [node], f"{name}/reversed")
        return b.add(nn.Reshape((steps, h) if sequences else (h,)), [node], name)

    return build


#: Keras sequence layer classes to the function that adds each.
SEQUENCE_LAYERS = {
    "Conv1D": k_conv1d,
    "MaxPooling1D": _pool(True),
    "AveragePooling1D": _pool(False),
    "GlobalAveragePooling1D": _global(nn.GlobalAveragePooling1D),
    "GlobalMaxPooling1D": _global(nn.GlobalMaxPooling1D),
    "LSTM": _recurrent(4),
    "GRU": _recurrent(3),
}
