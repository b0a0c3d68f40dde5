"""Read Keras models without TensorFlow: ``.keras`` archives, legacy ``.h5`` files, TF.js.

Each reader returns a :class:`KerasSource`: the model's JSON configuration (as Keras writes
it, ``{"class_name": ..., "config": ...}``) and its weights keyed by *scope*, the names of
the nested models and the layer joined by ``/`` (``"dense_1"``, ``"inner/dense"``), each a
dict of variable name (``kernel``, ``bias``, ``gamma``, ``moving_mean``, ...) to ndarray.

- ``.keras`` (Keras 3): a zip with ``config.json`` and ``model.weights.h5``, whose groups
  ``layers/<key>/vars/<i>`` are keyed by the layer's class name in snake case, made unique
  in order (``dense``, ``dense_1``), exactly as Keras's saving library walks the layers.
- legacy ``.h5``: the root attribute ``model_config`` (JSON) and the group
  ``model_weights/<layer>`` whose attribute ``weight_names`` lists ``scope/var`` paths.
- TF.js layers model: ``model.json`` with ``modelTopology`` and a ``weightsManifest`` of
  groups, each naming its shard files and the weights they hold back to back (name,
  shape, dtype, optional uint8 / uint16 / float16 quantisation).

Only JSON, HDF5 datasets and raw little-endian arrays are read: no pickle, no code. Every
declared shape is checked against the bytes present before an array is made.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.errors import CapabilityError, ModelFormatError, ValidationError
from xai_core.importers.ir import check_size
from xai_core.optional import require

__all__ = ["KerasSource", "read_keras_file", "VAR_ORDER"]

#: Largest member of a ``.keras`` archive read into memory, in bytes.
MAX_MEMBER = 2**31

#: Variables each layer class stores, in Keras's order, given its config.
VAR_ORDER = {
    "Dense": lambda c: ["kernel"] + (["bias"] if c.get("use_bias", True) else []),
    "Conv2D": lambda c: ["kernel"] + (["bias"] if c.get("use_bias", True) else []),
    "DepthwiseConv2D": lambda c: ["kernel"] + (["bias"] if c.get("use_bias", True) else []),
    "SeparableConv2D": lambda c: (
        ["depthwise_kernel", "pointwise_kernel"] + (["bias"] if c.get("use_bias", True) else [])
    ),
    "BatchNormalization": lambda c: (
        (["gamma"] if c.get("scale", True) else [])
        + (["beta"] if c.get("center", True) else [])
        + ["moving_mean", "moving_variance"]
    ),
}
MODELS = ("Sequential", "Functional", "Model")


@dataclass
class KerasSource:
    """A Keras model read from a file: configuration, weights by scope, facts."""

    config: dict[str, Any]
    weights: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


def _h5py():
    return require("h5py", extra="import", need="reading Keras files")


def _json(text: Any, where: str) -> Any:
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ModelFormatError(f"{where} is not valid JSON: {exc}") from None


def _dataset(ds, name: str, where: str) -> np.ndarray:
    """A checked array from an HDF5 dataset (floating point only)."""
    h5py = _h5py()
    if not isinstance(ds, h5py.Dataset):
        raise ModelFormatError(f"{where}: weight {name!r} is not a dataset.")
    if ds.dtype.kind not in "fiu":
        raise ModelFormatError(f"{where}: weight {name!r} has dtype {ds.dtype}, not a number.")
    n = check_size(name, ds.shape, None, ds.dtype.itemsize, where)
    arr = np.asarray(ds[()])
    if arr.size != n:
        raise ModelFormatError(
            f"{where}: weight {name!r} declares {ds.shape} but holds {arr.size}."
        )
    return arr


def _split(path: str) -> tuple[str, str]:
    """``"inner/dense/kernel:0"`` -> (``"inner/dense"``, ``"kernel"``)."""
    path = re.sub(r":\d+$", "", path)
    scope, _, var = path.rpartition("/")
    return scope, var


# -- .keras ---------------------------------------------------------------------------
def _snake(name: str) -> str:
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def _walk_keras_weights(group, model: dict, scope: str, out: dict, where: str) -> None:
    """Weights of ``model``'s layers under ``group`` (its ``layers`` subgroup)."""
    layers = model["config"]["layers"]
    if model["class_name"] == "Sequential":
        layers = [lay for lay in layers if lay["class_name"] != "InputLayer"]
    used: dict[str, int] = {}
    for layer in layers:
        key = _snake(layer["class_name"])
        if key in used:
            used[key] += 1
            key = f"{key}_{used[key]}"
        else:
            used[key] = 0
        name = layer["config"]["name"]
        child = f"{scope}/{name}" if scope else name
        sub = group.get(f"layers/{key}") if group is not None else None
        if sub is None:
            continue
        if layer["class_name"] in MODELS:
            _walk_keras_weights(sub, layer, child, out, where)
            continue
        vars_ = sub.get("vars")
        if vars_ is None or not len(vars_):
            continue
        stored = vars_.attrs.get("name")
        if stored is not None and str(stored) != name:
            raise ModelFormatError(
                f"{where}: weights under layers/{key} belong to layer {stored!r}, "
                f"but the configuration has {name!r} there."
            )
        order = VAR_ORDER.get(layer["class_name"])
        if order is None:
            continue  # a layer kind the builder will refuse by name
        names = order(layer["config"])
        if len(vars_) != len(names):
            raise ModelFormatError(
                f"{where}: layer {name!r} stores {len(vars_)} variables; a "
                f"{layer['class_name']} with this configuration has {len(names)} ({names})."
            )
        out[child] = {v: _dataset(vars_[str(i)], f"{name}/{v}", where) for i, v in enumerate(names)}


