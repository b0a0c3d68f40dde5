"""What travels to a chunk's worker: models and backends in forms that can be rebuilt there.

A native network travels as its saved form (the ``.npz`` bytes of
:func:`xai_core.nn.io.save_model`: weights plus JSON, never pickle), a registered backend as
its registry name and constructor settings (:meth:`Backend.config`), a black-box model by
pickle when it can be pickled. Serial runs and thread pools share objects as they are
(except native networks: layers cache their last forward pass, so every chunk gets its own).
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
    from xai_core.nn.io import save_model

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.npz"
        save_model(net, path)
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
    from xai_core.nn.sequential import Sequential

    if isinstance(model, Sequential):
        # Also for threads and the serial loop: layers cache their last forward pass, so
        # every chunk gets a network of its own, rebuilt from the same bytes.
        return _native_bytes(model)
    if shared:
        return _Shared(model)
    if model.is_quantized:
        raise CapabilityError(
            f"{model!r} is an int8 model, which has no saved form to send to worker processes; "
            "use threads (executor=concurrent.futures.ThreadPoolExecutor()), or run the float "
            "network on the workers and quantise there."
        )
    return _picklable(model, f"model {model!r}")


def backend_spec(backend: Backend) -> Any:
    from xai_core.plugin.manager import get_registry

    config = backend.config()
    registered = get_registry().backends.get(config["name"])
    if registered is type(backend):
        return _BackendByName(config["name"], config["settings"])
    # An unregistered backend class: a copy of the instance itself.
    return _picklable(backend, f"backend {backend!r}")
