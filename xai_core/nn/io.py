"""Saving and loading networks: one ``.npz`` file, weights plus a JSON architecture, never pickle.

The file holds ``architecture``, the UTF-8 bytes of a JSON document as a uint8 array, and
one array per parameter, ``layer_<i>.<name>``. The JSON records ``format``
(``"xai_core.nn.Sequential"``), ``format_version``, the input shape, dtype, output names,
class labels and each layer's type, name and constructor arguments.
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.errors import ModelFormatError, ValidationError
from xai_core.files import atomic_write
from xai_core.nn.activations import Linear, ReLU, Sigmoid, Softmax, Tanh
from xai_core.nn.layer import Layer
from xai_core.nn.layers import AvgPool2D, Conv2D, Dense, Flatten, MaxPool2D, Reshape
from xai_core.nn.sequential import Sequential

__all__ = ["FORMAT", "FORMAT_VERSION", "LAYER_TYPES", "save_model", "load_model"]

FORMAT = "xai_core.nn.Sequential"
#: The version this code writes; it reads this version and older ones.
FORMAT_VERSION = 1

#: Layer classes by the type name stored in files.
LAYER_TYPES: dict[str, type[Layer]] = {
    cls.__name__: cls
    for cls in (
        Dense,
        Conv2D,
        MaxPool2D,
        AvgPool2D,
        Flatten,
        Reshape,
        ReLU,
        Tanh,
        Sigmoid,
        Linear,
        Softmax,
    )
}


def _json_labels(classes: np.ndarray | None) -> list[Any] | None:
    if classes is None:
        return None
    values = np.asarray(classes).tolist()
    if all(isinstance(v, (bool, int, float, str)) for v in values):
        return values
    return [str(v) for v in values]


def save_model(net: Sequential, path: str | os.PathLike) -> None:
    """Write ``net`` to ``path`` (one ``.npz`` file, written atomically).

    Parameters
    ----------
    net : Sequential
        A built network.
    path : str or path-like
        The file; no suffix is added.
    """
    if not isinstance(net, Sequential):
        raise ValidationError(f"net must be a Sequential; got {type(net).__name__}.")
    net._require_built()
    for layer in net.layers:
        if type(layer).__name__ not in LAYER_TYPES or LAYER_TYPES[type(layer).__name__] is not type(
            layer
        ):
            raise ValidationError(
                f"layer {layer.name!r} of type {type(layer).__name__} cannot be saved; "
                f"saveable types: {', '.join(sorted(LAYER_TYPES))}."
            )
    arch = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "name": net.name,
        "input_shape": list(net.input_shape),
        "dtype": str(net.dtype),
        "seed": net.seed,
        "output_names": list(net.output_names) if net.output_names is not None else None,
        "classes": _json_labels(net.classes_),
        "classes_dtype": str(np.asarray(net.classes_).dtype) if net.classes_ is not None else None,
        "layers": [
            {
                "type": type(layer).__name__,
                "name": layer.name,
                "config": layer.get_config(),
                "params": list(layer.params),
            }
            for layer in net.layers
        ],
    }
    arrays = {"architecture": np.frombuffer(json.dumps(arch).encode("utf-8"), dtype=np.uint8)}
    for i, layer in enumerate(net.layers):
        for key, value in layer.params.items():
            arrays[f"layer_{i}.{key}"] = value
    atomic_write(path, lambda fh: np.savez(fh, **arrays))


def load_model(path: str | os.PathLike) -> Sequential:
    """Read a network written by :meth:`Sequential.save`.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    Sequential
        Built, with the saved weights, output names and classes.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ModelFormatError
        If the file is not a saved network, is truncated or corrupt, or comes from a newer
        format version. The message names the file and what is wrong.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no model file at {str(path)!r}.")

    def bad(what: str) -> ModelFormatError:
        return ModelFormatError(f"{str(path)!r} is not a readable xai-core model: {what}.")

    try:
        npz = np.load(path, allow_pickle=False)
        if not isinstance(npz, np.lib.npyio.NpzFile):
            raise bad("it is a single .npy array, not an .npz archive")
        with npz:
            arrays = {key: npz[key] for key in npz.files}
    except ModelFormatError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError) as exc:
        raise bad(
            f"the file is corrupt or not an .npz archive ({type(exc).__name__}: {exc})"
        ) from exc
    raw = arrays.pop("architecture", None)
    if raw is None:
        raise bad("it has no 'architecture' entry")
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise bad(f"its 'architecture' entry is {raw.dtype} of shape {raw.shape}, not uint8 bytes")
    try:
        arch = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad(f"its architecture is not valid JSON ({exc})") from exc
    if not isinstance(arch, dict) or arch.get("format") != FORMAT:
        raise bad(
            f"its format is {arch.get('format') if isinstance(arch, dict) else arch!r}, not {FORMAT!r}"
        )
    version = arch.get("format_version")
    if not isinstance(version, int) or version < 1:
        raise bad(f"its format_version {version!r} is not a positive integer")
    if version > FORMAT_VERSION:
        raise ModelFormatError(
            f"{str(path)!r} was written in model format version {version}; this xai-core reads "
            f"versions up to {FORMAT_VERSION}. Upgrade xai-core to load it."
        )
    try:
        return _rebuild(arch, arrays, bad)
    except ModelFormatError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise bad(f"its architecture is inconsistent ({type(exc).__name__}: {exc})") from exc


def _rebuild(arch: dict[str, Any], arrays: dict[str, np.ndarray], bad) -> Sequential:
    layers = []
    for i, spec in enumerate(arch["layers"]):
        cls = LAYER_TYPES.get(spec["type"])
        if cls is None:
            raise bad(f"layer {i} has unknown type {spec['type']!r}")
        layers.append(cls(**spec["config"], name=spec["name"]))
    net = Sequential(
        layers,
        input_shape=tuple(arch["input_shape"]),
        output_names=arch["output_names"],
        seed=arch.get("seed", 0),
        dtype=arch["dtype"],
        name=arch.get("name"),
    )
    for i, (layer, spec) in enumerate(zip(net.layers, arch["layers"])):
        if sorted(spec["params"]) != sorted(layer.params):
            raise bad(
                f"layer {i} ({layer.name}) lists parameters {spec['params']}, expected {list(layer.params)}"
            )
        for key in layer.params:
            value = arrays.pop(f"layer_{i}.{key}", None)
            if value is None:
                raise bad(f"the array layer_{i}.{key} is missing")
            if value.shape != layer.params[key].shape or value.dtype.kind != "f":
                raise bad(
                    f"layer_{i}.{key} is {value.dtype} of shape {value.shape}; expected floats of "
                    f"shape {layer.params[key].shape}"
                )
            layer.params[key] = value.astype(net.dtype, copy=False)
    if arrays:
        raise bad(f"it holds unexpected arrays {sorted(arrays)[:5]}")
    if arch.get("classes") is not None:
        net.classes_ = np.asarray(arch["classes"], dtype=arch.get("classes_dtype") or None)
    return net
