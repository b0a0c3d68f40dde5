"""The layer protocol every network layer follows.

A layer is a small object with a forward and a backward pass. Both take the backend and
send every matrix product, elementwise operation and reduction to it, so the same layer
runs in fp32 on the CPU, in bf16 on the TPU, and is counted by each.

The protocol, in full:

``build(input_shape, rng, dtype) -> output_shape``
    Given the shape of one sample, create the parameters (if the layer has any) and return
    the shape of one output sample. Called once by :class:`~xai_core.nn.Sequential`.
``forward(x, backend, *, cache=True) -> y``
    ``x`` has shape (n_samples, *input_shape); ``y`` has shape (n_samples, *output_shape).
    With ``cache=True`` the layer keeps what its backward pass needs.
``backward(grad, backend, *, param_grads=True, input_grad=True) -> grad_x``
    ``grad`` is d loss / d y for the last cached forward pass. Fills :attr:`grads` (same
    keys and shapes as :attr:`params`) when ``param_grads``; returns d loss / d x when
    ``input_grad`` (else ``None``).
``params``, ``grads``
    Dicts of parameter name -> ndarray. Parameters are also attributes (``layer.weight``).
``get_config() -> dict``
    JSON-serialisable constructor arguments, for saving.

A layer holds the cache of one forward pass at a time: do not run one layer object from
two threads at once.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

__all__ = ["Layer"]


class Layer:
    """Base class of network layers. See the module docstring for the protocol.

    Parameters
    ----------
    name : str, optional
        Unique within a network; :class:`~xai_core.nn.Sequential` names unnamed layers
        ``"<type>_<k>"`` (``"dense_1"``, ``"relu_2"``).

    Attributes
    ----------
    params : dict of str to ndarray
        Trainable parameters, in the network's dtype.
    grads : dict of str to ndarray
        Gradients of the last backward pass, keyed like :attr:`params`.
    input_shape, output_shape : tuple of int or None
        Per-sample shapes, known once built.
    """

    #: Prefix of automatic names ("dense" -> "dense_1").
    kind: ClassVar[str] = "layer"
    #: Parameters that L1 / L2 regularisation applies to (weights, not biases).
    regularized: ClassVar[tuple[str, ...]] = ()

    def __init__(self, name: str | None = None) -> None:
        if name is not None and (not isinstance(name, str) or not name):
            from xai_core.errors import ValidationError

            raise ValidationError(f"name must be a non-empty string; got {name!r}.")
        self.name = name
        self.params: dict[str, np.ndarray] = {}
        self.grads: dict[str, np.ndarray] = {}
        self.input_shape: tuple[int, ...] | None = None
        self.output_shape: tuple[int, ...] | None = None

    # -- protocol ---------------------------------------------------------------------
    def build(
        self, input_shape: tuple[int, ...], rng: np.random.Generator, dtype: Any
    ) -> tuple[int, ...]:
        """Create parameters for a per-sample ``input_shape``; return the per-sample output shape."""
        self.input_shape = tuple(int(d) for d in input_shape)
        self.output_shape = self.compute_output_shape(self.input_shape)
        return self.output_shape

    def compute_output_shape(self, input_shape: tuple[int, ...]) -> tuple[int, ...]:
        """Per-sample output shape for a per-sample input shape (raise if incompatible)."""
        return input_shape

    def forward(self, x: np.ndarray, backend: Any, *, cache: bool = True) -> np.ndarray:
        """Output of shape (n_samples, *output_shape) for ``x`` of shape (n_samples, *input_shape)."""
        raise NotImplementedError

    def backward(
        self, grad: np.ndarray, backend: Any, *, param_grads: bool = True, input_grad: bool = True
    ) -> np.ndarray | None:
        """d loss / d x from ``grad`` = d loss / d y; fills :attr:`grads` when ``param_grads``."""
        raise NotImplementedError

    def clear_cache(self) -> None:
        """Drop what the last forward pass kept for backward."""

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

    def _need_cache(self, attr: str) -> Any:
        value = getattr(self, attr, None)
        if value is None:
            from xai_core.errors import ValidationError

            raise ValidationError(
                f"layer {self.name or type(self).__name__!r}: backward needs a forward pass with "
                "cache=True first."
            )
        return value
