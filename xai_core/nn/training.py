"""Mini-batch training of a native network; the implementation of ``fit``."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core.errors import CapabilityError, ShapeError, ValidationError, XaiWarning
from xai_core.nn.activations import Sigmoid, Softmax
from xai_core.nn.losses import half_mean_squared_error, sigmoid_cross_entropy, softmax_cross_entropy
from xai_core.nn.optimizers import OPTIMIZERS
from xai_core.validation import check_array, check_choice, check_number, check_positive_int

__all__ = ["fit"]

_EVAL_BATCH = 4096


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
    from xai_core.progress import count, progress_bar

    knobs = _check_knobs(
        problem=problem,
        learning_rate=learning_rate,
        regularization=regularization,
        regularization_rate=regularization_rate,
        batch_size=batch_size,
        epochs=epochs,
        optimizer=optimizer,
        momentum=momentum,
        validation_split=validation_split,
        has_validation_data=validation_data is not None,
        early_stopping=early_stopping,
        patience=patience,
        seed=seed,
        progress=progress,
        callbacks=callbacks,
    )
    backend = net._backend(backend)
    if not backend.supports_gradients:
        raise CapabilityError(f"the {backend.name!r} backend cannot train: it has no gradients.")
    make = OPTIMIZERS[knobs.optimizer]
    opt = (
        make(knobs.learning_rate, momentum)
        if knobs.optimizer == "sgd"
        else make(knobs.learning_rate)
    )
    rng = np.random.default_rng(int(knobs.seed))
    head, data = _training_data(net, X, y, validation_data, knobs, backend, rng)

    stopper = _EarlyStopping(knobs.patience) if early_stopping else None
    bar = progress_bar(
        knobs.epochs,
        progress=progress,
        desc=f"fit {count(knobs.epochs, 'epoch')}",
        unit="epoch",
        leave=True,
    )
    try:
        records = _run_epochs(net, head, data, backend, opt, knobs, rng, bar, stopper)
    finally:
        bar.close()
        net.clear_cache()
    if stopper is not None and stopper.best_weights is not None:
        net.set_weights(stopper.best_weights)
    net.history = _history(records, knobs.epochs, stopper)
    return net


# -- the steps of fit -------------------------------------------------------------------------
@dataclass(frozen=True)
class _Knobs:
    """The hyper-parameters of one :func:`fit`, checked."""

    problem: str
    learning_rate: float
    regularization: str | None
    rate: float
    batch_size: int
    epochs: int
    patience: int
    optimizer: str
    split: float
    seed: int
    callbacks: tuple

    @property
    def penalised(self) -> bool:
        """Whether the weights carry an L1 or L2 penalty."""
        return self.regularization is not None and self.rate > 0


def _check_knobs(
    *,
    problem: Any,
    learning_rate: Any,
    regularization: Any,
    regularization_rate: Any,
    batch_size: Any,
    epochs: Any,
    optimizer: Any,
    momentum: Any,
    validation_split: Any,
    has_validation_data: bool,
    early_stopping: Any,
    patience: Any,
    seed: Any,
    progress: Any,
    callbacks: Any,
) -> _Knobs:
    """Check every hyper-parameter of :func:`fit` before any work, in the order of its signature.

    ``momentum`` is checked by the optimiser, which is built next.
    """
    from xai_core.attribution.seeds import resolve_seed
    from xai_core.progress import show_progress

    problem = check_choice(problem, "problem", ("classification", "regression"))
    lr = check_number(learning_rate, "learning_rate", low=0.0, high=10.0, open_low=True)
    regularization = _check_regularization(regularization)
    rate = check_number(regularization_rate, "regularization_rate", low=0.0, high=10.0)
    batch_size = check_positive_int(batch_size, "batch_size")
    epochs = check_positive_int(epochs, "epochs")
    patience = check_positive_int(patience, "patience")
    optimizer = check_choice(
        optimizer.lower() if isinstance(optimizer, str) else optimizer, "optimizer", OPTIMIZERS
    )
    seed = resolve_seed(seed)
    show_progress(progress, epochs)  # checks progress= before any work
    if validation_split is None:
        validation_split = 0.1 if early_stopping and not has_validation_data else 0.0
    split = check_number(validation_split, "validation_split", low=0.0, high=0.9)
    if early_stopping and split == 0 and not has_validation_data:
        raise ValidationError("early_stopping needs validation_split > 0 or validation_data.")
    return _Knobs(
        problem=problem,
        learning_rate=lr,
        regularization=regularization,
        rate=rate,
        batch_size=batch_size,
        epochs=epochs,
        patience=patience,
        optimizer=optimizer,
        split=split,
        seed=seed,
        callbacks=_check_callbacks(callbacks),
    )


@dataclass
class _Data:
    """Training rows ``X`` with the loss's targets ``t``, and the held-out ones (or None)."""

    X: np.ndarray
    t: np.ndarray
    X_val: np.ndarray | None
    t_val: np.ndarray | None


