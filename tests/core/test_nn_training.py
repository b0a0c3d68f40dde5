"""Training with fit: Playground problems, MNIST against scikit-learn, losses, knobs and errors."""

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_limits

import xai_core as xai
from xai_core.backends.cpu import CPUBackend

nn = xai.nn


def two_blobs(n=200, seed=0):
    """Two Gaussian blobs in 2-D, labels 0/1, linearly separable."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = rng.normal(size=(n, 2)) * 0.5 + np.where(y[:, None] == 1, 2.0, -2.0)
    return X.astype(np.float32), y


# -- the Playground --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("problem", "threshold"),
    [
        ("circle", 0.95),
        ("xor", 0.95),
        ("gauss", 0.95),
        ("spiral", 0.55),
        ("reg-plane", 0.95),
        ("reg-gauss", 0.4),
    ],
    ids=["circle", "xor", "gauss", "spiral", "reg-plane", "reg-gauss"],
)
def test_playground_default_network_learns_the_six_problems(problem, threshold):
    """The Playground's default net separates circle, XOR, Gauss; beats chance on spiral; fits planes."""
    xai_datasets = pytest.importorskip("xai_datasets")
    ds = xai_datasets.playground(problem, n_samples=500, noise=0, seed=0)
    regression = problem.startswith("reg")
    X_tr, y_tr, X_te, y_te = ds.X[:250], ds.y[:250], ds.X[250:], ds.y[250:]
    net = nn.mlp(
        2,
        (4, 2),
        1 if regression else 2,
        activation="tanh",
        output="linear" if regression else "softmax",
    )
    net.fit(
        X_tr,
        y_tr,
        problem="regression" if regression else "classification",
        learning_rate=0.03,
        batch_size=10,
        epochs=200,
        progress=False,
    )
    assert net.score(X_te, y_te) >= threshold  # accuracy, or R^2 for regression
    assert net.history["loss"].iloc[-1] < net.history["loss"].iloc[0]


# -- MNIST against scikit-learn -----------------------------------------------------------


MNIST_SAMPLE = (
    Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "mnist-sample"
).resolve()


@pytest.fixture(scope="module")
def mnist():
    """The 8,000 / 2,000 MNIST sample beside the repository, and scikit-learn's MLP on it."""
    if not MNIST_SAMPLE.is_dir():
        pytest.skip(
            f"MNIST sample not found at {MNIST_SAMPLE} (only present beside the project's checkout)"
        )
    shared = MNIST_SAMPLE
    xai_datasets = pytest.importorskip("xai_datasets")
    train = xai_datasets.load_mnist("train", path=shared)
    test = xai_datasets.load_mnist("test", path=shared)
    from sklearn.neural_network import MLPClassifier

    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning: a fixed epoch budget on purpose
        sk = MLPClassifier(hidden_layer_sizes=(64,), max_iter=30, random_state=0).fit(
            train.X, train.y
        )
    return train, test, sk.score(test.X, test.y)


@pytest.mark.slow
def test_mnist_mlp_matches_sklearn_within_one_point(mnist):
    """An MLP with sklearn's hidden sizes and optimiser settings reaches its test accuracy to 1 point."""
    train, test, sk_acc = mnist
    net = nn.mlp(784, (64,), 10, activation="relu")
    with threadpool_limits(1):
        net.fit(
            train.X,
            train.y,
            optimizer="adam",
            learning_rate=1e-3,
            batch_size=200,
            epochs=30,
            progress=False,
        )
    acc = net.score(test.X, test.y)
    assert sk_acc > 0.9
    assert acc >= sk_acc - 0.01, (acc, sk_acc)


@pytest.mark.slow
def test_mnist_small_cnn_beats_sklearn_mlp(mnist):
    """A two-convolution CNN trained for 3 epochs beats sklearn's MLP on held-out digits."""
    train, test, sk_acc = mnist
    cnn = nn.cnn()
    with threadpool_limits(1):
        cnn.fit(
            train.X,
            train.y,
            optimizer="adam",
            learning_rate=3e-3,
            batch_size=32,
            epochs=3,
            progress=False,
        )
    acc = cnn.score(test.X, test.y)
    assert acc > sk_acc, (acc, sk_acc)


