"""PyTorch modules and Keras models recognised without importing either library.

A torch module can only exist once ``torch`` is imported, so it is recognised through
``sys.modules``; a Keras model by its class's bases. Used by :func:`xai_core.import_model`
(which imports them) and by :class:`~xai_core.BlackBoxModel` (which runs them on the host,
predictions only).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["host_function", "is_keras_model", "is_torch_module"]

#: Top-level packages whose ``Model`` class is a Keras model (Keras 3, tf.keras, tf_keras).
_KERAS_PACKAGES = frozenset({"keras", "tf_keras", "tensorflow"})


def is_torch_module(obj: Any) -> bool:
    """Whether ``obj`` is a ``torch.nn.Module`` (a Keras model on the torch backend is one too)."""
    torch = sys.modules.get("torch")
    nn = getattr(torch, "nn", None)
    return nn is not None and isinstance(obj, nn.Module)


def is_keras_model(obj: Any) -> bool:
    """Whether ``obj`` is a Keras model (``keras.Model``, a ``Sequential`` or functional one)."""
    return any(
        cls.__name__ == "Model" and cls.__module__.partition(".")[0] in _KERAS_PACKAGES
        for cls in type(obj).__mro__
    )


def host_function(obj: Any) -> Callable[[Any], np.ndarray] | None:
    """A function of a NumPy batch that runs the torch module or Keras model ``obj``.

    The torch module runs in eval mode (its mode is restored after each call), without
    gradients, on float32 tensors on the device of its first parameter; the Keras model
    through ``predict(X, verbose=0)``. Anything else: ``None``.

    Returns
    -------
    callable or None
        Maps an array of shape (n_samples, *input_shape) to an ndarray of outputs.
    """
    if is_keras_model(obj):  # first: on the torch backend a Keras model is a torch module

        def run_keras(X: Any) -> np.ndarray:
            return np.asarray(obj.predict(np.asarray(X, dtype=np.float32), verbose=0))

        return run_keras
    if is_torch_module(obj):
        import torch

        def run_torch(X: Any) -> np.ndarray:
            first = next(obj.parameters(), None)
            device = first.device if first is not None else "cpu"
            batch = torch.from_numpy(np.array(X, dtype=np.float32)).to(device)
            was_training = obj.training
            obj.eval()
            try:
                with torch.no_grad():
                    out = obj(batch)
            finally:
                obj.train(was_training)
            return out.detach().cpu().numpy()

        return run_torch
    return None
