"""Pools over the steps of a series: MaxPool1D, AvgPool1D (the 2-D pools with a height of 1)
and the global pools over time, GlobalAveragePooling1D and GlobalMaxPooling1D.

Window maxima and means are the 2-D pools' ``backend.reduce`` calls; a global pool is one
``backend.reduce`` over the steps.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from xai_core.nn import _sequence as seq
from xai_core.nn import _util
from xai_core.nn.layer import Layer
from xai_core.nn.pooling import AvgPool2D, MaxPool2D

__all__ = ["AvgPool1D", "GlobalAveragePooling1D", "GlobalMaxPooling1D", "MaxPool1D"]


class _Pool1D(Layer):
    """A 2-D pool of height 1 over the rows as images (n, channels, 1, steps)."""

    def __init__(
        self,
        pool_size: int = 2,
        stride: int | None = None,
        padding: Any = 0,
        layout: str = "NCW",
        name: str | None = None,
        *,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__(name)
        self.pool_size = seq.as_int(pool_size, "pool_size")
        self.stride = self.pool_size if stride is None else seq.as_int(stride, "stride")
        self.padding = seq.check_pads(padding)
        if self.padding == "causal":
            from xai_core.errors import ValidationError

            raise ValidationError("padding 'causal' is for convolutions, not pools.")
        self.layout = seq.check_layout(layout)
        self.ceil_mode = bool(ceil_mode)
        self.pool2d: Layer | None = None

    @property
    def series_order(self) -> str:
        """How this layer reads a series: ``"ct"`` (NCW) or ``"tc"`` (NWC)."""
        return "ct" if self.layout == "NCW" else "tc"

    def _make(self, padding) -> Layer:
        raise NotImplementedError

    def compute_output_shape(self, input_shape):
        c, t = seq.series(input_shape, self)
        padding = "same" if self.padding == "same" else (0, 0, *self.padding)
        self.pool2d = self._make(padding)
        self.pool2d.name = self.name
        _, _, out = self.pool2d.build((c, 1, t), None, None)
        return seq.shape_from_ct(c, out, self.layout)

    @property
    def pads(self) -> tuple[int, int] | None:
        """``(left, right)`` padding, resolved at build time."""
        return None if self.pool2d is None else tuple(self.pool2d.pads[2:])

    def apply(self, x, backend, record):
        _util.rows(x, self.input_shape, self)
        y = self.pool2d.apply(seq.to_image(x, self.layout), backend, record)
        return seq.from_image(y, self.layout)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        record = self._need(record, self)
        if not input_grad:
            return None, {}
        gx, _ = self.pool2d.vjp(seq.to_image(grad, self.layout), backend, record)
        return seq.from_image(gx, self.layout), {}

    def get_config(self):
        config = {
            "pool_size": self.pool_size,
            "stride": self.stride,
            "padding": self.padding,
            "layout": self.layout,
        }
        return {**config, "ceil_mode": True} if self.ceil_mode else config


class MaxPool1D(_Pool1D):
    """Maximum over each window of ``pool_size`` steps of each channel.

    Parameters
    ----------
    pool_size : int, default=2
    stride : int, optional
        Defaults to the pool size.
    padding : int, (left, right), "valid" or "same", default=0
        Steps of ``-inf``; at most half the pool size.
    layout : {"NCW", "NWC"}, default="NCW"
    name : str, optional
    ceil_mode : bool, default=False
        Round the output length up (ONNX / PyTorch ``ceil_mode``).

    Notes
    -----
    The gradient goes to the first maximal step of each window.
    """

    kind: ClassVar[str] = "maxpool1d"

    def _make(self, padding):
        return MaxPool2D((1, self.pool_size), (1, self.stride), padding, ceil_mode=self.ceil_mode)


class AvgPool1D(_Pool1D):
    """Mean over each window of ``pool_size`` steps of each channel.

    Parameters
    ----------
    pool_size, stride, padding, layout, name, ceil_mode
        As :class:`MaxPool1D` (padding steps are zeros).
    count_include_pad : bool, default=True
        Divide by the window size, padding included (PyTorch's default); ``False`` divides
        by the input steps in the window (ONNX's default and Keras's "same").
    """

    kind: ClassVar[str] = "avgpool1d"

    def __init__(
        self,
        pool_size: int = 2,
        stride: int | None = None,
        padding: Any = 0,
        count_include_pad: bool = True,
        layout: str = "NCW",
        name: str | None = None,
        *,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__(pool_size, stride, padding, layout, name, ceil_mode=ceil_mode)
        self.count_include_pad = bool(count_include_pad)

    def _make(self, padding):
        return AvgPool2D(
            (1, self.pool_size),
            (1, self.stride),
            padding,
            self.count_include_pad,
            ceil_mode=self.ceil_mode,
        )

    def get_config(self):
        return {**super().get_config(), "count_include_pad": self.count_include_pad}


def _spread(g, size):
    return g / size


class _GlobalPool1D(Layer):
    def __init__(self, keepdims: bool = False, layout: str = "NCW", name: str | None = None):
        super().__init__(name)
        self.keepdims = bool(keepdims)
        self.layout = seq.check_layout(layout)

    def _axis(self) -> int:
        return 2 if self.layout == "NCW" else 1

    @property
    def series_order(self) -> str:
        """How this layer reads a series: ``"ct"`` (NCW) or ``"tc"`` (NWC)."""
        return "ct" if self.layout == "NCW" else "tc"

    def compute_output_shape(self, input_shape):
        c, _ = seq.series(input_shape, self)
        return seq.shape_from_ct(c, 1, self.layout) if self.keepdims else (c,)

    def _kept(self, grad: np.ndarray) -> np.ndarray:
        """``grad`` with the step axis of size 1 back in place."""
        c = seq.series(self.input_shape, self)[0]
        return grad.reshape((grad.shape[0], *seq.shape_from_ct(c, 1, self.layout)))

    def get_config(self):
        return {"keepdims": self.keepdims, "layout": self.layout}


class GlobalAveragePooling1D(_GlobalPool1D):
    """Mean of each channel over the steps (ONNX ``GlobalAveragePool`` on a series; Keras's).

    Parameters
    ----------
    keepdims : bool, default=False
        Keep the step axis as size 1 (ONNX) or drop it (Keras), giving (channels,).
    layout : {"NCW", "NWC"}, default="NCW"
    name : str, optional
    """

    kind: ClassVar[str] = "global_avgpool1d"

    def apply(self, x, backend, record):
        _util.rows(x, self.input_shape, self)
        y = backend.reduce(np.mean, x, axis=self._axis())
        return y.reshape(x.shape[0], *self.output_shape)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        if not input_grad:
            return None, {}
        steps = seq.series(self.input_shape, self)[1]
        share = backend.elementwise(_spread, self._kept(grad), np.asarray(steps))
        return np.broadcast_to(share, (grad.shape[0], *self.input_shape)).copy(), {}


class GlobalMaxPooling1D(_GlobalPool1D):
    """Maximum of each channel over the steps (ONNX ``GlobalMaxPool`` on a series; Keras's).

    Parameters
    ----------
    keepdims, layout, name
        As :class:`GlobalAveragePooling1D`.

    Notes
    -----
    The gradient goes to the first maximal step.
    """

    kind: ClassVar[str] = "global_maxpool1d"

    def apply(self, x, backend, record):
        _util.rows(x, self.input_shape, self)
        y = backend.reduce(np.max, x, axis=self._axis())
        if record is not None:
            record["arg"] = np.argmax(x, axis=self._axis())
        return y.reshape(x.shape[0], *self.output_shape)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        record = self._need(record, self)
        if not input_grad:
            return None, {}
        steps = seq.series(self.input_shape, self)[1]
        axis = self._axis()
        hot = np.expand_dims(record["arg"], axis) == np.arange(steps).reshape(
            (1, -1, 1) if axis == 1 else (1, 1, -1)
        )
        gx = np.where(hot, self._kept(grad), np.zeros((), dtype=grad.dtype))
        return gx.astype(grad.dtype, copy=False), {}
