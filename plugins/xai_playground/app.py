"""The Playground's knobs as notebook widgets: play, pause, step and reset a network as it trains.

``app = xai.playground_app(data)`` opens at epoch 0, as the TensorFlow Playground does:
``app.play()`` trains in the background (the epoch counter, the surfaces and the loss curves
move), ``app.pause()`` stops it, ``app.step()`` trains one epoch and ``app.reset()`` starts
again from the seeded initial weights. The knobs are learning rate, activation,
regularisation and its rate, batch size, hidden layers, the input features (x1, x2, x1²,
x2², x1·x2, sin x1, sin x2), noise, train/test ratio, "discretise output" and "show test
data". ``data`` is a Dataset or ``(X, y)`` of 2-D points, or a function
``data(noise) -> Dataset`` (noise in percent, as the Playground's slider) so the noise knob
regenerates it: ``lambda noise: xai_datasets.playground("xor", noise=noise)``.

Knobs in :data:`LIVE_KNOBS` take effect on the running network at its next epoch; the
others change the network or its data, so they restart it at epoch 0 (and it keeps playing
if it was). Every knob is an ipywidget in :attr:`PlaygroundApp.controls`; setting its
``value`` from Python does exactly what moving it does.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

import xai_core as xai
from xai_core import ValidationError
from xai_core.validation import check_positive_int
from xai_core.widgets import require_widgets
from xai_playground.features import FEATURES, transform
from xai_playground.view import PlaygroundView, _split

__all__ = ["LIVE_KNOBS", "PlaygroundApp", "epoch_seed", "playground_app"]

#: The Playground's choices.
LEARNING_RATES = (0.00001, 0.0001, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
REGULARIZATION_RATES = (0.0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
ACTIVATIONS = ("tanh", "relu", "sigmoid", "linear")
#: Knobs that act on the running network (the next epoch uses them); the others restart it.
LIVE_KNOBS = frozenset(
    {"learning_rate", "regularization", "regularization_rate", "batch_size", "epochs"}
)
#: Knobs that only change what the view draws.
DISPLAY_KNOBS = frozenset({"discretize", "show_test"})


def epoch_seed(seed: int, epoch: int) -> int:
    """The shuffling seed of epoch ``epoch`` (1, 2, ...) of an app seeded ``seed``."""
    return int(np.random.SeedSequence([int(seed), int(epoch)]).generate_state(1)[0])


def _hidden(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(t) for t in str(text).replace(" ", "").split(",") if t)
    except ValueError:
        raise ValidationError(f"hidden layers must be like '4, 2'; got {text!r}.") from None
    if any(not 1 <= s <= 8 for s in sizes) or len(sizes) > 6:
        raise ValidationError(f"hidden layers: up to 6 layers of 1 to 8 neurons; got {text!r}.")
    return sizes


class PlaygroundApp:
    """The Playground: knobs, the live view, and training you can play, pause, step and reset.

    Parameters
    ----------
    data : Dataset, (X, y) or callable
        Points of the plane and labels; a callable gets the noise (percent) and returns them.
    seed : int, default=0
        Seeds the weights, the train/test split and each epoch's shuffling, so that the
        same knobs give the same network at every epoch, however the epochs were run
        (``step(10)``, ten ``step()`` or ``play()``).
    resolution : int, default=30
        Grid points per side of the surfaces.
    every : int, default=5
        Redraw every ``every`` epochs while training.
    **knobs
        Initial knob values (names as in :attr:`controls`).

    Attributes
    ----------
    controls : dict of str to ipywidgets.Widget
        ``learning_rate``, ``activation``, ``regularization``, ``regularization_rate``,
        ``batch_size``, ``hidden``, ``noise``, ``train_percent``, ``epochs`` (where
        :meth:`play` stops), ``discretize``, ``show_test`` and one checkbox per feature
        (``feature x1^2`` ...).
    buttons : dict of str to ipywidgets.Widget
        ``play`` (a toggle: play/pause), ``step`` and ``reset``.
    epoch : int
        Epochs trained since the last reset.
    net : xai.nn.Sequential
        The network being trained.
    view : PlaygroundView
        Its view (the report section of the current state: surfaces and loss history).
    """

    def __init__(
        self,
        data: Any,
        *,
        seed: int = 0,
        resolution: int = 30,
        every: int = 5,
        **knobs: Any,
    ) -> None:
        w = require_widgets()
        if not callable(data):
            _split(data, "data")  # checked now, before any work
        self.data = data
        self.seed = int(seed)
        self.resolution = resolution
        self.every = every
        self.controls: dict[str, Any] = {
            "learning_rate": w.Dropdown(options=LEARNING_RATES, value=0.03, description="rate"),
            "activation": w.Dropdown(options=ACTIVATIONS, value="tanh", description="activation"),
            "regularization": w.Dropdown(
                options=["none", "L1", "L2"], value="none", description="regularisation"
            ),
            "regularization_rate": w.Dropdown(
                options=REGULARIZATION_RATES, value=0.0, description="reg. rate"
            ),
            "batch_size": w.IntSlider(value=10, min=1, max=30, description="batch size"),
            "hidden": w.Text(value="4, 2", description="hidden", continuous_update=False),
            "noise": w.IntSlider(
                value=0, min=0, max=50, step=5, description="noise %", disabled=not callable(data)
            ),
            "train_percent": w.IntSlider(value=50, min=10, max=90, step=10, description="train %"),
            "epochs": w.IntSlider(value=300, min=1, max=5000, description="play to epoch"),
            "discretize": w.Checkbox(value=False, description="discretise output", indent=False),
            "show_test": w.Checkbox(value=True, description="show test data", indent=False),
        }
        for name in FEATURES:
            self.controls[f"feature {name}"] = w.Checkbox(
                value=name in ("x1", "x2"), description=name, indent=False
            )
        unknown = sorted(set(knobs) - set(self.controls))
        if unknown:
            raise ValidationError(f"unknown knobs {unknown}; known: {sorted(self.controls)}.")
        for name, value in knobs.items():
            self.controls[name].value = value
        self.buttons = {
            "play": w.ToggleButton(value=False, description="play", icon="play"),
            "step": w.Button(description="step", icon="step-forward"),
            "reset": w.Button(description="reset", icon="undo"),
        }
        self.status = w.HTML()
        self._widget = None
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._syncing = threading.local()  # set while the app itself moves the play button
        self.epoch = 0
        self.reset()
        for name, control in self.controls.items():
            control.observe(lambda _, name=name: self._knob_changed(name), names="value")
        self.buttons["play"].observe(self._play_clicked, names="value")
        self.buttons["step"].on_click(lambda _: self.step())
        self.buttons["reset"].on_click(lambda _: self.reset())

    # -- the knobs -----------------------------------------------------------------------------
    @property
    def features(self) -> tuple[str, ...]:
        """The input features ticked, in the Playground's order."""
        return tuple(f for f in FEATURES if self.controls[f"feature {f}"].value)

    @property
    def playing(self) -> bool:
        """Whether training runs in the background."""
        return self._thread is not None and self._thread.is_alive()

    def _knob_changed(self, name: str) -> None:
        if name in DISPLAY_KNOBS:
            self._show()
        elif name not in LIVE_KNOBS:
            self.reset()  # the network or its data changed: start again (still playing if it was)

    def _data(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        data = self.data(self.controls["noise"].value) if callable(self.data) else self.data
        X, y = _split(data, "data")
        order = np.random.default_rng(self.seed).permutation(len(X))
        n_train = max(
            1, min(len(X) - 1, round(len(X) * self.controls["train_percent"].value / 100))
        )
        tr, te = order[:n_train], order[n_train:]
        return X[tr], y[tr], X[te], y[te]

    # -- training ------------------------------------------------------------------------------
    def reset(self) -> PlaygroundView:
        """A new network from the knobs at its seeded initial weights, epoch 0; its view.

        Returns
        -------
        PlaygroundView
            The new network's view, holding epoch 0's losses.
        """
        with self._lock:
            c = {k: v.value for k, v in self.controls.items()}
            features = self.features
            if not features:
                self.status.value = "<p>Tick at least one input feature.</p>"
                return getattr(self, "view", None)
            X, y, Xt, yt = self._data()
            self._classification = set(np.unique(y)) <= {0.0, 1.0}
            self._train = (
                transform(X, features),
                (y.astype(np.int64) if self._classification else y),
            )
            net = xai.nn.mlp(
                len(features),
                hidden=_hidden(c["hidden"]),
                n_outputs=2 if self._classification else 1,
                activation=c["activation"],
                output="softmax" if self._classification else "linear",
                seed=self.seed,
            )
            view = PlaygroundView(
                net, (X, y), (Xt, yt), features=features, resolution=self.resolution,
                every=self.every, discretize=c["discretize"], show_test=c["show_test"],
            )  # fmt: skip
            view.record(0)
            if self._widget is not None:
                view._listeners.append(self._widget.redraw)
                self._widget.view = view
            self.net, self.view, self.epoch = net, view, 0
        self._show()
        return view

    def step(self, epochs: int = 1) -> PlaygroundView:
        """Train the running network ``epochs`` more epochs with the knobs as they are now.

        Each epoch is shuffled from ``(seed, epoch)``, so the weights at an epoch do not
        depend on how the epochs were run.
        """
        epochs = check_positive_int(epochs, "epochs")
        for _ in range(epochs):
            with self._lock:
                if not self.features:
                    break
                self._one_epoch()
        self._show()
        return self.view

    def _one_epoch(self) -> None:
        c = {k: v.value for k, v in self.controls.items()}
        view, epoch = self.view, self.epoch + 1
        seed = epoch_seed(self.seed, epoch)
        self.net.fit(
            *self._train,
            problem="classification" if self._classification else "regression",
            learning_rate=c["learning_rate"],
            regularization=None if c["regularization"] == "none" else c["regularization"],
            regularization_rate=c["regularization_rate"],
            batch_size=c["batch_size"],
            epochs=1,
            seed=seed,
            progress=False,
            callbacks=lambda net, record: view(net, {**record, "epoch": epoch}),
        )
        self.epoch = epoch

    def play(self) -> None:
        """Train in the background until :meth:`pause` or the ``epochs`` knob's epoch."""
        with self._lock:
            if self.playing:
                return
            self._stop.clear()
            self._show_playing(True)  # before the thread starts, which turns it off when done
            self._thread = threading.Thread(target=self._run, name="playground", daemon=True)
            self._thread.start()

    def pause(self) -> None:
        """Stop background training after the epoch that is running; waits for it."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        self._show_playing(False)

    def wait(self, timeout: float | None = None) -> None:
        """Block until background training stops (the ``epochs`` knob's epoch or a pause)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _play_clicked(self, change: dict) -> None:
        """The play button moved: by the user, play or pause; by the app, nothing more."""
        if getattr(self._syncing, "on", False):
            return
        if change["new"]:
            self.play()
        else:
            self.pause()

    def _show_playing(self, on: bool) -> None:
        """Move the play button to ``on`` without it acting as a click."""
        self._syncing.on = True
        try:
            self.buttons["play"].value = on
        finally:
            self._syncing.on = False

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                with self._lock:
                    if not self.features or self.epoch >= self.controls["epochs"].value:
                        break
                    self._one_epoch()
                    self._status()
        finally:
            self._show()
            self._stop.set()
            self._show_playing(False)

    # -- display -------------------------------------------------------------------------------
    def _show(self) -> None:
        """Refresh the view and the status line (epoch and losses) from the current state."""
        view = self.view
        view.discretize = self.controls["discretize"].value
        view.show_test = self.controls["show_test"].value
        view.refresh()
        if self._widget is not None:
            self._widget.redraw()
        self._status()

    def _status(self) -> None:
        last = self.view.losses[-1]
        test = f", test loss {last['test']:.3f}" if "test" in last else ""
        self.status.value = f"<p>Epoch {self.epoch}: train loss {last['train']:.3f}{test}.</p>"

    def widget(self) -> Any:
        """The buttons, the epoch counter and the knobs above the live view (built once)."""
        w = require_widgets()
        if self._widget is None:
            self._widget = self.view.widget()
        knobs = [
            v for k, v in self.controls.items() if not k.startswith("feature ")
            and k not in DISPLAY_KNOBS
        ]  # fmt: skip
        boxes = [v for k, v in self.controls.items() if k.startswith("feature ")]
        toggles = [self.controls[k] for k in sorted(DISPLAY_KNOBS)]
        return w.VBox(
            [
                w.HBox([*self.buttons.values(), self.status]),
                w.HBox(knobs[:5]),
                w.HBox(knobs[5:]),
                w.HBox(boxes + toggles),
                self._widget.box,
            ]
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget()._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        return f"PlaygroundApp(epoch {self.epoch}, {self.view!r})"


def playground_app(data: Any, **kwargs: Any) -> PlaygroundApp:
    """``xai.playground_app(data, seed=0, **knobs)``: see :class:`PlaygroundApp`."""
    return PlaygroundApp(data, **kwargs)
