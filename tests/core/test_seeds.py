"""One seed gives bit-identical values in one call, in chunks of any size and on any executor."""

import concurrent.futures as cf
import multiprocessing
from typing import ClassVar

import numpy as np
import pytest

import xai_core as xai
import xai_core.attribution.parallel as parallel
from xai_core.attribution.seeds import resolve_seed, rngs_for_rows, row_seeds


class RowWise(xai.Model):
    """Two outputs computed row by row, with closed-form gradients.

    Only elementwise operations and per-row sums, so a row's outputs do not depend on the
    rows that share its batch: any difference between runs comes from the random draws.
    out0 = sum(sin(a * x)); out1 = sum(tanh(b * x + c)).
    """

    capabilities: ClassVar[frozenset[str]] = frozenset({"predict", "gradient"})
    n_outputs = 2

    def __init__(self, input_shape=(6,)):
        self.input_shape = tuple(input_shape)
        n = int(np.prod(self.input_shape))
        self.a = np.linspace(0.5, 1.5, n)
        self.b = np.linspace(-1.0, 1.0, n)
        self.c = np.linspace(0.2, -0.3, n)

    def predict(self, X, backend=None):
        flat = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
        out = np.stack(
            [np.sin(self.a * flat).sum(1), np.tanh(self.b * flat + self.c).sum(1)], axis=1
        )
        return out.astype(X.dtype)

    def gradient(self, X, target, backend=None):
        flat = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
        g0 = self.a * np.cos(self.a * flat)
        g1 = self.b * (1 - np.tanh(self.b * flat + self.c) ** 2)
        grad = np.where(np.asarray(target)[:, None] == 0, g0, g1)
        return grad.reshape(X.shape).astype(X.dtype)


RNG = np.random.default_rng(0)
ROWS = RNG.normal(size=(13, 6)).astype(np.float32)
REFERENCE = RNG.normal(size=(20, 6)).astype(np.float32)
IMAGES = RNG.uniform(size=(9, 4, 4)).astype(np.float32)

#: Every stochastic method, with small settings: (model input shape, rows, options).
CASES = {
    "shap-kernel": ((6,), ROWS, {"method": "shap", "algorithm": "kernel", "max_evals": 40}),
    "shap-permutation": (
        (6,),
        ROWS,
        {"method": "shap", "algorithm": "permutation", "max_evals": 60},
    ),
    "lime-tabular": ((6,), ROWS, {"method": "lime", "n_samples": 60, "stability_seeds": 1}),
    "lime-image": (
        (4, 4),
        IMAGES,
        {
            "method": "lime",
            "n_samples": 40,
            "segmentation": "grid",
            "segmentation_params": {"size": 2},
            "stability_seeds": 0,
        },
    ),
    "ig-uniform": ((6,), ROWS, {"method": "ig", "steps": 4, "baseline": "uniform"}),
    "ig-data": (
        (6,),
        ROWS,
        {"method": "ig", "steps": 4, "baseline": "data", "n_baselines": 3},
    ),
    "smoothgrad": ((6,), ROWS, {"method": "smoothgrad", "n_samples": 5}),
    "smoothgrad-ig": (
        (6,),
        ROWS,
        {
            "method": "smoothgrad",
            "n_samples": 3,
            "base": "ig",
            "base_options": {"steps": 4, "baseline": "uniform"},
        },
    ),
}


def run(case, **kwargs):
    """One explanation of the case's rows with seed 3; background where the method needs one."""
    shape, X, options = CASES[case]
    options = dict(options)
    if options["method"] == "shap" or (options["method"] == "lime" and X.ndim == 2):
        options["background"] = REFERENCE
    if options.get("baseline") == "data":
        options["background"] = REFERENCE
    return xai.explain(RowWise(shape), X, seed=3, progress=False, **options, **kwargs)


def assert_same(a, b):
    """Bit-identical values, base values and targets."""
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.base_values, b.base_values)
    np.testing.assert_array_equal(a.target, b.target)
    assert a.meta["seed"] == b.meta["seed"] == 3


