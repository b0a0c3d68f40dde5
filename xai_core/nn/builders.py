"""Convenience builders: the TensorFlow Playground's network from hidden-layer sizes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xai_core.errors import UnknownNameError, ValidationError
from xai_core.nn.activations import Linear, Sigmoid, Softmax
from xai_core.nn.layers import Dense
from xai_core.nn.sequential import Sequential

__all__ = ["mlp"]

#: Hidden activations the Playground offers.
HIDDEN_ACTIVATIONS = ("tanh", "sigmoid", "relu", "linear")
OUTPUTS = {"softmax": Softmax, "sigmoid": Sigmoid, "linear": Linear}


def mlp(
    n_inputs: int,
    hidden: Sequence[int] = (4, 2),
    n_outputs: int = 2,
    *,
    activation: str = "tanh",
    output: str = "softmax",
    output_names: Sequence[str] | None = None,
    seed: int = 0,
    dtype: Any = "float32",
) -> Sequential:
    """A multilayer perceptron, built; the defaults are the Playground's network.

    Parameters
    ----------
    n_inputs : int
        Features per sample.
    hidden : sequence of int, default=(4, 2)
        Neurons per hidden layer (the Playground's default is two layers, 4 and 2). Empty
        for no hidden layer.
    n_outputs : int, default=2
        Output width: classes for ``"softmax"``, targets for ``"linear"``.
    activation : {"tanh", "sigmoid", "relu", "linear"}, default="tanh"
        Activation of every hidden layer (case-insensitive: "ReLU" works).
    output : {"softmax", "sigmoid", "linear"}, default="softmax"
        Output activation: softmax for classification, linear for regression.
    output_names : sequence of str, optional
    seed : int, default=0
        Seed of the weight initialisation.
    dtype : {"float32", "float64"}, default="float32"

    Returns
    -------
    Sequential
        ``Dense(h1), Act, Dense(h2), Act, ..., Dense(n_outputs), Output``.

    Examples
    --------
    >>> net = xai.nn.mlp(2, hidden=(4, 2), n_outputs=2, activation="tanh")
    >>> net.fit(X, y, learning_rate=0.03, epochs=200, progress=False)
    """
    from xai_core.nn.activations import ACTIVATIONS

    act = activation.lower() if isinstance(activation, str) else activation
    if act not in HIDDEN_ACTIVATIONS:
        raise UnknownNameError("activation", activation, HIDDEN_ACTIVATIONS)
    out = output.lower() if isinstance(output, str) else output
    if out not in OUTPUTS:
        raise UnknownNameError("output", output, list(OUTPUTS))
    try:
        sizes = [int(h) for h in hidden]
    except (TypeError, ValueError):
        raise ValidationError(
            f"hidden must be a sequence of ints like (4, 2); got {hidden!r}."
        ) from None
    if any(h < 1 for h in sizes):
        raise ValidationError(f"hidden layer sizes must be >= 1; got {tuple(hidden)}.")
    layers = []
    for h in sizes:
        layers += [Dense(h), ACTIVATIONS[act]()]
    layers += [Dense(n_outputs), OUTPUTS[out]()]
    return Sequential(
        layers, input_shape=(n_inputs,), output_names=output_names, seed=seed, dtype=dtype
    )
