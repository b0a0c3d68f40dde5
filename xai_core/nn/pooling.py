"""Pools and padding over images: MaxPool2D, AvgPool2D, GlobalAveragePooling2D, ZeroPadding2D.

Window maxima and means are ``backend.reduce`` calls over the window axes; scaling a
gradient is a ``backend.elementwise``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from xai_core.backends.base import Backend
from xai_core.errors import ValidationError
from xai_core.kernels.im2col import accumulate, as_pads, as_pair, conv_output_size, windows
from xai_core.kernels.pool import max_pool2d, max_pool2d_vjp
from xai_core.nn import _util
from xai_core.nn.conv import check_padding, resolve_padding
from xai_core.nn.layer import Layer
from xai_core.nn.rules import LRP_RULES, RelevanceThrough, as_rule, unpool_assign

__all__ = ["MaxPool2D", "AvgPool2D", "GlobalAveragePooling2D", "ZeroPadding2D"]


class _Pool2D(Layer):
    """Shared geometry of the pooling layers."""

    def __init__(
        self,
        pool_size: int | tuple[int, int] = 2,
        stride: int | tuple[int, int] | None = None,
        padding: Any = 0,
        layout: str = "NCHW",
        name: str | None = None,
        *,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__(name)
        self.ceil_mode = bool(ceil_mode)
        self.extra = (0, 0)  # rows and columns ceil_mode adds at the end (bottom, right)
        self.pool_size = as_pair(pool_size, "pool_size")
        if stride is None and self.pool_size[0] != self.pool_size[1]:
            raise ValidationError(
                f"a non-square pool_size {self.pool_size} needs an explicit stride."
            )
        self.strides = self.pool_size if stride is None else as_pair(stride, "stride")
        self.padding = check_padding(padding)
        if self.padding != "same":
            pads = as_pads(self.padding)
            ph, pw = self.pool_size
            if max(pads[:2]) * 2 > ph or max(pads[2:]) * 2 > pw:
                raise ValidationError(
                    f"padding must be at most half the pool size {self.pool_size}; got {padding}."
                )
        self.layout = _util.check_layout(layout)
        self.pads: tuple[int, int, int, int] | None = None

    stride = _util.stride

    def compute_output_shape(self, input_shape):
        c, h, w = _util.image(input_shape, self)
        ph, pw = self.pool_size
        self.pads = resolve_padding(self.padding, (h, w), self.pool_size, self.strides)
        if self.ceil_mode:
            self.pads, self.extra = _ceil_pads(self.pads, (h, w), self.pool_size, self.strides)
        oh = conv_output_size(h, ph, self.strides[0], self.pads[:2])
        ow = conv_output_size(w, pw, self.strides[1], self.pads[2:])
        return _util.shape_from_chw(c, oh, ow, self.layout)

    def get_config(self):
        config = {
            "pool_size": list(self.pool_size),
            "stride": list(self.strides),
            "padding": self.padding,
            "layout": self.layout,
        }
        return {**config, "ceil_mode": True} if self.ceil_mode else config


def _ceil_pads(pads, size, pool, strides) -> tuple[tuple[int, int, int, int], tuple[int, int]]:
    """``pads`` grown at the end so the output size rounds up (ONNX / PyTorch ``ceil_mode``).

    The last window must start inside the input or its leading padding; the cells added
    past the trailing padding are never counted by an average.
    """
    out, extra = list(pads), []
    for axis, (n, k, s) in enumerate(zip(size, pool, strides)):
        lead, trail = pads[2 * axis], pads[2 * axis + 1]
        span = n + lead + trail
        count = -(-(span - k) // s) + 1
        if (count - 1) * s >= n + lead:
            count -= 1
        extra.append(max((count - 1) * s + k - span, 0))
        out[2 * axis + 1] = trail + extra[-1]
    return (out[0], out[1], out[2], out[3]), (extra[0], extra[1])


def _window_max(win: np.ndarray, axis: tuple[int, int] = (4, 5)) -> np.ndarray:
    """Maximum over the last two axes of windows (n, c, oh, ow, kh, kw): one pass per offset."""
    out = win[..., 0, 0].copy()
    for i in range(win.shape[4]):
        for j in range(win.shape[5]):
            np.maximum(out, win[..., i, j], out=out)
    return out


def _window_sum(win: np.ndarray, axis: tuple[int, int] = (4, 5)) -> np.ndarray:
    """Sum over the last two axes of windows (n, c, oh, ow, kh, kw): one pass per offset."""
    out = win[..., 0, 0].copy()
    for i in range(win.shape[4]):
        for j in range(win.shape[5]):
            if i or j:
                out += win[..., i, j]
    return out


class MaxPool2D(RelevanceThrough, _Pool2D):
    """Maximum over each (pool_size) window of each channel.

    Parameters
    ----------
    pool_size : int or (int, int), default=2
    stride : int or (int, int), optional
        Defaults to the pool size (non-overlapping windows).
    padding : int, (rows, cols), (top, bottom, left, right), "valid" or "same", default=0
        Rows and columns of ``-inf``; at most half the pool size.
    layout : {"NCHW", "NHWC"}, default="NCHW"
    name : str, optional
    ceil_mode : bool, default=False
        Round the output size up (ONNX / PyTorch ``ceil_mode``): the last window may run
        past the trailing padding, over cells that are never counted.

    Notes
    -----
    The forward maximum is counted as a ``backend.reduce`` over the windows; on backends
    whose ``reduce`` is the default it is computed by the compiled channels-last loop of
    :mod:`xai_core.kernels.pool`, else by that ``reduce`` over axes (4, 5) of the windows
    (n, c, out_h, out_w, kh, kw). The gradient goes to the first maximal element of each
    window (row-major within the window).
    """

    kind: ClassVar[str] = "maxpool2d"
    backward_rules: ClassVar[tuple[str, ...]] = ("rescale", *LRP_RULES)

    def apply(self, x, backend, record):
        _util.rows(x, self.input_shape, self)
        if record is not None:
            record["x"] = x
        x = _util.to_nchw(x, self.layout)
        ph, pw = self.pool_size
        if type(backend).reduce is Backend.reduce:  # the backend's own reduction, counted alike
            x = np.asarray(x, dtype=backend.dtype)
            out_hw = _util.image(self.output_shape, self)[1:]
            y, tap = max_pool2d(x, self.pool_size, self.strides, self.pads, out_hw)
            backend.count_elementwise(y.size * ph * pw, y.size, y.size * ph * pw)
            if record is not None:
                record["arg"], record["x_shape"] = tap.transpose(0, 3, 1, 2), x.shape
            return _util.from_nchw(y, self.layout)
        win = windows(x, ph, pw, self.strides, self.pads, fill=-np.inf)
        y = backend.reduce(_window_max, win, axis=(4, 5))
        if record is not None:
            arg = np.zeros(y.shape, dtype=np.intp)
            for k in range(ph * pw - 1, -1, -1):  # last to first, so the first maximum wins
                arg[win[..., k // pw, k % pw] == y] = k
            record["arg"], record["x_shape"] = arg, x.shape
        return _util.from_nchw(y, self.layout)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        record = self._need(record, self)
        if not input_grad:
            return None, {}
        arg = record["arg"]
        grad = _util.to_nchw(grad, self.layout)
        if arg.dtype != np.intp:  # recorded by the channels-last kernel
            gx = max_pool2d_vjp(
                grad, arg.transpose(0, 2, 3, 1), record["x_shape"], self.pool_size,
                self.strides, self.pads,
            )  # fmt: skip
            return _util.from_nchw(gx, self.layout), {}
        ph, pw = self.pool_size
        zero = np.zeros((), dtype=grad.dtype)
        gx = accumulate(
            lambda i, j: np.where(arg == i * pw + j, grad, zero),
            record["x_shape"],
            ph,
            pw,
            self.strides,
            self.pads,
            grad.dtype,
        )
        return _util.from_nchw(gx, self.layout), {}

    def vjp_rule(self, grad, backend, record, rule):
        """The backward pass under ``rule`` (:mod:`xai_core.nn.rules`), of shape
        (n_samples, *input_shape).

        ``"rescale"`` is Captum's DeepLift ``maxpool`` rule: for rows ``x`` and baselines
        ``r`` (the two halves of the recorded batch), ``m = max(pool(x), pool(r))``; the
        products of ``grad`` with ``m - pool(r)`` go to the maxima of ``x``'s windows and
        those with ``pool(x) - m`` to the maxima of ``r``'s (written as
        ``max_unpool2d`` writes them, the later window winning), their sum over the two
        halves divided by ``x - r`` (the gradient where ``|x - r| < epsilon``). The LRP
        rules: :class:`~xai_core.nn.rules.RelevanceThrough`.
        """
        rule = as_rule(rule)
        if rule.name != "rescale":
            return super().vjp_rule(grad, backend, record, rule)
        record = self._need(record, self)
        normal, _ = self.vjp(grad, backend, record, param_grads=False)
        normal = _util.to_nchw(normal, self.layout)
        x = _util.to_nchw(record["x"], self.layout)
        y = _util.to_nchw(self.apply(record["x"], backend, None), self.layout)
        if len(x) % 2:
            raise ValidationError(
                f"the rescale rule at {self.name!r} needs rows followed by as many baselines; "
                f"got a batch of {len(x)} rows."
            )
        m = len(x) // 2
        g = _util.to_nchw(grad, self.layout)
        top = np.maximum(y[:m], y[m:])
        v = g * np.concatenate([top - y[m:], y[:m] - top])
        arg = record["arg"]
        pw = self.pool_size[1]
        oh, ow = arg.shape[2:]
        rows = np.arange(oh).reshape(oh, 1) * self.strides[0] - self.pads[0] + arg // pw
        cols = np.arange(ow).reshape(1, ow) * self.strides[1] - self.pads[2] + arg % pw
        u = unpool_assign(v, rows * x.shape[3] + cols, x.shape)
        u = u[:m] + u[m:]
        dx = x[:m] - x[m:]
        dx, u = np.concatenate([dx, dx]), np.concatenate([u, u])
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = u / dx
        out = np.where(np.abs(dx) < rule.epsilon, normal, ratio).astype(normal.dtype)
        return _util.from_nchw(out, self.layout)


def _divide(x, d):
    return x / d


class AvgPool2D(RelevanceThrough, _Pool2D):
    """Mean over each (pool_size) window of each channel.

    Parameters
    ----------
    pool_size : int or (int, int), default=2
    stride : int or (int, int), optional
        Defaults to the pool size.
    padding : int, (rows, cols), (top, bottom, left, right), "valid" or "same", default=0
        Zero rows and columns; at most half the pool size.
    count_include_pad : bool, default=True
        Divide by the window size, padding included (PyTorch's default); ``False`` divides
        by the input pixels in the window (ONNX's default and Keras's "same").
    layout : {"NCHW", "NHWC"}, default="NCHW"
    name : str, optional
    ceil_mode : bool, default=False
        Round the output size up (ONNX / PyTorch ``ceil_mode``): the last window may run
        past the trailing padding, over cells that are never counted.
    """

    kind: ClassVar[str] = "avgpool2d"
    backward_rules: ClassVar[tuple[str, ...]] = LRP_RULES

    def __init__(
        self,
        pool_size: int | tuple[int, int] = 2,
        stride: int | tuple[int, int] | None = None,
        padding: Any = 0,
        count_include_pad: bool = True,
        layout: str = "NCHW",
        name: str | None = None,
        *,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__(pool_size, stride, padding, layout, name, ceil_mode=ceil_mode)
        self.count_include_pad = bool(count_include_pad)

    def _divisor(self, dtype) -> np.ndarray:
        ph, pw = self.pool_size
        _, h, w = _util.image(self.input_shape, self)
        if self.count_include_pad and any(self.extra):  # padding counts, ceil_mode's cells not
            t, b, left, r = self.pads
            eh, ew = self.extra
            ones = np.ones((1, 1, h + t + b - eh, w + left + r - ew), dtype=dtype)
            return _window_sum(windows(ones, ph, pw, self.strides, (0, eh, 0, ew)))[0, 0]
        if self.count_include_pad or not any(self.pads):
            return np.asarray(ph * pw, dtype=dtype)
        ones = np.ones((1, 1, h, w), dtype=dtype)
        return _window_sum(windows(ones, ph, pw, self.strides, self.pads))[0, 0]

    def apply(self, x, backend, record):
        _util.rows(x, self.input_shape, self)
        x = _util.to_nchw(x, self.layout)
        ph, pw = self.pool_size
        win = windows(x, ph, pw, self.strides, self.pads)
        d = self._divisor(x.dtype)
        if record is not None:
            record["x_shape"], record["d"] = x.shape, d
            record["x"] = _util.from_nchw(x, self.layout)
        y = backend.elementwise(_divide, backend.reduce(_window_sum, win, axis=(4, 5)), d)
        return _util.from_nchw(y, self.layout)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        record = self._need(record, self)
        if not input_grad:
            return None, {}
        ph, pw = self.pool_size
        share = backend.elementwise(_divide, _util.to_nchw(grad, self.layout), record["d"])
        gx = accumulate(
            lambda i, j: share, record["x_shape"], ph, pw, self.strides, self.pads, share.dtype
        )
        return _util.from_nchw(gx, self.layout), {}

    def get_config(self):
        return {**super().get_config(), "count_include_pad": self.count_include_pad}


def _spread(g, size):
    return g / size


class GlobalAveragePooling2D(RelevanceThrough, Layer):
    """Mean of each channel over height and width.

    Parameters
    ----------
    keepdims : bool, default=False
        Keep the spatial axes as size 1 (ONNX ``GlobalAveragePool``) or drop them (Keras).
    layout : {"NCHW", "NHWC"}, default="NCHW"
    name : str, optional
    """

    kind: ClassVar[str] = "global_avgpool2d"
    backward_rules: ClassVar[tuple[str, ...]] = LRP_RULES

    def __init__(self, keepdims: bool = False, layout: str = "NCHW", name: str | None = None):
        super().__init__(name)
        self.keepdims = bool(keepdims)
        self.layout = _util.check_layout(layout)

    def _axes(self) -> tuple[int, int]:
        return (1, 2) if self.layout == "NHWC" else (2, 3)

    def compute_output_shape(self, input_shape):
        c, _, _ = _util.image(input_shape, self)
        return _util.shape_from_chw(c, 1, 1, self.layout) if self.keepdims else (c,)

    def apply(self, x, backend, record):
        _util.rows(x, self.input_shape, self)
        if record is not None:
            record["x"] = x
        y = backend.reduce(np.mean, x, axis=self._axes())
        return y.reshape(x.shape[0], *self.output_shape)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        if not input_grad:
            return None, {}
        _, h, w = _util.image(self.input_shape, self)
        c = self.output_shape[0] if self.layout == "NCHW" else self.output_shape[-1]
        shape = (grad.shape[0], c, 1, 1) if self.layout == "NCHW" else (grad.shape[0], 1, 1, c)
        share = backend.elementwise(_spread, grad.reshape(shape), np.asarray(h * w))
        return np.broadcast_to(share, (grad.shape[0], *self.input_shape)).copy(), {}

    def get_config(self):
        return {"keepdims": self.keepdims, "layout": self.layout}


class ZeroPadding2D(Layer):
    """Zero rows and columns around each image (ONNX ``Pad`` in constant mode with 0).

    Parameters
    ----------
    padding : int, (rows, cols) or (top, bottom, left, right), default=1
    layout : {"NCHW", "NHWC"}, default="NCHW"
    name : str, optional
    """

    kind: ClassVar[str] = "zero_padding2d"

    def __init__(self, padding: Any = 1, layout: str = "NCHW", name: str | None = None):
        super().__init__(name)
        self.pads = as_pads(padding)
        self.layout = _util.check_layout(layout)

    def compute_output_shape(self, input_shape):
        c, h, w = _util.image(input_shape, self)
        t, b, left, r = self.pads
        return _util.shape_from_chw(c, h + t + b, w + left + r, self.layout)

    def apply(self, x, backend, record):
        _util.rows(x, self.input_shape, self)
        t, b, left, r = self.pads
        spec = (
            ((0, 0), (t, b), (left, r), (0, 0))
            if self.layout == "NHWC"
            else ((0, 0), (0, 0), (t, b), (left, r))
        )
        return np.pad(x, spec)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        if not input_grad:
            return None, {}
        t, _, left, _ = self.pads
        _, h, w = _util.image(self.input_shape, self)
        if self.layout == "NHWC":
            return np.ascontiguousarray(grad[:, t : t + h, left : left + w, :]), {}
        return np.ascontiguousarray(grad[:, :, t : t + h, left : left + w]), {}

    def get_config(self):
        return {"padding": list(self.pads), "layout": self.layout}
