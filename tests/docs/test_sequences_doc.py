"""docs/sequences.md stays true: its example runs, on the backend it names."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "sequences.md").read_text(encoding="utf-8")


def test_the_examples_run():
    """The per-step explanation examples run as written, one after the other in one scope
    (matplotlib drawing off screen): IG and its plot, then LIME's windows."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    ig, lime = re.findall(r"```python\n(.*?)```", DOC, flags=re.S)
    scope: dict = {}
    exec(compile(ig, "docs/sequences.md", "exec"), scope)
    assert len([a for a in scope["fig"].axes if a.get_ylabel().startswith("channel")]) == 2
    exec(compile(lime, "docs/sequences.md", "exec"), scope)
    assert scope["e"].meta["n_segments"].tolist() == [8] * 4  # windows of 4 of the 32 steps


def test_every_layer_named_exists():
    """Each layer the page's table names is in xai.nn."""
    import xai_core as xai

    for name in re.findall(r"^\| `(\w+)", DOC, flags=re.M):
        assert hasattr(xai.nn, name), name
