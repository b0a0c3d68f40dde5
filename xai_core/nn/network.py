"""What every native network shares: the Model interface over the executor's nodes.

:class:`Network` is the base of :class:`~xai_core.nn.Graph` and
:class:`~xai_core.nn.Sequential`. It runs its :attr:`~Network.nodes` with
:mod:`xai_core.nn.executor` and offers predictions, gradients, activations of any node,
weights and a summary.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from xai_core.backends.base import Backend
from xai_core.backends.cpu import CPUBackend
from xai_core.errors import CapabilityError, ShapeError, UnknownNameError, ValidationError
from xai_core.model.base import Model
from xai_core.nn._local import ThreadLocalRecord
from xai_core.nn.activations import Sigmoid, Softmax
from xai_core.nn.executor import (
    Node,
    Plan,
    Record,
    plan,
    run_backward,
    run_forward,
    run_outputs,
)
from xai_core.nn.hidden import LayerGradient, layer_gradient, neuron_index
from xai_core.nn.layer import Layer
from xai_core.nn.summary import Summary
from xai_core.validation import check_array, check_positive_int, check_target

__all__ = ["Network", "Node", "DTYPES"]

DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class Network(Model, ThreadLocalRecord):
    """Base class of native networks; see :class:`~xai_core.nn.Graph` for building one.

    Attributes
    ----------
    nodes : list of Node
        ``(name, layer, inputs)`` in topological order.
    input_name : str
        Name by which nodes read the network's input.
    input_shape : tuple of int or None
    dtype : numpy.dtype
    output_names : tuple of str or None
    classes_ : ndarray or None
    """

    capabilities: ClassVar[frozenset[str]] = frozenset({"predict", "gradient", "activations"})
    runs_on_backend: ClassVar[bool] = True
    input_name: str = "input"
    _show_inputs: ClassVar[bool] = True

    def __init__(
        self,
        *,
        output_names: Sequence[str] | None = None,
        seed: int = 0,
        dtype: Any = "float32",
        name: str | None = None,
    ) -> None:
        if np.dtype(dtype) not in DTYPES:
            raise ValidationError(f"dtype must be 'float32' or 'float64'; got {dtype!r}.")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ValidationError(f"seed must be an integer; got {seed!r}.")
        self.nodes: list[Node] = []
        self.dtype = np.dtype(dtype)
        self.seed = int(seed)
        self.name = name
        self.input_shape: tuple[int, ...] | None = None
        self.classes_: np.ndarray | None = None
        self.history = None
        self.output_names = (
            tuple(str(n) for n in output_names) if output_names is not None else None
        )
        self._local = threading.local()
        self._plans: dict[str, Plan] = {}

    # -- structure --------------------------------------------------------------------
    @property
    def layers(self) -> list[Layer]:
        """The layers of :attr:`nodes`, in topological order."""
        return [node.layer for node in self.nodes]

    @property
    def output(self) -> str:
        """Name of the output node."""
        return self.nodes[-1].name

    @property
    def outputs(self) -> tuple[str, ...]:
        """Names of the output nodes (:class:`~xai_core.nn.Graph` may have several)."""
        return (self.output,)

    @property
    def inputs(self) -> tuple[str, ...]:
        """Names of the inputs a caller feeds (:class:`~xai_core.nn.Graph` may have several)."""
        return (self.input_name,)

    @property
    def series_order(self) -> str | None:
        """``"ct"`` (channels, steps) or ``"tc"`` (steps, channels) when the input is a series
        (a layer reading it declares one: a 1-D convolution or pool, an LSTM, a GRU), else
        None (:mod:`xai_core.series`)."""
        if self.input_shape is None or len(self.input_shape) != 2:
            return None
        for node in self.nodes:
            order = getattr(node.layer, "series_order", None)
            if self.input_name in node.inputs and order is not None:
                return order
        return None

    @property
    def input_shapes(self) -> dict[str, tuple[int, ...]]:
        """Per input a caller feeds, its per-sample shape."""
        return {self.input_name: self.input_shape}

    @property
    def output_shape(self) -> tuple[int, ...] | None:
        """Per-sample shape of the output, once built."""
        return self.node(self.output).layer.output_shape if self.built else None

    @property
    def n_outputs(self) -> int | None:
        """Width of the (flattened) output, once built."""
        shape = self.output_shape
        return int(np.prod(shape)) if shape is not None else None

    @property
    def built(self) -> bool:
        """Whether the weights exist (the input shape is known)."""
        return self.input_shape is not None and bool(self.nodes)

    @staticmethod
    def _auto_name(kind: str, used: set[str]) -> str:
        k = 1
        while f"{kind}_{k}" in used:
            k += 1
        return f"{kind}_{k}"

    @staticmethod
    def _check_shape(input_shape: Any) -> tuple[int, ...]:
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
        return shape

    def _invalidate(self) -> None:
        self._plans = {}
        self._layer_plans: dict = {}

    def _require_built(self) -> None:
        if not self.built:
            raise ValidationError(
                "the network has no weights yet: give input_shape= (and layers) or call fit first."
            )
        if self.output_names is not None and len(self.output_names) != self.n_outputs:
            raise ShapeError(
                f"output_names has {len(self.output_names)} names for a network with "
                f"{self.n_outputs} outputs."
            )

    def node(self, name: str) -> Node:
        """The node called ``name``."""
        for node in self.nodes:
            if node.name == name:
                return node
        raise UnknownNameError("node", name, [node.name for node in self.nodes])

    def layer_index(self, layer: int | str) -> int:
        """Index in :attr:`nodes` of a node given by index (negative from the end) or name."""
        n = len(self.nodes)
        if isinstance(layer, (int, np.integer)) and not isinstance(layer, bool):
            if not -n <= layer < n:
                raise ValidationError(
                    f"layer index {layer} is out of range for a network of {n} layers."
                )
            return int(layer) % n
        if isinstance(layer, str):
            for i, node in enumerate(self.nodes):
                if node.name == layer:
                    return i
        raise UnknownNameError("layer", layer, [node.name for node in self.nodes])

    def __getitem__(self, layer: int | str) -> Layer:
        return self.nodes[self.layer_index(layer)].layer

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Layer]:
        return iter(self.layers)

    def _plan(self, target: str | tuple[str, ...]) -> Plan:
        """The forward pass to ``target`` (a node name, or a tuple of them), made once; the
        cache is replaced, never mutated."""
        how = self._plans.get(target)
        if how is None:
            how = plan(self.nodes, target)
            self._plans = {**self._plans, target: how}
        return how

    def _order(self, target: str) -> list[int]:
        """Indices of the nodes ``target`` depends on, in topological order."""
        return list(self._plan(target).order)

    def _target(self, stop: int | str | None) -> str:
        if stop is None:
            return self.output
        if isinstance(stop, str):
            return self.node(stop).name
        kept = self.nodes[:stop]
        if not kept:
            raise ValidationError(f"stop={stop} leaves no layer to run.")
        return kept[-1].name

    def _backend(self, backend: Any) -> Backend:
        if backend is None:
            return CPUBackend(dtype=self.dtype)
        from xai_core.plugin.resolve import get_backend

        be = get_backend(backend)
        if be.requires_quantized:
            raise CapabilityError(
                f"the {be.name!r} backend runs only int8-quantised models; "
                "call xai.quantize(net, calibration_X) first."
            )
        return be

    def _check_X(
        self, X: Any, backend: Backend, name: str = "X", *, allow_nan: bool = False
    ) -> np.ndarray:
        self._require_built()
        if isinstance(X, Mapping) or len(self.inputs) != 1:
            raise CapabilityError(
                f"{name} must be one batch for the network's one input; this network has "
                f"inputs {list(self.inputs)}: run it with predict_outputs({{name: batch}}), "
                "or fix all but one with with_inputs(...) to predict, explain or take gradients."
            )
        dtype = backend.dtype if backend.dtype in DTYPES else np.float32
        return check_array(
            X, name, feature_shape=self.input_shape, dtype=dtype, allow_nan=allow_nan
        )

    def _check_feeds(
        self, X: Any, backend: Backend, *, allow_nan: bool = False
    ) -> dict[str, np.ndarray]:
        """``X`` (an array for a one-input network, else a dict of batches per input) as
        validated batches of equal length, per input name (finite unless ``allow_nan``)."""
        self._require_built()
        shapes = self.input_shapes
        if not isinstance(X, Mapping):
            return {self.input_name: self._check_X(X, backend, allow_nan=allow_nan)}
        missing = [name for name in shapes if name not in X]
        unknown = [name for name in X if name not in shapes]
        if missing or unknown:
            raise ValidationError(
                f"X must give a batch for each input {list(shapes)}; "
                + (f"missing {missing}" if missing else "")
                + ("; " if missing and unknown else "")
                + (f"unknown {unknown}" if unknown else "")
                + "."
            )
        dtype = backend.dtype if backend.dtype in DTYPES else np.float32
        feeds = {
            name: check_array(
                X[name], f"X[{name!r}]", feature_shape=shape, dtype=dtype, allow_nan=allow_nan
            )
            for name, shape in shapes.items()
        }
        lengths = {name: len(batch) for name, batch in feeds.items()}
        if len(set(lengths.values())) != 1:
            raise ShapeError(f"every input's batch must have the same length; got {lengths}.")
        return feeds

    def _feeds(self, X: Any) -> dict[str, np.ndarray]:
        """The executor's feeds for a batch ``X`` (a dict of batches for several inputs)."""
        return dict(X) if isinstance(X, Mapping) else {self.input_name: X}

    # -- the passes -------------------------------------------------------------------
    def forward(
        self,
        X: np.ndarray,
        backend: Any = None,
        *,
        cache: bool = False,
        stop: int | str | None = None,
        record: Record | None = None,
    ) -> np.ndarray:
        """Run the network (up to a node) on an already validated batch.

        Parameters
        ----------
        X : ndarray of shape (n_samples, *input_shape)
        backend : Backend, optional
        cache : bool, default=False
            Keep this thread's record for :meth:`backward` (the convenience API).
        stop : int or str, optional
            A node name, or a number of nodes ``k`` (the output of node ``k - 1``); the
            output node by default. Only the nodes the target depends on run.
        record : Record, optional
            Filled with what :meth:`vjp` needs: the thread-safe API.

        Returns
        -------
        ndarray of shape (n_samples, *target node's output_shape)
        """
        backend = self._backend(backend)
        if record is None and cache:
            record = Record()
        how = self._plan(self._target(stop))
        out = run_forward(self.nodes, self._feeds(X), backend, how, record)
        if cache:
            self._local.record = record
        return out

    def vjp(
        self,
        grad: np.ndarray,
        backend: Any,
        record: Record,
        *,
        param_grads: bool = True,
        input_grad: bool = True,
    ) -> tuple[np.ndarray | None, dict[str, dict[str, np.ndarray]]]:
        """Back-propagate ``grad`` through the forward pass that filled ``record``.

        Returns
        -------
        grad_X : ndarray of shape (n_samples, *input_shape) or None
        grads : dict
            ``{node name: {parameter: gradient}}`` (empty without ``param_grads``).
        """
        return run_backward(
            self.nodes,
            self.input_name,
            grad,
            self._backend(backend),
            record,
            param_grads=param_grads,
            input_grad=input_grad,
        )

    def backward(
        self,
        grad: np.ndarray,
        backend: Any = None,
        *,
        start: int | str | None = None,
        param_grads: bool = True,
        input_grad: bool = True,
    ) -> np.ndarray | None:
        """:meth:`vjp` of this thread's last ``forward(cache=True)``; fills each layer's ``grads``.

        ``start`` is accepted for symmetry with ``forward(stop=)``; the record knows the
        node the forward pass stopped at.
        """
        record = getattr(self._local, "record", None)
        if record is None:
            raise ValidationError("backward needs a forward pass with cache=True first.")
        gX, grads = self.vjp(grad, backend, record, param_grads=param_grads, input_grad=input_grad)
        if param_grads:
            for name, g in grads.items():
                self.node(name).layer.grads = g
        return gX

    def clear_cache(self) -> None:
        """Drop this thread's record of the last ``forward(cache=True)``."""
        self._local.record = None

    @staticmethod
    def _chunks(n: int, batch_size: int) -> Iterator[slice]:
        for start in range(0, n, batch_size):
            yield slice(start, min(start + batch_size, n))

    # -- the Model interface ----------------------------------------------------------
    def predict(self, X: Any, backend: Any = None, *, batch_size: int = 4096) -> np.ndarray:
        """The network's outputs, of shape (n_samples, n_outputs), in the backend's dtype.

        Parameters
        ----------
        X : array-like of shape (n_samples, *input_shape)
        backend : str or Backend, optional
            Default ``CPUBackend(dtype=self.dtype)``.
        batch_size : int, default=4096
            Rows per forward pass, to bound memory.
        """
        backend = self._backend(backend)
        X = self._check_X(X, backend)
        batch_size = check_positive_int(batch_size, "batch_size")
        parts = [
            self.forward(X[s], backend).reshape(len(X[s]), -1)
            for s in self._chunks(len(X), batch_size)
        ]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    def predict_outputs(
        self,
        X: Any,
        backend: Any = None,
        *,
        batch_size: int = 4096,
        allow_nan: bool = False,
    ) -> dict[str, np.ndarray]:
        """Every output of the network, from one forward pass per chunk of rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, *input_shape), or dict of str to array-like
            One batch per input name for a network with several :attr:`inputs`.
        backend : str or Backend, optional
        batch_size : int, default=4096
        allow_nan : bool, default=False
            Run NaN and infinite inputs as a runtime does (IEEE arithmetic through every
            layer) instead of refusing them; explanations never do.

        Returns
        -------
        dict of str to ndarray
            Per name in :attr:`outputs`, its values of shape (n_samples, *that output's shape).
        """
        backend = self._backend(backend)
        feeds = self._check_feeds(X, backend, allow_nan=allow_nan)
        batch_size = check_positive_int(batch_size, "batch_size")
        how = self._plan(self.outputs)
        n = len(next(iter(feeds.values())))
        parts = [
            run_outputs(self.nodes, self._feeds({k: v[s] for k, v in feeds.items()}), backend, how)
            for s in self._chunks(n, batch_size)
        ]
        if len(parts) == 1:
            return parts[0]
        return {name: np.concatenate([p[name] for p in parts], axis=0) for name in parts[0]}

    def predict_checked(self, X: np.ndarray, backend: Any) -> np.ndarray:
        """The outputs for rows the runner has validated: one forward pass, no second check."""
        return self.forward(X, self._backend(backend)).reshape(len(X), -1)

    def gradient(
        self,
        X: Any,
        target: Any,
        backend: Any = None,
        *,
        batch_size: int = 4096,
        relu_rule: str = "gradient",
    ) -> np.ndarray:
        """d output[target_i] / d X_i for every row, one batched backward pass per chunk.

        Parameters
        ----------
        X : array-like of shape (n_samples, *input_shape)
        target : int or array-like of int of shape (n_samples,)
            Output index per row.
        backend : str or Backend, optional
        batch_size : int, default=4096
        relu_rule : {"gradient", "guided", "deconvnet"}, default="gradient"
            How gradients pass through ReLU layers: their derivative, or guided
            backpropagation's or deconvolution's rule
            (:data:`xai_core.nn.executor.RELU_RULES`).

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
        if relu_rule != "gradient":
            parts = [
                self.layer_gradient_checked(
                    X[s], target[s], self.input_name, backend, relu_rule=relu_rule
                ).gradient
                for s in self._chunks(len(X), batch_size)
            ]
            return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)
        parts = []
        for s in self._chunks(len(X), batch_size):
            record = Record()
            out = self.forward(X[s], backend, record=record)
            seed = np.zeros((out.shape[0], self.n_outputs), dtype=out.dtype)
            seed[np.arange(out.shape[0]), target[s]] = 1
            gX, _ = self.vjp(seed.reshape(out.shape), backend, record, param_grads=False)
            parts.append(gX)
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    # -- hidden layers ----------------------------------------------------------------
    def layer_value(
        self, layer: int | str, attribute_to_layer_input: bool = False, *, replaced: bool = False
    ) -> str:
        """The name of the value a layer option means: a node's output, or its input.

        Parameters
        ----------
        layer : int or str
            A node, by index (negative from the end) or name, as :meth:`summary` lists them.
        attribute_to_layer_input : bool, default=False
            The node's input instead (the network's input for the first node); the node
            must have one input.
        replaced : bool, default=False
            The value will be fed (``layer_gradient(layer_values=)``): a layer input that
            other nodes read too is refused, as feeding it would change their input too.

        Returns
        -------
        str
            A node's name, or :attr:`input_name`.
        """
        node = self.nodes[self.layer_index(layer)]
        if not attribute_to_layer_input:
            return node.name
        if len(node.inputs) != 1:
            raise ValidationError(
                f"attribute_to_layer_input needs a layer with one input; {node.name!r} has "
                f"{len(node.inputs)}: {list(node.inputs)}."
            )
        value = node.inputs[0]
        readers = [other.name for other in self.nodes if value in other.inputs]
        if replaced and len(readers) > 1:
            raise ValidationError(
                f"the input of layer {node.name!r} ({value!r}) is also read by "
                f"{[r for r in readers if r != node.name]}: replacing it for {node.name!r} "
                "alone is not supported; attribute to a layer's output instead."
            )
        return value

    def value_shape(self, value: str) -> tuple[int, ...]:
        """Per-row shape of a value: a node's output shape, or the input's."""
        if value == self.input_name:
            return tuple(self.input_shape)
        return tuple(self.node(value).layer.output_shape)

    def layer_gradient(
        self,
        X: Any,
        target: Any,
        layer: int | str,
        backend: Any = None,
        *,
        attribute_to_layer_input: bool = False,
        layer_values: Any = None,
        neuron: Any = None,
        relu_rule: str = "gradient",
        batch_size: int = 4096,
    ) -> LayerGradient:
        """A hidden layer's values and the gradient of ``output[target]`` with respect to them.

        One recorded forward pass and one backward walk (stopping at the layer) per chunk
        of rows, on the backend.

        Parameters
        ----------
        X : array-like of shape (n_samples, *input_shape)
        target : int or array-like of int of shape (n_samples,)
        layer : int or str
            A node by index or name (:meth:`summary`).
        backend : str or Backend, optional
        attribute_to_layer_input : bool, default=False
            The layer's input instead of its output (:meth:`layer_value`).
        layer_values : array-like of shape (n_samples, *layer_shape), optional
            Values fed in place of the layer's own (the network's input ``X`` still feeds
            any path around the layer); the gradient is taken at them. A layer input read
            by other nodes too cannot be replaced for this node alone: refused.
        neuron : int or tuple of int, optional
            A unit of the layer: its gradient with respect to ``X`` is returned too.
        relu_rule : {"gradient", "guided", "deconvnet"}, default="gradient"
            The backward rule of ReLU layers (:data:`xai_core.nn.executor.RELU_RULES`).
        batch_size : int, default=4096

        Returns
        -------
        LayerGradient
            ``activations`` and ``gradient`` of shape (n_samples, *layer_shape), ``output``
            of shape (n_samples,), ``input_gradient`` of shape (n_samples, *input_shape)
            with ``neuron``.
        """
        backend = self._backend(backend)
        if not backend.supports_gradients:
            raise CapabilityError(
                f"the {backend.name!r} backend cannot compute gradients (inference only)."
            )
        X = self._check_X(X, backend)
        target = check_target(target, len(X), self.n_outputs)
        batch_size = check_positive_int(batch_size, "batch_size")
        value = self.layer_value(layer, attribute_to_layer_input, replaced=layer_values is not None)
        shape = self.value_shape(value)
        if layer_values is not None:
            dtype = backend.dtype if backend.dtype in DTYPES else np.float32
            layer_values = check_array(
                layer_values, "layer_values", feature_shape=shape, dtype=dtype
            )
            if len(layer_values) != len(X):
                raise ShapeError(
                    f"layer_values must have one row per row of X ({len(X)}); got "
                    f"{len(layer_values)}."
                )
        parts = [
            self.layer_gradient_checked(
                X[s],
                target[s],
                value,
                backend,
                layer_values=None if layer_values is None else layer_values[s],
                neuron=neuron,
                relu_rule=relu_rule,
            )
            for s in self._chunks(len(X), batch_size)
        ]
        if len(parts) == 1:
            return parts[0]
        return LayerGradient(
            *(None if part[0] is None else np.concatenate(part, axis=0) for part in zip(*parts))
        )

    def layer_gradient_checked(
        self,
        X: np.ndarray,
        target: np.ndarray,
        value: str,
        backend: Any,
        *,
        layer_values: np.ndarray | None = None,
        neuron: Any = None,
        relu_rule: str = "gradient",
    ) -> LayerGradient:
        """:meth:`layer_gradient` for one batch the caller has validated, at a value by name.

        Parameters
        ----------
        X : ndarray of shape (n_samples, *input_shape)
        target : ndarray of int64 of shape (n_samples,)
        value : str
            A node's name or :attr:`input_name` (:meth:`layer_value`).
        backend : Backend
        layer_values, neuron, relu_rule
            As :meth:`layer_gradient`.

        Returns
        -------
        LayerGradient
        """
        self._require_built()
        backend = self._backend(backend)
        shape = self.value_shape(value)
        unit = None if neuron is None else neuron_index(neuron, shape)
        plans = self.__dict__.setdefault("_layer_plans", {})  # (output, fed values) -> Plan
        return layer_gradient(
            self.nodes,
            self._feeds(X),
            np.asarray(target, dtype=np.int64),
            value,
            self.output,
            backend,
            layer_values=layer_values,
            neuron=unit,
            relu_rule=relu_rule,
            input_name=self.input_name,
            plans=plans,
        )

    def activations(
        self, X: Any, layer: int | str, backend: Any = None, *, batch_size: int = 4096
    ) -> np.ndarray:
        """Outputs of one node (index, negative from the end, or name), of shape
        (n_samples, *that node's output_shape)."""
        index = self.layer_index(layer)
        backend = self._backend(backend)
        X = self._check_X(X, backend)
        batch_size = check_positive_int(batch_size, "batch_size")
        name = self.nodes[index].name
        parts = [self.forward(X[s], backend, stop=name) for s in self._chunks(len(X), batch_size)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    # -- scikit-learn-like conveniences -----------------------------------------------
    def _last(self) -> Layer:
        return self.node(self.output).layer

    def predict_proba(self, X: Any, backend: Any = None) -> np.ndarray:
        """Class probabilities of shape (n_samples, n_classes).

        For a network ending in Softmax these are its outputs; for one ending in a single
        Sigmoid output, the columns ``[1 - p, p]``.
        """
        last = self._last()
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
        last = self._last()
        if isinstance(last, Softmax) or (isinstance(last, Sigmoid) and self.n_outputs == 1):
            pred = self.predict_classes(X, backend)
            y = np.asarray(y).reshape(-1)
            if y.shape != pred.shape:
                raise ShapeError(f"y must have shape ({len(pred)},); got {np.shape(y)}.")
            return float(np.mean(pred == y))
        from sklearn.metrics import r2_score

        pred = self.predict(X, backend).astype(np.float64)
        return float(r2_score(np.asarray(y, dtype=np.float64).reshape(len(pred), -1), pred))

    def save(self, path: Any) -> None:
        """Write the architecture and weights to one ``.npz`` file; see :func:`~xai_core.nn.load_model`."""
        from xai_core.nn.io import save_model

        save_model(self, path)

    # -- weights ----------------------------------------------------------------------
    def set_params(self, node: str, **arrays: Any) -> None:
        """Set a node's parameters and buffers from arrays of their shapes; see :meth:`Layer.set_params`."""
        self.node(node).layer.set_params(**arrays)

    def get_weights(self) -> list[np.ndarray]:
        """Copies of every parameter, node by node, in each layer's ``params`` order."""
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
        """Nodes with output shapes, parameters and MACs per sample (prints as a table)."""
        self._require_built()
        rows = tuple(
            {
                "name": node.name,
                "layer": node.layer._describe(),
                **({"inputs": ", ".join(node.inputs) or "()"} if self._show_inputs else {}),
                "output_shape": node.layer.output_shape,
                "params": node.layer.n_params,
                "macs": node.layer.macs_per_sample(),
            }
            for node in self.nodes
        )
        return Summary(rows, self.input_shape, self.n_params, self.macs_per_sample)

    @property
    def folded_batch_norms(self) -> dict[str, str]:
        """Batch norm nodes merged into the layer before them: ``{batch norm: producer}``."""
        return {
            node.name: node.layer.folded_into
            for node in self.nodes
            if getattr(node.layer, "folded_into", None) is not None
        }

    def fold_batch_norm(self) -> Network:
        """A copy with every foldable batch norm merged into the layer before it.

        See :func:`xai_core.nn.folding.fold_batch_norm`.
        """
        from xai_core.nn.folding import fold_batch_norm

        return fold_batch_norm(self)

    def _describe_head(self) -> str:
        return f"{type(self).__name__}(input_shape={self.input_shape}"

    def __repr__(self) -> str:
        head = self._describe_head()
        if self.name:
            head += f", name={self.name!r}"
        body = "".join(
            f"\n    {node.layer!r}"
            + (f" <- {', '.join(node.inputs) or '()'}" if self._show_inputs else "")
            + ","
            for node in self.nodes
        )
        return f"{head}, layers=[{body}\n])"
