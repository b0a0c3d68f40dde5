"""Layers with parameters or geometry: Dense, Conv2D, MaxPool2D, AvgPool2D, Flatten, Reshape.

Every matrix product goes through ``backend.matmul`` (a convolution is lowered by
:func:`~xai_core.nn.im2col` to *one* product per batch), every elementwise operation
through ``backend.elementwise`` and every reduction through ``backend.reduce``.
Images are NCHW: one sample has shape (channels, height, width).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from xai_core.errors import ShapeError, ValidationError
from xai_core.nn.im2col import accumulate, col2im, conv_output_size, im2col, windows
from xai_core.nn.layer import Layer

__all__ = ["Dense", "Conv2D", "MaxPool2D", "AvgPool2D", "Flatten", "Reshape"]


def _positive_int(value: Any, name: str, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValidationError(f"{name} must be an integer >= {low}; got {value!r}.")
    return int(value)


def _pair(value: Any, name: str) -> tuple[int, int]:
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return _positive_int(value[0], name), _positive_int(value[1], name)
    v = _positive_int(value, name)
    return v, v


def _glorot(
    rng: np.random.Generator, shape: tuple[int, ...], fan_in: int, fan_out: int, dtype: Any
):
    bound = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-bound, bound, size=shape).astype(dtype)


def _add_bias(y: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``y + b`` over the last axis, in place when ``y`` is a fresh writable product."""
    return np.add(y, b, out=y) if y.flags.writeable and y.flags.owndata else y + b


