"""The README stays true: its notebook snippet runs and its links point at files."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_links_point_at_files():
    """Every relative link of the README names a file of the repository."""
    links = re.findall(r"\]\(([^)#]+)\)", README)
    assert links
    missing = [link for link in links if not link.startswith("http") and not (ROOT / link).exists()]
    assert missing == []


@pytest.mark.slow
def test_notebook_snippet_runs(tmp_path, monkeypatch):
    """The 'In a notebook' snippet runs as written and writes its report."""
    snippet = re.search(r"## In a notebook\s+```python\n(.*?)```", README, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(
        compile(snippet.replace("epochs=2)", "epochs=1, progress=False)"), "README.md", "exec"), {}
    )
    assert (tmp_path / "report.html").stat().st_size > 10_000


def _cli_recipe() -> str:
    """The shell block of the README's 'From the command line' section."""
    return re.search(r"## From the command line.*?```sh\n(.*?)```", README, re.S).group(1)


def test_cli_recipe_targets_the_column_to_frame_writes():
    """The recipe's --target is the label column Dataset.to_frame() writes for MNIST."""
    from xai_datasets import load_mnist

    recipe = _cli_recipe()
    target = re.search(r"--target (\S+)", recipe).group(1)
    assert load_mnist("test").take(range(2)).to_frame().columns[-1] == target
    for name in ("m.npz", "rows.npz", "rows.csv"):  # every file it uses, it makes first
        assert recipe.index(name) < recipe.index("xai explain")


@pytest.mark.slow
def test_cli_recipe_runs_as_written(tmp_path):
    """The 'From the command line' block runs in bash as written, in an empty folder."""
    import os
    import stat
    import subprocess
    import sys

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # `python` and `xai` are this interpreter and its xai command, however it is installed
    for name, line in (("python", ""), ("xai", " -m xai_core")):
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}"{line} "$@"\n')
        shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", _cli_recipe()],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in work.iterdir()) == [
        "e.json",
        "m.npz",
        "report.html",
        "rows.csv",
        "rows.npz",
    ]
    assert "ig on cpu: 12 row(s)" in done.stdout and "Report with 3 section(s)" in done.stdout
    page = (work / "report.html").read_text(encoding="utf-8")
    assert "e.json" in page and "ig on cpu: m.npz" in page


def test_what_you_can_do_with_e_names_real_calls():
    """Every e.plot.*, to_shap(), w.editor() and xai.* call the README names exists."""
    import xai_core as xai
    from xai_core.attribution.plot import ExplanationPlots
    from xai_whatif.whatif import WhatIf

    passage = re.search(r"What you can do with `e`:(.*?)\n\n", README, re.S).group(1)
    plots = set(re.findall(r"e\.plot\.(\w+)\(", passage))
    assert {"bar", "waterfall", "beeswarm", "image"} <= plots
    assert all(callable(getattr(ExplanationPlots, p, None)) for p in plots)
    assert "e.to_shap()" in passage and callable(xai.Explanation.to_shap)
    assert "w.editor()" in passage and callable(WhatIf.editor)
    for name in re.findall(r"xai\.(\w+)\(", passage):
        assert callable(getattr(xai, name)), name
