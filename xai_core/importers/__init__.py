"""Bring users' own models in (and out): each source becomes a model every explainer takes.

>>> net = xai.from_torch(module, example_batch)     # through ONNX, in memory
>>> net = xai.from_onnx("model.onnx")
>>> net = xai.from_keras("model.keras")             # or .h5, a TF.js model.json, a keras.Model
>>> q = xai.from_tflite("model_int8.tflite")        # TFLite's int8 kernels, bit-exact
>>> m = xai.from_teachable_machine("converted_tflite.zip")
>>> xai.to_tflite(xai.quantize(net, X), "model.tflite")
>>> xai.explain(module, X)                          # or a keras.Model, "model.onnx", ...

``import_model`` (:mod:`.direct`) is the one conversion every entry point that takes a
model makes: it imports a torch module, a Keras model or a model file once and keeps it.

PyTorch, ONNX and Keras become native graph networks (gradients on every backend); TFLite
files run TFLite's own kernels. The optional dependencies (onnx, torch, h5py, tflite,
ai-edge-litert) are imported only when a function runs: ``pip install
'xai-core[import,tflite]'``.
"""

from xai_core.importers.direct import import_model
from xai_core.importers.keras_import import SUPPORTED_KERAS_LAYERS, from_keras
from xai_core.importers.onnx_import import SUPPORTED_ONNX_OPS, from_onnx
from xai_core.importers.teachable import from_teachable_machine, to_teachable_machine
from xai_core.importers.tflite import from_tflite, to_tflite
from xai_core.importers.torch_import import from_torch

__all__ = [
    "SUPPORTED_KERAS_LAYERS",
    "SUPPORTED_ONNX_OPS",
    "from_keras",
    "from_onnx",
    "from_teachable_machine",
    "from_tflite",
    "from_torch",
    "import_model",
    "to_teachable_machine",
    "to_tflite",
]
