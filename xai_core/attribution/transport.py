"""What travels to a chunk's worker: models and backends in forms that can be rebuilt there.

A native network or a quantised model travels as its saved form (the ``.npz`` bytes of
its ``save``: weights plus JSON, never pickle), a ``.tflite`` model as its flatbuffer
bytes, a backend as its class and constructor settings (:meth:`Backend.config`), built
afresh for each chunk, a black-box model by pickle when it can be pickled. A worker keeps
the last few models it built from bytes, by their digest, so that the chunks after the
first (and the calls after the first, on the pool that lives across calls) skip the build. Serial runs and
thread pools share models as they are (native networks keep no state between calls).
Nothing here looks a name up: the class travels as pickle names any class, by its module
and qualified name, so a worker rebuilds the very backend the caller resolved.
"""

from __future__ import annotations

import hashlib
import pickle
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xai_core.backends.base import Backend
from xai_core.errors import CapabilityError
from xai_core.model.base import Model

__all__ = ["backend_spec", "model_spec"]


#: How many models built from bytes a worker keeps (by digest), most recent first.
KEPT_MODELS = 4
_BUILT: OrderedDict[str, Model] = OrderedDict()
_BUILT_LOCK = threading.Lock()  # a Dask worker runs tasks on several threads


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _kept(digest: str, build: Callable[[], Model]) -> Model:
    """The model built from the bytes of ``digest`` in this process, built once."""
    with _BUILT_LOCK:
        model = _BUILT.get(digest)
        if model is not None:
            _BUILT.move_to_end(digest)
            return model
    model = build()  # outside the lock: a slow build does not hold the other threads
    with _BUILT_LOCK:
        _BUILT[digest] = model
        while len(_BUILT) > KEPT_MODELS:
            _BUILT.popitem(last=False)
    return model


@dataclass(frozen=True)
class _NativeBytes:
    """A native network as the bytes of its saved ``.npz`` file, and their digest."""

    data: bytes
    digest: str

    def build(self) -> Model:
        return _kept(self.digest, self._load)

    def _load(self) -> Model:
        from xai_core.nn.io import load_model

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "model.npz"
            path.write_bytes(self.data)
            return load_model(path)


@dataclass(frozen=True)
class _TFLiteBytes:
    """A ``.tflite`` model as its flatbuffer bytes, and their digest."""

    data: bytes
    digest: str

    def build(self) -> Model:
        from xai_core.importers.tflite import from_tflite

        return _kept(self.digest, lambda: from_tflite(self.data))


@dataclass(frozen=True)
class _Shared:
    """An object used as it is (serial runs and thread pools: nothing is serialised)."""

    obj: Any

    def build(self) -> Any:
        return self.obj


@dataclass(frozen=True)
class _BackendByClass:
    """A backend as its class and constructor settings, built afresh where it runs."""

    cls: type[Backend]
    settings: dict[str, Any]

    def build(self) -> Backend:
        return self.cls(**self.settings)


def _importable(cls: type) -> bool:
    """Whether pickle can name ``cls`` (by module and qualified name), as it names any class."""
    try:
        pickle.dumps(cls, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - pickle raises many types for a local class
        return False
    return True


def _native_bytes(net: Any) -> _NativeBytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.npz"
        net.save(path)
        data = path.read_bytes()
    return _NativeBytes(data, _digest(data))


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

        data = graph_to_bytes(model.graph)
        return _TFLiteBytes(data, _digest(data))
    return _picklable(model, f"model {model!r}")


def backend_spec(backend: Backend) -> Any:
    """How a chunk's worker gets ``backend``: rebuilt from its class and settings.

    Parameters
    ----------
    backend : Backend
        The instance the caller resolved.

    Returns
    -------
    object
        With a ``build()`` that returns a fresh backend of the same class and settings;
        for a class pickle cannot name (one defined inside a function), the instance itself,
        once it is known to pickle.
    """
    cls = type(backend)
    if _importable(cls):
        return _BackendByClass(cls, backend.config()["settings"])
    return _picklable(backend, f"backend {backend!r}")
