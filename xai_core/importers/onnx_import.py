"""``from_onnx``: an ONNX model becomes a native graph network with the same outputs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from xai_core import nn
from xai_core.errors import CapabilityError, ModelFormatError, XaiError
from xai_core.importers import onnx_batch_views, onnx_fold, onnx_ops_attention
from xai_core.importers.ir import IRGraph, check_supported, name_outputs
from xai_core.importers.onnx_ops import Builder, check_declared
from xai_core.importers.onnx_reader import read_onnx
from xai_core.importers.onnx_registry import find_converter, supported_ops
from xai_core.jsonfile import parse_json
from xai_core.nn.folding import fold_batch_norm as fold

__all__ = ["from_onnx", "build_onnx", "SUPPORTED_ONNX_OPS"]

#: Every operator ``from_onnx`` accepts at some opset: those it runs, those it folds, and
#: ``Constant`` (read as a constant by the reader). The registry
#: (:mod:`xai_core.importers.onnx_registry`) says which opsets each converter covers.
SUPPORTED_ONNX_OPS = sorted({*supported_ops(), "Constant"})


def _class_names(meta: dict[str, str]) -> list[str] | None:
    """Class names from the model's metadata (``class_names`` / ``labels``: JSON or commas)."""
    for key in ("class_names", "labels", "classes"):
        text = meta.get(key)
        if not text:
            continue
        try:
            value = parse_json(text, f"the ONNX metadata {key!r}")
        except ModelFormatError:
            if text.lstrip()[:1] in ("[", "{"):  # meant as JSON, but broken or nested too deep
                raise
            value = [part.strip() for part in text.split(",")]  # comma-separated names
        if isinstance(value, dict):  # {"0": "cat", ...}
            value = [value[k] for k in sorted(value, key=lambda k: int(k))]
        if isinstance(value, list) and all(isinstance(v, (str, int)) for v in value):
            return [str(v) for v in value]
    return None


def _layout(ir: IRGraph) -> str:
    """NHWC when every reader of an image input transposes it to NCHW (TensorFlow's export)."""
    readers = [n for n in ir.nodes if ir.input_name in n.inputs]
    if (
        len(ir.input_shape) == 3
        and readers
        and all(
            n.op == "Transpose" and list(n.attrs.get("perm", [])) == [0, 3, 1, 2] for n in readers
        )
    ):
        return "NHWC"
    return "NCHW"


def build_onnx(
    ir: IRGraph, *, output_names: Sequence[str] | None = None, dtype: Any = "float32"
) -> nn.Graph:
    """The native network of an ONNX graph read by :func:`~xai_core.importers.onnx_reader.read_onnx`."""
    where = ir.meta.get("source", "the ONNX model")
    opset = ir.meta.get("opset") or 13
    converters = {node.op: find_converter(node.op, opset) for node in ir.nodes}
    check_supported(ir.nodes, set(supported_ops(opset)), f"{where}: ONNX (opset {opset})")
    g = nn.Graph(ir.input_shape, input_name=ir.input_name, layout=_layout(ir), dtype=dtype)
    for name, shape in ir.more_inputs.items():
        g.add_input(name, shape)
    b = Builder(g, ir.initializers, where, opset=opset, batch=ir.meta.get("batch"))
    b.index_graph(ir.nodes, ir.output_names, ir.types)
    for node in ir.nodes:
        try:
            conv = converters[node.op]
            if onnx_fold.foldable(b, node, conv) and onnx_fold.fold(b, node):
                pass  # every input a constant: evaluated once, never in the network
            elif not onnx_ops_attention.before(b, node):  # batch axis moved, batch constants
                conv.fn(b, node)
            onnx_ops_attention.after(b, node)
        except XaiError:
            raise
        except (ArithmeticError, IndexError, KeyError, TypeError, ValueError) as exc:
            # an attribute or constant of a form the converter cannot read (a perm out of
            # range, a missing kernel_shape, a list where a number belongs)
            raise ModelFormatError(
                f"{where}: {node.op} node {node.name!r} has inputs or attributes that cannot "
                f"be read: {type(exc).__name__}: {exc}"
            ) from exc
        check_declared(b, node, ir.declared)
    outputs: list[str] = []
    for name in ir.output_names:
        view = onnx_batch_views.view_of(b, name)
        if view is not None:
            raise CapabilityError(
                f"{where}: the output {name!r} has its batch axis at position "
                f"{view.batch_axis} (moved by node {view.origin!r}); a network's outputs keep "
                "the batch axis first."
            )
        if name not in b.act:
            raise CapabilityError(
                f"{where}: the output {name!r} is a constant (computed from shapes and "
                "constants while importing); a network's output must be computed from its input."
            )
        node = b.act[name]
        if node in outputs or node in g.inputs:  # one node, two outputs; or an input itself
            node = g.add(nn.Identity(), [node], name=b.unique(f"{name}/output"))
        outputs.append(node)
    g.set_outputs(outputs)
    return name_outputs(g, output_names, ir.meta)