def read_keras_archive(path: Path) -> KerasSource:
    """A Keras 3 ``.keras`` file."""
    h5py = _h5py()
    where = path.name
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise ModelFormatError(f"{where} is not a .keras archive (not a zip file).") from None
    with zf:
        members = {i.filename: i for i in zf.infolist()}
        for needed in ("config.json", "model.weights.h5"):
            if needed not in members:
                raise ModelFormatError(f"{where} has no {needed}; is it a Keras 3 .keras file?")
            if members[needed].file_size > MAX_MEMBER:
                raise ModelFormatError(f"{where}: {needed} is larger than {MAX_MEMBER} bytes.")
        config = _json(zf.read("config.json"), f"{where}/config.json")
        meta = _json(zf.read("metadata.json"), where) if "metadata.json" in members else {}
        weights_bytes = zf.read("model.weights.h5")
    _check_model_config(config, where)
    out: dict[str, dict[str, np.ndarray]] = {}
    try:
        f = h5py.File(io.BytesIO(weights_bytes), "r")
    except OSError as exc:
        raise ModelFormatError(f"{where}: model.weights.h5 is not HDF5: {exc}") from None
    with f:
        _walk_keras_weights(f, config, "", out, where)
    return KerasSource(config, out, {"source": where, "format": "keras", **meta})


# -- legacy .h5 ---------------------------------------------------------------------------
def read_keras_h5(path: Path) -> KerasSource:
    """A legacy Keras ``.h5`` file (model configuration and weights)."""
    h5py = _h5py()
    where = path.name
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise ModelFormatError(f"{where} is not an HDF5 file: {exc}") from None
    with f:
        if "model_config" not in f.attrs:
            raise ModelFormatError(
                f"{where} has no model_config attribute: it holds weights only, not a model."
            )
        config = _json(f.attrs["model_config"], f"{where} model_config")
        _check_model_config(config, where)
        group = f["model_weights"] if "model_weights" in f else f
        out: dict[str, dict[str, np.ndarray]] = {}
        for layer_name in group:
            sub = group[layer_name]
            names = sub.attrs.get("weight_names", []) if isinstance(sub, h5py.Group) else []
            for wname in names:
                wname = wname.decode("utf-8") if isinstance(wname, bytes) else str(wname)
                if wname not in sub:
                    raise ModelFormatError(f"{where}: weight {wname!r} is listed but missing.")
                scope, var = _split(wname)
                out.setdefault(scope or layer_name, {})[var] = _dataset(sub[wname], wname, where)
        meta = {k: _attr(v) for k, v in f.attrs.items() if k in ("keras_version", "backend")}
    meta = {"source": where, "format": "h5", **meta}
    labels = path.parent / "labels.txt"  # Teachable Machine's Keras export: "0 cat" per line
    if labels.is_file():
        lines = [ln.strip() for ln in labels.read_text(encoding="utf-8").splitlines() if ln.strip()]
        meta["class_names"] = [re.sub(r"^\d+\s+", "", ln) for ln in lines]
    return KerasSource(config, out, meta)


def _attr(v: Any) -> Any:
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


# -- TF.js ----------------------------------------------------------------------------------
_TFJS_DTYPES = {"float32": np.float32, "int32": np.int32, "float16": np.float16}


