"""ONNX operators as native graph nodes: one small function per operator.

Each tensor of the ONNX graph is, while building, one of three things:

- an *activation*: the output of a node of the native :class:`~xai_core.nn.Graph`
  (batched, per-sample shape known);
- a *constant*: an ndarray (initialisers, ``Constant`` nodes, and anything computed from
  constants alone, folded here);
- a *shape*: a 1-D object array of ints in which :data:`BATCH` stands for the batch size,
  so that ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape`` chains (what
  ``x.view(x.size(0), -1)`` exports to) fold into one per-sample ``Reshape``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from xai_core import nn
from xai_core.errors import CapabilityError, ModelFormatError
from xai_core.importers.ir import IRNode, unique_node_name
from xai_core.importers.onnx_registry import register

__all__ = ["BATCH", "Builder", "check_declared", "is_numeric"]


def is_numeric(dtype: np.dtype | None) -> bool:
    """Whether ``dtype`` holds numbers: numpy's, or ml_dtypes' narrow floats and integers
    (bfloat16, float8, int4)."""
    if dtype is None:
        return False
    if dtype.kind in "biuf":
        return True
    import ml_dtypes

    for info in (ml_dtypes.finfo, ml_dtypes.iinfo):
        try:
            info(dtype)
            return True
        except (TypeError, ValueError):
            pass
    return False


class _Batch:
    """The batch size in a folded shape (unknown until run time)."""

    def __repr__(self) -> str:
        return "BATCH"


BATCH = _Batch()


class Builder:
    """Builds a native graph from ONNX nodes; holds what each ONNX tensor is."""

    def __init__(
        self,
        graph: nn.Graph,
        initializers: dict[str, np.ndarray],
        where: str,
        *,
        opset: int = 13,
        batch: int | None = None,
    ) -> None:
        self.g = graph
        self.where = where
        self.opset = opset  # the default domain's opset version (Softmax's default axis)
        self.batch = batch  # the batch size the input declares, if fixed
        self.const: dict[str, np.ndarray] = dict(initializers)
        self.shape: dict[str, np.ndarray] = {}
        self.act: dict[str, str] = {name: name for name in graph.inputs}
        self._suffixes: dict[str, int] = {}  # for unique_node_name
        self._constants: dict[tuple[str, int], str] = {}  # (tensor, rank) -> Constant node
        self._made: set[str] = set()  # native nodes added by this builder
        # the graph around each node, for converters that look a step on or back
        self.readers: dict[str, list[IRNode]] = {}  # tensor -> the nodes reading it
        self.producers: dict[str, IRNode] = {}  # tensor -> the node writing it
        self.graph_outputs: set[str] = set()
        self.types: dict[str, int] = {}  # tensor -> ONNX element type, where known

    def index_graph(
        self, nodes: list[IRNode], outputs: list[str], types: dict[str, int] | None = None
    ) -> None:
        """Record who reads and writes each tensor of ``nodes``, the graph's outputs, and
        the tensors' element types where known."""
        self.types = dict(types or {})
        self.producers = {o: node for node in nodes for o in node.outputs}
        self.readers = {}
        for node in nodes:
            for i in node.inputs:
                self.readers.setdefault(i, []).append(node)
        self.graph_outputs = set(outputs)

    @property
    def read(self) -> set[str] | None:
        """The tensors something reads (a converter of several outputs builds only those);
        None before :meth:`index_graph`: every output counts as read."""
        if not self.readers and not self.graph_outputs:
            return None
        return set(self.readers) | self.graph_outputs

    # -- what a tensor is ---------------------------------------------------------------
    def fail(self, node: IRNode, message: str) -> CapabilityError:
        return CapabilityError(f"{self.where}: {node.op} node {node.name!r}: {message}")

    def is_act(self, name: str) -> bool:
        return name in self.act

    def value(self, node: IRNode, name: str) -> np.ndarray:
        """A constant or folded shape input."""
        if name in self.const:
            return self.const[name]
        if name in self.shape:
            return self.shape[name]
        raise self.fail(
            node, f"input {name!r} must be a constant here; it is computed at run time."
        )

    def numbers(self, node: IRNode, name: str) -> np.ndarray:
        """A constant input holding numbers (not the batch size, not strings)."""
        v = np.asarray(self.value(node, name))
        if name in self.shape:  # a folded shape holding the batch size
            raise self.fail(
                node,
                f"input {name!r} is computed from the batch size (x.shape[0] in PyTorch): "
                "each sample's output would depend on how many samples share its batch, which "
                "a network here cannot compute. Use a constant instead of the batch size.",
            )
        if not is_numeric(v.dtype):
            kind = "strings" if v.dtype == object else f"{v.dtype} values"
            raise ModelFormatError(
                f"{self.where}: {node.op} node {node.name!r}: input {name!r} holds {kind} "
                "where numbers are expected."
            )
        return v

    def ints(self, node: IRNode, name: str) -> list[int]:
        v = self.value(node, name)
        if v.dtype == object:
            raise self.fail(node, f"input {name!r} depends on the batch size; it must not here.")
        return [int(x) for x in np.asarray(v).reshape(-1)]

    def node_of(self, node: IRNode, name: str) -> str:
        if name not in self.act:
            raise self.fail(node, f"input {name!r} must be computed from the network input.")
        return self.act[name]

    def rank(self, node: IRNode, name: str) -> int:
        """Rank of a full (batched) activation."""
        return len(self.g.shape_of(self.node_of(node, name))) + 1

    def add(self, node: IRNode, layer, inputs, *, suffix: str = "", params=None) -> str:
        """Add ``layer`` reading ``inputs`` (ONNX names or node names); map the output.

        ``params`` (the file's weights) are set as the layer is built, drawing none.
        """
        ins = [self._node_name(node, i) for i in ([inputs] if isinstance(inputs, str) else inputs)]
        name = self.g.add(layer, ins, name=self.unique(node.name + suffix), params=params)
        self._made.add(name)
        if not suffix:
            self.act[node.outputs[0]] = name
        return name

    def _node_name(self, node: IRNode, name: str) -> str:
        """The native node an input names: an ONNX activation's, or a node made here."""
        if name in self.act:
            return self.act[name]
        if name in self._made:
            return name
        raise self.fail(node, f"input {name!r} must be computed from the network input.")

    def unique(self, base: str) -> str:
        return unique_node_name(self.g, base, self._suffixes)

    def constant_node(self, node: IRNode, name: str, rank: int) -> str:
        """A ``Constant`` node holding the constant tensor ``name``, an operand of a batched
        tensor of ``rank`` axes.

        One node per tensor and rank, however many nodes read it: a weight read by
        thousands of ``Add`` nodes is held once.
        """
        key = (name, rank)
        if key not in self._constants:
            self._constants[key] = self.value_node(node, self.numbers(node, name), rank)
        return self._constants[key]

    def value_node(self, node: IRNode, value: np.ndarray, rank: int) -> str:
        """A ``Constant`` node holding ``value`` (computed while importing, such as a
        converter's ``log(base)``), an operand of a batched tensor of ``rank`` axes."""
        value = np.asarray(value, dtype=self.g.dtype)
        if not np.isfinite(value).all():
            raise self.fail(
                node, "a constant holding NaN or infinite values (a -inf mask) is not supported."
            )
        if value.ndim == rank:
            if value.shape[0] != 1:
                raise self.fail(
                    node, f"a constant of shape {value.shape} varies along the batch axis."
                )
            value = value[0]
        made = self.g.add(nn.Constant(value), [], name=self.unique(node.name + "/const"))
        self._made.add(made)
        return made

    def alias(self, node: IRNode, source: str) -> None:
        if source in self.act:
            self.act[node.outputs[0]] = self.act[source]
        elif source in self.shape:
            self.shape[node.outputs[0]] = self.shape[source]
        else:
            self.const[node.outputs[0]] = self.value(node, source)


