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

Only JSON, HDF5 datasets and raw little-endian arrays are read: no pickle, no code, and
nothing from outside the file. Every JSON document goes through :mod:`xai_core.jsonfile`
(size, depth, UTF-8) and the configuration through one schema check that names the path
of a bad field (``config.layers[3].config.units``). Before any weight is read, an HDF5 file
is walked whole (:func:`check_hdf5`): a soft or external link, a virtual dataset, data kept
in an external file, or a filter that would be loaded from a plugin is refused, and every
dataset's declared size is checked against the bytes the file stores for it and, all
together, against the memory limit. A TF.js manifest's byte counts are checked against the
shards' real sizes before a shard is read.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.attribution.cost import Cost, check_cost, format_bytes
from xai_core.errors import CapabilityError, ModelFormatError, ValidationError, XaiError
from xai_core.files import ZipArchive, read_regular_file
from xai_core.importers.ir import check_size
from xai_core.importers.keras_layers import LAYER_CONFIGS, layer_key
from xai_core.jsonfile import (
    ANYTHING,
    MAX_JSON_BYTES,
    Either,
    Int,
    List,
    Num,
    Obj,
    Str,
    check,
    check_unique,
    join_path,
    parse_json,
    read_json,
)
from xai_core.optional import require

__all__ = [
    "INPUT_SHAPE",
    "KerasSource",
    "VAR_ORDER",
    "check_hdf5",
    "check_model_config",
    "endpoints",
    "read_keras_file",
    "tensor_ref",
]

#: Largest member of a ``.keras`` archive read into memory, in bytes.
MAX_MEMBER = 2**31
#: Most bytes all members of a ``.keras`` archive may declare together.
MAX_ARCHIVE = 2 * MAX_MEMBER
#: Most links an HDF5 file may hold (each is examined before any weight is read).
MAX_HDF5_LINKS = 200_000
#: Most values one HDF5 attribute may hold (``weight_names`` lists a layer's variables).
MAX_ATTR_VALUES = 100_000
#: Most bytes a compressed HDF5 dataset may declare per byte it stores (deflate's own
#: limit is about 1032 to 1); an unwritten chunked dataset stores none.
MAX_INFLATION = 1100
#: Largest ``labels.txt`` read beside a model.
MAX_LABELS_BYTES = 2**20

#: HDF5's own filters (compression, checksums); any other would be loaded from a plugin.
_BUILTIN_FILTERS = {
    1: "deflate",
    2: "shuffle",
    3: "fletcher32",
    4: "szip",
    5: "nbit",
    6: "scaleoffset",
}

