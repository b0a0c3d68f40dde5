"""Helpers the sequence layers share: the two layouts of a series and their checks.

A series sample is ``(channels, steps)`` (``"NCW"``: PyTorch, ONNX) or ``(steps, channels)``
(``"NWC"``: Keras, TensorFlow); the batch axis is outside, as for every native tensor.
A 1-D convolution or pool runs as the 2-D one with a height of 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core.errors import ShapeError, ValidationError
from xai_core.validation import check_int

SEQUENCE_LAYOUTS = ("NCW", "NWC")


def check_layout(layout: Any) -> str:
    if layout not in SEQUENCE_LAYOUTS:
        raise ValidationError(f"layout must be 'NCW' or 'NWC'; got {layout!r}.")
    return layout


def series(input_shape: tuple[int, ...], layer: Any) -> tuple[int, int]:
    """``(channels, steps)`` of a per-sample series shape in the layer's layout."""
    if len(input_shape) != 2:
        want = "(channels, steps)" if layer.layout == "NCW" else "(steps, channels)"
        raise ShapeError(
            f"{type(layer).__name__} layer {layer.name!r} needs series of shape {want} per "
            f"sample; got {tuple(input_shape)}."
        )
    c, t = input_shape if layer.layout == "NCW" else input_shape[::-1]
    return int(c), int(t)


def shape_from_ct(c: int, t: int, layout: str) -> tuple[int, int]:
    return (c, t) if layout == "NCW" else (t, c)


def to_image(x: np.ndarray, layout: str) -> np.ndarray:
    """Rows of series as NCHW images of height 1: (n, channels, 1, steps)."""
    return (x.transpose(0, 2, 1) if layout == "NWC" else x)[:, :, None, :]


def from_image(y: np.ndarray, layout: str) -> np.ndarray:
    """The series rows of NCHW images of height 1 (n, channels, 1, steps)."""
    y = y[:, :, 0, :]
    return np.ascontiguousarray(y.transpose(0, 2, 1)) if layout == "NWC" else y


def as_int(value: Any, name: str, minimum: int = 1) -> int:
    """An int (or a 1-tuple of one, as Keras writes 1-D sizes)."""
    if isinstance(value, (tuple, list)):
        if len(value) != 1:
            raise ValidationError(f"{name} of a 1-D layer must be one int; got {value!r}.")
        value = value[0]
    return check_int(value, name, minimum)


def check_pads(padding: Any, name: str = "padding") -> Any:
    """``"valid"`` (0), ``"same"``, ``"causal"``, an int or ``(left, right)``, validated."""
    if padding == "valid":
        return [0, 0]
    if padding in ("same", "causal"):
        return padding
    if isinstance(padding, (tuple, list)):
        if len(padding) != 2:
            raise ValidationError(
                f"{name} must be an int, (left, right), 'valid', 'same' or 'causal'; got {padding!r}."
            )
        return [check_int(p, name, 0) for p in padding]
    p = check_int(padding, name, 0)
    return [p, p]


def resolve_pads(padding: Any, steps: int, kernel: int, stride: int, dilation: int = 1):
    """``(left, right)`` zero padding for a checked ``padding`` and ``steps`` input steps."""
    if padding == "causal":
        return dilation * (kernel - 1), 0
    if padding == "same":
        total = max((-(-steps // stride) - 1) * stride + (kernel - 1) * dilation + 1 - steps, 0)
        return total // 2, total - total // 2
    return int(padding[0]), int(padding[1])
