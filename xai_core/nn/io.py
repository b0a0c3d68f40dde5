"""Saving and loading networks: one ``.npz`` file, weights plus a JSON architecture, never pickle.

The file holds ``architecture``, the UTF-8 bytes of a JSON document as a uint8 array, and
one array per parameter or buffer, ``layer_<i>.<name>`` (``i`` the node's index). The JSON
records ``format`` (``"xai_core.nn.Sequential"`` or ``"xai_core.nn.Graph"``),
``format_version``, the input shape, dtype, output names, class labels and each node's
type, name, constructor arguments, parameter and buffer shapes (and, for a graph, its
inputs, the input name, layout and output node).

Loading is defensive. Before anything is allocated, every archive member is checked: a
``.npy`` array of a plain numeric dtype whose header's shape accounts for exactly the
member's size, which must itself be plausible for the compressed bytes in the file; the
JSON is bounded in size and nesting; every shape the JSON declares must equal that of the
array in the file, and every layer's parameter shapes (found without allocating them)
must equal both; no node may produce more than ``MAX_SAMPLE_ELEMENTS`` values per
sample. Non-finite weights are refused.
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.errors import CapabilityError, ModelFormatError, ValidationError
from xai_core.files import atomic_write
from xai_core.int8.quantized import FORMAT_QUANTIZED  # an int8 model made by ``xai.quantize``
from xai_core.nn import layers as _layers
from xai_core.nn.graph import Graph
from xai_core.nn.layer import Layer
from xai_core.nn.network import Network
from xai_core.nn.sequential import Sequential
from xai_core.nn.shape import Constant

__all__ = ["FORMAT", "FORMAT_GRAPH", "FORMAT_VERSION", "LAYER_TYPES", "save_model", "load_model"]

FORMAT = "xai_core.nn.Sequential"
FORMAT_GRAPH = "xai_core.nn.Graph"
#: The version this code writes; it reads this version and older ones.
FORMAT_VERSION = 2
#: Largest architecture document read, in bytes, and its deepest nesting.
MAX_JSON_BYTES = 16 * 2**20
MAX_JSON_DEPTH = 32
#: Most archive members, and the largest expansion of a compressed member.
MAX_MEMBERS = 100_000
MAX_RATIO = 1_000
#: Largest per-sample tensor a loaded network may produce, in elements.
MAX_SAMPLE_ELEMENTS = 2**30

#: Layer classes by the type name stored in files.
LAYER_TYPES: dict[str, type[Layer]] = {name: getattr(_layers, name) for name in _layers.__all__}


def _json_labels(classes: np.ndarray | None) -> list[Any] | None:
    if classes is None:
        return None
    values = np.asarray(classes).tolist()
    if all(isinstance(v, (bool, int, float, str)) for v in values):
        return values
    return [str(v) for v in values]


def save_model(net: Network, path: str | os.PathLike) -> None:
    """Write ``net`` to ``path`` (one ``.npz`` file, written atomically).

    Parameters
    ----------
    net : Sequential or Graph
        A built network.
    path : str or path-like
        The file; no suffix is added.
    """
    if not isinstance(net, Network):
        raise ValidationError(f"net must be a Sequential or a Graph; got {type(net).__name__}.")
    net._require_built()
    for layer in net.layers:
        if LAYER_TYPES.get(type(layer).__name__) is not type(layer):
            raise ValidationError(
                f"layer {layer.name!r} of type {type(layer).__name__} cannot be saved; "
                f"saveable types: {', '.join(sorted(LAYER_TYPES))}."
            )
    graph = isinstance(net, Graph)
    arch: dict[str, Any] = {
        "format": FORMAT_GRAPH if graph else FORMAT,
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
                "type": type(node.layer).__name__,
                "name": node.name,
                "config": node.layer.get_config(),
                "params": list(node.layer.params),
                "buffers": list(node.layer.buffers),
                "shapes": {
                    k: list(v.shape) for k, v in {**node.layer.params, **node.layer.buffers}.items()
                },
                **({"inputs": list(node.inputs)} if graph else {}),
            }
            for node in net.nodes
        ],
    }
    if graph:
        if net._fixed:
            raise CapabilityError(
                "save the network before fixing inputs with with_inputs: a saved network "
                "keeps every input."
            )
        extra = {name: list(shape) for name, shape in net.input_shapes.items()}
        del extra[net.input_name]
        arch.update(
            input_name=net.input_name,
            layout=net.layout,
            output=net.output,
            **({"inputs": extra} if extra else {}),
            **({"outputs": list(net.outputs)} if len(net.outputs) > 1 else {}),
        )
    arrays = {"architecture": np.frombuffer(json.dumps(arch).encode("utf-8"), dtype=np.uint8)}
    for i, layer in enumerate(net.layers):
        for key, value in {**layer.params, **layer.buffers}.items():
            arrays[f"layer_{i}.{key}"] = value
    atomic_write(path, lambda fh: np.savez(fh, **arrays))


def _headers(path: Path, bad) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Shape and dtype of every member, from the zip directory and the .npy headers only."""
    size = path.stat().st_size
    out: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        if len(infos) > MAX_MEMBERS:
            raise bad(f"it has {len(infos)} members; at most {MAX_MEMBERS} are read")
        for info in infos:
            if not info.filename.endswith(".npy"):
                raise bad(f"its member {info.filename[:60]!r} is not a .npy array")
            key = info.filename[:-4]
            if key in out:
                raise bad(f"it holds the array {key!r} twice")
            if info.compress_size > size or info.file_size > max(
                info.compress_size * MAX_RATIO, 4096
            ):
                raise bad(
                    f"the member {key!r} declares {info.file_size} bytes, implausible for the "
                    f"{info.compress_size} compressed bytes in a file of {size}"
                )
            with zf.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
                elif version in ((2, 0), (3, 0)):
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
                else:
                    raise ValueError(f"unknown .npy version {version}")
                if dtype.hasobject:
                    raise ValueError(
                        f"the array {key!r} holds Python objects, which only unpickling could read"
                    )
                expected = fh.tell() + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if expected != info.file_size:
                raise bad(
                    f"the array {key!r} declares shape {tuple(shape)} of {dtype} "
                    f"({expected} bytes with its header) in a member of {info.file_size} bytes"
                )
            out[key] = (tuple(int(d) for d in shape), dtype)
    return out


