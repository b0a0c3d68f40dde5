"""Huge requests: counts that cannot fit are refused up front, with the estimate, before any work.

``CASES`` is one row per entry point and size (what to call with the counting models, the
error, and words the message must hold). Every case must fail fast: the model is never
called. The suite runs under fixed limits (8 GiB, 10**9 model rows) so that it does not
depend on the machine's memory; ``test_default_limit_is_the_available_memory`` checks the
default.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pytest

import xai_core as xai
from xai_core.errors import ResourceError, ValidationError
from xai_datasets import playground

RNG = np.random.default_rng(0)
WIDE = RNG.uniform(size=(2, 40))  # 40 features: 2**40 coalitions
ROWS = RNG.uniform(size=(4, 4)).astype(np.float32)
LABELS = np.array([0, 1, 0, 1])


class Counting:
    """A black box of two outputs that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, Z: np.ndarray) -> np.ndarray:
        self.calls += 1
        s = np.asarray(Z, dtype=np.float64).sum(axis=1)
        p = 1.0 / (1.0 + np.exp(-s + 2.0))
        return np.stack([1.0 - p, p], axis=1)


@dataclass
class Models:
    """The counting models a case may use: a black box and a network on a counted runner."""

    box: Counting
    runner: xai.ModelRunner
    what_if: object
    plane: CountingNet

    def calls(self) -> int:
        return self.box.calls + int(self.runner.counters["matmuls"]) + self.plane.calls


def _net() -> xai.nn.Sequential:
    return xai.nn.Sequential([xai.nn.Dense(3), xai.nn.Tanh(), xai.nn.Dense(2)], input_shape=(4,))


class CountingNet(xai.nn.Sequential):
    """A network of the plane (two inputs) counting its passes."""

    calls = 0

    def predict(self, *args, **kwargs):
        self.calls += 1
        return super().predict(*args, **kwargs)

    def activations(self, *args, **kwargs):
        self.calls += 1
        return super().activations(*args, **kwargs)


#: name -> (call, error class, words the message holds)
CASES: dict[str, tuple[Callable[[Models], object], type[Exception], tuple[str, ...]]] = {
    "shap-exact-2**40": (
        lambda m: xai.explain(m.box, WIDE, method="shap", algorithm="exact", max_evals=2**40),
        ResourceError,
        ("'shap'", "TiB of working memory", "2**40 coalitions", "max_bytes"),
    ),
    "shap-kernel-10**12": (
        lambda m: xai.explain(m.box, WIDE, method="shap", algorithm="kernel", max_evals=10**12),
        ResourceError,
        ("'shap'", "working memory", "1,000,000,000,000 coalitions", "max_evals"),
    ),
    "shap-permutation-10**12": (
        lambda m: xai.explain(
            m.box, WIDE, method="shap", algorithm="permutation", max_evals=10**12
        ),
        ResourceError,
        ("'shap'", "model rows", "over the limit of 1e+09 model rows", "max_model_rows"),
    ),
    "shap-chunked": (
        lambda m: xai.explain(
            m.box, WIDE, method="shap", algorithm="exact", max_evals=2**40, chunk_size=1
        ),
        ResourceError,
        ("'shap'", "working memory"),
    ),
    "lime-n_samples-10**9": (
        lambda m: xai.explain(m.box, ROWS, method="lime", n_samples=10**9),
        ResourceError,
        ("'lime'", "GiB of working memory", "1,000,000,000 samples", "n_samples"),
    ),
    "lime-stability_seeds-10**6": (
        lambda m: xai.explain(m.box, ROWS, method="lime", stability_seeds=10**6),
        ResourceError,
        ("'lime'", "model rows", "1,000,001 run(s)", "stability_seeds"),
    ),
    "ig-n_baselines-10**7": (
        lambda m: xai.explain(m.runner, ROWS, method="ig", baseline="uniform", n_baselines=10**7),
        ResourceError,
        ("'ig'", "model rows", "10,000,000 baselines", "n_baselines"),
    ),
    "ig-steps-10**7": (
        lambda m: xai.explain(m.runner, ROWS[:1], method="ig", steps=10**7),
        ValidationError,
        ("steps must be an integer from 1 to 1,000,000", "got 10,000,000", "153 MiB"),
    ),
    "ig-max_steps-10**7": (
        lambda m: xai.explain(m.runner, ROWS[:1], method="ig", steps="auto", max_steps=10**7),
        ValidationError,
        ("max_steps must be an integer from 1 to 1,000,000", "got 10,000,000"),
    ),
    "smoothgrad-n_samples-10**9": (
        lambda m: xai.explain(m.runner, ROWS, method="smoothgrad", n_samples=10**9),
        ResourceError,
        ("'smoothgrad'", "working memory", "1,000,000,000 noisy copies", "n_samples"),
    ),
    "smoothgrad-over-ig": (
        lambda m: xai.explain(
            m.runner,
            ROWS,
            method="smoothgrad",
            n_samples=10**4,
            base="ig",
            base_options={"steps": 10**5},
        ),
        ResourceError,
        ("'smoothgrad'", "model rows", "through 'ig'"),
    ),
    "counterfactual-n_samples-10**9": (
        lambda m: m.what_if.counterfactual(0, n_samples=10**9),
        ResourceError,
        ("counterfactual", "working memory", "4,000,000,000 sampled edits", "n_samples"),
    ),
    "thresholds-grid-10**8": (
        lambda m: m.what_if.thresholds(0, grid=10**8),
        ResourceError,
        ("thresholds", "GiB of working memory", "100,000,000 thresholds", "grid"),
    ),
    "partial_dependence-grid-40000x40000": (
        lambda m: m.what_if.partial_dependence(
            [0, 1], grid=[np.linspace(ROWS[:, j].min(), ROWS[:, j].max(), 40_000) for j in (0, 1)]
        ),
        ResourceError,
        ("partial_dependence", "6.4e+09 model rows", "4 rows x 1,600,000,000 grid points"),
    ),
    "playground-n_samples-10**10": (
        lambda m: playground("xor", n_samples=10**10),
        ResourceError,
        ("playground", "GiB of working memory", "10,000,000,000 points", "n_samples"),
    ),
    "playground_view-resolution-10**5": (
        lambda m: xai.playground_view(m.plane, playground("xor"), resolution=10**5),
        ResourceError,
        ("playground_view", "100,000 x 100,000 grid", "resolution"),
    ),
}


