"""A ``.tflite`` graph as a model: TFLite's kernels, run on any backend, one record per call."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from xai_core.attribution.cost import Cost, check_cost
from xai_core.errors import CapabilityError, ModelFormatError, UnknownNameError, ValidationError
from xai_core.int8.fold import fold_constants
from xai_core.int8.graph import TensorInfo, TFLiteGraph
from xai_core.int8.signatures import activation_bytes, check_operators
from xai_core.model.base import Model
from xai_core.validation import check_array

__all__ = ["TFLiteModel"]

_INTEGER = (np.dtype(np.int8), np.dtype(np.uint8))

#: What an int8 model with straight-through gradients can do: ``"straight_through"`` says
#: its gradients are the fake-quantised float graph's (:mod:`xai_core.int8.ste`), computed
#: on the host of a device that is inference only.
STRAIGHT_THROUGH_CAPABILITIES = frozenset(
    {"predict", "activations", "gradient", "straight_through"}
)

#: The custom operator that the Edge TPU compiler puts in ``*_edgetpu.tflite`` files.
EDGETPU_CUSTOM_OP = "edgetpu-custom-op"


class TFLiteModel(Model):
    """A TensorFlow Lite model read by :func:`xai_core.from_tflite`.

    Full-integer models run TFLite's int8 kernels (bit-exact with its reference kernels) and
    so may run on ``edgetpu``; their integer matrix products give the same integers on every
    backend. Float models run their float32 kernels in the backend's numerics.

    Attributes
    ----------
    graph : TFLiteGraph
        The parsed file.
    input_shape : tuple of int
        One sample's shape, as the file declares it without the batch axis (NHWC for images).
    image_shape : tuple of int or None
        ``(H, W, C)`` for an image input.
    is_quantized : bool
        Whether the operators compute in int8 (a model the Edge TPU can run).
    output_names : tuple of str or None
        Class names, from ``labels`` or the Teachable Machine ``labels.txt``.
    preprocessing : dict
        What an input must look like, as far as the file or its export says (``{"scale":
        ..., "offset": ...}`` for images mapped from [0, 255]).
    """

    #: A full-integer model whose every operator has a backward rule has
    #: :data:`STRAIGHT_THROUGH_CAPABILITIES` instead.
    capabilities: frozenset[str] = frozenset({"predict", "activations"})
    runs_on_backend: ClassVar[bool] = True

    def __init__(
        self,
        graph: TFLiteGraph,
        *,
        output_names: Sequence[str] | None = None,
        name: str | None = None,
        preprocessing: dict[str, Any] | None = None,
    ) -> None:
        from xai_core.int8.kernels_float import FLOAT_KERNELS
        from xai_core.int8.kernels_int8 import INT8_KERNELS

        graph = fold_constants(graph)
        self.graph = graph
        self.name = name
        where = graph.where
        if any(op.custom_code == EDGETPU_CUSTOM_OP for op in graph.operators):
            raise ModelFormatError(
                f"{where}: this file was compiled for the Edge TPU (it holds "
                "'edgetpu-custom-op', a binary only the Edge TPU runs). Load the .tflite file "
                "you gave the Edge TPU compiler (the one without the _edgetpu suffix) instead."
            )
        if len(graph.inputs) != 1 or not graph.outputs:
            raise ModelFormatError(
                f"{where}: only models with one input and at least one output are supported; "
                f"this one has {len(graph.inputs)} inputs and {len(graph.outputs)} outputs."
            )
        self.is_quantized = any(
            graph.tensors[op.outputs[0]].dtype in _INTEGER for op in graph.operators
        )
        self._kernels = []
        integer = []
        unsupported = []
        for op in graph.operators:
            out = graph.tensors[op.outputs[0]]
            integer.append(out.dtype in _INTEGER or op.op == "DEQUANTIZE")
            table = INT8_KERNELS if integer[-1] else FLOAT_KERNELS
            kernel = table.get(op.kind)
            if kernel is None:
                what = f"custom {op.custom_code!r}" if op.custom_code else op.op
                unsupported.append(
                    f"{what} (operator {op.index}, output {out.name!r}, {out.dtype})"
                )
            self._kernels.append(kernel)
        if unsupported:
            supported = sorted(set(INT8_KERNELS) | set(FLOAT_KERNELS))
            raise ModelFormatError(
                f"{where}: unsupported TFLite operators: {', '.join(unsupported)}. Supported: "
                f"{', '.join(supported)}."
            )
        check_operators(graph, integer)
        check_cost(
            Cost(0, activation_bytes(graph), "every tensor of one sample, as the file declares"),
            f"{where}: running one sample through the model",
        )
        self.input_tensor: TensorInfo = graph.tensors[graph.inputs[0]]
        self.input_shape = tuple(self.input_tensor.shape[1:])
        self._select(0)
        self.image_shape = self.input_shape if len(self.input_shape) == 3 else None
        if output_names is not None:
            output_names = tuple(str(n) for n in output_names)
            if len(output_names) != self.n_outputs:
                raise ModelFormatError(
                    f"output_names must have {self.n_outputs} names, one per output; got "
                    f"{len(output_names)}."
                )
        self.output_names = output_names
        self.preprocessing = dict(preprocessing or {})
        self._placement = None
        self._float_tensors = None
        from xai_core.int8.ste import missing_backward

        #: The operators without a backward rule: a full-integer model without any has
        #: straight-through gradients (:mod:`xai_core.int8.ste`).
        self.missing_backward = missing_backward(graph) if self.is_quantized else None
        if self.is_quantized and not self.missing_backward:
            self.capabilities = STRAIGHT_THROUGH_CAPABILITIES

    # -- outputs ---------------------------------------------------------------------------
    def _select(self, k: int) -> None:
        self._output = k
        self.output_tensor: TensorInfo = self.graph.tensors[self.graph.outputs[k]]
        self.n_outputs = int(np.prod(self.output_tensor.shape[1:], dtype=np.int64))

    @property
    def outputs(self) -> tuple[str, ...]:
        """The names of the graph's output tensors, in the file's order (overrides
        :attr:`xai_core.model.base.Model.outputs`)."""
        return tuple(self.graph.tensors[t].name for t in self.graph.outputs)

    @property
    def output(self) -> str:
        """The name of the output :meth:`predict` returns (the first, unless chosen)."""
        return self.outputs[self._output]

    def output_index(self, output: int | str) -> int:
        """The position of ``output`` (a name from :attr:`outputs` or an index) among them."""
        names = self.outputs
        if isinstance(output, (int, np.integer)) and not isinstance(output, bool):
            if not -len(names) <= int(output) < len(names):
                raise ValidationError(
                    f"output index {output} is out of range for a model with {len(names)} "
                    f"output(s): {list(names)}."
                )
            return int(output) % len(names)
        if not isinstance(output, str) or output not in names:
            raise UnknownNameError("output", str(output), list(names))
        return names.index(output)

    def with_output(self, output: int | str) -> TFLiteModel:
        """The model with ``output`` (name or index) as the one :meth:`predict` returns
        (overrides :meth:`xai_core.model.base.Model.with_output`).

        Returns
        -------
        TFLiteModel
            A view sharing the graph and kernels: its ``predict``, ``activations`` and every
            explainer see that output, of shape (n_samples, prod(its shape)).
        """
        k = self.output_index(output)
        if k == self._output:
            return self
        view = copy.copy(self)
        view._select(k)
        view.output_names = None  # class names belong to the first output
        return view

    def predict_outputs(self, X: Any, backend: Any = None) -> dict[str, np.ndarray]:
        """Every output from one run, dequantised.

        Parameters
        ----------
        X : array-like of shape (n_samples, *input_shape)
        backend : str or Backend, optional

        Returns
        -------
        dict of str to ndarray of float32
            Output name -> array of shape (n_samples, *that output's shape without the batch
            axis), in the order of :attr:`outputs`.
        """
        X = check_array(X, "X", feature_shape=self.input_shape)
        values = self.run(self.quantize_input(X), backend)
        return {
            self.graph.tensors[t].name: self._output_float(t, values[t]).reshape(
                len(X), *self.graph.tensors[t].shape[1:]
            )
            for t in self.graph.outputs
        }

    # -- running ---------------------------------------------------------------------------
    def _backend(self, backend: Any):
        if backend is None:
            from xai_core.backends.cpu import CPUBackend

            return CPUBackend()
        from xai_core.plugin.resolve import get_backend

        return get_backend(backend)

    def quantize_input(self, X: np.ndarray) -> np.ndarray:
        """``X`` in the input tensor's type: int8 / uint8 as TFLite's QUANTIZE computes it, else float32."""
        if self.input_tensor.dtype not in _INTEGER:
            return np.asarray(X, dtype=np.float32)
        from xai_core.int8.kernels_int8 import quantize_real

        return quantize_real(X, self.input_tensor)

    def run(
        self, inputs: np.ndarray, backend: Any = None, *, until: int | None = None
    ) -> dict[int, np.ndarray]:
        """Run the operators on ``inputs`` (the input tensor's dtype, batch first).

        Returns
        -------
        dict of int to ndarray
            Every tensor computed, by tensor index: this call's own record, so one model may
            be run from many threads at once.
        """
        backend = self._backend(backend)
        tensors = self.graph.tensors
        split = hasattr(backend, "count_operator")  # the Edge TPU: unmapped operators on its host
        on_host = [p.device == "host" for p in self.placement()] if split else None
        values: dict[int, np.ndarray] = {self.graph.inputs[0]: inputs}
        for k, (op, kernel) in enumerate(zip(self.graph.operators[:until], self._kernels[:until])):
            args = [values[i] if i in values else tensors[i].data for i in op.inputs if i >= 0]
            device = backend
            if split:
                backend.count_operator(on_host[k])
                device = backend.host if on_host[k] else backend
            values[op.outputs[0]] = kernel(op, tensors, args, device)
        return values

    def placement(self):
        """Where the Edge TPU compiler would put each operator: a list of placements.

        Returns
        -------
        list of :class:`~xai_core.int8.edgetpu_map.OperatorPlacement`
            ``index``, ``op``, ``device`` (``"edgetpu"`` or ``"host"``) and ``reason`` per
            operator, in order. Everything from the first unmapped operator on is on the host.
        """
        if self._placement is None:
            from xai_core.int8.edgetpu_map import place_operators

            self._placement = place_operators(self.graph)
        return self._placement

    def placement_table(self):
        """:meth:`placement` as a DataFrame with the MACs of each operator."""
        import pandas as pd

        from xai_core.int8.edgetpu_map import operator_macs

        rows = [
            {
                "operator": p.index,
                "op": p.op,
                "device": p.device,
                "macs": operator_macs(self.graph, p.index),
                "reason": p.reason,
            }
            for p in self.placement()
        ]
        return pd.DataFrame(rows)

    def _output_float(self, index: int, value: np.ndarray) -> np.ndarray:
        t = self.graph.tensors[index]
        if value.dtype in _INTEGER and t.scale is not None:
            real = np.float64(t.scale[0]) * (value.astype(np.float64) - int(t.zero_point[0]))
            return real.astype(np.float32)
        return np.asarray(value, dtype=np.float32)

    def predict(self, X: Any, backend: Any = None) -> np.ndarray:
        """Outputs of shape (n_samples, n_outputs), dequantised for an int8 output.

        Parameters
        ----------
        X : array-like of shape (n_samples, *input_shape)
            Real values (an int8 model's input is quantised as TFLite's QUANTIZE would).
        backend : str or Backend, optional
            Default ``cpu``.
        """
        X = check_array(X, "X", feature_shape=self.input_shape)
        return self.predict_checked(X, backend)

    def predict_checked(self, X: np.ndarray, backend: Any) -> np.ndarray:
        index = self.output_tensor.index
        out = self.run(self.quantize_input(X), backend)[index]
        return self._output_float(index, out).reshape(len(X), -1)

    def tensor_index(self, layer: int | str) -> int:
        """The tensor index of ``layer``: a tensor name, or an operator index (its output)."""
        if isinstance(layer, (int, np.integer)) and not isinstance(layer, bool):
            by_index = {op.index: op.outputs[0] for op in self.graph.operators}
            if int(layer) not in by_index:
                raise UnknownNameError("operator index", str(layer), [str(i) for i in by_index])
            return by_index[int(layer)]
        names = {
            self.graph.tensors[op.outputs[0]].name: op.outputs[0] for op in self.graph.operators
        }
        if layer not in names:
            raise UnknownNameError("tensor", str(layer), sorted(names))
        return names[layer]

    def activations(self, X: Any, layer: int | str, backend: Any = None) -> np.ndarray:
        """Output of one operator (index, or its output tensor's name), dequantised.

        Returns
        -------
        ndarray of float32, shape (n_samples, *that tensor's shape without the batch axis)
        """
        index = self.tensor_index(layer)
        until = next(i for i, op in enumerate(self.graph.operators) if op.outputs[0] == index) + 1
        X = check_array(X, "X", feature_shape=self.input_shape)
        value = self.run(self.quantize_input(X), backend, until=until)[index]
        return self._output_float(index, value)

    def float_tensors(self) -> tuple[TensorInfo, ...]:
        """The graph's tensors with the quantised constants dequantised (float64), made once."""
        if self._float_tensors is None:
            from xai_core.int8.ste import float_tensors

            self._float_tensors = float_tensors(self.graph)
        return self._float_tensors

    def gradient(self, X: Any, target: Any, backend: Any = None) -> np.ndarray:
        """d output[target] / d X by the straight-through estimator (:mod:`xai_core.int8.ste`).

        The forward pass is the int8 graph on ``backend``; the backward pass goes through the
        fake-quantised float graph (on the backend's host if it is inference only).

        Parameters
        ----------
        X : array-like of shape (n_samples, *input_shape)
        target : int or array-like of int of shape (n_samples,)
        backend : str or Backend, optional

        Returns
        -------
        ndarray of shape (n_samples, *input_shape)

        Raises
        ------
        CapabilityError
            A float model, or an int8 model with an operator without a backward rule.
        """
        if "gradient" not in self.capabilities:
            if not self.is_quantized:
                why = "a float .tflite model has no gradients here"
            else:
                why = (
                    "this int8 model has operators without a straight-through backward rule: "
                    + ", ".join(self.missing_backward)
                )
            raise CapabilityError(
                f"{why}. Use a method that needs only predictions (shap, lime), or import the "
                "float network it came from (xai.from_keras, xai.from_onnx) for gradient methods."
            )
        from xai_core.int8.ste import straight_through_gradient
        from xai_core.validation import check_target

        X = check_array(X, "X", feature_shape=self.input_shape)
        target = check_target(target, len(X), self.n_outputs)
        return straight_through_gradient(self, X, target, self._backend(backend))

    @property
    def operators(self) -> list[str]:
        """The operator names, in execution order."""
        return self.graph.op_names

    def __repr__(self) -> str:
        kind = "int8" if self.is_quantized else "float32"
        source = self.name or (self.graph.path or "bytes")
        return f"TFLiteModel({kind}, {len(self.graph.operators)} operators, from {source!r})"