# -- helpers ------------------------------------------------------------------------------
def _given(node: IRNode, i: int) -> bool:
    """Whether ``node``'s input ``i`` is given (present and not the empty name)."""
    return len(node.inputs) > i and bool(node.inputs[i])


def _f32(value: Any) -> float:
    """An ONNX float attribute (float32) as the shortest Python float that rounds back to it."""
    return float(str(np.float32(value)))


def _axis(b: Builder, node: IRNode, axis: int, rank: int) -> int:
    """Per-sample axis of a full-tensor ``axis`` (the batch axis refused)."""
    a = axis + rank if axis < 0 else axis
    if a <= 0 or a >= rank:
        raise b.fail(
            node, f"axis {axis} of a rank-{rank} tensor: the batch axis cannot be touched."
        )
    return a - 1


def _check_bytes(b: Builder, node: IRNode, shape, dtype) -> None:
    """Refuse a tensor of ``shape`` over the memory limit before it is allocated: a folded
    one, or one a converter builds (interpolation matrices, pooling windows)."""
    from xai_core.attribution.cost import Cost, check_cost

    size = int(np.prod([int(d) for d in shape], dtype=object)) if len(shape) else 1
    cost = Cost(0, size * np.dtype(dtype).itemsize, detail=f"a tensor of shape {list(shape)}")
    check_cost(cost, f"{b.where}: {node.op} node {node.name!r}", advice="use a smaller model")


def _spatial(b: Builder, node: IRNode, x: str) -> tuple[int, int]:
    shape = b.g.shape_of(b.node_of(node, x))
    if len(shape) != 3:
        raise b.fail(node, f"needs an NCHW image input; got a per-sample shape {shape}.")
    return shape[1], shape[2]