def read_tfjs(path: Path) -> KerasSource:
    """A TF.js layers model: ``model.json`` (or its folder) and the shard files it names."""
    if path.is_dir():
        path = path / "model.json"
    where = path.name
    if not path.is_file():
        raise ValidationError(f"a TF.js model needs {str(path)!r}; it is not a file.")
    doc = _json(path.read_text(encoding="utf-8"), where)
    if not isinstance(doc, dict) or "modelTopology" not in doc:
        raise ModelFormatError(f"{where} has no modelTopology: is it a TF.js layers model?")
    if doc.get("format") not in (None, "layers-model"):
        raise CapabilityError(
            f"{where} is a TF.js {doc.get('format')!r}; only layers models can be imported."
        )
    topology = doc["modelTopology"]
    config = topology.get("model_config", topology)
    _check_model_config(config, where)
    folder = path.parent.resolve()
    out: dict[str, dict[str, np.ndarray]] = {}
    for g, group in enumerate(doc.get("weightsManifest", [])):
        data = b"".join(_shard(folder, p, where) for p in group.get("paths", []))
        offset = 0
        for spec in group.get("weights", []):
            arr, offset = _tfjs_weight(spec, data, offset, where)
            scope, var = _split(spec["name"])
            out.setdefault(scope, {})[var] = arr
        if offset != len(data):
            raise ModelFormatError(
                f"{where}: weight group {g} declares {offset} bytes but its shards hold {len(data)}."
            )
    meta = {"source": where, "format": "tfjs"}
    labels = path.parent / "metadata.json"  # Teachable Machine puts class names there
    if labels.is_file():
        info = _json(labels.read_text(encoding="utf-8"), labels.name)
        if isinstance(info, dict) and isinstance(info.get("labels"), list):
            meta["class_names"] = [str(x) for x in info["labels"]]
    return KerasSource(config, out, meta)


def _shard(folder: Path, name: Any, where: str) -> bytes:
    if (
        not isinstance(name, str)
        or not name
        or Path(name).is_absolute()
        or ".." in Path(name).parts
    ):
        raise ModelFormatError(f"{where}: weight shard {name!r} is not a file name beside it.")
    shard = (folder / name).resolve()
    if folder not in shard.parents or not shard.is_file():
        raise ModelFormatError(f"{where}: weight shard {name!r} is missing.")
    return shard.read_bytes()


def _tfjs_weight(spec: dict, data: bytes, offset: int, where: str) -> tuple[np.ndarray, int]:
    name, shape = spec.get("name"), spec.get("shape")
    quant = spec.get("quantization")
    dtype_name = quant.get("dtype") if quant else spec.get("dtype", "float32")
    stored = {"uint8": np.uint8, "uint16": np.uint16, **_TFJS_DTYPES}.get(dtype_name)
    if stored is None or not isinstance(name, str):
        raise ModelFormatError(f"{where}: weight {name!r} has an unsupported dtype {dtype_name!r}.")
    stored = np.dtype(stored).newbyteorder("<")
    count = check_size(name, shape, None, stored.itemsize, where)
    end = offset + count * stored.itemsize
    if end > len(data):
        raise ModelFormatError(
            f"{where}: weight {name!r} of shape {shape} needs bytes {offset}..{end} but the "
            f"shards hold {len(data)}."
        )
    arr = np.frombuffer(data, dtype=stored, count=count, offset=offset).reshape(shape)
    if quant and dtype_name in ("uint8", "uint16"):
        arr = arr.astype(np.float32) * np.float32(quant["scale"]) + np.float32(quant["min"])
    return np.array(arr, dtype=np.float32), end


# -- any file -------------------------------------------------------------------------------
def _check_model_config(config: Any, where: str) -> None:
    if not isinstance(config, dict) or "class_name" not in config or "config" not in config:
        raise ModelFormatError(f"{where}: the model configuration has no class_name and config.")
    if config["class_name"] not in MODELS:
        raise CapabilityError(
            f"{where}: a {config['class_name']!r} model; Sequential and Functional models "
            "can be imported."
        )


def read_keras_file(path: Any) -> KerasSource:
    """Read ``path`` by its kind: ``.keras``, ``.h5`` / ``.hdf5``, or TF.js ``model.json`` / folder."""
    p = Path(path)
    if p.is_dir() or p.suffix == ".json":
        return read_tfjs(p)
    if not p.is_file():
        raise ValidationError(f"model_or_path: {str(p)!r} is not a file or a TF.js folder.")
    if p.suffix == ".keras":
        return read_keras_archive(p)
    if p.suffix in (".h5", ".hdf5"):
        return read_keras_h5(p)
    raise ValidationError(
        f"model_or_path must be a .keras, .h5 or TF.js model.json file (or its folder); "
        f"got {p.name!r}."
    )
