"""Convenience builders: the TensorFlow Playground's MLP, and a small CNN for 28x28 images."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xai_core.errors import ShapeError, UnknownNameError, ValidationError
from xai_core.images import image_layout
from xai_core.nn.activations import Linear, ReLU, Sigmoid, Softmax
from xai_core.nn.layers import Conv2D, Dense, Flatten, MaxPool2D, Reshape
from xai_core.nn.sequential import Sequential

__all__ = ["cnn", "mlp"]

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


def cnn(
    image_shape: Sequence[int] = (1, 28, 28),
    n_outputs: int = 10,
    *,
    channels: Sequence[int] = (8, 16),
    hidden: int | None = None,
    output_names: Sequence[str] | None = None,
    seed: int = 0,
    dtype: Any = "float32",
) -> Sequential:
    """A small CNN over flattened images, as MNIST and Fashion-MNIST arrive.

    Parameters
    ----------
    image_shape : (channels, height, width) or (height, width), default=(1, 28, 28)
        Shape of one image (:mod:`xai_core.images`); the network reads rows of
        ``prod(image_shape)`` pixels in this order, channels first. Rows of channels-last
        images convert with ``xai_core.images.image_layout((H, W, C)).to_chw(X)``.
    n_outputs : int, default=10
        Classes.
    channels : sequence of int, default=(8, 16)
        Output channels of each 3x3 convolution (padding 1), each followed by ReLU and a
        2x2 max pool.
    hidden : int, optional
        Width of a dense ReLU layer named ``"embedding"`` before the output (the layer to
        project); none by default.
    output_names : sequence of str, optional
    seed : int, default=0
    dtype : {"float32", "float64"}, default="float32"

    Returns
    -------
    Sequential
        ``Reshape, [Conv2D, ReLU, MaxPool2D] * len(channels), Flatten, [Dense(hidden,
        name="embedding"), ReLU], Dense(n_outputs), Softmax``.

    Examples
    --------
    >>> net = xai.nn.cnn(hidden=32)
    >>> net.fit(train.X, train.y, optimizer="adam", learning_rate=2e-3, batch_size=64, epochs=3)
    """
    layout = image_layout(image_shape)
    if layout.order == "hwc":
        raise ShapeError(
            f"image_shape must be (channels, height, width) or (height, width): the network "
            f"reads channels first; got {layout.shape}, channels last. Pass "
            f"image_shape={(layout.channels, layout.height, layout.width)} and rows converted "
            f"with xai_core.images.image_layout({layout.shape}).to_chw(X)."
        )
    shape = (layout.channels, layout.height, layout.width)
    layers: list[Any] = [Reshape(shape)]
    for c in channels:
        layers += [Conv2D(int(c), 3, padding=1), ReLU(), MaxPool2D(2)]
    layers.append(Flatten())
    if hidden is not None:
        layers += [Dense(int(hidden), name="embedding"), ReLU()]
    layers += [Dense(n_outputs), Softmax()]
    n_pixels = shape[0] * shape[1] * shape[2]
    return Sequential(
        layers, input_shape=(n_pixels,), output_names=output_names, seed=seed, dtype=dtype
    )
