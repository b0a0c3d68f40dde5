"""from_sklearn: fitted MLPs become native networks with the estimator's outputs and true gradients."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier, MLPRegressor

import xai_core as xai
from xai_core.backends.cpu import CPUBackend

ACTIVATIONS = ["relu", "tanh", "logistic", "identity"]


def fitted(estimator, X, y):
    """Fit quietly: a short max_iter is enough to get non-trivial weights."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.fit(X, y)


@pytest.fixture(scope="module")
def data():
    """A 3-class problem with 6 features."""
    X, y = make_classification(200, 6, n_informative=4, n_classes=3, random_state=0)
    return X, y


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=ACTIVATIONS)
@pytest.mark.parametrize("n_classes", [2, 3], ids=["binary", "multiclass"])
def test_classifier_probabilities_are_identical(data, activation, n_classes):
    """predict equals predict_proba to 1e-6 (float64), with classes and names carried over."""
    X, y = data
    y = np.array(["cat", "dog", "emu"])[y % n_classes]
    est = fitted(
        MLPClassifier(
            hidden_layer_sizes=(5, 4), activation=activation, max_iter=50, random_state=0
        ),
        X,
        y,
    )
    net = xai.from_sklearn(est)
    assert net.dtype == np.float64 and net.input_shape == (6,)
    np.testing.assert_allclose(net.predict(X), est.predict_proba(X), atol=1e-6, rtol=0)
    np.testing.assert_array_equal(net.predict_classes(X), est.predict(X))
    assert net.output_names == tuple(est.classes_) and list(net.classes_) == list(est.classes_)
    assert isinstance(net[-1], xai.nn.Softmax) and net.n_outputs == n_classes


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=ACTIVATIONS)
@pytest.mark.parametrize("n_targets", [1, 3], ids=["single", "multi"])
def test_regressor_outputs_are_identical(activation, n_targets):
    """predict equals the regressor's predict (as columns) to 1e-6 relative."""
    X, y = make_regression(150, 5, n_targets=n_targets, random_state=1)
    est = fitted(
        MLPRegressor(hidden_layer_sizes=(6,), activation=activation, max_iter=100, random_state=0),
        X,
        y,
    )
    net = xai.from_sklearn(est)
    np.testing.assert_allclose(
        net.predict(X), est.predict(X).reshape(len(X), -1), rtol=1e-6, atol=1e-9
    )
    assert net.classes_ is None and isinstance(net[-1], xai.nn.Linear)


def test_multilabel_classifier_uses_sigmoid_outputs():
    """A multilabel MLPClassifier becomes a net with a sigmoid per label, equal to predict_proba."""
    X, _ = make_classification(100, 5, random_state=2)
    Y = np.random.default_rng(0).integers(0, 2, size=(100, 3))
    est = fitted(MLPClassifier(hidden_layer_sizes=(4,), max_iter=30, random_state=0), X, Y)
    net = xai.from_sklearn(est)
    assert isinstance(net[-1], xai.nn.Sigmoid)
    np.testing.assert_allclose(net.predict(X), est.predict_proba(X), atol=1e-6, rtol=0)


def test_float32_network_and_runner_agree_to_float32_precision(data):
    """Converted to float32 (or run on the default fp32 runner) the outputs agree to 1e-5."""
    X, y = data
    est = fitted(MLPClassifier(hidden_layer_sizes=(8,), max_iter=50, random_state=0), X, y)
    net32 = xai.from_sklearn(est, dtype="float32")
    assert net32.dtype == np.float32 and net32[0].weight.dtype == np.float32
    np.testing.assert_allclose(net32.predict(X), est.predict_proba(X), atol=1e-5)
    runner = xai.ModelRunner(xai.from_sklearn(est), backend=xai.get_backend("cpu"))
    out = runner.predict(X)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, est.predict_proba(X), atol=1e-5)


def test_float64_network_runs_in_float64_by_default(data):
    """The plain "cpu" runs a float64 network at its own precision, in a runner and in
    explain; the float32 CPU is one explicit instance away."""
    X, y = data
    est = fitted(MLPClassifier(hidden_layer_sizes=(8,), max_iter=50, random_state=0), X, y)
    net = xai.from_sklearn(est)
    assert net.dtype == np.float64
    runner = xai.ModelRunner(net)
    assert runner.backend.dtype == np.float64
    np.testing.assert_allclose(runner.predict(X), est.predict_proba(X), rtol=1e-12, atol=0)
    e64 = xai.explain(net, X[:5], method="ig", steps=16)
    e32 = xai.explain(net, X[:5], method="ig", steps=16, backend=xai.get_backend("cpu"))
    assert e64.values.dtype == np.float64
    # Completeness of the exact float64 run leaves only the quadrature's error, the float32
    # run adds its rounding: the two differ, and float64 is the closer to the float64 oracle.
    want = xai.explain(
        net, X[:5], method="ig", steps=16, backend=xai.get_backend("cpu", dtype="float64")
    )
    np.testing.assert_array_equal(e64.values, want.values)
    assert not np.array_equal(e32.values, e64.values)


def test_gradients_equal_differences_of_the_estimator(data):
    """The converted net's input gradient equals central differences of sklearn's own predict_proba."""
    X, y = data
    est = fitted(
        MLPClassifier(hidden_layer_sizes=(5,), activation="tanh", max_iter=50, random_state=0), X, y
    )
    net = xai.from_sklearn(est)
    x, target, eps = X[:4], np.array([0, 1, 2, 1]), 1e-6
    g = net.gradient(x, target, backend=CPUBackend(dtype="float64"))
    steps = np.eye(6) * eps
    up = est.predict_proba((x[:, None] + steps).reshape(-1, 6)).reshape(4, 6, 3)
    down = est.predict_proba((x[:, None] - steps).reshape(-1, 6)).reshape(4, 6, 3)
    fd = ((up - down) / (2 * eps))[np.arange(4), :, target]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)


def test_other_estimators_point_to_as_model(data):
    """Any other estimator, or a function, is refused with a pointer to xai.as_model."""
    X, y = data
    with pytest.raises(xai.CapabilityError, match=r"got LogisticRegression\. Use xai\.as_model"):
        xai.from_sklearn(LogisticRegression().fit(X, y))
    with pytest.raises(xai.CapabilityError, match="as_model"):
        xai.from_sklearn(lambda X: X)
    poisson = fitted(MLPRegressor(loss="poisson", max_iter=5), X, np.abs(X[:, 0]))
    with pytest.raises(xai.CapabilityError, match="output activation 'exp'.*as_model"):
        xai.from_sklearn(poisson)
    with pytest.raises(xai.ValidationError, match="not fitted"):
        xai.from_sklearn(MLPClassifier())