#: Layer classes whose variables a ``cell`` sub-layer holds.
RECURRENT = ("LSTM", "GRU")
#: Variables each layer class stores, in Keras's order, given its config.
VAR_ORDER = {
    "Dense": lambda c: ["kernel"] + (["bias"] if c.get("use_bias", True) else []),
    "Conv1D": lambda c: ["kernel"] + (["bias"] if c.get("use_bias", True) else []),
    "Conv2D": lambda c: ["kernel"] + (["bias"] if c.get("use_bias", True) else []),
    # a recurrent layer's variables are its cell's (``layers/lstm/cell/vars``)
    **{
        k: lambda c: ["kernel", "recurrent_kernel"] + (["bias"] if c.get("use_bias", True) else [])
        for k in RECURRENT
    },
    "DepthwiseConv2D": lambda c: ["kernel"] + (["bias"] if c.get("use_bias", True) else []),
    "SeparableConv2D": lambda c: (
        ["depthwise_kernel", "pointwise_kernel"] + (["bias"] if c.get("use_bias", True) else [])
    ),
    "BatchNormalization": lambda c: (
        (["gamma"] if c.get("scale", True) else [])
        + (["beta"] if c.get("center", True) else [])
        + ["moving_mean", "moving_variance"]
    ),
    "Normalization": lambda c: [] if c.get("mean") is not None else ["mean", "variance", "count"],
    "LayerNormalization": lambda c: (
        (["gamma"] if c.get("scale", True) else []) + (["beta"] if c.get("center", True) else [])
    ),
    "LayerScale": lambda c: ["gamma"],
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


def _split(path: str) -> tuple[str, str]:
    """``"inner/dense/kernel:0"`` -> (``"inner/dense"``, ``"kernel"``)."""
    path = re.sub(r":\d+$", "", path)
    scope, _, var = path.rpartition("/")
    return scope, var


# -- the configuration ----------------------------------------------------------------------
#: A declared input shape: ``[null, 28, 28, 1]`` (the batch axis null or an integer).
INPUT_SHAPE = List(Either(None, Int(lo=1)))
_LAYER = Obj(
    required={"class_name": Str(), "config": Obj(required={"name": Str()})},
    optional={
        "inbound_nodes": List(),
        "build_config": Either(None, Obj()),
    },
)


def check_model_config(config: Any, where: str, path: str = "") -> None:
    """Check a Keras model configuration before anything reads it.

    The structure (a ``class_name`` and a ``config`` with a non-empty ``layers`` list of
    uniquely named layers; a functional model's ``input_layers`` / ``output_layers``; nested
    models the same way) and every supported layer's own fields
    (:data:`~xai_core.importers.keras_layers.LAYER_CONFIGS`) are checked.

    Parameters
    ----------
    config : object
        The parsed JSON: ``{"class_name": "Sequential", "config": {...}}``.
    where : str
        The document, for messages (``"model.keras/config.json"``).
    path : str, optional
        Where ``config`` sits in the document (``"modelTopology.model_config"``).

    Raises
    ------
    ModelFormatError
        The first field that is missing or of the wrong kind, with its path.
    CapabilityError
        The top level is not a Sequential or functional model.
    """
    check(config, Obj(required={"class_name": Str(), "config": Obj()}), where, path)
    if config["class_name"] not in MODELS:
        raise CapabilityError(
            f"{where}: a {config['class_name']!r} model; Sequential and Functional models "
            "can be imported."
        )
    _check_model(config, where, path)


def _check_model(model: dict, where: str, path: str) -> None:
    cfg_path = join_path(path, "config")
    cfg = check(model["config"], Obj(required={"layers": List(_LAYER, min_len=1)}), where, cfg_path)
    layers_path = join_path(cfg_path, "layers")
    names = [layer["config"]["name"] for layer in cfg["layers"]]
    check_unique(names, "layer name", where, layers_path)
    if model["class_name"] != "Sequential":
        for key in ("input_layers", "output_layers"):
            if key not in cfg:
                raise ModelFormatError(f"{where}: {cfg_path}: missing the key {key!r}.")
            endpoints(cfg[key], where, join_path(cfg_path, key))
    for i, layer in enumerate(cfg["layers"]):
        at = join_path(layers_path, i)
        if layer["class_name"] in MODELS:
            _check_model(layer, where, at)
        elif layer_key(layer) in LAYER_CONFIGS:
            check(layer["config"], LAYER_CONFIGS[layer_key(layer)], where, join_path(at, "config"))


def tensor_ref(value: Any, where: str, path: str) -> tuple[str, int, int]:
    """A ``[layer, node, tensor]`` reference (Keras 2 adds a fourth item), checked."""
    check(value, List(ANYTHING, min_len=3), where, path)
    check(value[0], Str(), where, join_path(path, 0))
    check(value[1], Int(lo=0), where, join_path(path, 1))
    check(value[2], Int(lo=0), where, join_path(path, 2))
    return value[0], value[1], value[2]


def endpoints(value: Any, where: str, path: str) -> list[tuple[str, int, int]]:
    """``input_layers`` / ``output_layers``: one ``[name, node, tensor]`` or a list of them."""
    check(value, List(ANYTHING, min_len=1), where, path)
    if isinstance(value[0], str):
        return [tensor_ref(value, where, path)]
    return [tensor_ref(v, where, join_path(path, i)) for i, v in enumerate(value)]


# -- HDF5 -----------------------------------------------------------------------------------
#: What h5py raises on a damaged file or object.
_H5_ERRORS = (OSError, KeyError, ValueError, RuntimeError, TypeError, IndexError, OverflowError)


def _guarded(where: str, what: str, call: Any) -> Any:
    """``call()``, with h5py's errors on a damaged file turned into one ModelFormatError."""
    try:
        return call()
    except XaiError:
        raise
    except _H5_ERRORS as exc:
        raise ModelFormatError(
            f"{where}: {what} cannot be read (a damaged HDF5 file?): {exc}"
        ) from None


def _dataset_problem(ds: Any, name: str, where: str, file_size: int) -> tuple[str | None, int]:
    """What is wrong with dataset ``name`` (or None), and its declared size in bytes."""
    if ds.is_virtual:
        return (
            f"dataset {name!r} is a virtual dataset mapped onto other files; nothing is read "
            "from outside the file",
            0,
        )
    if ds.external:
        files = sorted({str(entry[0]) for entry in ds.external})
        return (
            f"dataset {name!r} keeps its data in the external file(s) {files}; nothing is "
            "read from outside the file",
            0,
        )
    plist = ds.id.get_create_plist()
    n_filters = plist.get_nfilters()
    for i in range(n_filters):
        code = plist.get_filter(i)[0]
        if code not in _BUILTIN_FILTERS:
            return (
                f"dataset {name!r} uses HDF5 filter {code}, which would be loaded from a "
                "plugin; only HDF5's own filters are read",
                0,
            )
    shape = tuple(ds.shape) if ds.shape is not None else (0,)
    declared = int(np.prod(shape, dtype=object)) * ds.dtype.itemsize
    stored = ds.id.get_storage_size() if declared else 0
    if stored > file_size:
        return (
            f"dataset {name!r} claims {stored:,} bytes of storage in a {file_size:,}-byte file",
            0,
        )
    if stored < declared and (n_filters == 0 or declared > MAX_INFLATION * stored):
        how = "" if n_filters == 0 else f" (compressed, at most {MAX_INFLATION} times that)"
        return (
            f"dataset {name!r} declares shape {shape} of {ds.dtype} ({declared:,} bytes) but "
            f"the file stores {stored:,} bytes for it{how}",
            0,
        )
    check_size(name, shape, None, ds.dtype.itemsize, where)  # the element and memory limits
    return None, declared


def check_hdf5(f: Any, where: str, file_size: int) -> None:
    """Walk every link of an open HDF5 file and refuse what would read outside it or blow up.

    Refused: soft, external and user-defined links; virtual datasets; datasets stored in
    external files; filters other than HDF5's own (they would be loaded from a plugin);
    a dataset whose declared size is not stored in the file (an unallocated
    ``(2**31,)`` float64 dataset would be 16 GiB of fill values); more than
    :data:`MAX_HDF5_LINKS` links; declared sizes adding up to more than the memory limit.

    Parameters
    ----------
    f : h5py.File
    where : str
        The file, for messages.
    file_size : int
        Its size in bytes.

    Raises
    ------
    ModelFormatError
        Naming the file, the path inside it and the problem.
    ResourceError
        The datasets together are larger than the memory limit.
    """
    h5py = _h5py()
    total = 0
    count = 0

    def visit(name: str) -> str | None:
        try:
            return examine(name)
        except Exception as exc:  # noqa: BLE001 - h5py cannot carry it out of the visit
            errors.append(exc)
            return "stop"

    def examine(name: str) -> str | None:
        nonlocal total, count
        count += 1
        if count > MAX_HDF5_LINKS:
            return f"the file holds more than {MAX_HDF5_LINKS:,} links"
        link = f.get(name, getlink=True)
        if isinstance(link, h5py.SoftLink):
            return f"{name!r} is a soft link to {link.path!r}; links are not followed"
        if isinstance(link, h5py.ExternalLink):
            return (
                f"{name!r} is an external link to {link.path!r} in {link.filename!r}; nothing "
                "is read from outside the file"
            )
        if not isinstance(link, h5py.HardLink):
            return f"{name!r} is a user-defined link; links are not followed"
        obj = f.get(name)
        if isinstance(obj, h5py.Dataset):
            problem, declared = _dataset_problem(obj, name, where, file_size)
            if problem:
                return problem
            total += declared
        return None

    errors: list[Exception] = []
    problem = _guarded(where, "its links", lambda: f.visit_links(visit))
    if errors:
        _guarded(where, "its links", lambda: _reraise(errors[0]))
    if problem:
        raise ModelFormatError(f"{where}: {problem}.")
    check_cost(
        Cost(0, total, f"{format_bytes(total)} of weights declared"),
        f"{where}: reading its weights",
    )


def _reraise(exc: Exception) -> None:
    raise exc


def _attr(obj: Any, key: str, where: str, file_size: int, default: Any = None) -> Any:
    """Attribute ``key`` of an HDF5 object, its size checked before it is read."""

    def read() -> Any:
        if key not in obj.attrs:
            return default
        aid = obj.attrs.get_id(key)
        n = int(np.prod(aid.shape)) if aid.shape else 1
        # (HDF5 reports the storage of an empty attribute as an error)
        if n > MAX_ATTR_VALUES or (n and aid.get_storage_size() > file_size):
            raise ModelFormatError(
                f"{where}: attribute {key!r} of {obj.name!r} declares {n:,} values; at most "
                f"{MAX_ATTR_VALUES:,} are read."
            )
        return obj.attrs[key]

    return _guarded(where, f"attribute {key!r}", read)


def _text(value: Any, where: str, what: str) -> bytes:
    """An attribute holding one string (a JSON document), as UTF-8 bytes."""
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(()).item()
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, bytes):
        return value
    raise ModelFormatError(f"{where}: {what} must be one string; got {type(value).__name__}.")