def _depth(value: Any) -> int:
    depth, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        depth = max(depth, d)
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
    return depth


def load_model(path: str | os.PathLike) -> Network:
    """Read a network written by :meth:`Sequential.save` or :meth:`Graph.save`.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    Sequential or Graph
        Built, with the saved weights, output names and classes.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ModelFormatError
        If the file is not a saved network, is truncated, corrupt, oversized or
        inconsistent, holds non-finite weights, or comes from a newer format version. The
        message names the file and what is wrong.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no model file at {str(path)!r}.")

    def bad(what: str) -> ModelFormatError:
        return ModelFormatError(f"{str(path)!r} is not a readable xai-core model: {what}.")

    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
        if magic == b"\x93NUMPY":
            raise bad("it is a single .npy array, not an .npz archive")
        headers = _headers(path, bad)
        raw_info = headers.get("architecture")
        if raw_info is None:
            raise bad("it has no 'architecture' entry")
        if raw_info[1] != np.uint8 or len(raw_info[0]) != 1:
            raise bad(
                f"its 'architecture' entry is {raw_info[1]} of shape {raw_info[0]}, not uint8 bytes"
            )
        if raw_info[0][0] > MAX_JSON_BYTES:
            raise bad(
                f"its architecture is {raw_info[0][0]} bytes; at most {MAX_JSON_BYTES} are read"
            )
        with np.load(path, allow_pickle=False) as npz:
            raw = npz["architecture"]
            arch = _parse(raw, bad, path)
            _check_declared(arch, headers, bad)
            arrays = {key: npz[key] for key in npz.files if key != "architecture"}
    except ModelFormatError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError) as exc:
        raise bad(
            f"the file is corrupt or not an .npz archive ({type(exc).__name__}: {exc})"
        ) from exc
    try:
        return _rebuild(arch, arrays, bad)
    except ModelFormatError:
        raise
    except (LookupError, TypeError, ValueError, AttributeError) as exc:
        raise bad(f"its architecture is inconsistent ({type(exc).__name__}: {exc})") from exc


def _parse(raw: np.ndarray, bad, path: Path) -> dict[str, Any]:
    try:
        arch = json.loads(raw.tobytes().decode("utf-8"))
    except RecursionError:
        raise bad(f"its architecture nests deeper than {MAX_JSON_DEPTH} levels") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad(f"its architecture is not valid JSON ({exc})") from exc
    if _depth(arch) > MAX_JSON_DEPTH:
        raise bad(f"its architecture nests deeper than {MAX_JSON_DEPTH} levels")
    if not isinstance(arch, dict) or arch.get("format") not in (
        FORMAT,
        FORMAT_GRAPH,
        FORMAT_QUANTIZED,
    ):
        raise bad(
            f"its format is {arch.get('format') if isinstance(arch, dict) else arch!r}, not {FORMAT!r}"
            f" or {FORMAT_GRAPH!r}"
        )
    version = arch.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise bad(f"its format_version {version!r} is not a positive integer")
    if version > FORMAT_VERSION:
        raise ModelFormatError(
            f"{str(path)!r} was written in model format version {version}; this xai-core reads "
            f"versions up to {FORMAT_VERSION}. Upgrade xai-core to load it."
        )
    if arch["format"] == FORMAT_QUANTIZED:
        if not all(
            isinstance(arch.get(k), list) for k in ("tensors", "operators", "inputs", "outputs")
        ):
            raise bad("its int8 graph lacks tensors, operators, inputs or outputs")
        if not isinstance(arch.get("nodes"), dict):
            raise bad("its int8 graph lacks the map of nodes")
        return arch
    if not isinstance(arch.get("layers"), list):
        raise bad("its architecture has no list of layers")
    return arch


def _check_declared(arch: dict[str, Any], headers: dict, bad) -> None:
    """Every shape the JSON declares equals the array's in the file (before reading any)."""
    if arch["format"] == FORMAT_QUANTIZED:
        for i, spec in enumerate(arch["tensors"]):
            found = headers.get(f"tensor_{i}")
            if found is not None and (
                list(found[0]) != list(spec["shape"]) or str(found[1]) != spec["dtype"]
            ):
                raise bad(
                    f"tensor_{i} is {found[1]} of shape {found[0]}, not the declared {spec['dtype']} {spec['shape']}"
                )
        return
    for i, spec in enumerate(arch["layers"]):
        if not isinstance(spec, dict):
            raise bad(f"layer {i} is not a JSON object")
        for key, shape in (spec.get("shapes") or {}).items():
            found = headers.get(f"layer_{i}.{key}")
            if found is not None and list(found[0]) != list(shape):
                raise bad(
                    f"layer_{i}.{key} is {found[1]} of shape {found[0]}; expected floats of "
                    f"shape {tuple(shape)}, as the architecture declares"
                )