def _training_data(
    net: Any, X: Any, y: Any, validation_data: Any, knobs: _Knobs, backend: Any, rng: Any
) -> tuple[_Head, _Data]:
    """Check the data, build the network if needed, encode the targets and hold rows out.

    For classification, ``net.classes_`` (and ``output_names`` when unset) are the classes.
    """
    dtype = backend.dtype if backend.dtype in (np.float32, np.float64) else np.float32
    X = check_array(X, "X", feature_shape=net.input_shape, dtype=dtype)
    if not net.built:
        net.build(X.shape[1:])
    head = _Head(net, knobs.problem)
    if np.ndim(y) == 0 or len(y) != len(X):
        raise ShapeError(f"y must have {len(X)} rows like X; got shape {np.shape(y)}.")
    classes = None
    if head.classification:
        t, classes = _encode_labels(y, head.n_classes, net.classes_)
        if head.loss is sigmoid_cross_entropy:
            t = t.astype(dtype)
    else:
        t = _regression_targets(y, len(X), net.n_outputs, dtype)
    data = _held_out(net, head, X, t, classes, validation_data, knobs.split, dtype, rng)
    if head.classification:
        net.classes_ = classes
        if net.output_names is None and head.n_classes == net.n_outputs:
            net.output_names = tuple(str(c) for c in classes)
    return head, data


def _held_out(
    net: Any,
    head: _Head,
    X: np.ndarray,
    t: np.ndarray,
    classes: np.ndarray | None,
    validation_data: Any,
    split: float,
    dtype: Any,
    rng: np.random.Generator,
) -> _Data:
    """The rows of ``validation_data``, or a random ``split`` of ``X``, or none, held out."""
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
        return _Data(X, t, Xv, tv)
    if split > 0:
        n_val = int(round(split * len(X)))
        if n_val < 1 or n_val >= len(X):
            raise ValidationError(
                f"validation_split={split} of {len(X)} rows leaves no validation or no training rows."
            )
        order = rng.permutation(len(X))
        return _Data(X[order[n_val:]], t[order[n_val:]], X[order[:n_val]], t[order[:n_val]])
    return _Data(X, t, None, None)


class _Parameters:
    """The parameters the loss depends on, in one order: arrays, whether each is regularised."""

    def __init__(self, net: Any, head: _Head) -> None:
        trained = [net.nodes[i].layer for i in net._order(head.stop)]
        self.slots = [(layer, key) for layer in trained for key in layer.params]
        self.arrays = [layer.params[key] for layer, key in self.slots]
        self.regularized = [key in layer.regularized for layer, key in self.slots]

    def grads(self) -> list[np.ndarray]:
        """The gradients of the last backward pass, in the same order."""
        return [layer.grads[key] for layer, key in self.slots]


