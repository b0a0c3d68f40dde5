"""ONNX ``Attention`` (opset 23): scaled dot-product attention composed of native layers.

``softmax(Q K^T * scale + bias) V`` per head, each product a :class:`~xai_core.nn.MatMul`
of activations (a GEMM on every backend, counted like any other), the softmax the native
:class:`~xai_core.nn.Softmax`:

- ``Q``, ``K``, ``V`` computed at run time, 4-D ``(batch, heads, seq, head_size)`` or 3-D
  ``(batch, seq, heads * head_size)`` with ``q_num_heads`` and ``kv_num_heads``; grouped
  query attention (fewer key/value heads) repeats each key/value head, as ONNX does, by a
  :class:`~xai_core.nn.Gather` of the heads.
- ``scale`` (default ``1 / sqrt(head_size)``), ``softcap`` (``c * tanh(x / c)`` before the
  bias).
- ``attn_mask``: a constant (booleans, True attending, or floats added; shorter than the
  keys, padded masked), or one computed at run time of shape (batch, heads or 1, seq,
  keys): floats added, booleans (a comparison's or a cast's) as 0 or -1e30. A query that
  the computed mask, with the constant bias, leaves attending no key does not get ONNX's
  zeros: the -1e30 keys, or NaN for a computed -inf everywhere, take its weight.
- The constant bias is the sum of what masks the scores: a constant ``attn_mask``,
  ``is_causal`` (a query attends the keys up to its own position) and the sliding window
  (``left_window_size``, ``right_window_size``). A masked score gets a large finite
  negative bias (its softmax weight is exactly 0 in float32 and float64); a query that
  attends no key gets zeros, as ONNX specifies, through a constant factor.
- A cache (``past_key``, ``past_value``, computed, 4-D) leads the keys and values
  (``present_key`` and ``present_value`` are the concatenations, in 4-D), and the causal
  mask and the window count the queries after it.

The fourth output, ``qk_matmul_output``, is the scores as ``qk_matmul_output_mode`` says:
scaled (and softcapped, as onnx's reference gives them), with the bias (refused where it
is -inf), or the softmax weights.

Refused, naming them: a computed mask of another shape, an external cache
(``nonpad_kv_seqlen``), ``qk_matmul_output_mode=2`` where a constant or boolean mask masks
a score (it would be -inf), inputs of different ranks, window sizes below -1, and a
``softmax_precision`` other than float32 or float64 (the softmax runs in the network's
dtype).
"""

from __future__ import annotations

import numpy as np

from xai_core import nn
from xai_core.importers.ir import IRNode
from xai_core.importers.onnx_ops import Builder, _given
from xai_core.importers.onnx_ops_tensor import MASKED_SCORE
from xai_core.importers.onnx_registry import register

__all__ = ["op_attention"]


