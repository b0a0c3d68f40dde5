"""PlaygroundView: what a small network on 2-D data has learned, as the TensorFlow Playground shows it.

The decision surface over a grid of the plane, the surface of every hidden neuron (its
activation at each grid point), the weights of the links between them, and the train and
test loss after each epoch. The view is also a ``net.fit`` callback: pass it as
``net.fit(X, y, callbacks=view)`` and it records the losses and refreshes after each epoch
(live in a notebook through :meth:`PlaygroundView.widget`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import xai_core as xai
from xai_core import Cost, ShapeError, ValidationError
from xai_core.attribution.cost import check_cost
from xai_core.validation import check_array, check_positive_int
from xai_playground.features import check_features, transform

__all__ = ["PlaygroundView", "playground_view"]


def _split(data: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(points of shape (n, 2), labels of shape (n,)) from a Dataset or a pair (X, y)."""
    if hasattr(data, "X") and hasattr(data, "y"):
        X, y = data.X, data.y
    elif isinstance(data, (tuple, list)) and len(data) == 2:
        X, y = data
    else:
        raise ValidationError(
            f"{name} must be a Dataset or a pair (X, y) of 2-D points and labels; "
            f"got {type(data).__name__}."
        )
    X = check_array(X, f"{name} X", feature_shape=(2,), dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if len(y) != len(X) or not np.isfinite(y).all():
        raise ShapeError(
            f"{name} y must hold {len(X)} finite labels, one per point; got {y.shape}."
        )
    return X, y


def _structure(net: Any) -> tuple[list[int], list[int]]:
    """Indices of the Dense layers and of the layer whose output is each hidden layer's neurons."""
    layers = getattr(net, "layers", None)
    if layers is None or not all(type(layer).__name__ != "Conv2D" for layer in layers):
        raise ValidationError(
            f"net must be a native network of Dense layers and activations; got {net!r}."
        )
    dense = [i for i, layer in enumerate(layers) if isinstance(layer, xai.nn.Dense)]
    if not dense:
        raise ValidationError("net must have at least one Dense layer.")
    neurons = []
    for i in dense[:-1]:
        nxt = i + 1
        is_act = nxt < len(layers) and isinstance(layers[nxt], xai.nn.Activation)
        neurons.append(nxt if is_act else i)
    return dense, neurons


class PlaygroundView:
    """A network on 2-D data: decision surface, neuron surfaces, link weights, loss curves.

    Parameters
    ----------
    net : xai.nn.Sequential
        A network of Dense layers and activations whose inputs are ``features`` of a
        point of the plane (two inputs ``x1, x2`` by default).
    data : Dataset or (X, y)
        Training points, ``X`` of shape (n, 2), and their labels (classes 0/1, or values).
    test : Dataset or (X, y), optional
        Test points, drawn outlined; their loss is the test curve.
    features : sequence of str, default=("x1", "x2")
        The network's inputs, names of :data:`xai_playground.features.FEATURES`
        (``x1^2``, ``x2^2``, ``x1*x2``, ``sin(x1)``, ``sin(x2)`` too).
    resolution : int, default=40
        Grid points per side of the surfaces.
    extent : float, optional
        The grid covers ``[-extent, extent]`` on both axes; by default the data's largest
        coordinate, rounded up (6 for the Playground's problems).
    every : int, default=1
        As a ``fit`` callback: refresh the surfaces every ``every`` epochs (losses are
        recorded every epoch).
    discretize : bool, default=False
        Draw the decision surface as the predicted class (the Playground's "discretise
        output") instead of the probability; a regression's sign.
    show_test : bool, default=True
        Draw the test points (the Playground's "show test data").

    Attributes
    ----------
    grid : ndarray of shape (resolution,)
        Coordinates along each axis; surfaces are indexed ``[row = x2 from the top, column = x1]``.
    output : ndarray of shape (resolution, resolution)
        The positive-class probability (classification) or the first output (regression).
    neurons : list of ndarray of shape (units, resolution, resolution)
        Each hidden layer's neuron activations on the grid.
    inputs : ndarray of shape (n_features, resolution, resolution)
        Each input feature on the grid.
    weights : list of ndarray of shape (n_in, units)
        The Dense layers' weights (the links).
    losses : list of dict
        ``{"epoch", "train", "test"}`` per recorded epoch.
    """

    def __init__(
        self,
        net: Any,
        data: Any,
        test: Any = None,
        *,
        features: Sequence[str] = ("x1", "x2"),
        resolution: int = 40,
        extent: float | None = None,
        every: int = 1,
        discretize: bool = False,
        show_test: bool = True,
    ) -> None:
        self.features = check_features(features)
        self.dense, self.neuron_layers = _structure(net)
        shape = getattr(net, "input_shape", None)
        if shape is not None and tuple(shape) != (len(self.features),):
            raise ShapeError(
                f"net takes inputs of shape {tuple(shape)}; the features {self.features} give "
                f"({len(self.features)},). Pass features= matching the network's inputs."
            )
        self.net = net
        self.X, self.y = _split(data, "data")
        self.X_test, self.y_test = (None, None) if test is None else _split(test, "test")
        self.resolution = check_positive_int(resolution, "resolution")
        self.every = check_positive_int(every, "every")
        self.discretize, self.show_test = bool(discretize), bool(show_test)
        check_cost(self._cost(), "playground_view", advice="lower resolution")
        if extent is None:
            pts = self.X if self.X_test is None else np.vstack([self.X, self.X_test])
            extent = float(np.ceil(np.abs(pts).max())) if len(pts) else 6.0
        if not np.isfinite(extent) or extent <= 0:
            raise ValidationError(f"extent must be a positive number; got {extent!r}.")
        self.extent = float(extent)
        last = net.layers[-1]
        self.classification = isinstance(last, (xai.nn.Softmax, xai.nn.Sigmoid))
        self.grid = np.linspace(-self.extent, self.extent, self.resolution)
        gx, gy = np.meshgrid(self.grid, self.grid[::-1])  # row 0 is the top (largest x2)
        self.points = np.stack([gx.ravel(), gy.ravel()], axis=1)
        self.losses: list[dict[str, float]] = []
        self._listeners: list[Any] = []
        self.refresh()

    def _cost(self) -> Cost:
        """The network's rows and memory on the grid: every neuron and input at every point."""
        points = self.resolution**2
        units = sum(
            int(np.prod(getattr(layer, "output_shape", None) or (1,))) for layer in self.net.layers
        )
        width = 2 + len(self.features) + units  # float64 surfaces, kept
        detail = f"a {self.resolution:,} x {self.resolution:,} grid, {width} values per point"
        return Cost(points * (2 + len(self.neuron_layers)), 8 * 3 * points * width, detail)

    # -- computing -----------------------------------------------------------------------------
    def inputs_of(self, points: Any) -> np.ndarray:
        """The network's inputs at ``points`` of shape (n, 2): shape (n, n_features)."""
        P = check_array(points, "points", feature_shape=(2,), dtype=np.float64)
        return transform(P, self.features, self._dtype)

    @property
    def _dtype(self):
        return np.float64 if getattr(self.net, "dtype", None) == np.float64 else np.float32

    def score(self, points: Any) -> np.ndarray:
        """The surface's value at ``points``: positive-class probability or first output, shape (n,)."""
        out = np.asarray(self.net.predict(self.inputs_of(points)), dtype=np.float64)
        return out[:, -1] if self.classification else out[:, 0]

    def refresh(self) -> PlaygroundView:
        """Recompute every surface and the link weights from the network's current weights."""
        r = self.resolution
        F = transform(self.points, self.features, self._dtype)
        net = self.net  # its own passes, in its dtype (a runner's default backend is fp32)
        self.inputs = F.T.reshape(len(self.features), r, r).astype(np.float64)
        self.neurons = [
            np.asarray(net.activations(F, i), dtype=np.float64).T.reshape(-1, r, r)
            for i in self.neuron_layers
        ]
        out = np.asarray(net.predict(F), dtype=np.float64)
        self.output = (out[:, -1] if self.classification else out[:, 0]).reshape(r, r)
        self.weights = [np.array(self.net.layers[i].weight, dtype=np.float64) for i in self.dense]
        return self

    def loss(self, X: np.ndarray, y: np.ndarray) -> float:
        """Mean cross-entropy (classification) or half mean squared error on points ``X``."""
        out = np.asarray(self.net.predict(transform(X, self.features, self._dtype)), np.float64)
        if not self.classification:
            return float(0.5 * np.mean((out[:, 0] - y) ** 2))
        if out.shape[1] == 1:
            out = np.hstack([1.0 - out, out])
        p = np.clip(out[np.arange(len(y)), y.astype(np.int64)], 1e-12, 1.0)
        return float(-np.mean(np.log(p)))

    def record(self, epoch: int) -> dict[str, float]:
        """Append the current train (and test) loss as epoch ``epoch``; returns the row."""
        row = {"epoch": int(epoch), "train": self.loss(self.X, self.y)}
        if self.X_test is not None:
            row["test"] = self.loss(self.X_test, self.y_test)
        self.losses.append(row)
        return row

    def __call__(self, net: Any, record: dict[str, Any]) -> bool:
        """The ``fit`` callback: record the losses, refresh every ``every`` epochs, tell listeners."""
        self.net = net
        epoch = int(record.get("epoch", len(self.losses) + 1))
        self.record(epoch)
        if epoch % self.every == 0:
            self.refresh()
            for listener in self._listeners:
                listener(self)
        return False

    def regions(self) -> np.ndarray:
        """Which neuron of the last hidden layer pushes the output most at each grid point.

        Its activation times its weight to the output (the positive class's logit minus the
        other's for two softmax outputs) is the largest in magnitude there.

        Returns
        -------
        ndarray of int of shape (resolution, resolution)
            The neuron's index, or -1 where the network has no hidden layer.
        """
        if not self.neurons:
            return np.full((self.resolution, self.resolution), -1)
        w = self.weights[-1]
        w_out = w[:, -1] - w[:, 0] if w.shape[1] == 2 and self.classification else w[:, 0]
        contribution = self.neurons[-1] * w_out[:, None, None]
        return np.argmax(np.abs(contribution), axis=0)

    def explain_point(self, point: Sequence[float], method: str = "ig", **options: Any):
        """IG, SHAP (or any registered method) attributions of one point to the input features.

        Parameters
        ----------
        point : pair of float
            ``(x1, x2)``.
        method : str, default="ig"
        **options
            Passed to :func:`xai_core.explain`; SHAP gets the training inputs (up to 100)
            as its background unless given one.

        Returns
        -------
        Explanation
            Of shape (1, n_features), explaining the predicted class.
        """
        x = self.inputs_of(np.asarray(point, dtype=np.float64).reshape(1, 2))
        if method != "ig" and "background" not in options:
            options["background"] = transform(self.X[:100], self.features, self._dtype)
        options.setdefault("progress", False)
        return xai.explain(self.net, x, method=method, feature_names=self.features, **options)

    # -- display -------------------------------------------------------------------------------
    def widget(self, **kwargs: Any):
        """A live notebook view that redraws as the network trains (see :mod:`xai_playground.widgets`)."""
        from xai_playground.widgets import PlaygroundWidget

        return PlaygroundWidget(self, **kwargs)

    def __repr__(self) -> str:
        hidden = [n.shape[0] for n in self.neurons]
        return (
            f"PlaygroundView({len(self.features)} inputs, hidden {hidden}, {len(self.X)} train "
            f"points, {len(self.losses)} epoch(s) recorded)"
        )

    def _repr_html_(self) -> str:
        from xai_core.report import render_fragment

        return render_fragment(self)


def playground_view(net: Any, data: Any, test: Any = None, **kwargs: Any) -> PlaygroundView:
    """``xai.playground_view(net, data, test=None, ...)``: see :class:`PlaygroundView`."""
    return PlaygroundView(net, data, test, **kwargs)
