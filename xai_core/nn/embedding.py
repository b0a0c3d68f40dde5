"""Embedding: integer token ids looked up in a table of vectors (torch ``nn.Embedding``,
Keras ``Embedding``, ONNX ``Gather`` of a weight table by an activation).

The input of each sample is a sequence of ids, of shape (seq_len,) (any shape works: one
vector per id). The forward pass is a row lookup, ``weight[ids]``; no arithmetic. The
backward pass gives the gradient of the table (each row the sum of the output gradients
where its id was looked up) and *no* input gradient: ids are not differentiable, so the
gradient a network returns at its input is zero, and attribution methods for token inputs
attribute to this layer's output instead (:mod:`xai_core.text`).

Ids arrive in the network's float dtype (a runner casts every batch); each must be a whole
number in ``[0, vocab_size)``, else :class:`~xai_core.errors.ValidationError` names the
first bad one.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from xai_core.errors import ValidationError
from xai_core.nn import _util
from xai_core.nn.layer import Layer
from xai_core.validation import check_int

__all__ = ["Embedding", "check_token_ids"]


def check_token_ids(ids: np.ndarray, vocab_size: int, name: str = "ids") -> np.ndarray:
    """The ids as int64, checked whole and in ``[0, vocab_size)``.

    Parameters
    ----------
    ids : ndarray of any shape
        Integer ids, or floats holding whole numbers (a runner's batch).
    vocab_size : int
    name : str, default="ids"
        The argument named in errors.

    Returns
    -------
    ndarray of int64, of the same shape
    """
    ids = np.asarray(ids)
    if ids.dtype.kind == "f":
        bad = ~np.isfinite(ids) | (ids != np.round(ids))
        if bad.any():
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValidationError(f"{name} must be whole token ids; got {ids[at]!r} at index {at}.")
    elif ids.dtype.kind not in "iub":
        raise ValidationError(f"{name} must be integer token ids; got dtype {ids.dtype}.")
    out = ids.astype(np.int64)
    bad = (out < 0) | (out >= vocab_size)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValidationError(
            f"{name} must lie in [0, {vocab_size}) (the vocabulary size); got {int(out[at])} "
            f"at index {at}."
        )
    return out


class Embedding(Layer):
    """A table of ``vocab_size`` vectors of ``dim`` entries, looked up by id.

    Parameters
    ----------
    vocab_size : int
        Number of rows of the table (ids run over ``0 .. vocab_size - 1``).
    dim : int
        Length of each vector.
    name : str, optional

    Attributes
    ----------
    weight : ndarray of shape (vocab_size, dim)

    Notes
    -----
    Input per sample: ids of any shape ``s`` (usually ``(seq_len,)``); output per sample:
    ``s + (dim,)``. Weights start normal with standard deviation 0.05 (Keras's uniform
    +-0.05 spread). The input gradient is zero (ids are not differentiable); the weight
    gradient adds each output gradient to the row of its id.
    """

    kind: ClassVar[str] = "embedding"

    def __init__(self, vocab_size: int, dim: int, name: str | None = None) -> None:
        super().__init__(name)
        self.vocab_size = check_int(vocab_size, "vocab_size")
        self.dim = check_int(dim, "dim")

    weight = _util.parameter("weight")

    def compute_output_shape(self, input_shape):
        return (*tuple(input_shape), self.dim)

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shapes of the parameters: the table."""
        return {"weight": (self.vocab_size, self.dim)}

    def build(self, input_shape, rng, dtype):
        out = super().build(input_shape, rng, dtype)
        shape = (self.vocab_size, self.dim)
        table = np.zeros(shape) if rng is None else rng.normal(0.0, 0.05, size=shape)
        self.params = {"weight": table.astype(dtype)}
        return out

    def apply(self, x: Any, backend: Any, record: dict | None) -> np.ndarray:
        ids = check_token_ids(x, self.vocab_size, f"the ids of Embedding {self.name!r}")
        if record is not None:
            record["ids"] = ids
        return np.take(self.weight, ids, axis=0)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        grads = {}
        if param_grads:
            ids = self._need(record, self)["ids"]

            def scatter(g: np.ndarray) -> np.ndarray:
                table = np.zeros(self.weight.shape, dtype=g.dtype)
                np.add.at(table, ids.reshape(-1), g.reshape(-1, self.dim))
                return table

            grads["weight"] = backend.elementwise(scatter, grad)
        gx = None
        if input_grad:
            gx = np.zeros(grad.shape[:-1], dtype=grad.dtype)
        return gx, grads

    def get_config(self):
        return {"vocab_size": self.vocab_size, "dim": self.dim}

    def _describe(self):
        return f"Embedding({self.vocab_size} ids -> {self.dim})"
