"""explain(executor=, chunk_size=): chunks on threads, processes and Dask equal the serial run."""

import concurrent.futures as cf
import multiprocessing
import os
import time

import numpy as np
import pytest
from sklearn.neural_network import MLPClassifier

import xai_core as xai
import xai_core.attribution.executors as executors
import xai_core.attribution.parallel as parallel
from xai_datasets import load_breast_cancer

CHUNK = 8


@pytest.fixture(scope="module")
def data():
    """Standardised breast-cancer rows, a briefly trained native MLP, 24 rows to explain."""
    ds = load_breast_cancer()
    X = ((ds.X - ds.X.mean(0)) / ds.X.std(0)).astype(np.float32)
    net = xai.nn.mlp(30, (8,), 2, seed=0).fit(X, ds.y, epochs=3, progress=False)
    return {"X": X, "y": ds.y, "net": net, "rows": X[:24]}


def method_options(name, X):
    """Small, fast, seeded settings of each method (IG with a random baseline, so seeds matter)."""
    return {
        "ig": {"steps": 8, "baseline": "uniform"},
        "shap": {"algorithm": "kernel", "background": X[100:116], "max_evals": 128},
        "lime": {"n_samples": 100, "background": X[:200], "stability_seeds": 0},
    }[name]


METHODS = ["ig", "shap", "lime"]
PER_ROW_META = {"ig": "convergence_delta", "shap": "additivity_error", "lime": "score"}


def run(data, method, executor=None, chunk_size=CHUNK, model=None, **extra):
    """One chunked explanation of the 24 rows."""
    options = {**method_options(method, data["X"]), **extra}
    return xai.explain(
        data["net"] if model is None else model,
        data["rows"],
        method=method,
        executor=executor,
        chunk_size=chunk_size,
        progress=False,
        **options,
    )


def assert_identical(a, b, method):
    """Bit-identical values, base values, targets, data and per-row meta, in the same order."""
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.base_values, b.base_values)
    np.testing.assert_array_equal(a.target, b.target)
    np.testing.assert_array_equal(a.data, b.data)
    key = PER_ROW_META[method]
    np.testing.assert_array_equal(a.meta[key], b.meta[key])
    assert a.meta["seed"] == b.meta["seed"]


@pytest.fixture(scope="module")
def serial(data):
    """The serial chunked run of each method: the reference every executor must reproduce."""
    return {m: run(data, m) for m in METHODS}


class _FlakyExecutor(cf.Executor):
    """A thread pool whose submissions for which ``fail(call_number, task)`` is true raise in the worker."""

    def __init__(self, fail, delay=None):
        self.inner = cf.ThreadPoolExecutor(3)
        self.fail = fail
        self.delay = delay
        self.calls = []
        self.finished = []

    def submit(self, fn, /, *args, **kwargs):
        task = args[0]
        number = len(self.calls)
        self.calls.append((task.start, task.stop))

        def work():
            if self.delay is not None:
                time.sleep(self.delay(task))
            if self.fail(number, task):
                raise RuntimeError(f"worker lost on rows {task.start}:{task.stop}")
            result = fn(*args, **kwargs)
            self.finished.append(task.index)
            return result

        return self.inner.submit(work)

    def shutdown(self, wait=True, *, cancel_futures=False):
        self.inner.shutdown(wait=wait, cancel_futures=cancel_futures)


# -- identity across executors ------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS, ids=METHODS)
def test_threads_match_serial(data, serial, method):
    """A thread pool gives bit-identical attributions to the serial chunked run."""
    with cf.ThreadPoolExecutor(2) as pool:
        e = run(data, method, executor=pool)
    assert_identical(e, serial[method], method)
    assert e.meta["executor"] == "ThreadPoolExecutor"


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS, ids=METHODS)
def test_process_pool_matches_serial(data, serial, process_pool, method):
    """A process pool (the network sent as its saved bytes) gives bit-identical attributions."""
    assert_identical(run(data, method, executor=process_pool), serial[method], method)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_picklable_estimator_travels_to_processes(data, process_pool):
    """A fitted scikit-learn estimator (a black box) is pickled to the workers: same LIME values."""
    mlp = MLPClassifier((6,), max_iter=50, random_state=0).fit(data["X"], data["y"])
    reference = run(data, "lime", model=mlp)
    assert_identical(run(data, "lime", executor=process_pool, model=mlp), reference, "lime")


