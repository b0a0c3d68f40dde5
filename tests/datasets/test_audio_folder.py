"""load_audio_folder: one sub-folder per class, WAV clips as speech-commands' spectrograms."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.io import wavfile

import xai_core as xai
from xai_core.audio import browser_fft_spectrogram, normalize_spectrogram
from xai_datasets import load_audio_folder

RATE = 44100


def tone(freq, seconds=1.0, rate=RATE):
    t = np.arange(int(seconds * rate)) / rate
    return 0.4 * np.sin(2 * np.pi * freq * t)


@pytest.fixture
def folder(tmp_path):
    """Two classes: low tones (16-bit, 44.1 kHz) and high tones (stereo float at 48 kHz)."""
    (tmp_path / "low").mkdir()
    (tmp_path / "high").mkdir()
    for k in range(2):
        wavfile.write(
            tmp_path / "low" / f"{k}.wav", RATE, (tone(300 + 50 * k) * 32767).astype(np.int16)
        )
        x = tone(3000 + 100 * k, 1.1, 48000)
        wavfile.write(tmp_path / "high" / f"{k}.wav", 48000, np.stack([x, x], 1).astype(np.float32))
    (tmp_path / "high" / "notes.txt").write_text("not a clip")
    return tmp_path


def test_clips_become_labelled_spectrogram_rows(folder):
    """Sorted class folders; rows are the model's z-normalised 43 x 232 spectrograms."""
    ds = load_audio_folder(folder)
    assert ds.class_names == ("high", "low") and ds.image_shape == (43, 232, 1)
    assert ds.X.shape == (4, 43 * 232) and ds.X.dtype == np.float32
    assert ds.feature_names[233] == "frame 1 bin 1"
    np.testing.assert_allclose(ds.X.mean(axis=1), 0, atol=1e-5)
    low = wavfile.read(folder / "low" / "0.wav")[1] / 32768.0
    want = normalize_spectrogram(browser_fft_spectrogram(low[:44032]))
    np.testing.assert_allclose(ds.images[ds.y == 1][0, ..., 0], want[0], atol=1e-5)
    bins = ds.images[..., 0].mean(axis=1).argmax(axis=1)  # loudest bin: 21.5 Hz per bin
    np.testing.assert_array_equal(
        np.abs(bins * RATE / 2048 - np.where(ds.y == 1, 325, 3050)) < 80, True
    )


def test_chosen_classes(folder):
    """classes= picks and orders the folders."""
    ds = load_audio_folder(folder, classes=["low"])
    assert ds.class_names == ("low",) and len(ds) == 2


@pytest.mark.parametrize(
    ("setup", "match"),
    [
        ("empty_class", "holds no WAV files"),
        ("short", r"22050 samples"),
        ("corrupt", "not a readable WAV"),
        ("not_a_folder", "is not a folder"),
        ("no_classes", r"class folders \(none\) not found"),
    ],
    ids=["empty-class-folder", "short-clip", "corrupt-file", "not-a-folder", "no-class-folders"],
)
def test_bad_folders_are_one_clear_error(folder, setup, match):
    """Each problem is one DataError naming what is wrong."""
    path = folder
    if setup == "empty_class":
        (folder / "silent").mkdir()
    elif setup == "short":
        wavfile.write(folder / "low" / "short.wav", RATE, tone(300, 0.5).astype(np.float32))
    elif setup == "corrupt":
        (folder / "low" / "broken.wav").write_bytes(b"RIFF\x00\x00")
    elif setup == "no_classes":
        path = folder / "empty"
        path.mkdir()
    else:
        path = folder / "low" / "0.wav"
    with pytest.raises(xai.errors.DataError, match=match):
        load_audio_folder(path)
