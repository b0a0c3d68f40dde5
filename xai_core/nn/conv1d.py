"""The 1-D convolution over the steps of a series: a :class:`~xai_core.nn.Conv2D` of height 1.

It runs as one ``backend.conv2d`` of the rows as images of height 1 (its backward as one
``backend.conv2d_vjp``), so every backend computes and counts its products exactly as for
an image convolution, in its own numerics (bf16 on ``tpu``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from xai_core.errors import ShapeError, ValidationError
from xai_core.kernels.conv_ops import ConvGeometry
from xai_core.kernels.im2col import conv_output_size
from xai_core.nn import _sequence as seq
from xai_core.nn import _util
from xai_core.nn.layer import Layer
from xai_core.validation import check_int

__all__ = ["Conv1D"]


class Conv1D(Layer):
    """1-D convolution (cross-correlation) over the steps of a series.

    Parameters
    ----------
    filters : int
        Output channels.
    kernel_size : int, default=3
    stride : int, default=1
    padding : int, (left, right), "valid", "same" or "causal", default=0
        Zero padding. ``"same"`` is TensorFlow's (output ``ceil(steps / stride)``, the odd
        step at the end); ``"causal"`` pads ``dilation * (kernel_size - 1)`` steps at the
        start only (Keras's), so an output step sees no later input step.
    dilation : int, default=1
    groups : int, default=1
    use_bias : bool, default=True
    layout : {"NCW", "NWC"}, default="NCW"
        Samples of shape (channels, steps) or (steps, channels).
    name : str, optional

    Attributes
    ----------
    weight : ndarray of shape (filters, in_channels // groups, kernel_size)
        PyTorch's and ONNX's order whatever the layout.
    bias : ndarray of shape (filters,)
    pads : (int, int)
        ``(left, right)``, resolved at build time.
    """

    kind: ClassVar[str] = "conv1d"
    regularized: ClassVar[tuple[str, ...]] = ("weight",)

    def __init__(
        self,
        filters: int,
        kernel_size: int = 3,
        stride: int = 1,
        padding: Any = 0,
        dilation: int = 1,
        groups: int = 1,
        use_bias: bool = True,
        layout: str = "NCW",
        name: str | None = None,
    ) -> None:
        super().__init__(name)
        self.filters = check_int(filters, "filters")
        self.kernel_size = seq.as_int(kernel_size, "kernel_size")
        self.stride = seq.as_int(stride, "stride")
        self.dilation = seq.as_int(dilation, "dilation")
        self.groups = check_int(groups, "groups")
        self.padding = seq.check_pads(padding)
        self.use_bias = bool(use_bias)
        self.layout = seq.check_layout(layout)
        self.pads: tuple[int, int] | None = None
        if self.filters % self.groups:
            raise ValidationError(
                f"filters ({self.filters}) must be a multiple of groups ({self.groups})."
            )

    @property
    def series_order(self) -> str:
        """How this layer reads a series: ``"ct"`` (NCW) or ``"tc"`` (NWC)."""
        return "ct" if self.layout == "NCW" else "tc"

    weight = _util.parameter("weight")
    bias = _util.parameter("bias", optional=True)

    def compute_output_shape(self, input_shape):
        c, t = seq.series(input_shape, self)
        if c % self.groups:
            raise ShapeError(
                f"Conv1D {self.name!r}: {c} input channels do not split into {self.groups} groups."
            )
        self.pads = seq.resolve_pads(self.padding, t, self.kernel_size, self.stride, self.dilation)
        out = conv_output_size(t, self.kernel_size, self.stride, self.pads, self.dilation)
        if out < 1:
            raise ShapeError(
                f"Conv1D {self.name!r}: a kernel of {self.kernel_size} steps (dilation "
                f"{self.dilation}) does not fit {t} padded steps."
            )
        return seq.shape_from_ct(self.filters, out, self.layout)

    def _channels(self) -> int:
        return seq.series(self.input_shape, self)[0]

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shapes of the parameters for the input shape set by ``build``."""
        shapes = {"weight": (self.filters, self._channels() // self.groups, self.kernel_size)}
        return {**shapes, "bias": (self.filters,)} if self.use_bias else shapes

    def build(self, input_shape, rng, dtype):
        out = super().build(input_shape, rng, dtype)
        cg = self._channels() // self.groups
        shape = (self.filters, cg, self.kernel_size)
        fan_out = self.filters // self.groups * self.kernel_size
        self.params = {"weight": _util.glorot(rng, shape, cg * self.kernel_size, fan_out, dtype)}
        if self.use_bias:
            self.params["bias"] = np.zeros(self.filters, dtype=dtype)
        return out

    def geometry(self) -> ConvGeometry:
        """The 2-D geometry of height 1 the convolution runs as (after ``build``)."""
        return ConvGeometry(
            (1, self.kernel_size),
            (1, self.stride),
            (0, 0, *self.pads),
            (1, self.dilation),
            self.groups,
        )

    def apply(self, x, backend, record):
        _util.rows(x, self.input_shape, self)
        w = self.weight[:, :, None, :]
        y = backend.conv2d(seq.to_image(x, self.layout), w, self.bias, self.geometry(), record)
        return seq.from_image(y, self.layout)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        record = self._need(record, self)
        gx, grads = backend.conv2d_vjp(
            seq.to_image(grad, self.layout),
            self.weight[:, :, None, :],
            self.geometry(),
            record,
            use_bias=self.use_bias,
            param_grads=param_grads,
            input_grad=input_grad,
        )
        if "weight" in grads:
            grads["weight"] = grads["weight"][:, :, 0, :]
        return (None if gx is None else seq.from_image(gx, self.layout)), grads

    def get_config(self):
        return {
            "filters": self.filters,
            "kernel_size": self.kernel_size,
            "stride": self.stride,
            "padding": self.padding,
            "dilation": self.dilation,
            "groups": self.groups,
            "use_bias": self.use_bias,
            "layout": self.layout,
        }

    def macs_per_sample(self):
        if not self.output_shape:
            return 0
        steps = seq.series(self.output_shape, self)[1]
        return steps * self.filters * (self._channels() // self.groups) * self.kernel_size

    def _describe(self):
        c = self._channels() if self.input_shape else "?"
        return (
            f"Conv1D({c} -> {self.filters}, kernel={self.kernel_size}, stride={self.stride}, "
            f"padding={self.pads if self.pads is not None else self.padding})"
        )
