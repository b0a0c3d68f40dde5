"""Every layer class, in one namespace (the layers live in modules by concern).

Every matrix product goes through ``backend.matmul`` (a convolution is lowered by
:func:`~xai_core.nn.im2col` to one product per group), every elementwise operation
through ``backend.elementwise`` and every reduction through ``backend.reduce``.
"""

from __future__ import annotations

from xai_core.nn.activations import (
    Clip,
    HardSwish,
    LeakyReLU,
    Linear,
    ReLU,
    ReLU6,
    Sigmoid,
    Softmax,
    Tanh,
)
from xai_core.nn.compare import ArgExtreme, Compare, Hardmax, Maximum, Minimum
from xai_core.nn.conv import Conv2D, DepthwiseConv2D
from xai_core.nn.conv1d import Conv1D
from xai_core.nn.conv_transpose import Conv2DTranspose
from xai_core.nn.dense import Dense
from xai_core.nn.elementwise import (
    Abs,
    Celu,
    Cos,
    Elu,
    Erf,
    Exp,
    Gelu,
    HardSigmoid,
    Log,
    Mish,
    Neg,
    Power,
    PRelu,
    Reciprocal,
    Selu,
    Sin,
    Softplus,
    Softsign,
    Sqrt,
)
from xai_core.nn.elementwise_math import (
    Acos,
    Acosh,
    Asin,
    Asinh,
    Atan,
    Atanh,
    CastTo,
    Ceil,
    Cosh,
    Floor,
    IsInf,
    IsNaN,
    Round,
    Shrink,
    Sign,
    Sinh,
    Swish,
    Tan,
    ThresholdedReLU,
)
from xai_core.nn.embedding import Embedding
from xai_core.nn.gather import Gather
from xai_core.nn.layer_norm import LayerNormalization
from xai_core.nn.lrn import LocalResponseNormalization
from xai_core.nn.merge import (
    Add,
    Concatenate,
    Divide,
    Exponentiate,
    Multiply,
    Remainder,
    Subtract,
)
from xai_core.nn.nan_guard import ReplaceNaN
from xai_core.nn.normalization import BatchNormalization
from xai_core.nn.pooling import AvgPool2D, GlobalAveragePooling2D, MaxPool2D, ZeroPadding2D
from xai_core.nn.pooling1d import AvgPool1D, GlobalAveragePooling1D, GlobalMaxPooling1D, MaxPool1D
from xai_core.nn.recurrent import GRU, LSTM
from xai_core.nn.reduce import LogSoftmax, Reduce
from xai_core.nn.shape import Constant, Dropout, Flatten, Identity, Reshape, Transpose
from xai_core.nn.tensor_ops import Expand, MatMul, Slice, Where

__all__ = [
    "MaxPool1D",
    "LSTM",
    "GlobalMaxPooling1D",
    "GlobalAveragePooling1D",
    "GRU",
    "Conv1D",
    "AvgPool1D",
    "ArgExtreme",
    "Compare",
    "Hardmax",
    "Maximum",
    "Minimum",
    "Acos",
    "Acosh",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "CastTo",
    "Ceil",
    "Cosh",
    "Floor",
    "IsInf",
    "IsNaN",
    "Round",
    "Shrink",
    "Sign",
    "Sinh",
    "Swish",
    "Tan",
    "ThresholdedReLU",
    "Abs",
    "Add",
    "AvgPool2D",
    "BatchNormalization",
    "Clip",
    "Concatenate",
    "Constant",
    "Celu",
    "Conv2D",
    "Conv2DTranspose",
    "Cos",
    "Dense",
    "DepthwiseConv2D",
    "Divide",
    "Dropout",
    "Elu",
    "Embedding",
    "Erf",
    "Exp",
    "Expand",
    "Flatten",
    "Gather",
    "Gelu",
    "GlobalAveragePooling2D",
    "HardSigmoid",
    "HardSwish",
    "Identity",
    "LayerNormalization",
    "LocalResponseNormalization",
    "LeakyReLU",
    "Linear",
    "Log",
    "LogSoftmax",
    "MatMul",
    "MaxPool2D",
    "Mish",
    "Multiply",
    "Neg",
    "PRelu",
    "Power",
    "ReLU",
    "ReLU6",
    "Reciprocal",
    "Reduce",
    "Remainder",
    "Exponentiate",
    "ReplaceNaN",
    "Reshape",
    "Selu",
    "Sigmoid",
    "Sin",
    "Slice",
    "Softmax",
    "Softplus",
    "Softsign",
    "Sqrt",
    "Subtract",
    "Tanh",
    "Transpose",
    "Where",
    "ZeroPadding2D",
]
