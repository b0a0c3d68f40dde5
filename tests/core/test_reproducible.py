"""A seeded report under SOURCE_DATE_EPOCH is the same bytes in every fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import xai_core as xai
from xai_core.report._provenance import WALL_CLOCK_KEYS, source_date_epoch, without_wall_clock

ROOT = Path(__file__).resolve().parents[2]

# Every kind of result the report draws, each with its own seed: data, IG, LIME (which
# records its wall-clock timings), SHAP, both comparisons, what-if and the projector.
SCRIPT = """
import sys

import numpy as np

import xai_core as xai
from xai_datasets import load_breast_cancer

ds = load_breast_cancer().take(range(120))
X = ((ds.X - ds.X.mean(0)) / ds.X.std(0)).astype(np.float32)
net = xai.nn.mlp(30, hidden=(8,), n_outputs=2, seed=0, output_names=ds.class_names)
net.fit(X, ds.y, optimizer="adam", learning_rate=1e-2, epochs=3, seed=0, progress=False)
rows = X[:3]
report = xai.Report("seeded", seed=0)
report.add(ds, "data")
report.add(xai.explain(net, rows, method="ig", steps=8, feature_names=ds.feature_names))
report.add(xai.explain(net, rows, method="lime", n_samples=100, seed=0, background=X))
report.add(xai.explain(net, rows, method="shap", seed=0, background=X[:20]))
report.add(xai.compare_backends(net, rows, method="ig", steps=8, backends=("cpu", "tpu")))
report.add(xai.compare_methods(net, rows, methods=("ig", "saliency")))
w = xai.what_if(net, X[:60], ds.y[:60], feature_names=ds.feature_names, progress=False)
report.add(w.partial_dependence(ds.feature_names[0], progress=False))
report.add(xai.project(net, X[:60], layer=1, method="pca", labels=[str(v) for v in ds.y[:60]]))
report.save(sys.argv[1])
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    return {**env, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", **extra}


def _build(path: Path, **env: str) -> bytes:
    """The seeded report, built in a fresh interpreter with ``env`` added."""
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(path)],
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return path.read_bytes()


@pytest.mark.slow
def test_seeded_report_is_the_same_bytes_in_fresh_processes(tmp_path):
    """Two processes, different hash seeds, one SOURCE_DATE_EPOCH: byte-identical reports.

    Without SOURCE_DATE_EPOCH the creation time and the time each method took differ.
    """
    a = _build(tmp_path / "a.html", SOURCE_DATE_EPOCH="1700000000", PYTHONHASHSEED="1")
    b = _build(tmp_path / "b.html", SOURCE_DATE_EPOCH="1700000000", PYTHONHASHSEED="2")
    assert a == b
    page = a.decode("utf-8")
    assert "2023-11-14T22:13:20+00:00" in page  # the epoch, not the time of the run
    assert "not recorded (SOURCE_DATE_EPOCH is set)" in page and '"timings"' not in page
    c = _build(tmp_path / "c.html", PYTHONHASHSEED="1")
    assert c != a and "2023-11-14T22:13:20" not in c.decode("utf-8")
    assert '"timings"' in c.decode("utf-8")  # durations are kept when it is unset


@pytest.mark.slow
def test_demo_report_is_the_same_bytes_twice(tmp_path):
    """`xai demo --quick` twice under SOURCE_DATE_EPOCH writes the same report."""
    pages = []
    for name in ("a.html", "b.html"):
        done = subprocess.run(
            [sys.executable, "-m", "xai_core", "demo", "--quick", "-o", str(tmp_path / name)],
            env=_env(SOURCE_DATE_EPOCH="0", PYTHONHASHSEED=str(len(pages))),
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, done.stderr
        pages.append((tmp_path / name).read_bytes())
    assert pages[0] == pages[1]


def test_wall_clock_keys_go_only_under_source_date_epoch(monkeypatch):
    """Durations are dropped from what a report writes when SOURCE_DATE_EPOCH is set, and only then."""
    meta = {"seconds": 1.5, "timings": {"model": 1.0}, "steps": 8}
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    assert without_wall_clock(meta) == meta and source_date_epoch() is None
    monkeypatch.setenv("SOURCE_DATE_EPOCH", " 86400 ")
    assert without_wall_clock(meta) == {"steps": 8} and source_date_epoch() == 86400
    assert set(meta) - {"steps"} == WALL_CLOCK_KEYS
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "")  # empty counts as unset
    assert source_date_epoch() is None


@pytest.mark.parametrize(
    "value", ["1.5", "-3", "yesterday", "١٢"], ids=["float", "neg", "word", "arabic"]
)
def test_a_malformed_source_date_epoch_is_refused(monkeypatch, value):
    """A SOURCE_DATE_EPOCH that is not whole seconds fails, naming the variable and its value."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", value)
    with pytest.raises(xai.ValidationError, match=rf"SOURCE_DATE_EPOCH must be .*got {value!r}"):
        xai.Report("r")
