"""Sequential: a chain of layers, the simplest :class:`~xai_core.nn.network.Network`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xai_core.errors import ValidationError
from xai_core.nn.executor import Node
from xai_core.nn.layer import Layer
from xai_core.nn.network import DTYPES, Network
from xai_core.nn.shape import Reshape
from xai_core.nn.trainable import Trainable

__all__ = ["Sequential", "DTYPES"]


class Sequential(Trainable, Network):
    """A network: layers applied one after the other, on any backend.

    A chain is the special case of a :class:`~xai_core.nn.Graph`: node ``k`` reads the
    output of node ``k - 1`` (the first reads the input), and the same executor runs both.

    Parameters
    ----------
    layers : sequence of Layer
        E.g. ``[Dense(64), ReLU(), Dense(10), Softmax()]``. Unnamed layers are named
        ``"<type>_<k>"`` (``"dense_1"``, ``"relu_1"``); names must be unique.
    input_shape : tuple of int, optional
        Shape of one sample, e.g. ``(784,)`` or ``(1, 28, 28)``. When given the weights are
        created now; otherwise at the first :meth:`fit`.
    output_names : sequence of str, optional
        Names of the outputs (class names).
    seed : int, default=0
        Seed of the weight initialisation.
    dtype : {"float32", "float64"}, default="float32"
        dtype of the parameters; the default backend computes in it too.
    name : str, optional

    Attributes
    ----------
    layers : list of Layer
    input_shape : tuple of int or None
    n_outputs : int or None
        Width of the (flattened) output.
    classes_ : ndarray or None
        Class labels, set by :meth:`fit` (classification) or :func:`~xai_core.nn.from_sklearn`.
    history : pandas.DataFrame or None
        Loss (and accuracy) per epoch of the last :meth:`fit`.

    Notes
    -----
    ``backend=None`` in every method means ``CPUBackend(dtype=self.dtype)``; a name
    (``"tpu"``) or a :class:`~xai_core.backends.base.Backend` instance runs the same
    layers in that backend's numerics, and the backend counts the work.

    Examples
    --------
    >>> from xai_core import nn
    >>> net = nn.Sequential([nn.Dense(16), nn.ReLU(), nn.Dense(3), nn.Softmax()], input_shape=(4,))
    >>> net.predict(np.zeros((2, 4))).shape
    (2, 3)
    """

    _show_inputs = False

    def __init__(
        self,
        layers: Sequence[Layer],
        *,
        input_shape: Sequence[int] | None = None,
        output_names: Sequence[str] | None = None,
        seed: int = 0,
        dtype: Any = "float32",
        name: str | None = None,
    ) -> None:
        super().__init__(output_names=output_names, seed=seed, dtype=dtype, name=name)
        layers = list(layers)
        if not layers:
            raise ValidationError("layers must contain at least one Layer; got an empty list.")
        for i, layer in enumerate(layers):
            if not isinstance(layer, Layer) or layer.n_inputs != 1:
                raise ValidationError(
                    f"layers[{i}] must be a one-input Layer (Dense, Conv2D, ReLU, ...); got "
                    f"{type(layer).__name__}. Use nn.Graph for layers with several inputs."
                )
        if len({id(layer) for layer in layers}) != len(layers):
            raise ValidationError("layers must be distinct objects; the same layer appears twice.")
        taken = [layer.name for layer in layers if layer.name is not None]
        dupes = sorted({n for n in taken if taken.count(n) > 1 or n == self.input_name})
        if dupes:
            raise ValidationError(f"layer names must be unique; {dupes} appear more than once.")
        used = set(taken) | {self.input_name}
        previous = self.input_name
        for layer in layers:
            if layer.name is None:
                layer.name = self._auto_name(layer.kind, used)
                used.add(layer.name)
            self.nodes.append(Node(layer.name, layer, (previous,)))
            previous = layer.name
        if input_shape is not None:
            self.build(input_shape)

    def build(self, input_shape: Sequence[int]) -> Sequential:
        """Create every layer's parameters for a per-sample ``input_shape`` (from :attr:`seed`).

        Parameters
        ----------
        input_shape : tuple of int
            Shape of one sample.

        Returns
        -------
        Sequential
            ``self``, with fresh weights.
        """
        import numpy as np

        shape = self._check_shape(input_shape)
        rng = np.random.default_rng(self.seed)
        out = shape
        for layer in self.layers:
            out = layer.build(out, rng, self.dtype)
        self.input_shape = shape
        self._invalidate()
        self._require_built()
        return self

    @property
    def image_shape(self) -> tuple[int, ...] | None:
        """Shape of one input as an image, when the network reads images; else None.

        ``(height, width)`` for one channel, ``(channels, height, width)`` otherwise: the
        input shape itself when it has three axes, or the target of a leading
        :class:`Reshape` to three axes (a CNN over flattened pixels).
        """
        shape = self.input_shape
        if shape is not None and len(shape) != 3 and isinstance(self.layers[0], Reshape):
            shape = tuple(self.layers[0].shape)
        if shape is None or len(shape) != 3:
            return None
        return tuple(shape[1:]) if shape[0] == 1 else tuple(shape)