# -- losses ------------------------------------------------------------------------------


def central_difference(f, z, eps=1e-6):
    """Gradient of the scalar f at z by central differences, one coordinate at a time."""
    g = np.zeros_like(z)
    for idx in np.ndindex(z.shape):
        old = z[idx]
        z[idx] = old + eps
        up = f(z)
        z[idx] = old - eps
        down = f(z)
        z[idx] = old
        g[idx] = (up - down) / (2 * eps)
    return g


@pytest.mark.parametrize(
    "loss", ["softmax", "sigmoid", "mse"], ids=["softmax-ce", "sigmoid-ce", "half-mse"]
)
def test_fused_losses_match_closed_forms_and_finite_differences(loss):
    """Each loss equals its closed form and its gradient equals central differences (float64)."""
    be = CPUBackend(dtype="float64")
    rng = np.random.default_rng(0)
    if loss == "softmax":
        z, y = rng.normal(size=(5, 4)) * 3, rng.integers(0, 4, 5)
        fn = nn.softmax_cross_entropy
        p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
        expected = -np.mean(np.log(p[np.arange(5), y]))
    elif loss == "sigmoid":
        z, y = rng.normal(size=(5, 1)) * 3, rng.integers(0, 2, 5).astype(float)
        fn = nn.sigmoid_cross_entropy
        p = 1 / (1 + np.exp(-z[:, 0]))
        expected = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
    else:
        z, y = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
        fn = nn.half_mean_squared_error
        expected = 0.5 * np.mean((z - y) ** 2)
    value, grad, _ = fn(z, y, be)
    assert value == pytest.approx(expected, rel=1e-12)
    fd = central_difference(lambda v: fn(v, y, be)[0], z.copy())
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-10)


def test_softmax_cross_entropy_is_stable_for_huge_logits():
    """Logits of ±1e4 give a finite loss and gradient in float32 (the fused form never takes log(0))."""
    be = CPUBackend()
    z = np.array([[1e4, -1e4], [-1e4, 1e4]], dtype=np.float32)
    with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
        value, grad, _ = nn.softmax_cross_entropy(z, np.array([1, 1]), be)
    assert np.isfinite(value) and value == pytest.approx(1e4, rel=1e-6)
    assert np.isfinite(grad).all()


# -- the knobs ---------------------------------------------------------------------------


def test_fit_runs_every_matmul_on_the_backend():
    """One epoch of training does exactly the forward, weight-gradient and hidden input-gradient matmuls."""
    X, y = two_blobs(40)
    net = nn.mlp(2, (3,), 2)
    be = CPUBackend()
    net.fit(X, y, epochs=1, batch_size=8, backend=be, progress=False)
    steps = 40 // 8
    fwd = 8 * (2 * 3 + 3 * 2)
    # per step: 2 forward matmuls, 2 weight gradients, 1 input gradient (not into the data)
    assert be.counters["matmuls"] == steps * 5
    assert be.counters["macs"] == steps * (2 * fwd + 8 * 3 * 2)


def test_same_seed_same_weights_and_history():
    """Two fits from the same seeds give identical weights and history; another shuffling seed differs."""
    X, y = two_blobs()
    a = nn.mlp(2, seed=3).fit(X, y, epochs=5, seed=7, progress=False)
    b = nn.mlp(2, seed=3).fit(X, y, epochs=5, seed=7, progress=False)
    c = nn.mlp(2, seed=3).fit(X, y, epochs=5, seed=8, progress=False)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(wa, wb)
    pd.testing.assert_frame_equal(a.history, b.history)
    assert not all(np.array_equal(wa, wc) for wa, wc in zip(a.get_weights(), c.get_weights()))


