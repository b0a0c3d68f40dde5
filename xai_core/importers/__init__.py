"""Bring networks in from PyTorch, ONNX and Keras as native graph networks.

>>> net = xai.from_torch(module, example_batch)     # through ONNX, in memory
>>> net = xai.from_onnx("model.onnx")
>>> net = xai.from_keras("model.keras")             # or .h5, a TF.js model.json, a keras.Model

The optional dependencies (onnx, torch, h5py) are imported only when a function runs:
``pip install 'xai-core[import]'``.
"""

from xai_core.importers.keras_import import SUPPORTED_KERAS_LAYERS, from_keras
from xai_core.importers.onnx_import import SUPPORTED_ONNX_OPS, from_onnx
from xai_core.importers.torch_import import from_torch

__all__ = ["SUPPORTED_KERAS_LAYERS", "SUPPORTED_ONNX_OPS", "from_keras", "from_onnx", "from_torch"]
