"""Index arithmetic the TFLite kernels share with their signatures: slices, resizes, unfolds.

Each function follows one of TFLite's reference kernels exactly, so the output shape a
signature checks and the values a kernel computes come from one place:
:func:`strided_slice_key` (``strided_slice_logic.h``), :func:`resize_coordinates`
(``ComputeInterpolationValues`` in ``reference/resize_bilinear.h``, float and integer) and
:func:`transpose_conv_padding` (``ComputePaddingHeightWidth`` of ``padding.h``, as
``transpose_conv.cc`` calls it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "batch_matmul_stacks",
    "depth_to_space",
    "resize_coordinates",
    "strided_slice_key",
    "transpose_conv_padding",
    "whole_batch",
]


def strided_slice_key(
    begin: np.ndarray, end: np.ndarray, strides: np.ndarray, options: dict[str, Any]
) -> tuple:
    """The numpy index of a TFLite ``STRIDED_SLICE``: its masks and ``Offset`` applied.

    Parameters
    ----------
    begin, end, strides : ndarray of int64, shape (k,)
        One entry per index of the slice specification.
    options : dict
        ``BeginMask``, ``EndMask``, ``EllipsisMask``, ``NewAxisMask``, ``ShrinkAxisMask``
        (bit ``i`` for entry ``i``) and ``Offset`` (``end`` counts from ``begin``).

    Returns
    -------
    tuple
        Of slices, integers (shrunk axes), ``None`` (new axes) and ``Ellipsis``: TensorFlow
        defines its strided slice as this numpy index.
    """
    masks = {
        k: int(options.get(k, 0))
        for k in ("BeginMask", "EndMask", "EllipsisMask", "NewAxisMask", "ShrinkAxisMask")
    }
    offset = bool(options.get("Offset", False))
    key: list[Any] = []
    for i in range(len(begin)):
        bit = 1 << i
        if masks["EllipsisMask"] & bit:
            key.append(Ellipsis)
        elif masks["NewAxisMask"] & bit:
            key.append(None)
        elif masks["ShrinkAxisMask"] & bit:
            key.append(int(begin[i]))
        else:
            b = None if masks["BeginMask"] & bit else int(begin[i])
            e = int(end[i]) + (int(begin[i]) if offset else 0)
            e = None if masks["EndMask"] & bit else e
            key.append(slice(b, e, int(strides[i])))
    return tuple(key)


def whole_batch(key: tuple, batch: int) -> tuple:
    """``key`` with a first slice that takes the file's whole batch made to take any batch.

    Converters write the batch of one they traced with (``begin 0, end 1``); the kernels run
    many samples at once, so that slice must keep them all. Anything else is kept as it is
    (and refused by the signature when it changes the batch axis).
    """
    if not key or not isinstance(key[0], slice):
        return key
    first = key[0]
    if first.start in (None, 0) and first.step == 1 and (first.stop is None or first.stop >= batch):
        return (slice(None), *key[1:])
    return key


def resize_coordinates(
    out_size: int, in_size: int, align_corners: bool, half_pixel: bool, integer: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Source coordinates of each output row (or column) of ``RESIZE_BILINEAR``.

    Returns
    -------
    scaled, lower, upper : ndarray, shape (out_size,)
        The source coordinate (float32; for ``integer``, int64 in units of 1/1024) and the
        two neighbours it interpolates between, clamped to ``0..in_size-1``.
    """
    pos = np.arange(out_size, dtype=np.int64)
    if integer:
        if align_corners and out_size > 1:
            scale = ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
        else:
            scale = ((1 << 10) * in_size + out_size // 2) // out_size
        scaled = pos * scale + (scale // 2 - (1 << 9) if half_pixel else 0)
        lower = np.maximum(_trunc_div(scaled, 1 << 10), 0)
        upper = np.minimum(_trunc_div(scaled + (1 << 10) - 1, 1 << 10), in_size - 1)
        return scaled, lower, upper
    if align_corners and out_size > 1:
        scale = np.float32(in_size - 1) / np.float32(out_size - 1)
    else:
        scale = np.float32(in_size) / np.float32(out_size)
    value = pos.astype(np.float32)
    if half_pixel:
        scaled = (value + np.float32(0.5)) * scale - np.float32(0.5)
    else:
        scaled = value * scale
    scaled = scaled.astype(np.float32)
    lower = np.maximum(np.floor(scaled).astype(np.int64), 0)
    upper = np.minimum(np.ceil(scaled).astype(np.int64), in_size - 1)
    return scaled, lower, upper


def _trunc_div(a: np.ndarray, b: int) -> np.ndarray:
    """C's integer division (towards zero)."""
    q = np.abs(a) // b
    return np.where(a < 0, -q, q)


def transpose_conv_padding(
    out_size: int, in_size: int, k: int, stride: int, same: bool
) -> tuple[int, int]:
    """``(before, conv_out)`` of ``TRANSPOSE_CONV`` along one axis.

    TFLite pads the convolution whose gradient the operator is: a convolution of
    ``out_size`` with a ``k`` window and ``stride``. ``conv_out`` is that convolution's output
    length, which must equal the operator's input length ``in_size``; ``before`` is the
    padding ahead of the first element.
    """
    conv_out = (out_size + stride - 1) // stride if same else (out_size - k + stride) // stride
    total = max((conv_out - 1) * stride + k - out_size, 0)
    del in_size
    return total // 2, conv_out


def depth_to_space(x: np.ndarray, block: int) -> np.ndarray:
    """NHWC ``DEPTH_TO_SPACE``: channel ``(i * block + j) * c + ch`` to pixel ``(i, j)``."""
    n, h, w, cc = x.shape
    c = cc // (block * block)
    y = x.reshape(n, h, w, block, block, c).transpose(0, 1, 3, 2, 4, 5)
    return np.ascontiguousarray(y.reshape(n, h * block, w * block, c))


def batch_matmul_stacks(
    a: np.ndarray, b: np.ndarray, adj_x: bool, adj_y: bool
) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """TFLite ``BATCH_MATMUL``'s operands as contiguous stacks of matrices.

    ``AdjX`` / ``AdjY`` transpose an operand's last two axes first; the leading axes
    broadcast numpy-style. Returns ``a3`` of shape (G, M, K), ``b3`` (G, K, N) and the
    broadcast leading shape (G its product), so the product reshapes to
    ``(*lead, M, N)``. The stacks are contiguous: numpy's matmul leaves BLAS for a slow
    loop on a stride-0 axis.
    """
    if adj_x:
        a = np.swapaxes(a, -1, -2)
    if adj_y:
        b = np.swapaxes(b, -1, -2)
    rank = max(a.ndim, b.ndim)
    a = a.reshape((1,) * (rank - a.ndim) + a.shape)
    b = b.reshape((1,) * (rank - b.ndim) + b.shape)
    lead = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    a3 = np.ascontiguousarray(np.broadcast_to(a, (*lead, m, k))).reshape(-1, m, k)
    b3 = np.ascontiguousarray(np.broadcast_to(b, (*lead, k, n))).reshape(-1, k, n)
    return a3, b3, lead
