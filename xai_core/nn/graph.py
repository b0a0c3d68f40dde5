"""Graph networks: a directed acyclic graph of layers, built node by node.

A :class:`Graph` has an input (a batch of samples of ``input_shape``), nodes that each
apply one layer to the outputs of earlier nodes (or to an input), and an output node; it
may have several of each.
:class:`~xai_core.nn.Sequential` is the special case of a chain; both run on the same
executor (:mod:`xai_core.nn.executor`), whose forward pass keeps what the backward pass
needs in an explicit per-call :class:`~xai_core.nn.executor.Record`, so one network may
serve many threads at once.

Building a network (what an importer targets)
---------------------------------------------
>>> from xai_core import nn
>>> g = nn.Graph(input_shape=(3, 32, 32), input_name="image", layout="NCHW")
>>> h = g.add(nn.Conv2D(16, 3, stride=2, padding="same", use_bias=False), "image", name="conv1")
>>> h = g.add(nn.BatchNormalization(epsilon=1e-5), h, name="bn1")
>>> h = g.add(nn.ReLU6(), h, name="relu1")
>>> d = g.add(nn.DepthwiseConv2D(3, padding=(1, 1, 1, 1)), h, name="dw")
>>> s = g.add(nn.Add(), [h, d], name="residual")          # several inputs: a list of names
>>> p = g.add(nn.GlobalAveragePooling2D(), s, name="pool")
>>> c = g.add(nn.Constant(np.full(16, 0.5, np.float32)), name="half")   # no inputs
>>> m = g.add(nn.Multiply(), [p, c], name="scaled")      # an operand that is a constant
>>> g.add(nn.Dense(10), m, name="logits")
'logits'
>>> g.add(nn.Softmax(), name="probs")                    # inputs default to the last node
'probs'
>>> g.set_output("probs")                                # the default is the last node added
>>> g.set_params("conv1", weight=w_conv)                 # arrays of the shapes in g.summary()
>>> g.set_params("bn1", gamma=..., beta=..., mean=..., variance=...)
>>> g.shape_of("pool")                                   # per-sample shape of a node's output
(16,)

Several inputs and outputs: ``g.add_input("mask", (16,))`` adds an input nodes read by
name; ``g.set_outputs(["boxes", "scores"])`` makes several nodes outputs.
``net.predict_outputs({"input": X, "mask": M})`` returns every output from one pass;
``net.with_output("scores")`` and ``net.with_inputs(mask=m)`` are views with one output
and one open input, which ``predict``, ``gradient`` and every explainer take.

Rules:

- ``add(layer, inputs=None, *, name=None) -> str`` builds the layer at once (its
  parameters drawn from ``seed``, Glorot-uniform weights and zero biases) and returns the
  node's name, which is the name of its output. ``inputs`` is a node name, the graph's
  ``input_name``, or a list of them for layers with several inputs (``Add``, ``Multiply``,
  ``Subtract``, ``Divide``, ``Concatenate``); ``None`` means the last node added (the
  graph input for the first node). Inputs must exist already, so the graph is acyclic by
  construction and the order of ``add`` calls is a topological order. Names are unique;
  unnamed layers are named ``"<type>_<k>"``.
- ``set_params(node, **arrays)`` sets a node's parameters (``weight``, ``bias``,
  ``gamma``, ...) and buffers (``mean``, ``variance``, ``value``) from arrays of exactly
  their shapes (cast to the network's dtype; non-finite values are refused).
- Shapes, axes and permutations are **per sample**: the batch axis is never included.
  ``Reshape((-1,))``, ``Transpose((1, 2, 0))``, ``Concatenate(axis=0)`` (channels of
  NCHW) act on one sample. An ONNX ``perm`` of ``[0, 2, 3, 1]`` becomes ``(1, 2, 0)``.
- Elementwise layers with several inputs broadcast per sample, numpy-style (trailing axes
  aligned); a ``Constant``'s output has a batch axis of 1, so a constant of per-sample
  shape ``(c, 1, 1)`` scales the channels of NCHW samples and a scalar constant is
  ``Constant(np.float32(2))``. ONNX constants lose a leading batch axis of 1.
- Layouts: spatial layers (``Conv2D``, ``DepthwiseConv2D``, pools,
  ``GlobalAveragePooling2D``, ``ZeroPadding2D``) take ``layout="NCHW"`` (default;
  weights ``(filters, in_channels / groups, kh, kw)``, as ONNX and PyTorch) or
  ``layout="NHWC"`` (samples ``(h, w, c)``, as Keras; the weights keep the NCHW layout,
  so a Keras kernel ``(kh, kw, in, out)`` is given as ``kernel.transpose(3, 2, 0, 1)``).
  ``BatchNormalization(axis=0)`` normalises NCHW channels, ``axis=-1`` NHWC ones (and
  the features of a flat ``(units,)`` sample either way). The graph's own ``layout``
  records how *its input* is laid out, for :attr:`Graph.image_shape` and explainers;
  a ``Transpose`` node converts between layouts where a source model mixes them.
- ``Dense(units, use_bias=True)``: ``y = x @ weight + bias`` with ``weight`` of shape
  ``(n_in, units)`` (an ONNX ``Gemm`` with ``transB=1`` gives ``B.T``; Keras's kernel is
  already ``(n_in, units)``; ``torch.nn.Linear.weight`` is ``(units, n_in)``: give ``.T``).
- The result is a :class:`~xai_core.model.base.Model` with gradients: ``predict``,
  ``gradient``, ``activations(X, node_name)``, ``save``; every explainer takes it.
  ``fold_batch_norm()`` returns a copy with each foldable batch norm merged into the
  convolution or dense layer before it.

Thread safety: layer objects hold parameters only. ``forward`` and ``backward`` exchange
what the backward pass needs through a :class:`~xai_core.nn.executor.Record` made per call,
and backends count under a lock, so concurrent ``predict`` / ``gradient`` calls on one
network and one backend give the results and counters of running them one after another.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from xai_core.errors import CapabilityError, ShapeError, UnknownNameError, ValidationError
from xai_core.nn.layer import Layer
from xai_core.nn.network import Network, Node
from xai_core.nn.trainable import Trainable

__all__ = ["Graph"]

LAYOUTS = ("NCHW", "NHWC")


class Graph(Trainable, Network):
    """A network that is a directed acyclic graph of layers; see the module docstring.

    Parameters
    ----------
    input_shape : tuple of int
        Shape of one input sample, e.g. ``(3, 224, 224)`` (NCHW) or ``(224, 224, 3)`` (NHWC).
    input_name : str, default="input"
        Name nodes use to read the graph's input.
    layout : {"NCHW", "NHWC"}, default="NCHW"
        How image inputs are laid out (ignored for flat inputs).
    output_names : sequence of str, optional
        Names of the outputs (class names).
    seed : int, default=0
        Seed of the initial weights of the layers added.
    dtype : {"float32", "float64"}, default="float32"
    name : str, optional

    Attributes
    ----------
    nodes : list of Node
        ``(name, layer, inputs)`` in topological order.
    layers : list of Layer
        The nodes' layers, in the same order.
    output : str
        Name of the output node.
    """

    def __init__(
        self,
        input_shape: Sequence[int],
        *,
        input_name: str = "input",
        layout: str = "NCHW",
        output_names: Sequence[str] | None = None,
        seed: int = 0,
        dtype: Any = "float32",
        name: str | None = None,
    ) -> None:
        super().__init__(output_names=output_names, seed=seed, dtype=dtype, name=name)
        if not isinstance(input_name, str) or not input_name:
            raise ValidationError(f"input_name must be a non-empty string; got {input_name!r}.")
        if layout not in LAYOUTS:
            raise ValidationError(f"layout must be 'NCHW' or 'NHWC'; got {layout!r}.")
        self.input_name = input_name
        self.layout = layout
        self.input_shape = self._check_shape(input_shape)
        self._rng = np.random.default_rng(self.seed)
        self._shapes: dict[str, tuple[int, ...]] = {input_name: self.input_shape}
        self._index: dict[str, int] = {}  # node name -> position in nodes, for node()
        self._input_shapes: dict[str, tuple[int, ...]] = {input_name: self.input_shape}
        self._fixed: dict[str, np.ndarray] = {}  # inputs given one value by with_inputs
        self._outputs: tuple[str, ...] | None = None

    # -- building ---------------------------------------------------------------------
    def add(
        self, layer: Layer, inputs: str | Sequence[str] | None = None, *, name: str | None = None
    ) -> str:
        """Add a node applying ``layer`` to ``inputs``; return its name.

        Parameters
        ----------
        layer : Layer
            A fresh layer (not in any network yet).
        inputs : str or sequence of str, optional
            Names of earlier nodes or the graph input; default the last node added.
        name : str, optional
            The node's (and layer's) name; default the layer's name or ``"<type>_<k>"``.

        Returns
        -------
        str
        """
        if not isinstance(layer, Layer):
            raise ValidationError(
                f"layer must be a Layer (Dense, Conv2D, ReLU, ...); got {type(layer).__name__}."
            )
        if layer.output_shape is not None:  # built: every node's layer is built when added
            raise ValidationError(
                f"layer {layer.name!r} is already built into a network; give a new layer object."
            )
        if name is not None:
            if not isinstance(name, str) or not name:  # Layer's own rule for names
                raise ValidationError(f"name must be a non-empty string; got {name!r}.")
            layer.name = name
        if inputs is None:
            inputs = [self.nodes[-1].name if self.nodes else self.input_name]
            if layer.n_inputs == 0:
                inputs = []
        elif isinstance(inputs, str):
            inputs = [inputs]
        inputs = list(inputs)
        for i in inputs:
            if i not in self._shapes:
                raise UnknownNameError("node", i, list(self._shapes))
        if layer.n_inputs is None and not inputs:
            raise ValidationError(f"layer {type(layer).__name__} needs at least one input.")
        if layer.n_inputs is not None and len(inputs) != layer.n_inputs:
            raise ValidationError(
                f"layer {type(layer).__name__} takes {layer.n_inputs} input(s); got {inputs}."
            )
        if layer.name is None:
            layer.name = self._auto_name(layer.kind, self._shapes)
        elif layer.name in self._shapes:
            raise ValidationError(f"node names must be unique; {layer.name!r} is taken.")
        shapes = [self._shapes[i] for i in inputs]
        shape_in = shapes[0] if layer.n_inputs == 1 else shapes
        try:
            out = layer.build(shape_in, self._rng, self.dtype)
        except (ShapeError, ValidationError) as exc:
            raise type(exc)(f"node {layer.name!r}: {exc}") from exc
        self._index[layer.name] = len(self.nodes)
        self.nodes.append(Node(layer.name, layer, tuple(inputs)))
        self._shapes[layer.name] = tuple(out)
        self._invalidate()
        return layer.name

    def node(self, name: str) -> Node:
        """The node called ``name`` (looked up by name, not by a scan of the nodes)."""
        i = getattr(self, "_index", {}).get(name)
        if i is not None and i < len(self.nodes) and self.nodes[i].name == name:
            return self.nodes[i]
        return super().node(name)

    def has_node(self, name: str) -> bool:
        """Whether ``name`` is taken: a node's name or the graph input's."""
        return name in self._shapes

    def add_input(self, name: str, shape: Sequence[int]) -> str:
        """Add a further input of per-sample ``shape``; return its name.

        Nodes read it by ``name``. A network with several inputs runs with
        :meth:`predict_outputs` (a dict of batches); :meth:`with_inputs` fixes all but the
        one an explainer attributes to.
        """
        if not isinstance(name, str) or not name:
            raise ValidationError(f"name must be a non-empty string; got {name!r}.")
        if name in self._shapes:
            raise ValidationError(f"input names must be unique; {name!r} is taken.")
        shape = self._check_shape(shape)
        self._input_shapes[name] = shape
        self._shapes[name] = shape
        self._invalidate()
        return name

    def set_output(self, node: str) -> None:
        """Make ``node`` the network's one output (default: the last node added)."""
        self.set_outputs([node])

    def set_outputs(self, nodes: Sequence[str]) -> None:
        """Make several nodes the network's outputs, in order; the first is :attr:`output`.

        ``predict`` returns the first; :meth:`predict_outputs` all of them from one pass;
        :meth:`with_output` picks one for an explainer.
        """
        names = (nodes,) if isinstance(nodes, str) else tuple(nodes)
        if not names:
            raise ValidationError("nodes must name at least one output node; got none.")
        for name in names:
            self.node(name)
        if len(set(names)) != len(names):
            raise ValidationError(f"each output is named once; got {list(names)}.")
        self._outputs = names
        self._invalidate()

    def shape_of(self, node: str) -> tuple[int, ...]:
        """Per-sample shape of the output of ``node`` (or of the graph input)."""
        if node not in self._shapes:
            raise UnknownNameError("node", node, list(self._shapes))
        return self._shapes[node]

    @property
    def output(self) -> str:
        """Name of the first output node (what :meth:`predict` returns)."""
        return self.outputs[0]

    @property
    def outputs(self) -> tuple[str, ...]:
        """Names of the output nodes, in order (the last node added by default)."""
        if not self.nodes:
            raise ValidationError("the graph has no nodes yet: add layers with Graph.add.")
        return self._outputs if self._outputs is not None else (self.nodes[-1].name,)

    @property
    def inputs(self) -> tuple[str, ...]:
        """Names of the inputs a caller feeds (those :meth:`with_inputs` has not fixed)."""
        return tuple(name for name in self._input_shapes if name not in self._fixed)

    @property
    def input_shapes(self) -> dict[str, tuple[int, ...]]:
        """Per input a caller feeds, its per-sample shape."""
        return {name: self._input_shapes[name] for name in self.inputs}

    # -- views ------------------------------------------------------------------------
    def _view(self) -> Graph:
        """A shallow copy sharing the layers, with its own structure and caches."""
        view = copy.copy(self)
        view.nodes = list(self.nodes)
        view._index, view._shapes = dict(self._index), dict(self._shapes)
        view._input_shapes, view._fixed = dict(self._input_shapes), dict(self._fixed)
        view._local = threading.local()
        view._plans = {}
        return view

    def with_output(self, output: str | int) -> Graph:
        """The network whose one output is ``output`` (a name in :attr:`outputs`, or its index).

        It shares this network's layers (and so its weights); its ``predict`` gives that
        output, of shape (n_samples, prod(its shape)), and every explainer takes it. Class
        names (``output_names``) stay with the first output.
        """
        outputs = self.outputs
        if isinstance(output, (int, np.integer)) and not isinstance(output, bool):
            if not -len(outputs) <= output < len(outputs):
                raise ValidationError(
                    f"output index {output} is out of range for a network with "
                    f"{len(outputs)} output(s): {list(outputs)}."
                )
            name = outputs[int(output)]
        elif isinstance(output, str) and output in outputs:
            name = output
        else:
            raise UnknownNameError("output", output, list(outputs))
        view = self._view()
        view._outputs = (name,)
        if name != outputs[0]:
            view.output_names, view.classes_ = None, None
        return view

    def with_inputs(self, fixed: Mapping[str, Any] | None = None, **values: Any) -> Graph:
        """The network with some inputs fixed to one per-sample value each.

        Parameters
        ----------
        fixed : mapping of str to array-like, optional
            Per input name, its value for every sample, of that input's per-sample shape
            (repeated over each batch). Keyword arguments add to it.

        Returns
        -------
        Graph
            Sharing the layers; its :attr:`inputs` are the others, the first of them its
            ``input_name`` and ``input_shape`` (what explainers attribute to).
        """
        given = {**(dict(fixed) if fixed is not None else {}), **values}
        open_inputs = self.inputs
        for name, value in given.items():
            if name not in open_inputs:
                raise UnknownNameError("input", name, list(open_inputs))
            array = np.asarray(value, dtype=self.dtype)
            if array.shape != self._input_shapes[name]:
                raise ShapeError(
                    f"the value of input {name!r} must have its per-sample shape "
                    f"{self._input_shapes[name]}; got {array.shape}."
                )
            if not np.all(np.isfinite(array)):
                raise ValidationError(f"the value of input {name!r} holds NaN or infinity.")
            given[name] = array
        if len(given) >= len(open_inputs):
            raise ValidationError(
                f"with_inputs must leave at least one input open; {list(open_inputs)} "
                "would all be fixed."
            )
        view = self._view()
        view._fixed.update(given)
        view.input_name = view.inputs[0]
        view.input_shape = view._input_shapes[view.input_name]
        return view

    def _feeds(self, X: Any) -> dict[str, np.ndarray]:
        """The executor's feeds: ``X`` for the one open input (or a dict of batches per
        input), and each fixed input repeated over the batch."""
        if isinstance(X, Mapping):
            feeds = dict(X)
        elif len(self.inputs) != 1:
            raise CapabilityError(
                f"the network has {len(self.inputs)} inputs {list(self.inputs)}: pass a dict "
                "{name: batch} to predict_outputs, or fix all but one with with_inputs(...)."
            )
        else:
            feeds = {self.input_name: X}
        n = len(next(iter(feeds.values())))
        for name, value in self._fixed.items():
            feeds[name] = np.repeat(value[None], n, axis=0)
        return feeds

    @property
    def image_shape(self) -> tuple[int, ...] | None:
        """``(height, width)`` for one-channel images, else ``(channels, height, width)``
        (NCHW) or ``(height, width, channels)`` (NHWC); None for inputs that are not images."""
        shape = self.input_shape
        if len(shape) != 3:
            return None
        if self.layout == "NHWC":
            return tuple(shape[:2]) if shape[2] == 1 else tuple(shape)
        return tuple(shape[1:]) if shape[0] == 1 else tuple(shape)

    def _describe_head(self) -> str:
        return f"Graph(input_shape={self.input_shape}, layout={self.layout!r}"
