"""The int8 network :func:`xai_core.quantize` makes: a full-integer TFLite graph with its source."""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core.errors import UnknownNameError
from xai_core.int8.graph import TENSOR_TYPES, OperatorInfo, TensorInfo, TFLiteGraph
from xai_core.int8.model import TFLiteModel

__all__ = ["FORMAT_QUANTIZED", "QuantizedModel", "load_quantized", "save_quantized"]

#: The ``format`` of a saved int8 model (:func:`xai_core.load_model` reads it back).
FORMAT_QUANTIZED = "xai_core.QuantizedModel"
#: The version this code writes.
FORMAT_VERSION_QUANTIZED = 1


class QuantizedModel(TFLiteModel):
    """An int8 network made by :func:`quantize`: a full-integer TFLite graph and its source.

    Runs on ``edgetpu`` (and ``tpu`` preset v1) and, with identical integers, on every
    other backend. ``activations(X, node)`` reads a node of the source network by name.

    Attributes
    ----------
    source : Network
        The float network it was made from (batch norms folded).
    graph : TFLiteGraph
        What :func:`xai_core.to_tflite` writes.
    """

    def __init__(self, source: Any, graph: Any, nodes: dict[str, tuple[int, bool]]) -> None:
        super().__init__(
            graph, output_names=source.output_names, name=getattr(source, "name", None)
        )
        self.source = source
        self.input_shape = tuple(source.input_shape)
        self.image_shape = getattr(source, "image_shape", None)
        self.classes_ = getattr(source, "classes_", None)
        self._nodes = dict(nodes)

    def activations(self, X: Any, layer: int | str, backend: Any = None) -> np.ndarray:
        """Dequantised output of a node of the source network (index or name), in its layout.

        A convolution or dense layer whose ReLU was fused into it reads the clamped output,
        that is the values after the ReLU.
        """
        if not isinstance(layer, str) and self.source is not None:
            layer = self.source.nodes[self.source.layer_index(layer)].name
        if layer not in self._nodes:
            raise UnknownNameError("node", str(layer), sorted(self._nodes))
        name = layer
        index, nhwc = self._nodes[name]
        out = super().activations(X, self.graph.tensors[index].name, backend)
        return np.ascontiguousarray(out.transpose(0, 3, 1, 2)) if nhwc else out

    def save(self, path: Any) -> None:
        """Write the int8 model to one ``.npz`` file; :func:`xai_core.load_model` reads it back."""
        save_quantized(self, path)

    @property
    def layers(self) -> list[dict[str, Any]]:
        """Each operator's output scale and zero point, for display."""
        rows = []
        for op in self.graph.operators:
            t = self.graph.tensors[op.outputs[0]]
            rows.append({
                "name": t.name, "kind": op.op.lower(),
                "output_scale": float(t.scale[0]) if t.scale is not None else None,
                "output_zero_point": int(t.zero_point[0]) if t.zero_point is not None else None,
                "fused_activation": int(op.options.get("FusedActivationFunction", 0)),
            })  # fmt: skip
        return rows

    def __repr__(self) -> str:
        name = getattr(self.source, "name", None) or type(self.source).__name__
        return f"QuantizedModel(int8, {len(self.graph.operators)} operators, from {name!r})"


# -- saving: the int8 graph as JSON plus one array per constant tensor -------------------------


def _json_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return {"array": value.tolist(), "dtype": str(value.dtype)}
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    return value