def _rebuild(arch: dict[str, Any], arrays: dict[str, np.ndarray], bad) -> Network:
    if arch["format"] == FORMAT_QUANTIZED:
        from xai_core.int8.quantized import load_quantized

        return load_quantized(arch, arrays, bad)
    graph = arch["format"] == FORMAT_GRAPH
    dtype = arch["dtype"]
    layers, inputs = [], []
    for i, spec in enumerate(arch["layers"]):
        cls = LAYER_TYPES.get(spec["type"])
        if cls is None:
            raise bad(f"layer {i} has unknown type {spec['type']!r}")
        if cls is Constant:
            value = arrays.get(f"layer_{i}.value")
            if value is None:
                raise bad(f"the array layer_{i}.value is missing")
            _finite(value, f"layer_{i}.value", bad)
            layer = Constant(value, name=spec["name"])
        else:
            layer = cls(**spec["config"], name=spec["name"])
        layers.append(layer)
        inputs.append(spec.get("inputs"))
    if graph:
        net: Network = Graph(
            tuple(arch["input_shape"]),
            input_name=arch["input_name"],
            layout=arch["layout"],
            output_names=arch["output_names"],
            seed=arch.get("seed", 0),
            dtype=dtype,
            name=arch.get("name"),
        )
        extra = arch.get("inputs", {})
        if not isinstance(extra, dict):
            raise bad("its further inputs are not a JSON object of name: shape")
        for name, shape in extra.items():
            net.add_input(name, shape)
        for i, (layer, names) in enumerate(zip(layers, inputs)):
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise bad(f"layer {i} has no list of input names")
            ins = [net.shape_of(n) for n in names]
            if layer.n_inputs != 0:
                _check_shapes(layer, i, ins[0] if layer.n_inputs == 1 else ins, arrays, bad)
            net.add(layer, names)
        net.set_outputs(arch.get("outputs", [arch["output"]]))
    else:
        shape = tuple(int(d) for d in arch["input_shape"])
        net = Sequential(
            layers,
            output_names=arch["output_names"],
            seed=arch.get("seed", 0),
            dtype=dtype,
            name=arch.get("name"),
        )
        for i, layer in enumerate(layers):
            shape = _check_shapes(layer, i, shape, arrays, bad)
        net.build(tuple(arch["input_shape"]))
    for i, (layer, spec) in enumerate(zip(net.layers, arch["layers"])):
        for store, listed in ((layer.params, "params"), (layer.buffers, "buffers")):
            if listed in spec and sorted(spec[listed]) != sorted(store):
                raise bad(
                    f"layer {i} ({layer.name}) lists {listed} {spec[listed]}, expected {list(store)}"
                )
            for key in store:
                value = arrays.pop(f"layer_{i}.{key}", None)
                if value is None:
                    raise bad(f"the array layer_{i}.{key} is missing")
                if value.shape != store[key].shape or value.dtype.kind != "f":
                    raise bad(
                        f"layer_{i}.{key} is {value.dtype} of shape {value.shape}; expected floats "
                        f"of shape {store[key].shape}"
                    )
                _finite(value, f"layer_{i}.{key}", bad)
                store[key] = value.astype(net.dtype, copy=False)
    if arrays:
        raise bad(f"it holds unexpected arrays {sorted(arrays)[:5]}")
    if arch.get("classes") is not None:
        classes = np.asarray(arch["classes"], dtype=arch.get("classes_dtype") or None)
        wanted = 2 if net.n_outputs == 1 else net.n_outputs  # one sigmoid output: two classes
        if classes.ndim != 1 or len(classes) != wanted:
            raise bad(
                f"its classes hold {classes.size} label(s) of shape {classes.shape} for a network "
                f"with {net.n_outputs} output(s); expected {wanted}, one per class"
            )
        net.classes_ = classes
    return net


