"""docs/sequences.md stays true: its example runs, on the backend it names."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "sequences.md").read_text(encoding="utf-8")


def test_the_example_runs():
    """The per-step explanation example runs as written (matplotlib drawing off screen)."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    (code,) = re.findall(r"```python\n(.*?)```", DOC, flags=re.S)
    scope: dict = {}
    exec(compile(code, "docs/sequences.md", "exec"), scope)
    assert len([a for a in scope["fig"].axes if a.get_ylabel().startswith("channel")]) == 2


def test_every_layer_named_exists():
    """Each layer the page's table names is in xai.nn."""
    import xai_core as xai

    for name in re.findall(r"^\| `(\w+)", DOC, flags=re.M):
        assert hasattr(xai.nn, name), name
