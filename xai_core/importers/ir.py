"""The neutral form every source is read into before a native network is built.

A reader (ONNX, Keras, TF.js) turns its file into an :class:`IRGraph`: a list of
:class:`IRNode` in topological order, each an operator name with attributes and named
inputs and outputs, plus the constant tensors (weights) by name. Builders turn an
``IRGraph`` into a :class:`xai_core.nn.Graph`. Reading checks the file; building checks the
operators; neither runs the network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xai_core.attribution.cost import Cost, check_cost
from xai_core.errors import CapabilityError, ModelFormatError, ShapeError

__all__ = ["IRNode", "IRGraph", "check_supported", "check_size"]

#: Largest tensor a model file may declare, in elements (about 8 GB of float32).
MAX_ELEMENTS = 2**31
#: Most dimensions a tensor may declare (numpy's own limit is 64).
MAX_RANK = 32


@dataclass
class IRNode:
    """One operator application.

    Attributes
    ----------
    op : str
        Operator name in the source's vocabulary (``"Conv"``, ``"Gemm"``; ``"Dense"``).
    name : str
        Node name, unique in the graph.
    inputs, outputs : list of str
        Names of the tensors read and written (``""`` for an omitted optional input).
    attrs : dict
        Attributes (ints, floats, strings, lists, arrays).
    """

    op: str
    name: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class IRGraph:
    """A source network in neutral form.

    Attributes
    ----------
    nodes : list of IRNode
        In topological order.
    initializers : dict of str to ndarray
        Constant tensors (weights, biases, shapes) by name.
    input_name : str
    input_shape : tuple of int
        Shape of one sample (the batch axis removed).
    output_name : str
    declared : dict of str to tuple
        Declared per-sample shapes of intermediate tensors, where the file states them.
    types : dict of str to int
        The element type (ONNX's ``TensorProto`` code) of the inputs and intermediate
        tensors, where the file states them or shape inference finds them.
    meta : dict
        Source-specific facts: class names, producer, layout.
    more_inputs : dict of str to tuple of int
        Further inputs after the first, by name, with their per-sample shapes (all share
        the batch axis).
    more_outputs : list of str
        Further outputs after the first, in order.
    """

    nodes: list[IRNode]
    initializers: dict[str, np.ndarray]
    input_name: str
    input_shape: tuple[int, ...]
    output_name: str
    declared: dict[str, tuple[int, ...]] = field(default_factory=dict)
    types: dict[str, int] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    more_inputs: dict[str, tuple[int, ...]] = field(default_factory=dict)
    more_outputs: list[str] = field(default_factory=list)

    @property
    def input_names(self) -> list[str]:
        """Every input, the first one first."""
        return [self.input_name, *self.more_inputs]

    @property
    def output_names(self) -> list[str]:
        """Every output, the first one first."""
        return [self.output_name, *self.more_outputs]


def check_supported(nodes: list[IRNode], supported: set[str] | dict, source: str) -> None:
    """Raise :class:`CapabilityError` naming every unsupported operator, with its nodes.

    Called on the whole graph before anything is built, so one message lists all that is
    missing (each operator once, with its first nodes and how many there are).
    """
    missing: dict[str, list[str]] = {}
    for node in nodes:
        if node.op not in supported:
            missing.setdefault(node.op, []).append(node.name)
    if not missing:
        return
    parts = []
    for op, names in sorted(missing.items()):
        shown = ", ".join(repr(n) for n in names[:3])
        more = f" and {len(names) - 3} more" if len(names) > 3 else ""
        parts.append(f"{op!r} (node{'s' if len(names) > 1 else ''} {shown}{more})")
    noun = "operator is" if len(missing) == 1 else f"{len(missing)} operators are"
    raise CapabilityError(
        f"{source}: {noun} not supported: {'; '.join(parts)}. "
        f"Supported operators: {', '.join(sorted(supported))}."
    )


def _shape_text(dims: list[int]) -> str:
    if len(dims) <= 8 and all(d < 10**12 for d in dims):
        return str(dims)
    shown = ", ".join(str(d) if d < 10**12 else f"~1e{len(str(d)) - 1}" for d in dims[:8])
    return f"[{shown}{', ...' if len(dims) > 8 else ''}] ({len(dims)} dimensions)"


def check_size(name: str, shape: Any, n_bytes: int | None, itemsize: int, source: str) -> int:
    """Check a declared tensor shape against the bytes actually present; return its size.

    Parameters
    ----------
    name : str
        Tensor name, for the message.
    shape : sequence of int
        Declared dimensions.
    n_bytes : int or None
        Bytes stored for the tensor (``None`` when the reader counts elements itself).
    itemsize : int
        Bytes per element.
    source : str
        The file, for the message.

    Raises
    ------
    ModelFormatError
        Dimensions that are not integers (``4.5``, ``"3"``, ``true``), negative or absurd
        dimensions, more than :data:`MAX_RANK` of them, or a byte count that disagrees with
        the shape.
    ResourceError
        A tensor larger than the memory limit (:func:`xai_core.set_resource_limits`).
    """
    try:
        dims = [int(d) for d in shape]
        whole = all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in shape)
    except (TypeError, ValueError, OverflowError):
        whole = False
    if not whole:
        raise ModelFormatError(
            f"{source}: tensor {name!r} has a shape that is not a list of integers: {shape!r}."
        ) from None
    if len(dims) > MAX_RANK:
        raise ModelFormatError(
            f"{source}: tensor {name!r} declares {len(dims)} dimensions; at most {MAX_RANK} "
            "are supported."
        )
    if any(d < 0 for d in dims):
        raise ModelFormatError(
            f"{source}: tensor {name!r} declares negative dimensions {_shape_text(dims)}."
        )
    count = 0 if 0 in dims else 1
    for d in dims if count else ():
        count *= d
        if count > MAX_ELEMENTS:
            break  # a thousand dimensions of 2 need not be multiplied out
    if count > MAX_ELEMENTS:
        raise ModelFormatError(
            f"{source}: tensor {name!r} declares shape {_shape_text(dims)}: more than the "
            f"{MAX_ELEMENTS} elements allowed."
        )
    check_cost(
        Cost(0, count * itemsize, f"tensor {name!r} of shape {_shape_text(dims)}"),
        f"{source}: reading tensor {name!r}",
    )
    if n_bytes is not None and n_bytes != count * itemsize:
        raise ModelFormatError(
            f"{source}: tensor {name!r} declares shape {dims} ({count * itemsize} bytes) "
            f"but the file holds {n_bytes} bytes for it."
        )
    return count


def unique_node_name(graph: Any, base: str, counters: dict[str, int] | None = None) -> str:
    """``base``, or ``base_2``, ``base_3`` ...: the first name no node of ``graph`` has yet.

    Parameters
    ----------
    graph : xai_core.nn.Graph
        The graph being built (its names are looked up, not scanned).
    base : str
        The name wanted.
    counters : dict of str to int, optional
        The last suffix given for each base, kept by the caller across calls so that many
        nodes of one name (a file may repeat a name any number of times) are numbered in
        constant time each instead of by counting up from 2 every time.
    """
    if not graph.has_node(base):
        return base
    k = counters.get(base, 1) if counters is not None else 1
    name = base
    while graph.has_node(name):
        k += 1
        name = f"{base}_{k}"
    if counters is not None:
        counters[base] = k
    return name


def name_outputs(graph: Any, output_names: Any, meta: dict[str, Any]) -> Any:
    """Give ``graph`` the ``output_names`` asked for, else the source's ``class_names``."""
    names = output_names if output_names is not None else meta.get("class_names")
    if names is not None:
        names = [str(n) for n in names]
        if len(names) != graph.n_outputs:
            raise ShapeError(
                f"output_names has {len(names)} names for a network with {graph.n_outputs} outputs."
            )
        graph.output_names = tuple(names)
    return graph
