"""The Playground view: surfaces equal the network's activations, losses, the fit callback, the knobs."""

from __future__ import annotations

import time

import numpy as np
import pytest
from sklearn.metrics import log_loss

import xai_core as xai
from xai_datasets import playground
from xai_playground.app import epoch_seed


def _forward(net, F):
    """The network's hidden activations by hand, in float64 numpy (the oracle)."""
    acts, h = [], np.asarray(F, np.float64)
    funcs = {"Tanh": np.tanh, "ReLU": lambda v: np.maximum(v, 0), "Linear": lambda v: v}
    funcs["Sigmoid"] = lambda v: 1 / (1 + np.exp(-v))
    layers = net.layers
    for i, layer in enumerate(layers[:-2]):
        if isinstance(layer, xai.nn.Dense):
            h = h @ np.float64(layer.weight) + np.float64(layer.bias)
            h = funcs[type(layers[i + 1]).__name__](h)
            acts.append(h)
    return acts


@pytest.fixture(scope="module")
def trained():
    tr, te = playground("xor", 200, seed=0), playground("xor", 100, seed=1)
    net = xai.nn.mlp(2, hidden=(4, 3), n_outputs=2, activation="tanh", dtype="float64")
    view = xai.playground_view(net, tr, te, resolution=17)
    net.fit(tr.X, tr.y, learning_rate=0.1, epochs=6, progress=False, callbacks=view)
    return net, view, tr, te


def test_neuron_surfaces_equal_the_networks_activations_on_the_grid(trained):
    """Every hidden neuron's surface is its activation at each grid point (numpy forward pass)."""
    net, view, _, _ = trained
    gx, gy = np.meshgrid(view.grid, view.grid[::-1])
    expected = _forward(net, np.stack([gx.ravel(), gy.ravel()], axis=1))
    assert [n.shape for n in view.neurons] == [(4, 17, 17), (3, 17, 17)]
    for surfaces, acts in zip(view.neurons, expected):
        np.testing.assert_allclose(surfaces, acts.T.reshape(-1, 17, 17), rtol=1e-10, atol=1e-12)
    top_left = net.predict(np.array([[view.grid[0], view.grid[-1]]]))[0, 1]
    assert view.output[0, 0] == pytest.approx(top_left)
    np.testing.assert_allclose(view.weights[0], net.layers[0].weight)


def test_losses_are_recorded_each_epoch_and_equal_log_loss(trained):
    """The callback records one train/test row per epoch; the last equals scikit-learn's log loss."""
    net, view, tr, te = trained
    assert [r["epoch"] for r in view.losses] == list(range(1, 7))
    assert view.losses[-1]["train"] == pytest.approx(log_loss(tr.y, net.predict(tr.X)))
    assert view.losses[-1]["test"] == pytest.approx(log_loss(te.y, net.predict(te.X)))


def test_fit_callback_returning_true_stops_training():
    """fit calls each callback after every epoch with the history row; True stops it."""
    tr = playground("circle", 60, seed=0)
    seen = []
    net = xai.nn.mlp(2, hidden=(2,))
    net.fit(
        tr.X,
        tr.y,
        epochs=20,
        progress=False,
        callbacks=lambda n, r: seen.append(r) or r["epoch"] == 3,
    )
    assert [r["epoch"] for r in seen] == [1, 2, 3] and len(net.history) == 3
    with pytest.raises(xai.ValidationError, match="callbacks"):
        net.fit(tr.X, tr.y, epochs=1, progress=False, callbacks=[3])


def test_feature_transforms_feed_the_network():
    """With x1², x2², x1·x2 and sin inputs, the surfaces are the network on those features."""
    tr = playground("circle", 100, seed=0)
    features = ("x1", "x2", "x1^2", "x2^2", "x1*x2", "sin(x1)", "sin(x2)")
    net = xai.nn.mlp(7, hidden=(3,), dtype="float64")
    view = xai.playground_view(net, tr, features=features, resolution=9)
    p = np.array([[1.5, -2.0]])
    F = np.array([[1.5, -2.0, 2.25, 4.0, -3.0, np.sin(1.5), np.sin(-2.0)]])
    np.testing.assert_allclose(view.inputs_of(p), F, rtol=1e-12)
    assert view.score(p)[0] == pytest.approx(net.predict(F)[0, 1])
    np.testing.assert_allclose(view.inputs[2], view.inputs[0] ** 2)
    with pytest.raises(xai.ShapeError, match="features"):
        xai.playground_view(net, tr)
    with pytest.raises(xai.UnknownNameError, match="x3"):
        xai.playground_view(net, tr, features=("x3",))


