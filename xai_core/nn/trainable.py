"""Training as a method: ``net.fit(X, y, ...)`` for Sequential and Graph networks alike."""

from __future__ import annotations

from xai_core.nn.training import fit as _fit

__all__ = ["Trainable"]


class Trainable:
    """Adds :meth:`fit` to a network; the work is done by :func:`xai_core.nn.training.fit`.

    The loss meets the network's output node: a final ``Softmax`` (or one ``Sigmoid``
    output) is fused with the cross-entropy, so training stops at that node's input;
    regression stops at the output. Every parameter the loss depends on is trained
    (batch norms' ``gamma`` and ``beta`` too; their running statistics stay as they are).
    """

    #: ``net.fit(X, y, ...)`` is :func:`xai_core.nn.training.fit` with ``net`` bound.
    fit = _fit
