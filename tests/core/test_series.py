"""The one series layout rule (xai_core.series) and the per-step explanation of series models."""

import numpy as np
import pytest

import xai_core as xai
from xai_core.series import recorded_layout, series_layout

nn = xai.nn


@pytest.mark.parametrize(
    ("shape", "order", "steps", "channels"),
    [
        ((128, 3), "tc", 128, 3),
        ((3, 128), "ct", 128, 3),
        ((5, 5), "tc", 5, 5),
        ((40,), "t", 40, 1),
    ],
    ids=["steps-first", "channels-first", "square-is-channels-last", "one-channel"],
)
def test_the_channel_axis_is_the_shorter_end(shape, order, steps, channels):
    """As for images, the small end is the channels; a tie is channels-last."""
    layout = series_layout(shape)
    assert (layout.order, layout.steps, layout.channels) == (order, steps, channels)


def test_an_explicit_order_settles_it_and_to_tc_transposes():
    """order= overrides the rule; to_tc gives (n, steps, channels) rows."""
    layout = series_layout((4, 6), order="ct")
    X = np.arange(48).reshape(2, 4, 6)
    np.testing.assert_array_equal(layout.to_tc(X), X.transpose(0, 2, 1))
    with pytest.raises(xai.ShapeError, match=r"\(n, 4, 6\)"):
        layout.to_tc(X[:, :3])
    np.testing.assert_array_equal(layout.from_tc(layout.to_tc(X)), X)  # its inverse
    for order, shape in [("tc", (6, 4)), ("t", (6,))]:
        rows = np.arange(2 * np.prod(shape)).reshape(2, *shape)
        one = series_layout(shape, order=order)
        np.testing.assert_array_equal(one.from_tc(one.to_tc(rows)), rows)
    with pytest.raises(xai.ShapeError, match=r"\(n, 6, 4\)"):
        layout.from_tc(X)
    # a network's recorded order settles samples of two axes; one axis is one channel
    assert recorded_layout((3, 8), "tc").order == "tc" and recorded_layout((8,), "tc").order == "t"
    assert recorded_layout((3, 8), None).order == "ct"


@pytest.mark.parametrize("shape", [(), (2, 3, 4)], ids=["scalar", "three-axes"])
def test_other_shapes_are_refused(shape):
    """A series sample has one or two axes."""
    with pytest.raises(xai.ShapeError, match="steps"):
        series_layout(shape)


def conv_net(layout):
    shape = (3, 20) if layout == "NCW" else (20, 3)
    return nn.Sequential(
        [
            nn.Conv1D(4, 5, padding="same", layout=layout),
            nn.ReLU(),
            nn.GlobalAveragePooling1D(layout=layout),
            nn.Dense(2),
        ],
        input_shape=shape,
        seed=1,
    )


def lstm_net():
    return nn.Sequential(
        [nn.LSTM(6, "bidirectional", output="hidden"), nn.Flatten(), nn.Dense(3)],
        input_shape=(12, 2),
        seed=2,
    )


@pytest.mark.parametrize(
    ("make", "order"),
    [(lambda: conv_net("NCW"), "ct"), (lambda: conv_net("NWC"), "tc"), (lambda: lstm_net(), "tc")],
    ids=["conv-channels-first", "conv-steps-first", "lstm"],
)
def test_explain_attributes_each_step_and_records_the_order(make, order):
    """IG on a series model gives one value per step and channel, complete, with the order."""
    net = make()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, *net.input_shape)).astype(np.float32)
    e = xai.explain(net, X, method="ig", target=0, steps=64, progress=False)
    assert e.values.shape == X.shape
    assert e.meta["series_order"] == order
    out = net.predict(X)[:, 0] - net.predict(np.zeros_like(X))[:, 0]
    np.testing.assert_allclose(e.values.reshape(3, -1).sum(1), out, rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("backend", ["cpu", "gpu", "tpu"])
def test_series_explanations_run_on_every_backend(backend):
    """The recurrent model's IG runs through ModelRunner on cpu, gpu and tpu."""
    net = lstm_net()
    X = np.random.default_rng(1).normal(size=(2, 12, 2)).astype(np.float32)
    runner = xai.ModelRunner(net, backend)
    e = xai.explain(
        runner.model, X, method="ig", target=1, steps=8, backend=backend, progress=False
    )
    ref = xai.explain(net, X, method="ig", target=1, steps=8, progress=False)
    tol = 5e-2 if backend == "tpu" else 1e-4
    assert np.abs(e.values - ref.values).max() <= tol * np.abs(ref.values).max()


@pytest.mark.parametrize(
    "make", [lambda: conv_net("NCW"), lambda: lstm_net()], ids=["channels-first", "steps-first"]
)
def test_series_plot_draws_one_panel_per_channel(make):
    """e.plot.series draws each channel over its steps with the attribution shaded behind."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    net = make()
    X = np.random.default_rng(2).normal(size=(2, *net.input_shape)).astype(np.float32)
    e = xai.explain(net, X, method="ig", target=0, steps=8, progress=False)
    fig = e.plot.series(1, fig=Figure())
    channels = series_layout(net.input_shape, order=e.meta["series_order"]).channels
    panels = [a for a in fig.axes if a.get_ylabel().startswith("channel")]
    assert len(panels) == channels
    steps = series_layout(net.input_shape, order=e.meta["series_order"]).steps
    line = panels[0].lines[0].get_ydata()
    np.testing.assert_allclose(
        line, series_layout(net.input_shape, order=e.meta["series_order"]).to_tc(X)[1, :, 0]
    )
    assert len(line) == steps
    shaded = panels[0].images[0].get_array()
    np.testing.assert_allclose(
        np.asarray(shaded)[0],
        series_layout(net.input_shape, order=e.meta["series_order"]).to_tc(e.values)[1, :, 0],
        rtol=1e-6,
    )
    assert e._repr_mimebundle_()  # the static PNG of a series renders too
    with pytest.raises(xai.ValidationError, match="channels"):
        e.plot.series(0, channels=[99], fig=Figure())