@pytest.mark.slow
def test_backend_settings_travel_to_processes(data, process_pool):
    """A TPU backend with its own array size is rebuilt by name in the workers: same values, counted."""
    tpu = xai.get_backend("tpu", array=(8, 8), dataflow="os")
    kwargs = {"method": "ig", "steps": 8, "chunk_size": CHUNK, "progress": False}
    serial_tpu = xai.explain(data["net"], data["rows"], backend=tpu, **kwargs)
    pooled = xai.explain(data["net"], data["rows"], backend=tpu, executor=process_pool, **kwargs)
    cpu = xai.explain(data["net"], data["rows"], backend="cpu", **kwargs)
    np.testing.assert_array_equal(pooled.values, serial_tpu.values)
    assert pooled.backend == "tpu"
    assert not np.array_equal(pooled.values, cpu.values)  # bf16 on the TPU, not fp32
    assert all(c["folds"] > 0 for c in pooled.meta["chunk_counters"])


@pytest.mark.slow
def test_processes_shortcut_matches_serial(data, serial):
    """executor="processes" (a pool over all cores) matches serial."""
    e = run(data, "ig", executor="processes")
    assert_identical(e, serial["ig"], "ig")
    assert e.meta["executor"].startswith("processes")


@pytest.mark.slow
def test_processes_pool_lives_across_calls(data, serial):
    """The second call runs on the workers the first started; after shutdown_process_pool
    a call starts new ones, and every call equals the serial run."""
    run(data, "ig", executor="processes")
    pool = executors.process_pool()
    workers = set(pool._processes)  # the pids: the same processes, not a new pool with an old name
    e = run(data, "ig", executor="processes")
    assert executors.process_pool() is pool and set(pool._processes) == workers
    assert_identical(e, serial["ig"], "ig")
    executors.shutdown_process_pool()
    again = run(data, "ig", executor="processes")
    assert executors.process_pool() is not pool
    assert_identical(again, serial["ig"], "ig")


def test_a_worker_builds_a_model_once_per_content(data):
    """A network's saved bytes are built once per process (by digest): the same object for
    the next chunk, a new one when the weights differ."""
    from xai_core.attribution.transport import model_spec

    net = data["net"]
    first = model_spec(net, shared=False)
    built = first.build()
    assert model_spec(net, shared=False).build() is built
    np.testing.assert_array_equal(built.predict(data["rows"]), net.predict(data["rows"]))
    other = xai.nn.mlp(30, (8,), 2, seed=1)
    assert model_spec(other, shared=False).build() is not built


