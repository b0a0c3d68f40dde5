"""TensorFlow Lite models in and out: ``from_tflite`` reads a ``.tflite`` file into a model that
runs TFLite's own kernels (bit-exact int8) on every backend."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from xai_core.importers.tflite.model import TFLiteModel
from xai_core.importers.tflite.reader import TFLiteGraph, read_tflite

__all__ = ["TFLiteGraph", "TFLiteModel", "from_tflite", "read_tflite", "to_tflite"]


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


def to_tflite(model: Any, path: str | os.PathLike[str], *, calibration_X: Any = None) -> Path:
    """Write an int8 model as a ``.tflite`` file that LiteRT (and the Edge TPU compiler) loads.

    Parameters
    ----------
    model : TFLiteModel, QuantizedModel or native network
        A model read by :func:`from_tflite`, one made by :func:`xai_core.quantize`, or a float
        native network, which is quantised first on ``calibration_X``.
    path : path-like
        Written atomically.
    calibration_X : array-like, optional
        Representative inputs, needed for a float network.

    Returns
    -------
    pathlib.Path
    """
    from xai_core.errors import CapabilityError
    from xai_core.importers.tflite.writer import write_tflite

    graph = getattr(model, "graph", None)
    if not isinstance(graph, TFLiteGraph):
        if calibration_X is None:
            raise CapabilityError(
                f"to_tflite writes int8 models; {type(model).__name__} is not one. Quantise it "
                "(xai.quantize(net, calibration_X)) or pass calibration_X= to do it here."
            )
        from xai_core.nn.quantize import quantize

        graph = quantize(model, calibration_X, progress=False).graph
    return write_tflite(graph, path)