def test_l1_zeroes_weights_and_l2_shrinks_them():
    """L1 drives weights to exactly zero (the Playground's rule); L2 gives a smaller norm than none."""
    X, y = two_blobs()
    kw = {"epochs": 30, "learning_rate": 0.1, "progress": False}
    plain = nn.mlp(2, (8,), seed=1).fit(X, y, **kw)
    l1 = nn.mlp(2, (8,), seed=1).fit(X, y, regularization="L1", regularization_rate=0.01, **kw)
    l2 = nn.mlp(2, (8,), seed=1).fit(X, y, regularization="l2", regularization_rate=0.01, **kw)

    def weights(net):
        return np.concatenate(
            [layer.weight.ravel() for layer in net if isinstance(layer, nn.Dense)]
        )

    assert np.count_nonzero(weights(l1) == 0) > 0 and np.count_nonzero(weights(plain) == 0) == 0
    assert np.linalg.norm(weights(l2)) < np.linalg.norm(weights(plain))
    assert all(
        np.any(layer.bias != 0) for layer in l1 if isinstance(layer, nn.Dense)
    )  # biases exempt
    assert l1.score(X, y) > 0.95 and l2.score(X, y) > 0.95


def test_early_stopping_stops_and_restores_the_best_epoch():
    """With noisy labels the validation loss turns up; fit stops after `patience` and keeps the best weights."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 5)).astype(np.float32)
    y = rng.integers(0, 2, 120)  # pure noise: a big net overfits at once
    Xv, yv = rng.normal(size=(60, 5)).astype(np.float32), rng.integers(0, 2, 60)
    net = nn.mlp(5, (64, 64), 2, activation="relu")
    net.fit(
        X,
        y,
        optimizer="adam",
        learning_rate=0.01,
        batch_size=10,
        epochs=200,
        validation_data=(Xv, yv),
        early_stopping=True,
        patience=5,
        progress=False,
    )
    h = net.history
    assert h.attrs["stopped_early"] and len(h) < 200
    best = int(h["val_loss"].idxmin())
    assert h.attrs["best_epoch"] == h["epoch"][best] and len(h) == h.attrs["best_epoch"] + 5
    val_loss, _, _ = nn.softmax_cross_entropy(net.forward(Xv, stop=-1), yv, CPUBackend())
    assert val_loss == pytest.approx(h["val_loss"][best], rel=1e-5)


def test_validation_split_and_history_columns():
    """validation_split holds out rows and the history reports loss and accuracy for both parts."""
    X, y = two_blobs(100)
    net = nn.mlp(2).fit(X, y, epochs=3, validation_split=0.2, progress=False)
    assert list(net.history.columns) == ["epoch", "loss", "accuracy", "val_loss", "val_accuracy"]
    assert net.history["epoch"].tolist() == [1, 2, 3]
    assert net.history[["accuracy", "val_accuracy"]].to_numpy().max() <= 1


def test_string_labels_with_a_sigmoid_output():
    """Binary labels of any type with one sigmoid output: classes_, predict_classes and predict_proba."""
    X, y = two_blobs()
    labels = np.where(y == 1, "yes", "no")
    net = nn.mlp(2, (4,), 1, output="sigmoid").fit(X, labels, epochs=20, progress=False)
    assert net.classes_.tolist() == ["no", "yes"]
    assert (net.predict_classes(X) == labels).mean() > 0.95
    proba = net.predict_proba(X)
    np.testing.assert_allclose(proba[:, 1], net.predict(X)[:, 0])
    np.testing.assert_allclose(proba.sum(1), 1, rtol=1e-6)


def test_regression_in_float64_and_sgd_momentum():
    """Regression of a smooth function, trained in float64 with momentum, reaches R^2 > 0.95."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(300, 1))
    y = np.sin(X[:, 0])
    net = nn.mlp(1, (16,), 1, activation="tanh", output="linear", dtype="float64")
    net.fit(
        X,
        y,
        problem="regression",
        learning_rate=0.05,
        momentum=0.9,
        batch_size=20,
        epochs=100,
        progress=False,
    )
    assert net.predict(X).dtype == np.float64
    assert net.score(X, y) > 0.95


