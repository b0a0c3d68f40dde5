"""A real third-party plugin, pip-installed from its own folder, and broken ones beside it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import xai_core as xai

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="session")
def installed_plugins(tmp_path_factory):
    """Install the fixture plugins into a fresh folder with pip (offline, no build isolation)."""
    target = tmp_path_factory.mktemp("site")
    for folder in ("leave_one_out_plugin", "broken_plugin", "typo_plugin", "exit_plugin"):
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--no-index",
                "--no-build-isolation",
                "--target",
                str(target),
                str(FIXTURES / folder),
            ],
            check=True,
            capture_output=True,
        )
    return target


@pytest.fixture
def with_plugins(installed_plugins, monkeypatch, fresh_registry):
    """Put the installed plugins on sys.path for one test."""
    monkeypatch.syspath_prepend(str(installed_plugins))
    yield installed_plugins


def test_cli_lists_third_party_and_broken_plugins(installed_plugins):
    """`xai plugins --json` shows the third-party plugin with its distribution, and the broken one with its error."""
    env = {**os.environ, "PYTHONPATH": str(installed_plugins)}
    out = subprocess.run(
        [sys.executable, "-m", "xai_core", "plugins", "--json"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    records = {r["name"]: r for r in json.loads(out)}
    leave_one_out = records["leave_one_out"]
    assert leave_one_out["status"] == "ok"
    assert leave_one_out["distribution"] == "xai-leave-one-out 1.2.0"
    assert leave_one_out["registers"] == {"explainer": ["leave_one_out"]}
    assert leave_one_out["hooks"] == ["xai_register_explainers"]
    broken = records["broken_fixture"]
    assert broken["status"] == "broken" and broken["stage"] == "import"
    assert "not installed (on purpose)" in broken["error"]
    assert broken["distribution"] == "xai-broken-fixture 0.0.1"
    typo, exiting = records["typo_fixture"], records["exit_fixture"]
    assert (typo["status"], typo["stage"]) == ("broken", "register")
    assert (
        "unknown hook 'xai_register_backend'; did you mean 'xai_register_backends'?"
        in (typo["error"])
    )
    assert (exiting["status"], exiting["stage"]) == ("broken", "import")
    assert exiting["error"] == "SystemExit: this plugin refuses to load (on purpose)"
    for name in ("shap", "lime", "ig", "xai_core.backends.cpu"):
        assert records[name]["status"] == "ok"


def test_cli_commands_survive_broken_plugins(installed_plugins):
    """`xai backends` and `xai plugins` still work, and name each broken plugin, in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(installed_plugins)}

    def xai_cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "xai_core", *args],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    assert "tpu" in xai_cli("backends")
    listing = xai_cli("plugins")
    for name in ("broken_fixture", "typo_fixture", "exit_fixture"):
        assert f"{name}  [xai-{name.replace('_', '-')} 0.0.1]  BROKEN during" in listing


def test_explain_runs_the_third_party_explainer(with_plugins):
    """xai.explain(method="leave_one_out") runs the installed plugin while the broken ones are reported."""
    assert "leave_one_out" in xai.list_explainers()
    broken = {b.name for b in xai.get_registry().broken}
    assert broken == {"broken_fixture", "typo_fixture", "exit_fixture"}
    w = np.array([1.0, -2.0, 3.0])
    e = xai.explain(lambda X: X @ w, np.ones((2, 3)), method="leave_one_out", baseline=0.0)
    np.testing.assert_allclose(e.values, [[1.0, -2.0, 3.0]] * 2)
    assert e.method == "leave_one_out" and e.backend == "cpu"
    assert e.meta["options"] == {"baseline": 0.0}
