"""from_teachable_machine on sound projects: speech-commands transfer models and their spectrograms."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.io import wavfile

import xai_core as xai
from xai_core.importers.teachable_sound import prepare_audio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from make_teachable_exports import write_sound_export  # noqa: E402

LABELS = ("Background Noise", "clap", "whistle")


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """A sound export (dense_1 of 32 units) and its weights by name."""
    return write_sound_export(tmp_path_factory.mktemp("tm") / "sound", LABELS, hidden=32)


def torch_oracle(w, X):
    """speech-commands' network in torch, from the export's weights: NHWC in, probabilities out."""
    x = torch.from_numpy(np.ascontiguousarray(X.transpose(0, 3, 1, 2))).double()
    for i, stride in zip(range(1, 5), [(2, 2), (2, 2), (2, 2), (1, 2)]):
        k = torch.from_numpy(w[f"conv2d_{i}/kernel"].transpose(3, 2, 0, 1).copy()).double()
        b = torch.from_numpy(w[f"conv2d_{i}/bias"].copy()).double()
        x = torch.nn.functional.max_pool2d(torch.relu(torch.conv2d(x, k, b)), 2, stride)
    x = x.permute(0, 2, 3, 1).reshape(len(X), -1)  # Flatten in channels-last order
    d = torch.from_numpy(w["dense_1/kernel"].copy()).double()
    x = torch.relu(x @ d + torch.from_numpy(w["dense_1/bias"].copy()).double())
    h = torch.from_numpy(w["NewHeadDense/kernel"].copy()).double()
    logits = x @ h + torch.from_numpy(w["NewHeadDense/bias"].copy()).double()
    return torch.softmax(logits, -1).numpy()


def tone(freq, seconds=1.0, rate=44100, amp=0.3, seed=0):
    t = np.arange(int(seconds * rate)) / rate
    noise = np.random.default_rng(seed).standard_normal(t.size) * 0.01
    return amp * np.sin(2 * np.pi * freq * t) + noise


def test_sound_export_loads_with_word_labels_and_its_front_end(export):
    """wordLabels name the outputs; the input is the 43 x 232 x 1 spectrogram, not an image."""
    folder, _ = export
    m = xai.from_teachable_machine(folder)
    assert m.output_names == LABELS
    assert m.input_shape == (43, 232, 1)
    p = m.preprocessing
    assert (p["kind"], p["sample_rate"], p["fft_size"], p["window"]) == (
        "spectrogram",
        44100,
        1024,
        2048,
    )
    assert (p["frames"], p["bins"]) == (43, 232) and "image_size" not in p


def test_predictions_equal_a_torch_oracle(export):
    """The imported network computes what speech-commands' layers compute (float64 torch)."""
    folder, w = export
    m = xai.from_teachable_machine(folder)
    X = np.random.default_rng(0).standard_normal((3, 43, 232, 1)).astype(np.float32)
    np.testing.assert_allclose(m.predict(X), torch_oracle(w, X), atol=2e-5)


def test_the_downloaded_zip_and_the_legacy_words_field(export, tmp_path):
    """A zip in a sub-folder loads like the folder; old metadata's 'words' names the classes."""
    folder, _ = export
    path = tmp_path / "tm-my-audio-model.zip"
    meta = json.loads((folder / "metadata.json").read_text())
    meta["words"] = meta.pop("wordLabels")
    with zipfile.ZipFile(path, "w") as z:
        for f in folder.iterdir():
            data = json.dumps(meta) if f.name == "metadata.json" else f.read_bytes()
            z.writestr(f"tm-my-audio-model/{f.name}", data)
    assert xai.from_teachable_machine(path).output_names == LABELS


def test_metadata_without_labels_or_the_wrong_input_is_refused(export, tmp_path):
    """No wordLabels, or a model that takes no spectrogram: one ModelFormatError each."""
    folder, _ = export
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in folder.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    (bad / "metadata.json").write_text(json.dumps({"tfjsSpeechCommandsVersion": "0.4.0"}))
    with pytest.raises(xai.errors.ModelFormatError, match="wordLabels"):
        xai.from_teachable_machine(bad)
    (bad / "model.json").unlink()
    with pytest.raises(xai.errors.ModelFormatError, match="needs model.json"):
        xai.from_teachable_machine(bad)


