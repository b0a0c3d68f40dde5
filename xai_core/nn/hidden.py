"""Gradients at a network's hidden layers: what Grad-CAM, layer IG and conductance read.

One recorded forward pass per batch gives a node's values and, walking back from the
explained output, the gradient of ``output[target]`` with respect to them
(:func:`layer_gradient`). The node's values may instead be fed (layer integrated
gradients replaces them by points between their values at a baseline and at the input),
and a unit of the node may be walked back to the input as well (neuron conductance).
Every product is the backend's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from xai_core.errors import ShapeError, ValidationError
from xai_core.nn.executor import Node, Record, plan, run_backward_values, run_forward

__all__ = ["LayerGradient", "layer_gradient", "neuron_index"]


class LayerGradient(NamedTuple):
    """What :meth:`~xai_core.nn.Network.layer_gradient` returns for a batch.

    Attributes
    ----------
    activations : ndarray of shape (n_samples, *layer_shape)
        The layer's values (those fed, when they were).
    gradient : ndarray of shape (n_samples, *layer_shape)
        d output[target] / d those values.
    output : ndarray of shape (n_samples,)
        ``output[target]`` of each row.
    input_gradient : ndarray of shape (n_samples, *input_shape) or None
        With ``neuron=``: d (the unit's value) / d X, else None.
    """

    activations: np.ndarray
    gradient: np.ndarray
    output: np.ndarray
    input_gradient: np.ndarray | None = None


def neuron_index(neuron: Any, shape: Sequence[int], name: str = "neuron_selector") -> tuple:
    """One unit of a layer of per-row ``shape``, as an index tuple (Captum's ``neuron_selector``).

    Parameters
    ----------
    neuron : int or tuple of int
        An int for a layer of one axis, else one index per axis (negative from the end).
    shape : tuple of int
        The layer's per-row shape.

    Returns
    -------
    tuple of int
    """
    index = (neuron,) if isinstance(neuron, (int, np.integer)) else neuron
    if (
        not isinstance(index, (tuple, list))
        or isinstance(neuron, bool)
        or not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in index)
    ):
        raise ValidationError(
            f"{name} must be an int or a tuple of ints, one per axis of the layer's shape "
            f"{tuple(shape)}; got {neuron!r}."
        )
    if len(index) != len(shape):
        raise ShapeError(
            f"{name} must give one index per axis of the layer's shape {tuple(shape)}; got "
            f"{tuple(index)}."
        )
    for i, n in zip(index, shape):
        if not -n <= i < n:
            raise ValidationError(
                f"{name} {tuple(index)} is out of range for the layer's shape {tuple(shape)}."
            )
    return tuple(int(i) % n for i, n in zip(index, shape))


def layer_gradient(
    nodes: Sequence[Node],
    feeds: dict[str, np.ndarray],
    target: np.ndarray,
    value: str,
    output: str,
    backend: Any,
    *,
    layer_values: np.ndarray | None = None,
    neuron: tuple | None = None,
    relu_rule: str = "gradient",
    input_name: str = "input",
    plans: dict | None = None,
) -> LayerGradient:
    """The values of ``value`` and the gradient of ``output[target]`` with respect to them, one batch.

    Parameters
    ----------
    nodes : sequence of Node
    feeds : dict of str to ndarray
        The batch of each network input, of shape (n_samples, *input_shape).
    target : ndarray of int64 of shape (n_samples,)
    value : str
        A node's name, or the input's.
    output : str
        The output node.
    backend : Backend
    layer_values : ndarray of shape (n_samples, *layer_shape), optional
        Values fed in place of ``value``'s (what only they depend on is not computed).
    neuron : tuple of int, optional
        A unit of ``value`` (:func:`neuron_index`) whose gradient with respect to the input
        is returned too.
    relu_rule : {"gradient", "guided", "deconvnet"}, default="gradient"
    input_name : str, default="input"
    plans : dict, optional
        A cache of plans, keyed by (output, fed values).

    Returns
    -------
    LayerGradient
    """
    given = () if layer_values is None or value == input_name else (value,)
    key = (output, given)
    how = None if plans is None else plans.get(key)
    if how is None:
        how = plan(nodes, output, given)
        if plans is not None:
            plans[key] = how
    feeds = dict(feeds)
    if layer_values is not None:
        feeds[value] = layer_values
    record = Record()
    out = run_forward(nodes, feeds, backend, how, record, keep=(value,))
    if value not in record.kept:
        raise ValidationError(f"the output {output!r} does not depend on the layer {value!r}.")
    acts = np.ascontiguousarray(record.kept[value])
    n = out.shape[0]
    flat = out.reshape(n, -1)
    rows = np.arange(n)
    seed = np.zeros_like(flat)
    seed[rows, target] = 1
    if value == output:  # the output itself: its gradient is the seed (fed or not)
        grad = seed.reshape(out.shape)
    else:
        grad = run_backward_values(
            nodes, seed.reshape(out.shape), backend, record, (value,), relu_rule=relu_rule
        )[value]
    input_grad = None
    if neuron is not None:
        if value == input_name:
            raise ValidationError("a unit of the network's input has no input gradient to take.")
        unit = np.zeros_like(acts)
        unit[(rows, *(np.full(n, i) for i in neuron))] = 1
        input_grad = run_backward_values(
            nodes, unit, backend, record, (input_name,), start=value, relu_rule=relu_rule
        )[input_name]
    return LayerGradient(acts, grad, np.asarray(flat[rows, target]), input_grad)
