"""docs/explainers/global.md stays true: its example runs and the scorers it lists exist."""

import re
from pathlib import Path

import pytest

import xai_global

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "explainers" / "global.md").read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def _registered():
    """The plugin as its entry point registers it (registered here when not installed)."""
    from xai_core.plugin.manager import get_registry, register_plugin, reset_registry

    reset_registry()
    if "ale" not in get_registry().tools:
        register_plugin(xai_global)
    yield
    reset_registry()


def test_the_example_runs():
    """The example runs as written (matplotlib drawing off screen)."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    (code,) = re.findall(r"```python\n(.*?)```", DOC, flags=re.S)
    scope: dict = {}
    exec(compile(code, "docs/explainers/global.md", "exec"), scope)
    assert scope["pi"].to_frame().index[0] in ("angle", "speed")
    assert len(scope["report"].to_html()) > 0


def test_every_scorer_listed_exists():
    """The scorers the page lists are the ones the plugin knows."""
    section = DOC.split("`scoring` names scikit-learn scorers", 1)[1].split("`scoring` may", 1)[0]
    listed = set(re.findall(r"`([a-z0-9_]+)`", section)) - {"y", "classes_"}
    assert listed == set(xai_global.scorers())
