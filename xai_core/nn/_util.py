"""Small helpers the layers share: layouts, shape checks, initialisation.

Argument checks are :mod:`xai_core.validation`'s (``check_int``, ``check_number`` ...).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core.errors import ShapeError, ValidationError

LAYOUTS = ("NCHW", "NHWC")


def check_layout(layout: Any) -> str:
    if layout not in LAYOUTS:
        raise ValidationError(f"layout must be 'NCHW' or 'NHWC'; got {layout!r}.")
    return layout


def _stride(layer: Any) -> int | tuple[int, int]:
    sh, sw = layer.strides
    return sh if sh == sw else (sh, sw)


#: The ``stride`` property of the windowed layers (convolutions, pools).
stride = property(_stride, doc="The stride: an int when both axes step alike.")


def parameter(key: str, *, optional: bool = False) -> property:
    """A layer attribute for ``params[key]``, set through ``_set_param``; an ``optional`` one
    (a bias a layer may not use) reads None while absent."""
    return property(
        (lambda self: self.params.get(key)) if optional else (lambda self: self.params[key]),
        lambda self, value: self._set_param(key, value),
        doc=f"The parameter {key!r} (``params[{key!r}]``).",
    )


def glorot(
    rng: np.random.Generator | None, shape: tuple[int, ...], fan_in: int, fan_out: int, dtype: Any
):
    """Glorot-uniform weights of ``shape``; zeros, drawing nothing, when ``rng`` is None
    (the weights are about to be set, as an importer does)."""
    if rng is None:
        return np.zeros(shape, dtype=dtype)
    bound = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-bound, bound, size=shape).astype(dtype)


def rows(x: np.ndarray, shape: tuple[int, ...], layer: Any) -> None:
    """Raise a ShapeError unless ``x`` is a batch of samples of ``shape``."""
    if x.shape[1:] != tuple(shape):
        raise ShapeError(
            f"layer {layer.name or type(layer).__name__!r} expects input of shape "
            f"(n_samples, {', '.join(map(str, shape))}); got an array of shape {x.shape}."
        )


def image(input_shape: tuple[int, ...], layer: Any) -> tuple[int, int, int]:
    """``(channels, height, width)`` of a per-sample image shape in the layer's layout."""
    if len(input_shape) != 3:
        raise ShapeError(
            f"{type(layer).__name__} layer {layer.name!r} needs images of shape "
            f"{'(channels, height, width)' if layer.layout == 'NCHW' else '(height, width, channels)'}"
            f" per sample; got {input_shape}."
            + (
                " Put Reshape((1, 28, 28)) before it for flat MNIST rows."
                if len(input_shape) == 1
                else ""
            )
        )
    if layer.layout == "NHWC":
        h, w, c = input_shape
        return c, h, w
    return tuple(input_shape)  # type: ignore[return-value]


def to_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    return x.transpose(0, 3, 1, 2) if layout == "NHWC" else x


def from_nchw(y: np.ndarray, layout: str) -> np.ndarray:
    return np.ascontiguousarray(y.transpose(0, 2, 3, 1)) if layout == "NHWC" else y


def shape_from_chw(c: int, h: int, w: int, layout: str) -> tuple[int, int, int]:
    return (h, w, c) if layout == "NHWC" else (c, h, w)
