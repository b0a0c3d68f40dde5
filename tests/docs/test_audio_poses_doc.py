"""docs/audio.md and docs/poses.md stay true: their first examples run on exports the fixture script writes."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.io import wavfile

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
from make_teachable_exports import write_pose_export, write_sound_export  # noqa: E402


def first_block(page: str) -> str:
    return re.findall(r"```python\n(.*?)```", (ROOT / "docs" / page).read_text("utf-8"), re.S)[0]


@pytest.mark.slow
def test_the_audio_example_runs(tmp_path, monkeypatch):
    """The sound example: import, prepare WAVs, IG, the spectrogram plot, load_audio_folder."""
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    write_sound_export(tmp_path / "tm-my-audio-model", ("Background Noise", "clap", "whistle"))
    t = np.arange(44100) / 44100
    for k, name in enumerate(["clap", "whistle"]):
        (tmp_path / "clips" / name).mkdir(parents=True)
        wave = 0.3 * np.sin(2 * np.pi * (400 + 1600 * k) * t)
        wavfile.write(tmp_path / "clips" / name / "0.wav", 44100, wave.astype(np.float32))
    scope: dict = {}
    exec(compile(first_block("audio.md"), "docs/audio.md", "exec"), scope)
    assert scope["e"].values.shape == (2, 43, 232, 1)
    assert len(scope["fig"].axes) >= 2


@pytest.mark.slow
def test_the_poses_example_runs(tmp_path, monkeypatch):
    """The pose example: import, PoseNet outputs to rows, IG, the skeleton plot."""
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    write_pose_export(tmp_path / "tm-my-pose-model")
    scope: dict = {}
    exec(compile(first_block("poses.md"), "docs/poses.md", "exec"), scope)
    assert scope["X"].shape == (2, 14739) and len(scope["ax"].lines) == 12


def test_links_point_at_files():
    """Every relative link of the two pages names a file."""
    for page in ("audio.md", "poses.md"):
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        links = [x for x in re.findall(r"\]\(([^)#]+)\)", text) if not x.startswith("http")]
        assert all((ROOT / "docs" / link).exists() for link in links), page