def from_onnx(
    path_or_model: Any,
    *,
    output_names: Sequence[str] | None = None,
    dtype: Any = "float32",
    fold_batch_norm: bool = True,
    input_shapes: Mapping[str, Sequence[int]] | Sequence[int] | None = None,
) -> nn.Graph:
    """Import an ONNX model as a native graph network.

    Every operator is checked against the supported list before anything is built; every
    weight's declared shape is checked against the bytes in the file; every intermediate
    tensor's declared (or ONNX-inferred) shape is checked against the shape the native
    network computes.

    Parameters
    ----------
    path_or_model : str, path, bytes or onnx.ModelProto
        An ``.onnx`` file or its contents. Inputs of shape (batch, *sample), sharing the
        batch axis; one output or more (``net.outputs``, in the file's order).
    output_names : sequence of str, optional
        Class names; by default those in the model's metadata (``class_names`` or
        ``labels``), if any.
    dtype : {"float32", "float64"}, default="float32"
    fold_batch_norm : bool, default=True
        Merge each batch norm into the convolution or dense layer before it where it can be
        (its only input is that layer's output, read by nothing else):
        :meth:`~xai_core.nn.Graph.fold_batch_norm`. The batch norm's node stays as an
        identity (``net.folded_batch_norms`` lists them). ``False`` keeps every batch norm
        a layer of its own.
    input_shapes : mapping of str to tuple of int, or tuple of int, optional
        Sample shapes (without the batch axis) for inputs whose sizes the file leaves
        symbolic, such as a transformer's sequence length or an image's height and width:
        ``{"input_ids": (128,)}``, or one shape for a model of one input. A native network
        has fixed sample shapes; the sizes the file fixes must be given as they are.

    Returns
    -------
    xai_core.nn.Graph
        Input shape: the ONNX input's without the batch axis; layout NCHW, or NHWC when
        the input is transposed to NCHW before anything else reads it. Node names are
        the ONNX node names, so ``activations(X, "/layer1/conv/Conv")`` reads any node.

    Raises
    ------
    CapabilityError
        An unsupported operator (named, with its node and the supported list) or use of one.
    ModelFormatError
        A corrupt file or a declared shape that disagrees with the data.

    Examples
    --------
    >>> net = xai.from_onnx("model.onnx")
    >>> xai.explain(net, X, method="ig", backend="tpu")
    >>> text = xai.from_onnx("bert.onnx", input_shapes={"input_ids": (64,)})
    """
    ir = read_onnx(path_or_model, input_shapes)
    ir.meta.setdefault("class_names", _class_names(ir.meta.get("metadata", {})))
    net = build_onnx(ir, output_names=output_names, dtype=dtype)
    if fold_batch_norm:
        fold(net, copy=False)  # in place: the network is nobody else's yet
    return net
