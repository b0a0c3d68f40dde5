"""xai-core as an ONNX backend: ``onnx.backend.base.Backend`` over :func:`from_onnx`.

Runtimes report how much of ONNX's backend test suite they pass through this interface:
``prepare(model)`` returns a :class:`XaiBackendRep` whose ``run(inputs)`` returns the
model's outputs. Here a model becomes a native network as :func:`~xai_core.from_onnx`
builds it, with two adaptations the native network asks for:

- the first axis of every tensor is the batch axis (a network maps samples independently);
- the explained input is a floating-point tensor: integer and boolean inputs (indices,
  shapes, axes) are constants of each run, folded into the model as initialisers before it
  is imported, so an operator that needs them constant sees them as such.

Outputs are returned in the dtype the model declares (a comparison's 0/1 as ``bool``, an
``ArgMax``'s as ``int64``), as the suite checks dtypes.

Examples
--------
>>> from xai_core.importers.onnx_backend import XaiBackend
>>> rep = XaiBackend.prepare(onnx.load("model.onnx"))
>>> (y,) = rep.run([x])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from xai_core.errors import CapabilityError, ValidationError
from xai_core.importers.onnx_import import from_onnx
from xai_core.importers.onnx_reader import load_onnx_model
from xai_core.optional import require

__all__ = ["XaiBackend", "XaiBackendRep", "prepare", "run_model"]

try:  # onnx is optional: without it the classes stand alone (and nothing can be read)
    from onnx.backend.base import Backend as _Backend
    from onnx.backend.base import BackendRep as _BackendRep
except ImportError:  # pragma: no cover - the "import" extra is not installed
    _Backend = _BackendRep = object

_FLOATS = ("float32", "float64")


def _onnx():
    return require("onnx", extra="import", need="the ONNX backend interface")


def _elem_dtype(value_info: Any) -> np.dtype | None:
    """The numpy dtype a graph input or output declares (None: not a tensor)."""
    onnx = _onnx()
    t = value_info.type
    if not t.HasField("tensor_type"):
        return None
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.tensor_type.elem_type))
    except Exception:
        return None


class XaiBackendRep(_BackendRep):
    """A prepared model: :meth:`run` imports it with each run's constant inputs folded in.

    Parameters
    ----------
    model : onnx.ModelProto
    """

    def __init__(self, model: Any) -> None:
        onnx = _onnx()
        self.model = model
        inits = {t.name for t in model.graph.initializer}
        self.inputs = [vi for vi in model.graph.input if vi.name not in inits]
        self.outputs = list(model.graph.output)
        self.where = f"ONNX graph {model.graph.name!r}" if model.graph.name else "the ONNX model"
        bad = [
            f"{vi.name!r} ({_elem_dtype(vi)})"
            for vi in [*self.inputs, *self.outputs]
            if _elem_dtype(vi) is None or _elem_dtype(vi).kind not in "biuf"
        ]
        if bad:
            raise CapabilityError(
                f"{self.where}: inputs and outputs must be numeric tensors; "
                f"{', '.join(bad)} are not."
            )
        floats = [vi for vi in self.inputs if _elem_dtype(vi).kind == "f"]
        odd = [
            f"{vi.name!r} ({_elem_dtype(vi)})" for vi in floats if _elem_dtype(vi) not in _FLOATS
        ]
        if odd:
            raise CapabilityError(
                f"{self.where}: float32 and float64 tensors are computed; the inputs "
                f"{', '.join(odd)} are of another floating-point type."
            )
        if not floats:
            raise CapabilityError(
                f"{self.where}: no floating-point input: the network's input is a float "
                "tensor (integer inputs are folded in as constants), and this model's inputs "
                f"are {', '.join(f'{vi.name!r} ({_elem_dtype(vi)})' for vi in self.inputs)}."
            )
        self.float_inputs = [vi.name for vi in floats]
        kinds = {_elem_dtype(vi) for vi in floats}
        self.dtype = "float64" if np.dtype("float64") in kinds else "float32"
        self._onnx = onnx
        self._nets: dict[bytes, Any] = {}

    def _network(self, constants: dict[str, np.ndarray]) -> Any:
        """The native network with ``constants`` as initialisers (one import per set)."""
        key = b"".join(
            name.encode() + b"\0" + str(v.dtype).encode() + str(v.shape).encode() + v.tobytes()
            for name, v in sorted(constants.items())
        )
        if key not in self._nets:
            model = self._onnx.ModelProto()
            model.CopyFrom(self.model)
            graph = model.graph
            kept = [vi for vi in graph.input if vi.name not in constants]
            del graph.input[:]
            graph.input.extend(kept)
            for name, v in constants.items():
                graph.initializer.append(self._onnx.numpy_helper.from_array(v, name))
            self._nets[key] = from_onnx(model, dtype=self.dtype)
        return self._nets[key]

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """The model's outputs for ``inputs`` (a list in graph-input order, or a dict).

        Returns
        -------
        tuple of ndarray
            One per graph output, of its full (batched) shape and declared dtype.
        """
        names = [vi.name for vi in self.inputs]
        if isinstance(inputs, dict):
            values = dict(inputs)
        else:
            inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
            if len(inputs) != len(names):
                raise ValidationError(
                    f"{self.where}: {len(names)} inputs ({', '.join(map(repr, names))}) are "
                    f"declared; {len(inputs)} arrived."
                )
            values = dict(zip(names, inputs, strict=True))
        values = {k: np.asarray(v) for k, v in values.items()}
        missing = [n for n in names if n not in values]
        if missing:
            raise ValidationError(f"{self.where}: inputs {missing} are missing.")
        constants = {n: values[n] for n in names if n not in self.float_inputs}
        net = self._network(constants)
        outputs = [vi for vi in self.outputs]
        if len(outputs) != 1:  # the importer refuses these; kept for the error above
            raise CapabilityError(f"{self.where}: one output is supported.")
        x = values[self.float_inputs[0]]
        if len(self.float_inputs) != 1:
            raise CapabilityError(
                f"{self.where}: one floating-point input is supported; the model has "
                f"{len(self.float_inputs)}."
            )
        n = x.shape[0] if x.ndim else 0
        y = net.predict(x.astype(self.dtype)).reshape(n, *net.shape_of(net.output))
        return (y.astype(_elem_dtype(outputs[0])),)


class XaiBackend(_Backend):
    """The ``onnx.backend.base.Backend`` interface, on :func:`~xai_core.from_onnx`."""

    @classmethod
    def is_compatible(cls, model: Any, device: str = "CPU", **kwargs: Any) -> bool:
        return device == "CPU"

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"

    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> XaiBackendRep:
        """A :class:`XaiBackendRep` of ``model`` (a ModelProto, path or bytes)."""
        model, _ = load_onnx_model(model)
        return XaiBackendRep(model)

    @classmethod
    def run_model(
        cls, model: Any, inputs: Sequence[Any], device: str = "CPU", **kwargs: Any
    ) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: Any, inputs: Any, device: str = "CPU", **kwargs: Any) -> Any:
        raise CapabilityError(
            "run_node: nodes are run as one-node models (prepare(model)), not on their own."
        )


prepare = XaiBackend.prepare
run_model = XaiBackend.run_model
