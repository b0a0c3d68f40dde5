"""One progress bar per user call, counting what the user asked for, on every executor."""

from __future__ import annotations

import concurrent.futures as cf
import re
import threading

import numpy as np
import pytest
import tqdm.std

import xai_core as xai
from xai_core import progress
from xai_core.progress import LONG_WORK_UNITS, job_label, progress_bar
from xai_datasets import load_breast_cancer

N_ROWS = 30


class Recorder:
    """Every drawn ``tqdm`` bar (``tqdm.auto``'s class derives from ``tqdm.std.tqdm``) and its counts."""

    def __init__(self) -> None:
        self.bars: list[dict] = []

    def drawn(self) -> list[dict]:
        """The bars opened so far, and forget them."""
        out, self.bars = self.bars, []
        return out


@pytest.fixture
def bars(monkeypatch):
    """Record each enabled tqdm bar: total, unit, description, stages, counts, closed.

    Standard error is taken for a terminal (pytest captures it), so ``progress=None`` bars
    of long work are drawn as they would be for a person watching.
    """
    recorder = Recorder()
    init, update, close = tqdm.std.tqdm.__init__, tqdm.std.tqdm.update, tqdm.std.tqdm.close
    set_description = tqdm.std.tqdm.set_description
    set_postfix_str = tqdm.std.tqdm.set_postfix_str
    monkeypatch.setattr(progress, "interactive", lambda: True)

    def _init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if not self.disable:
            self._record = {
                "total": self.total,
                "unit": self.unit,
                "descs": [self.desc],
                "stages": [],
                "counts": [],
                "closed": False,
                "thread": threading.get_ident(),
            }
            recorder.bars.append(self._record)

    def _update(self, n=1):
        out = update(self, n)
        if hasattr(self, "_record"):
            self._record["counts"].append(self.n)
        return out

    def _close(self):
        if hasattr(self, "_record"):
            self._record["closed"] = True
            self._record["n"] = self.n
        return close(self)

    def _set_description(self, desc=None, refresh=True):
        if hasattr(self, "_record"):
            self._record["descs"].append(desc)
        return set_description(self, desc, refresh)

    def _set_postfix_str(self, s="", refresh=True):
        if hasattr(self, "_record"):
            self._record["stages"].append(s)
        return set_postfix_str(self, s, refresh)

    monkeypatch.setattr(tqdm.std.tqdm, "__init__", _init)
    monkeypatch.setattr(tqdm.std.tqdm, "set_postfix_str", _set_postfix_str)
    monkeypatch.setattr(tqdm.std.tqdm, "update", _update)
    monkeypatch.setattr(tqdm.std.tqdm, "close", _close)
    monkeypatch.setattr(tqdm.std.tqdm, "set_description", _set_description)
    return recorder


def assert_one_finished_bar(recorder, total, unit="row"):
    """Exactly one bar was drawn, over ``total`` units, closed at ``n == total``; it is returned."""
    drawn = recorder.drawn()
    assert len(drawn) == 1, [(b["descs"], b["total"], b["unit"]) for b in drawn]
    bar = drawn[0]
    assert (bar["total"], bar["unit"]) == (total, unit)
    assert bar["closed"] and bar["n"] == total
    assert bar["counts"] == sorted(bar["counts"]) and bar["counts"][-1] == total
    assert bar["thread"] == threading.get_ident()  # drawn in the caller's thread
    return bar


@pytest.fixture(scope="module")
def data():
    """Standardised breast-cancer rows and a briefly trained native MLP."""
    ds = load_breast_cancer()
    X = ((ds.X - ds.X.mean(0)) / ds.X.std(0)).astype(np.float32)
    net = xai.nn.mlp(30, (8,), 2, seed=0).fit(X, ds.y, epochs=2, progress=False)
    return {"X": X, "rows": X[:N_ROWS], "net": net}


FAST = {
    "ig": {"steps": 8},
    "lime": {"n_samples": 60, "stability_seeds": 2},
    "shap": {"algorithm": "kernel", "max_evals": 64},
}


