"""Optimisers: SGD (with optional momentum) and Adam, updating parameters in place.

Updates run on the host in the parameters' dtype (the master copy of the weights), as
accelerators keep it; the gradients come from the backend.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xai_core.errors import ValidationError

__all__ = ["SGD", "Adam", "OPTIMIZERS"]


class SGD:
    """Stochastic gradient descent: ``v = momentum * v - lr * g; p += v``.

    Parameters
    ----------
    learning_rate : float
    momentum : float, default=0.0
        In [0, 1); 0 is plain SGD (the Playground's).
    """

    def __init__(self, learning_rate: float, momentum: float = 0.0) -> None:
        if not 0 <= momentum < 1:
            raise ValidationError(f"momentum must be in [0, 1); got {momentum!r}.")
        self.learning_rate = float(learning_rate)
        self.momentum = float(momentum)
        self._velocity: list[np.ndarray] | None = None

    def step(self, params: Sequence[np.ndarray], grads: Sequence[np.ndarray]) -> None:
        """Update each array of ``params`` in place from the matching gradient."""
        lr = self.learning_rate
        if self.momentum == 0:
            for p, g in zip(params, grads):
                p -= lr * g
            return
        if self._velocity is None:
            self._velocity = [np.zeros_like(p) for p in params]
        for p, g, v in zip(params, grads, self._velocity):
            v *= self.momentum
            v -= lr * g
            p += v


class Adam:
    """Adam (Kingma and Ba, 2015), with scikit-learn's bias-corrected step size.

    Parameters
    ----------
    learning_rate : float
    beta_1 : float, default=0.9
    beta_2 : float, default=0.999
    epsilon : float, default=1e-8
    """

    def __init__(
        self,
        learning_rate: float,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-8,
    ) -> None:
        self.learning_rate = float(learning_rate)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)
        self.t = 0
        self._m: list[np.ndarray] | None = None
        self._v: list[np.ndarray] | None = None

    def step(self, params: Sequence[np.ndarray], grads: Sequence[np.ndarray]) -> None:
        """Update each array of ``params`` in place from the matching gradient."""
        if self._m is None:
            self._m = [np.zeros_like(p) for p in params]
            self._v = [np.zeros_like(p) for p in params]
        self.t += 1
        b1, b2 = self.beta_1, self.beta_2
        lr = self.learning_rate * float(np.sqrt(1 - b2**self.t)) / (1 - b1**self.t)
        for p, g, m, v in zip(params, grads, self._m, self._v):
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * np.square(g)
            p -= lr * m / (np.sqrt(v) + self.epsilon)


OPTIMIZERS = {"sgd": SGD, "adam": Adam}
