"""Training as a method: ``net.fit(X, y, ...)`` for Sequential and Graph networks alike."""

from __future__ import annotations

from typing import Any

__all__ = ["Trainable"]


class Trainable:
    """Adds :meth:`fit` to a network; the work is done by :func:`xai_core.nn.training.fit`.

    The loss meets the network's output node: a final ``Softmax`` (or one ``Sigmoid``
    output) is fused with the cross-entropy, so training stops at that node's input;
    regression stops at the output. Every parameter the loss depends on is trained
    (batch norms' ``gamma`` and ``beta`` too; their running statistics stay as they are).
    """

    def fit(
        self,
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
        from xai_core.nn.training import fit

        return fit(
            self,
            X,
            y,
            problem=problem,
            learning_rate=learning_rate,
            regularization=regularization,
            regularization_rate=regularization_rate,
            batch_size=batch_size,
            epochs=epochs,
            optimizer=optimizer,
            momentum=momentum,
            validation_split=validation_split,
            validation_data=validation_data,
            early_stopping=early_stopping,
            patience=patience,
            seed=seed,
            backend=backend,
            progress=progress,
            callbacks=callbacks,
        )
