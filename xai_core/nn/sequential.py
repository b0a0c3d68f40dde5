"""Sequential: a stack of layers that is a :class:`~xai_core.model.base.Model` with gradients."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from xai_core.backends.base import Backend
from xai_core.backends.cpu import CPUBackend
from xai_core.errors import CapabilityError, ShapeError, UnknownNameError, ValidationError
from xai_core.model.base import Model
from xai_core.nn.activations import Sigmoid, Softmax
from xai_core.nn.layer import Layer
from xai_core.nn.layers import Reshape
from xai_core.nn.summary import Summary
from xai_core.validation import check_array, check_positive_int, check_target

__all__ = ["Sequential"]

DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class Sequential(Model):
    """A network: layers applied one after the other, on any backend.

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

    capabilities: ClassVar[frozenset[str]] = frozenset({"predict", "gradient", "activations"})

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
        layers = list(layers)
        if not layers:
            raise ValidationError("layers must contain at least one Layer; got an empty list.")
        for i, layer in enumerate(layers):
            if not isinstance(layer, Layer):
                raise ValidationError(
                    f"layers[{i}] must be a Layer (Dense, Conv2D, ReLU, ...); got {type(layer).__name__}."
                )
        if len({id(layer) for layer in layers}) != len(layers):
            raise ValidationError("layers must be distinct objects; the same layer appears twice.")
        if np.dtype(dtype) not in DTYPES:
            raise ValidationError(f"dtype must be 'float32' or 'float64'; got {dtype!r}.")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ValidationError(f"seed must be an integer; got {seed!r}.")
        self.layers: list[Layer] = layers
        self._name_layers()
        self.dtype = np.dtype(dtype)
        self.seed = int(seed)
        self.name = name
        self.input_shape = None
        self.n_outputs = None
        self.output_shape: tuple[int, ...] | None = None
        self.classes_: np.ndarray | None = None
        self.history = None
        self.output_names = (
            tuple(str(n) for n in output_names) if output_names is not None else None
        )
        if input_shape is not None:
            self.build(input_shape)

    def _name_layers(self) -> None:
        taken = [layer.name for layer in self.layers if layer.name is not None]
        dupes = sorted({n for n in taken if taken.count(n) > 1})
        if dupes:
            raise ValidationError(f"layer names must be unique; {dupes} appear more than once.")
        used, counts = set(taken), {}
        for layer in self.layers:
            if layer.name is None:
                k = counts.get(layer.kind, 0)
                while True:
                    k += 1
                    candidate = f"{layer.kind}_{k}"
                    if candidate not in used:
                        break
                counts[layer.kind] = k
                layer.name = candidate
                used.add(candidate)

    # -- building ---------------------------------------------------------------------
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
        try:
            shape = tuple(int(d) for d in input_shape)
        except (TypeError, ValueError):
            raise ValidationError(
                f"input_shape must be a tuple of ints; got {input_shape!r}."
            ) from None
        if not shape or any(d < 1 for d in shape):
            raise ValidationError(
                f"input_shape must be positive ints, e.g. (784,); got {input_shape!r}."
            )
        rng = np.random.default_rng(self.seed)
        out = shape
        for layer in self.layers:
            out = layer.build(out, rng, self.dtype)
        self.input_shape = shape
        self.output_shape = out
        self.n_outputs = int(np.prod(out))
        if self.output_names is not None and len(self.output_names) != self.n_outputs:
            raise ShapeError(
                f"output_names has {len(self.output_names)} names for a network with "
                f"{self.n_outputs} outputs."
            )
        return self

    @property
    def image_shape(self) -> tuple[int, ...] | None:
        """Shape of one input as an image, when the network reads images; else None.

        ``(height, width)`` for one channel, ``(channels, height, width)`` otherwise: the
        input shape itself when it has three axes, or the target of a leading
        :class:`Reshape` to three axes (a CNN over flattened pixels).
        """
        shape = self.input_shape
        if (
            shape is not None
            and len(shape) != 3
            and self.layers
            and isinstance(self.layers[0], Reshape)
        ):
            shape = tuple(self.layers[0].shape)
        if shape is None or len(shape) != 3:
            return None
        return tuple(shape[1:]) if shape[0] == 1 else tuple(shape)

    @property
    def built(self) -> bool:
        """Whether the weights exist (the input shape is known)."""
        return self.input_shape is not None

    def _require_built(self) -> None:
        if not self.built:
            raise ValidationError(
                "the network has no weights yet: pass input_shape= to Sequential or call fit first."
            )

    def _backend(self, backend: Any) -> Backend:
        if backend is None:
            return CPUBackend(dtype=self.dtype)
        from xai_core.model.runner import get_backend

        be = get_backend(backend)
        if be.requires_quantized:
            raise CapabilityError(
                f"the {be.name!r} backend runs only int8-quantised models; "
                "call xai.quantize(net, calibration_X) first."
            )
        return be

    def _check_X(self, X: Any, backend: Backend, name: str = "X") -> np.ndarray:
        self._require_built()
        dtype = backend.dtype if backend.dtype in DTYPES else np.float32
        return check_array(X, name, feature_shape=self.input_shape, dtype=dtype)

    # -- the passes -------------------------------------------------------------------
    def forward(
        self, X: np.ndarray, backend: Any = None, *, cache: bool = False, stop: int | None = None
    ):
        """Run layers ``[0, stop)`` on an already validated batch.

        Parameters
        ----------
        X : ndarray of shape (n_samples, *input_shape)
        backend : Backend, optional
        cache : bool, default=False
            Keep what :meth:`backward` needs.
        stop : int, optional
            Number of layers to run; all by default.

        Returns
        -------
        ndarray of shape (n_samples, *output_shape of layer stop - 1)
        """
        backend = self._backend(backend)
        out = X
        for layer in self.layers[:stop]:
            out = layer.forward(out, backend, cache=cache)
        return out

    def backward(
        self,
        grad: np.ndarray,
        backend: Any = None,
        *,
        start: int | None = None,
        param_grads: bool = True,
        input_grad: bool = True,
    ) -> np.ndarray | None:
        """Back-propagate ``grad`` (d loss / d output of layer ``start - 1``) to the input.

        Parameters
        ----------
        grad : ndarray of shape (n_samples, *output_shape)
        backend : Backend, optional
        start : int, optional
            Number of layers the cached forward pass ran; all by default.
        param_grads : bool, default=True
            Fill each layer's ``grads``.
        input_grad : bool, default=True
            Compute d loss / d X (skipped in training, where only parameters matter).

        Returns
        -------
        ndarray of shape (n_samples, *input_shape) or None
        """
        backend = self._backend(backend)
        layers = self.layers[:start]
        first = 0
        if not input_grad:  # nothing below the first layer with parameters needs a gradient
            with_params = [i for i, layer in enumerate(layers) if layer.params]
            first = with_params[0] if with_params else len(layers)
        for i in range(len(layers) - 1, first - 1, -1):
            grad = layers[i].backward(
                grad, backend, param_grads=param_grads, input_grad=input_grad or i > first
            )
        return grad if input_grad else None

    def clear_cache(self) -> None:
        """Drop what the layers kept for backward."""
        for layer in self.layers:
            layer.clear_cache()

    @staticmethod
    def _chunks(n: int, batch_size: int) -> Iterator[slice]:
        for start in range(0, n, batch_size):
            yield slice(start, min(start + batch_size, n))

    # -- the Model interface ----------------------------------------------------------
    def predict(self, X: Any, backend: Any = None, *, batch_size: int = 4096) -> np.ndarray:
        """The network's outputs (probabilities when it ends in Softmax).

        Parameters
        ----------
        X : array-like of shape (n_samples, *input_shape)
        backend : str or Backend, optional
            Default ``CPUBackend(dtype=self.dtype)``.
        batch_size : int, default=4096
            Rows per forward pass, to bound memory.

        Returns
        -------
        ndarray of shape (n_samples, n_outputs), the backend's dtype
        """
        backend = self._backend(backend)
        X = self._check_X(X, backend)
        batch_size = check_positive_int(batch_size, "batch_size")
        if len(X) <= batch_size:
            return self.forward(X, backend).reshape(len(X), -1)
        parts = [
            self.forward(X[s], backend).reshape(-1, self.n_outputs)
            for s in self._chunks(len(X), batch_size)
        ]
        return np.concatenate(parts, axis=0)

    def predict_checked(self, X: np.ndarray, backend: Any) -> np.ndarray:
        """The outputs for rows the runner has validated: one forward pass, no second check."""
        return self.forward(X, self._backend(backend)).reshape(len(X), -1)

    def gradient(
        self, X: Any, target: Any, backend: Any = None, *, batch_size: int = 4096
    ) -> np.ndarray:
        """d output[target_i] / d X_i for every row, in one batched backward pass per chunk.

        Parameters
        ----------
        X : array-like of shape (n_samples, *input_shape)
        target : int or array-like of int of shape (n_samples,)
            Output index per row.
        backend : str or Backend, optional
        batch_size : int, default=4096

        Returns
        -------
        ndarray of shape (n_samples, *input_shape), the backend's dtype
        """
        backend = self._backend(backend)
        if not backend.supports_gradients:
            raise CapabilityError(
                f"the {backend.name!r} backend cannot compute gradients (inference only)."
            )
        X = self._check_X(X, backend)
        target = check_target(target, len(X), self.n_outputs)
        batch_size = check_positive_int(batch_size, "batch_size")
        parts = []
        try:
            for s in self._chunks(len(X), batch_size):
                out = self.forward(X[s], backend, cache=True)
                seed = np.zeros((out.shape[0], self.n_outputs), dtype=out.dtype)
                seed[np.arange(out.shape[0]), target[s]] = 1
                parts.append(self.backward(seed.reshape(out.shape), backend, param_grads=False))
        finally:
            self.clear_cache()
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    def activations(
        self, X: Any, layer: int | str, backend: Any = None, *, batch_size: int = 4096
    ) -> np.ndarray:
        """Outputs of one layer.

        Parameters
        ----------
        X : array-like of shape (n_samples, *input_shape)
        layer : int or str
            Index (negative counts from the end) or name (``"dense_1"``).
        backend : str or Backend, optional
        batch_size : int, default=4096

        Returns
        -------
        ndarray of shape (n_samples, *that layer's output_shape)
        """
        index = self.layer_index(layer)
        backend = self._backend(backend)
        X = self._check_X(X, backend)
        batch_size = check_positive_int(batch_size, "batch_size")
        parts = [
            self.forward(X[s], backend, stop=index + 1) for s in self._chunks(len(X), batch_size)
        ]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    # -- scikit-learn-like conveniences -----------------------------------------------
    def predict_proba(self, X: Any, backend: Any = None) -> np.ndarray:
        """Class probabilities of shape (n_samples, n_classes).

        For a network ending in Softmax these are its outputs; for one ending in a single
        Sigmoid output, the columns ``[1 - p, p]``.
        """
        last = self.layers[-1]
        out = self.predict(X, backend)
        if isinstance(last, Softmax):
            return out
        if isinstance(last, Sigmoid) and self.n_outputs == 1:
            return np.concatenate([1 - out, out], axis=1)
        raise CapabilityError(
            f"predict_proba needs a network ending in Softmax (or one Sigmoid output); "
            f"this one ends in {type(last).__name__}. Use predict()."
        )

    def predict_classes(self, X: Any, backend: Any = None) -> np.ndarray:
        """Predicted class label per row, of shape (n_samples,): ``classes_[argmax]``."""
        proba = self.predict_proba(X, backend)
        index = proba.argmax(axis=1)
        return self.classes_[index] if self.classes_ is not None else index

    def score(self, X: Any, y: Any, backend: Any = None) -> float:
        """Accuracy for a classifier (ends in Softmax or Sigmoid), else the R² of the outputs."""
        if isinstance(self.layers[-1], (Softmax, Sigmoid)) and (
            isinstance(self.layers[-1], Softmax) or self.n_outputs == 1
        ):
            pred = self.predict_classes(X, backend)
            y = np.asarray(y).reshape(-1)
            if y.shape != pred.shape:
                raise ShapeError(f"y must have shape ({len(pred)},); got {np.shape(y)}.")
            return float(np.mean(pred == y))
        from sklearn.metrics import r2_score

        pred = self.predict(X, backend).astype(np.float64)
        return float(r2_score(np.asarray(y, dtype=np.float64).reshape(len(pred), -1), pred))

    def fit(
        self,
        X: Any,
        y: Any,
        *,
        problem: str = "classification",
        learning_rate: float = 0.03,
        regularization: str | None = None,
        regularization_rate: float = 0.0,
        batch_size: int = 10,
        epochs: int = 100,
        optimizer: str = "sgd",
        momentum: float = 0.0,
        validation_split: float | None = None,
        validation_data: tuple[Any, Any] | None = None,
        early_stopping: bool = False,
        patience: int = 10,
        seed: int = 0,
        backend: Any = None,
        progress: bool = True,
        callbacks: Any = None,
    ) -> Sequential:
        """Train with mini-batch gradient descent, using the TensorFlow Playground's knobs.

        Training continues from the current weights (build a new network, or call
        :meth:`build` again, to start over). The defaults are the Playground's.

        Parameters
        ----------
        X : array-like of shape (n_samples, *input_shape)
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Class labels (classification) or targets (regression).
        problem : {"classification", "regression"}, default="classification"
            Classification needs a network ending in Softmax (or one Sigmoid output) and
            minimises cross-entropy, fused with the softmax for stability; regression
            minimises half the mean squared error of the outputs.
        learning_rate : float, default=0.03
            Step size, in (0, 10] (the Playground offers 1e-5 to 10).
        regularization : {None, "L1", "L2"}, default=None
            Penalty on the weights (not the biases): L1 ``sum |w|``, L2 ``sum w**2 / 2``.
            As in the Playground, an L1 step that would flip a weight's sign sets it to 0.
        regularization_rate : float, default=0.0
            Weight of the penalty, in [0, 10].
        batch_size : int, default=10
        epochs : int, default=100
            Passes over the training data.
        optimizer : {"sgd", "adam"}, default="sgd"
        momentum : float, default=0.0
            Momentum of SGD, in [0, 1).
        validation_split : float, optional
            Fraction of rows held out (at random, from ``seed``) to report ``val_loss``;
            0.1 by default when ``early_stopping`` and no ``validation_data``, else 0.
        validation_data : (X_val, y_val), optional
            Held-out data; overrides ``validation_split``.
        early_stopping : bool, default=False
            Stop when ``val_loss`` has not improved for ``patience`` epochs and restore
            the weights of the best epoch.
        patience : int, default=10
        seed : int, default=0
            Seed of the shuffling and the validation split.
        backend : str or Backend, optional
            Where the passes run (default ``CPUBackend(dtype=self.dtype)``).
        progress : bool, default=True
            Show a progress bar over epochs.
        callbacks : callable or sequence of callables, optional
            Each is called as ``cb(net, record)`` after every epoch, ``record`` the epoch's
            row of :attr:`history` as a dict (epoch, loss, ...); one returning True stops
            training after that epoch (a live view, such as ``xai.playground_view``).

        Returns
        -------
        Sequential
            ``self``, with :attr:`history` (a DataFrame: epoch, loss, accuracy, val_loss,
            val_accuracy) and, for classification, :attr:`classes_`.
        """
        from xai_core.nn.training import fit

        return fit(
            self,
            X,
            y,
            problem=problem,
            learning_rate=learning_rate,
            regularization=regularization,
            regularization_rate=regularization_rate,
            batch_size=batch_size,
            epochs=epochs,
            optimizer=optimizer,
            momentum=momentum,
            validation_split=validation_split,
            validation_data=validation_data,
            early_stopping=early_stopping,
            patience=patience,
            seed=seed,
            backend=backend,
            progress=progress,
            callbacks=callbacks,
        )

    def save(self, path: Any) -> None:
        """Write the architecture and weights to one ``.npz`` file; see :func:`~xai_core.nn.load_model`."""
        from xai_core.nn.io import save_model

        save_model(self, path)

    # -- layers and weights -----------------------------------------------------------
    def layer_index(self, layer: int | str) -> int:
        """Index of a layer given by index (negative counts from the end) or name."""
        n = len(self.layers)
        if isinstance(layer, (int, np.integer)) and not isinstance(layer, bool):
            if not -n <= layer < n:
                raise ValidationError(
                    f"layer index {layer} is out of range for a network of {n} layers."
                )
            return int(layer) % n
        if isinstance(layer, str):
            for i, lay in enumerate(self.layers):
                if lay.name == layer:
                    return i
        raise UnknownNameError("layer", layer, [lay.name for lay in self.layers])

    def __getitem__(self, layer: int | str) -> Layer:
        return self.layers[self.layer_index(layer)]

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self) -> Iterator[Layer]:
        return iter(self.layers)

    def get_weights(self) -> list[np.ndarray]:
        """Copies of every parameter, layer by layer, in each layer's ``params`` order."""
        return [p.copy() for layer in self.layers for p in layer.params.values()]

    def set_weights(self, weights: Sequence[np.ndarray]) -> None:
        """Set every parameter from a list shaped like :meth:`get_weights`."""
        slots = [(layer, k) for layer in self.layers for k in layer.params]
        if len(weights) != len(slots):
            raise ShapeError(f"weights must be a list of {len(slots)} arrays; got {len(weights)}.")
        for (layer, key), w in zip(slots, weights):
            w = np.asarray(w)
            if w.shape != layer.params[key].shape:
                raise ShapeError(
                    f"{layer.name}.{key} must have shape {layer.params[key].shape}; got {w.shape}."
                )
            layer.params[key] = w.astype(self.dtype, copy=True)

    @property
    def n_params(self) -> int:
        """Total trainable parameters."""
        return sum(layer.n_params for layer in self.layers)

    @property
    def macs_per_sample(self) -> int:
        """Multiply-accumulates of one sample's forward pass."""
        return sum(layer.macs_per_sample() for layer in self.layers)

    def summary(self) -> Summary:
        """Layers with output shapes, parameters and MACs per sample (prints as a table)."""
        self._require_built()
        rows = tuple(
            {
                "name": layer.name,
                "layer": layer._describe(),
                "output_shape": layer.output_shape,
                "params": layer.n_params,
                "macs": layer.macs_per_sample(),
            }
            for layer in self.layers
        )
        return Summary(rows, self.input_shape, self.n_params, self.macs_per_sample)

    def __repr__(self) -> str:
        head = f"Sequential(input_shape={self.input_shape}"
        if self.name:
            head += f", name={self.name!r}"
        body = "".join(f"\n    {layer!r}," for layer in self.layers)
        return f"{head}, layers=[{body}\n])"