@pytest.fixture
def fixed_limits() -> Iterator[None]:
    """Limits that do not depend on this machine's memory."""
    with xai.resource_limits(max_bytes=8 * 2**30, max_model_rows=10**9):
        yield


@pytest.fixture
def models() -> Models:
    """Fresh counting models; the what-if tool's own predictions at construction are not counted."""
    box = Counting()
    w = xai.what_if(box, ROWS, LABELS)
    box.calls = 0
    plane = CountingNet(
        [xai.nn.Dense(3), xai.nn.Tanh(), xai.nn.Dense(1), xai.nn.Sigmoid()], input_shape=(2,)
    )
    return Models(box=box, runner=xai.ModelRunner(_net()), what_if=w, plane=plane)


#: Ordinary requests at their defaults, which the limits must let through.
ORDINARY = {
    "shap on 100 digits": ("shap", (100, 784)),
    "lime on 100 digits": ("lime", (100, 784)),
    "ig on 100 digits": ("ig", (100, 784)),
    "smoothgrad on 100 digits": ("smoothgrad", (100, 784)),
    "kernel shap on 1,000 rows": ("shap", (1000, 10)),
}


@pytest.mark.parametrize("case", list(ORDINARY))
def test_ordinary_requests_pass_the_limits(case: str) -> None:
    """Each method's default on ordinary data fits in 2 GiB and 10**9 model rows."""
    method, shape = ORDINARY[case]
    net = xai.nn.mlp(shape[1], (32,), 10, activation="relu")
    runner = xai.ModelRunner(net)
    cls = xai.get_registry().explainer(method)
    options = xai.attribution.options.resolve_options(cls, {})
    if "seed" in cls.option_names():
        options["seed"] = 0
    X = np.random.default_rng(0).uniform(size=shape).astype(np.float32)
    cost = xai.attribution.cost.explainer_cost(cls(**options), runner, X)
    assert cost is not None and cost.model_rows > 0 and cost.peak_bytes > 0
    with xai.resource_limits(max_bytes=2 * 2**30, max_model_rows=10**9):
        xai.attribution.cost.check_cost(cost, method)
    assert runner.counters["matmuls"] == 0  # estimated without running the model


def test_ordinary_partial_dependence_passes_the_limits() -> None:
    """Partial dependence of two features at 100 x 100 points over 10,000 rows fits the limits."""
    from xai_whatif.dependence import dependence_cost

    cost = dependence_cost(10_000, 100 * 100, 30, 2)
    with xai.resource_limits(max_bytes=2 * 2**30, max_model_rows=10**9):
        xai.attribution.cost.check_cost(cost, "partial_dependence")


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_request(case: str, models: Models, fixed_limits: None) -> None:
    """Refused with the estimate in the message, and the model never called."""
    call, error, words = CASES[case]
    with pytest.raises(error) as info:
        call(models)
    message = str(info.value)
    for word in words:
        assert word in message, (word, message)
    if error is ResourceError:
        assert "refused before any work" in message
        assert info.value.estimate is not None
    assert models.calls() == 0