@pytest.fixture(scope="module")
def whole():
    """Each case explained in one call: the reference."""
    return {case: run(case) for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
@pytest.mark.parametrize("chunk_size", [1, 4, 5], ids=lambda c: f"chunk{c}")
def test_any_chunk_size_gives_the_one_call_values(whole, case, chunk_size):
    """Chunks of any size, run one after the other, give the values of one call, bit for bit."""
    assert_same(run(case, chunk_size=chunk_size), whole[case])


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_threads_give_the_one_call_values(whole, case):
    """A thread pool gives the values of one call, bit for bit."""
    with cf.ThreadPoolExecutor(3) as pool:
        assert_same(run(case, executor=pool, chunk_size=3), whole[case])


@pytest.mark.slow
def test_processes_give_the_one_call_values(whole):
    """A process pool gives the values of one call for every stochastic method, bit for bit."""
    context = multiprocessing.get_context(parallel.START_METHOD)
    with cf.ProcessPoolExecutor(2, mp_context=context) as pool:
        for case in CASES:
            assert_same(run(case, executor=pool, chunk_size=4), whole[case])


class RowsSeen(xai.Explainer):
    """Attributes each row its global index and its first uniform draw, as the core reports them."""

    name = "rows_seen"

    def __init__(self, seed=0):
        self.seed = seed

    def explain(self, runner, X, target):
        rows = self.rows(len(X))
        draws = np.array([g.random() for g in self.row_rngs(len(X))])
        values = np.stack([rows, draws], axis=1).astype(np.float64)
        return xai.Explanation(values=values, base_values=np.zeros(len(X)), target=target)


@pytest.mark.parametrize("chunk_size", [None, 1, 3, 13], ids=lambda c: f"chunk{c}")
def test_explainers_see_global_row_indices(chunk_size):
    """Inside every chunk, Explainer.rows() gives the rows' indices in the caller's data."""
    model = xai.as_model(lambda X: X[:, :2] * 1.0)
    e = xai.explain(model, ROWS[:, :2], method=RowsSeen, seed=11, chunk_size=chunk_size)
    np.testing.assert_array_equal(e.values[:, 0], np.arange(len(ROWS)))
    expected = [np.random.default_rng([11, r]).random() for r in range(len(ROWS))]
    np.testing.assert_array_equal(e.values[:, 1], expected)


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_another_seed_changes_the_values(whole, case):
    """The seed is used: seed 4 gives other values than seed 3."""
    shape, X, options = CASES[case]
    options = dict(options)
    if options["method"] == "shap" or options.get("baseline") == "data":
        options["background"] = REFERENCE
    if options["method"] == "lime" and X.ndim == 2:
        options["background"] = REFERENCE
    other = xai.explain(RowWise(shape), X, seed=4, progress=False, **options)
    assert not np.array_equal(other.values, whole[case].values)


def test_seed_none_draws_and_records_a_seed_that_repeats_the_run():
    """seed=None draws a seed, recorded in meta and options; passing it back repeats the values."""
    e = xai.explain(RowWise(), ROWS, method="ig", steps=4, baseline="uniform", seed=None)
    seed = e.meta["seed"]
    assert isinstance(seed, int) and seed >= 0 and e.meta["options"]["seed"] == seed
    again = xai.explain(RowWise(), ROWS, method="ig", steps=4, baseline="uniform", seed=seed)
    np.testing.assert_array_equal(again.values, e.values)


@pytest.mark.parametrize("method", ["shap", "lime", "ig", "smoothgrad"])
def test_seed_none_is_accepted_by_every_method(method):
    """Every method with a seed takes seed=None and records the drawn seed."""
    options = {"background": REFERENCE} if method in ("shap", "lime") else {}
    e = xai.explain(RowWise(), ROWS[:3], method=method, seed=None, progress=False, **options)
    assert isinstance(e.meta["seed"], int)


def test_row_streams_are_keyed_by_seed_row_and_salt():
    """rngs_for_rows gives default_rng([seed, row, *salt]); row_seeds one 32-bit word of the same key."""
    a = rngs_for_rows(5, [0, 7])[1].random(3)
    np.testing.assert_array_equal(a, np.random.default_rng([5, 7]).random(3))
    salted = rngs_for_rows(5, [7], 1)[0].random(3)
    np.testing.assert_array_equal(salted, np.random.default_rng([5, 7, 1]).random(3))
    assert not np.array_equal(a, salted)
    seeds = row_seeds(5, [0, 1, 2])
    assert seeds.dtype == np.uint32 and len(set(seeds.tolist())) == 3
    assert seeds[1] == np.random.SeedSequence([5, 1]).generate_state(1, dtype=np.uint32)[0]
    with pytest.raises(ValueError, match="salt"):
        rngs_for_rows(5, [0], 0)
    assert resolve_seed(9) == 9 and isinstance(resolve_seed(None), int)
    with pytest.raises(xai.ValidationError, match="seed must be an integer >= 0"):
        resolve_seed(-2)


@pytest.mark.filterwarnings("ignore::xai_core.XaiWarning")
@pytest.mark.parametrize(
    "options",
    [
        {"method": "shap", "algorithm": "kernel", "max_evals": 40},
        {"method": "lime", "n_samples": 60, "stability_seeds": 0},
        {"method": "ig", "steps": 4, "baseline": "uniform"},
    ],
    ids=["shap-summary-of-X", "lime-statistics-of-X", "ig-range-of-X"],
)
def test_defaults_taken_from_X_are_taken_from_all_rows(options):
    """Without a background, chunks use the reference one call derives from all of X."""
    whole = xai.explain(RowWise(), ROWS, seed=3, progress=False, **options)
    chunked = xai.explain(RowWise(), ROWS, seed=3, progress=False, chunk_size=4, **options)
    np.testing.assert_array_equal(chunked.values, whole.values)
    np.testing.assert_array_equal(chunked.base_values, whole.base_values)


def test_the_background_warning_is_given_once_for_a_chunked_run():
    """A chunked run without a background warns once, as one call does."""
    with pytest.warns(xai.XaiWarning, match="background") as record:
        xai.explain(RowWise(), ROWS, method="lime", n_samples=30, chunk_size=4, progress=False)
    assert len([w for w in record if "background" in str(w.message)]) == 1
