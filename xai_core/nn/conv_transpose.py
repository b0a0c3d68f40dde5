"""Conv2DTranspose: the transposed (fractionally strided) 2-D convolution of decoders.

The layer computes the input gradient of the convolution with the same kernel, strides,
padding, dilation and groups, which maps its output back to its input's size: each input
pixel's values spread over a window of the output, overlapping windows summed
(:func:`~xai_core.kernels.conv_ops.conv_transpose2d_im2col`). Its products are one
``backend.matmul`` (``groups > 1``: one ``backend.batched_matmul``), so every backend counts
them; its backward pass is that convolution, forward (input gradient) and weight gradient.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from xai_core.errors import ShapeError, ValidationError
from xai_core.kernels.conv_ops import (
    ConvGeometry,
    conv_transpose2d_im2col,
    conv_transpose2d_im2col_vjp,
)
from xai_core.kernels.im2col import as_pads, as_pair
from xai_core.nn import _util
from xai_core.nn.layer import Layer
from xai_core.validation import check_int

__all__ = ["Conv2DTranspose"]


class Conv2DTranspose(Layer):
    """Transposed 2-D convolution (ONNX ``ConvTranspose``, ``torch.nn.ConvTranspose2d``).

    Parameters
    ----------
    filters : int
        Output channels.
    kernel_size : int or (int, int), default=3
    stride : int or (int, int), default=1
    padding : int, (rows, cols) or (top, bottom, left, right), default=0
        Rows and columns cropped from the full output.
    output_padding : int or (int, int), default=0
        Rows and columns added at the bottom and right (each less than the stride).
    dilation : int or (int, int), default=1
    groups : int, default=1
    use_bias : bool, default=True
    layout : {"NCHW", "NHWC"}, default="NCHW"
    name : str, optional

    Attributes
    ----------
    weight : ndarray of shape (in_channels, filters // groups, kh, kw)
        ONNX's and PyTorch's layout.
    bias : ndarray of shape (filters,)

    Notes
    -----
    Output size per axis: ``stride * (size - 1) + dilation * (kernel - 1) + 1 +
    output_padding - before - after``.
    """

    kind: ClassVar[str] = "conv2d_transpose"
    regularized: ClassVar[tuple[str, ...]] = ("weight",)

    def __init__(
        self,
        filters: int,
        kernel_size: int | tuple[int, int] = 3,
        stride: int | tuple[int, int] = 1,
        padding: Any = 0,
        output_padding: int | tuple[int, int] = 0,
        dilation: int | tuple[int, int] = 1,
        groups: int = 1,
        use_bias: bool = True,
        layout: str = "NCHW",
        name: str | None = None,
    ) -> None:
        super().__init__(name)
        self.filters = check_int(filters, "filters")
        self.kernel_size = as_pair(kernel_size, "kernel_size")
        self.strides = as_pair(stride, "stride")
        self.dilation = as_pair(dilation, "dilation")
        self.output_padding = as_pair(output_padding, "output_padding", low=0)
        self.groups = check_int(groups, "groups")
        self.pads = as_pads(padding)
        self.use_bias = bool(use_bias)
        self.layout = _util.check_layout(layout)
        if self.filters % self.groups:
            raise ValidationError(
                f"filters ({self.filters}) must be a multiple of groups ({self.groups})."
            )
        if any(p >= s for p, s in zip(self.output_padding, self.strides)):
            raise ValidationError(
                f"output_padding must be less than the stride per axis; got output_padding="
                f"{self.output_padding} with stride={self.strides}."
            )

    weight = _util.parameter("weight")
    bias = _util.parameter("bias", optional=True)

    stride = _util.stride

    def _out_hw(self, h: int, w: int) -> tuple[int, int]:
        size = []
        for axis, n in enumerate((h, w)):
            k, s, d = self.kernel_size[axis], self.strides[axis], self.dilation[axis]
            before, after = self.pads[2 * axis : 2 * axis + 2]
            size.append(s * (n - 1) + d * (k - 1) + 1 + self.output_padding[axis] - before - after)
        return size[0], size[1]

    def compute_output_shape(self, input_shape):
        c, h, w = _util.image(input_shape, self)
        if c % self.groups:
            raise ShapeError(
                f"Conv2DTranspose {self.name!r}: {c} input channels do not split into "
                f"{self.groups} groups."
            )
        oh, ow = self._out_hw(h, w)
        if oh < 1 or ow < 1:
            raise ShapeError(
                f"Conv2DTranspose {self.name!r}: padding {self.pads} leaves an output of "
                f"{oh}x{ow} for a {h}x{w} input."
            )
        return _util.shape_from_chw(self.filters, oh, ow, self.layout)

    def _channels(self) -> int:
        return _util.image(self.input_shape, self)[0]

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        kh, kw = self.kernel_size
        shapes = {"weight": (self._channels(), self.filters // self.groups, kh, kw)}
        return {**shapes, "bias": (self.filters,)} if self.use_bias else shapes

    def build(self, input_shape, rng, dtype):
        out = super().build(input_shape, rng, dtype)
        shape = self.param_shapes()["weight"]
        kh, kw = self.kernel_size
        fan_in = shape[0] // self.groups * kh * kw
        self.params = {"weight": _util.glorot(rng, shape, fan_in, shape[1] * kh * kw, dtype)}
        if self.use_bias:
            self.params["bias"] = np.zeros(self.filters, dtype=dtype)
        return out

    def geometry(self) -> ConvGeometry:
        """The convolution mapping the output back to the input (after ``build``)."""
        return ConvGeometry(self.kernel_size, self.strides, self.pads, self.dilation, self.groups)

    def _hw(self) -> tuple[int, int]:
        shape = self.output_shape
        return tuple(shape[:2]) if self.layout == "NHWC" else tuple(shape[1:])

    def apply(self, x, backend, record):
        _util.rows(x, self.input_shape, self)
        x = _util.to_nchw(x, self.layout)
        y = conv_transpose2d_im2col(
            backend, x, self.weight, self.bias, self.geometry(), self._hw(), record
        )
        return _util.from_nchw(y, self.layout)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        record = self._need(record, self)
        grad = np.ascontiguousarray(_util.to_nchw(grad, self.layout))
        gx, grads = conv_transpose2d_im2col_vjp(
            backend,
            grad,
            self.weight,
            self.geometry(),
            record,
            use_bias=self.use_bias,
            param_grads=param_grads,
            input_grad=input_grad,
        )
        return (None if gx is None else _util.from_nchw(gx, self.layout)), grads

    def get_config(self):
        return {
            "filters": self.filters,
            "kernel_size": list(self.kernel_size),
            "stride": list(self.strides),
            "padding": list(self.pads),
            "output_padding": list(self.output_padding),
            "dilation": list(self.dilation),
            "groups": self.groups,
            "use_bias": self.use_bias,
            "layout": self.layout,
        }

    def macs_per_sample(self):
        if not self.input_shape:
            return 0
        c, h, w = _util.image(self.input_shape, self)
        kh, kw = self.kernel_size
        return h * w * c * (self.filters // self.groups) * kh * kw

    def _describe(self):
        c = self._channels() if self.input_shape else "?"
        kh, kw = self.kernel_size
        return (
            f"Conv2DTranspose({c} -> {self.filters}, kernel={kh}x{kw}, stride={self.stride}, "
            f"padding={self.pads}, output_padding={self.output_padding})"
        )
