"""A TFLite graph in plain Python: its tensors (with their quantisation and constants) and operators.

:class:`TFLiteGraph` is what every part of the int8 runtime shares: the reader
(:func:`xai_core.importers.tflite.read_tflite`) fills one from a ``.tflite`` file, the
converter (:func:`xai_core.int8.convert.build_int8_graph`) from a native network, the
writer (:func:`xai_core.importers.tflite.writer.write_tflite`) turns one back into a file,
and :class:`~xai_core.int8.model.TFLiteModel` runs one on a backend.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "TENSOR_TYPES",
    "OperatorInfo",
    "TFLiteGraph",
    "TensorInfo",
    "operator_label",
    "tensor_label",
]

#: TFLite TensorType -> numpy dtype (the types a supported model may hold).
TENSOR_TYPES: dict[int, np.dtype] = {
    0: np.dtype(np.float32),
    1: np.dtype(np.float16),
    2: np.dtype(np.int32),
    3: np.dtype(np.uint8),
    4: np.dtype(np.int64),
    6: np.dtype(np.bool_),
    7: np.dtype(np.int16),
    9: np.dtype(np.int8),
    10: np.dtype(np.float64),
}


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of the graph.

    Attributes
    ----------
    index : int
    name : str
    shape : tuple of int
        As stored (batch first; TFLite image tensors are NHWC).
    dtype : numpy.dtype
    scale : ndarray of float32 or None
        Quantisation scales: one (per tensor) or one per channel along ``quantized_dimension``.
    zero_point : ndarray of int64 or None
    quantized_dimension : int
    data : ndarray or None
        The constant value, for weights and other constant tensors.
    """

    index: int
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    scale: np.ndarray | None = None
    zero_point: np.ndarray | None = None
    quantized_dimension: int = 0
    data: np.ndarray | None = None

    @property
    def is_quantized(self) -> bool:
        return self.scale is not None and self.dtype in (np.dtype(np.int8), np.dtype(np.uint8))


@dataclass(frozen=True)
class OperatorInfo:
    """One operator: its builtin name (``"CONV_2D"``), tensor indices and options."""

    index: int
    op: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: dict[str, Any] = field(default_factory=dict)
    custom_code: str | None = None
    #: Name of the builtin options table (``"Conv2DOptions"``), for writing the file again.
    options_type: str | None = None
    #: A custom operator's options, as the file stores them (their layout is the operator's).
    custom_options: bytes = b""

    @property
    def kind(self) -> str:
        """What the kernels and signatures are keyed by: the custom code, else the builtin."""
        return self.custom_code or self.op


@dataclass(frozen=True)
class TFLiteGraph:
    """The first subgraph of a ``.tflite`` model."""

    tensors: tuple[TensorInfo, ...]
    operators: tuple[OperatorInfo, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    description: str = ""
    path: str | None = None

    @property
    def op_names(self) -> list[str]:
        return [op.op for op in self.operators]

    @property
    def where(self) -> str:
        """The file's name, or ``"the .tflite bytes"``: how messages name the source."""
        return Path(self.path).name if self.path else "the .tflite bytes"

    def tensor_label(self, index: int) -> str:
        """``tensor 3 ('dense/MatMul')``: how messages name a tensor."""
        return tensor_label(self.tensors[index])


def tensor_label(t: TensorInfo) -> str:
    """``tensor 3 ('dense/MatMul')``: how messages name a tensor."""
    return f"tensor {t.index} ({t.name!r})"


def operator_label(op: OperatorInfo) -> str:
    """``operator 2 (TANH)``: how messages name an operator."""
    return f"operator {op.index} ({op.op})"
