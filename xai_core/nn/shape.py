"""Layers that move data without arithmetic: Flatten, Reshape, Transpose, Identity, Dropout,
and Constant, a node with no input.

Shapes and permutations are per sample: the batch axis is never part of them.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from xai_core.errors import ShapeError, ValidationError
from xai_core.nn.layer import Layer
from xai_core.validation import check_number

__all__ = ["Flatten", "Reshape", "Transpose", "Identity", "Dropout", "Constant"]


class Flatten(Layer):
    """Flatten each sample: (n, *shape) -> (n, prod(shape)). No arithmetic."""

    kind: ClassVar[str] = "flatten"

    def compute_output_shape(self, input_shape):
        return (int(np.prod(input_shape)),)

    def apply(self, x, backend, record):
        return x.reshape(x.shape[0], -1)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        return (grad.reshape(grad.shape[0], *self.input_shape) if input_grad else None), {}


class Reshape(Layer):
    """Reshape each sample, e.g. flat MNIST rows (784,) to images (1, 28, 28). No arithmetic.

    Parameters
    ----------
    shape : tuple of int
        Per-sample target shape; one entry may be -1.
    name : str, optional
    """

    kind: ClassVar[str] = "reshape"

    def __init__(self, shape: tuple[int, ...], name: str | None = None) -> None:
        super().__init__(name)
        try:
            shape = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise ValidationError(f"shape must be a tuple of ints; got {shape!r}.") from None
        if sum(d == -1 for d in shape) > 1 or any(d < 1 and d != -1 for d in shape):
            raise ValidationError(f"shape must be positive ints with at most one -1; got {shape}.")
        self.shape = shape

    def compute_output_shape(self, input_shape):
        size = int(np.prod(input_shape))
        known = int(np.prod([d for d in self.shape if d != -1]))
        if -1 in self.shape:
            if size % known:
                raise ShapeError(f"cannot reshape samples of shape {input_shape} to {self.shape}.")
            return tuple(size // known if d == -1 else d for d in self.shape)
        if known != size:
            raise ShapeError(f"cannot reshape samples of shape {input_shape} to {self.shape}.")
        return self.shape

    def apply(self, x, backend, record):
        return x.reshape(x.shape[0], *self.output_shape)

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        return (grad.reshape(grad.shape[0], *self.input_shape) if input_grad else None), {}

    def get_config(self):
        return {"shape": list(self.shape)}


class Transpose(Layer):
    """Permute the axes of each sample: ``Transpose((1, 2, 0))`` turns NCHW into NHWC.

    Parameters
    ----------
    perm : tuple of int
        A permutation of ``range(len(sample shape))`` (no batch axis).
    name : str, optional
    """

    kind: ClassVar[str] = "transpose"

    def __init__(self, perm: tuple[int, ...], name: str | None = None) -> None:
        super().__init__(name)
        try:
            perm = tuple(int(p) for p in perm)
        except (TypeError, ValueError):
            raise ValidationError(f"perm must be a tuple of ints; got {perm!r}.") from None
        if sorted(perm) != list(range(len(perm))):
            raise ValidationError(f"perm must be a permutation of 0..{len(perm) - 1}; got {perm}.")
        self.perm = perm

    def compute_output_shape(self, input_shape):
        if len(input_shape) != len(self.perm):
            raise ShapeError(
                f"Transpose {self.perm} needs samples with {len(self.perm)} axes; got {input_shape}."
            )
        return tuple(input_shape[p] for p in self.perm)

    def apply(self, x, backend, record):
        return np.ascontiguousarray(x.transpose(0, *(p + 1 for p in self.perm)))

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        if not input_grad:
            return None, {}
        inverse = np.argsort(self.perm)
        return np.ascontiguousarray(grad.transpose(0, *(int(p) + 1 for p in inverse))), {}

    def get_config(self):
        return {"perm": list(self.perm)}


class Identity(Layer):
    """Its input, unchanged (ONNX ``Identity``). No arithmetic.

    Parameters
    ----------
    folded_into : str, optional
        Set when the node was a batch norm merged into the node of that name
        (:meth:`~xai_core.nn.Graph.fold_batch_norm`); kept so summaries and saved files say so.
    name : str, optional
    """

    kind: ClassVar[str] = "identity"

    def __init__(self, name: str | None = None, folded_into: str | None = None) -> None:
        super().__init__(name)
        if folded_into is not None and (not isinstance(folded_into, str) or not folded_into):
            raise ValidationError(
                f"folded_into must be a node name (a non-empty string); got {folded_into!r}."
            )
        self.folded_into = folded_into

    def apply(self, x, backend, record):
        return x

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        return (grad if input_grad else None), {}

    def get_config(self):
        return {"folded_into": self.folded_into} if self.folded_into is not None else {}

    def _describe(self):
        if self.folded_into is None:
            return super()._describe()
        return f"BatchNormalization folded into {self.folded_into!r} (identity)"


class Dropout(Identity):
    """Dropout, which at inference is the identity; ``rate`` is kept for the record.

    Parameters
    ----------
    rate : float, default=0.5
        The training drop probability, in [0, 1).
    name : str, optional
    """

    kind: ClassVar[str] = "dropout"

    def __init__(self, rate: float = 0.5, name: str | None = None) -> None:
        super().__init__(name)
        rate = check_number(rate, "rate")
        if not 0 <= rate < 1:
            raise ValidationError(f"rate must be in [0, 1); got {rate}.")
        self.rate = rate

    def get_config(self):
        return {"rate": self.rate}


class Constant(Layer):
    """A node without inputs whose output is a fixed array (an operand of Add, Multiply, ...).

    Parameters
    ----------
    value : array-like
        One sample's value; the output has a batch axis of 1, so it broadcasts against
        any batch in elementwise layers. Stored as the buffer ``value`` (saved, not
        trained), in the network's dtype. A floating-point array is copied once, keeping
        its dtype (a float32 weight of a float32 network is held once, not also as
        float64); integers and booleans become float64.
    name : str, optional
    """

    kind: ClassVar[str] = "constant"
    n_inputs: ClassVar[int] = 0

    def __init__(self, value: Any, name: str | None = None) -> None:
        super().__init__(name)
        try:
            value = np.array(value)
            if value.dtype.kind != "f":
                value = value.astype(np.float64)
        except (TypeError, ValueError):
            raise ValidationError(
                f"value must be an array of numbers; got {type(value).__name__}."
            ) from None
        if not np.all(np.isfinite(value)):
            raise ValidationError("value must be finite; it holds NaN or inf.")
        self._value = value

    @property
    def value(self) -> np.ndarray:
        """One sample's value: the stored buffer once built (its dtype the network's)."""
        return self.buffers.get("value", self._value)

    def build(self, input_shape, rng, dtype):
        self.input_shape = []
        self.buffers = {"value": self._value.astype(dtype, copy=False)}
        self.output_shape = tuple(self._value.shape)
        return self.output_shape

    def apply(self, x, backend, record):
        return self.buffers["value"][None]

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        return [], {}

    def get_config(self):
        return {"shape": list(self._value.shape)}

    @classmethod
    def from_config(cls, config: dict[str, Any], name: str | None = None) -> Constant:
        """A placeholder of the saved shape; loading sets ``value`` from the file."""
        shape = tuple(int(d) for d in config["shape"])
        return cls(np.zeros(shape), name=name)
