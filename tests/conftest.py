"""Fixtures shared by every test package."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# In CI, property tests replay a fixed set of examples: a run is reproducible, and a new
# counterexample is found on a developer's machine rather than failing a submission at random.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO.parent / "shared" / "data").resolve()

#: User input that must never run or break markup: script tags, handlers, quotes, unicode.
HOSTILE_STRINGS = (
    "</script><img src=x onerror=alert(1)>",
    "<script>alert('x')</script>",
    '" onmouseover="alert(1)',
    "' ; DROP TABLE x; --",
    "{{ 7*7 }} ${7*7}",
    "ünïcødé ✓ 数字 \u202e",
)


@pytest.fixture(autouse=True, scope="session")
def _no_entry_point_surprises():
    """Tests see the installed plugins; none of them may be loaded from the environment's switches."""
    os.environ.pop("XAI_DISABLE_PLUGIN_AUTOLOAD", None)
    yield


@pytest.fixture
def shared_data() -> Path:
    """The real MNIST / Fashion-MNIST samples beside the repository, or a skip."""
    if not SHARED_DATA.is_dir():
        pytest.skip(
            f"real image data not found at {SHARED_DATA} (only present beside the project's own checkout)"
        )
    return SHARED_DATA


@pytest.fixture(params=HOSTILE_STRINGS, ids=[f"hostile{i}" for i in range(len(HOSTILE_STRINGS))])
def hostile(request) -> str:
    """One hostile string at a time."""
    return request.param


@pytest.fixture
def fresh_registry():
    """Rebuild the default plugin registry before and after the test."""
    from xai_core.plugin.manager import reset_registry

    reset_registry()
    yield
    reset_registry()


@pytest.fixture(scope="session")
def demo_report(tmp_path_factory) -> Path:
    """The report of `xai demo --quick`, built once per test session."""
    from xai_demo.demo import run_demo

    path = tmp_path_factory.mktemp("demo") / "report.html"
    assert run_demo(output=str(path), quick=True, progress=False) == 0
    return path