def _dataset(ds: Any, name: str, where: str) -> np.ndarray:
    """A checked array from an HDF5 dataset (numbers only), after :func:`check_hdf5`."""
    h5py = _h5py()
    if not isinstance(ds, h5py.Dataset):
        raise ModelFormatError(f"{where}: weight {name!r} is not a dataset.")
    if ds.dtype.kind not in "fiu":
        raise ModelFormatError(f"{where}: weight {name!r} has dtype {ds.dtype}, not a number.")
    n = check_size(name, ds.shape if ds.shape is not None else (0,), None, ds.dtype.itemsize, where)
    arr = np.asarray(_guarded(where, f"weight {name!r}", lambda: ds[()]))
    if arr.size != n:
        raise ModelFormatError(
            f"{where}: weight {name!r} declares {ds.shape} but holds {arr.size}."
        )
    return _finite(arr, name, where)


def _finite(arr: np.ndarray, name: str, where: str) -> np.ndarray:
    """``arr``, refused when it holds NaN or infinity (the network would compute NaN)."""
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ModelFormatError(
            f"{where}: weight {name!r} holds {bad} NaN or infinite value(s) of {arr.size}."
        )
    return arr


# -- .keras ---------------------------------------------------------------------------------
def _snake(name: str) -> str:
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def _walk_keras_weights(group, model: dict, scope: str, out: dict, where: str) -> None:
    """Weights of ``model``'s layers under ``group`` (its ``layers`` subgroup)."""
    h5py = _h5py()
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
        if not isinstance(sub, h5py.Group):
            raise ModelFormatError(f"{where}: layers/{key} is not a group.")
        if layer["class_name"] in MODELS:
            _walk_keras_weights(sub, layer, child, out, where)
            continue
        if layer["class_name"] == "MultiHeadAttention":
            out[child] = _mha_weights(sub, layer["config"], name, where)
            continue
        vars_ = sub.get("cell/vars" if layer["class_name"] in RECURRENT else "vars")
        if vars_ is None or not isinstance(vars_, h5py.Group) or not len(vars_):
            continue
        stored = vars_.attrs.get("name")
        if stored is not None and layer["class_name"] in RECURRENT:
            stored = None  # the cell's own name ("lstm_cell"), not the layer's
        if stored is not None and str(stored) != name:
            raise ModelFormatError(
                f"{where}: weights under layers/{key} belong to layer {stored!r}, "
                f"but the configuration has {name!r} there."
            )
        order = VAR_ORDER.get(layer["class_name"])
        if order is None:
            continue  # a layer kind the builder will refuse by name
        names = order(layer["config"])
        if len(vars_) != len(names) or any(str(i) not in vars_ for i in range(len(names))):
            raise ModelFormatError(
                f"{where}: layer {name!r} stores variables {sorted(vars_)}; a "
                f"{layer['class_name']} with this configuration has {len(names)} ({names}), "
                f"stored as 0..{len(names) - 1}."
            )
        out[child] = {v: _dataset(vars_[str(i)], f"{name}/{v}", where) for i, v in enumerate(names)}


