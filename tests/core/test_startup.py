"""Start-up: `import xai_core` and `xai --help` import no heavy library before it is used."""

import json
import subprocess
import sys

#: Libraries that take hundreds of milliseconds to import; none is needed to start.
HEAVY = ("scipy.stats", "sklearn", "shap", "lime", "jinja2", "pandas")


def _modules_after(code: str) -> set[str]:
    """The HEAVY modules in sys.modules after running ``code`` in a fresh interpreter."""
    probe = (
        f"{code}\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_import_xai_core_imports_no_heavy_library():
    """`import xai_core` leaves scipy.stats, scikit-learn, shap, lime, Jinja2 and pandas unimported."""
    assert _modules_after("import xai_core") == set()


def test_facade_names_resolve_on_first_use():
    """The facade's names are there, and using one imports what it needs."""
    code = (
        "import xai_core as xai\n"
        "assert {'explain', 'Report', 'compare_backends', 'nn'} <= set(dir(xai))\n"
        "assert xai.__version__ and xai.Report.__name__ == 'Report'"
    )
    assert "jinja2" in _modules_after(code)


def test_help_imports_no_explainer_library():
    """`xai --help` lists every command without importing scipy.stats, sklearn, shap, lime or pandas."""
    code = (
        "from xai_core.cli.main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass"
    )
    assert _modules_after(code) <= {"jinja2"}  # report sections are built-in plugins


def test_help_lists_plugin_commands():
    """The plugin commands (xai_demo's demo, explain, report) are listed and still run."""
    out = subprocess.run(
        [sys.executable, "-m", "xai_core", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for command in ("demo", "explain", "report", "plugins", "backends"):
        assert f"    {command} " in out
    help_demo = subprocess.run(
        [sys.executable, "-m", "xai_core", "demo", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--dataset" in help_demo