def options(method, data):
    """Small settings of each method; LIME and SHAP get a background."""
    extra = {"background": data["X"][100:120]} if method in ("lime", "shap") else {}
    return {**FAST[method], **extra}


# -- the mechanism ------------------------------------------------------------------------


def test_a_part_maps_the_inner_units_onto_the_outer_ones(bars):
    """An inner bar of 8 units run in a part of 4 rows moves the outer bar by half a row a unit."""
    with progress_bar(4, progress=True, desc="job", unit="row") as bar:
        with bar.part(4):
            with progress_bar(8, progress=True, desc="inner", unit="batch") as inner:
                for _ in range(8):
                    inner.update(1)
                    with progress_bar(5, progress=True, desc="deeper", unit="it") as deeper:
                        deeper.update(5)  # inside a loop counting its own units: silent
                    assert deeper.silent and bar.done == inner.done / 2
    record = assert_one_finished_bar(bars, 4)
    assert record["counts"] == [1, 2, 3, 4]


def test_bars_outside_a_part_are_silent_and_parts_complete_on_exit(bars):
    """The owner counts its own units; a part advances by its size even when nothing inside counts."""
    with progress_bar(10, progress=True, desc="job", unit="row") as bar:
        with progress_bar(100, progress=True, desc="stray", unit="it") as stray:
            stray.update(100)
        assert stray.silent and bar.done == 0
        bar.update(3)
        with bar.part(7):
            pass
    assert_one_finished_bar(bars, 10)


def test_a_failed_part_does_not_advance(bars):
    """After an error inside a part the bar stays where the work got to."""
    with pytest.raises(RuntimeError), progress_bar(4, progress=True, desc="job") as bar:
        bar.update(1)
        with bar.part(3):
            raise RuntimeError("the work failed")
    (record,) = bars.drawn()
    assert record["closed"] and record["n"] == 1
    with progress_bar(2, progress=True, desc="next") as bar:  # the next call starts afresh
        assert bar.root is bar


def test_progress_none_shows_the_job_bar_only_when_work_is_long(bars):
    """None: hidden for short work; shown when the job, or a bar that joins it, is long; False hides all."""
    with progress_bar(3, progress=None, desc="short") as bar:
        bar.update(3)
    assert bars.drawn() == []
    with progress_bar(LONG_WORK_UNITS, progress=None, desc="long") as bar:
        bar.update(LONG_WORK_UNITS)
    assert_one_finished_bar(bars, LONG_WORK_UNITS, unit="it")
    for outer, shown in ((None, True), (False, False)):
        with progress_bar(3, progress=outer, desc="job", long=False) as bar, bar.part(3):
            with progress_bar(50, progress=None, desc="inner") as inner:  # 50 units: long
                inner.update(50)
        assert len(bars.drawn()) == int(shown), outer


def test_no_bar_where_nobody_watches_unless_asked(bars, monkeypatch):
    """Not a terminal or a notebook: progress=None draws nothing, even for long work; True still draws."""
    monkeypatch.setattr(progress, "interactive", lambda: False)
    with progress_bar(50, progress=None, desc="long") as bar:
        bar.update(50)
    with progress_bar(3, progress=None, desc="job", long=False) as bar, bar.part(3):
        with progress_bar(50, progress=None, desc="inner") as inner:
            inner.update(50)
    assert bars.drawn() == []
    with progress_bar(3, progress=None, desc="job", long=False) as bar, bar.part(3):
        with progress_bar(50, progress=True, desc="inner") as inner:  # True, even nested
            inner.update(50)
    assert assert_one_finished_bar(bars, 3, unit="it")["descs"] == ["job"]


class _Stream:
    """A text stream that says whether it is a terminal."""

    def __init__(self, tty):
        self.tty = tty

    def isatty(self):
        return self.tty

    def write(self, text):
        return len(text)

    def flush(self):
        pass