@pytest.mark.slow
def test_dask_cluster_matches_serial(data, serial):
    """A two-worker Dask LocalCluster gives bit-identical SHAP, LIME and IG attributions.

    Dask workers run with one BLAS thread (they set OMP_NUM_THREADS=1); explain() pins the
    BLAS to one thread everywhere, so the caller's process computes as the workers do.
    """
    distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")
    with (
        distributed.LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            dashboard_address=None,
            host="127.0.0.1",
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        for method in METHODS:
            e = run(data, method, executor=client)
            assert_identical(e, serial[method], method)
            assert e.meta["executor"].startswith("dask")


def test_values_do_not_depend_on_the_callers_blas_threads(data):
    """explain() gives the same bits whatever BLAS threads the caller's process has, and restores them."""
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads():
        return [
            i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"
        ]

    before = blas_threads()
    default = run(data, "shap", chunk_size=None)
    assert blas_threads() == before
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        single = run(data, "shap", chunk_size=None)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        double = run(data, "shap", chunk_size=None)
    np.testing.assert_array_equal(default.values, single.values)
    np.testing.assert_array_equal(default.values, double.values)
    with pytest.raises(xai.ValidationError, match="blas_threads must be an integer >= 1"):
        run(data, "shap", chunk_size=None, blas_threads=0)


# -- what chunking means ------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS, ids=METHODS)
def test_chunks_use_the_callers_seed_and_match_one_call(data, serial, method):
    """Every chunk runs with the caller's seed; the chunked result is the one-call result.

    Random draws are made per row, so they are the same in one call and in chunks; what may
    differ is the last bits of the network's float32 matrix products, whose rounding
    depends on how many rows share a product (see docs/scale.md).
    """
    e = serial[method]
    assert e.meta["chunks"] == [(0, 8), (8, 16), (16, 24)]
    assert e.meta["seed"] == 0 and e.meta["options"]["seed"] == 0
    assert "chunk_seeds" not in e.meta
    np.testing.assert_array_equal(e.data, data["rows"])
    whole = xai.explain(
        data["net"],
        data["rows"],
        method=method,
        target=e.target,
        progress=False,
        **method_options(method, data["X"]),
    )
    assert whole.meta["seed"] == 0
    np.testing.assert_allclose(e.values, whole.values, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(e.base_values, whole.base_values, rtol=1e-5, atol=1e-6)


def test_order_kept_when_chunks_finish_in_reverse(data, serial):
    """Chunks that complete last-first are still put back in row order."""

    def after_later_chunks(task):  # chunk i starts once chunks i+1.. have finished
        deadline = time.monotonic() + 30
        while len(pool.finished) < 2 - task.index and time.monotonic() < deadline:
            time.sleep(0.005)
        return 0.0

    pool = _FlakyExecutor(fail=lambda n, t: False, delay=after_later_chunks)
    e = run(data, "shap", executor=pool)
    pool.shutdown()
    assert pool.finished == [2, 1, 0]
    assert_identical(e, serial["shap"], "shap")


def test_deterministic_method_unchanged_by_chunking(data):
    """IG from a zero baseline (no randomness) gives the same values in 10-row chunks as in one call."""
    whole = xai.explain(data["net"], data["rows"], method="ig", steps=8, progress=False)
    chunked = xai.explain(
        data["net"], data["rows"], method="ig", steps=8, progress=False, chunk_size=10
    )
    assert chunked.meta["chunks"] == [(0, 10), (10, 20), (20, 24)]
    np.testing.assert_allclose(chunked.values, whole.values, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(chunked.target, whole.target)


def test_without_executor_or_chunk_size_nothing_is_chunked(data):
    """explain() without executor= and chunk_size= runs in one call, as before."""
    e = xai.explain(data["net"], data["rows"], method="ig", steps=8, progress=False)
    assert "chunks" not in e.meta and "executor" not in e.meta


def test_same_seed_same_result_other_seed_differs(data, serial):
    """A repeated seed repeats the result; another seed changes it."""
    assert_identical(run(data, "lime"), serial["lime"], "lime")
    other = run(data, "lime", seed=1)
    assert not np.array_equal(other.values, serial["lime"].values)


def test_progress_bar_counts_rows(data, capsys):
    """progress=True shows one bar over the 24 rows, not over the 3 chunks (tests/core/test_progress.py)."""
    xai.explain(data["net"], data["rows"], method="ig", steps=8, chunk_size=CHUNK, progress=True)
    err = capsys.readouterr().err
    assert "IG 24 rows:" in err and "/24" in err and "/3 " not in err


# -- failures -----------------------------------------------------------------------------


def test_failed_first_submission_is_retried(data, serial):
    """A chunk whose first attempt fails is retried once; the result equals the serial run."""
    pool = _FlakyExecutor(fail=lambda n, t: n == 0)
    e = run(data, "lime", executor=pool)
    pool.shutdown()
    # the pool finishes each task as it is submitted: the retry comes at once
    assert pool.calls == [(0, 8), (0, 8), (8, 16), (16, 24)]
    assert_identical(e, serial["lime"], "lime")


def test_chunk_that_always_fails_names_its_rows(data):
    """A chunk failing twice raises ChunkError naming rows 8..15; nothing is dropped silently."""
    pool = _FlakyExecutor(fail=lambda n, t: t.start == 8)
    with pytest.raises(xai.ChunkError, match=r"rows 8\.\.15 \(X\[8:16\]\)") as info:
        run(data, "ig", executor=pool)
    pool.shutdown()
    assert isinstance(info.value, xai.XaiError) and isinstance(info.value, RuntimeError)
    assert (info.value.start, info.value.stop) == (8, 16)
    assert pool.calls.count((8, 16)) == 2
    assert isinstance(info.value.__cause__, RuntimeError)


@pytest.mark.slow
def test_dead_worker_in_own_pool_is_replaced(data, serial, monkeypatch):
    """A worker process that dies breaks the "processes" pool; a fresh pool retries the chunks."""
    original = executors.Pool.submit
    killed = []

    def submit(self, fn, task):
        if not killed:
            killed.append(task.index)
            return self.executor.submit(os._exit, 1)
        return original(self, fn, task)

    monkeypatch.setattr(executors.Pool, "submit", submit)
    e = run(data, "ig", executor="processes")
    assert killed == [0]
    assert_identical(e, serial["ig"], "ig")


@pytest.mark.slow
def test_dead_worker_in_callers_pool_names_the_rows(data):
    """A worker that dies in the caller's pool (which cannot be replaced) gives ChunkError, not a gap."""
    context = multiprocessing.get_context(parallel.START_METHOD)
    with cf.ProcessPoolExecutor(1, mp_context=context) as pool:
        pool.submit(os._exit, 1)
        with pytest.raises(xai.ChunkError, match=r"rows \d+\.\.\d+") as info:
            run(data, "ig", executor=pool)
    assert isinstance(info.value.__cause__, cf.BrokenExecutor)


# -- what cannot travel, bad arguments ----------------------------------------------------


def test_lambda_cannot_go_to_processes_but_runs_on_threads(data):
    """An unpicklable lambda gets a clear error suggesting threads, and works on a thread pool."""
    net = data["net"]
    fn = lambda Z: net.predict(Z)  # noqa: E731 - the point: a lambda cannot be pickled
    with pytest.raises(xai.CapabilityError, match="cannot be pickled.*ThreadPoolExecutor"):
        run(data, "lime", executor="processes", model=fn)
    with cf.ThreadPoolExecutor(2) as pool:
        threaded = run(data, "lime", executor=pool, model=fn)
    assert_identical(threaded, run(data, "lime", model=fn), "lime")


def test_int8_model_runs_on_threads_and_processes(data):
    """An int8 model travels to processes as its saved form; threads and processes match serial."""
    qnet = xai.quantize(data["net"], data["X"][:64], progress=False)
    serial = run(data, "lime", model=qnet)
    assert_identical(run(data, "lime", executor="processes", model=qnet), serial, "lime")
    with cf.ThreadPoolExecutor(2) as pool:
        threaded = run(data, "lime", executor=pool, model=qnet)
    assert_identical(threaded, serial, "lime")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"executor": 4}, "executor must be a concurrent.futures.Executor.*got int"),
        ({"executor": "threads"}, "\"processes\"; got the string 'threads'"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"chunk_size": 2.5}, "chunk_size"),
    ],
    ids=["int-executor", "unknown-string", "zero-chunk", "float-chunk"],
)
def test_bad_arguments_fail_before_work(data, kwargs, match):
    """A bad executor or chunk_size is a ValidationError before the model is called."""
    calls = []

    def model(Z):
        calls.append(len(Z))
        return data["net"].predict(Z)

    with pytest.raises(xai.ValidationError, match=match):
        xai.explain(model, data["rows"], method="lime", **kwargs)
    assert calls == []


