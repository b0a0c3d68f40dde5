"""The Playground's knobs as notebook widgets: change one and the network retrains, live.

``app = xai.playground_app(data)``: learning rate, activation, regularisation and its rate,
batch size, hidden layers, the input features (x1, x2, x1², x2², x1·x2, sin x1, sin x2),
noise, train/test ratio and epochs. ``data`` is a Dataset or ``(X, y)`` of 2-D points, or a
function ``data(noise) -> Dataset`` (noise in percent, as the Playground's slider) so the
noise knob regenerates it: ``lambda noise: xai_datasets.playground("xor", noise=noise)``.

Every knob is an ipywidget in :attr:`PlaygroundApp.controls`; setting its ``value`` from
Python retrains exactly as moving it does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import xai_core as xai
from xai_core import ValidationError
from xai_core.widgets import require_widgets
from xai_playground.features import FEATURES
from xai_playground.view import PlaygroundView, _split

__all__ = ["PlaygroundApp", "playground_app"]

#: The Playground's choices.
LEARNING_RATES = (0.00001, 0.0001, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
REGULARIZATION_RATES = (0.0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
ACTIVATIONS = ("tanh", "relu", "sigmoid", "linear")


def _hidden(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(t) for t in str(text).replace(" ", "").split(",") if t)
    except ValueError:
        raise ValidationError(f"hidden layers must be like '4, 2'; got {text!r}.") from None
    if any(not 1 <= s <= 8 for s in sizes) or len(sizes) > 6:
        raise ValidationError(f"hidden layers: up to 6 layers of 1 to 8 neurons; got {text!r}.")
    return sizes


class PlaygroundApp:
    """The Playground: knobs, the live view, and a retrain on every change.

    Parameters
    ----------
    data : Dataset, (X, y) or callable
        Points of the plane and labels; a callable gets the noise (percent) and returns them.
    seed : int, default=0
        Seeds the weights, the train/test split and the shuffling.
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
        ``batch_size``, ``hidden``, ``noise``, ``train_percent``, ``epochs`` and one checkbox
        per feature (``feature x1^2`` ...).
    net : xai.nn.Sequential
        The network last trained.
    view : PlaygroundView
        Its view (the report section of the final state).
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
            "epochs": w.IntSlider(value=30, min=1, max=300, description="epochs"),
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
        self.status = w.HTML()
        self._widget = None
        self.retrain()
        for control in self.controls.values():
            control.observe(lambda _: self.retrain(), names="value")

    @property
    def features(self) -> tuple[str, ...]:
        """The input features ticked, in the Playground's order."""
        return tuple(f for f in FEATURES if self.controls[f"feature {f}"].value)

    def _data(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        data = self.data(self.controls["noise"].value) if callable(self.data) else self.data
        X, y = _split(data, "data")
        order = np.random.default_rng(self.seed).permutation(len(X))
        n_train = max(
            1, min(len(X) - 1, round(len(X) * self.controls["train_percent"].value / 100))
        )
        tr, te = order[:n_train], order[n_train:]
        return X[tr], y[tr], X[te], y[te]

    def retrain(self) -> PlaygroundView:
        """A new network from the knobs, trained from scratch; the view follows it live."""
        c = {k: v.value for k, v in self.controls.items()}
        features = self.features
        if not features:
            self.status.value = "<p>Tick at least one input feature.</p>"
            return self.view
        X, y, Xt, yt = self._data()
        classification = np.array_equal(np.unique(y), [0.0, 1.0]) or set(np.unique(y)) <= {0, 1}
        net = xai.nn.mlp(
            len(features),
            hidden=_hidden(c["hidden"]),
            n_outputs=2 if classification else 1,
            activation=c["activation"],
            output="softmax" if classification else "linear",
            seed=self.seed,
        )
        view = PlaygroundView(
            net, (X, y), (Xt, yt), features=features, resolution=self.resolution, every=self.every
        )
        if self._widget is not None:
            view._listeners.append(self._widget.redraw)
            self._widget.view = view
        self.net, self.view = net, view
        from xai_playground.features import transform

        net.fit(
            transform(X, features),
            y.astype(np.int64) if classification else y,
            problem="classification" if classification else "regression",
            learning_rate=c["learning_rate"],
            regularization=None if c["regularization"] == "none" else c["regularization"],
            regularization_rate=c["regularization_rate"],
            batch_size=c["batch_size"],
            epochs=c["epochs"],
            seed=self.seed,
            progress=False,
            callbacks=view,
        )
        view.refresh()
        if self._widget is not None:
            self._widget.redraw()
        last = view.losses[-1]
        self.status.value = (
            f"<p>Epoch {last['epoch']}: train loss {last['train']:.3f}, "
            f"test loss {last.get('test', float('nan')):.3f}.</p>"
        )
        return view

    def widget(self) -> Any:
        """The knobs above the live view (built once)."""
        w = require_widgets()
        if self._widget is None:
            self._widget = self.view.widget()
        knobs = [v for k, v in self.controls.items() if not k.startswith("feature ")]
        boxes = [v for k, v in self.controls.items() if k.startswith("feature ")]
        return w.VBox(
            [w.HBox(knobs[:5]), w.HBox(knobs[5:]), w.HBox(boxes), self.status, self._widget.box]
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget()._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        return f"PlaygroundApp({self.view!r})"


def playground_app(data: Any, **kwargs: Any) -> PlaygroundApp:
    """``xai.playground_app(data, seed=0, **knobs)``: see :class:`PlaygroundApp`."""
    return PlaygroundApp(data, **kwargs)