def test_clicked_point_is_explained_by_ig_with_completeness(trained):
    """A click sets the point; the IG attributions sum to f(x) - f(0) of the explained class."""
    net, view, _, _ = trained
    live = view.widget()
    live.plot.point = [2.0, -1.5]
    e = live.explanation
    c = int(e.target[0])
    gap = net.predict(np.array([[2.0, -1.5]]))[0, c] - net.predict(np.zeros((1, 2)))[0, c]
    assert e.values.sum() == pytest.approx(gap, abs=2e-2)
    assert "Neuron activations" in live.details.value
    np.testing.assert_allclose(live.neurons_at_point[0], _forward(net, [[2.0, -1.5]])[0][0])
    live.method.value = "shap"
    assert live.explanation.method == "shap" and e.method == "ig"
    regions = view.regions()
    assert regions.shape == (17, 17) and set(np.unique(regions)) <= {0, 1, 2}


def _app(**knobs):
    return xai.playground_app(
        lambda noise: playground("gauss", 120, noise=noise, seed=0), resolution=9, **knobs
    )


def _weights(net):
    return [np.array(w) for w in net.get_weights()]


def _assert_same_weights(a, b):
    for wa, wb in zip(_weights(a), _weights(b), strict=True):
        np.testing.assert_array_equal(wa, wb)


def test_the_app_opens_at_epoch_0_with_the_seeded_initial_weights():
    """As the Playground: nothing is trained until play or step; the losses start at epoch 0."""
    app = _app()
    assert app.epoch == 0 and [r["epoch"] for r in app.view.losses] == [0]
    _assert_same_weights(app.net, xai.nn.mlp(2, hidden=(4, 2), n_outputs=2, seed=0))
    assert "Epoch 0" in app.status.value and "epoch 0" in app.view._repr_html_()


def test_epochs_do_not_depend_on_how_they_were_run():
    """step(5), step(3) + step(2) and play() to epoch 5 give the same network, epoch by epoch."""
    a, b, c = _app(), _app(), _app(epochs=5)
    a.step(5)
    b.step(3)
    b.step(2)
    c.play()
    c.wait(60)
    assert not c.playing and not c.buttons["play"].value
    assert a.epoch == b.epoch == c.epoch == 5
    _assert_same_weights(a.net, b.net)
    _assert_same_weights(a.net, c.net)
    assert [r["epoch"] for r in c.view.losses] == list(range(6))
    assert [r["train"] for r in a.view.losses] == [r["train"] for r in c.view.losses]
    assert a.view.losses[-1]["train"] < a.view.losses[0]["train"]
    a.reset()
    assert a.epoch == 0
    _assert_same_weights(a.net, b.__class__(a.data, resolution=9).net)


def test_play_finishing_before_its_button_shows_it_stops_once(monkeypatch):
    """Training that ends before play() returns (here the thread runs at start()) leaves the
    button off and the app stopped: the app's own button moves are not clicks."""
    import xai_playground.app as app_module

    class AtOnce(app_module.threading.Thread):
        def start(self):
            self.run()

    app = _app(epochs=2)
    monkeypatch.setattr(app_module.threading, "Thread", AtOnce)
    app.play()
    assert app.epoch == 2 and not app.playing and not app.buttons["play"].value
    app.buttons["play"].value = True  # a click: plays again, already at the last epoch
    assert app.epoch == 2 and not app.buttons["play"].value


