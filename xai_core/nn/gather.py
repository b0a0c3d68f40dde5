"""Gather: entries of each sample picked along one axis by constant indices (ONNX ``Gather``).

ViT and DeiT read their class token with ``x[:, 0]``, which exports as a ``Gather`` of an
activation by a constant index. The forward pass moves data only; the backward pass
places the output gradient back at the indices it came from, adding where an index is
picked more than once: one ``backend.elementwise`` over the output gradient.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from xai_core.errors import ShapeError, ValidationError
from xai_core.nn.layer import Layer

__all__ = ["Gather"]


class Gather(Layer):
    """``np.take(sample, indices, axis)`` of each sample.

    Parameters
    ----------
    axis : int
        Per-sample axis (0 is the first axis after the batch).
    indices : int or array-like of int
        Constant indices, any shape (a scalar removes the axis); negative ones count from
        the end, as in ONNX.
    name : str, optional

    Notes
    -----
    Output per-sample shape: ``shape[:axis] + indices.shape + shape[axis + 1:]``.
    """

    kind: ClassVar[str] = "gather"

    def __init__(self, axis: int, indices: Any, name: str | None = None) -> None:
        super().__init__(name)
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise ValidationError(f"axis must be an integer; got {axis!r}.")
        self.axis = int(axis)
        idx = np.asarray(indices)
        if idx.dtype.kind not in "iu" and not (
            idx.dtype.kind == "f" and np.all(idx == np.round(idx))
        ):
            raise ValidationError(f"indices must be integers; got {indices!r}.")
        self.indices = idx.astype(np.int64)

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        if not 0 <= self.axis < len(shape):
            raise ShapeError(f"Gather {self.name!r}: axis {self.axis} of samples of shape {shape}.")
        size = shape[self.axis]
        if np.any(self.indices < -size) or np.any(self.indices >= size):
            raise ShapeError(
                f"Gather {self.name!r}: indices {self.indices.tolist()} outside axis "
                f"{self.axis} of size {size}."
            )
        return (*shape[: self.axis], *self.indices.shape, *shape[self.axis + 1 :])

    def _positive(self) -> np.ndarray:
        size = self.input_shape[self.axis]
        return np.where(self.indices < 0, self.indices + size, self.indices)

    def apply(self, x, backend, record):
        return np.take(np.asarray(x), self._positive(), axis=self.axis + 1)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        if not input_grad:
            return None, {}
        n, a, idx = grad.shape[0], self.axis + 1, self._positive().reshape(-1)
        k = self.indices.ndim
        # the gathered axes flattened to one, then added back at their indices
        g = grad.reshape(n, *grad.shape[1:a], idx.size, *grad.shape[a + k :])

        def scatter(values: np.ndarray) -> np.ndarray:
            out = np.zeros((n, *self.input_shape), dtype=values.dtype)
            index = (slice(None),) * a + (idx,)
            np.add.at(out, index, values)
            return out

        return backend.elementwise(scatter, g), {}

    def get_config(self):
        return {"axis": self.axis, "indices": self.indices.tolist()}
