"""Teachable Machine's loop: samples per class, train, per-class accuracy, test a sample, export.

``trainer = xai.teachable_trainer("photos/", kind="image")`` reads the classes; the
trainer shows their sample counts, trains with Teachable Machine's knobs (epochs, batch
size, learning rate; Adam, as it uses) on 85 % of each class, and scores the other 15 %:
accuracy per class and the confusion matrix. :meth:`TeachableTrainer.predict_bars` gives
the class probabilities of a new sample, :meth:`TeachableTrainer.widget` shows them live,
:meth:`TeachableTrainer.app` lays the whole page out with the knobs, and
:meth:`TeachableTrainer.export` writes Teachable Machine's TensorFlow Lite export.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from xai_core.errors import ValidationError
from xai_core.validation import check_positive_int
from xai_teachable.inputs import Samples, read_one, read_samples

__all__ = ["VALIDATION_FRACTION", "TeachableTrainer", "held_out_split", "teachable_trainer"]

#: The share of each class Teachable Machine holds out to score the model.
VALIDATION_FRACTION = 0.15


def held_out_split(y: np.ndarray, n_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Teachable Machine's split: each class shuffled, ``ceil(0.15 * n)`` of its samples held out.

    Parameters
    ----------
    y : ndarray of int, shape (n_samples,)
    n_classes : int
    seed : int

    Returns
    -------
    (train, test) : two sorted ndarrays of int64
        Row indices; every class keeps at least one training sample.
    """
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in range(n_classes):
        rows = rng.permutation(np.flatnonzero(y == c))
        n_test = min(math.ceil(VALIDATION_FRACTION * len(rows)), len(rows) - 1)
        test.append(rows[:n_test])
        train.append(rows[n_test:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def build_network(samples: Samples, seed: int) -> Any:
    """The network a project trains: a small CNN on images and spectrograms, an MLP on poses.

    Images and spectrograms, ``(height, width, channels)``: two 3x3 convolutions (8 and 16
    filters, ReLU, each followed by a 2x2 max pool while the map is at least 2 x 2), dense
    softmax. Poses: Teachable Machine's head, a dense layer of 100 ReLU units and a softmax.
    """
    from xai_core import nn

    n = len(samples.class_names)
    if samples.kind == "pose":
        return nn.mlp(
            samples.input_shape[0],
            hidden=(100,),
            n_outputs=n,
            activation="relu",
            output_names=samples.class_names,
            seed=seed,
        )
    net = nn.Graph(input_shape=samples.input_shape, input_name="input", layout="NHWC", seed=seed)
    h, w = samples.input_shape[:2]
    for k, filters in enumerate((8, 16)):
        net.add(nn.Conv2D(filters, 3, padding=1, layout="NHWC"), name=f"conv{k}")
        net.add(nn.ReLU(), name=f"relu{k}")
        if h >= 2 and w >= 2:
            net.add(nn.MaxPool2D(2, layout="NHWC"), name=f"pool{k}")
            h, w = h // 2, w // 2
    net.add(nn.Flatten(), name="flatten")
    net.add(nn.Dense(n), name="logits")
    net.add(nn.Softmax(), name="probabilities")
    net.output_names = samples.class_names
    return net


class TeachableTrainer:
    """A Teachable Machine project: its classes' samples, a network trained on them, its scores.

    Build it with :func:`teachable_trainer`. Until :meth:`train` runs, only the samples are
    known (:attr:`class_counts`).

    Attributes
    ----------
    samples : Samples
        Every sample, as the network reads it.
    class_names : tuple of str
    kind : {"image", "audio", "pose"}
    train_rows, test_rows : ndarray of int64
        The rows of :attr:`samples` trained on and held out (set by :meth:`train`).
    net : Graph or Sequential or None
        The trained network.
    history : DataFrame or None
        ``net.history``: epoch, loss, accuracy, val_loss, val_accuracy (on the held-out rows).
    test_predictions : ndarray of int64 or None
        The predicted class of each held-out row.
    exported : TeachableExport or None
        What the last :meth:`export` wrote.
    """

    def __init__(self, samples: Samples) -> None:
        self.samples = samples
        self.class_names = samples.class_names
        self.kind = samples.kind
        self.train_rows = self.test_rows = np.zeros(0, np.int64)
        self.net: Any = None
        self.history: Any = None
        self.test_predictions: np.ndarray | None = None
        self.exported: Any = None
        self.settings: dict[str, Any] = {}

    def __repr__(self) -> str:
        state = f"trained {self.settings['epochs']} epochs" if self.trained else "not trained"
        return (
            f"TeachableTrainer({self.kind}, {len(self.class_names)} classes, "
            f"{len(self.samples.y)} samples, {state})"
        )

    @property
    def trained(self) -> bool:
        """Whether :meth:`train` has run."""
        return self.net is not None

    @property
    def class_counts(self) -> Any:
        """Samples per class: a DataFrame indexed by class with ``samples``, ``train`` and ``test``.

        ``train`` and ``test`` are 0 until :meth:`train` splits the samples.
        """
        import pandas as pd

        n = len(self.class_names)
        y = self.samples.y
        return pd.DataFrame(
            {
                "samples": np.bincount(y, minlength=n),
                "train": np.bincount(y[self.train_rows], minlength=n),
                "test": np.bincount(y[self.test_rows], minlength=n),
            },
            index=pd.Index(self.class_names, name="class"),
        )

    def train(
        self,
        *,
        epochs: int = 50,
        batch_size: int = 16,
        learning_rate: float = 0.001,
        seed: int = 0,
        progress: bool | None = False,
        callbacks: Any = None,
    ) -> TeachableTrainer:
        """Train a new network on 85 % of each class; score it on the other 15 %.

        Parameters
        ----------
        epochs : int, default=50
        batch_size : int, default=16
        learning_rate : float, default=0.001
            Teachable Machine's three training knobs, with its defaults; the optimiser is Adam.
        seed : int, default=0
            Seeds the split (:func:`held_out_split`), the initial weights and the shuffling:
            the same seed trains the same network.
        progress : bool or None, default=False
            A progress bar over epochs.
        callbacks : callable or sequence, optional
            Passed to :func:`xai_core.nn.fit` (``cb(net, record)`` after each epoch).

        Returns
        -------
        TeachableTrainer
            ``self``, trained.
        """
        epochs = check_positive_int(epochs, "epochs")
        batch_size = check_positive_int(batch_size, "batch_size")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ValidationError(f"seed must be an int; got {seed!r}.")
        X, y = self.samples.X, self.samples.y
        counts = np.bincount(y, minlength=len(self.class_names))
        if counts.min() < 2:
            raise ValidationError(
                "every class needs at least 2 samples (one to train on, one to hold out); "
                f"the counts are {dict(zip(self.class_names, counts.tolist()))}."
            )
        train, test = held_out_split(y, len(self.class_names), int(seed))
        net = build_network(self.samples, int(seed))
        net.fit(
            X[train],
            y[train],
            optimizer="adam",
            learning_rate=learning_rate,
            batch_size=batch_size,
            epochs=epochs,
            validation_data=(X[test], y[test]),
            seed=int(seed),
            progress=progress,
            callbacks=callbacks,
        )
        self.train_rows, self.test_rows, self.net, self.history = train, test, net, net.history
        self.settings = {
            "epochs": epochs,
            "batch_size": batch_size,
            "learning_rate": float(learning_rate),
            "seed": int(seed),
        }
        self.test_predictions = self.predict_proba(X[test]).argmax(1).astype(np.int64)
        self.exported = None
        return self

    def _need_training(self, what: str) -> None:
        if not self.trained:
            raise ValidationError(f"{what} needs a trained network: call trainer.train() first.")

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of shape (n_samples, n_classes) for samples as :attr:`samples` holds them."""
        self._need_training("predict_proba")
        return self.net.predict(np.asarray(X, dtype=np.float32))

    @property
    def confusion_matrix(self) -> np.ndarray:
        """Held-out counts of shape (n_classes, n_classes): row the true class, column the predicted."""
        self._need_training("confusion_matrix")
        n = len(self.class_names)
        matrix = np.zeros((n, n), np.int64)
        np.add.at(matrix, (self.samples.y[self.test_rows], self.test_predictions), 1)
        return matrix

    @property
    def accuracy_per_class(self) -> Any:
        """Teachable Machine's "accuracy per class": a DataFrame indexed by class.

        ``accuracy`` is the share of the class's held-out samples predicted as that class,
        ``samples`` their number.
        """
        import pandas as pd

        matrix = self.confusion_matrix
        totals = matrix.sum(1)
        return pd.DataFrame(
            {"accuracy": np.diag(matrix) / np.maximum(totals, 1), "samples": totals},
            index=pd.Index(self.class_names, name="class"),
        )

    @property
    def accuracy(self) -> float:
        """The share of all held-out samples predicted right."""
        matrix = self.confusion_matrix
        return float(np.trace(matrix) / max(matrix.sum(), 1))

    def read(self, item: Any) -> np.ndarray:
        """One new sample as the network reads it: an image or WAV file, its bytes, or an array.

        An int is the held-out sample of that position (``trainer.test_rows[item]``).

        Returns
        -------
        ndarray of float32 of shape ``samples.input_shape``
        """
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            self._need_training("a held-out sample")
            if not -len(self.test_rows) <= item < len(self.test_rows):
                raise ValidationError(
                    f"a held-out sample's position must be in 0..{len(self.test_rows) - 1}; "
                    f"got {item}."
                )
            return self.samples.X[self.test_rows[item]]
        return read_one(item, self.kind, self.samples.input_shape)

    def predict_bars(self, item: Any) -> Any:
        """The probability of each class for one sample: the bars Teachable Machine's preview shows.

        Parameters
        ----------
        item : path-like, bytes, PIL image, array-like or int
            See :meth:`read`.

        Returns
        -------
        pandas.Series
            Indexed by class name, named ``"probability"``, summing to 1.
        """
        import pandas as pd

        probs = self.predict_proba(self.read(item)[None])[0]
        return pd.Series(probs.astype(np.float64), index=list(self.class_names), name="probability")

    def widget(self) -> Any:
        """The live preview: pick a held-out sample or upload a file, the bars follow.

        Returns
        -------
        TeachableWidget
            Needs the ``notebook`` extra.
        """
        from xai_teachable.widgets import TeachableWidget

        self._need_training("the preview")
        return TeachableWidget(self)

    def app(self, *, export_folder: str = "export") -> Any:
        """Teachable Machine's page in a notebook: counts, knobs, a train button, scores, preview, export.

        Returns
        -------
        TeachableApp
            Needs the ``notebook`` extra; works before training.
        """
        from xai_teachable.widgets import TeachableApp

        return TeachableApp(self, export_folder=export_folder)

    def export(self, folder: str | os.PathLike[str]) -> Any:
        """Teachable Machine's TensorFlow Lite export, float and int8, and the int8 file's Edge TPU placement.

        Writes ``model.tflite`` (float32), ``model_int8.tflite`` (full-integer, calibrated on
        the training rows) and ``labels.txt`` (``"0 name"`` per line).

        Returns
        -------
        TeachableExport
        """
        from xai_teachable.export import export_project

        self._need_training("export")
        self.exported = export_project(self, folder)
        return self.exported


def teachable_trainer(
    data: Any,
    kind: str = "image",
    *,
    image_size: int | tuple[int, int] = 224,
    color: bool = True,
) -> TeachableTrainer:
    """A Teachable Machine project from a folder of class folders, or a dataset.

    Parameters
    ----------
    data : path-like, Dataset or (X, y, class_names)
        ``"image"``: a folder ``data/<class>/*.png|jpg`` (or a dataset from
        ``xai_datasets.load_image_folder``); ``"audio"``: ``data/<class>/*.wav`` (or one from
        ``load_audio_folder``); ``"pose"``: PoseNet feature vectors of shape
        (n_samples, n_features) with their labels.
    kind : {"image", "audio", "pose"}, default="image"
    image_size : int or (int, int), default=224
        Images read from a folder are centre-cropped and resized to it.
    color : bool, default=True
        RGB or grey images, read from a folder.

    Returns
    -------
    TeachableTrainer
        Untrained; ``trainer.class_counts`` shows the samples, ``trainer.train()`` trains.

    Examples
    --------
    >>> trainer = xai.teachable_trainer("photos/", kind="image", image_size=96)
    >>> trainer.class_counts
    >>> trainer.train(epochs=50, batch_size=16, learning_rate=0.001, seed=0)
    >>> trainer.accuracy_per_class, trainer.confusion_matrix
    >>> trainer.predict_bars("new.jpg")
    >>> trainer.export("export/").placement
    """
    return TeachableTrainer(read_samples(data, kind, image_size=image_size, color=color))
