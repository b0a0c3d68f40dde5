"""``from_sklearn``: a fitted scikit-learn MLP becomes a native network with identical outputs."""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core.errors import CapabilityError, ValidationError
from xai_core.nn.activations import ACTIVATIONS, Sigmoid, Softmax
from xai_core.nn.layers import Dense
from xai_core.nn.sequential import DTYPES, Sequential

__all__ = ["from_sklearn"]


def from_sklearn(estimator: Any, *, dtype: Any = None) -> Sequential:
    """Convert a fitted ``MLPClassifier`` or ``MLPRegressor`` into a :class:`Sequential`.

    The network's :meth:`~Sequential.predict` equals the estimator's ``predict_proba``
    (classifiers) or ``predict`` (regressors, as a column per output):

    - multiclass classifier: hidden layers, ``Dense(n_classes)``, ``Softmax``;
    - binary classifier: the logistic output ``p`` becomes a two-column softmax over
      ``[0, z]``, which is exactly ``[1 - p, p]``, the columns of ``predict_proba``;
    - multilabel classifier: ``Dense(n_labels)``, ``Sigmoid``;
    - regressor: ``Dense(n_outputs)``, ``Linear``.

    Hidden activations map as relu -> ReLU, tanh -> Tanh, logistic -> Sigmoid,
    identity -> Linear.

    Parameters
    ----------
    estimator : sklearn.neural_network.MLPClassifier or MLPRegressor
        Fitted.
    dtype : {"float32", "float64"}, optional
        Of the network; by default the estimator's weight dtype, so outputs match to
        rounding when the network runs on its default backend.

    Returns
    -------
    Sequential
        With ``input_shape (n_features_in_,)``, and for classifiers ``classes_`` and
        ``output_names`` from ``estimator.classes_``.

    Raises
    ------
    CapabilityError
        For any other estimator: use ``xai.as_model(estimator)`` to explain it as a black box.
    ValidationError
        If the estimator is not fitted.
    """
    from sklearn.neural_network import MLPClassifier, MLPRegressor

    if not isinstance(estimator, (MLPClassifier, MLPRegressor)):
        raise CapabilityError(
            f"from_sklearn converts MLPClassifier and MLPRegressor; got {type(estimator).__name__}. "
            "Use xai.as_model(estimator) to explain any other estimator as a black box."
        )
    coefs = getattr(estimator, "coefs_", None)
    if coefs is None:
        raise ValidationError(f"model {type(estimator).__name__} is not fitted: call fit first.")
    if dtype is None:
        dtype = coefs[0].dtype if coefs[0].dtype in DTYPES else np.float64
    hidden = ACTIVATIONS.get(estimator.activation)
    if hidden is None:  # pragma: no cover - scikit-learn validates activation itself
        raise CapabilityError(f"unsupported MLP activation {estimator.activation!r}.")

    weights = [np.asarray(w) for w in coefs]
    biases = [np.asarray(b) for b in estimator.intercepts_]
    out_kind = estimator.out_activation_
    is_binary = (
        out_kind == "logistic"
        and weights[-1].shape[1] == 1
        and len(getattr(estimator, "classes_", ())) == 2
    )
    if is_binary:  # softmax([0, z]) = [1 - sigmoid(z), sigmoid(z)]
        weights[-1] = np.concatenate([np.zeros_like(weights[-1]), weights[-1]], axis=1)
        biases[-1] = np.concatenate([np.zeros_like(biases[-1]), biases[-1]])
        output = Softmax()
    elif out_kind == "softmax":
        output = Softmax()
    elif out_kind == "logistic":
        output = Sigmoid()
    elif out_kind == "identity":
        output = ACTIVATIONS["identity"]()
    else:  # e.g. "exp" of MLPRegressor(loss="poisson")
        raise CapabilityError(
            f"from_sklearn has no layer for the output activation {out_kind!r} of this "
            f"{type(estimator).__name__}. Use xai.as_model(estimator) to explain it as a black box."
        )

    layers = []
    for i, w in enumerate(weights):
        layers.append(Dense(w.shape[1]))
        layers.append(hidden() if i < len(weights) - 1 else output)
    classes = getattr(estimator, "classes_", None)
    names = None
    if (
        isinstance(estimator, MLPClassifier)
        and classes is not None
        and len(classes) == layers[-2].units
    ):
        names = [str(c) for c in classes]
    net = Sequential(layers, input_shape=(weights[0].shape[0],), output_names=names, dtype=dtype)
    dense = [layer for layer in net.layers if isinstance(layer, Dense)]
    for layer, w, b in zip(dense, weights, biases):
        layer.weight = w.astype(net.dtype, copy=True)
        layer.bias = b.astype(net.dtype, copy=True)
    if isinstance(estimator, MLPClassifier) and classes is not None:
        net.classes_ = np.asarray(classes)
    return net