def _heads(b: Builder, node: IRNode, name: str, heads: int | None) -> tuple[str, tuple]:
    """The activation ``name`` as per-sample ``(heads, seq, head_size)``: a 3-D tensor's
    hidden axis split into ``heads`` and moved first; a 4-D one as it is."""
    src = b.node_of(node, name)
    shape = b.g.shape_of(src)
    if len(shape) == 3:
        return src, shape
    if len(shape) != 2:
        raise b.fail(node, f"input {name!r} of rank {len(shape) + 1}; 3-D or 4-D are expected.")
    if heads is None:
        raise b.fail(node, "3-D inputs need q_num_heads and kv_num_heads.")
    seq, hidden = shape
    if hidden % heads:
        raise b.fail(node, f"input {name!r}: a hidden size of {hidden} is not {heads} heads.")
    split = b.add(node, nn.Reshape((seq, heads, hidden // heads)), src, suffix=f"/{name}_split")
    moved = b.add(node, nn.Transpose((1, 0, 2)), split, suffix=f"/{name}_heads")
    return moved, (heads, seq, hidden // heads)


def _by(b: Builder, node: IRNode, layer: nn.Layer, src: str, value: float, suffix: str) -> str:
    """``layer`` (an ``Add`` or ``Multiply``) of the per-sample (heads, seq, seq) tensor
    ``src`` and the number ``value``."""
    return b.add(
        node, layer, [src, b.value_node(node, np.full((1, 1, 1), value), 4)], suffix=suffix
    )


def _bias(b: Builder, node: IRNode, hq: int, sq: int, skv: int, past: int) -> np.ndarray:
    """The constant added to the scores, (heads or 1, sq, skv) or (sq, skv), -inf masked;
    query ``i`` is at position ``past + i`` (after a cache of ``past`` steps)."""
    bias = np.zeros((sq, skv))
    if _given(node, 3) and not b.is_act(node.inputs[3]):
        mask = np.asarray(b.value(node, node.inputs[3]))
        if mask.ndim == 4:
            if mask.shape[0] != 1 and (mask.shape[0] != b.batch or np.any(mask != mask[:1])):
                raise b.fail(node, f"attn_mask of shape {mask.shape} varies over the batch.")
            mask = mask[0]
        if (
            mask.ndim < 1
            or mask.shape[-1] > skv
            or (mask.ndim > 1 and mask.shape[-2] not in (1, sq))
        ):
            raise b.fail(node, f"attn_mask of shape {mask.shape} for {sq} queries and {skv} keys.")
        if mask.ndim == 3 and mask.shape[0] not in (1, hq):
            raise b.fail(node, f"attn_mask of shape {mask.shape} for {hq} heads.")
        if mask.shape[-1] < skv:  # padded masked, as ONNX pads it
            pad = [(0, 0)] * (mask.ndim - 1) + [(0, skv - mask.shape[-1])]
            mask = np.pad(mask, pad, constant_values=False if mask.dtype == bool else -np.inf)
        mask = np.where(mask, 0.0, -np.inf) if mask.dtype == bool else mask.astype(np.float64)
        bias = bias + mask
    q, k = past + np.arange(sq)[:, None], np.arange(skv)[None, :]
    if node.attrs.get("is_causal", 0):
        bias = bias + np.where(k <= q, 0.0, -np.inf)
    left = int(node.attrs.get("left_window_size", -1))
    right = int(node.attrs.get("right_window_size", -1))
    if min(left, right) < -1:
        raise b.fail(node, f"window sizes {left}, {right}: -1 (unbounded) or at least 0.")
    if left >= 0:
        bias = bias + np.where(q - k <= left, 0.0, -np.inf)
    if right >= 0:
        bias = bias + np.where(k - q <= right, 0.0, -np.inf)
    return bias


def op_attention(b: Builder, node: IRNode) -> None:
    """``Attention`` as native layers (see the module notes for what is supported)."""
    import onnx

    if _given(node, 6):
        raise b.fail(node, "nonpad_kv_seqlen (an external key/value cache) is not supported.")
    if _given(node, 4) != _given(node, 5):
        raise b.fail(node, "past_key and past_value come together.")
    qk_out = node.outputs[3] if len(node.outputs) > 3 else ""
    mode = int(node.attrs.get("qk_matmul_output_mode", 0) or 0)
    if qk_out and mode not in (0, 1, 2, 3):
        raise b.fail(node, f"qk_matmul_output_mode {mode}; 0, 1, 2 or 3 are defined.")
    precision = int(node.attrs.get("softmax_precision", 0) or 0)
    if precision not in (0, onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE):
        raise b.fail(node, "a softmax_precision other than the network's float.")
    q_heads = node.attrs.get("q_num_heads")
    kv_heads = node.attrs.get("kv_num_heads")
    ranks = [len(b.g.shape_of(b.node_of(node, i))) + 1 for i in node.inputs[:3]]
    if len(set(ranks)) != 1:
        raise b.fail(node, f"Q, K and V of ranks {ranks}; they must be all 3-D or all 4-D.")
    three_d = ranks[0] == 3
    q, (hq, sq, dq) = _heads(b, node, node.inputs[0], q_heads)
    k, (hk, skv, dk) = _heads(b, node, node.inputs[1], kv_heads)
    v, (hv, sv, dv) = _heads(b, node, node.inputs[2], kv_heads)
    past = 0
    if _given(node, 4):  # the cache's steps before the new ones: present = [past, new]
        pk, (phk, past, pdk) = _heads(b, node, node.inputs[4], None)
        pv, (phv, pastv, pdv) = _heads(b, node, node.inputs[5], None)
        if (phk, pdk, phv, pastv, pdv) != (hk, dk, hv, past, dv):
            raise b.fail(node, "past_key and past_value must have K's and V's heads and sizes.")
        k = b.add(node, nn.Concatenate(axis=1), [pk, k], suffix="/present_key")
        v = b.add(node, nn.Concatenate(axis=1), [pv, v], suffix="/present_value")
        skv, sv = skv + past, sv + past
    if dq != dk or hk != hv or sv != skv:
        raise b.fail(
            node,
            f"Q heads of size {dq}, K of {dk} with {hk} heads, V of {hv} heads over {sv} "
            f"steps against K's {skv}: Q and K's head sizes, and K and V's heads and steps, "
            "must agree.",
        )
    for out, src in zip(node.outputs[1:3], (k, v)):  # present_key, present_value
        if out:
            b.act[out] = src
    if hq != hk:
        if hq % hk:
            raise b.fail(node, f"{hq} query heads do not share {hk} key/value heads evenly.")
        index = np.repeat(np.arange(hk), hq // hk)
        k = b.add(node, nn.Gather(0, index), k, suffix="/k_groups")
        v = b.add(node, nn.Gather(0, index), v, suffix="/v_groups")
    scale = node.attrs.get("scale")
    scale = 1 / np.sqrt(dq) if scale is None else float(scale)
    kt = b.add(node, nn.Transpose((0, 2, 1)), k, suffix="/k_t")
    scores = b.add(node, nn.MatMul(), [q, kt], suffix="/scores")
    scores = _by(b, node, nn.Multiply(), scores, scale, "/scaled")
    softcap = float(node.attrs.get("softcap", 0.0) or 0.0)
    if softcap > 0:
        scores = _by(b, node, nn.Multiply(), scores, 1 / softcap, "/softcap_in")
        scores = b.add(node, nn.Tanh(), scores, suffix="/softcap_tanh")
        scores = _by(b, node, nn.Multiply(), scores, softcap, "/softcapped")
    if qk_out and mode in (0, 1):  # the scaled (and softcapped) products, as onnx's reference
        b.act[qk_out] = scores
    if _given(node, 3) and b.is_act(node.inputs[3]):  # a mask computed at run time
        mask = b.node_of(node, node.inputs[3])
        shape = b.g.shape_of(mask)
        if len(shape) != 3 or shape[1:] != (sq, skv) or shape[0] not in (1, hq):
            raise b.fail(
                node,
                f"attn_mask computed at run time of shape (batch, *{shape}): only (batch, "
                f"heads or 1, {sq}, {skv}) is read per sample (a 2-D or 3-D mask has no "
                "batch axis; give it as a constant).",
            )
        kind = b.types.get(node.inputs[3])
        if kind is None:
            raise b.fail(node, "attn_mask computed at run time of a type the file does not state.")
        if kind == onnx.TensorProto.BOOL:  # held as 1 and 0: True attends, False masks
            shifted = _by(b, node, nn.Add(), mask, -1.0, "/mask_shifted")
            mask = _by(b, node, nn.Multiply(), shifted, -MASKED_SCORE, "/mask_bias")
        scores = b.add(node, nn.Add(), [scores, mask], suffix="/mask_added")
    bias = _bias(b, node, hq, sq, skv, past)
    bias = bias.reshape((1,) * (3 - bias.ndim) + bias.shape)
    none = np.isneginf(bias).all(axis=-1, keepdims=True)  # queries attending no key
    computed_bool = (
        _given(node, 3)
        and b.is_act(node.inputs[3])
        and b.types.get(node.inputs[3]) == onnx.TensorProto.BOOL
    )
    if qk_out and mode == 2 and (np.isinf(bias).any() or computed_bool):
        raise b.fail(node, "qk_matmul_output_mode 2 of a masked score is -inf; not computed.")
    if np.any(bias):
        finite = np.where(np.isneginf(bias), MASKED_SCORE, bias)
        finite = np.where(none, 0.0, finite)
        scores = b.add(
            node, nn.Add(), [scores, b.value_node(node, finite[None], 4)], suffix="/masked"
        )
    if qk_out and mode == 2:
        b.act[qk_out] = scores
    probs = b.add(node, nn.Softmax(), scores, suffix="/weights")
    if none.any():
        keep = b.value_node(node, (~none).astype(np.float64)[None], 4)
        probs = b.add(node, nn.Multiply(), [probs, keep], suffix="/attending")
    if qk_out and mode == 3:
        b.act[qk_out] = probs
    if three_d:
        y = b.add(node, nn.MatMul(), [probs, v], suffix="/heads_out")
        y = b.add(node, nn.Transpose((1, 0, 2)), y, suffix="/heads_last")
        b.add(node, nn.Reshape((sq, hq * dv)), y)
    else:
        b.add(node, nn.MatMul(), [probs, v])


register(
    "Attention",
    op_attention,
    since=23,
    limits="Q, K, V computed (3-D or 4-D, grouped heads); scale, softcap; a constant mask "
    "(bool or float) or a computed 4-D one, is_causal, sliding windows; a past key/value "
    "cache; qk_matmul_output; no nonpad_kv_seqlen",
)
