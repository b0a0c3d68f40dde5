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
    """The facade's names are there, and the first use of one imports its module."""
    code = (
        "import sys\n"
        "import xai_core as xai\n"
        "assert 'xai_core.compare.agreement' not in sys.modules\n"
        "assert {'explain', 'Report', 'compare_backends', 'nn'} <= set(dir(xai))\n"
        "assert xai.__version__ and xai.compare_backends.__name__ == 'compare_backends'\n"
        "assert 'xai_core.compare.agreement' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_help_imports_no_explainer_library():
    """`xai --help` lists every command without importing any of the heavy libraries."""
    code = (
        "from xai_core.cli.main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass"
    )
    assert _modules_after(code) == set()


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
