"""Ordinary mistakes on the command line: exit status 2, one line naming the argument, no work.

``CASES`` holds one row per mistake: the arguments (``{d}`` is the test's folder, holding
a model ``m.npz``, rows ``d.npz`` and ``t.csv`` with a text column) and the words the one
error line must hold. Each is checked before any model is loaded or explained.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import xai_core as xai
from xai_core.cli.main import main

#: name -> (arguments, words the error line must hold).
CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "explain-missing-model": ("explain --model {d}/no.npz --data {d}/d.npz", ("--model", "no.npz")),
    "explain-model-is-a-folder": ("explain --model {d} --data {d}/d.npz", ("--model", "directory")),
    "explain-missing-data": ("explain --model {d}/m.npz --data {d}/no.npz", ("--data", "no.npz")),
    "explain-missing-out-folder": (
        "explain --model {d}/m.npz --data {d}/d.npz -o {d}/nodir/e.json",
        ("--out", "nodir", "does not exist"),
    ),
    "explain-out-is-a-folder": (
        "explain --model {d}/m.npz --data {d}/d.npz -o {d}",
        ("--out", "directory"),
    ),
    "explain-csv-text-column": (
        "explain --model {d}/m.npz --data {d}/t.csv",
        ("--data", "column 'd'", "--target"),
    ),
    "explain-csv-mixed-column": (
        "explain --model {d}/m.npz --data {d}/mixed.csv --target y",
        ("mixed", "column 'c'", "row 3"),
    ),
    "explain-csv-infinite-cell": (
        "explain --model {d}/m.npz --data {d}/inf.csv --target y",
        ("column 'a'", "infinite", "row 2"),
    ),
    "explain-option-method": (
        "explain --model {d}/m.npz --data {d}/d.npz --option method=shap",
        ("--option", "--method"),
    ),
    "explain-option-backend": (
        "explain --model {d}/m.npz --data {d}/d.npz --option backend=gpu",
        ("--option", "--backend"),
    ),
    "explain-option-no-equals": (
        "explain --model {d}/m.npz --data {d}/d.npz --option steps",
        ("--option", "name=value"),
    ),
    "explain-option-twice": (
        "explain --model {d}/m.npz --data {d}/d.npz --option steps=4 --option steps=8",
        ("--option", "twice"),
    ),
    "explain-rows-negative": (
        "explain --model {d}/m.npz --data {d}/d.npz --rows -3",
        ("--rows", "-3"),
    ),
    "explain-rows-zero": ("explain --model {d}/m.npz --data {d}/d.npz --rows 0", ("--rows",)),
    "explain-rows-text": ("explain --model {d}/m.npz --data {d}/d.npz --rows all", ("--rows",)),
    "explain-rows-backwards-range": (
        "explain --model {d}/m.npz --data {d}/d.npz --rows 5-2",
        ("--rows", "5-2"),
    ),
    "explain-rows-past-the-end": (
        "explain --model {d}/m.npz --data {d}/d.npz --rows 0,3,10-19",
        ("--rows", "19", "10 rows"),
    ),
    "report-missing-out-folder": (
        "report --model {d}/m.npz --data {d}/d.npz -o {d}/nodir/r.html",
        ("--out", "nodir"),
    ),
    "report-missing-model": ("report --model {d}/no.npz --data {d}/d.npz", ("--model",)),
    "report-missing-result": ("report {d}/no.json", ("results", "no.json")),
    "report-rows-negative": ("report --model {d}/m.npz --data {d}/d.npz --rows -3", ("--rows",)),
    "demo-missing-out-folder": ("demo --quick -o {d}/nodir/r.html", ("--out", "nodir")),
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A model, 10 rows of data, and a CSV with a text column."""
    net = xai.nn.Sequential([xai.nn.Dense(3), xai.nn.Softmax()], input_shape=(4,), seed=0)
    net.save(tmp_path / "m.npz")
    np.savez(tmp_path / "d.npz", X=np.random.default_rng(0).normal(size=(10, 4)))
    (tmp_path / "t.csv").write_text("a,b,c,d\n1,2,3,x\n4,5,6,y\n")
    (tmp_path / "mixed.csv").write_text("a,b,c,d,y\n1,2,3,4,0\n1,2,5,4,1\n1,2,7x,4,0\n")
    (tmp_path / "inf.csv").write_text("a,b,c,d,y\n1,2,3,4,0\n1e400,2,5,4,1\n")
    return tmp_path


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a model is loaded, explained or trained."""

    import xai_demo.build  # imported first, so it keeps the real explain once undone
    import xai_demo.demo  # noqa: F401

    def work(*args: object, **kwargs: object) -> None:
        raise AssertionError("work started before the arguments were checked")

    monkeypatch.setattr("xai_core.attribution.explainer.explain", work)
    monkeypatch.setattr("xai_demo.build.explain", work)
    monkeypatch.setattr("xai_demo.demo.run_demo", work)


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_cli_mistake(folder: Path, no_work: None, capsys: pytest.CaptureFixture, case: str) -> None:
    """Each mistake exits 2 with one line naming the argument, before any work."""
    args, words = CASES[case]
    assert main(args.format(d=folder).split()) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    for w in words:
        assert w in err
    assert not list(folder.rglob("*.tmp"))


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ("0,3,5-7", [0, 3, 5, 6, 7]),
        ("7,", [7]),
        ("2-2,0", [2, 0]),
        ("3", [0, 1, 2]),
        ("20", list(range(10))),
    ],
)
def test_rows_take_indices_and_ranges(
    folder: Path, capsys: pytest.CaptureFixture, rows: str, expected: list[int]
) -> None:
    """--rows takes a count or indices and inclusive ranges; the explanation has those rows."""
    out = folder / "e.json"
    args = f"explain --model {folder}/m.npz --data {folder}/d.npz --rows {rows} -o {out}"
    assert main(args.split()) == 0
    e = xai.Explanation.load(out)
    X = np.load(folder / "d.npz")["X"]
    np.testing.assert_allclose(e.data, X[expected])


@pytest.mark.skipif(not Path("/dev/stdout").exists(), reason="needs /dev/stdout")
def test_output_to_dev_stdout_keeps_stdout_clean(
    folder: Path, capfd: pytest.CaptureFixture
) -> None:
    """-o /dev/stdout writes the explanation there; the closing line goes to stderr."""
    import json

    args = f"explain --model {folder}/m.npz --data {folder}/d.npz --rows 2 -o /dev/stdout"
    assert main(args.split()) == 0
    out, err = capfd.readouterr()
    assert len(json.loads(out)["values"]) == 2
    assert "saved to /dev/stdout" in err


@pytest.mark.parametrize(
    ("raised", "status", "words"),
    [
        (KeyboardInterrupt(), 130, ("interrupted",)),
        (
            OSError(28, "No space left on device", "report.html"),
            1,
            ("No space left", "report.html"),
        ),
        (RecursionError("maximum recursion depth exceeded"), 2, ("nested too deeply",)),
    ],
    ids=["ctrl-c", "disk-full", "recursion"],
)
def test_interruptions_and_the_machine_s_refusals_are_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, raised, status, words
) -> None:
    """Ctrl-C, a full disk or a too-deep document mid-command: one line on stderr, no traceback."""
    import xai_core.cli.commands as commands

    def fail():
        raise raised

    monkeypatch.setattr(commands, "backend_classes", fail)
    assert main(["backends"]) == status
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("xai backends: ") and all(w in err for w in words)