def _finite(value: np.ndarray, key: str, bad) -> None:
    if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
        raise bad(f"the array {key} holds NaN or infinite values")


def _check_shapes(layer: Layer, i: int, shape: Any, arrays: dict, bad) -> tuple[int, ...]:
    """The shapes ``layer`` would allocate equal the file's arrays; nothing is allocated.

    Returns the layer's per-sample output shape.
    """
    out = Layer.build(layer, shape, None, None)  # shapes only: the base class allocates nothing
    if int(np.prod(out, dtype=np.float64)) > MAX_SAMPLE_ELEMENTS:
        raise bad(
            f"layer {i} ({layer.name}) would produce {tuple(out)} per sample, more than "
            f"{MAX_SAMPLE_ELEMENTS} values"
        )
    expected_all = layer.param_shapes() if hasattr(layer, "param_shapes") else {}
    for key, expected in expected_all.items():
        value = arrays.get(f"layer_{i}.{key}")
        if value is None:
            raise bad(f"the array layer_{i}.{key} is missing")
        if tuple(value.shape) != tuple(expected) or value.dtype.kind != "f":
            raise bad(
                f"layer_{i}.{key} is {value.dtype} of shape {value.shape}; expected floats of "
                f"shape {tuple(expected)}"
            )
    layer.input_shape = layer.output_shape = None
    return out
