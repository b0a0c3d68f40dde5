"""Convolutions: Conv2D (grouped, strided, dilated, any padding) and DepthwiseConv2D.

A convolution runs as one ``backend.conv2d`` (and its backward as ``backend.conv2d_vjp``).
By default a backend lowers it by :func:`~xai_core.nn.im2col` to one column matrix,
multiplied by the kernels in one ``backend.matmul``, or for ``groups > 1`` (depthwise too)
in one ``backend.batched_matmul`` of the groups' blocks (counted as one matmul per group);
the bias is a ``backend.elementwise`` (:mod:`xai_core.kernels.conv_ops`). The ``cpu`` backend
computes pointwise, depthwise and stride-1 convolutions without im2col
(:mod:`xai_core.kernels.conv_taps`; for inference, in channels-last memory,
:mod:`xai_core.kernels.conv_forward`), counted the same. Weights are ``(filters, in_channels / groups, kh, kw)``
whatever the layout (ONNX's and PyTorch's order).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from xai_core.errors import ShapeError, ValidationError
from xai_core.kernels.conv_ops import ConvGeometry
from xai_core.kernels.im2col import as_pads, as_pair, conv_output_size, same_pads
from xai_core.nn import _util
from xai_core.nn.layer import Layer
from xai_core.nn.rules import LRP_RULES, as_rule, lrp_ratio, lrp_weights, times_input
from xai_core.validation import check_int

__all__ = ["Conv2D", "DepthwiseConv2D", "resolve_padding"]


def check_padding(padding: Any) -> Any:
    """``"valid"``, ``"same"``, an int or a tuple, validated; ``"valid"`` becomes 0."""
    if padding == "valid":
        return 0
    if padding == "same":
        return "same"
    pads = as_pads(padding)
    if isinstance(padding, (tuple, list)):
        return list(pads) if len(padding) == 4 else [pads[0], pads[2]]
    return pads[0]


def resolve_padding(padding: Any, hw: tuple[int, int], kernel, stride, dilation=1):
    """``(top, bottom, left, right)`` for a checked ``padding`` and input ``(h, w)``."""
    if padding == "same":
        return same_pads(hw, kernel, stride, dilation)
    return as_pads(padding)


class Conv2D(Layer):
    """2-D convolution (cross-correlation), lowered to one (batched) matmul.

    Parameters
    ----------
    filters : int
        Output channels.
    kernel_size : int or (int, int), default=3
    stride : int or (int, int), default=1
    padding : int, (rows, cols), (top, bottom, left, right), "valid" or "same", default=0
        Zero padding. ``"same"`` is TensorFlow's: output ``ceil(size / stride)``, the odd
        row or column at the bottom / right (ONNX ``SAME_UPPER``).
    dilation : int or (int, int), default=1
    groups : int, default=1
        Input and output channels split into ``groups`` independent convolutions.
    use_bias : bool, default=True
    layout : {"NCHW", "NHWC"}, default="NCHW"
        Layout of the samples; the weights are NCHW-ordered either way.
    name : str, optional

    Attributes
    ----------
    weight : ndarray of shape (filters, in_channels // groups, kh, kw)
    bias : ndarray of shape (filters,)
    strides, dilation : tuple of (int, int)
    pads : tuple of (top, bottom, left, right)
        Resolved at build time.

    Notes
    -----
    Output size per axis: ``(size + before + after - dilation * (kernel - 1) - 1) // stride + 1``.
    """

    kind: ClassVar[str] = "conv2d"
    backward_rules: ClassVar[tuple[str, ...]] = LRP_RULES
    regularized: ClassVar[tuple[str, ...]] = ("weight",)

    def __init__(
        self,
        filters: int,
        kernel_size: int | tuple[int, int] = 3,
        stride: int | tuple[int, int] = 1,
        padding: Any = 0,
        dilation: int | tuple[int, int] = 1,
        groups: int = 1,
        use_bias: bool = True,
        layout: str = "NCHW",
        name: str | None = None,
    ) -> None:
        super().__init__(name)
        self.filters = check_int(filters, "filters") if filters is not None else None
        self.kernel_size = as_pair(kernel_size, "kernel_size")
        self.strides = as_pair(stride, "stride")
        self.dilation = as_pair(dilation, "dilation")
        self.groups = check_int(groups, "groups")
        self.padding = check_padding(padding)
        self.use_bias = bool(use_bias)
        self.layout = _util.check_layout(layout)
        self.pads: tuple[int, int, int, int] | None = None
        if self.filters is not None and self.filters % self.groups:
            raise ValidationError(
                f"filters ({self.filters}) must be a multiple of groups ({self.groups})."
            )

    weight = _util.parameter("weight")
    bias = _util.parameter("bias", optional=True)

    stride = _util.stride

    def compute_output_shape(self, input_shape):
        c, h, w = _util.image(input_shape, self)
        if c % self.groups:
            raise ShapeError(
                f"Conv2D {self.name!r}: {c} input channels do not split into {self.groups} groups."
            )
        kh, kw = self.kernel_size
        self.pads = resolve_padding(
            self.padding, (h, w), self.kernel_size, self.strides, self.dilation
        )
        oh = conv_output_size(h, kh, self.strides[0], self.pads[:2], self.dilation[0])
        ow = conv_output_size(w, kw, self.strides[1], self.pads[2:], self.dilation[1])
        return _util.shape_from_chw(self.filters, oh, ow, self.layout)

    def _channels(self) -> int:
        return _util.image(self.input_shape, self)[0]

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shapes of the parameters for the input shape set by ``build``."""
        kh, kw = self.kernel_size
        shapes = {"weight": (self.filters, self._channels() // self.groups, kh, kw)}
        return {**shapes, "bias": (self.filters,)} if self.use_bias else shapes

    def build(self, input_shape, rng, dtype):
        out = super().build(input_shape, rng, dtype)
        cg = self._channels() // self.groups
        kh, kw = self.kernel_size
        shape = (self.filters, cg, kh, kw)
        fan_out = self.filters // self.groups * kh * kw
        self.params = {"weight": _util.glorot(rng, shape, cg * kh * kw, fan_out, dtype)}
        if self.use_bias:
            self.params["bias"] = np.zeros(self.filters, dtype=dtype)
        return out

    def geometry(self) -> ConvGeometry:
        """Kernel, strides, resolved padding, dilation and groups (after ``build``)."""
        return ConvGeometry(self.kernel_size, self.strides, self.pads, self.dilation, self.groups)

    def apply(self, x, backend, record):
        _util.rows(x, self.input_shape, self)
        x = _util.to_nchw(x, self.layout)
        if record is not None:
            record["input"] = x
        y = backend.conv2d(x, self.weight, self.bias, self.geometry(), record)
        return _util.from_nchw(y, self.layout)

    def vjp_rule(self, grad, backend, record, rule):
        """LRP's backward pass (:mod:`xai_core.nn.rules`): the relevance at the input.

        As :meth:`Dense.vjp_rule`: ``x * vjp(grad / (z + epsilon * sign(z)))`` through
        the convolution with the weights :func:`~xai_core.nn.rules.lrp_weights` gives for the
        rule, ``z`` its output with them. Shape (n_samples, *input_shape).
        """
        rule = as_rule(rule)
        x = self._need(record, self)["input"]
        w = lrp_weights(self.weight, rule)
        again: dict = {}
        z = backend.conv2d(x, w, self.bias, self.geometry(), again)
        s = lrp_ratio(_util.to_nchw(grad, self.layout), z, rule.epsilon, backend)
        gx, _ = backend.conv2d_vjp(
            s, w, self.geometry(), again, use_bias=self.use_bias, param_grads=False
        )
        return _util.from_nchw(times_input(x, gx, backend), self.layout)

    def apply_activated(self, x, backend, activation):
        """``activation.apply(self.apply(x, backend, None), backend, None)``, in one backend call.

        Inference only (no record): the backend may fuse the clamping ``activation``
        (ReLU, ReLU6, Clip) into the convolution (:meth:`Backend.conv2d_activated`). A
        subclass with its own :meth:`apply` runs it, then the activation.
        """
        if type(self).apply is not Conv2D.apply:
            return activation.apply(self.apply(x, backend, None), backend, None)
        _util.rows(x, self.input_shape, self)
        x = _util.to_nchw(x, self.layout)
        y = backend.conv2d_activated(x, self.weight, self.bias, self.geometry(), activation)
        return _util.from_nchw(y, self.layout)

    def apply_added(self, x, backend, add, residual):
        """``add.apply([self.apply(x, backend, None), residual], backend, None)``, in one backend call.

        Inference only (no record): the backend may add the ``residual`` (the other input
        of the ``Add`` layer ``add``, of this layer's output shape) in the convolution's
        epilogue (:meth:`Backend.conv2d_added`). A subclass with its own :meth:`apply`, or a
        residual that broadcasts, runs the convolution, then the ``Add``.
        """
        if type(self).apply is not Conv2D.apply or residual.shape[1:] != self.output_shape:
            return add.apply([self.apply(x, backend, None), residual], backend, None)
        _util.rows(x, self.input_shape, self)
        x, residual = _util.to_nchw(x, self.layout), _util.to_nchw(residual, self.layout)
        y = backend.conv2d_added(x, self.weight, self.bias, self.geometry(), residual, add)
        return _util.from_nchw(y, self.layout)

    def _out_hw(self) -> tuple[int, int]:
        if self.layout == "NHWC":
            return tuple(self.output_shape[:2])
        return tuple(self.output_shape[1:])

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        record = self._need(record, self)
        grad = _util.to_nchw(grad, self.layout)
        gx, grads = backend.conv2d_vjp(
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
        config = {
            "filters": self.filters,
            "kernel_size": list(self.kernel_size),
            "stride": list(self.strides),
            "padding": self.padding,
            "dilation": list(self.dilation),
            "groups": self.groups,
            "use_bias": self.use_bias,
            "layout": self.layout,
        }
        return config

    def macs_per_sample(self):
        if not self.output_shape:
            return 0
        kh, kw = self.kernel_size
        oh, ow = self._out_hw()
        return oh * ow * self.filters * (self._channels() // self.groups) * kh * kw

    def _describe(self):
        c = self._channels() if self.input_shape else "?"
        kh, kw = self.kernel_size
        extra = "".join(
            f", {k}={v}"
            for k, v in (("dilation", self.dilation), ("groups", self.groups))
            if v not in ((1, 1), 1)
        )
        return (
            f"{type(self).__name__}({c} -> {self.filters}, kernel={kh}x{kw}, stride={self.stride}, "
            f"padding={self.pads if self.pads is not None else self.padding}{extra})"
        )


class DepthwiseConv2D(Conv2D):
    """Depthwise convolution: each input channel convolved with its own ``depth_multiplier`` kernels.

    A :class:`Conv2D` with ``groups = in_channels`` and ``filters = in_channels *
    depth_multiplier``; ``weight`` has shape ``(in_channels * depth_multiplier, 1, kh, kw)``
    (ONNX / PyTorch; a Keras depthwise kernel ``(kh, kw, c, m)`` is
    ``kernel.reshape(kh, kw, c * m).transpose(2, 0, 1)[:, None]``).

    Parameters
    ----------
    kernel_size, stride, padding, dilation, use_bias, layout, name
        As :class:`Conv2D`.
    depth_multiplier : int, default=1
    """

    kind: ClassVar[str] = "depthwise_conv2d"
    backward_rules: ClassVar[tuple[str, ...]] = LRP_RULES

    def __init__(
        self,
        kernel_size: int | tuple[int, int] = 3,
        stride: int | tuple[int, int] = 1,
        padding: Any = 0,
        dilation: int | tuple[int, int] = 1,
        depth_multiplier: int = 1,
        use_bias: bool = True,
        layout: str = "NCHW",
        name: str | None = None,
    ) -> None:
        super().__init__(None, kernel_size, stride, padding, dilation, 1, use_bias, layout, name)
        self.depth_multiplier = check_int(depth_multiplier, "depth_multiplier")

    def compute_output_shape(self, input_shape):
        c = _util.image(input_shape, self)[0]
        self.groups, self.filters = c, c * self.depth_multiplier
        return super().compute_output_shape(input_shape)

    def get_config(self):
        config = super().get_config()
        del config["filters"], config["groups"]
        config["depth_multiplier"] = self.depth_multiplier
        return config