def test_default_limit_is_the_available_memory(models: Models) -> None:
    """Under the default limits, the estimate is compared with half the memory available."""
    assert xai.get_resource_limits() == xai.attribution.cost.Limits()
    with pytest.raises(
        ResourceError, match=r"over the memory limit of .* \(0\.5 of the .* (available|installed)"
    ):
        xai.explain(models.box, WIDE, method="shap", algorithm="exact", max_evals=2**40)
    assert models.calls() == 0


def test_a_small_request_skips_reading_the_available_memory(monkeypatch) -> None:
    """Under the default limit a request far below the free memory is let through without
    reading the available memory; a large one still reads it and is refused."""
    cost_module = xai.attribution.cost
    reads = []

    def available_memory():
        reads.append(1)
        return 1 << 30, "available"

    monkeypatch.setattr(cost_module, "available_memory", available_memory)
    cost_module.check_cost(cost_module.Cost(peak_bytes=1 << 10, model_rows=1), "a small request")
    assert reads == []
    with pytest.raises(ResourceError, match=r"0\.5 of the 1 GiB available"):
        cost_module.check_cost(cost_module.Cost(peak_bytes=1 << 62, model_rows=1), "a huge one")
    assert reads == [1]


def test_limits_can_be_lowered_and_lifted(models: Models) -> None:
    """A lowered row limit refuses a small request; lifting it lets the same request run."""
    kwargs = {"method": "lime", "n_samples": 100, "stability_seeds": 9, "background": ROWS}
    with xai.resource_limits(max_model_rows=1000):
        with pytest.raises(ResourceError, match="4,004 model rows"):
            xai.explain(models.box, ROWS, **kwargs)
        assert models.calls() == 0
    with xai.resource_limits(max_model_rows=None, max_bytes=None):
        e = xai.explain(models.box, ROWS, **kwargs)
    assert np.isfinite(e.values).all() and models.calls() > 0
    assert xai.get_resource_limits() == xai.attribution.cost.Limits()  # restored after the block


@pytest.mark.parametrize(
    "value", [0, -1, 1.5, "lots", True], ids=["zero", "negative", "float", "string", "bool"]
)
def test_bad_limits_are_refused(value: object) -> None:
    """A limit that is not a positive int (or 'auto' / None) is refused, naming the argument."""
    with pytest.raises(ValidationError, match="max_model_rows"):
        xai.set_resource_limits(max_model_rows=value)
    assert xai.get_resource_limits() == xai.attribution.cost.Limits()


class Occlusion(xai.Explainer):
    """A third party's explainer declaring its cost: one occluded copy per feature."""

    name = "occlusion-test"

    def __init__(self, copies: int = 1) -> None:
        self.copies = copies

    def estimate_cost(self, runner, X):
        n, d = len(X), int(np.prod(X.shape[1:]))
        return xai.Cost(n * d * self.copies, 8 * n * d * self.copies, f"{n} rows x {d} features")

    def explain(self, runner, X, target):
        out = runner.predict_validated(np.repeat(X, self.copies, axis=0))
        return xai.Explanation(
            values=np.zeros(X.shape), base_values=out[: len(X), 0], target=target
        )


def test_third_party_cost_is_checked(models: Models) -> None:
    """An explainer's own estimate_cost is checked by the core before any model call."""
    with xai.resource_limits(max_model_rows=100):
        with pytest.raises(ResourceError, match=r"'occlusion-test'.*\(4 rows x 4 features\)"):
            xai.explain(models.box, ROWS, method=Occlusion, copies=10)
        assert models.calls() == 0
        e = xai.explain(models.box, ROWS, method=Occlusion, copies=2)
    assert models.calls() > 0 and e.values.shape == ROWS.shape


def test_a_cost_that_is_not_a_cost_is_a_contract_error(models: Models) -> None:
    """estimate_cost returning something else than a Cost or None breaks the contract."""

    class Broken(Occlusion):
        def estimate_cost(self, runner, X):
            return 12

    with pytest.raises(xai.errors.ContractError, match="must return an xai.Cost or None; got int"):
        xai.explain(models.box, ROWS, method=Broken)
    assert models.calls() == 0