def _step(net, head, backend, opt, params: _Parameters, knobs: _Knobs, x, t) -> tuple[Any, int]:
    """One mini-batch: forward, loss, backward, penalty, update; its summed loss and hits."""
    backend.begin_batch(x)  # data-parallel backends shard the batch
    out = net.forward(x, backend, cache=True, stop=head.stop).reshape(len(x), -1)
    loss, grad, proba = head.loss(out, t, backend)
    correct = head.correct(proba, t) if head.classification else 0
    net.backward(
        grad.reshape((len(x), *net.node(head.stop).layer.output_shape)),
        backend,
        start=head.stop,
        input_grad=False,
    )
    grads = backend.all_reduce(params.grads())
    arrays = params.arrays
    if knobs.penalised:
        grads = _add_penalty(
            grads, arrays, params.regularized, knobs.regularization, knobs.rate, backend
        )
        before = [p.copy() if r else None for p, r in zip(arrays, params.regularized)]
    opt.step(arrays, grads)
    if knobs.regularization == "L1" and knobs.rate > 0:  # a step across zero stops at zero
        for p, old in zip(arrays, before):
            if old is not None:
                p[(old * p) < 0] = 0
    return loss * len(x), correct


def _epoch(net, head, data: _Data, backend, opt, params, knobs: _Knobs, rng, epoch: int) -> dict:
    """One pass over the training rows in a random order; the epoch's row of the history."""
    n = len(data.X)
    order = rng.permutation(n)
    total, correct = 0.0, 0
    for start in range(0, n, knobs.batch_size):
        idx = order[start : start + knobs.batch_size]
        loss, hits = _step(net, head, backend, opt, params, knobs, data.X[idx], data.t[idx])
        total += loss
        correct += hits
    record = {"epoch": epoch, "loss": total / n}
    if head.classification:
        record["accuracy"] = correct / n
    if data.X_val is not None:
        val_loss, val_acc = _evaluate(net, data.X_val, data.t_val, head, backend)
        record["val_loss"] = val_loss
        if head.classification:
            record["val_accuracy"] = val_acc
    return record


class _EarlyStopping:
    """Keeps the weights of the best epoch by ``val_loss``; stops after ``patience`` worse ones."""

    def __init__(self, patience: int) -> None:
        self.patience = patience
        self.best, self.best_weights, self.best_epoch, self.waited = np.inf, None, 0, 0

    def stop(self, net: Any, record: dict) -> bool:
        """Record the epoch; True when training should stop."""
        if record["val_loss"] < self.best:
            self.best, self.best_epoch, self.waited = record["val_loss"], record["epoch"], 0
            self.best_weights = net.get_weights()
            return False
        self.waited += 1
        return self.waited >= self.patience


def _run_epochs(net, head, data, backend, opt, knobs: _Knobs, rng, bar, stopper) -> list[dict]:
    """Epoch after epoch until the last, a callback's stop, divergence or early stopping."""
    params = _Parameters(net, head)
    records = []
    for epoch in range(1, knobs.epochs + 1):
        record = _epoch(net, head, data, backend, opt, params, knobs, rng, epoch)
        records.append(record)
        bar.set_postfix({k: round(v, 4) for k, v in record.items() if k != "epoch"})
        bar.update(1)
        if _call_back(knobs.callbacks, net, record):
            break
        if not np.isfinite(record["loss"]):
            warnings.warn(
                f"training diverged: the loss is {record['loss']} at epoch {epoch}; "
                f"try a learning_rate below {knobs.learning_rate:g}.",
                XaiWarning,
                stacklevel=4,  # the frame stacklevel=3 names from fit itself
            )
            break
        if stopper is not None and stopper.stop(net, record):
            break
    return records


def _history(records: list[dict], epochs: int, stopper: _EarlyStopping | None) -> Any:
    """The DataFrame of :attr:`history`, with ``best_epoch`` and ``stopped_early`` in its attrs."""
    import pandas as pd

    history = pd.DataFrame.from_records(records)
    history.attrs["best_epoch"] = stopper.best_epoch if stopper is not None else len(records)
    history.attrs["stopped_early"] = len(records) < epochs
    return history


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