@pytest.mark.parametrize("tty", [True, False], ids=["terminal", "pipe"])
def test_interactive_follows_stderr(monkeypatch, tty):
    """Outside a Jupyter kernel, bars can be watched exactly when stderr is a terminal."""
    import sys

    monkeypatch.setitem(sys.modules, "IPython", None)  # no kernel, whatever imported it
    monkeypatch.setattr(sys, "stderr", _Stream(tty))
    assert progress.interactive() is tty


def test_a_jupyter_kernel_is_interactive(monkeypatch):
    """In a kernel (IPython's shell has a ``kernel``) bars are drawn although stderr is no terminal."""
    import sys
    import types

    shell = types.SimpleNamespace(kernel=object())
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    monkeypatch.setattr(sys, "stderr", _Stream(False))
    assert progress.interactive() is True
    shell.kernel = None  # a terminal IPython whose output is piped
    assert progress.interactive() is False


@pytest.mark.parametrize(
    ("method", "n", "label"),
    [("ig", 40, "IG 40 rows"), ("shap", 1, "SHAP 1 row"), ("saliency", 3, "saliency 3 rows"),
     ("gxi_test", 2, "gxi_test 2 rows")],
    ids=["acronym", "one", "word", "underscore"],
)  # fmt: skip
def test_job_labels_say_the_method_and_the_count(method, n, label):
    """A job's bar is labelled by the method and the rows the user asked for."""
    assert job_label(method, n) == label


def _worker_bar_is_a_job():
    with progress_bar(5, progress=False, desc="worker") as bar:
        return bar.root is bar


def test_a_bar_in_another_thread_is_its_own_job(bars):
    """A pool's worker thread does not join the caller's bar (workers get progress=False)."""
    with progress_bar(2, progress=True, desc="job", unit="row") as bar, bar.part(2):
        with cf.ThreadPoolExecutor(1) as pool:
            assert pool.submit(_worker_bar_is_a_job).result()
    assert_one_finished_bar(bars, 2)


# -- explain on every executor --------------------------------------------------------------


class ReversedExecutor(cf.Executor):
    """Runs the submitted chunks last first, once all are in: results arrive out of order."""

    def __init__(self, n_tasks):
        self.n_tasks = n_tasks
        self.waiting = []

    def submit(self, fn, /, *args, **kwargs):
        future = cf.Future()
        self.waiting.append((future, fn, args))
        if len(self.waiting) == self.n_tasks:
            for fut, f, a in reversed(self.waiting):
                fut.set_result(f(*a))
        return future


@pytest.mark.parametrize("method", ["ig", "lime", "shap"])
@pytest.mark.parametrize("chunk_size", [None, 1, 7, N_ROWS])
def test_serial_explain_has_one_bar_over_the_rows(data, bars, method, chunk_size):
    """One call, or chunks of any size in this thread: one bar over the 30 rows, finished."""
    e = xai.explain(
        data["net"], data["rows"], method=method, chunk_size=chunk_size, progress=True,
        **options(method, data),
    )  # fmt: skip
    assert e.values.shape[0] == N_ROWS
    bar = assert_one_finished_bar(bars, N_ROWS)
    assert bar["descs"] == [job_label(method, N_ROWS)]  # "IG 30 rows", never changed
    if chunk_size is not None:  # advanced chunk by chunk
        assert bar["counts"] == list(range(chunk_size, N_ROWS, chunk_size)) + [N_ROWS]


