"""Every hook is documented in its docstring and in docs/, and exercised by a test."""

import inspect
from pathlib import Path

import pytest

from xai_core.plugin import hookspecs

ROOT = Path(__file__).resolve().parents[2]
HOOKS = [
    name
    for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
    if name.startswith("xai_")
]


def test_there_are_hooks():
    """The five extension surfaces each have a hook."""
    assert set(HOOKS) == {
        "xai_register_explainers",
        "xai_register_backends",
        "xai_register_report_sections",
        "xai_register_cli_commands",
        "xai_register_tools",
    }


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_documented(hook):
    """The spec has a numpydoc docstring with Returns, and docs/plugin_hooks.md shows its signature."""
    doc = inspect.getdoc(getattr(hookspecs, hook)) or ""
    assert "Returns\n-------" in doc
    signature = f"{hook}{inspect.signature(getattr(hookspecs, hook))}"
    assert signature in (ROOT / "docs" / "plugin_hooks.md").read_text()


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_tested(hook):
    """Some test other than this file implements or calls the hook."""
    sources = [
        p.read_text() for p in (ROOT / "tests").rglob("test_*.py") if p.name != Path(__file__).name
    ]
    assert any(hook in text for text in sources)