def test_compare_backends_with_executor(data):
    """compare_backends(executor=) gives the same per-backend explanations as its serial chunked run."""
    kwargs = {"backends": ("cpu", "tpu"), "steps": 8, "baseline": "uniform", "progress": False}
    serial_c = xai.compare_backends(data["net"], data["rows"], "ig", chunk_size=CHUNK, **kwargs)
    with cf.ThreadPoolExecutor(2) as pool:
        c = xai.compare_backends(
            data["net"], data["rows"], "ig", executor=pool, chunk_size=CHUNK, **kwargs
        )
    for name in ("cpu", "tpu"):
        np.testing.assert_array_equal(
            c.explanations[name].values, serial_c.explanations[name].values
        )
    assert c.explanations["tpu"].backend == "tpu"
    assert not np.array_equal(c.explanations["tpu"].values, c.explanations["cpu"].values)
    np.testing.assert_array_equal(c.summary["mean_cosine"], serial_c.summary["mean_cosine"])
    # the chunks' counters add up to the explanation's cost
    assert c.summary.loc["tpu", "explanation_cycles"] > 0
    np.testing.assert_array_equal(
        c.summary["explanation_cycles"], serial_c.summary["explanation_cycles"]
    )


def test_chunk_seeds_is_deprecated_but_still_answers():
    """The old chunk_seeds helper warns and returns what it did."""
    with pytest.warns(DeprecationWarning, match="chunk_seeds is deprecated"):
        seed, words = parallel.chunk_seeds(0, 2)
    assert seed == 0
    assert words[1] == np.random.SeedSequence([0, 1]).generate_state(1, dtype=np.uint32)[0]
