"""ONNX ``Resize``: height and width each resized by a constant interpolation matrix.

An image resized along an axis is a product by an ``(n_out, n_in)`` matrix whose row ``o``
holds the weights output pixel ``o`` gives the input pixels, so ``Resize`` imports as two
``MatMul`` nodes and runs, is counted and has gradients on every backend. The matrix is found
as the ONNX specification defines it:

1. the source coordinate ``x`` of each output pixel under ``coordinate_transformation_mode``
   (``tf_crop_and_resize`` reads a region of interest from the ``roi`` input);
2. the kernel's taps at the distances from ``x`` to its nearest input pixels: nearest (by
   ``nearest_mode``), linear or cubic (``cubic_coeff_a``), with ``antialias`` the linear and
   cubic kernels stretched by ``1 / scale`` when shrinking, their taps normalised to sum 1;
3. past the border the edge pixel repeats, or with ``exclude_outside`` the taps outside are
   dropped and the rest renormalised.

An output pixel whose source lies outside the input under ``tf_crop_and_resize`` takes
``extrapolation_value``: its row of the matrix is zero and the value is added after the
products, as a constant image.
"""

from __future__ import annotations

import numpy as np

from xai_core import nn
from xai_core.importers.ir import IRNode
from xai_core.importers.onnx_ops import BATCH, Builder, _check_bytes, _f32
from xai_core.importers.onnx_ops_tensor import _given, _plain, _spatial_chw
from xai_core.importers.onnx_registry import register

__all__: list[str] = []

_COORDINATES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_crop_and_resize",
)
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _source(n_in: int, n_out: int, scale: float, ctm: str, roi) -> tuple[np.ndarray, np.ndarray]:
    """Source coordinate of each of ``n_out`` output pixels, shape (n_out,), and which lie
    outside the input (only ``tf_crop_and_resize`` has such pixels)."""
    o = np.arange(n_out, dtype=np.float64)
    size = n_in * scale  # the resized length unrounded, as ONNX's
    if ctm == "half_pixel":
        x = (o + 0.5) / scale - 0.5
    elif ctm == "pytorch_half_pixel":
        x = (o + 0.5) / scale - 0.5 if n_out > 1 else np.zeros_like(o)
    elif ctm == "half_pixel_symmetric":  # half_pixel, centred when n_out != n_in * scale
        offset = n_in / 2 * (1 - n_out / size)
        x = offset + (o + 0.5) / scale - 0.5
    elif ctm == "align_corners":
        x = o * (n_in - 1) / (size - 1) if n_out > 1 and size > 1 else np.zeros_like(o)
    elif ctm == "asymmetric":
        x = o / scale
    else:  # tf_crop_and_resize: the region roi = (start, end), fractions of n_in - 1
        start, end = roi
        if size == 1:
            x = np.full(n_out, (end - start) * (n_in - 1) / 2)
        else:
            x = o * (end - start) * (n_in - 1) / (size - 1)
        x = x + start * (n_in - 1)
        return x, (x < 0) | (x > n_in - 1)
    return x, np.zeros(n_out, dtype=bool)


def _taps(ratio: np.ndarray, scale: float, attrs: dict, mode: str) -> np.ndarray:
    """Kernel weights, shape (n_out, n), of the ``n`` input pixels nearest each source
    coordinate, left to right; ``ratio`` in (0, 1] is its distance past the pixel on its left."""
    r = ratio[:, None]
    if mode == "nearest":
        right = {
            "round_prefer_floor": r > 0.5,
            "round_prefer_ceil": r >= 0.5,
            "floor": np.zeros_like(r, dtype=bool),
            "ceil": np.ones_like(r, dtype=bool),
        }[attrs.get("nearest_mode", "round_prefer_floor")] | (r == 1)
        return np.hstack([~right, right]).astype(np.float64)
    if not attrs.get("antialias", 0):
        if mode == "linear":
            return np.hstack([1 - r, r])
        return _cubic(np.hstack([1 + r, r, 1 - r, 2 - r]), _f32(attrs.get("cubic_coeff_a", -0.75)))
    # antialias: the kernel stretched by 1 / scale when shrinking, over every pixel it reaches
    stretch = min(scale, 1.0)
    reach = 1 if mode == "linear" else 2
    first = int(np.floor(-reach / stretch)) + 1
    offsets = np.arange(first, 2 - first)
    d = np.abs(offsets[None, :] - r) * stretch
    if mode == "linear":
        k = np.clip(1 - d, 0, 1)
    else:
        k = _cubic(d, _f32(attrs.get("cubic_coeff_a", -0.75)))
    return k / k.sum(axis=1, keepdims=True)