#: MultiHeadAttention's sub-layers in a ``.keras`` file, and the names the builder reads.
_MHA_GROUPS = (
    ("query_dense", "query"),
    ("key_dense", "key"),
    ("value_dense", "value"),
    ("output_dense", "attention_output"),
)


def _mha_weights(group, config: dict, name: str, where: str) -> dict[str, np.ndarray]:
    """A MultiHeadAttention's four projections: ``"query/kernel"``, ``"query/bias"``, ..."""
    h5py = _h5py()
    names = ["kernel"] + (["bias"] if config.get("use_bias", True) else [])
    out = {}
    for sub, short in _MHA_GROUPS:
        vars_ = group.get(f"{sub}/vars")
        if not isinstance(vars_, h5py.Group) or sorted(vars_) != [
            str(i) for i in range(len(names))
        ]:
            have = sorted(vars_) if isinstance(vars_, h5py.Group) else "nothing"
            raise ModelFormatError(
                f"{where}: MultiHeadAttention {name!r}: {sub}/vars holds {have}; it needs "
                f"{len(names)} variables ({names})."
            )
        for i, v in enumerate(names):
            out[f"{short}/{v}"] = _dataset(vars_[str(i)], f"{name}/{sub}/{v}", where)
    return out


_KERAS_METADATA = Obj(optional={"keras_version": Str(), "date_saved": Str()})


