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