def test_progress_bar_is_shown_and_can_be_turned_off(capsys):
    """progress=True draws a bar on stderr; progress=False prints nothing."""
    X, y = two_blobs(20)
    nn.mlp(2).fit(X, y, epochs=2, progress=False)
    assert capsys.readouterr().err == ""
    nn.mlp(2).fit(X, y, epochs=2, progress=True)
    assert "fit" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"learning_rate": 0}, xai.ValidationError, "learning_rate must be in (0, 10]"),
        ({"learning_rate": 11}, xai.ValidationError, "learning_rate must be in (0, 10]"),
        ({"regularization": "L3"}, xai.ValidationError, "None, 'L1' or 'L2'"),
        (
            {"regularization_rate": -1},
            xai.ValidationError,
            "regularization_rate must be in [0, 10]",
        ),
        ({"problem": "ranking"}, xai.UnknownNameError, "Available: classification, regression"),
        ({"optimizer": "rmsprop"}, xai.UnknownNameError, "Available: adam, sgd"),
        ({"batch_size": 0}, xai.ValidationError, "batch_size must be a positive integer"),
        ({"validation_split": 0.95}, xai.ValidationError, "validation_split must be in [0, 0.9]"),
        ({"momentum": 1.0}, xai.ValidationError, "momentum must be in [0, 1)"),
    ],
    ids=["lr0", "lr11", "reg", "rate", "problem", "optimizer", "batch", "split", "momentum"],
)
def test_bad_hyper_parameters_are_rejected_before_training(kwargs, error, words):
    """Each bad knob gets an error naming it and the accepted values, and no weight changes."""
    X, y = two_blobs(20)
    net = nn.mlp(2)
    before = net.get_weights()
    with pytest.raises(error, match=re.escape(words)):
        net.fit(X, y, progress=False, **kwargs)
    assert all(np.array_equal(a, b) for a, b in zip(before, net.get_weights()))


def test_bad_data_is_rejected():
    """Wrong y length, too many classes, a non-probability output and NaN in X get clear errors."""
    X, y = two_blobs(20)
    with pytest.raises(xai.ShapeError, match="y must have 20 rows"):
        nn.mlp(2).fit(X, y[:5], progress=False)
    with pytest.raises(xai.ValidationError, match="has 3 classes"):
        nn.mlp(2).fit(X, np.arange(20) % 3 + 5, progress=False)
    with pytest.raises(xai.ValidationError, match="needs a network ending in Softmax"):
        nn.mlp(2, output="linear").fit(X, y, progress=False)
    X[3, 1] = np.nan
    with pytest.raises(xai.ValidationError, match="NaN"):
        nn.mlp(2).fit(X, y, progress=False)


def test_unbuilt_network_is_built_by_fit():
    """A Sequential without input_shape takes it from the data at the first fit."""
    X, y = two_blobs(50)
    net = nn.Sequential([nn.Dense(4), nn.Tanh(), nn.Dense(2), nn.Softmax()])
    assert not net.built
    net.fit(X, y, epochs=2, progress=False)
    assert net.input_shape == (2,) and net.output_names == ("0", "1")


def test_fit_follows_the_seed_and_progress_rules(capsys):
    """seed=None draws a seed; progress=None shows no bar for short training; bad values are refused."""
    X = np.random.default_rng(0).normal(size=(20, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    net = nn.Sequential([nn.Dense(2), nn.Softmax()], input_shape=(3,))
    net.fit(X, y, epochs=2, seed=None)
    assert "fit" not in capsys.readouterr().err
    with pytest.raises(xai.ValidationError, match="seed"):
        net.fit(X, y, epochs=1, seed=-1)
    with pytest.raises(xai.ValidationError, match="progress"):
        net.fit(X, y, epochs=1, progress="yes")