def _add_channel_bias(y: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``y + b`` for y of shape (n, channels, pixels), in place when ``y`` is writable."""
    b = b[:, None]
    return np.add(y, b, out=y) if y.flags.writeable and y.flags.owndata else y + b


def _rows(x: np.ndarray, shape: tuple[int, ...], layer: Layer) -> None:
    if x.shape[1:] != shape:
        raise ShapeError(
            f"layer {layer.name or type(layer).__name__!r} expects input of shape "
            f"(n_samples, {', '.join(map(str, shape))}); got an array of shape {x.shape}."
        )


class Dense(Layer):
    """Fully connected layer: ``y = x @ weight + bias``.

    Parameters
    ----------
    units : int
        Output width.
    name : str, optional

    Attributes
    ----------
    weight : ndarray of shape (n_in, units)
        ``y[i, j] = sum_k x[i, k] * weight[k, j] + bias[j]`` (scikit-learn's ``coefs_`` layout).
    bias : ndarray of shape (units,)

    Notes
    -----
    Input per sample is flat, of shape (n_in,); put :class:`Flatten` before a Dense layer
    that follows a convolution. Weights are initialised Glorot-uniform, biases zero.
    Forward: one ``backend.matmul`` of (n, n_in) @ (n_in, units). Backward: (n_in, n) @ (n,
    units) for the weight gradient, (n, units) @ (units, n_in) for the input gradient.
    """

    kind: ClassVar[str] = "dense"
    regularized: ClassVar[tuple[str, ...]] = ("weight",)

    def __init__(self, units: int, name: str | None = None) -> None:
        super().__init__(name)
        self.units = _positive_int(units, "units")
        self._x: np.ndarray | None = None

    weight = property(
        lambda self: self.params["weight"], lambda self, v: self._set_param("weight", v)
    )
    bias = property(lambda self: self.params["bias"], lambda self, v: self._set_param("bias", v))

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 1:
            raise ShapeError(
                f"Dense layer {self.name!r} needs flat input of shape (n_features,) per sample; "
                f"got {input_shape}. Put Flatten() before it."
            )
        return (self.units,)

    def build(self, input_shape, rng, dtype):
        out = super().build(input_shape, rng, dtype)
        n_in = self.input_shape[0]
        self.params = {
            "weight": _glorot(rng, (n_in, self.units), n_in, self.units, dtype),
            "bias": np.zeros(self.units, dtype=dtype),
        }
        return out

    def forward(self, x, backend, *, cache=True):
        y = backend.elementwise(_add_bias, backend.matmul(x, self.weight), self.bias)
        self._x = x if cache else None
        return y

    def backward(self, grad, backend, *, param_grads=True, input_grad=True):
        if param_grads:
            x = self._need_cache("_x")
            self.grads = {
                "weight": backend.matmul(x.T, grad),
                "bias": backend.reduce(np.sum, grad, axis=0),
            }
        return backend.matmul(grad, self.weight.T) if input_grad else None

    def clear_cache(self):
        self._x = None

    def get_config(self):
        return {"units": self.units}

    def macs_per_sample(self):
        return self.input_shape[0] * self.units if self.input_shape else 0

    def _describe(self):
        n_in = self.input_shape[0] if self.input_shape else "?"
        return f"Dense({n_in} -> {self.units})"


class Conv2D(Layer):
    """2-D convolution (cross-correlation) over NCHW images, lowered to one matmul.

    Parameters
    ----------
    filters : int
        Output channels.
    kernel_size : int or (int, int), default=3
    stride : int, default=1
    padding : int or {"valid", "same"}, default=0
        Zero rows and columns on each side. ``"same"`` keeps height and width (odd square
        kernels, stride 1); ``"valid"`` is 0.
    name : str, optional

    Attributes
    ----------
    weight : ndarray of shape (filters, in_channels, kh, kw)
    bias : ndarray of shape (filters,)
    stride, padding : int
        As resolved (``padding`` is always an int here).
    kernel_size : tuple of (int, int)

    Notes
    -----
    ``y = im2col(x, kh, kw, stride, padding) @ weight.reshape(filters, -1).T + bias``,
    reshaped to (n, filters, out_h, out_w): one ``backend.matmul`` of
    (n * out_h * out_w, in_channels * kh * kw) @ (in_channels * kh * kw, filters).
    Output size per axis: ``(size + 2 * padding - kernel) // stride + 1``.
    """

    kind: ClassVar[str] = "conv2d"
    regularized: ClassVar[tuple[str, ...]] = ("weight",)

    def __init__(
        self,
        filters: int,
        kernel_size: int | tuple[int, int] = 3,
        stride: int = 1,
        padding: int | str = 0,
        name: str | None = None,
    ) -> None:
        super().__init__(name)
        self.filters = _positive_int(filters, "filters")
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.stride = _positive_int(stride, "stride")
        kh, kw = self.kernel_size
        if padding == "valid":
            padding = 0
        elif padding == "same":
            if kh != kw or kh % 2 == 0 or self.stride != 1:
                raise ValidationError(
                    "padding='same' needs an odd square kernel and stride 1; "
                    f"got kernel_size={self.kernel_size}, stride={self.stride}. Give padding as an int."
                )
            padding = (kh - 1) // 2
        self.padding = _positive_int(padding, "padding", low=0)
        self._cols: np.ndarray | None = None
        self._x_shape: tuple[int, ...] | None = None

    weight = property(
        lambda self: self.params["weight"], lambda self, v: self._set_param("weight", v)
    )
    bias = property(lambda self: self.params["bias"], lambda self, v: self._set_param("bias", v))

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 3:
            raise ShapeError(
                f"Conv2D layer {self.name!r} needs images of shape (channels, height, width) per "
                f"sample; got {input_shape}. Put Reshape((1, 28, 28)) before it for flat MNIST rows."
            )
        _, h, w = input_shape
        kh, kw = self.kernel_size
        return (
            self.filters,
            conv_output_size(h, kh, self.stride, self.padding),
            conv_output_size(w, kw, self.stride, self.padding),
        )

    def build(self, input_shape, rng, dtype):
        out = super().build(input_shape, rng, dtype)
        c = self.input_shape[0]
        kh, kw = self.kernel_size
        shape = (self.filters, c, kh, kw)
        self.params = {
            "weight": _glorot(rng, shape, c * kh * kw, self.filters * kh * kw, dtype),
            "bias": np.zeros(self.filters, dtype=dtype),
        }
        return out

    def forward(self, x, backend, *, cache=True):
        _rows(x, self.input_shape, self)
        kh, kw = self.kernel_size
        n = x.shape[0]
        _, oh, ow = self.output_shape
        cols = im2col(x, kh, kw, self.stride, self.padding)
        y = backend.matmul(cols, self.weight.reshape(self.filters, -1).T)
        self._cols, self._x_shape = (cols, x.shape) if cache else (None, None)
        # (n * oh * ow, filters) -> contiguous (n, filters, oh * ow), then the bias per channel
        y = np.ascontiguousarray(y.reshape(n, oh * ow, self.filters).transpose(0, 2, 1))
        return backend.elementwise(_add_channel_bias, y, self.bias).reshape(n, self.filters, oh, ow)

    def backward(self, grad, backend, *, param_grads=True, input_grad=True):
        cols = self._need_cache("_cols")
        n = grad.shape[0]
        g = np.ascontiguousarray(grad.reshape(n, self.filters, -1).transpose(0, 2, 1)).reshape(
            -1, self.filters
        )
        if param_grads:
            self.grads = {
                "weight": backend.matmul(g.T, cols).reshape(self.weight.shape),
                "bias": backend.reduce(np.sum, g, axis=0),
            }
        if not input_grad:
            return None
        dcols = backend.matmul(g, self.weight.reshape(self.filters, -1))
        kh, kw = self.kernel_size
        return col2im(dcols, self._x_shape, kh, kw, self.stride, self.padding)

    def clear_cache(self):
        self._cols = self._x_shape = None

    def get_config(self):
        return {
            "filters": self.filters,
            "kernel_size": list(self.kernel_size),
            "stride": self.stride,
            "padding": self.padding,
        }

    def macs_per_sample(self):
        if not self.input_shape:
            return 0
        kh, kw = self.kernel_size
        _, oh, ow = self.output_shape
        return oh * ow * self.filters * self.input_shape[0] * kh * kw

    def _describe(self):
        c = self.input_shape[0] if self.input_shape else "?"
        kh, kw = self.kernel_size
        return (
            f"Conv2D({c} -> {self.filters}, kernel={kh}x{kw}, stride={self.stride}, "
            f"padding={self.padding})"
        )


class _Pool2D(Layer):
    """Shared geometry of the pooling layers."""

    def __init__(
        self,
        pool_size: int | tuple[int, int] = 2,
        stride: int | None = None,
        padding: int = 0,
        name: str | None = None,
    ) -> None:
        super().__init__(name)
        self.pool_size = _pair(pool_size, "pool_size")
        self.stride = self.pool_size[0] if stride is None else _positive_int(stride, "stride")
        if stride is None and self.pool_size[0] != self.pool_size[1]:
            raise ValidationError(
                f"a non-square pool_size {self.pool_size} needs an explicit stride."
            )
        self.padding = _positive_int(padding, "padding", low=0)
        if 2 * self.padding > min(self.pool_size):
            raise ValidationError(
                f"padding must be at most half the pool size {self.pool_size}; got {padding}."
            )
        self._x_shape: tuple[int, ...] | None = None

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 3:
            raise ShapeError(
                f"{type(self).__name__} layer {self.name!r} needs images of shape "
                f"(channels, height, width) per sample; got {input_shape}."
            )
        c, h, w = input_shape
        ph, pw = self.pool_size
        return (
            c,
            conv_output_size(h, ph, self.stride, self.padding),
            conv_output_size(w, pw, self.stride, self.padding),
        )

    def get_config(self):
        return {"pool_size": list(self.pool_size), "stride": self.stride, "padding": self.padding}

    def clear_cache(self):
        self._x_shape = None


def _window_max(win: np.ndarray, axis: tuple[int, int] = (4, 5)) -> np.ndarray:
    """Maximum over the last two axes of windows (n, c, oh, ow, kh, kw): one pass per offset."""
    out = win[..., 0, 0].copy()
    for i in range(win.shape[4]):
        for j in range(win.shape[5]):
            np.maximum(out, win[..., i, j], out=out)
    return out


def _window_mean(win: np.ndarray, axis: tuple[int, int] = (4, 5)) -> np.ndarray:
    """Mean over the last two axes of windows (n, c, oh, ow, kh, kw): one pass per offset."""
    out = win[..., 0, 0].copy()
    for i in range(win.shape[4]):
        for j in range(win.shape[5]):
            if i or j:
                out += win[..., i, j]
    out *= 1.0 / (win.shape[4] * win.shape[5])
    return out


class MaxPool2D(_Pool2D):
    """Maximum over each (pool_size) window of each channel.

    Parameters
    ----------
    pool_size : int or (int, int), default=2
    stride : int, optional
        Defaults to the pool size (non-overlapping windows).
    padding : int, default=0
        Rows and columns of ``-inf`` on each side; at most half the pool size.
    name : str, optional

    Notes
    -----
    The forward maximum is a ``backend.reduce`` over axes (4, 5) of the windows
    (n, c, out_h, out_w, kh, kw). The gradient goes to the first maximal element of each
    window (row-major within the window).
    """

    kind: ClassVar[str] = "maxpool2d"

    def forward(self, x, backend, *, cache=True):
        _rows(x, self.input_shape, self)
        ph, pw = self.pool_size
        win = windows(x, ph, pw, self.stride, self.padding, fill=-np.inf)
        y = backend.reduce(_window_max, win, axis=(4, 5))
        if cache:
            arg = np.zeros(y.shape, dtype=np.intp)
            for k in range(ph * pw - 1, -1, -1):  # last to first, so the first maximum wins
                arg[win[..., k // pw, k % pw] == y] = k
            self._arg, self._x_shape = arg, x.shape
        else:
            self._arg = self._x_shape = None
        return y

    def backward(self, grad, backend, *, param_grads=True, input_grad=True):
        arg = self._need_cache("_arg")
        if not input_grad:
            return None
        ph, pw = self.pool_size
        zero = np.zeros((), dtype=grad.dtype)
        return accumulate(
            lambda i, j: np.where(arg == i * pw + j, grad, zero),
            self._x_shape,
            ph,
            pw,
            self.stride,
            self.padding,
            grad.dtype,
        )

    def clear_cache(self):
        self._arg = self._x_shape = None


class AvgPool2D(_Pool2D):
    """Mean over each (pool_size) window of each channel; padding counts as zeros.

    Parameters
    ----------
    pool_size : int or (int, int), default=2
    stride : int, optional
        Defaults to the pool size.
    padding : int, default=0
        Zero rows and columns on each side, included in the mean; at most half the pool size.
    name : str, optional
    """

    kind: ClassVar[str] = "avgpool2d"

    def forward(self, x, backend, *, cache=True):
        _rows(x, self.input_shape, self)
        ph, pw = self.pool_size
        win = windows(x, ph, pw, self.stride, self.padding)
        self._x_shape = x.shape if cache else None
        return backend.reduce(_window_mean, win, axis=(4, 5))

    def backward(self, grad, backend, *, param_grads=True, input_grad=True):
        x_shape = self._need_cache("_x_shape")
        if not input_grad:
            return None
        ph, pw = self.pool_size
        share = backend.elementwise(lambda g: g * (1.0 / (ph * pw)), grad)
        return accumulate(
            lambda i, j: share, x_shape, ph, pw, self.stride, self.padding, share.dtype
        )


class Flatten(Layer):
    """Flatten each sample: (n, *shape) -> (n, prod(shape)). No arithmetic."""

    kind: ClassVar[str] = "flatten"

    def compute_output_shape(self, input_shape):
        return (int(np.prod(input_shape)),)

    def forward(self, x, backend, *, cache=True):
        return x.reshape(x.shape[0], -1)

    def backward(self, grad, backend, *, param_grads=True, input_grad=True):
        return grad.reshape(grad.shape[0], *self.input_shape) if input_grad else None


class Reshape(Layer):
    """Reshape each sample, e.g. flat MNIST rows (784,) to images (1, 28, 28). No arithmetic.

    Parameters
    ----------
    shape : tuple of int
        Per-sample target shape; one entry may be -1.
    name : str, optional
    """

    kind: ClassVar[str] = "reshape"

    def __init__(self, shape: tuple[int, ...], name: str | None = None) -> None:
        super().__init__(name)
        try:
            shape = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise ValidationError(f"shape must be a tuple of ints; got {shape!r}.") from None
        if sum(d == -1 for d in shape) > 1 or any(d < 1 and d != -1 for d in shape):
            raise ValidationError(f"shape must be positive ints with at most one -1; got {shape}.")
        self.shape = shape

    def compute_output_shape(self, input_shape):
        size = int(np.prod(input_shape))
        known = int(np.prod([d for d in self.shape if d != -1]))
        if -1 in self.shape:
            if size % known:
                raise ShapeError(f"cannot reshape samples of shape {input_shape} to {self.shape}.")
            return tuple(size // known if d == -1 else d for d in self.shape)
        if known != size:
            raise ShapeError(f"cannot reshape samples of shape {input_shape} to {self.shape}.")
        return self.shape

    def forward(self, x, backend, *, cache=True):
        return x.reshape(x.shape[0], *self.output_shape)

    def backward(self, grad, backend, *, param_grads=True, input_grad=True):
        return grad.reshape(grad.shape[0], *self.input_shape) if input_grad else None

    def get_config(self):
        return {"shape": list(self.shape)}