def read_keras_archive(path: Path) -> KerasSource:
    """A Keras 3 ``.keras`` file."""
    h5py = _h5py()
    where = path.name
    with ZipArchive(path, max_total=MAX_ARCHIVE, what=where, kind="a .keras archive") as zf:
        for needed in ("config.json", "model.weights.h5"):
            if needed not in zf.names:
                raise ModelFormatError(f"{where} has no {needed}; is it a Keras 3 .keras file?")
        config = parse_json(
            zf.read("config.json", max_bytes=MAX_JSON_BYTES), f"{where}/config.json"
        )
        meta: dict[str, Any] = {}
        if "metadata.json" in zf.names:
            info = parse_json(
                zf.read("metadata.json", max_bytes=MAX_JSON_BYTES), f"{where}/metadata.json"
            )
            check(info, _KERAS_METADATA, f"{where}/metadata.json")
            meta = {k: info[k] for k in ("keras_version", "date_saved") if k in info}
        size = zf.size("model.weights.h5")
        if size > MAX_MEMBER:  # refused by the read below, before the memory check
            zf.read("model.weights.h5", max_bytes=MAX_MEMBER)
        check_cost(
            Cost(0, 2 * size, "model.weights.h5 and its arrays"), f"{where}: reading its weights"
        )
        weights_bytes = zf.read("model.weights.h5", max_bytes=MAX_MEMBER)
    check_model_config(config, f"{where}/config.json")
    out: dict[str, dict[str, np.ndarray]] = {}
    inner = f"{where}/model.weights.h5"
    f = _guarded(inner, "the file", lambda: h5py.File(io.BytesIO(weights_bytes), "r"))
    with f:
        check_hdf5(f, inner, len(weights_bytes))
        _guarded(inner, "the weights", lambda: _walk_keras_weights(f, config, "", out, inner))
    return KerasSource(config, out, {"source": where, "format": "keras", **meta})


# -- legacy .h5 -----------------------------------------------------------------------------
def _h5_weights(f: Any, where: str, file_size: int) -> dict[str, dict[str, np.ndarray]]:
    h5py = _h5py()
    group = f["model_weights"] if "model_weights" in f else f
    if not isinstance(group, h5py.Group):
        raise ModelFormatError(f"{where}: model_weights is not a group.")
    out: dict[str, dict[str, np.ndarray]] = {}
    for layer_name in group:
        sub = group[layer_name]
        if not isinstance(sub, h5py.Group):
            continue
        names = _attr(sub, "weight_names", where, file_size, default=np.zeros(0))
        names = np.asarray(names).reshape(-1)
        for wname in names.tolist():
            if isinstance(wname, bytes):
                wname = wname.decode("utf-8", "replace")
            if not isinstance(wname, str) or not wname:
                raise ModelFormatError(
                    f"{where}: layer {layer_name!r} lists a weight name that is not a string: "
                    f"{wname!r}."
                )
            if wname not in sub:
                raise ModelFormatError(f"{where}: weight {wname!r} is listed but missing.")
            scope, var = _split(wname)
            slot = out.setdefault(scope or layer_name, {})
            if var in slot:
                raise ModelFormatError(
                    f"{where}: weight {var!r} of {scope or layer_name!r} is listed twice."
                )
            slot[var] = _dataset(sub[wname], wname, where)
    return out