def _cubic(d: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel with coefficient ``a`` at distances ``d`` >= 0."""
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _matrix(
    n_in: int, n_out: int, scale: float, attrs: dict, mode: str, roi
) -> tuple[np.ndarray, np.ndarray]:
    """(n_out, n_in) interpolation matrix of one axis (output = matrix @ input along it), and
    the output pixels outside the input (rows of zeros, shape (n_out,))."""
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    x, outside = _source(n_in, n_out, scale, ctm, roi)
    left = np.floor(x)
    ratio = np.where(x == left, 1.0, x - left)  # a whole x counts as past the pixel before it
    taps = _taps(ratio, scale, attrs, mode)
    n = taps.shape[1]
    # the n pixels nearest x (every kernel has an even number of taps), ties to the left: the
    # window starts n/2 - 1 pixels before the one left of x, or n/2 before a whole x
    start = left + 1 - n // 2 - (x == left)
    pixels = start.astype(np.int64)[:, None] + np.arange(n)
    if attrs.get("exclude_outside", 0):
        taps = np.where((pixels < 0) | (pixels >= n_in), 0.0, taps)
        total = taps.sum(axis=1, keepdims=True)
        taps = taps / np.where(total == 0, 1.0, total)
    taps[outside] = 0.0
    m = np.zeros((n_out, n_in))
    rows = np.broadcast_to(np.arange(n_out)[:, None], pixels.shape)
    np.add.at(m, (rows, np.clip(pixels, 0, n_in - 1)), taps)  # the edge pixel repeats
    return m, outside


def _check_modes(b: Builder, node: IRNode) -> None:
    a = node.attrs
    mode = a.get("mode", "nearest")
    ctm = a.get("coordinate_transformation_mode", "half_pixel")
    if mode not in ("nearest", "linear", "cubic") or ctm not in _COORDINATES:
        raise b.fail(
            node,
            f"mode={mode!r}, coordinate_transformation_mode={ctm!r}; supported: nearest, "
            f"linear or cubic with {', '.join(_COORDINATES)}.",
        )
    if a.get("nearest_mode", "round_prefer_floor") not in _NEAREST_MODES:
        raise b.fail(node, f"unknown nearest_mode {a['nearest_mode']!r}.")
    if mode == "nearest" and a.get("antialias", 0):
        raise b.fail(node, "antialias with mode='nearest' is undefined; use linear or cubic.")


def _axes(b: Builder, node: IRNode) -> list[int]:
    given = node.attrs.get("axes")
    axes = list(range(4)) if given is None else [int(v) % 4 for v in given]
    if any(not -4 <= int(v) < 4 for v in given or ()) or len(set(axes)) != len(axes):
        raise b.fail(node, f"axes {list(given)} of a rank-4 tensor.")
    return axes


def _output_size(
    b: Builder, node: IRNode, c: int, h: int, w: int, axes: list[int]
) -> tuple[int, int, list[float]]:
    """The output's height and width and the scales of height and width, from ``sizes``
    (input 3, with ``keep_aspect_ratio_policy``) or ``scales`` (input 2)."""
    policy = node.attrs.get("keep_aspect_ratio_policy", "stretch")
    if _given(node, 3):
        listed = list(np.asarray(b.value(node, node.inputs[3])).reshape(-1))
        if len(listed) != len(axes):
            raise b.fail(node, f"{len(listed)} sizes for the axes {axes}.")
        raw = [BATCH, c, h, w]
        for d, v in zip(axes, listed, strict=True):
            raw[d] = v
        batch_kept = raw[0] is BATCH or (b.batch is not None and raw[0] == b.batch)
        sizes = [0 if v is BATCH else int(v) for v in raw]
        if not batch_kept or sizes[1] != c or min(sizes[2:]) < 1:
            raise b.fail(
                node,
                f"sizes {raw} must keep the batch size and the {c} channels and resize height "
                "and width only.",
            )
        if policy == "stretch":
            return sizes[2], sizes[3], [sizes[2] / h, sizes[3] / w]
        if policy in ("not_larger", "not_smaller") and set(axes) <= {2, 3}:
            # one scale for the listed axes, the smallest or largest asked; sizes rounded
            # half up from it (as the ONNX reference and onnxruntime)
            ratios = [sizes[d] / (h, w)[d - 2] for d in axes]
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            scales = [scale if d in axes else 1.0 for d in (2, 3)]
            oh, ow = (int(scale * n + 0.5) if d in axes else n for d, n in ((2, h), (3, w)))
            return oh, ow, scales
        raise b.fail(
            node,
            f"keep_aspect_ratio_policy={policy!r} over the axes {axes}; supported: stretch, "
            "or not_larger and not_smaller over height and width.",
        )
    if _given(node, 2):
        listed = [float(v) for v in _plain(b, node, node.inputs[2]).reshape(-1)]
        if len(listed) != len(axes):
            raise b.fail(node, f"{len(listed)} scales for the axes {axes}.")
        full = [1.0] * 4
        for d, v in zip(axes, listed, strict=True):
            full[d] = v
        if full[:2] != [1.0, 1.0] or min(full) <= 0:
            raise b.fail(node, f"scales {full} must be 1 on the batch and channel axes, > 0 else.")
        return int(np.floor(h * full[2])), int(np.floor(w * full[3])), full[2:]
    raise b.fail(node, "neither scales nor sizes is given.")


def _regions(b: Builder, node: IRNode, axes: list[int]) -> list[tuple[float, float] | None]:
    """``tf_crop_and_resize``'s region (start, end) of height and of width; None otherwise."""
    if node.attrs.get("coordinate_transformation_mode") != "tf_crop_and_resize":
        return [None, None]
    roi = _plain(b, node, node.inputs[1]).reshape(-1) if _given(node, 1) else np.zeros(0)
    if roi.size != 2 * len(axes):
        raise b.fail(
            node,
            f"tf_crop_and_resize needs a roi of {2 * len(axes)} values (starts, then ends, of "
            f"the axes {axes}); got {roi.size}.",
        )
    full = [(0.0, 1.0)] * 4
    for i, d in enumerate(axes):
        full[d] = (float(roi[i]), float(roi[len(axes) + i]))
    if full[:2] != [(0.0, 1.0)] * 2:
        raise b.fail(node, f"the roi crops the batch or channel axis: {full[:2]}.")
    return full[2:]


def op_resize(b: Builder, node: IRNode) -> None:
    """Nearest, linear or cubic resizing of NCHW images: two MatMuls by constant matrices."""
    c, h, w = _spatial_chw(b, node)
    _check_modes(b, node)
    axes = _axes(b, node)
    oh, ow, scales = _output_size(b, node, c, h, w, axes)
    if min(oh, ow) < 1:
        raise b.fail(node, f"the output would be {oh} x {ow} pixels.")
    _check_bytes(b, node, [c, oh, ow], np.float32)
    mode = node.attrs.get("mode", "nearest")
    roi_h, roi_w = _regions(b, node, axes)
    rows, out_h = _matrix(h, oh, scales[0], node.attrs, mode, roi_h)
    cols, out_w = _matrix(w, ow, scales[1], node.attrs, mode, roi_w)
    fill = _f32(node.attrs.get("extrapolation_value", 0.0))
    outside = out_h[:, None] | out_w[None, :]
    right = b.value_node(node, cols.T, 4)
    wide = b.add(node, nn.MatMul(), [node.inputs[0], right], suffix="/width")
    left = b.value_node(node, rows, 4)
    if fill == 0 or not outside.any():
        b.add(node, nn.MatMul(), [left, wide])
        return
    # each row of the matrices sums to 1 or (outside) 0, so the pixels outside are the
    # products' zeros plus the fill, whichever axis is resized first
    resized = b.add(node, nn.MatMul(), [left, wide], suffix="/resized")
    b.add(node, nn.Add(), [resized, b.value_node(node, fill * outside[None, None], 4)])


register(
    "Resize",
    op_resize,
    since=11,
    limits="NCHW images, H and W; nearest (any nearest_mode), linear and cubic (cubic_coeff_a, "
    "antialias, exclude_outside) with half_pixel, half_pixel_symmetric, pytorch_half_pixel, "
    "align_corners, asymmetric or tf_crop_and_resize (a constant roi, extrapolation_value); "
    "constant scales or sizes (axes given or not; keep_aspect_ratio_policy over H and W)",
)
