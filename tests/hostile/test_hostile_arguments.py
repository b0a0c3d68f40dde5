"""Hostile arguments to the public entry points: the project's own error, naming the argument.

``CASES`` is one row per hole: a function that makes the call from a small fixture, the
error class that must come back and words its message must hold (the argument, what was
expected, what arrived). A raw ``ValueError`` / ``IndexError`` / ``TypeError`` from numpy,
pandas or scikit-learn, a silently accepted value or a garbled message fails its row. Rows
for holes fixed earlier stay as regression cases.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

import xai_core as xai
from xai_core.errors import CapabilityError, ModelFormatError, ShapeError, ValidationError

RNG = np.random.default_rng(0)
X = RNG.normal(size=(60, 3))
Y = (X[:, 0] > 0).astype(int)
CLF = LogisticRegression().fit(X, Y)


def _session():
    return xai.what_if(CLF, X, Y)


def _rewritten_model(tmp: Path, change: Callable[[dict], None]) -> Path:
    """A saved 2-output network whose JSON architecture ``change`` edits."""
    path = tmp / "m.npz"
    net = xai.nn.mlp(3)
    net.classes_ = np.array(["left", "right"])
    net.save(path)
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arch = json.loads(arrays["architecture"].tobytes())
    change(arch)
    arrays["architecture"] = np.frombuffer(json.dumps(arch).encode(), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return path


def _fewer_classes(tmp: Path) -> object:
    return xai.load_model(_rewritten_model(tmp, lambda a: a.update(classes=["left"])))


def _format_version_true(tmp: Path) -> object:
    return xai.load_model(_rewritten_model(tmp, lambda a: a.update(format_version=True)))


def _constant_pca(tmp: Path) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no 0 / 0 on the way
        p = xai.project(np.ones((20, 4)), method="pca")
    assert np.isfinite(p.explained_variance_ratio).all(), p.explained_variance_ratio
    return p


#: name -> (call, error class or None for "must succeed", words the message must hold).
CASES: dict[str, tuple[Callable[[Path], object], type | None, tuple[str, ...]]] = {
    "whatif-binary-labels-outside-outputs": (
        lambda t: xai.what_if(CLF, X, np.where(Y == 1, 5, 0)).slices(0),
        ValidationError,
        ("y must hold class indices 0 .. 1", "row", "5"),
    ),
    "whatif-multiclass-labels-outside-outputs": (
        lambda t: xai.what_if(
            LogisticRegression().fit(X, np.arange(60) % 3), X, np.where(np.arange(60) % 3, 7, 0)
        ),
        ValidationError,
        ("y must hold class indices 0 .. 2", "7"),
    ),
    "whatif-fractional-labels": (
        lambda t: xai.what_if(CLF, X, Y + 0.5),
        ValidationError,
        ("class indices", "the first 1.5 at row 0"),
    ),
    "counterfactual-seed-minus-one": (
        lambda t: _session().counterfactual(0, seed=-1),
        ValidationError,
        ("seed", ">= 0", "-1"),
    ),
    "whatif-dataframe-duplicate-columns": (
        lambda t: xai.what_if(CLF, pd.DataFrame(X, columns=["a", "a", "b"]), Y),
        ValidationError,
        ("repeated column names", "'a'"),
    ),
    "explain-dataframe-duplicate-columns": (
        lambda t: xai.explain(
            CLF, pd.DataFrame(X, columns=["a", "b", "a"]), method="shap", background=X[:10]
        ),
        ValidationError,
        ("X has repeated column names", "'a'"),
    ),
    "nearest-distance-returning-a-string": (
        lambda t: _session().nearest_counterfactual(0, distance=lambda x, C: "far"),
        ValidationError,
        ("distance function must return", "numbers", "'far'"),
    ),
    "counterfactual-distance-returning-strings": (
        lambda t: _session().counterfactual(0, distance=lambda x, C: np.full(len(C), "x")),
        ValidationError,
        ("distance function must return", "dtype <U1"),
    ),
    "cpu-matmul-of-1d-arrays": (
        lambda t: xai.get_backend("cpu").matmul(np.ones(3), np.ones(3)),
        ShapeError,
        ("(M, K) and (K, N)", "(3,)"),
    ),
    "model-file-with-fewer-classes-than-outputs": (
        _fewer_classes,
        ModelFormatError,
        ("m.npz", "classes hold 1 label", "2 output(s)"),
    ),
    "model-file-format-version-true": (
        _format_version_true,
        ModelFormatError,
        ("m.npz", "format_version True is not a positive integer"),
    ),
    "float64-1e39-beyond-float32": (
        lambda t: xai.explain(CLF, np.array([[1e39, 0.0, 0.0]]), method="lime", background=X),
        ValidationError,
        ("X holds 1 value(s) beyond the float32 range", "1e+39", "(0, 0)"),
    ),
    "true-infinity-is-still-non-finite": (
        lambda t: xai.explain(CLF, np.array([[np.inf, 0.0, 0.0]]), method="lime", background=X),
        ValidationError,
        ("NaN or infinite",),
    ),
    "activations-of-a-black-box": (
        lambda t: xai.ModelRunner(lambda x: x).activations(X, "a"),
        CapabilityError,
        ("cannot compute activations:", "black box"),
    ),
    "gradients-of-a-black-box": (
        lambda t: xai.ModelRunner(lambda x: x).require("gradient"),
        CapabilityError,
        ("cannot compute gradients:",),
    ),
    "regex-with-a-backreference": (
        lambda t: xai.project(RNG.normal(size=(12, 3)), labels=["a"] * 12).search(
            r"(a)\1", regex=True
        ),
        ValidationError,
        ("query is not a valid regular expression for RE2", "backreferences"),
    ),
    "regex-that-does-not-compile": (
        lambda t: xai.project(RNG.normal(size=(12, 3))).search("(", regex=True),
        ValidationError,
        ("not a valid regular expression",),
    ),
    "pca-of-constant-input": (_constant_pca, None, ()),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_hostile_argument(tmp_path: Path, case: str) -> None:
    """Each call raises the project's error with the listed words (or succeeds, for None)."""
    call, error, words = CASES[case]
    if error is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", xai.XaiWarning)
            call(tmp_path)
        return
    with pytest.raises(error) as info:
        call(tmp_path)
    assert type(info.value).__module__ == "xai_core.errors", type(info.value)
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_pca_of_constant_input_says_there_is_no_variance() -> None:
    """Zero ratios and coordinates with a warning, not scikit-learn's NaN ratios."""
    with pytest.warns(xai.XaiWarning, match="same point"):
        p = xai.project(np.full((20, 4), 3.0), method="pca")
    assert p.explained_variance_ratio.tolist() == [0.0, 0.0]
    assert not p.coordinates.any()


def test_catastrophic_regex_runs_in_linear_time() -> None:
    """``(a+)+$`` against 'aaa...a!' takes Python's backtracking re 2**40 steps; RE2 is linear.

    Run in a child process so that a backtracking engine fails the test by the timeout
    instead of hanging the suite.
    """
    code = (
        "from xai_projector.search import search_columns\n"  # what Projection.search runs
        "labels = {'label': ['a' * 40 + '!'] * 11 + ['aaa']}\n"
        "print(search_columns(labels, '(a+)+$', regex=True).indices.tolist())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split()[-1] == "[11]"
