"""Pooling the native layers do not cover, by gathering each window's elements.

``MaxPool``, ``AveragePool`` and ``LpPool`` import as the native 1-D and 2-D pooling layers.
What those do not cover (a kernel of three axes, dilations, pads of more than half the
kernel, an ``LpPool`` with a 1-D kernel or ``ceil_mode``) runs here, for a kernel of any rank:
the positions every window reads are found once, at import, and the network holds one
``Gather`` of them from the flattened image, shape ``(C, taps, windows)`` (taps first: numpy
reduces across whole rows of windows faster than along rows of a few taps), then a maximum
over the taps, or a sum weighted by a constant (``1 / count`` for an average; ``1`` for the
sum of ``|x| ** p`` that ``LpPool`` takes the root of). Its gradient is the ``Gather``'s and
the reduction's.

The windows follow the ONNX specification: window ``o`` along an axis reads the positions
``o * stride - pad_begin + t * dilation`` for ``t`` in ``range(kernel)``; ``ceil_mode`` adds
the last partial window when it starts inside the image or its leading padding. Padding
counts in an average only with ``count_include_pad`` (positions past the trailing pad, which
only a ceil-mode window reaches, never count), and never in a maximum: a padded tap of a
maximum reads another tap of the same window.
"""

from __future__ import annotations

import numpy as np

from xai_core import nn
from xai_core.importers.ir import IRNode
from xai_core.importers.onnx_ops import Builder, _check_bytes

__all__: list[str] = []


def needs_windows(node: IRNode, native_ranks: tuple[int, ...] = (1, 2)) -> bool:
    """Whether the pooling ``node`` needs gathering: a kernel rank not in ``native_ranks``,
    a dilation, or an explicit pad of more than half the kernel."""
    a = node.attrs
    kernel = [int(k) for k in a["kernel_shape"]]
    pads = list(a.get("pads", []))
    return (
        len(kernel) not in native_ranks
        or any(int(d) != 1 for d in a.get("dilations", []))
        or any(2 * int(p) > kernel[i % len(kernel)] for i, p in enumerate(pads))
    )


def _pads(b: Builder, node: IRNode, kernel, strides, dilations, size) -> tuple[list, list]:
    """Padding before and after each spatial axis, from ``pads`` or ``auto_pad``."""
    r = len(kernel)
    auto = node.attrs.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        pads = [int(p) for p in node.attrs.get("pads", [0] * 2 * r)]
        if len(pads) != 2 * r:
            raise b.fail(node, f"a kernel of {r} axes needs {2 * r} pads; got {pads}.")
        return pads[:r], pads[r:]
    if auto == "VALID":
        return [0] * r, [0] * r
    if node.attrs.get("ceil_mode", 0):
        raise b.fail(node, f"ceil_mode=1 with auto_pad={auto!r} is undefined; use pads.")
    begin, end = [], []
    for k, s, d, n in zip(kernel, strides, dilations, size, strict=True):
        total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
        small = total // 2
        begin.append(small if auto == "SAME_UPPER" else total - small)
        end.append(total - begin[-1])
    return begin, end


def _axis_windows(n: int, k: int, s: int, d: int, pb: int, pe: int, ceil: bool):
    """Along one axis of size ``n``: the positions each window reads, shape (windows, k);
    which are inside the input; which count as padding (before the trailing pad's end)."""
    reach = (n + pb + pe - d * (k - 1) - 1) / s + 1
    count = int(np.ceil(reach)) if ceil else int(np.floor(reach))
    if ceil and (count - 1) * s >= n + pb:  # the last window must start inside the input
        count -= 1
    pos = np.arange(max(count, 0))[:, None] * s - pb + np.arange(k)[None, :] * d
    return pos, (pos >= 0) & (pos < n), pos < n + pe


def pool_by_windows(b: Builder, node: IRNode, kind: str, source: str, suffix: str = "") -> str:
    """The maximum, average or sum (``kind`` "max", "avg", "sum") over each window of the
    pooling ``node``, of ``source`` (an ONNX name or a node made here) of channels-first
    samples of any spatial rank; the name of the node made (``node``'s output without a
    ``suffix``)."""
    a = node.attrs
    if a.get("storage_order", 0):
        raise b.fail(node, "storage_order=1 is not supported.")
    shape = b.g.shape_of(b._node_name(node, source))
    kernel = [int(k) for k in a["kernel_shape"]]
    r = len(kernel)
    if len(shape) != r + 1:
        raise b.fail(
            node,
            f"a kernel of {r} axes pools samples of {r + 1} axes (channels first); got a "
            f"per-sample shape {tuple(shape)}.",
        )
    channels, size = int(shape[0]), [int(n) for n in shape[1:]]
    strides = [int(s) for s in a.get("strides", [1] * r)]
    dilations = [int(d) for d in a.get("dilations", [1] * r)]
    if min(kernel + strides + dilations) < 1:
        raise b.fail(node, "kernel_shape, strides and dilations must be positive.")
    begin, end = _pads(b, node, kernel, strides, dilations, size)
    axes = [
        _axis_windows(n, k, s, d, pb, pe, bool(a.get("ceil_mode", 0)))
        for n, k, s, d, pb, pe in zip(size, kernel, strides, dilations, begin, end, strict=True)
    ]
    out = [len(pos) for pos, _, _ in axes]
    if min(out) < 1:
        raise b.fail(node, f"the output would have the spatial shape {out}.")
    _check_bytes(b, node, [channels, int(np.prod(out)), int(np.prod(kernel))], np.float32)
    # every (window, tap) over all axes: an open grid, raveled to (windows, taps)
    grid = np.ix_(*[np.arange(o) for o in out], *[np.arange(k) for k in kernel])
    flat = np.zeros([*out, *kernel], dtype=np.int64)
    inside = np.ones([*out, *kernel], dtype=bool)
    counted = np.ones([*out, *kernel], dtype=bool)
    step = int(np.prod(size))
    for i, (pos, ins, cnt) in enumerate(axes):
        at = (grid[i], grid[r + i])
        step //= size[i]
        flat = flat + np.clip(pos, 0, size[i] - 1)[at] * step
        inside &= ins[at]
        counted &= cnt[at]
    flat, inside, counted = (v.reshape(int(np.prod(out)), -1) for v in (flat, inside, counted))
    if not inside.any(axis=1).all():
        raise b.fail(node, f"pads {begin + end} leave a window that holds padding only.")
    if kind == "max":  # a padded tap reads the window's first tap inside the input
        first = flat[np.arange(len(flat)), inside.argmax(axis=1)]
        flat = np.where(inside, flat, first[:, None])
    src = b.add(node, nn.Reshape((channels, -1)), source, suffix="/flat")
    taps = b.add(node, nn.Gather(1, flat.T), src, suffix="/windows")
    if kind == "max":
        pooled = b.add(node, nn.Reduce("max", (1,), keepdims=False), taps, suffix="/pooled")
    else:
        if kind == "sum":
            weights = inside.astype(np.float64)
        else:
            divisor = counted if a.get("count_include_pad", 0) else inside
            weights = inside / divisor.sum(axis=1, keepdims=True)
        weighted = b.add(
            node, nn.Multiply(), [taps, b.value_node(node, weights.T[None, None], 4)], suffix="/w"
        )
        pooled = b.add(node, nn.Reduce("sum", (1,), keepdims=False), weighted, suffix="/pooled")
    return b.add(node, nn.Reshape((channels, *out)), pooled, suffix=suffix)