def _pads(b: Builder, node: IRNode, kernel, strides, dilations, size) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) from ONNX ``pads`` / ``auto_pad``."""
    auto = node.attrs.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        p = list(node.attrs.get("pads", [0, 0, 0, 0]))
        if len(p) != 4:
            raise b.fail(node, f"2-D pads must have 4 values; got {p}.")
        return p[0], p[2], p[1], p[3]
    if auto == "VALID":
        return 0, 0, 0, 0
    out = []
    for k, s, d, n in zip(kernel, strides, dilations, size):
        total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
        small = total // 2
        out.append((small, total - small) if auto == "SAME_UPPER" else (total - small, small))
    return out[0][0], out[0][1], out[1][0], out[1][1]


def _kernel_attrs(b: Builder, node: IRNode, kernel) -> tuple[tuple, tuple, tuple]:
    kernel = tuple(int(k) for k in kernel)
    if len(kernel) != 2:
        raise b.fail(node, f"only 2-D kernels are supported; got kernel_shape {list(kernel)}.")
    strides = tuple(node.attrs.get("strides", [1, 1]))
    dilations = tuple(node.attrs.get("dilations", [1, 1]))
    return kernel, strides, dilations


# -- operators ----------------------------------------------------------------------------
def op_gemm(b: Builder, node: IRNode) -> None:
    a = node.attrs
    if a.get("transA", 0):
        raise b.fail(node, "transA=1 is not supported (the batch must be the rows of A).")
    w = np.asarray(b.numbers(node, node.inputs[1]), dtype=np.float64) * a.get("alpha", 1.0)
    w = w.T if a.get("transB", 0) else w
    bias = None
    if len(node.inputs) > 2 and node.inputs[2]:
        c = np.asarray(b.numbers(node, node.inputs[2]), dtype=np.float64) * a.get("beta", 1.0)
        if c.ndim == 2 and c.shape[0] != 1:
            raise b.fail(node, f"a bias C of shape {c.shape} varies along the batch axis.")
        bias = np.broadcast_to(c.reshape(-1), (w.shape[1],))
    _dense(b, node, w, bias)


def _dense(b: Builder, node: IRNode, w: np.ndarray, bias) -> None:
    params = {"weight": w}
    if bias is not None:
        params["bias"] = bias
    b.add(node, nn.Dense(w.shape[1], use_bias=bias is not None), node.inputs[0], params=params)


def op_matmul(b: Builder, node: IRNode) -> None:
    if not b.is_act(node.inputs[0]) or b.is_act(node.inputs[1]):
        raise b.fail(node, "only activation @ constant matrix is supported.")
    w = b.numbers(node, node.inputs[1])
    if w.ndim != 2:
        raise b.fail(node, f"the constant matrix must be 2-D; got shape {w.shape}.")
    _dense(b, node, w, None)


def _series_steps(b: Builder, node: IRNode, x: str) -> int:
    shape = b.g.shape_of(b.node_of(node, x))
    if len(shape) != 2:
        raise b.fail(node, f"a 1-D kernel needs (channels, steps) samples; got {shape}.")
    return int(shape[1])


def _attrs_1d(b: Builder, node: IRNode, kernel: int) -> tuple[int, int, tuple[int, int]]:
    """(stride, dilation, (left, right)) of a 1-D Conv or pool from its attributes."""
    strides = list(node.attrs.get("strides", [1]))
    dilations = list(node.attrs.get("dilations", [1]))
    if len(strides) != 1 or len(dilations) != 1:
        raise b.fail(node, f"1-D strides and dilations have one value; got {strides}, {dilations}.")
    stride, dilation = int(strides[0]), int(dilations[0])
    auto = node.attrs.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        p = list(node.attrs.get("pads", [0, 0]))
        if len(p) != 2:
            raise b.fail(node, f"1-D pads must have 2 values; got {p}.")
        return stride, dilation, (int(p[0]), int(p[1]))
    if auto == "VALID":
        return stride, dilation, (0, 0)
    n = _series_steps(b, node, node.inputs[0])
    total = max((-(-n // stride) - 1) * stride + (kernel - 1) * dilation + 1 - n, 0)
    small = total // 2
    return (
        stride,
        dilation,
        (small, total - small) if auto == "SAME_UPPER" else (total - small, small),
    )


def op_conv_1d(b: Builder, node: IRNode, w: np.ndarray) -> None:
    """A ``Conv`` with a 1-D kernel: :class:`~xai_core.nn.Conv1D` on (channels, steps) samples."""
    kernel = int(node.attrs.get("kernel_shape", w.shape[2:])[0])
    _series_steps(b, node, node.inputs[0])
    stride, dilation, pads = _attrs_1d(b, node, kernel)
    has_bias = len(node.inputs) > 2 and bool(node.inputs[2])
    layer = nn.Conv1D(
        w.shape[0], kernel, stride, list(pads), dilation, int(node.attrs.get("group", 1)), has_bias
    )
    params = {"weight": w}
    if has_bias:
        params["bias"] = b.numbers(node, node.inputs[2])
    b.add(node, layer, node.inputs[0], params=params)


def op_conv(b: Builder, node: IRNode) -> None:
    w = b.numbers(node, node.inputs[1])
    if w.ndim == 3:
        return op_conv_1d(b, node, w)
    if w.ndim != 4:
        raise b.fail(
            node, f"only 1-D and 2-D convolutions are supported; the weight has shape {w.shape}."
        )
    kernel, strides, dilations = _kernel_attrs(b, node, node.attrs.get("kernel_shape", w.shape[2:]))
    pads = _pads(b, node, kernel, strides, dilations, _spatial(b, node, node.inputs[0]))
    has_bias = len(node.inputs) > 2 and bool(node.inputs[2])
    layer = nn.Conv2D(
        w.shape[0],
        kernel,
        stride=strides,
        padding=pads,
        dilation=dilations,
        groups=int(node.attrs.get("group", 1)),
        use_bias=has_bias,
    )
    params = {"weight": w}
    if has_bias:
        params["bias"] = b.numbers(node, node.inputs[2])
    b.add(node, layer, node.inputs[0], params=params)


def _transpose_pads(b: Builder, node: IRNode, kernel, strides, dilations, size, out_pad):
    """(top, bottom, left, right) of a ConvTranspose from ``pads``, ``auto_pad`` or
    ``output_shape``, as the ONNX spec computes them; where ``output_shape`` is beyond
    the kernel's reach, the end's is negative (the output extended there, as onnxruntime
    extends it)."""
    auto = node.attrs.get("auto_pad", "NOTSET")
    target = node.attrs.get("output_shape")
    if target is None and auto in ("SAME_UPPER", "SAME_LOWER"):
        target = [n * s for n, s in zip(size, strides)]
    if target is None:
        return (0, 0, 0, 0) if auto == "VALID" else _pads(b, node, kernel, strides, dilations, size)
    target = [int(t) for t in target][-2:]
    out = []
    for k, s, d, n, op, t in zip(kernel, strides, dilations, size, out_pad, target):
        total = s * (n - 1) + op + (k - 1) * d + 1 - t
        if total < 0:  # beyond the kernel's reach: extended at the end, as onnxruntime does
            out.append((0, total))
            continue
        small = total // 2
        out.append((small, total - small) if auto == "SAME_UPPER" else (total - small, small))
    return out[0][0], out[0][1], out[1][0], out[1][1]


def _as_2d(node: IRNode) -> IRNode:
    """A 1-D ``ConvTranspose`` node's attributes as those of a 2-D one over (1, length)."""
    a = dict(node.attrs)
    for key, unit in (("kernel_shape", 1), ("strides", 1), ("dilations", 1), ("output_padding", 0)):
        if key in a:
            a[key] = [unit, *a[key]]
    if "output_shape" in a:
        a["output_shape"] = [1, *list(a["output_shape"])[-1:]]
    if "pads" in a:
        a["pads"] = [0, a["pads"][0], 0, a["pads"][1]]
    return replace(node, attrs=a)