def test_wav_files_are_prepared_as_the_recognizer_feeds_the_model(export, tmp_path):
    """A 22.05 kHz stereo WAV: resampled, mixed down, cut to 44,032 samples, dB, z-scored."""
    from xai_core.audio import browser_fft_spectrogram, normalize_spectrogram, read_wav

    folder, w = export
    m = xai.from_teachable_machine(folder)
    x = tone(700, 1.2, rate=22050)
    wavfile.write(tmp_path / "c.wav", 22050, np.stack([x, x], 1).astype(np.float32))
    X = prepare_audio(m, [tmp_path / "c.wav", tone(2000, 1.0)])
    assert X.shape == (2, 43, 232, 1) and X.dtype == np.float32
    want = normalize_spectrogram(browser_fft_spectrogram(read_wav(tmp_path / "c.wav")[:44032]))
    np.testing.assert_allclose(X[0, ..., 0], want[0], atol=1e-5)
    np.testing.assert_allclose(X.mean(axis=(1, 2, 3)), 0, atol=1e-5)
    np.testing.assert_allclose(m.predict(X), torch_oracle(w, X), atol=2e-5)
    with pytest.raises(xai.errors.DataError, match="0.500 s"):
        prepare_audio(m, [tone(700, 0.5)])
    with pytest.raises(xai.errors.ValidationError, match="mono samples"):
        prepare_audio(m, [np.zeros((44032, 2))])


@pytest.mark.slow
def test_ig_on_the_spectrogram_is_complete_and_plots(export):
    """IG's attributions add up to f(x) - f(0); the plot shows them and their per-frame sums."""
    import matplotlib

    matplotlib.use("Agg")
    folder, _ = export
    m = xai.from_teachable_machine(folder)
    X = prepare_audio(m, [tone(500), tone(3000, seed=1)])
    e = xai.explain(m, X, method="ig", n_steps=64, target=1)
    gap = m.predict(X)[:, 1] - m.predict(np.zeros_like(X))[:, 1]
    total = e.values.reshape(2, -1).sum(axis=1)
    np.testing.assert_allclose(total, gap, atol=0.02 * np.abs(gap).max() + 1e-4)
    from xai_core.attribution.plot_signals import frame_totals

    per_frame = frame_totals(e)
    assert per_frame.shape == (2, 43)
    np.testing.assert_allclose(per_frame.sum(axis=1), total, rtol=1e-6, atol=1e-9)
    fig = e.plot.spectrogram(1)
    heat, bars = fig.axes[:2]
    assert heat.get_ylabel() == "frequency (Hz)" and len(bars.patches) == 43
    np.testing.assert_allclose([p.get_height() for p in bars.patches], per_frame[1], rtol=1e-6)
    flat = xai.Explanation(values=np.zeros((1, 5)), base_values=np.zeros(1), target=np.zeros(1))
    with pytest.raises(xai.errors.ShapeError, match="frames, bins"):
        flat.plot.spectrogram()


def test_the_full_size_network_has_speech_commands_parameter_count(tmp_path):
    """dense_1 of 2000 units: 1,434,667 parameters for 3 classes, as the training notebook prints."""
    folder, w = write_sound_export(tmp_path / "full", LABELS, hidden=2000)
    assert sum(a.size for a in w.values()) == 1_434_667
    m = xai.from_teachable_machine(folder)
    X = np.random.default_rng(4).standard_normal((2, 43, 232, 1)).astype(np.float32)
    np.testing.assert_allclose(m.predict(X), torch_oracle(w, X), atol=2e-5)


@pytest.mark.parametrize(
    ("field", "value"),
    [("wordLabels", "clap"), ("wordLabels", [1, 2, 3]), ("words", {"a": 1})],
    ids=["labels-a-string", "labels-numbers", "words-an-object"],
)
def test_hostile_word_labels_are_refused_by_name(export, tmp_path, field, value):
    """A wordLabels / words field of the wrong kind is one ModelFormatError naming it."""
    folder, _ = export
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in folder.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    (bad / "metadata.json").write_text(json.dumps({field: value}))
    with pytest.raises(xai.errors.ModelFormatError, match=field):
        xai.from_teachable_machine(bad)


def test_the_tflite_sound_export_is_refused_with_the_way_out(tmp_path):
    """soundclassifier_with_metadata.tflite + labels.txt (the converter's zip): a clear refusal."""
    path = tmp_path / "converted_model.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("soundclassifier_with_metadata.tflite", b"TFL3" + bytes(60))
        z.writestr("labels.txt", "0 Background Noise\n1 clap\n")
    with pytest.raises(xai.errors.CapabilityError, match="TensorFlow.js export"):
        xai.from_teachable_machine(path)
