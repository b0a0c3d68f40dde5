"""What travels to a chunk's worker: models and backends in forms that can be rebuilt there.

A native network or a quantised model travels as its saved form (the ``.npz`` bytes of
its ``save``: weights plus JSON, never pickle), a ``.tflite`` model as its flatbuffer
bytes, a registered backend as its registry name and constructor settings
(:meth:`Backend.config`), a black-box model by pickle when it can be pickled. Serial runs
and thread pools share objects as they are (native networks keep no state between calls).
"""

from __future__ import annotations

import pickle
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xai_core.backends.base import Backend
from xai_core.errors import CapabilityError
from xai_core.model.base import Model
from xai_core.model.runner import get_backend

__all__ = ["backend_spec", "model_spec"]


@dataclass(frozen=True)
class _NativeBytes:
    """A native network as the bytes of its saved ``.npz`` file."""

    data: bytes

    def build(self) -> Model:
        from xai_core.nn.io import load_model

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "model.npz"
            path.write_bytes(self.data)
            return load_model(path)


@dataclass(frozen=True)
class _TFLiteBytes:
    """A ``.tflite`` model as its flatbuffer bytes."""

    data: bytes

    def build(self) -> Model:
        from xai_core.importers.tflite import from_tflite

        return from_tflite(self.data)


@dataclass(frozen=True)
class _Shared:
    """An object used as it is (serial runs and thread pools: nothing is serialised)."""

    obj: Any

    def build(self) -> Any:
        return self.obj


@dataclass(frozen=True)
class _BackendByName:
    """A backend as its registry name and constructor settings."""

    name: str
    settings: dict[str, Any]

    def build(self) -> Backend:
        return get_backend(self.name, **self.settings)


def _native_bytes(net: Any) -> _NativeBytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.npz"
        net.save(path)
        return _NativeBytes(path.read_bytes())


def _picklable(obj: Any, what: str) -> _Shared:
    """``obj`` itself, once it is known to pickle: the executor pickles it with the task."""
    try:
        pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # pickle raises many types: PicklingError, AttributeError, TypeError
        raise CapabilityError(
            f"{what} cannot be sent to worker processes: it cannot be pickled "
            f"({type(exc).__name__}: {exc}). A lambda, a closure or a function defined in a "
            "notebook cell cannot travel; define it at module level, or use threads: "
            "executor=concurrent.futures.ThreadPoolExecutor()."
        ) from exc
    return _Shared(obj)


def model_spec(model: Model, shared: bool) -> Any:
    from xai_core.importers.tflite import TFLiteModel
    from xai_core.int8.quantized import QuantizedModel
    from xai_core.nn.network import Network

    if shared:  # threads and the serial loop: native networks keep no state between calls
        return _Shared(model)
    if isinstance(model, (Network, QuantizedModel)):
        return _native_bytes(model)
    if isinstance(model, TFLiteModel):
        from xai_core.importers.tflite.writer import graph_to_bytes

        return _TFLiteBytes(graph_to_bytes(model.graph))
    return _picklable(model, f"model {model!r}")


def backend_spec(backend: Backend) -> Any:
    from xai_core.plugin.manager import get_registry

    config = backend.config()
    registered = get_registry().backends.get(config["name"])
    if registered is type(backend):
        return _BackendByName(config["name"], config["settings"])
    # An unregistered backend class: a copy of the instance itself.
    return _picklable(backend, f"backend {backend!r}")