@pytest.mark.parametrize("chunk_size", [1, 7, 16])
def test_thread_pool_explain_has_one_bar_over_the_rows(data, bars, chunk_size):
    """A thread pool: one bar, in the caller's thread, over the rows; the workers draw none."""
    with cf.ThreadPoolExecutor(2) as pool:
        xai.explain(
            data["net"], data["rows"], method="lime", executor=pool, chunk_size=chunk_size,
            progress=True, **options("lime", data),
        )  # fmt: skip
    bar = assert_one_finished_bar(bars, N_ROWS)
    assert len(bar["counts"]) <= -(-N_ROWS // chunk_size)


def test_chunks_arriving_out_of_order_advance_the_bar_by_their_rows(data, bars):
    """Chunks completing last first: the bar moves by each chunk's rows (7, 7, 7, 7 and 2)."""
    xai.explain(
        data["net"], data["rows"], method="ig", executor=ReversedExecutor(5), chunk_size=7,
        progress=True, **options("ig", data),
    )  # fmt: skip
    counts = assert_one_finished_bar(bars, N_ROWS)["counts"]
    assert sorted(np.diff([0, *counts]).tolist()) == [2, 7, 7, 7, 7]


@pytest.mark.slow
@pytest.mark.parametrize("chunk_size", [4, 16])
def test_process_pool_explain_has_one_bar_in_the_caller(
    data, bars, capfd, process_pool, chunk_size
):
    """A process pool: one bar in the caller's process over the rows; the workers print nothing."""
    xai.explain(
        data["net"], data["rows"], method="ig", executor=process_pool, chunk_size=chunk_size,
        progress=True, **options("ig", data),
    )  # fmt: skip
    assert_one_finished_bar(bars, N_ROWS)
    err = capfd.readouterr().err
    assert err.count("IG 30 rows:") >= 1 and "/30" in err and "batch" not in err


@pytest.mark.slow
def test_dask_explain_has_one_bar_in_the_caller(data, bars):
    """A Dask cluster: one bar in the caller over the rows, advanced as the chunks come back."""
    distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")
    with (
        distributed.LocalCluster(
            n_workers=1, processes=False, threads_per_worker=2, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        xai.explain(
            data["net"], data["rows"], method="ig", executor=client, chunk_size=8,
            progress=True, **options("ig", data),
        )  # fmt: skip
    counts = assert_one_finished_bar(bars, N_ROWS)["counts"]
    assert sorted(np.diff([0, *counts]).tolist()) == [6, 8, 8, 8]


def test_four_images_count_four(bars):
    """IG on 4 images in 16 backward passes: one bar over 4 rows, moved as the passes complete."""
    net = xai.nn.cnn((1, 8, 8), 3, channels=(2,), seed=0)
    images = np.random.default_rng(0).random((4, 64)).astype(np.float32)  # flat 8 x 8 images
    xai.explain(net, images, method="ig", steps=8, internal_batch_size=2, progress=None)
    record = assert_one_finished_bar(bars, 4)
    assert record["counts"] == [1, 2, 3, 4]


def test_progress_false_opens_no_bar(data, bars):
    """progress=False: no bar from explain (any executor), the comparisons, or fit."""
    rows = data["rows"]
    with cf.ThreadPoolExecutor(2) as pool:
        for executor, chunk_size in ((None, None), (None, 3), (pool, 3)):
            xai.explain(
                data["net"], rows, method="lime", executor=executor, chunk_size=chunk_size,
                progress=False, **options("lime", data),
            )  # fmt: skip
    xai.compare_methods(data["net"], rows[:5], methods=("ig", "saliency"), progress=False)
    xai.compare_backends(data["net"], rows[:5], backends=("cpu", "tpu"), steps=8, progress=False)
    xai.nn.mlp(30, (4,), 2).fit(data["X"][:50], np.arange(50) % 2, epochs=12, progress=False)
    assert bars.drawn() == []


def test_short_work_shows_no_bar_and_long_work_one(data, bars):
    """progress=None: 3 rows in one call draw nothing; 12 chunks draw one bar over the rows."""
    xai.explain(data["net"], data["rows"][:3], method="ig", steps=8)
    assert bars.drawn() == []
    xai.explain(data["net"], data["rows"][:12], method="ig", steps=8, chunk_size=1)
    assert_one_finished_bar(bars, 12)


# -- calls that run other calls ---------------------------------------------------------------


def test_compare_methods_has_one_bar_over_rows_times_methods(data, bars):
    """Each method's explain() joins the comparison's bar: 5 rows x 3 methods = 15 rows."""
    xai.compare_methods(
        data["net"], data["rows"][:5], methods=("ig", "saliency", "lime"), progress=True,
        method_options={"lime": options("lime", data)},
    )  # fmt: skip
    bar = assert_one_finished_bar(bars, 15)
    assert bar["descs"] == ["5 rows × 3 methods"]
    assert bar["stages"] == ["ig on cpu", "saliency on cpu", "lime on cpu"]


@pytest.mark.parametrize("chunk_size", [None, 2])
def test_compare_backends_has_one_bar_with_a_description_per_backend(data, bars, chunk_size):
    """5 rows on 2 backends plus 2 more seeds on the reference: one bar over 20 rows."""
    with cf.ThreadPoolExecutor(2) as pool:
        xai.compare_backends(
            data["net"], data["rows"][:5], backends=("cpu", "tpu"), steps=8, baseline="uniform",
            n_seeds=3, progress=True, executor=None if chunk_size is None else pool,
            chunk_size=chunk_size,
        )  # fmt: skip
    bar = assert_one_finished_bar(bars, 20)
    assert bar["descs"] == ["IG 5 rows × 2 backends, 3 seeds"]
    assert bar["stages"] == ["on cpu", "on tpu", "on cpu, seed 1", "on cpu, seed 2"]


def test_fit_has_one_bar_over_epochs(bars):
    """fit: one bar over the epochs asked for."""
    X = np.random.default_rng(0).normal(size=(40, 3)).astype(np.float32)
    xai.nn.mlp(3, (4,), 2).fit(X, (X[:, 0] > 0).astype(int), epochs=5, progress=True)
    assert assert_one_finished_bar(bars, 5, unit="epoch")["descs"] == ["fit 5 epochs"]


def test_what_if_partial_dependence_and_neighbours_count_rows(data, bars):
    """Partial dependence counts the rows averaged; the projector's neighbours the query rows."""
    from sklearn.linear_model import LogisticRegression

    X, y = data["X"][:200], (data["X"][:200, 0] > 0).astype(int)
    w = xai.what_if(LogisticRegression().fit(X, y), X, y, progress=False)
    w.partial_dependence(0, progress=True)
    assert_one_finished_bar(bars, 200)
    w.counterfactual(0, progress=True, max_rounds=5)
    assert_one_finished_bar(bars, 5, unit="round")
    xai.project(X).neighbors(5, progress=True)
    assert_one_finished_bar(bars, 200)


# -- the demo's log -----------------------------------------------------------------------------


@pytest.mark.slow
def test_the_demo_draws_one_labelled_bar_per_job_at_a_time(bars, monkeypatch, tmp_path):
    """On a terminal, `xai demo`'s bars never overlap, each is a job's label and ends full."""
    from xai_demo.demo import run_demo

    opened, overlaps = [], []
    init, close = tqdm.std.tqdm.__init__, tqdm.std.tqdm.close
    live = set()

    def _init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if not self.disable:
            if live:
                overlaps.append((self.desc, sorted(b.desc for b in live)))
            live.add(self)
            opened.append(self.desc)

    def _close(self):
        live.discard(self)
        return close(self)

    monkeypatch.setattr(tqdm.std.tqdm, "__init__", _init)
    monkeypatch.setattr(tqdm.std.tqdm, "close", _close)
    assert run_demo(output=str(tmp_path / "r.html"), quick=True) == 0
    assert overlaps == [] and not live
    job = re.compile(
        r"^(fit \d+ epochs?|[A-Za-z_]+ \d+ rows?( × \d+ backends?(, \d+ seeds)?)?"
        r"|\d+ rows? × \d+ methods?|partial dependence)$"
    )
    assert len(opened) >= 4 and all(job.match(d) for d in opened), opened
    for record in bars.drawn():
        assert record["closed"] and record["n"] == record["total"], record


@pytest.mark.slow
def test_the_demo_log_has_no_bars(tmp_path):
    """`xai demo` with its output captured (a log, CI) prints its lines and no bar at all."""
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "xai_core", "demo", "--quick", "-o", str(tmp_path / "r.html")],
        env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    log = done.stdout + done.stderr
    assert "Training a CNN" in log and "Report:" in log
    assert "\r" not in log and "%|" not in log and "it/s" not in log
