"""Native networks: layers with forward and backward passes on any backend, training, save/load.

A chain of layers is a :class:`Sequential`; any directed acyclic graph of layers is a
:class:`Graph` (see :mod:`xai_core.nn.graph` for how to build one node by node).

>>> from xai_core import nn
>>> net = nn.Sequential(
...     [nn.Reshape((1, 28, 28)), nn.Conv2D(8, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2),
...      nn.Flatten(), nn.Dense(10), nn.Softmax()],
...     input_shape=(784,),
... )
>>> net.fit(X, y, optimizer="adam", learning_rate=1e-3, batch_size=64, epochs=3)
>>> net.save("cnn.npz"); nn.load_model("cnn.npz")
"""

from xai_core.kernels.im2col import col2im, conv_output_size, im2col
from xai_core.nn import layers as _layers
from xai_core.nn.activations import ACTIVATIONS, Activation
from xai_core.nn.builders import cnn, mlp
from xai_core.nn.executor import Node, Record
from xai_core.nn.graph import Graph
from xai_core.nn.io import FORMAT_VERSION, LAYER_TYPES, load_model, save_model
from xai_core.nn.layer import Layer
from xai_core.nn.layers import *  # noqa: F403 - the layer classes, listed in layers.__all__
from xai_core.nn.losses import half_mean_squared_error, sigmoid_cross_entropy, softmax_cross_entropy
from xai_core.nn.network import Network
from xai_core.nn.optimizers import SGD, Adam
from xai_core.nn.sequential import Sequential
from xai_core.nn.sklearn import from_sklearn
from xai_core.nn.summary import Summary

__all__ = [
    "ACTIVATIONS",
    "Activation",
    "Adam",
    "FORMAT_VERSION",
    "Graph",
    "LAYER_TYPES",
    "Layer",
    "Network",
    "Node",
    "Record",
    "SGD",
    "Sequential",
    "Summary",
    "cnn",
    "col2im",
    "conv_output_size",
    "from_sklearn",
    "half_mean_squared_error",
    "im2col",
    "load_model",
    "mlp",
    "save_model",
    "sigmoid_cross_entropy",
    "softmax_cross_entropy",
    *_layers.__all__,
]
