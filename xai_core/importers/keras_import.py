"""``from_keras``: a Keras model, ``.keras``, ``.h5`` or TF.js file as a native graph network.

The model's configuration (Sequential or Functional, nested models flattened) is walked in
order; each layer call becomes one or a few native nodes named after the layer. Files are
read without TensorFlow or Keras (:mod:`xai_core.importers.keras_reader`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from xai_core import nn
from xai_core.errors import CapabilityError, ModelFormatError, ShapeError, ValidationError
from xai_core.importers.ir import check_size, name_outputs
from xai_core.importers.keras_layers import LAYERS, OPS_PREFIX, KerasBuilder, layer_key
from xai_core.importers.keras_reader import (
    INPUT_SHAPE,
    MODELS,
    KerasSource,
    check_model_config,
    endpoints,
    read_keras_file,
    tensor_ref,
)
from xai_core.jsonfile import ANYTHING, Either, List, Num, Obj, Str, check, join_path
from xai_core.nn.folding import fold_batch_norm as fold

__all__ = ["from_keras", "SUPPORTED_KERAS_LAYERS"]

SUPPORTED_KERAS_LAYERS = sorted({*LAYERS, "InputLayer", *MODELS})


def _source_of_model(model: Any) -> KerasSource:
    """Configuration and weights of a live Keras model (Keras 3, or tf.keras 2)."""
    kind = "Sequential" if type(model).__name__ == "Sequential" else "Functional"
    try:
        config = model.get_config()
    except NotImplementedError:
        config = None
    if not isinstance(config, dict) or "layers" not in config:
        raise CapabilityError(
            f"{type(model).__name__} is a subclassed Keras model: it has no layer graph to "
            "import. Build it as a Sequential or functional model, or export it to ONNX."
        )
    weights: dict[str, dict[str, np.ndarray]] = {}
    for v in model.weights:
        path = getattr(v, "path", None) or v.name  # Keras 3: "dense/kernel"; 2: "dense/kernel:0"
        scope, _, var = path.split(":")[0].rpartition("/")
        weights.setdefault(scope, {})[var] = _numpy(v)
    meta = {"source": "the Keras model", "format": "object"}
    return KerasSource({"class_name": kind, "config": config}, weights, meta)


def _numpy(v: Any) -> np.ndarray:
    try:
        import keras

        return np.array(keras.ops.convert_to_numpy(v))
    except (ImportError, AttributeError):  # tf.keras 2 variables
        return np.array(v.numpy())


def _refs(inbound: Any, where: str, path: str) -> list[tuple[str, int, int]]:
    """The ``(layer, node, tensor)`` references one inbound node reads, in order (checked)."""
    out: list[tuple[str, int, int]] = []

    def walk(x: Any, at: str) -> None:
        if isinstance(x, dict):
            if x.get("class_name") == "__keras_tensor__":
                cfg = check(x.get("config"), Obj(required={"keras_history": List()}), where, at)
                out.append(tensor_ref(cfg["keras_history"], where, f"{at}.config.keras_history"))
            else:
                for k, v in x.items():
                    walk(v, join_path(at, str(k)))
        elif isinstance(x, (list, tuple)):
            if len(x) >= 3 and isinstance(x[0], str) and isinstance(x[1], int):
                out.append(tensor_ref(x, where, at))  # Keras 2: [name, node, tensor, kwargs]
            else:
                for i, v in enumerate(x):
                    walk(v, join_path(at, i))

    if isinstance(inbound, dict):
        walk(inbound.get("args", []), join_path(path, "args"))
    else:
        walk(inbound, path)
    return out


#: How Keras writes an array operand (a ``keras.ops.array`` or a numpy array) of a call.
_ARRAYS = ("__tensor__", "__numpy__")
_ARRAY = Obj(required={"class_name": Str(), "config": Obj(required={"value": ANYTHING})})


def _batch_shape(cfg: dict) -> list | None:
    return cfg.get("batch_shape") or cfg.get("batch_input_shape")


class _Walker:
    """Flattens (nested) Keras models into native nodes."""

    def __init__(self, src: KerasSource, where: str) -> None:
        self.src = src
        self.where = where
        self.b: KerasBuilder | None = None

    def check(self, model: dict) -> None:
        """Every layer class is supported, before anything is built."""
        for layer in model["config"]["layers"]:
            kind = layer["class_name"]
            if kind in MODELS:
                self.check(layer)
            elif kind != "InputLayer" and layer_key(layer) not in LAYERS:
                raise CapabilityError(
                    f"{self.where}: Keras layer {layer_key(layer)!r} "
                    f"(layer {layer['config'].get('name')!r}) "
                    f"is not supported. Supported layers: {', '.join(SUPPORTED_KERAS_LAYERS)}."
                )

    def input_shape(self, model: dict) -> tuple[str, tuple[int, ...]]:
        layers = model["config"]["layers"]
        first = layers[0]
        if first["class_name"] in MODELS:
            return self.input_shape(first)
        shape = _batch_shape(first["config"]) or (first.get("build_config") or {}).get(
            "input_shape"
        )
        check(
            shape,
            Either(None, INPUT_SHAPE),
            self.where,
            f"layer {first['config']['name']!r} input shape",
        )
        if not shape or any(d is None for d in shape[1:]):
            raise ModelFormatError(
                f"{self.where}: the input shape is not in the configuration ({shape}); "
                "give the model an Input of known size."
            )
        name = first["config"]["name"] if first["class_name"] == "InputLayer" else "input"
        check_size(name, shape[1:], None, 4, self.where)  # a declared 10**12 inputs: refused
        return name, tuple(int(d) for d in shape[1:])

    def graph(self, model: dict) -> nn.Graph:
        name, shape = self.input_shape(model)
        layout = "NHWC" if len(shape) == 3 else "NCHW"
        g = nn.Graph(shape, input_name=name, layout=layout, name=model["config"].get("name"))
        self.b = KerasBuilder(g, self.where)
        out = self.model(model, "", [name])
        if len(out) != 1:
            raise CapabilityError(
                f"{self.where}: the model has {len(out)} outputs; one is supported."
            )
        g.set_output(out[0])
        for node in g.nodes:  # every activation of one sample within the limits
            check_size(f"output of {node.name}", g.shape_of(node.name), None, 4, self.where)
        return g

    def layer(self, layer: dict, scope: str, ins: list[str]) -> list[str]:
        kind, cfg = layer["class_name"], layer["config"]
        if kind in MODELS:
            child = f"{scope}/{cfg['name']}" if scope else cfg["name"]
            return self.model(layer, child, ins)
        key = f"{scope}/{cfg['name']}" if scope else cfg["name"]
        weights = self.src.weights.get(key)
        if weights is None:  # a live layer's sub-layers: "mha/query" holds "kernel", "bias"
            inner = {
                f"{k[len(key) + 1 :]}/{var}": arr
                for k, v in self.src.weights.items()
                if k.startswith(f"{key}/")
                for var, arr in v.items()
            }
            weights = inner or None
        if weights is None:  # scopes differ between writers: match the layer name alone
            hits = [v for k, v in self.src.weights.items() if k.rpartition("/")[2] == cfg["name"]]
            weights = hits[0] if len(hits) == 1 else {}
        if not weights:  # a sub-layer under the layer's name: "model/lstm/lstm_cell" (a cell)
            weights = {
                f"{k.split('/')[k.split('/').index(cfg['name']) + 1]}/{var}": arr
                for k, v in self.src.weights.items()
                if cfg["name"] in k.split("/")[:-1]
                for var, arr in v.items()
            }
        key = layer_key(layer)
        return [LAYERS[key](self.b, key, cfg["name"], cfg, weights, ins)]

    def plain_call(self, inbound: Any, lname: str, at: str) -> None:
        """Refuse a call with a key, a mask or options that change the result (attention)."""
        kwargs = inbound.get("kwargs", {}) if isinstance(inbound, dict) else {}
        used = sorted(
            k
            for k, v in (kwargs.items() if isinstance(kwargs, dict) else [])
            if v not in (None, False) and k != "training"
        )
        if used:
            raise CapabilityError(
                f"{self.where}: {at}: layer {lname!r} is called with {', '.join(used)}; calls "
                "with the query and the value alone (the key is the value) are supported."
            )

    def operands(self, inbound: Any, lookup: Any, lname: str, at: str) -> list[str]:
        """The positional operands of a ``keras.ops`` call: tensors, and numbers as Constants."""
        args = inbound.get("args", []) if isinstance(inbound, dict) else inbound
        check(args, List(ANYTHING), self.where, join_path(at, "args"))
        out = []
        for i, arg in enumerate(args):
            path = join_path(join_path(at, "args"), i)
            if isinstance(arg, dict) and arg.get("class_name") == "__keras_tensor__":
                out.extend(lookup(r) for r in _refs([arg], self.where, path))
                continue
            if isinstance(arg, dict) and arg.get("class_name") in _ARRAYS:
                arg = check(arg, _ARRAY, self.where, path)["config"]["value"]
                path = join_path(path, "config.value")
            value = check(arg, Either(Num(), List(ANYTHING)), self.where, path)
            try:
                value = np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError):
                raise ModelFormatError(
                    f"{self.where}: {path}: an operand of {lname!r} must be a tensor or numbers; "
                    f"got {arg!r:.80}."
                ) from None
            check_size(f"{lname} operand {i}", value.shape, None, 8, self.where)
            out.append(self.b.constant(value, f"{lname}/operand_{i}"))
        return out

    def model(self, model: dict, scope: str, ins: list[str]) -> list[str]:
        cfg = model["config"]
        if model["class_name"] == "Sequential":
            x = ins
            for layer in cfg["layers"]:
                if layer["class_name"] != "InputLayer":
                    x = self.layer(layer, scope, x)
            return x
        tensors: dict[tuple[str, int, int], str] = {}
        calls: dict[str, int] = {}
        inputs = endpoints(cfg["input_layers"], self.where, "input_layers")
        if len(inputs) != len(ins):
            raise CapabilityError(
                f"{self.where}: model {cfg.get('name')!r} has {len(inputs)} inputs; models "
                f"with one input are supported (it is given {len(ins)})."
            )
        for (lname, node, t), x in zip(inputs, ins):
            tensors[(lname, node, t)] = x
            calls[lname] = 1

        def lookup(ref: tuple[str, int, int]) -> str:
            if ref in tensors:
                return tensors[ref]
            if calls.get(ref[0]) == 1:  # a model whose call is not its node 0 (Keras 2)
                hits = [v for k, v in tensors.items() if k[0] == ref[0] and k[2] == ref[2]]
                if hits:
                    return hits[0]
            raise ModelFormatError(f"{self.where}: layer output {ref} is used before it is made.")

        for layer in cfg["layers"]:
            if layer["class_name"] == "InputLayer":
                continue
            lname = layer["config"]["name"]
            for i, inbound in enumerate(layer.get("inbound_nodes", [])):
                at = f"layer {lname!r}: inbound_nodes[{i}]"
                if layer["class_name"] == "MultiHeadAttention":
                    self.plain_call(inbound, lname, at)
                if layer_key(layer).startswith(OPS_PREFIX):
                    ins = self.operands(inbound, lookup, lname, at)
                else:
                    ins = [lookup(r) for r in _refs(inbound, self.where, at)]
                outs = self.layer(layer, scope, ins)
                for t, o in enumerate(outs):
                    tensors[(lname, i, t)] = o
                calls[lname] = calls.get(lname, 0) + 1
        return [lookup(r) for r in endpoints(cfg["output_layers"], self.where, "output_layers")]


def from_keras(
    model_or_path: Any,
    *,
    output_names: Sequence[str] | None = None,
    fold_batch_norm: bool = True,
) -> nn.Graph:
    """Import a Keras model as a native graph network.

    Parameters
    ----------
    model_or_path : keras.Model, str or path
        A Keras 3 model object; a ``.keras`` file; a legacy ``.h5`` file; or a TF.js layers
        model (its ``model.json`` or the folder holding it, with the weight shards). Files
        are read with json / zipfile / h5py / numpy, without TensorFlow or Keras.
    output_names : sequence of str, optional
        Class names; by default those beside the file (Teachable Machine's ``labels.txt``
        for ``.h5``, ``metadata.json`` for TF.js), if any.
    fold_batch_norm : bool, default=True
        Merge batch norms into the convolution or dense layer before them where they can
        be (:meth:`~xai_core.nn.Graph.fold_batch_norm`); ``False`` keeps them layers.

    Returns
    -------
    xai_core.nn.Graph
        Layout NHWC for image inputs (as Keras), input shape ``(height, width, channels)``;
        nodes named after the Keras layers (an activation inside a layer is a node of its
        own, ``"<layer>/relu"``).

    Raises
    ------
    CapabilityError
        An unsupported layer (named, with the supported list), before anything is built.
    ModelFormatError
        A corrupt file, missing weights, or weights of the wrong shape.
    """
    if isinstance(model_or_path, (str, bytes)) or hasattr(model_or_path, "__fspath__"):
        src = read_keras_file(model_or_path)
    elif hasattr(model_or_path, "get_config") and hasattr(model_or_path, "weights"):
        src = _source_of_model(model_or_path)
    else:
        raise ValidationError(
            "model_or_path must be a keras.Model or a path to a .keras, .h5 or TF.js model; "
            f"got {type(model_or_path).__name__}."
        )
    where = src.meta.get("source", "the Keras model")
    if src.meta.get("format") == "object":
        check_model_config(src.config, where)
    walker = _Walker(src, where)
    walker.check(src.config)
    try:
        g = walker.graph(src.config)
    except ShapeError as exc:
        raise ModelFormatError(f"{where}: {exc}") from exc
    g = name_outputs(g, output_names, src.meta)
    return fold(g, copy=False) if fold_batch_norm else g  # in place: the network is new
