"""Folding inference batch norms into the convolution or dense layer before them."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import numpy as np

from xai_core.nn.conv import Conv2D
from xai_core.nn.dense import Dense
from xai_core.nn.normalization import BatchNormalization

__all__ = ["fold_batch_norm"]


def _foldable(net: Any, i: int, index: dict[str, int], readers: Counter) -> int | None:
    """Index of the producer batch norm ``i`` folds into, or None.

    ``index`` maps node names to positions and ``readers`` counts the nodes reading each
    name, both computed once for the network (so folding stays linear in its size).
    """
    node = net.nodes[i]
    bn = node.layer
    if not isinstance(bn, BatchNormalization) or node.inputs[0] not in index:  # reads an input
        return None
    j = index[node.inputs[0]]
    prod = net.nodes[j].layer
    if readers[node.inputs[0]] != 1 or prod.name in net.outputs:
        return None
    if isinstance(prod, Dense):
        ok = len(prod.output_shape) == 1
    elif isinstance(prod, Conv2D):
        ok = bn.channel_axis == (2 if prod.layout == "NHWC" else 0)
    else:
        ok = False
    return j if ok else None


def fold_batch_norm(net: Any) -> Any:
    """A copy of ``net`` with each batch norm merged into the Conv2D / Dense layer feeding it.

    A batch norm folds when its input is the output of a ``Conv2D``, ``DepthwiseConv2D``
    or ``Dense`` node read by nothing else, and it normalises that layer's output
    channels. The producer's weights become ``weight * scale`` per output channel and its
    bias ``(bias - mean) * scale + beta`` (a bias is added if it had none); the batch norm
    becomes an :class:`~xai_core.nn.Identity` of the same name whose ``folded_into`` names
    the producer, so every node name, and ``activations`` of it, still works, and
    :attr:`~xai_core.nn.Graph.folded_batch_norms`, the summary and a saved file record the
    fold. The producer's own output is then the normalised one.

    Parameters
    ----------
    net : Sequential or Graph

    Returns
    -------
    Sequential or Graph
        A new network computing the same function (to rounding) with fewer operations.
    """
    from xai_core.backends.cpu import CPUBackend
    from xai_core.nn.shape import Identity

    net._require_built()
    out = copy.deepcopy(net)
    cpu = CPUBackend(dtype=np.float64)
    index = {node.name: k for k, node in enumerate(out.nodes)}
    readers = Counter(name for node in out.nodes for name in set(node.inputs))
    for i in range(len(out.nodes)):
        j = _foldable(out, i, index, readers)
        if j is None:
            continue
        node, prod = out.nodes[i], out.nodes[j].layer
        bn = node.layer
        scale, shift = (v.astype(np.float64) for v in bn.scale_shift(cpu))
        w = prod.params["weight"].astype(np.float64)
        b = prod.params["bias"].astype(np.float64) if prod.use_bias else np.zeros(len(scale))
        if isinstance(prod, Dense):
            w = w * scale[None, :]
        else:
            w = w * scale[:, None, None, None]
        prod.use_bias = True
        prod.params = {
            "weight": w.astype(out.dtype),
            "bias": (b * scale + shift).astype(out.dtype),
        }
        ident = Identity(name=bn.name, folded_into=prod.name)
        ident.build(bn.input_shape, None, out.dtype)
        out.nodes[i] = node._replace(layer=ident)
    out._invalidate()
    return out
