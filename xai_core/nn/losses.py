"""Training losses, each returning the mean loss and its gradient, computed on a backend.

Every function takes the network's pre-activation output (logits) or output, the targets
and a backend, and returns ``(loss, grad, output)``: ``loss`` is the mean over samples (a
Python float), ``grad`` is d loss / d input, of the input's shape, and ``output`` is what
the network predicts from its input (probabilities for the cross-entropies).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

__all__ = [
    "LossResult",
    "softmax_cross_entropy",
    "sigmoid_cross_entropy",
    "half_mean_squared_error",
]

#: ``(loss, grad, output)``: the mean loss, d loss / d input and what the network predicts.
LossResult = tuple[float, np.ndarray, np.ndarray]


def _scaled_difference(p, t, scale):
    return (p - t) * scale


def softmax_cross_entropy(logits: np.ndarray, y: np.ndarray, backend: Any) -> LossResult:
    """Cross-entropy of softmax(logits) against class indices, fused for stability.

    Parameters
    ----------
    logits : ndarray of shape (n_samples, n_classes)
    y : ndarray of int of shape (n_samples,)
        Class index per row.
    backend : Backend

    Returns
    -------
    loss, grad, proba : float, ndarray, ndarray
        ``mean(logsumexp(logits) - logits[i, y_i])``, its gradient
        ``(softmax(logits) - onehot(y)) / n_samples`` and ``softmax(logits)``.
    """
    n = logits.shape[0]
    m = backend.reduce(np.max, logits, axis=1)
    shifted = backend.elementwise(lambda z, m: z - m[:, None], logits, m)
    e = backend.elementwise(np.exp, shifted, ops=4)
    s = backend.reduce(np.sum, e, axis=1)
    log_s = backend.elementwise(np.log, s, ops=4)
    rows = np.arange(n)
    loss = float(np.mean(log_s.astype(np.float64) - shifted[rows, y]))
    proba = backend.elementwise(lambda e, s: e / s[:, None], e, s)
    onehot = np.zeros_like(proba)
    onehot[rows, y] = 1
    grad = backend.elementwise(_scaled_difference, proba, onehot, 1.0 / n, ops=2)
    return loss, grad, proba


def sigmoid_cross_entropy(logits: np.ndarray, y: np.ndarray, backend: Any) -> LossResult:
    """Binary cross-entropy of sigmoid(logits) against 0/1 labels, fused for stability.

    Parameters
    ----------
    logits : ndarray of shape (n_samples, 1)
    y : ndarray of shape (n_samples,)
        0 or 1 per row.
    backend : Backend

    Returns
    -------
    loss, grad, proba : float, ndarray, ndarray
        ``mean(log(1 + exp(z)) - y * z)``, its gradient ``(sigmoid(z) - y) / n_samples``
        and ``sigmoid(z)``.
    """
    n = logits.shape[0]
    t = y.reshape(n, 1)
    per_row = backend.elementwise(lambda z, t: np.logaddexp(0, z) - t * z, logits, t, ops=6)
    loss = float(np.mean(per_row, dtype=np.float64))
    proba = backend.elementwise(expit, logits, ops=4)
    grad = backend.elementwise(_scaled_difference, proba, t, 1.0 / n, ops=2)
    return loss, grad, proba


def half_mean_squared_error(pred: np.ndarray, target: np.ndarray, backend: Any) -> LossResult:
    """Half the mean squared error over all outputs (the Playground's and scikit-learn's loss).

    Parameters
    ----------
    pred, target : ndarray of shape (n_samples, n_outputs)
    backend : Backend

    Returns
    -------
    loss, grad, pred : float, ndarray, ndarray
        ``mean((pred - target) ** 2) / 2``, its gradient ``(pred - target) / pred.size`` and
        ``pred`` itself.
    """
    diff = backend.elementwise(np.subtract, pred, target)
    loss = 0.5 * float(np.mean(np.square(diff, dtype=np.float64)))
    grad = backend.elementwise(lambda d: d * (1.0 / diff.size), diff)
    return loss, grad, pred