def read_keras_h5(path: Path) -> KerasSource:
    """A legacy Keras ``.h5`` file (model configuration and weights)."""
    h5py = _h5py()
    where = path.name
    file_size = path.stat().st_size
    try:
        f = h5py.File(path, "r")
    except _H5_ERRORS as exc:
        raise ModelFormatError(f"{where} is not an HDF5 file: {exc}") from None
    with f:
        check_hdf5(f, where, file_size)
        raw = _attr(f, "model_config", where, file_size)
        if raw is None:
            raise ModelFormatError(
                f"{where} has no model_config attribute: it holds weights only, not a model."
            )
        config = parse_json(_text(raw, where, "model_config"), f"{where} model_config")
        check_model_config(config, f"{where} model_config")
        out = _guarded(where, "the weights", lambda: _h5_weights(f, where, file_size))
        meta = {}
        for key in ("keras_version", "backend"):
            value = _attr(f, key, where, file_size)
            if value is not None:
                meta[key] = _text(value, where, key).decode("utf-8", "replace")
    meta = {"source": where, "format": "h5", **meta}
    labels = path.parent / "labels.txt"  # Teachable Machine's Keras export: "0 cat" per line
    if labels.is_file():
        meta["class_names"] = _labels_beside(labels)
    return KerasSource(config, out, meta)


def _labels_beside(labels: Path) -> list[str]:
    from xai_core.importers.teachable import read_labels
    from xai_core.jsonfile import decode_utf8

    raw = read_regular_file(
        labels, max_bytes=MAX_LABELS_BYTES, what=labels.name, error=ModelFormatError
    )
    return read_labels(decode_utf8(raw, labels.name), where=labels.name)


# -- TF.js ----------------------------------------------------------------------------------
_TFJS_DTYPES = {"float32": np.float32, "int32": np.int32, "float16": np.float16}
_STORED = {"uint8": np.uint8, "uint16": np.uint16, **_TFJS_DTYPES}
_QUANT = Obj(
    required={"dtype": Str(choices=("uint8", "uint16", "float16"))},
    optional={"scale": Num(), "min": Num()},
)
_WEIGHT = Obj(
    required={"name": Str(), "shape": List(Int(lo=0))},
    optional={"dtype": Str(choices=tuple(_TFJS_DTYPES)), "quantization": _QUANT},
)
_MODEL_JSON = Obj(
    required={"modelTopology": Obj()},
    optional={
        "format": Either(None, Str()),
        "weightsManifest": List(Obj(required={"paths": List(Str()), "weights": List(_WEIGHT)})),
    },
)


def read_tfjs(path: Path) -> KerasSource:
    """A TF.js layers model: ``model.json`` (or its folder) and the shard files it names."""
    if path.is_dir():
        path = path / "model.json"
    where = path.name
    if not path.is_file():
        raise ValidationError(f"a TF.js model needs {str(path)!r}; it is not a file.")
    doc = read_json(path, what=where)
    if isinstance(doc, dict) and "modelTopology" not in doc:
        raise ModelFormatError(f"{where} has no modelTopology: is it a TF.js layers model?")
    check(doc, _MODEL_JSON, where)
    if doc.get("format") not in (None, "layers-model"):
        raise CapabilityError(
            f"{where} is a TF.js {doc.get('format')!r}; only layers models can be imported."
        )
    topology = doc["modelTopology"]
    wrapped = "model_config" in topology
    config = topology["model_config"] if wrapped else topology
    check_model_config(config, where, "modelTopology.model_config" if wrapped else "modelTopology")
    out = _tfjs_weights(doc.get("weightsManifest", []), path.parent.resolve(), where)
    meta = {"source": where, "format": "tfjs"}
    labels = path.parent / "metadata.json"  # Teachable Machine puts class names there
    if labels.is_file():
        from xai_core.importers.teachable import read_metadata

        raw = read_regular_file(
            labels, max_bytes=MAX_JSON_BYTES, what=labels.name, error=ModelFormatError
        )
        info = read_metadata(raw, labels.name)
        if "labels" in info:
            meta["class_names"] = list(info["labels"])
    return KerasSource(config, out, meta)


