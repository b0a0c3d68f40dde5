"""Mini-batch training of a native network; the implementation of ``fit``."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from xai_core.errors import CapabilityError, ShapeError, ValidationError, XaiWarning
from xai_core.nn.activations import Sigmoid, Softmax
from xai_core.nn.losses import half_mean_squared_error, sigmoid_cross_entropy, softmax_cross_entropy
from xai_core.nn.optimizers import OPTIMIZERS
from xai_core.validation import check_array, check_choice, check_positive_int

__all__ = ["fit"]

_EVAL_BATCH = 4096


def _check_number(
    value: Any, name: str, low: float, high: float, *, open_low: bool = False
) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValidationError(f"{name} must be a number; got {value!r}.")
    value = float(value)
    ok = (value > low if open_low else value >= low) and value <= high
    if not ok or not np.isfinite(value):
        bracket = "(" if open_low else "["
        raise ValidationError(f"{name} must be in {bracket}{low:g}, {high:g}]; got {value!r}.")
    return value


def _check_regularization(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and value.lower() in ("none", "l1", "l2"):
        return None if value.lower() == "none" else value.upper()
    raise ValidationError(f"regularization must be None, 'L1' or 'L2'; got {value!r}.")


class _Head:
    """How the network's output meets the loss: the node the passes stop at, and the loss."""

    def __init__(self, net: Any, problem: str) -> None:
        out = net.node(net.output)
        last = out.layer
        before = out.inputs[0] if len(out.inputs) == 1 else None
        self.classification = problem == "classification"
        if not self.classification:
            self.stop, self.loss, self.n_classes = net.output, half_mean_squared_error, None
            return
        if len(net.output_shape) != 1:
            raise ShapeError(
                f"classification needs a flat output per sample; the network's is {net.output_shape}."
            )
        if before == net.input_name:
            raise ValidationError("classification needs a layer with parameters before the output.")
        if isinstance(last, Softmax) and net.n_outputs >= 2:
            self.stop, self.loss, self.n_classes = before, softmax_cross_entropy, net.n_outputs
        elif isinstance(last, Sigmoid) and net.n_outputs == 1:
            self.stop, self.loss, self.n_classes = before, sigmoid_cross_entropy, 2
        else:
            raise ValidationError(
                "problem='classification' needs a network ending in Softmax with >= 2 outputs "
                f"(or Sigmoid with one); this one ends in {type(last).__name__} with "
                f"{net.n_outputs} output(s). Add Softmax() or use problem='regression'."
            )

    def correct(self, proba: np.ndarray, t: np.ndarray) -> int:
        if self.loss is softmax_cross_entropy:
            return int(np.count_nonzero(proba.argmax(axis=1) == t))
        return int(np.count_nonzero((proba[:, 0] > 0.5) == (t > 0.5)))


def _encode_labels(y: Any, n_classes: int, classes: np.ndarray | None, name: str = "y"):
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ShapeError(
            f"{name} must have shape (n_samples,) of class labels; got shape {y.shape}."
        )
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValidationError(f"{name} contains NaN or infinite labels.")
    if y.dtype.kind not in "biufUSO":
        raise ValidationError(
            f"{name} must hold class labels (ints or strings); got dtype {y.dtype}."
        )
    if classes is None:
        found = np.unique(y)
        if y.dtype.kind in "iu" and found.min() >= 0 and found.max() < n_classes:
            classes = np.arange(n_classes)
        elif len(found) == n_classes:
            classes = found
        else:
            raise ValidationError(
                f"{name} has {len(found)} classes {found.tolist()[:10]} but the network has "
                f"{n_classes} class outputs."
            )
    index = np.searchsorted(classes, y)
    index = np.clip(index, 0, len(classes) - 1)
    unknown = classes[index] != y
    if np.any(unknown):
        raise ValidationError(
            f"{name} contains labels {np.unique(y[unknown]).tolist()[:10]} not among the classes "
            f"{classes.tolist()[:10]}."
        )
    return index.astype(np.int64), classes


