"""Every registered explainer and backend keeps the contract in xai_core.testing."""

import numpy as np
import pytest

import xai_core as xai
from xai_core.testing import LinearModel, check_backend, check_explainer

#: Options that keep each first-party explainer's contract check fast.
FAST_OPTIONS = {
    "shap": {"background": np.zeros((3, 4))},
    "lime": {"n_samples": 300, "background": np.random.default_rng(0).normal(size=(50, 4))},
    "ig": {"steps": 8},
}


@pytest.mark.parametrize("name", xai.list_explainers())
def test_registered_explainer_keeps_contract(name):
    """check_explainer passes for each registered explainer."""
    cls = xai.get_registry().explainer(name)
    valid = set(cls.option_names())
    options = {k: v for k, v in FAST_OPTIONS.get(name, {}).items() if k in valid}
    check_explainer(cls, options=options)


@pytest.mark.parametrize("name", xai.list_backends())
def test_registered_backend_keeps_contract(name):
    """check_backend passes for each registered backend with its default settings."""
    check_backend(xai.get_backend(name))


def test_check_backend_catches_a_wrong_matmul():
    """A backend whose matmul is off fails the contract, naming the problem."""
    from xai_core.backends.cpu import CPUBackend

    class Sloppy(CPUBackend):
        name = "sloppy"

        def matmul(self, a, b):
            return super().matmul(a, b) * 1.01

    with pytest.raises(xai.errors.ContractError, match="differs from float64"):
        check_backend(Sloppy())


def test_check_explainer_catches_nondeterminism():
    """An explainer whose values change between runs fails the contract."""

    class Noisy(xai.Explainer):
        name = "noisy"

        def explain(self, runner, X, target):
            return xai.Explanation(
                values=np.random.default_rng().normal(size=X.shape),
                base_values=np.zeros(len(X)),
                target=target,
            )

    reg = xai.get_registry()
    reg.explainers["noisy"] = Noisy
    try:
        with pytest.raises(xai.errors.ContractError, match="identical values"):
            check_explainer(Noisy)
    finally:
        del reg.explainers["noisy"]


def test_linear_model_reference():
    """The reference linear model predicts X @ W + b and its gradient is W's column."""
    m = LinearModel(np.array([[1.0, 2.0], [3.0, 4.0]]), [0.5, -0.5])
    np.testing.assert_allclose(m.predict(np.array([[1.0, 1.0]])), [[4.5, 5.5]])
    np.testing.assert_allclose(
        m.gradient(np.ones((2, 2)), np.array([0, 1])), [[1.0, 3.0], [2.0, 4.0]]
    )