def _tfjs_plan(spec: dict, offset: int, where: str) -> tuple[np.dtype, int, int]:
    """The stored dtype, element count and end offset of one manifest entry."""
    quant = spec.get("quantization")
    dtype_name = quant["dtype"] if quant else spec.get("dtype", "float32")
    if quant and dtype_name in ("uint8", "uint16") and ("scale" not in quant or "min" not in quant):
        raise ModelFormatError(
            f"{where}: weight {spec['name']!r} is quantised to {dtype_name} without a scale and min."
        )
    stored = np.dtype(_STORED[dtype_name]).newbyteorder("<")
    count = check_size(spec["name"], spec["shape"], None, stored.itemsize, where)
    return stored, count, offset + count * stored.itemsize


def _tfjs_weights(manifest: list, folder: Path, where: str) -> dict[str, dict[str, np.ndarray]]:
    """Every group's shards, sizes checked against the manifest before any is read."""
    seen: dict[str, str] = {}
    for g, group in enumerate(manifest):
        for i, spec in enumerate(group["weights"]):
            at = f"weightsManifest[{g}].weights[{i}].name"
            if spec["name"] in seen:
                raise ModelFormatError(
                    f"{where}: {at}: weight {spec['name']!r} appears twice (also at "
                    f"{seen[spec['name']]}); a manifest lists each weight once."
                )
            seen[spec["name"]] = at
    out: dict[str, dict[str, np.ndarray]] = {}
    total = 0
    plans = []
    for g, group in enumerate(manifest):
        shards = [_shard(folder, p, where) for p in group["paths"]]
        held = sum(size for _, size in shards)
        offset, planned = 0, []
        for spec in group["weights"]:
            stored, count, end = _tfjs_plan(spec, offset, where)
            if end > held:
                raise ModelFormatError(
                    f"{where}: weight {spec['name']!r} of shape {spec['shape']} needs bytes "
                    f"{offset}..{end} but the shards hold {held}."
                )
            planned.append((spec, stored, count, offset))
            offset = end
        if offset != held:
            raise ModelFormatError(
                f"{where}: weight group {g} declares {offset} bytes but its shards hold {held}."
            )
        total += held
        plans.append((shards, planned))
    check_cost(
        Cost(0, 2 * total, f"{format_bytes(total)} of weight shards"),
        f"{where}: reading its weights",
    )
    for shards, planned in plans:
        data = b"".join(
            read_regular_file(
                p, max_bytes=size, what=f"{where}: shard {p.name!r}", error=ModelFormatError
            )
            for p, size in shards
        )
        for spec, stored, count, offset in planned:
            arr = np.frombuffer(data, dtype=stored, count=count, offset=offset).reshape(
                spec["shape"]
            )
            quant = spec.get("quantization")
            if quant and quant["dtype"] in ("uint8", "uint16"):
                arr = arr.astype(np.float32) * np.float32(quant["scale"]) + np.float32(quant["min"])
            scope, var = _split(spec["name"])
            arr = _finite(np.array(arr, dtype=np.float32), spec["name"], where)
            out.setdefault(scope, {})[var] = arr
    return out


def _shard(folder: Path, name: str, where: str) -> tuple[Path, int]:
    """A shard file beside ``model.json`` and its real size (not read yet)."""
    if not name or Path(name).is_absolute() or ".." in Path(name).parts:
        raise ModelFormatError(f"{where}: weight shard {name!r} is not a file name beside it.")
    shard = (folder / name).resolve()
    if folder not in shard.parents or not shard.exists():
        raise ModelFormatError(f"{where}: weight shard {name!r} is missing.")
    if not shard.is_file():
        raise ModelFormatError(
            f"{where}: weight shard {name!r} is not a regular file (a folder, FIFO or device)."
        )
    return shard, shard.stat().st_size


# -- any file -------------------------------------------------------------------------------
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