def _regression_targets(y: Any, n: int, n_outputs: int, dtype: Any, name: str = "y") -> np.ndarray:
    arr = np.asarray(y) if not hasattr(y, "to_numpy") else y.to_numpy()
    if arr.ndim == 1:
        arr = arr[:, None]
    t = check_array(arr, name, feature_shape=(n_outputs,), dtype=dtype)
    if len(t) != n:
        raise ShapeError(f"{name} must have {n} rows like X; got {len(t)}.")
    return t


def _evaluate(net, X, t, head, backend) -> tuple[float, float | None]:
    total, correct = 0.0, 0
    for start in range(0, len(X), _EVAL_BATCH):
        s = slice(start, start + _EVAL_BATCH)
        out = net.forward(X[s], backend, stop=head.stop).reshape(len(X[s]), -1)
        loss, _, proba = head.loss(out, t[s], backend)
        total += loss * len(out)
        if head.classification:
            correct += head.correct(proba, t[s])
    acc = correct / len(X) if head.classification else None
    return total / len(X), acc


def fit(
    net: Any,
    X: Any,
    y: Any,
    *,
    problem: str = "classification",
    learning_rate: float = 0.03,
    regularization: str | None = None,
    regularization_rate: float = 0.0,
    batch_size: int = 10,
    epochs: int = 100,
    optimizer: str = "sgd",
    momentum: float = 0.0,
    validation_split: float | None = None,
    validation_data: tuple[Any, Any] | None = None,
    early_stopping: bool = False,
    patience: int = 10,
    seed: int | None = 0,
    backend: Any = None,
    progress: bool | None = None,
    callbacks: Any = None,
) -> Any:
    """Train with mini-batch gradient descent, using the TensorFlow Playground's knobs.

    Training continues from the current weights (build a new network, or call
    :meth:`build` again, to start over). The defaults are the Playground's.

    Parameters
    ----------
    X : array-like of shape (n_samples, *input_shape)
    y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        Class labels (classification) or targets (regression).
    problem : {"classification", "regression"}, default="classification"
        Classification needs a network ending in Softmax (or one Sigmoid output) and
        minimises cross-entropy, fused with the softmax for stability; regression
        minimises half the mean squared error of the outputs.
    learning_rate : float, default=0.03
        Step size, in (0, 10] (the Playground offers 1e-5 to 10).
    regularization : {None, "L1", "L2"}, default=None
        Penalty on the weights (not the biases): L1 ``sum |w|``, L2 ``sum w**2 / 2``.
        As in the Playground, an L1 step that would flip a weight's sign sets it to 0.
    regularization_rate : float, default=0.0
        Weight of the penalty, in [0, 10].
    batch_size : int, default=10
    epochs : int, default=100
        Passes over the training data.
    optimizer : {"sgd", "adam"}, default="sgd"
    momentum : float, default=0.0
        Momentum of SGD, in [0, 1).
    validation_split : float, optional
        Fraction of rows held out (at random, from ``seed``) to report ``val_loss``;
        0.1 by default when ``early_stopping`` and no ``validation_data``, else 0.
    validation_data : (X_val, y_val), optional
        Held-out data; overrides ``validation_split``.
    early_stopping : bool, default=False
        Stop when ``val_loss`` has not improved for ``patience`` epochs and restore
        the weights of the best epoch.
    patience : int, default=10
    seed : int or None, default=0
        Seed of the shuffling and the validation split; ``None`` draws one.
    backend : str or Backend, optional
        Where the passes run (default ``CPUBackend(dtype=self.dtype)``).
    progress : bool or None, default=None
        A progress bar over epochs: ``None`` for long training only (10 epochs or more).
    callbacks : callable or sequence of callables, optional
        Each is called as ``cb(net, record)`` after every epoch, ``record`` the epoch's
        row of :attr:`history` as a dict (epoch, loss, ...); one returning True stops
        training after that epoch (a live view, such as ``xai.playground_view``).

    Returns
    -------
    Sequential or Graph
        ``self``, with :attr:`history` (a DataFrame: epoch, loss, accuracy, val_loss,
        val_accuracy) and, for classification, :attr:`classes_`.
    """
    import pandas as pd

    # hyper-parameters first, before any work
    problem = check_choice(problem, "problem", ("classification", "regression"))
    lr = _check_number(learning_rate, "learning_rate", 0.0, 10.0, open_low=True)
    regularization = _check_regularization(regularization)
    rate = _check_number(regularization_rate, "regularization_rate", 0.0, 10.0)
    batch_size = check_positive_int(batch_size, "batch_size")
    epochs = check_positive_int(epochs, "epochs")
    patience = check_positive_int(patience, "patience")
    optimizer = check_choice(
        optimizer.lower() if isinstance(optimizer, str) else optimizer, "optimizer", OPTIMIZERS
    )
    from xai_core.attribution.seeds import resolve_seed
    from xai_core.progress import progress_bar, show_progress

    seed = resolve_seed(seed)
    show_progress(progress, epochs)  # checks progress= before any work
    if validation_split is None:
        validation_split = 0.1 if early_stopping and validation_data is None else 0.0
    split = _check_number(validation_split, "validation_split", 0.0, 0.9)
    if early_stopping and split == 0 and validation_data is None:
        raise ValidationError("early_stopping needs validation_split > 0 or validation_data.")
    callbacks = _check_callbacks(callbacks)
    backend = net._backend(backend)
    if not backend.supports_gradients:
        raise CapabilityError(f"the {backend.name!r} backend cannot train: it has no gradients.")
    opt = OPTIMIZERS[optimizer](lr, momentum) if optimizer == "sgd" else OPTIMIZERS[optimizer](lr)

    # data
    dtype = backend.dtype if backend.dtype in (np.float32, np.float64) else np.float32
    X = check_array(X, "X", feature_shape=net.input_shape, dtype=dtype)
    if not net.built:
        net.build(X.shape[1:])
    head = _Head(net, problem)
    if np.ndim(y) == 0 or len(y) != len(X):
        raise ShapeError(f"y must have {len(X)} rows like X; got shape {np.shape(y)}.")
    if head.classification:
        t, classes = _encode_labels(y, head.n_classes, net.classes_)
        if head.loss is sigmoid_cross_entropy:
            t = t.astype(dtype)
    else:
        t = _regression_targets(y, len(X), net.n_outputs, dtype)
    rng = np.random.default_rng(int(seed))
    if validation_data is not None:
        if not isinstance(validation_data, (tuple, list)) or len(validation_data) != 2:
            raise ValidationError("validation_data must be a tuple (X_val, y_val).")
        Xv = check_array(
            validation_data[0], "validation_data[0]", feature_shape=net.input_shape, dtype=dtype
        )
        if head.classification:
            tv, _ = _encode_labels(
                validation_data[1], head.n_classes, classes, "validation_data[1]"
            )
            tv = tv.astype(t.dtype)
        else:
            tv = _regression_targets(
                validation_data[1], len(Xv), net.n_outputs, dtype, "validation_data[1]"
            )
    elif split > 0:
        n_val = int(round(split * len(X)))
        if n_val < 1 or n_val >= len(X):
            raise ValidationError(
                f"validation_split={split} of {len(X)} rows leaves no validation or no training rows."
            )
        order = rng.permutation(len(X))
        Xv, tv = X[order[:n_val]], t[order[:n_val]]
        X, t = X[order[n_val:]], t[order[n_val:]]
    else:
        Xv = tv = None
    if head.classification:
        net.classes_ = classes
        if net.output_names is None and head.n_classes == net.n_outputs:
            net.output_names = tuple(str(c) for c in classes)

    # training
    trained = [net.nodes[i].layer for i in net._order(head.stop)]
    slots = [(layer, key) for layer in trained for key in layer.params]
    params = [layer.params[key] for layer, key in slots]
    regularized = [key in layer.regularized for layer, key in slots]
    n = len(X)
    records, best, best_weights, best_epoch, waited = [], np.inf, None, 0, 0
    bar = progress_bar(epochs, progress=progress, desc="fit", unit="epoch", leave=True)
    try:
        for epoch in range(1, epochs + 1):
            order = rng.permutation(n)
            total, correct = 0.0, 0
            for start in range(0, n, batch_size):
                idx = order[start : start + batch_size]
                backend.begin_batch(X[idx])  # data-parallel backends shard the batch
                out = net.forward(X[idx], backend, cache=True, stop=head.stop).reshape(len(idx), -1)
                loss, grad, proba = head.loss(out, t[idx], backend)
                total += loss * len(idx)
                if head.classification:
                    correct += head.correct(proba, t[idx])
                net.backward(
                    grad.reshape((len(idx), *net.node(head.stop).layer.output_shape)),
                    backend,
                    start=head.stop,
                    input_grad=False,
                )
                grads = backend.all_reduce([layer.grads[key] for layer, key in slots])
                if regularization is not None and rate > 0:
                    grads = _add_penalty(grads, params, regularized, regularization, rate, backend)
                    before = [p.copy() if r else None for p, r in zip(params, regularized)]
                opt.step(params, grads)
                if regularization == "L1" and rate > 0:
                    for p, old in zip(params, before):
                        if old is not None:
                            p[(old * p) < 0] = 0
            record = {"epoch": epoch, "loss": total / n}
            if head.classification:
                record["accuracy"] = correct / n
            if Xv is not None:
                val_loss, val_acc = _evaluate(net, Xv, tv, head, backend)
                record["val_loss"] = val_loss
                if head.classification:
                    record["val_accuracy"] = val_acc
            records.append(record)
            bar.set_postfix({k: round(v, 4) for k, v in record.items() if k != "epoch"})
            bar.update(1)
            if _call_back(callbacks, net, record):
                break
            if not np.isfinite(record["loss"]):
                warnings.warn(
                    f"training diverged: the loss is {record['loss']} at epoch {epoch}; "
                    f"try a learning_rate below {lr:g}.",
                    XaiWarning,
                    stacklevel=3,
                )
                break
            if early_stopping:
                if record["val_loss"] < best:
                    best, best_epoch, waited = record["val_loss"], epoch, 0
                    best_weights = net.get_weights()
                else:
                    waited += 1
                    if waited >= patience:
                        break
    finally:
        bar.close()
        net.clear_cache()
    if early_stopping and best_weights is not None:
        net.set_weights(best_weights)
    history = pd.DataFrame.from_records(records)
    history.attrs["best_epoch"] = best_epoch if early_stopping else len(records)
    history.attrs["stopped_early"] = len(records) < epochs
    net.history = history
    return net


# -- the epoch callback hook ------------------------------------------------------------------
def _check_callbacks(callbacks: Any) -> tuple:
    """``callbacks`` as a tuple of callables (one callable, a sequence of them, or None)."""
    if callbacks is None:
        return ()
    items = (callbacks,) if callable(callbacks) else tuple(callbacks)
    for cb in items:
        if not callable(cb):
            raise ValidationError(
                f"callbacks must be callables cb(net, record); got {type(cb).__name__}."
            )
    return items


def _call_back(callbacks: tuple, net: Any, record: dict) -> bool:
    """Call each ``cb(net, record)`` after an epoch; True when one asks to stop (returns True)."""
    stop = False
    for cb in callbacks:
        stop = bool(cb(net, dict(record))) or stop
    return stop


def _add_penalty(grads, params, regularized, kind, rate, backend):
    if kind == "L2":

        def penalty(g, w):
            return g + rate * w
    else:

        def penalty(g, w):
            return g + rate * np.sign(w)

    return [
        backend.elementwise(penalty, g, w, ops=2) if r else g
        for g, w, r in zip(grads, params, regularized)
    ]
