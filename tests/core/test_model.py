"""as_model turns estimators and functions into black boxes that the runner can drive."""

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression

import xai_core as xai


def test_function_becomes_black_box():
    """A function of a batch is a prediction-only model with 2-D output."""
    model = xai.as_model(lambda X: X.sum(1))
    assert model.capabilities == frozenset({"predict"})
    np.testing.assert_allclose(model.predict(np.ones((2, 3))), [[3.0], [3.0]])


def test_classifier_uses_predict_proba_and_classes():
    """A classifier's probabilities are the outputs, named by its classes."""
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    clf = LogisticRegression().fit(X, ["no", "no", "yes", "yes"])
    model = xai.as_model(clf)
    assert model.output_names == ("no", "yes") and model.input_shape == (1,)
    np.testing.assert_allclose(model.predict(X), clf.predict_proba(X))


def test_regressor_uses_predict_and_frame_columns():
    """A regressor fitted on a DataFrame is called with a DataFrame of the same columns."""
    X = pd.DataFrame({"a": [0.0, 1.0, 2.0], "b": [1.0, 0.0, 1.0]})
    reg = LinearRegression().fit(X, [1.0, 2.0, 3.0])
    model = xai.as_model(reg)
    np.testing.assert_allclose(model.predict(X.to_numpy())[:, 0], reg.predict(X))
    assert model.feature_names == ("a", "b")


def test_unfitted_estimator_and_non_callable_are_rejected():
    """An unfitted estimator and a non-callable get clear errors."""
    with pytest.raises(xai.ValidationError, match="LogisticRegression is not fitted"):
        xai.as_model(LogisticRegression())
    with pytest.raises(xai.CapabilityError, match="got int"):
        xai.as_model(3)


def test_bad_model_output_is_reported():
    """A function returning the wrong number of rows or changing width is an error naming it."""
    with pytest.raises(xai.ShapeError, match="for 2 samples; got shape"):
        xai.ModelRunner(lambda X: np.ones(5)).predict(np.ones((2, 1)))
    model = xai.as_model(lambda X: np.ones((len(X), 1 + int(X[0, 0]))))
    model.predict(np.zeros((1, 1)))
    with pytest.raises(xai.ShapeError, match="earlier calls returned 1"):
        model.predict(np.ones((1, 1)))


def test_runner_chunks_black_box_calls():
    """The runner calls the model in chunks of batch_size and concatenates in order."""
    sizes = []

    def f(X):
        sizes.append(len(X))
        return X[:, :1] * 2

    out = xai.ModelRunner(f, batch_size=4).predict(np.arange(10.0)[:, None])
    assert sizes == [4, 4, 2]
    np.testing.assert_allclose(out[:, 0], np.arange(10.0) * 2)


def test_runner_gradient_on_black_box_says_why():
    """Asking a black box for gradients names the problem and the way out."""
    with pytest.raises(xai.CapabilityError, match="black box.*xai.nn.Sequential"):
        xai.ModelRunner(lambda X: X).gradient(np.ones((1, 2)), 0)
