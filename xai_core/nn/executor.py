"""The executor of every native network: forward and backward passes over a DAG of nodes.

:func:`run_forward` evaluates nodes in topological order (a :class:`Plan`, made once per
target by :func:`plan`; :func:`run_outputs` evaluates several targets in one pass), freeing each value once its last consumer has run; with a
:class:`Record` it keeps, per node, what that node's layer needs for its backward pass. :func:`run_backward` walks the same nodes in reverse,
summing the gradients of values read by several nodes. Nothing is stored on the layers
or the network, so calls from many threads never meet.

At inference (no record) a convolution whose only reader is a clamping activation (ReLU,
ReLU6, Clip), or the ``Add`` of a residual connection, and whose own output is not the
one asked for runs with that node in its epilogue
(:meth:`~xai_core.backends.base.Backend.conv2d_activated`,
:meth:`~xai_core.backends.base.Backend.conv2d_added`); that node then passes the value
on. The backend computes and counts what the two nodes would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from xai_core.errors import ValidationError
from xai_core.nn.layer import Layer
from xai_core.nn.merge import Add
from xai_core.nn.shape import Identity

__all__ = [
    "Node",
    "Epilogue",
    "Step",
    "Plan",
    "Record",
    "plan",
    "run_forward",
    "run_outputs",
    "run_backward",
    "run_backward_values",
    "RELU_RULES",
    "ancestors",
]

#: The rules :func:`run_backward_values` can back-propagate through a ReLU with:
#: ``"gradient"`` (its derivative), ``"guided"`` (guided backpropagation: the derivative's
#: product, then only its positive part, ``max(g * (x > 0), 0)``) and ``"deconvnet"``
#: (deconvolution: the positive part of the incoming gradient, ``max(g, 0)``, whatever
#: the input). As Captum's ``GuidedBackprop`` and ``Deconvolution``, only
#: :class:`~xai_core.nn.ReLU` layers change rule (not ReLU6, Clip or LeakyReLU).
#: DeepLift's ``"rescale"`` and the LRP rules extend the same walk to other layer types
#: (:mod:`xai_core.nn.rules`, :data:`~xai_core.nn.rules.BACKWARD_RULES`).
RELU_RULES = ("gradient", "guided", "deconvnet")


class Node(NamedTuple):
    """One node of a network: ``layer`` applied to the outputs named ``inputs``."""

    name: str
    layer: Layer
    inputs: tuple[str, ...]


@dataclass
class Record:
    """What one forward pass kept for its backward pass.

    Attributes
    ----------
    target : str
        Name of the node whose output the forward pass returned.
    ran : list of int
        Indices of the nodes that ran, in order.
    layers : dict of str to dict
        Per node, the record its layer filled.
    output_shape : tuple of int
        Shape of the returned batch.
    kept : dict of str to ndarray
        The values asked for with ``run_forward(keep=)``, by name.
    """

    target: str = ""
    ran: list[int] = field(default_factory=list)
    layers: dict[str, dict] = field(default_factory=dict)
    output_shape: tuple[int, ...] = ()
    kept: dict[str, np.ndarray] = field(default_factory=dict)


def ancestors(nodes: Sequence[Node], target: str, given: Sequence[str] = ()) -> list[int]:
    """Indices of the nodes ``target`` depends on (itself included), in topological order.

    The nodes named in ``given`` are fed, not computed: neither they nor what only they
    depend on are included.
    """
    index = {node.name: i for i, node in enumerate(nodes)}
    fed = set(given)
    need, stack = set(), [target]
    while stack:
        name = stack.pop()
        i = index.get(name)
        if i is None or i in need or name in fed:
            continue
        need.add(i)
        stack.extend(nodes[i].inputs)
    return sorted(need)


class Epilogue(NamedTuple):
    """A node run inside the convolution that is its only input, at inference.

    Attributes
    ----------
    node : int
        Index of the clamping activation, or of the ``Add`` of a residual connection.
    residual : str or None
        The ``Add``'s other input (None for an activation).
    """

    node: int
    residual: str | None = None


class Step(NamedTuple):
    """One layer call of an inference pass (:attr:`Plan.steps`).

    Attributes
    ----------
    node : int
        Index of the node run.
    inputs : tuple of str
        The values it reads, by the name of the node that computes them (or the input's).
    epilogue : Epilogue or None
        The node the convolution computes in its backend call too, its residual by the
        name of the node that computes it.
    frees : tuple of str
        The values no later step reads (never the result): dropped after this one.
    """

    node: int
    inputs: tuple[str, ...]
    epilogue: Epilogue | None
    frees: tuple[str, ...]


class Plan(NamedTuple):
    """How :func:`run_forward` evaluates one or more targets: made once per target set by :func:`plan`.

    Attributes
    ----------
    order : tuple of int
        Indices of the nodes to run, in topological order (every ancestor of a target).
    uses : dict of str to int
        How many nodes of ``order`` read each value (a value is freed after its last
        reader), for a pass with a record, which runs every node of ``order``.
    steps : tuple of Step
        The layer calls of an inference pass: ``order`` without the nodes computed in a
        convolution's call (its activation or residual ``Add``, :func:`_epilogues`) and the
        identities (a folded batch norm, a dropout), whose readers read what they pass on.
    results : tuple of str
        Per target, the name of the value an inference pass returns for it (the target's,
        or what it passes on).
    targets : tuple of int
        Indices of the target nodes, in the order asked for.
    """

    order: tuple[int, ...]
    uses: dict[str, int]
    steps: tuple[Step, ...]
    results: tuple[str, ...]
    targets: tuple[int, ...]

    @property
    def target(self) -> int:
        """Index of the node whose output a one-target pass returns."""
        return self.targets[-1]

    @property
    def result(self) -> str:
        """The value a one-target inference pass returns."""
        return self.results[-1]


def plan(nodes: Sequence[Node], target: str | Sequence[str], given: Sequence[str] = ()) -> Plan:
    """The :class:`Plan` of a forward pass from the inputs to the node(s) called ``target``.

    ``given`` names nodes whose values the pass is fed (beside the network's inputs)
    instead of computing them: a hidden layer's values replaced, as layer integrated
    gradients does.
    """
    names = (target,) if isinstance(target, str) else tuple(target)
    index = {node.name: i for i, node in enumerate(nodes)}
    order = tuple(sorted({i for name in names for i in ancestors(nodes, name, given)}))
    uses: dict[str, int] = {}
    for i in order:
        for name in nodes[i].inputs:
            uses[name] = uses.get(name, 0) + 1
    targets = tuple(index[name] for name in names)
    fused, passes = _epilogues(nodes, order, uses, keep=set(names))
    steps, results = _steps(nodes, order, fused, passes, targets)
    return Plan(order, uses, steps, results, targets)


def _steps(
    nodes: Sequence[Node],
    order: Sequence[int],
    fused: dict[int, Epilogue],
    passes: dict[int, int],
    targets: Sequence[int],
) -> tuple[tuple[Step, ...], tuple[str, ...]]:
    """:attr:`Plan.steps` and :attr:`Plan.results` of a plan's ``order``, with the ``fused``
    convolutions and the nodes they compute (``passes``) of :func:`_epilogues`."""
    source: dict[str, str] = {}  # a passed-on value's name -> the name of the node computing it

    def computed(name: str) -> str:
        return source.get(name, name)

    runs = []
    for i in order:
        node = nodes[i]
        inputs = tuple(computed(name) for name in node.inputs)
        if i in passes:
            source[node.name] = inputs[passes[i]]
        elif _identity(node.layer) and len(inputs) == 1:
            source[node.name] = inputs[0]
        else:
            epilogue = fused.get(i)
            if epilogue is not None and epilogue.residual is not None:
                epilogue = epilogue._replace(residual=computed(epilogue.residual))
                inputs += (epilogue.residual,)  # read by this step too
            runs.append((i, inputs, epilogue))
    results = tuple(computed(nodes[t].name) for t in targets)
    last = {name: k for k, (_, inputs, _) in enumerate(runs) for name in inputs}
    steps = tuple(
        Step(
            i,
            inputs[: len(nodes[i].inputs)],
            epilogue,
            tuple(
                name for name in dict.fromkeys(inputs) if last[name] == k and name not in results
            ),
        )
        for k, (i, inputs, epilogue) in enumerate(runs)
    )
    return steps, results


def _identity(layer: Layer) -> bool:
    """Whether ``layer`` passes its input on unchanged and uncounted at inference."""
    return isinstance(layer, Identity) and type(layer).apply is Identity.apply


def _sum_of_two(node: Node) -> bool:
    """Whether ``node`` adds exactly two inputs with :class:`~xai_core.nn.merge.Add`'s own apply."""
    layer = node.layer
    return isinstance(layer, Add) and type(layer).apply is Add.apply and len(node.inputs) == 2


def _epilogues(
    nodes: Sequence[Node], order: Sequence[int], uses: dict[str, int], keep: set[str]
) -> tuple[dict[int, Epilogue], dict[int, int]]:
    """The fusable convolutions of ``order``: per convolution index, the :class:`Epilogue` its
    backend call computes too (``fused``), and per node so computed, which of its inputs (by
    position) it passes on: that convolution's output, already activated or summed (``passes``).

    A convolution (a layer with ``apply_activated`` and ``apply_added``) is fused with its
    only reader, directly or through a chain of identities (a batch norm folded away, a
    dropout) each read once, when that reader is

    - a one-input activation whose ``clamp_bounds()`` are not None (ReLU, ReLU6, Clip), or
    - an ``Add`` of two inputs with the convolution's output shape (a residual connection)
      whose other input is computed before the convolution (or is the network's input).

    A target (a name in ``keep``) is never fused away, nor an identity passing one on: its
    own value must exist. An activation whose bounds change later is still applied exactly:
    :meth:`~xai_core.backends.base.Backend.conv2d_activated` reads them on every call.
    """
    reader: dict[str, int] = {}
    for i in order:
        for name in nodes[i].inputs:
            reader[name] = i
    made = {nodes[i].name: i for i in order}
    fused: dict[int, Epilogue] = {}
    passes: dict[int, int] = {}
    for i in order:
        node = nodes[i]
        if not hasattr(node.layer, "apply_activated") or node.name in keep:
            continue
        name, j = node.name, reader.get(node.name)
        while j is not None and uses.get(name) == 1 and _identity(nodes[j].layer):
            if name in keep:
                break
            name = nodes[j].name
            j = reader.get(name)
        if j is None or uses.get(name) != 1 or name in keep:
            continue
        after = nodes[j]
        bounds = getattr(after.layer, "clamp_bounds", None)
        if after.layer.n_inputs == 1 and bounds is not None and bounds() is not None:
            fused[i], passes[j] = Epilogue(j), 0
        elif _sum_of_two(after) and after.layer.output_shape == node.layer.output_shape:
            position = after.inputs.index(name)
            other = after.inputs[1 - position]
            if made.get(other, -1) < i:  # computed already (or the network's input)
                fused[i], passes[j] = Epilogue(j, other), position
    return fused, passes


def run_forward(
    nodes: Sequence[Node],
    feeds: Mapping[str, np.ndarray],
    backend: Any,
    how: Plan,
    record: Record | None = None,
    *,
    keep: Sequence[str] = (),
) -> np.ndarray:
    """Output of the one target node of ``how`` for the batch in ``feeds``.

    Parameters
    ----------
    nodes : sequence of Node
    feeds : mapping of str to ndarray
        Per input name (and per node the plan is ``given``), its batch of shape
        (n_samples, *that value's shape).
    backend : Backend
    how : Plan
        Of the same nodes (:func:`plan`), to one target.
    record : Record, optional
        Filled with what :func:`run_backward` needs; no pair is fused then.
    keep : sequence of str, optional
        Values (by node or input name) to keep in ``record.kept``; needs a record.

    Returns
    -------
    ndarray of shape (n_samples, *target output shape)
    """
    if len(how.targets) != 1:
        raise ValidationError(
            f"run_forward returns one target; this plan has {len(how.targets)}: use run_outputs."
        )
    values: dict[str, np.ndarray] = dict(feeds)
    if record is None:
        if keep:
            raise ValidationError("run_forward(keep=) needs a record to keep the values in.")
        return np.ascontiguousarray(_infer(nodes, values, backend, how)[how.result])
    uses = dict(how.uses)
    target = nodes[how.target].name
    wanted = set(keep)
    record.kept = {name: values[name] for name in wanted if name in values}
    for i in how.order:
        node = nodes[i]
        args = [values[name] for name in node.inputs]
        for name in node.inputs:
            uses[name] -= 1
            if not uses[name] and name != target:
                del values[name]
        rec: dict = {}
        x = args[0] if node.layer.n_inputs == 1 else args
        values[node.name] = node.layer.apply(x, backend, rec)
        record.layers[node.name] = rec
        if node.name in wanted:
            record.kept[node.name] = values[node.name]
    out = np.ascontiguousarray(values[target])  # a layer may leave channels-last memory
    record.target, record.ran, record.output_shape = target, list(how.order), out.shape
    return out


def run_outputs(
    nodes: Sequence[Node], feeds: Mapping[str, np.ndarray], backend: Any, how: Plan
) -> dict[str, np.ndarray]:
    """Every target's output of ``how`` from one inference pass over the batch in ``feeds``.

    Returns
    -------
    dict of str to ndarray
        Per target node name, its output of shape (n_samples, *that node's output shape).
    """
    values = _infer(nodes, dict(feeds), backend, how)
    return {
        nodes[t].name: np.ascontiguousarray(values[r]) for t, r in zip(how.targets, how.results)
    }


def _infer(
    nodes: Sequence[Node], values: dict[str, np.ndarray], backend: Any, how: Plan
) -> dict[str, np.ndarray]:
    """``values`` after running the steps of ``how``: the plan's results among them."""
    for i, inputs, epilogue, frees in how.steps:
        layer = nodes[i].layer
        x = values[inputs[0]] if layer.n_inputs == 1 else [values[name] for name in inputs]
        if epilogue is None:
            y = layer.apply(x, backend, None)
        elif epilogue.residual is None:
            y = layer.apply_activated(x, backend, nodes[epilogue.node].layer)
        else:
            residual = values[epilogue.residual]
            y = layer.apply_added(x, backend, nodes[epilogue.node].layer, residual)
        for name in frees:
            del values[name]
        values[nodes[i].name] = y
    return values


def _add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a + b


def run_backward(
    nodes: Sequence[Node],
    input_name: str,
    grad: np.ndarray,
    backend: Any,
    record: Record,
    *,
    param_grads: bool = True,
    input_grad: bool = True,
) -> tuple[np.ndarray | None, dict[str, dict[str, np.ndarray]]]:
    """Back-propagate ``grad`` (d loss / d target output) through the recorded pass.

    Parameters
    ----------
    nodes : sequence of Node
    input_name : str
    grad : ndarray of the shape of the recorded output
    backend : Backend
    record : Record
        Of a :func:`run_forward` call over the same nodes.
    param_grads : bool, default=True
        Compute every node's parameter gradients.
    input_grad : bool, default=True
        Compute d loss / d X; without it, only what parameter gradients need is computed.

    Returns
    -------
    grad_X : ndarray of shape (n_samples, *input_shape) or None
    grads : dict of str to dict of str to ndarray
        Per node with parameters, d loss / d parameter (empty without ``param_grads``).
    """
    _check_record(record)
    if tuple(grad.shape) != tuple(record.output_shape):
        raise ValidationError(
            f"grad must have the shape of the recorded output {tuple(record.output_shape)}; "
            f"got {grad.shape}."
        )
    at = (input_name,) if input_grad else ()
    found, out = _walk(nodes, record, record.target, grad, backend, at, param_grads, None)
    gX = found.get(input_name) if input_grad else None
    if input_grad and gX is None:
        raise ValidationError("the output does not depend on the input: no input gradient.")
    return (None if gX is None else np.ascontiguousarray(gX)), out


def run_backward_values(
    nodes: Sequence[Node],
    grad: np.ndarray,
    backend: Any,
    record: Record,
    at: Sequence[str],
    *,
    start: str | None = None,
    relu_rule: str = "gradient",
    contiguous: bool = True,
) -> dict[str, np.ndarray]:
    """The gradients of a recorded pass with respect to any of its values: hidden layers' too.

    Parameters
    ----------
    nodes : sequence of Node
    grad : ndarray of shape (n_samples, *shape of the value ``start``)
        d loss / d the value the walk starts from.
    backend : Backend
    record : Record
        Of a :func:`run_forward` call over the same nodes.
    at : sequence of str
        The values (by node or input name, or a node the pass was fed) whose gradient is
        returned; the walk stops once it has them all.
    start : str, optional
        The node ``grad`` is the gradient of: the recorded pass's target by default, or any
        node it ran (a hidden unit's gradient with respect to the input, say).
    relu_rule : str, BackwardRule or LayerRules, default="gradient"
        How gradients pass through :class:`~xai_core.nn.ReLU` layers (:data:`RELU_RULES`),
        or another backward rule of :mod:`xai_core.nn.rules` (DeepLift's ``"rescale"``,
        the LRP rules): each layer whose class lists it in ``backward_rules`` applies it.
    contiguous : bool, default=True
        Return C-contiguous arrays; False returns each gradient in the memory order the
        walk made it (an NCHW-shaped view of channels-last memory after a convolution).

    Returns
    -------
    dict of str to ndarray
        Per name of ``at``, d loss / d that value, of shape (n_samples, *its shape).

    Raises
    ------
    ValidationError
        An unknown rule, a ``start`` the pass did not run, or a value of ``at`` the start
        does not depend on.
    """
    _check_record(record)
    from xai_core.nn.rules import as_rule

    rule = as_rule(relu_rule)
    start = record.target if start is None else start
    ran = {nodes[i].name for i in record.ran}
    if start not in ran:
        raise ValidationError(f"start {start!r} is not a node the recorded pass ran.")
    found, _ = _walk(nodes, record, start, grad, backend, tuple(at), False, rule)
    missing = [name for name in at if name not in found]
    if missing:
        raise ValidationError(f"the value of {start!r} does not depend on {missing}: no gradient.")
    return {name: np.ascontiguousarray(found[name]) if contiguous else found[name] for name in at}


def _check_record(record: Record) -> None:
    if not isinstance(record, Record) or not record.ran:
        raise ValidationError(
            "backward needs the record of a forward pass run with cache=True (or record=)."
        )


def _walk(
    nodes: Sequence[Node],
    record: Record,
    start: str,
    grad: np.ndarray,
    backend: Any,
    at: tuple[str, ...],
    param_grads: bool,
    rule: Any,
) -> tuple[dict[str, np.ndarray], dict[str, dict[str, np.ndarray]]]:
    """The reverse walk of a recorded pass from ``start``: the gradients at the values ``at``
    and, with ``param_grads``, every node's parameter gradients. ``rule`` (a
    :class:`~xai_core.nn.rules.BackwardRule`, a :class:`~xai_core.nn.rules.LayerRules` of
    one per node, or None for the gradient) replaces the backward pass of the layers whose
    own class lists it in ``backward_rules``."""
    from xai_core.nn.rules import LayerRules

    def modified_rule(node: Node) -> Any:
        """The node's rule, or None where it passes back its gradient."""
        r = rule.for_node(node.name) if isinstance(rule, LayerRules) else rule
        return None if r is None or r.name == "gradient" else r

    position = {nodes[i].name: k for k, i in enumerate(record.ran)}
    ran = record.ran[: position[start] + 1]
    # which values need a gradient: those leading back to parameters or to a value of ``at``
    wants: dict[str, bool] = dict.fromkeys(at, True)
    for i in ran:
        node = nodes[i]
        wants[node.name] = (
            node.name in wants
            or (param_grads and bool(node.layer.params))
            or any(wants.get(name, False) for name in node.inputs)
        )
    pending = set(at)
    grads: dict[str, np.ndarray] = {start: grad}
    found: dict[str, np.ndarray] = {}
    out: dict[str, dict[str, np.ndarray]] = {}
    for i in reversed(ran):
        node = nodes[i]
        g = grads.pop(node.name, None)
        if node.name in pending:
            pending.discard(node.name)
            if g is not None:
                found[node.name] = g
            if not pending and not param_grads:
                break
        if g is None or not wants[node.name]:
            continue
        need_in = [wants.get(name, False) for name in node.inputs]
        r = modified_rule(node)
        if r is not None and r.name in type(node.layer).__dict__.get("backward_rules", ()):
            gx = node.layer.vjp_rule(g, backend, record.layers[node.name], r)
            pg: dict = {}
        else:
            needs = {"needs": tuple(need_in)} if node.layer.takes_input_needs else {}
            gx, pg = node.layer.vjp(
                g,
                backend,
                record.layers[node.name],
                param_grads=param_grads,
                input_grad=any(need_in),
                **needs,
            )
        if param_grads and node.layer.params:
            out[node.name] = pg
        if not any(need_in):
            continue
        parts = [gx] if node.layer.n_inputs == 1 else list(gx)
        for name, part, need in zip(node.inputs, parts, need_in):
            if not need or part is None:
                continue
            grads[name] = backend.elementwise(_add, grads[name], part) if name in grads else part
    for name in pending:  # the network's inputs, and values the pass was fed
        if name in grads:
            found[name] = grads[name]
    return found, out
