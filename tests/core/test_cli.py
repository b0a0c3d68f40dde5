"""The xai command: plugins, backends, demo, and python -m xai_core."""

import json
import subprocess
import sys

from xai_core.cli import main


def test_plugins_json(capsys):
    """`xai plugins --json` lists the built-ins and first-party plugins with their registrations."""
    assert main(["plugins", "--json"]) == 0
    records = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert records["xai_core.backends.cpu"]["registers"] == {"backend": ["cpu"]}
    assert records["xai_core.cli_commands"]["hooks"] == ["xai_register_cli_commands"]


def test_plugins_text(capsys):
    """The text listing names each plugin and its distribution."""
    assert main(["plugins"]) == 0
    assert "xai_core.backends.cpu  [xai-core" in capsys.readouterr().out


def test_backends(capsys):
    """`xai backends` shows each backend's numerics; --json is machine-readable."""
    assert main(["backends"]) == 0
    assert "cpu" in capsys.readouterr().out
    assert main(["backends", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"name": "cpu"}.items() <= rows[0].items() and "numerics" in rows[0]


def test_no_command_prints_help(capsys):
    """Plain `xai` prints usage and exits 2."""
    assert main([]) == 2
    assert "usage: xai" in capsys.readouterr().out


def test_python_dash_m():
    """`python -m xai_core --version` works."""
    out = subprocess.run(
        [sys.executable, "-m", "xai_core", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith("xai-core ")