def op_conv_transpose(b: Builder, node: IRNode) -> None:
    """``ConvTranspose`` of 1-D samples (as 2-D ones of one row) or 2-D samples.

    An ``output_shape`` beyond what the kernel reaches extends the output at the end (as
    onnxruntime does) by rows or columns that only the bias reaches: the product is padded
    with zeros, then the bias is added.
    """
    w = b.numbers(node, node.inputs[1])
    x = node.inputs[0]
    one_d = w.ndim == 3
    if one_d:
        steps = _series_steps(b, node, x)
        attrs, size = _as_2d(node), (1, steps)
        channels = b.g.shape_of(b.node_of(node, x))[0]
        x = b.add(node, nn.Reshape((channels, 1, steps)), x, suffix="/row")
        w = w[:, :, None, :]
    elif w.ndim == 4:
        attrs, size = node, _spatial(b, node, x)
    else:
        raise b.fail(
            node, f"only 1-D and 2-D transposed convolutions are supported; weight {w.shape}."
        )
    kernel, strides, dilations = _kernel_attrs(
        b, attrs, attrs.attrs.get("kernel_shape", w.shape[2:])
    )
    out_pad = tuple(int(p) for p in attrs.attrs.get("output_padding", [0, 0]))
    pads = _transpose_pads(b, attrs, kernel, strides, dilations, size, out_pad)
    extend = tuple(max(-p, 0) for p in pads)
    groups = int(attrs.attrs.get("group", 1))
    bias = b.numbers(node, node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    inner_bias = bias is not None and not any(extend)
    layer = nn.Conv2DTranspose(
        w.shape[1] * groups,
        kernel,
        stride=strides,
        padding=tuple(max(p, 0) for p in pads),
        output_padding=out_pad,
        dilation=dilations,
        groups=groups,
        use_bias=inner_bias,
    )
    more = one_d or any(extend)  # nodes after the product
    name = b.add(node, layer, x, suffix="/product" if more else "")
    b.g.set_params(name, weight=w, **({"bias": bias} if inner_bias else {}))
    if any(extend):
        last = not one_d and bias is None
        name = b.add(node, nn.ZeroPadding2D(extend), name, suffix="" if last else "/extended")
        if bias is not None:
            added = [name, b.value_node(node, bias.reshape(-1, 1, 1), 4)]
            name = b.add(node, nn.Add(), added, suffix="/bias" if one_d else "")
    if one_d:  # back to (channels, steps)
        c, _, steps = b.g.shape_of(name)
        b.add(node, nn.Reshape((c, steps)), name)


def op_batchnorm(b: Builder, node: IRNode) -> None:
    if node.attrs.get("training_mode", 0):
        raise b.fail(node, "training_mode=1 is not supported; export the model in eval mode.")
    scale, bias, mean, var = (b.numbers(node, i) for i in node.inputs[1:5])
    layer = nn.BatchNormalization(epsilon=_f32(node.attrs.get("epsilon", 1e-5)), axis=0)
    params = {"gamma": scale, "beta": bias, "mean": mean, "variance": var}
    b.add(node, layer, node.inputs[0], params=params)


def _unary(make: Callable[[Builder, IRNode], Any]) -> Callable[[Builder, IRNode], None]:
    def op(b: Builder, node: IRNode) -> None:
        b.add(node, make(b, node), node.inputs[0])

    return op


def _clip(b: Builder, node: IRNode):
    lo, hi = _clip_bounds(b, node)
    if lo == 0.0 and hi == 6.0:
        return nn.ReLU6()
    return nn.Clip(lo, hi)


def _clip_bounds(b: Builder, node: IRNode) -> tuple[float | None, float | None]:
    lo, hi = node.attrs.get("min"), node.attrs.get("max")
    for k, which in ((1, "min"), (2, "max")):
        if len(node.inputs) > k and node.inputs[k]:
            v = b.numbers(node, node.inputs[k])
            if v.size != 1:
                raise ModelFormatError(
                    f"{b.where}: Clip node {node.name!r}: {which} has shape {v.shape}; it "
                    "must be one value."
                )
            lo, hi = (float(v.reshape(-1)[0]), hi) if k == 1 else (lo, float(v.reshape(-1)[0]))
    if lo is not None and hi is not None and lo > hi:  # ONNX: every value becomes max
        lo = hi
    return lo, hi


def op_clip(b: Builder, node: IRNode) -> None:
    """``Clip`` of an activation (a layer), or of a constant (folded: ``max(pad, 0)`` in a
    traced "same" padding)."""
    if b.is_act(node.inputs[0]):
        b.add(node, _clip(b, node), node.inputs[0])
        return
    x = b.numbers(node, node.inputs[0])
    lo, hi = _clip_bounds(b, node)
    out = np.maximum(x, lo) if lo is not None else x
    _store(b, node, (np.minimum(out, hi) if hi is not None else out).astype(x.dtype))


def _pool(kind: str) -> Callable[[Builder, IRNode], None]:
    """Undilated 1-D and 2-D pooling, pads at most half the kernel, no ceil_mode: the native
    layers (the registered converter in onnx_ops_tensor sends the rest elsewhere)."""

    def op(b: Builder, node: IRNode) -> None:
        if len(node.attrs["kernel_shape"]) == 1:
            return _pool_1d(b, node, kind)
        kernel, strides, dilations = _kernel_attrs(b, node, node.attrs["kernel_shape"])
        pads = _pads(b, node, kernel, strides, dilations, _spatial(b, node, node.inputs[0]))
        if kind == "max":
            layer = nn.MaxPool2D(kernel, stride=strides, padding=pads)
        else:
            include = bool(node.attrs.get("count_include_pad", 0))
            layer = nn.AvgPool2D(kernel, stride=strides, padding=pads, count_include_pad=include)
        b.add(node, layer, node.inputs[0])

    return op


def _pool_1d(b: Builder, node: IRNode, kind: str) -> None:
    """A ``MaxPool`` / ``AveragePool`` with a 1-D kernel: MaxPool1D or AvgPool1D."""
    kernel = int(node.attrs["kernel_shape"][0])
    _series_steps(b, node, node.inputs[0])
    stride, _, pads = _attrs_1d(b, node, kernel)
    if node.attrs.get("storage_order", 0):
        raise b.fail(node, "storage_order=1 is not supported.")
    ceil = bool(node.attrs.get("ceil_mode", 0))
    if ceil and node.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "", "VALID"):
        raise b.fail(node, "ceil_mode=1 with a SAME auto_pad is not supported; use pads.")
    if kind == "max":
        layer = nn.MaxPool1D(kernel, stride, list(pads), ceil_mode=ceil)
    else:
        include = bool(node.attrs.get("count_include_pad", 0))
        layer = nn.AvgPool1D(kernel, stride, list(pads), include, ceil_mode=ceil)
    b.add(node, layer, node.inputs[0])


