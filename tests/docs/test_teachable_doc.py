"""docs/teachable.md stays true: its example runs on a class folder and the files it names are written."""

import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "teachable.md").read_text(encoding="utf-8")


def test_the_example_runs(tmp_path, monkeypatch):
    """The example runs as written on photos/cat and photos/dog, and writes what it says."""
    pytest.importorskip("ipywidgets")
    rng = np.random.default_rng(0)
    for name, colour in {"cat": (200, 120, 40), "dog": (40, 90, 200)}.items():
        (tmp_path / "photos" / name).mkdir(parents=True)
        for i in range(8):
            pixels = np.clip(np.array(colour) + rng.normal(0, 30, (40, 40, 3)), 0, 255)
            Image.fromarray(pixels.astype(np.uint8)).save(tmp_path / "photos" / name / f"{i}.png")
    monkeypatch.chdir(tmp_path)
    (code,) = re.findall(r"```python\n(.*?)```", DOC, flags=re.S)
    scope: dict = {}
    exec(compile(code, "docs/teachable.md", "exec"), scope)
    for file in ("model.tflite", "model_int8.tflite", "labels.txt"):
        assert (tmp_path / "export" / file).stat().st_size > 0
    assert (tmp_path / "teachable.html").stat().st_size > 10_000
    assert list(scope["bars"].index) == ["cat", "dog"]
    assert scope["trainer"].class_counts["test"].tolist() == [2, 2]  # ceil(0.15 * 8)
