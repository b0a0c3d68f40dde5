"""TensorFlow Lite models in and out: ``from_tflite`` reads a ``.tflite`` file into a model that
runs TFLite's own kernels (bit-exact int8) on every backend.

The file format only: :mod:`.reader` reads a file into an :class:`~xai_core.int8.graph.TFLiteGraph`
and :mod:`.writer` writes one back. The graph, its kernels and the model that runs it are the
int8 runtime's (:mod:`xai_core.int8`); quantising a native network is
:func:`xai_core.int8.quantize.quantize`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from xai_core.importers.tflite.reader import read_tflite
from xai_core.int8.graph import TFLiteGraph
from xai_core.int8.model import TFLiteModel

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
    """Write a model as a ``.tflite`` file that LiteRT (and, for int8, the Edge TPU compiler) loads.

    Parameters
    ----------
    model : TFLiteModel, QuantizedModel or native network
        A model read by :func:`from_tflite`, one made by :func:`xai_core.quantize`, or a float
        native network: written as a float32 model, or quantised first when
        ``calibration_X`` is given.
    path : path-like
        Written atomically.
    calibration_X : array-like, optional
        Representative inputs: quantise a float network to full-integer int8 with them.

    Returns
    -------
    pathlib.Path
    """
    from xai_core.errors import CapabilityError
    from xai_core.importers.tflite.writer import write_tflite
    from xai_core.nn.network import Network

    graph = getattr(model, "graph", None)
    if isinstance(graph, TFLiteGraph):
        return write_tflite(graph, path)
    if not isinstance(model, Network):
        raise CapabilityError(
            f"to_tflite writes native networks and TFLite models; got {type(model).__name__}."
        )
    if calibration_X is not None:
        from xai_core.int8.quantize import quantize

        return write_tflite(quantize(model, calibration_X, progress=False).graph, path)
    from xai_core.int8.convert import build_int8_graph

    return write_tflite(build_int8_graph(model.fold_batch_norm(), None)[0], path)
