"""TensorFlow Lite models in and out: ``from_tflite`` reads a ``.tflite`` file into a model that
runs TFLite's own kernels (bit-exact int8) on every backend."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from xai_core.importers.tflite.model import TFLiteModel
from xai_core.importers.tflite.reader import TFLiteGraph, read_tflite

__all__ = ["TFLiteGraph", "TFLiteModel", "from_tflite", "read_tflite"]


def from_tflite(
    path: str | os.PathLike[str] | bytes,
    *,
    output_names: Sequence[str] | None = None,
    name: str | None = None,
    preprocessing: dict[str, Any] | None = None,
) -> TFLiteModel:
    """Read a ``.tflite`` model: full-integer int8 or float32.

    Parameters
    ----------
    path : path-like or bytes
        The ``.tflite`` file, or its bytes.
    output_names : sequence of str, optional
        Class names, one per output.
    name : str, optional
        Shown in reprs and reports.
    preprocessing : dict, optional
        What the inputs must look like (recorded, e.g. by :func:`from_teachable_machine`).

    Returns
    -------
    TFLiteModel
        Int8 models run TFLite's int8 kernels on ``edgetpu`` and, bit-identically, on every
        other backend; float models run in each backend's numerics.

    Raises
    ------
    ModelFormatError
        Not a TFLite file, a file compiled for the Edge TPU (use the un-compiled one), or an
        operator outside the supported list (the message names it and lists the supported).
    """
    return TFLiteModel(
        read_tflite(path), output_names=output_names, name=name, preprocessing=preprocessing
    )