def save_quantized(model: QuantizedModel, path: Any) -> None:
    """Write ``model`` to one ``.npz`` file: the graph's structure as JSON, its constants as arrays."""
    from xai_core.files import atomic_write

    graph = model.graph
    arch = {
        "format": FORMAT_QUANTIZED,
        "format_version": FORMAT_VERSION_QUANTIZED,
        "name": model.name,
        "input_shape": list(model.input_shape),
        "image_shape": list(model.image_shape) if model.image_shape is not None else None,
        "output_names": list(model.output_names) if model.output_names is not None else None,
        "tensors": [
            {
                "name": t.name,
                "shape": list(t.shape),
                "dtype": str(t.dtype),
                "scale": None if t.scale is None else [float(v) for v in t.scale],
                "zero_point": None if t.zero_point is None else [int(v) for v in t.zero_point],
                "quantized_dimension": int(t.quantized_dimension),
                "constant": t.data is not None,
            }
            for t in graph.tensors
        ],
        "operators": [
            {
                "op": op.op,
                "inputs": list(op.inputs),
                "outputs": list(op.outputs),
                "options_type": op.options_type,
                "options": {k: _json_value(v) for k, v in op.options.items()},
            }
            for op in graph.operators
        ],
        "inputs": list(graph.inputs),
        "outputs": list(graph.outputs),
        "nodes": {name: [int(t), bool(nhwc)] for name, (t, nhwc) in model._nodes.items()},
    }
    import json

    arrays = {"architecture": np.frombuffer(json.dumps(arch).encode("utf-8"), dtype=np.uint8)}
    for t in graph.tensors:
        if t.data is not None:
            arrays[f"tensor_{t.index}"] = np.asarray(t.data)
    atomic_write(path, lambda fh: np.savez(fh, **arrays))


def load_quantized(arch: dict[str, Any], arrays: dict[str, np.ndarray], bad) -> QuantizedModel:
    """Rebuild a saved :class:`QuantizedModel`; every declared shape and dtype is checked."""
    allowed = {str(d) for d in TENSOR_TYPES.values()}
    tensors = []
    for i, spec in enumerate(arch["tensors"]):
        if spec["dtype"] not in allowed:
            raise bad(f"tensor {i} has dtype {spec['dtype']!r}")
        shape = tuple(int(d) for d in spec["shape"])
        data = None
        if spec["constant"]:
            data = arrays.get(f"tensor_{i}")
            if data is None or data.shape != shape or str(data.dtype) != spec["dtype"]:
                raise bad(
                    f"tensor {i} ({spec['name']!r}) does not match its declared {shape} {spec['dtype']}"
                )
        scale = None if spec["scale"] is None else np.asarray(spec["scale"], np.float32)
        zp = None if spec["zero_point"] is None else np.asarray(spec["zero_point"], np.int64)
        if scale is not None and not np.all(np.isfinite(scale) & (scale > 0)):
            raise bad(f"tensor {i} has a scale that is not finite and positive")
        tensors.append(
            TensorInfo(
                i,
                str(spec["name"]),
                shape,
                np.dtype(spec["dtype"]),
                scale,
                zp,
                int(spec["quantized_dimension"]),
                data,
            )
        )
    n = len(tensors)
    operators = []
    for k, spec in enumerate(arch["operators"]):
        ids = [int(t) for t in (*spec["inputs"], *spec["outputs"])]
        if any(not -1 <= t < n for t in ids):
            raise bad(f"operator {k} names a tensor outside 0 .. {n - 1}")
        options = {
            key: np.asarray(v["array"], dtype=v["dtype"]) if isinstance(v, dict) else v
            for key, v in spec["options"].items()
        }
        operators.append(
            OperatorInfo(
                k,
                str(spec["op"]),
                tuple(int(t) for t in spec["inputs"]),
                tuple(int(t) for t in spec["outputs"]),
                options,
                None,
                spec["options_type"],
            )
        )
    graph = TFLiteGraph(
        tuple(tensors),
        tuple(operators),
        tuple(arch["inputs"]),
        tuple(arch["outputs"]),
        "xai-core int8",
    )
    nodes = {str(name): (int(t), bool(nhwc)) for name, (t, nhwc) in arch["nodes"].items()}
    model = QuantizedModel.__new__(QuantizedModel)
    TFLiteModel.__init__(model, graph, output_names=arch["output_names"], name=arch["name"])
    model.source = None
    model.input_shape = tuple(arch["input_shape"])
    model.image_shape = tuple(arch["image_shape"]) if arch["image_shape"] else None
    model.classes_ = None
    model._nodes = nodes
    return model
