"""The layer protocol every network layer follows.

A layer is a small object with a forward and a backward pass. Both take the backend and
send every matrix product, elementwise operation and reduction to it, so the same layer
runs in fp32 on the CPU, in bf16 on the TPU, and is counted by each.

The protocol a network runs (stateless: what backward needs lives in a per-call record):

``build(input_shape, rng, dtype) -> output_shape``
    Given the per-sample shape of the input (a list of shapes for a layer with several
    inputs, :attr:`n_inputs` ``!= 1``), create the parameters and return the per-sample
    output shape. Called once by the network when the node is added (or built). With
    ``rng=None`` nothing is drawn: weights start at zero (the caller sets them next).
``apply(x, backend, record) -> y``
    ``x`` has shape (n_samples, *input_shape) (a list of such arrays for several inputs);
    ``y`` has shape (n_samples, *output_shape). ``record`` is a fresh ``dict`` owned by
    this call, or ``None`` when no backward pass will follow; the layer stores in it what
    :meth:`vjp` needs. A layer never keeps per-call state on itself.
``vjp(grad, backend, record, *, param_grads=True, input_grad=True) -> (grad_x, grads)``
    ``grad`` is d loss / d y of the call that filled ``record``. Returns d loss / d x (a
    list for several inputs; ``None`` when not ``input_grad``) and a dict of parameter
    gradients keyed like :attr:`params` (empty when not ``param_grads``).
``params``, ``buffers``
    Dicts of name -> ndarray: trainable parameters (also attributes, ``layer.weight``)
    and constants that are saved but not trained (a batch norm's running statistics).
``get_config() -> dict``
    JSON-serialisable constructor arguments, for saving.

Because a layer object holds no per-call state, one network may run from many threads
at once. The older single-call conveniences :meth:`Layer.forward` (``cache=True``) and
:meth:`Layer.backward` keep the record of the last call of the *current thread* and fill
:attr:`grads`; they exist for tests and interactive use.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import numpy as np

from xai_core.nn._local import ThreadLocalRecord

__all__ = ["Layer"]


class Layer(ThreadLocalRecord):
    """Base class of network layers. See the module docstring for the protocol.

    Parameters
    ----------
    name : str, optional
        Unique within a network; networks name unnamed layers ``"<type>_<k>"``
        (``"dense_1"``, ``"relu_2"``).

    Attributes
    ----------
    params : dict of str to ndarray
        Trainable parameters, in the network's dtype.
    buffers : dict of str to ndarray
        Saved, untrained constants (running statistics, constant operands).
    grads : dict of str to ndarray
        Gradients of the last :meth:`backward` call (the convenience API only).
    input_shape, output_shape : tuple of int or None
        Per-sample shapes, known once built (``input_shape`` is a list of shapes for a
        layer with several inputs).
    """

    #: Prefix of automatic names ("dense" -> "dense_1").
    kind: ClassVar[str] = "layer"
    #: Parameters that L1 / L2 regularisation applies to (weights, not biases).
    regularized: ClassVar[tuple[str, ...]] = ()
    #: Number of inputs: 1, 0 (a constant) or None (any number, at least 1).
    n_inputs: ClassVar[int | None] = 1
    #: Whether :meth:`vjp` takes ``needs=`` (one bool per input: whether the backward walk
    #: needs its gradient), so that a layer of several inputs skips the products of the
    #: gradients nobody reads (a constant operand's).
    takes_input_needs: ClassVar[bool] = False

    def __init__(self, name: str | None = None) -> None:
        if name is not None and (not isinstance(name, str) or not name):
            from xai_core.errors import ValidationError

            raise ValidationError(f"name must be a non-empty string; got {name!r}.")
        self.name = name
        self.params: dict[str, np.ndarray] = {}
        self.buffers: dict[str, np.ndarray] = {}
        self.grads: dict[str, np.ndarray] = {}
        self.input_shape: Any = None
        self.output_shape: tuple[int, ...] | None = None
        self._local = threading.local()

    # -- protocol ---------------------------------------------------------------------
    def build(self, input_shape: Any, rng: np.random.Generator, dtype: Any) -> tuple[int, ...]:
        """Create parameters for a per-sample ``input_shape``; return the per-sample output shape."""
        if self.n_inputs == 1:
            self.input_shape = tuple(int(d) for d in input_shape)
        else:
            self.input_shape = [tuple(int(d) for d in s) for s in input_shape]
        self.output_shape = tuple(self.compute_output_shape(self.input_shape))
        return self.output_shape

    def compute_output_shape(self, input_shape: Any) -> tuple[int, ...]:
        """Per-sample output shape for a per-sample input shape (raise if incompatible)."""
        return input_shape

    def _legacy(self) -> bool:
        """Whether a subclass implements the older stateful protocol (forward / backward)."""
        return type(self).forward is not Layer.forward and type(self).apply is Layer.apply

    def apply(self, x: Any, backend: Any, record: dict | None) -> np.ndarray:
        """Output of shape (n_samples, *output_shape); fills ``record`` when it is a dict.

        A layer that overrides only the older ``forward(x, backend, *, cache)`` still runs
        here (keeping its cache on itself, so one thread at a time).
        """
        if self._legacy():
            return self.forward(x, backend, cache=record is not None)
        raise NotImplementedError

    def vjp(
        self,
        grad: np.ndarray,
        backend: Any,
        record: dict | None,
        *,
        param_grads: bool = True,
        input_grad: bool = True,
    ) -> tuple[Any, dict[str, np.ndarray]]:
        """``(d loss / d x, {param: d loss / d param})`` from ``grad`` = d loss / d y."""
        if type(self).backward is not Layer.backward:
            gx = self.backward(grad, backend, param_grads=param_grads, input_grad=input_grad)
            return gx, (dict(self.grads) if param_grads else {})
        raise NotImplementedError

    def set_params(self, **arrays: Any) -> Layer:
        """Set parameters or buffers from arrays of their current shapes (cast to their dtype).

        Parameters
        ----------
        **arrays : array-like
            ``weight=..., bias=...`` (any of :attr:`params` and :attr:`buffers`).

        Returns
        -------
        Layer
            ``self``.
        """
        from xai_core.errors import ShapeError, UnknownNameError, ValidationError

        if self.output_shape is None:
            raise ValidationError(
                f"layer {self.name!r} is not built yet: add it to a network first."
            )
        for key, value in arrays.items():
            store = self.params if key in self.params else self.buffers
            if key not in store:
                raise UnknownNameError(
                    f"parameter of {self.name!r}", key, list(self.params) + list(self.buffers)
                )
            try:
                arr = np.array(value, dtype=store[key].dtype, copy=True)
            except (TypeError, ValueError) as exc:
                raise ValidationError(
                    f"{self.name}.{key} must be an array of numbers; got {type(value).__name__}."
                ) from exc
            if arr.shape != store[key].shape:
                raise ShapeError(
                    f"{self.name}.{key} must have shape {store[key].shape}; got {arr.shape}."
                )
            if not np.all(np.isfinite(arr)):
                raise ValidationError(f"{self.name}.{key} must be finite; it holds NaN or inf.")
            store[key] = arr
        return self

    # -- single-call conveniences (per thread) ----------------------------------------
    def forward(self, x: Any, backend: Any, *, cache: bool = True) -> np.ndarray:
        """:meth:`apply` keeping this thread's record for :meth:`backward` when ``cache``."""
        record: dict | None = {} if cache else None
        y = self.apply(x, backend, record)
        self._local.record = record
        return y

    def backward(
        self, grad: np.ndarray, backend: Any, *, param_grads: bool = True, input_grad: bool = True
    ) -> Any:
        """:meth:`vjp` of this thread's last :meth:`forward`; fills :attr:`grads`."""
        record = getattr(self._local, "record", None)
        if record is None:
            from xai_core.errors import ValidationError

            raise ValidationError(
                f"layer {self.name or type(self).__name__!r}: backward needs a forward pass with "
                "cache=True first."
            )
        gx, grads = self.vjp(grad, backend, record, param_grads=param_grads, input_grad=input_grad)
        if param_grads:
            self.grads = grads
        return gx

    def clear_cache(self) -> None:
        """Drop this thread's record of the last :meth:`forward`."""
        self._local.record = None

    def _need_cache(self, attr: str) -> Any:
        """The attribute a layer of the older protocol cached, or a clear error."""
        value = getattr(self, attr, None)
        if value is None:
            self._need(None, self)
        return value

    def get_config(self) -> dict[str, Any]:
        """Constructor arguments other than ``name``, JSON-serialisable."""
        return {}

    # -- description ------------------------------------------------------------------
    @property
    def n_params(self) -> int:
        """Number of trainable parameters."""
        return int(sum(p.size for p in self.params.values()))

    def macs_per_sample(self) -> int:
        """Multiply-accumulates of one sample's forward pass (0 for layers without matmuls)."""
        return 0

    def _describe(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"

    def __repr__(self) -> str:
        text = self._describe()
        return f"{self.name}: {text}" if self.name else text

    def _set_param(self, key: str, value: np.ndarray) -> None:
        self.params[key] = value

    @staticmethod
    def _need(record: dict | None, layer: Layer) -> dict:
        if record is None or not record:
            from xai_core.errors import ValidationError

            raise ValidationError(
                f"layer {layer.name or type(layer).__name__!r}: backward needs a forward pass with "
                "cache=True first."
            )
        return record
