"""Folding inference batch norms into the convolution or dense layer before them."""

from __future__ import annotations

from collections import Counter
from copy import deepcopy
from typing import Any

import numpy as np

from xai_core.nn.conv import Conv2D
from xai_core.nn.dense import Dense
from xai_core.nn.normalization import BatchNormalization

__all__ = ["fold_batch_norm", "fuse_gelu"]


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


def fold_batch_norm(net: Any, *, copy: bool = True) -> Any:
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
    copy : bool, default=True
        ``False`` folds ``net`` itself, copying nothing (for a network nobody else holds
        yet, as an importer's): its producers' parameters are replaced, never written into.

    Returns
    -------
    Sequential or Graph
        A network computing the same function (to rounding) with fewer operations: a new
        one, or ``net`` when ``copy=False``.
    """
    from xai_core.backends.cpu import CPUBackend
    from xai_core.nn.shape import Identity

    net._require_built()
    out = deepcopy(net) if copy else net
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
        b = prod.params["bias"].astype(np.float64) if prod.use_bias else np.zeros(len(scale))
        per_output = scale[None, :] if isinstance(prod, Dense) else scale[:, None, None, None]
        w = prod.params["weight"]
        # computed in float64 and rounded once into the new weights, in a single pass
        folded = np.empty(w.shape, dtype=out.dtype)
        np.multiply(w, per_output, out=folded, dtype=np.float64, casting="same_kind")
        prod.use_bias = True
        prod.params = {"weight": folded, "bias": (b * scale + shift).astype(out.dtype)}
        ident = Identity(name=bn.name, folded_into=prod.name)
        ident.build(bn.input_shape, None, out.dtype)
        out.nodes[i] = node._replace(layer=ident)
    out._invalidate()
    return out


def _constant_of(net: Any, index: dict[str, int], name: str) -> float | None:
    """The single value of the Constant node ``name``, or None."""
    from xai_core.nn.layers import Constant

    k = index.get(name)
    if k is None or not isinstance(net.nodes[k].layer, Constant):
        return None
    value = np.asarray(net.nodes[k].layer.value, np.float64)
    return float(value.ravel()[0]) if value.size and np.all(value == value.ravel()[0]) else None


def _other(node: Any, name: str) -> str | None:
    """The input of the two-input ``node`` that is not ``name`` (None if it does not read it)."""
    if len(node.inputs) != 2 or name not in node.inputs:
        return None
    a, b = node.inputs
    return b if a == name else a


def _gelu_chain(net: Any, i: int, index: dict[str, int], readers: dict[str, list[int]]):
    """The nodes of ``x * (1 + erf(x / sqrt 2)) * 0.5`` around the Erf node ``i`` (PyTorch's
    exported GELU): ``(x, [div, erf, add, mul, half])``, or None."""
    from xai_core.nn.layers import Add, Divide, Multiply

    def only_reader(name: str, kind: type):
        found = readers.get(name, [])
        if len(found) != 1 or not isinstance(net.nodes[found[0]].layer, kind):
            return None
        return found[0]

    erf = net.nodes[i]
    k = index.get(erf.inputs[0])
    if k is None or len(net.nodes[k].inputs) != 2:
        return None
    div = net.nodes[k]
    x, root = div.inputs
    scale = _constant_of(net, index, root)
    if isinstance(div.layer, Divide):
        scale = None if scale is None else 1.0 / scale
    elif not isinstance(div.layer, Multiply):
        return None
    if (
        scale is None
        or not np.isclose(scale, np.sqrt(0.5), rtol=1e-6)
        or len(readers[div.name]) != 1
    ):
        return None
    add = only_reader(erf.name, Add)
    if add is None or _constant_of(net, index, _other(net.nodes[add], erf.name) or "") != 1.0:
        return None
    mul = only_reader(net.nodes[add].name, Multiply)
    if mul is None or _other(net.nodes[mul], net.nodes[add].name) != x:
        return None
    half = only_reader(net.nodes[mul].name, Multiply)
    other = None if half is None else _other(net.nodes[half], net.nodes[mul].name)
    if other is None or _constant_of(net, index, other) != 0.5:
        return None
    return x, [k, i, add, mul, half]


def fuse_gelu(net: Any, *, copy: bool = True) -> Any:
    """A network whose exported GELUs (``x * (1 + erf(x / sqrt 2)) * 0.5``) are Gelu layers.

    PyTorch exports ``nn.GELU`` as Div, Erf, Add, Mul, Mul; TFLite's converter fuses that
    pattern into one GELU operator, and so does this: the last Mul becomes a
    :class:`~xai_core.nn.Gelu` of ``x`` (same name), the four nodes before it Identities
    (same names, ``folded_into`` the Gelu) that nothing reads.

    Parameters
    ----------
    net : Graph
    copy : bool, default=True
        ``False`` rewrites ``net`` itself.

    Returns
    -------
    Graph
        The same function, with one Gelu node per pattern found.
    """
    from xai_core.nn.layers import Erf, Gelu
    from xai_core.nn.shape import Identity

    net._require_built()
    out = deepcopy(net) if copy else net
    index = {node.name: k for k, node in enumerate(out.nodes)}
    readers: dict[str, list[int]] = {}
    for k, node in enumerate(out.nodes):
        for name in set(node.inputs):
            readers.setdefault(name, []).append(k)
    changed = False
    for i, node in enumerate(out.nodes):
        if not isinstance(node.layer, Erf):
            continue
        chain = _gelu_chain(out, i, index, readers)
        if chain is None:
            continue
        x, (*inner, last) = chain
        last_node = out.nodes[last]
        gelu = Gelu(name=last_node.name)
        gelu.build(last_node.layer.output_shape, None, out.dtype)
        out.nodes[last] = last_node._replace(layer=gelu, inputs=(x,))
        source = x
        for k in inner:
            ident = Identity(name=out.nodes[k].name, folded_into=last_node.name)
            ident.build(out.nodes[k].layer.output_shape, None, out.dtype)
            out.nodes[k] = out.nodes[k]._replace(layer=ident, inputs=(source,))
            source = out.nodes[k].name
        changed = True
    if changed:
        out._invalidate()
    return out
