"""docs/explainers/quality.md stays true: its functions exist and its examples run."""

import re
from pathlib import Path

import numpy as np
import pytest

import xai_core as xai

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "explainers" / "quality.md").read_text(encoding="utf-8")


def test_every_function_in_the_table_is_public():
    """Each `xai.<name>(` of the table is a name of the facade."""
    names = re.findall(r"`xai\.(\w+)\(", DOC)
    assert len(names) >= 5
    for name in names:
        assert callable(getattr(xai, name)), name


def test_every_test_named_exists():
    """Each test the page cites is in tests/core/test_quality.py."""
    source = (ROOT / "tests" / "core" / "test_quality.py").read_text(encoding="utf-8")
    cited = set(re.findall(r"`(test_\w+)`", DOC))
    assert len(cited) >= 6
    for name in cited:
        assert f"def {name}(" in source, name


@pytest.mark.slow
def test_the_examples_run():
    """The page's examples run in order on a small native CNN."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    module = torch.nn.Sequential(
        torch.nn.Conv2d(1, 2, 3, padding=1),
        torch.nn.Tanh(),
        torch.nn.Flatten(),
        torch.nn.Linear(2 * 6 * 6, 2),
    ).eval()
    net = xai.from_torch(module, torch.zeros(2, 1, 6, 6))
    X = np.random.default_rng(0).uniform(size=(2, 1, 6, 6)).astype(np.float32)
    scope = {"xai": xai, "net": net, "X": X}
    for code in re.findall(r"```python\n(.*?)```", DOC, flags=re.S):
        exec(compile(code, "docs/explainers/quality.md", "exec"), scope)
    assert scope["s"].shape == (2,)
    assert list(scope["c"].quality.index) == ["ig", "saliency", "smoothgrad"]