def op_global_avg_pool(b: Builder, node: IRNode) -> None:
    if len(b.g.shape_of(b.node_of(node, node.inputs[0]))) == 2:
        b.add(node, nn.GlobalAveragePooling1D(keepdims=True), node.inputs[0])
        return
    _spatial(b, node, node.inputs[0])
    b.add(node, nn.GlobalAveragePooling2D(keepdims=True), node.inputs[0])


def _divide(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """ONNX ``Div``: integers divide truncating toward zero (shape arithmetic, ``c // g``)."""
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype.kind in "iu" and y.dtype.kind in "iu":
        return (np.sign(x) * np.sign(y) * (np.abs(x) // np.abs(y))).astype(np.result_type(x, y))
    return np.divide(x, y)


NUMPY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": _divide}


def _binary(op_name: str) -> Callable[[Builder, IRNode], None]:
    def op(b: Builder, node: IRNode) -> None:
        x, y = node.inputs[:2]
        if not b.is_act(x) and not b.is_act(y):
            if x in b.shape or y in b.shape:
                raise b.fail(node, "arithmetic on the batch size is not supported.")
            b.const[node.outputs[0]] = NUMPY[op_name](b.value(node, x), b.value(node, y))
            return
        rank = b.rank(node, x if b.is_act(x) else y)
        ins = [i if b.is_act(i) else b.constant_node(node, i, rank) for i in (x, y)]
        layer = {"Add": nn.Add, "Sub": nn.Subtract, "Mul": nn.Multiply, "Div": nn.Divide}
        b.add(node, layer[op_name](), ins)

    return op


def op_concat(b: Builder, node: IRNode) -> None:
    axis = int(node.attrs["axis"])
    if not any(b.is_act(i) for i in node.inputs):
        parts = [np.asarray(b.value(node, i)).reshape(-1) for i in node.inputs]
        if any(p.dtype == object for p in parts):
            parts = [p.astype(object) for p in parts]
        out = np.concatenate(parts) if axis == 0 and all(p.ndim == 1 for p in parts) else None
        if out is None:
            raise b.fail(node, "only 1-D constants are concatenated at import.")
        (b.shape if out.dtype == object else b.const)[node.outputs[0]] = out
        return
    rank = b.rank(node, next(i for i in node.inputs if b.is_act(i)))
    ins = [i if b.is_act(i) else b.constant_node(node, i, rank) for i in node.inputs]
    b.add(node, nn.Concatenate(axis=_axis(b, node, axis, rank)), ins)


def op_flatten(b: Builder, node: IRNode) -> None:
    axis = int(node.attrs.get("axis", 1))
    if axis != 1:
        raise b.fail(node, f"only Flatten(axis=1) keeps the batch axis; got axis={axis}.")
    b.add(node, nn.Flatten(), node.inputs[0])


def op_reshape(b: Builder, node: IRNode) -> None:
    if not b.is_act(node.inputs[0]):  # a constant reshaped: fold it
        shape = b.ints(node, node.inputs[1])
        data = np.asarray(b.value(node, node.inputs[0]))
        shape = [data.shape[i] if d == 0 else d for i, d in enumerate(shape)]
        _store(b, node, data.reshape(shape))
        return
    target = list(b.value(node, node.inputs[1]).reshape(-1))
    src = b.g.shape_of(b.node_of(node, node.inputs[0]))
    if not target:
        raise b.fail(node, "a reshape to a scalar drops the batch axis.")
    first = target[0]
    if not (first is BATCH or first in (0, -1) or first == b.batch):
        raise b.fail(node, f"target shape {target} does not keep the batch axis first.")
    rest = []
    for i, d in enumerate(target[1:]):
        if d is BATCH:
            raise b.fail(node, f"target shape {target} moves the batch axis.")
        d = int(d)
        rest.append(src[i] if d == 0 and not node.attrs.get("allowzero", 0) else d)
    if first == -1 and -1 in rest:
        raise b.fail(node, f"target shape {target} has two unknown sizes.")
    if first == -1 and -1 not in rest and int(np.prod(rest)) != int(np.prod(src)):
        raise b.fail(
            node,
            f"target shape {target} changes the batch axis (samples of shape {tuple(src)} "
            f"do not fill {tuple(rest)}).",
        )
    b.add(node, nn.Reshape(tuple(rest)), node.inputs[0])


def op_transpose(b: Builder, node: IRNode) -> None:
    if not b.is_act(node.inputs[0]):  # a constant transposed: fold it
        data = np.asarray(b.value(node, node.inputs[0]))
        _store(b, node, np.transpose(data, node.attrs.get("perm")))
        return
    rank = b.rank(node, node.inputs[0])
    perm = list(node.attrs.get("perm", range(rank - 1, -1, -1)))
    if sorted(perm) != list(range(rank)):
        raise ModelFormatError(
            f"{b.where}: Transpose node {node.name!r}: perm {perm} is not a permutation of the "
            f"{rank} axes of its input."
        )
    if perm[0] != 0:
        raise b.fail(node, f"perm {perm} moves the batch axis.")
    b.add(node, nn.Transpose(tuple(p - 1 for p in perm[1:])), node.inputs[0])


def op_pad(b: Builder, node: IRNode) -> None:
    mode = node.attrs.get("mode", "constant")
    if isinstance(mode, bytes):
        mode = mode.decode()
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise b.fail(node, f"mode={mode!r}; supported: constant, reflect, edge, wrap.")
    rank = b.rank(node, node.inputs[0])
    pads = b.ints(node, node.inputs[1]) if len(node.inputs) > 1 else list(node.attrs["pads"])
    value = 0.0
    if len(node.inputs) > 2 and node.inputs[2]:
        value = float(b.numbers(node, node.inputs[2]).reshape(-1)[0])
    value = float(node.attrs.get("value", value))
    axes = list(range(rank))
    if len(node.inputs) > 3 and node.inputs[3]:
        axes = [a + rank if a < 0 else a for a in b.ints(node, node.inputs[3])]
    begin = dict(zip(axes, pads[: len(axes)]))
    end = dict(zip(axes, pads[len(axes) :]))
    if begin.get(0, 0) or end.get(0, 0) or min([*begin.values(), *end.values(), 0]) < 0:
        raise b.fail(node, f"pads {pads} pad the batch axis or crop (negative pads).")
    if not any([*begin.values(), *end.values()]):
        b.add(node, nn.Identity(), node.inputs[0])
    elif mode != "constant":
        _pad_by_gathering(b, node, begin, end, mode)
    elif rank == 4 and not (begin.get(1, 0) or end.get(1, 0)) and value == 0.0:
        layer = nn.ZeroPadding2D((begin.get(2, 0), end.get(2, 0), begin.get(3, 0), end.get(3, 0)))
        b.add(node, layer, node.inputs[0])
    else:
        _pad_by_concatenation(b, node, begin, end, value)


def _pad_by_concatenation(b: Builder, node: IRNode, begin: dict, end: dict, value: float) -> None:
    """Constant padding of any per-sample axes (Swin's (n, h, w, c) windows): along each
    padded axis, one ``Concatenate`` of constant blocks before and after the tensor."""
    source = node.inputs[0]
    axes = [a for a in sorted(set(begin) | set(end)) if begin.get(a, 0) or end.get(a, 0)]
    for k, a in enumerate(axes):
        shape = list(b.g.shape_of(b._node_name(node, source)))
        parts = []
        for size in (begin.get(a, 0), None, end.get(a, 0)):
            if size is None:
                parts.append(source)
            elif size:
                block = np.full([*shape[: a - 1], size, *shape[a:]], value, dtype=b.g.dtype)
                parts.append(b.value_node(node, block, len(shape) + 1))
        last = k == len(axes) - 1
        layer = nn.Concatenate(axis=a - 1)
        source = b.add(node, layer, parts, suffix="" if last else f"/pad{a}")


def _pad_by_gathering(b: Builder, node: IRNode, begin: dict, end: dict, mode: str) -> None:
    """``reflect``, ``edge`` and ``wrap`` padding (torch's ``ReflectionPad2d``,
    ``ReplicationPad2d``, ``CircularPad2d``): along each padded axis one ``Gather`` of the
    positions ``np.pad(arange(size), pads, mode)`` reads, whose gradient adds where a
    position is read twice."""
    source = node.inputs[0]
    axes = [a for a in sorted(set(begin) | set(end)) if begin.get(a, 0) or end.get(a, 0)]
    for k, a in enumerate(axes):
        size = b.g.shape_of(b._node_name(node, source))[a - 1]
        if mode == "reflect" and max(begin.get(a, 0), end.get(a, 0)) >= size:
            raise b.fail(node, f"reflect pads of axis {a} must be below its size {size}.")
        where = np.pad(np.arange(size), (begin.get(a, 0), end.get(a, 0)), mode=mode)
        last = k == len(axes) - 1
        source = b.add(node, nn.Gather(a - 1, where), source, suffix="" if last else f"/pad{a}")


def op_identity(b: Builder, node: IRNode) -> None:
    if node.op == "Dropout" and len(node.inputs) > 2 and node.inputs[2]:
        training = np.asarray(b.value(node, node.inputs[2])).reshape(-1)
        ratio = np.asarray(b.value(node, node.inputs[1])) if node.inputs[1] else 0.5
        if training.size and bool(training[0]) and float(np.asarray(ratio).reshape(-1)[0]) > 0:
            raise b.fail(node, "training_mode=True (random masks) is not supported.")
    if node.op == "Dropout" and len(node.outputs) > 1 and node.outputs[1]:
        # inference keeps every element: the mask is a constant of True (a graph output
        # that is a constant is refused when the network's outputs are set)
        x = node.inputs[0]
        shape = b.g.shape_of(b.node_of(node, x)) if b.is_act(x) else np.shape(b.value(node, x))
        b.const[node.outputs[1]] = np.ones((1, *shape) if b.is_act(x) else shape, dtype=bool)
    if b.is_act(node.inputs[0]):  # a node of its own, so its name can be read
        b.add(node, nn.Identity(), node.inputs[0])
    else:
        b.alias(node, node.inputs[0])


# -- shape arithmetic, folded at import ---------------------------------------------------
def op_shape(b: Builder, node: IRNode) -> None:
    if b.is_act(node.inputs[0]):
        out = np.array([BATCH, *b.g.shape_of(b.node_of(node, node.inputs[0]))], dtype=object)
    else:
        out = np.array(np.shape(b.value(node, node.inputs[0])), dtype=np.int64)
    _store(b, node, out[node.attrs.get("start", 0) : node.attrs.get("end")])


def _store(b: Builder, node: IRNode, out: Any) -> None:
    out = np.asarray(out)
    if out.dtype == object and not any(isinstance(v, _Batch) for v in out.reshape(-1)):
        out = out.astype(np.int64)  # sizes read from a shape without the batch: plain ints
    (b.shape if out.dtype == object else b.const)[node.outputs[0]] = out


def op_gather(b: Builder, node: IRNode) -> None:
    """``Gather`` of constants and shapes, folded (of an activation: ``onnx_ops_attention``)."""
    data = np.asarray(b.value(node, node.inputs[0]))
    idx = np.asarray(b.value(node, node.inputs[1])).astype(np.int64)
    _store(b, node, np.take(data, idx, axis=int(node.attrs.get("axis", 0))))


def _axes(b: Builder, node: IRNode) -> list[int]:
    if len(node.inputs) > 1 and node.inputs[1]:
        return b.ints(node, node.inputs[1])
    return list(node.attrs.get("axes", []))


def op_unsqueeze(b: Builder, node: IRNode) -> None:
    if b.is_act(node.inputs[0]):  # a computed tensor: a per-sample Reshape
        shape = list(b.g.shape_of(b.node_of(node, node.inputs[0])))
        axes = _axes(b, node)
        total = len(shape) + 1 + len(axes)
        where = sorted(a + total if a < 0 else a for a in axes)
        if len(set(where)) != len(where) or not all(0 <= a < total for a in where):
            raise ModelFormatError(
                f"{b.where}: Unsqueeze node {node.name!r}: axes {axes} are repeated or out of "
                f"range for an output of {total} axes."
            )
        if where and where[0] == 0:
            raise b.fail(node, f"axes {axes} add an axis before the batch axis.")
        for a in where:
            shape.insert(a - 1, 1)
        b.add(node, nn.Reshape(tuple(shape)), node.inputs[0])
        return
    out = np.asarray(b.value(node, node.inputs[0]))
    for a in sorted(_axes(b, node)):
        out = np.expand_dims(out, a if a >= 0 else a + out.ndim + 1)
    _store(b, node, out)


def op_squeeze(b: Builder, node: IRNode) -> None:
    if b.is_act(node.inputs[0]):  # a computed tensor: a per-sample Reshape
        shape = b.g.shape_of(b.node_of(node, node.inputs[0]))
        axes = _axes(b, node)
        if not axes and b.batch == 1:
            raise b.fail(node, "no axes, and a batch of 1: the batch axis would be squeezed.")
        rank = len(shape) + 1
        drop = (
            {a + rank if a < 0 else a for a in axes}
            if axes
            else {i + 1 for i, d in enumerate(shape) if d == 1}
        )
        if 0 in drop:
            raise b.fail(node, f"axes {axes} squeeze the batch axis.")
        if any(not 0 < a < rank or shape[a - 1] != 1 for a in drop):
            raise ModelFormatError(
                f"{b.where}: Squeeze node {node.name!r}: axes {axes} are not axes of size 1 of "
                f"samples of shape {shape}."
            )
        kept = tuple(d for i, d in enumerate(shape) if i + 1 not in drop)
        if not kept:
            raise b.fail(node, "the samples would become scalars (no axis left).")
        b.add(node, nn.Reshape(kept), node.inputs[0])
        return
    out = np.asarray(b.value(node, node.inputs[0]))
    axes = _axes(b, node)
    _store(b, node, np.squeeze(out, axis=tuple(axes)) if axes else np.squeeze(out))


#: Float8 types whose ONNX ``Cast`` clips to the finite range when ``saturate=1`` (default).
_SATURATING = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")


def cast_activation(b: Builder, node: IRNode, dtype: np.dtype) -> None:
    """A cast of the activation ``node.inputs[0]`` to ``dtype``: to float32 or float64 an
    identity (the network's own dtype); to bool 1.0 where it is nonzero (gradient 0); to a
    narrower type (:data:`nn.CAST_TYPES`) its values rounded to that type's, as
    ``x.astype(dtype)`` rounds them."""
    from xai_core.nn.elementwise_math import CAST_TYPES

    name = np.dtype(dtype).name
    if name in ("float32", "float64"):
        b.add(node, nn.Identity(), node.inputs[0])
        return
    if name == "bool":  # nonzero (NaN too) is true, held as 1.0: ``x or 0``
        rank = b.rank(node, node.inputs[0])
        zero = b.value_node(node, np.zeros([1] * rank), rank)
        b.add(node, nn.Compare("or"), [b.node_of(node, node.inputs[0]), zero])
        return
    if name not in CAST_TYPES:
        raise b.fail(
            node,
            f"a cast of a computed tensor to {name} is not supported (the network computes "
            f"in float32 or float64; casts to {', '.join(CAST_TYPES)} round its values).",
        )
    saturate = name in _SATURATING and bool(node.attrs.get("saturate", 1))
    b.add(node, nn.CastTo(name, saturate=saturate), node.inputs[0])


def op_cast(b: Builder, node: IRNode) -> None:
    import onnx

    dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(node.attrs["to"]))
    if b.is_act(node.inputs[0]):
        cast_activation(b, node, dtype)
        return
    v = np.asarray(b.value(node, node.inputs[0]))
    if v.dtype != object:
        v = v.astype(dtype)
    _store(b, node, v)


def op_slice(b: Builder, node: IRNode) -> None:
    data = np.asarray(b.value(node, node.inputs[0]))
    starts, ends = b.ints(node, node.inputs[1]), b.ints(node, node.inputs[2])
    axes = b.ints(node, node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] else None
    steps = b.ints(node, node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] else None
    axes = axes or list(range(len(starts)))
    steps = steps or [1] * len(starts)
    index = [slice(None)] * data.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[a] = slice(s, e, st)
    _store(b, node, data[tuple(index)])


# -- the registry: each operator, its opsets and its limits ---------------------------------
for _op, _fn, _since, _limits in [
    ("Gemm", op_gemm, 1, "a constant B (the weights); transA=0"),
    (
        "Conv",
        op_conv,
        1,
        "1-D and 2-D, constant weights; groups, strides, dilations, pads, auto_pad",
    ),
    (
        "ConvTranspose",
        op_conv_transpose,
        1,
        "1-D and 2-D, constant weights; groups, strides, dilations, pads, auto_pad, "
        "output_padding (less than the stride), output_shape (beyond the kernel's reach too)",
    ),
    ("BatchNormalization", op_batchnorm, 1, "inference (constant statistics)"),
    ("Relu", _unary(lambda b, n: nn.ReLU()), 1, ""),
    ("Clip", op_clip, 1, "constant bounds (attributes before opset 11, inputs after)"),
    ("LeakyRelu", _unary(lambda b, n: nn.LeakyReLU(_f32(n.attrs.get("alpha", 0.01)))), 1, ""),
    ("HardSwish", _unary(lambda b, n: nn.HardSwish()), 14, ""),
    ("Sigmoid", _unary(lambda b, n: nn.Sigmoid()), 1, ""),
    ("Tanh", _unary(lambda b, n: nn.Tanh()), 1, ""),
    ("GlobalAveragePool", op_global_avg_pool, 1, "1-D and 2-D"),
    ("Add", _binary("Add"), 1, "broadcasting"),
    ("Sub", _binary("Sub"), 1, "broadcasting"),
    ("Mul", _binary("Mul"), 1, "broadcasting"),
    ("Div", _binary("Div"), 1, "broadcasting"),
    ("Concat", op_concat, 1, ""),
    ("Flatten", op_flatten, 1, ""),
    ("Reshape", op_reshape, 5, "a constant or folded shape; may merge the batch axis (a view)"),
    ("Transpose", op_transpose, 1, "any perm (one moving the batch axis gives a view)"),
    (
        "Pad",
        op_pad,
        1,
        "constant, reflect (pads below the axis size), edge and wrap modes; any axes but the "
        "batch; no negative pads",
    ),
    ("Identity", op_identity, 1, ""),
    ("Dropout", op_identity, 1, "inference (an identity; the mask all True); not training_mode"),
]:
    register(_op, _fn, since=_since, limits=_limits)

for _op, _fn, _limits in [
    ("Shape", op_shape, ""),
    (
        "Unsqueeze",
        op_unsqueeze,
        "constants and shapes; computed tensors (not before the batch axis)",
    ),
    ("Squeeze", op_squeeze, "constants and shapes; computed tensors (not the batch axis)"),
    (
        "Cast",
        op_cast,
        "constants to any type; computed tensors to float32/float64, bool, float16, bfloat16, float8, int4, 8- and 16-bit integers",
    ),
]:
    register(_op, _fn, folds=_op not in ("Cast", "Squeeze", "Unsqueeze"), limits=_limits)


def check_declared(b: Builder, node: IRNode, declared: dict[str, tuple[int, ...]]) -> None:
    """The per-sample shape the network computes for each output equals the file's."""
    out = node.outputs[0] if node.outputs else None
    if out in b.act and out in declared:
        got = b.g.shape_of(b.act[out])
        if tuple(got) != tuple(declared[out]):
            raise ModelFormatError(
                f"{b.where}: tensor {out!r} (node {node.name!r}) is declared with per-sample "
                f"shape {declared[out]} but computes to {tuple(got)}."
            )