def test_a_live_knob_acts_on_the_running_network():
    """The learning rate changes at the next epoch; the weights and the epoch count carry on."""
    app = _app()
    app.step(2)
    before = app.net.get_weights()
    app.controls["learning_rate"].value = 0.3
    assert app.epoch == 2 and len(app.view.losses) == 3
    for wa, wb in zip(before, app.net.get_weights(), strict=True):
        np.testing.assert_array_equal(wa, wb)
    # the oracle: the same weights trained one epoch by net.fit with the new rate
    oracle = xai.nn.mlp(2, hidden=(4, 2), n_outputs=2, seed=0)
    oracle.set_weights(before)
    X, y = app.view.X.astype(np.float32), app.view.y.astype(np.int64)
    oracle.fit(X, y, learning_rate=0.3, epochs=1, seed=epoch_seed(0, 3), progress=False)
    app.step()
    assert app.epoch == 3
    for wa, wb in zip(oracle.get_weights(), app.net.get_weights(), strict=True):
        np.testing.assert_allclose(wa, wb, rtol=0, atol=1e-7)


def test_a_structural_knob_restarts_and_keeps_playing():
    """Changing the activation while playing restarts at epoch 0 and plays on, deterministically."""
    app = _app(epochs=5000)
    app.widget()
    app.play()
    app.controls["activation"].value = "relu"  # a restart: epoch 0, still playing
    assert app.playing and isinstance(app.net.layers[1], xai.nn.ReLU)
    for _ in range(6000):  # until a few epochs of the new network have run (not a timing test)
        if app.epoch >= 3:
            break
        time.sleep(0.01)
    app.pause()
    k = app.epoch
    assert k >= 3 and not app.playing
    ref = _app(activation="relu")
    ref.step(k)
    _assert_same_weights(app.net, ref.net)
    assert [r["epoch"] for r in app.view.losses] == list(range(k + 1))
    assert app._widget.view is app.view and f"epoch {k}" in app._widget.plot.html


def test_pause_stops_training_where_it_is():
    """Pause joins the running epoch; the counter and the loss history agree."""
    app = _app(epochs=5000)
    app.buttons["play"].value = True  # what clicking play does
    assert app.playing
    app.buttons["play"].value = False
    assert not app.playing and 0 <= app.epoch < 5000
    assert [r["epoch"] for r in app.view.losses] == list(range(app.epoch + 1))
    with pytest.raises(xai.ValidationError, match="epochs"):
        app.step(0)


def test_the_knobs_restart_on_change():
    """Each knob that changes the network or its data restarts it from epoch 0."""
    app = _app()
    box = app.widget()
    assert box.children and isinstance(app.net.layers[1], xai.nn.Tanh)
    app.step(3)
    X_before = app.view.X.copy()
    app.controls["noise"].value = 30
    assert not np.array_equal(app.view.X, X_before) and app.epoch == 0
    app.controls["feature x1^2"].value = True
    assert app.view.features == ("x1", "x2", "x1^2") and app.net.input_shape == (3,)
    app.controls["hidden"].value = "3"
    assert [n.shape[0] for n in app.view.neurons] == [3]
    app.controls["train_percent"].value = 80
    assert len(app.view.X) == 96
    with pytest.raises(xai.ValidationError, match="knobs"):
        xai.playground_app(lambda noise: playground("xor", 20, noise=noise), speed=2)


def test_discretise_output_and_show_test_data():
    """The two display toggles redraw without retraining: two colours; rings hidden."""
    app = _app()
    app.step(3)
    weights = app.net.get_weights()
    html = app.view._repr_html_()
    app.controls["discretize"].value = True
    app.controls["show_test"].value = False
    assert app.epoch == 3
    for wa, wb in zip(weights, app.net.get_weights(), strict=True):
        np.testing.assert_array_equal(wa, wb)
    shown = app.view._repr_html_()
    assert "predicted class" in shown and "test points hidden" in shown
    assert shown.count("<circle") == len(app.view.X) < html.count("<circle")


def test_report_section_shows_the_final_state(trained):
    """The report has the network, the decision surface and the loss curves."""
    _, view, _, _ = trained
    html = xai.Report("pg", seed=0).add(view).to_html()
    assert "decision surface with train and test points" in html
    assert html.count("<image ") == 1 + 2 + 4 + 3 and "epoch 6" in html
    assert "pushes the output most" in html and html.count("neuron 3 </figcaption>") == 1
