"""ModelRunner: a model on a backend. Predictions, gradients and activations in bounded chunks."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core.backends.base import Backend
from xai_core.errors import CapabilityError, ValidationError
from xai_core.model.base import Model, gradients_on
from xai_core.plugin.resolve import backends_with, get_backend, get_backend_for, methods_within
from xai_core.validation import check_array, check_positive_int, check_target

if TYPE_CHECKING:
    from xai_core.model.paths import StraightPaths
    from xai_core.nn.hidden import LayerGradient

__all__ = ["ModelRunner", "get_backend", "predicted_class"]


def predicted_class(outputs: np.ndarray) -> np.ndarray:
    """The predicted output of each row: the largest, or 0 when there is one output.

    Parameters
    ----------
    outputs : ndarray of shape (n_samples, n_outputs)
        Finite model outputs (checked by the caller: ``argmax`` of a row with a NaN is the NaN's index).

    Returns
    -------
    ndarray of int64 of shape (n_samples,)
    """
    if outputs.shape[1] == 1:
        return np.zeros(len(outputs), np.int64)
    return np.argmax(outputs, axis=1).astype(np.int64)


#: Rows per chunk at most, and elements of one layer's output a chunk may hold at most
#: (128 MiB of float32): the default ``batch_size`` of :class:`ModelRunner`.
MAX_BATCH_ROWS = 4096
ACTIVATION_ELEMENTS = 1 << 25


def default_batch_size(model: Any) -> int:
    """:data:`MAX_BATCH_ROWS`, or fewer where a native network's largest layer output per row
    times the rows would pass :data:`ACTIVATION_ELEMENTS`."""
    nodes = getattr(model, "nodes", None) if getattr(model, "runs_on_backend", False) else None
    largest = max((math.prod(shape) for shape in _output_shapes(nodes or ())), default=1)
    return max(2, min(MAX_BATCH_ROWS, ACTIVATION_ELEMENTS // max(largest, 1)))


def _output_shapes(nodes: Any) -> list[tuple[int, ...]]:
    shapes = []
    for node in nodes:
        shape = getattr(node.layer, "output_shape", None)
        if isinstance(shape, tuple) and all(isinstance(d, int) for d in shape):
            shapes.append(shape)
    return shapes


class ModelRunner:
    """A model on a backend.

    Parameters
    ----------
    model : Model, torch.nn.Module, keras.Model, str, path, estimator or callable
        Anything :func:`xai_core.import_model` takes: a torch module, a Keras model or a
        model file is imported (once) as a native network; anything else is taken as
        :func:`xai_core.as_model` takes it.
    backend : str or Backend, default="cpu"
        Where the model runs: a Backend, or a registered name resolved here, once, by
        :func:`~xai_core.plugin.resolve.get_backend_for`; the runner then holds the
        instance. ``"cpu"`` runs a float64 network on the float64 CPU.
    batch_size : int, optional
        Rows per chunk, so memory stays bounded however many rows are passed. By default
        4096, fewer for a native network whose largest value per row is large: each chunk
        then holds at most :data:`ACTIVATION_ELEMENTS` elements of any one layer's output
        (41 rows of 224 x 224 images for a ResNet, whose stem makes 64 x 112 x 112 values
        per row).
    example : array-like of shape (n_samples, *input_shape), optional
        Rows the model will run on: needed to import a torch module, which is traced on
        the first of them and takes their sample shape as its input shape.

    Notes
    -----
    A runner over a native network may be used from many threads at once: the network's
    passes keep their state in per-call records and the backend counts under a lock.

    Examples
    --------
    >>> runner = xai.ModelRunner(net, backend="tpu")
    >>> runner.predict(X).shape
    (100, 10)
    >>> runner.counters["cycles"]
    """

    def __init__(
        self,
        model: Any,
        backend: str | Backend = "cpu",
        *,
        batch_size: int | None = None,
        example: Any = None,
    ) -> None:
        if isinstance(model, Model):
            self.model: Model = model
        else:  # the one conversion, above this floor (xai_core.importers.direct)
            from xai_core.importers.direct import import_model

            self.model = import_model(model, example)
        self.backend: Backend = get_backend_for(self.model, backend)
        self.batch_size = (
            default_batch_size(self.model)
            if batch_size is None
            else check_positive_int(batch_size, "batch_size")
        )
        if self.backend.requires_quantized and not self.model.is_quantized and self.is_native:
            raise CapabilityError(
                f"the {self.backend.name!r} backend runs only int8-quantised models; "
                "call xai.quantize(net, calibration_X) first."
            )

    @property
    def is_native(self) -> bool:
        """Whether the model runs its layers on the backend (a black box runs on the host)."""
        return self.model.runs_on_backend

    @property
    def capabilities(self) -> frozenset[str]:
        """The model's capabilities less what the backend cannot do (a float network's
        gradients on an int8 device; an int8 model's straight-through gradients stay)."""
        caps = set(self.model.capabilities)
        if not gradients_on(self.model, self.backend):
            caps.discard("gradient")
        return frozenset(caps)

    @property
    def counters(self) -> dict[str, float]:
        """The backend's counters since the last :meth:`reset_counters`."""
        return self.backend.counters

    def reset_counters(self) -> None:
        """Zero the backend's counters."""
        self.backend.reset_counters()

    @property
    def n_outputs(self) -> int | None:
        """Width of the model's output, once known."""
        return self.model.n_outputs

    @property
    def input_dtype(self) -> np.dtype:
        """The dtype inputs are given to the model in: float64 on a float64 backend, else float32."""
        backend = self.backend
        if getattr(self, "_dtype_of", None) is not backend:  # worked out once per backend
            wide = getattr(backend, "dtype", None) == np.float64
            self._input_dtype = np.dtype(np.float64 if wide else np.float32)
            self._dtype_of = backend
        return self._input_dtype

    def check_X(self, X: Any, name: str = "X") -> np.ndarray:
        """Validate ``X`` against the model's input shape; return a float array.

        NaN (a missing value) passes for a model that handles it
        (:attr:`~xai_core.model.base.Model.allow_nan`); infinity never does.
        """
        missing_ok = bool(getattr(self.model, "allow_nan", False))
        X = check_array(
            X,
            name,
            feature_shape=self.model.input_shape,
            dtype=self.input_dtype,
            allow_nan=missing_ok,
        )
        if missing_ok and np.isinf(X).any():
            first = tuple(int(i) for i in np.argwhere(np.isinf(X))[0])
            raise ValidationError(
                f"{name} contains infinity (first at index {first}); a missing value is NaN."
            )
        return X

    def _chunks(self, n: int):
        for start in range(0, n, self.batch_size):
            yield slice(start, min(start + self.batch_size, n))

    def _batch(self, fn: Any, x: np.ndarray) -> np.ndarray:
        """``fn(x)`` as one batch of the backend (a pod shards its rows over its devices)."""
        self.backend.begin_batch(x)
        out = fn(x)
        self.backend.end_batch(out)
        return out

    def predict(self, X: Any) -> np.ndarray:
        """Model outputs.

        Parameters
        ----------
        X : array-like of shape (n_samples, *input_shape)

        Returns
        -------
        ndarray of shape (n_samples, n_outputs)

        Raises
        ------
        ModelOutputError
            The model returned NaN or infinity (the rows are named); methods that check
            outputs themselves call :meth:`predict_validated`.
        """
        from xai_core.attribution.guard import check_outputs  # (guard imports this module)

        X = self.check_X(X)
        parts = [
            self._batch(lambda x: self.model.predict_checked(x, self.backend), X[s])
            for s in self._chunks(len(X))
        ]
        return check_outputs(np.concatenate(parts, axis=0), "ModelRunner.predict")

    def predict_validated(self, X: np.ndarray) -> np.ndarray:
        """:meth:`predict` for rows built from inputs this runner has already checked.

        An explainer validates its rows (and background) once per explanation with
        :meth:`check_X`; the many batches it then assembles from them (masked samples,
        perturbations) skip the per-call checks and are only cast to the runner's dtype.

        Parameters
        ----------
        X : ndarray of shape (n_samples, *input_shape)
            Finite values of the model's input shape.

        Returns
        -------
        ndarray of shape (n_samples, n_outputs)
        """
        X = np.asarray(X, dtype=self.input_dtype)
        predict, backend = self.model.predict_checked, self.backend
        if len(X) <= self.batch_size:  # one batch, as _batch runs it (called often: inlined)
            backend.begin_batch(X)
            out = predict(X, backend)
            backend.end_batch(out)
            return out
        parts = [
            self._batch(lambda x: predict(x, self.backend), X[s]) for s in self._chunks(len(X))
        ]
        return np.concatenate(parts, axis=0)

    def gradient(self, X: Any, target: Any) -> np.ndarray:
        """Gradient of ``output[target]`` with respect to the input, computed on the backend.

        Parameters
        ----------
        X : array-like of shape (n_samples, *input_shape)
        target : int or array-like of shape (n_samples,)
            Output index per row.

        Returns
        -------
        ndarray of shape (n_samples, *input_shape)
        """
        self.require("gradient")
        X = self.check_X(X)
        n_out = self.model.n_outputs
        target = check_target(
            target, len(X), n_out if n_out is not None else np.iinfo(np.int64).max
        )
        gradient = self._gradient_pass()
        parts = [
            self._batch(lambda x, t=target[s]: gradient(x, t), X[s]) for s in self._chunks(len(X))
        ]
        return np.concatenate(parts, axis=0)

    def gradient_validated(
        self, X: np.ndarray, target: np.ndarray, *, relu_rule: str = "gradient"
    ) -> np.ndarray:
        """:meth:`gradient` for points built from rows this runner has already checked.

        Parameters
        ----------
        X : ndarray of shape (n_samples, *input_shape)
            Finite values of the model's input shape (IG's path points, SmoothGrad's
            noisy copies).
        target : ndarray of int64 of shape (n_samples,)
            Valid output indices.
        relu_rule : {"gradient", "guided", "deconvnet"}, default="gradient"
            How gradients pass through the network's ReLU layers: their derivative, guided
            backpropagation's rule or deconvolution's
            (:data:`xai_core.nn.executor.RELU_RULES`); a native network's only.

        Returns
        -------
        ndarray of shape (n_samples, *input_shape)
        """
        self.require("gradient")
        X = np.asarray(X, dtype=self.input_dtype)
        if relu_rule != "gradient":
            value = self._layered().input_name
            return self.layer_gradient_validated(X, target, value, relu_rule=relu_rule).gradient
        gradient = self._gradient_pass()
        parts = [
            self._batch(lambda x, t=target[s]: gradient(x, t), X[s]) for s in self._chunks(len(X))
        ]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    def _gradient_pass(self) -> Any:
        """``(x, target) -> gradient`` for one batch: fused for a multilayer perceptron on a
        backend with :attr:`~xai_core.Backend.exact_operands` (:func:`xai_core.nn.fused.
        network_gradient`), else the model's own backward pass."""
        from xai_core.nn.fused import network_gradient

        fused = network_gradient(self.model, self.backend)
        if fused is not None:
            return fused
        return lambda x, t: self.model.gradient(x, t, backend=self.backend)

    def straight_paths(
        self, X: np.ndarray, baselines: np.ndarray, *, fast: bool = True
    ) -> StraightPaths:
        """Straight paths from ``baselines`` to the rows ``X``, planned once: IG's fast path.

        The outputs at the paths' ends and weighted integrals of the gradient along them,
        for integrated gradients and the methods built on it. On a float
        :class:`~xai_core.nn.Sequential` whose first linear layer comes before any
        nonlinearity, on a backend with :attr:`~xai_core.Backend.exact_operands`, that
        layer's products are made once per row and baseline instead of once per path point
        (:class:`~xai_core.model.paths.AffinePaths`); otherwise every path point goes
        through :meth:`gradient_validated` (:class:`~xai_core.model.paths.StraightPaths`).
        Both compute the same quantity, to the backend dtype's rounding, with every product
        on the backend and counted by it.

        Parameters
        ----------
        X : ndarray of shape (n_samples, *input_shape)
            Rows this runner has checked (:meth:`check_X`).
        baselines : ndarray of shape (1 or n_samples, n_baselines, *input_shape)
            Shared by every row (first axis 1) or one set per row, checked as ``X``.
        fast : bool, default=True
            False always takes the general plan (to compare the two).

        Returns
        -------
        StraightPaths
            With ``outputs(target)``, ``predicted()`` and ``integral(which, target,
            alphas, weights, chunk=..., bar=...)``; see :mod:`xai_core.model.paths`.

        Examples
        --------
        >>> paths = runner.straight_paths(X, np.zeros((1, 1, *X.shape[1:]), X.dtype))
        >>> alphas, weights = np.linspace(0, 1, 33)[1:], np.full(32, 1 / 32)
        >>> values = paths.integral(None, target, alphas, weights, chunk=1024)
        >>> f_x, f_b = paths.outputs(target)   # values.sum(axis=1) ~ f_x - f_b
        """
        from xai_core.model.paths import plan_paths

        self.require("gradient")
        return plan_paths(self, X, baselines, fast=fast)

    def check_finite(self, values: np.ndarray, *, what: str = "outputs", of: str = "X") -> None:
        """Check values computed outside :meth:`predict` and :meth:`gradient` as their outputs are.

        For planned passes (:meth:`straight_paths`) that compute outputs or gradients
        themselves. A plain runner checks nothing, as its :meth:`predict` checks nothing;
        the runner :func:`xai_core.explain` hands a method raises
        :class:`~xai_core.errors.ModelOutputError` naming the rows.

        Parameters
        ----------
        values : ndarray of shape (n, ...)
            One row per row of ``of``.
        what : {"outputs", "gradients"}, default="outputs"
        of : str, default="X"
            What the rows are rows of: ``"X"`` (the explained rows) or another name
            (``"the baselines"``).
        """

    def activations(self, X: Any, layer: int | str) -> np.ndarray:
        """Outputs of one layer (index or name), of shape (n_samples, *layer_output_shape)."""
        self.require("activations")
        X = self.check_X(X)
        parts = [
            self._batch(lambda x: self.model.activations(x, layer, backend=self.backend), X[s])
            for s in self._chunks(len(X))
        ]
        return np.concatenate(parts, axis=0)

    # -- hidden layers ----------------------------------------------------------------
    def _layered(self) -> Any:
        """The model, if it is a native network with layers and gradients here, else raise."""
        self.require("gradient")
        self.require("activations")
        if not hasattr(self.model, "layer_gradient_checked"):
            raise CapabilityError(
                f"{self.model!r} has no hidden layers to attribute to: layer methods need a "
                "native network (xai.nn, or a torch, Keras or ONNX model imported as one)."
            )
        return self.model

    def layer_value(
        self, layer: int | str, attribute_to_layer_input: bool = False, *, replaced: bool = False
    ) -> str:
        """The value a ``layer=`` option names (:meth:`xai_core.nn.Network.layer_value`).

        Parameters
        ----------
        layer : int or str
            A node, by index or name, as ``net.summary()`` lists them.
        attribute_to_layer_input : bool, default=False
            Its input instead of its output.
        replaced : bool, default=False
            Whether the value will be fed (``layer_values=``).

        Returns
        -------
        str
            The name of a node, or of the network's input.

        Raises
        ------
        CapabilityError
            The model has no layers (a black box, an int8 model) or no gradients on this
            backend.
        UnknownNameError
            An unknown layer name; the message lists the network's nodes.
        """
        return self._layered().layer_value(layer, attribute_to_layer_input, replaced=replaced)

    def value_shape(self, value: str) -> tuple[int, ...]:
        """Per-row shape of a value :meth:`layer_value` named."""
        return self._layered().value_shape(value)

    def layer_gradient_validated(
        self,
        X: np.ndarray,
        target: np.ndarray,
        value: str,
        *,
        layer_values: np.ndarray | None = None,
        neuron: Any = None,
        relu_rule: str = "gradient",
    ) -> LayerGradient:
        """A hidden value and the gradient of ``output[target]`` at it, for checked rows.

        In chunks of :attr:`batch_size` rows, each one batch of the backend: one recorded
        forward pass and a backward walk stopping at the value
        (:meth:`xai_core.nn.Network.layer_gradient`).

        Parameters
        ----------
        X : ndarray of shape (n_samples, *input_shape)
            Rows this runner has checked, or points built from them.
        target : ndarray of int64 of shape (n_samples,)
        value : str
            From :meth:`layer_value`.
        layer_values : ndarray of shape (n_samples, *value shape), optional
            Fed in place of the value's own.
        neuron : tuple of int, optional
            A unit of the value whose gradient with respect to ``X`` is returned too.
        relu_rule : {"gradient", "guided", "deconvnet"}, default="gradient"

        Returns
        -------
        LayerGradient
            ``activations``, ``gradient`` (n_samples, *value shape), ``output`` (n_samples,),
            ``input_gradient`` (n_samples, *input_shape) or None.
        """
        from xai_core.nn.hidden import LayerGradient

        net = self._layered()
        X = np.asarray(X, dtype=self.input_dtype)
        if layer_values is not None:
            layer_values = np.asarray(layer_values, dtype=self.input_dtype)

        def one(s: slice) -> LayerGradient:
            x = X[s]
            self.backend.begin_batch(x)  # one batch of the backend, as _batch runs one
            out = net.layer_gradient_checked(
                x,
                target[s],
                value,
                self.backend,
                layer_values=None if layer_values is None else layer_values[s],
                neuron=neuron,
                relu_rule=relu_rule,
            )
            self.backend.end_batch(out.gradient)
            return out

        parts = [one(s) for s in self._chunks(len(X))]
        if len(parts) == 1:
            return parts[0]
        return LayerGradient(
            *(None if p[0] is None else np.concatenate(p, axis=0) for p in zip(*parts))
        )

    def require(self, capability: str) -> None:
        """Raise :class:`CapabilityError` if the model on this backend lacks ``capability``."""
        if capability in self.capabilities:
            return
        what = capability if capability.endswith("s") else f"{capability}s"
        if capability in self.model.capabilities:
            with_it = self.backends_with(capability)
            raise CapabilityError(
                f"the {self.backend.name!r} backend cannot compute {what} (inference only); "
                f"use one of: {', '.join(with_it)}."
            )
        if self.model.is_quantized:
            raise CapabilityError(
                f"{self.model!r} is an int8 inference-only model: it has no {what}. Compute "
                "them on the float network it was quantised from, on one of: "
                f"{', '.join(self.backends_with(capability))}."
            )
        black_box_methods = methods_within(frozenset({"predict"}))
        raise CapabilityError(
            f"{self.model!r} cannot compute {what}: it is a black box. Use a native network "
            "(xai.nn.Sequential, xai.from_sklearn; a torch module, Keras model or model file "
            "passed itself, not in xai.BlackBoxModel, is imported as one: xai.from_torch, "
            "xai.from_keras, xai.from_onnx, xai.from_tflite) or a method that needs only "
            "predictions: "
            f"{', '.join(black_box_methods) or '(none installed)'}."
        )

    @staticmethod
    def backends_with(capability: str) -> list[str]:
        """Names of the registered backends that can compute ``capability`` (:func:`~xai_core.plugin.resolve.backends_with`)."""
        return backends_with(capability)

    def __repr__(self) -> str:
        return f"ModelRunner({self.model!r}, backend={self.backend!r})"
