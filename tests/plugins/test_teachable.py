"""Teachable Machine's loop: class counts, the 85/15 split, per-class scores, live bars, the .tflite export."""

from __future__ import annotations

import math
import wave

import numpy as np
import pytest
from PIL import Image
from sklearn.metrics import accuracy_score, confusion_matrix

import xai_core as xai
from xai_core.pose import grid_size, posenet_features
from xai_core.testing import litert_reference_outputs
from xai_datasets import load_audio_folder, load_image_folder
from xai_teachable.trainer import VALIDATION_FRACTION, held_out_split

COLOURS = {"red": (220, 40, 40), "blue": (40, 40, 220), "green": (40, 190, 40)}
COUNTS = {"red": 14, "blue": 11, "green": 9}


@pytest.fixture(autouse=True, scope="module")
def _registered():
    """The tool and section are found, also where the installed distribution predates the plugin."""
    from xai_core.plugin.manager import get_registry, register_plugin, reset_registry

    if any(s.name == "teachable" for s in get_registry().report_sections):
        yield
        return
    import xai_teachable

    register_plugin(xai_teachable, "teachable")
    yield
    reset_registry()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Three classes of noisy 20x16 colour PNGs (cropped and resized to 16x16 on reading)."""
    root = tmp_path_factory.mktemp("photos")
    rng = np.random.default_rng(0)
    for name, colour in COLOURS.items():
        (root / name).mkdir()
        for i in range(COUNTS[name]):
            pixels = np.array(colour)[None, None] + rng.normal(0, 45, (20, 16, 3))
            Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(root / name / f"{i}.png")
    return root


@pytest.fixture(scope="module")
def trained(folder):
    """A project trained from the folder."""
    return xai.teachable_trainer(folder, kind="image", image_size=16).train(epochs=15, seed=0)


def test_class_counts_are_the_folders_files(folder):
    """Before training, the counts are the files per class folder; nothing is split yet."""
    trainer = xai.teachable_trainer(folder, kind="image", image_size=16)
    counts = trainer.class_counts
    assert counts["samples"].to_dict() == {
        n: len(list((folder / n).glob("*.png"))) for n in counts.index
    }
    assert sorted(counts.index) == sorted(COUNTS) and (counts[["train", "test"]] == 0).all().all()
    assert not trainer.trained


@pytest.mark.parametrize("seed", [0, 7], ids=["seed0", "seed7"])
def test_split_holds_out_teachable_machines_fifteen_percent_of_each_class(seed):
    """ceil(0.15 n) rows of each class held out, disjoint from the training rows, seeded."""
    y = np.repeat(np.arange(4), [14, 11, 2, 40])
    train, test = held_out_split(y, 4, seed)
    assert np.intersect1d(train, test).size == 0
    assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(len(y)))
    for c, n in enumerate([14, 11, 2, 40]):
        assert (y[test] == c).sum() == min(math.ceil(VALIDATION_FRACTION * n), n - 1)
    again = held_out_split(y, 4, seed)
    assert all(np.array_equal(a, b) for a, b in zip(again, (train, test)))
    assert not np.array_equal(held_out_split(y, 4, seed + 1)[1], test)


def test_training_is_seeded(folder, trained):
    """The same seed trains the same network on the same split."""
    again = xai.teachable_trainer(folder, kind="image", image_size=16).train(epochs=15, seed=0)
    assert np.array_equal(again.test_rows, trained.test_rows)
    for a, b in zip(again.net.get_weights(), trained.net.get_weights()):
        np.testing.assert_array_equal(a, b)
    counts = trained.class_counts
    assert (counts["train"] + counts["test"] == counts["samples"]).all()


def test_per_class_accuracy_and_confusion_matrix_are_sklearns(trained):
    """On the held-out rows' own predictions, the scores are scikit-learn's; the colours are learnt."""
    X, y = trained.samples.X[trained.test_rows], trained.samples.y[trained.test_rows]
    predicted = trained.net.predict(X).argmax(1)
    n = len(trained.class_names)
    expected = confusion_matrix(y, predicted, labels=list(range(n)))
    np.testing.assert_array_equal(trained.confusion_matrix, expected)
    for c, name in enumerate(trained.class_names):
        mine = y == c
        assert trained.accuracy_per_class.loc[name, "accuracy"] == pytest.approx(
            accuracy_score(y[mine], predicted[mine])
        )
        assert trained.accuracy_per_class.loc[name, "samples"] == mine.sum()
    assert trained.accuracy == pytest.approx(accuracy_score(y, predicted))
    assert trained.accuracy >= 0.8  # three clearly different colours


def test_bars_of_a_file_are_the_folder_rows_prediction(folder, trained):
    """A file is read exactly as the folder loader reads it; its bars are the network's probabilities."""
    ds = load_image_folder(folder, image_size=16)
    row = int(np.flatnonzero(ds.y == ds.class_names.index("blue"))[3])
    path = sorted((folder / "blue").glob("*.png"))[3]
    bars = trained.predict_bars(path)
    expected = trained.net.predict(ds.X[row].reshape(1, 16, 16, 3))[0]
    np.testing.assert_array_equal(bars.to_numpy(), expected.astype(np.float64))
    assert list(bars.index) == list(trained.class_names) and bars.sum() == pytest.approx(
        1, abs=1e-6
    )
    np.testing.assert_array_equal(trained.predict_bars(path.read_bytes()), bars)
    np.testing.assert_array_equal(trained.predict_bars(Image.open(path)), bars)


def test_widget_bars_follow_the_picker_and_an_upload(folder, trained):
    """Picking a held-out sample or uploading a file redraws the bars of that sample."""
    pytest.importorskip("ipywidgets")
    view = trained.widget()
    np.testing.assert_array_equal(view.bars, trained.predict_bars(0))
    view.picker.value = 2
    np.testing.assert_array_equal(view.bars, trained.predict_bars(2))
    top = trained.class_names[int(np.argmax(view.bars.to_numpy()))]
    assert f"Prediction: {top}" in view.output.value
    path = sorted((folder / "green").glob("*.png"))[0]
    view._uploaded({"new": ({"name": "x.png", "content": memoryview(path.read_bytes())},)})
    np.testing.assert_array_equal(view.bars, trained.predict_bars(path))
    view._uploaded({"new": ({"name": "x.png", "content": memoryview(b"not a png")},)})
    assert view.bars is None and "Cannot classify" in view.output.value


def _check_export(trainer, folder):
    """The export's files load in LiteRT and predict as the in-memory models do."""
    pytest.importorskip("ai_edge_litert.interpreter")
    out = trainer.export(folder)
    assert out.labels_path.read_text("utf-8").splitlines() == [
        f"{i} {name}" for i, name in enumerate(trainer.class_names)
    ]
    X = trainer.samples.X
    float_run = litert_reference_outputs(out.model_path, X).reshape(len(X), -1)
    np.testing.assert_allclose(float_run, trainer.net.predict(X), atol=1e-5, rtol=0)
    Q = out.quantized.quantize_input(X)
    litert_int8 = litert_reference_outputs(out.int8_path, Q).reshape(len(X), -1)
    read_back = xai.from_tflite(out.int8_path)
    for model in (out.quantized, read_back):
        ours = model.run(Q)[model.output_tensor.index].reshape(len(X), -1)
        assert ours.dtype == np.int8
        np.testing.assert_array_equal(ours, litert_int8)
    assert out.placement.equals(read_back.placement_table())
    assert (out.placement["device"] == "edgetpu").all() and out.on_edgetpu == 1.0
    return out


def test_export_is_teachable_machines_tflite_and_placement(trained, tmp_path):
    """model.tflite float and model_int8.tflite int8 match the in-memory models in LiteRT."""
    out = _check_export(trained, tmp_path / "export")
    assert out.placement["op"].tolist()[0] == "CONV_2D"
    inputs = xai.from_tflite(out.model_path).graph.inputs
    assert xai.from_tflite(out.model_path).graph.tensors[inputs[0]].shape == (1, 16, 16, 3)


def _tone(path, frequency, rate=44100, n=4 * 1024 + 100):
    t = np.arange(n) / rate
    samples = (0.5 * np.sin(2 * np.pi * frequency * t) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(rate)
        f.writeframes(samples.tobytes())


@pytest.fixture(scope="module")
def sounds(tmp_path_factory):
    """Two classes of tones: low (200-400 Hz) and high (4-6 kHz)."""
    root = tmp_path_factory.mktemp("sounds")
    rng = np.random.default_rng(1)
    for name, (lo, hi) in {"high": (4000, 6000), "low": (200, 400)}.items():
        (root / name).mkdir()
        for i in range(8):
            _tone(root / name / f"{i}.wav", rng.uniform(lo, hi))
    return root


def test_sounds_train_preview_and_export(sounds, tmp_path):
    """WAV class folders through the spectrogram front end: learnt, previewed from a file, exported."""
    ds = load_audio_folder(sounds, frames=4, bins=48)
    trainer = xai.teachable_trainer(ds, kind="audio").train(epochs=25, learning_rate=0.01, seed=0)
    assert trainer.samples.input_shape == (4, 48, 1)
    assert trainer.class_counts["samples"].tolist() == [8, 8]
    assert trainer.accuracy == 1.0
    path = sorted((sounds / "low").glob("*.wav"))[5]
    expected = trainer.net.predict(ds.X[8 + 5].reshape(1, 4, 48, 1))[0]
    np.testing.assert_allclose(trainer.predict_bars(path).to_numpy(), expected, atol=1e-6)
    _check_export(trainer, tmp_path / "sound")


def _poses(names, n=12, seed=2):
    """PoseNet features on a 3x3 grid whose heatmaps peak at a class's own keypoint cells."""
    grid = grid_size(33, 16)
    rng = np.random.default_rng(seed)
    X, y = [], []
    for c in range(len(names)):
        for _ in range(n):
            heat = rng.uniform(0, 0.3, (*grid, 17))
            heat[c % grid[0], :, :] += 0.6
            X.append(posenet_features(heat, rng.normal(0, 0.5, (*grid, 34))))
            y.append(c)
    return np.stack(X), np.array(y), names


def test_poses_train_and_export(tmp_path):
    """Pose vectors train Teachable Machine's dense head and export like images."""
    trainer = xai.teachable_trainer(_poses(("arms up", "sitting")), kind="pose")
    trainer.train(epochs=20, learning_rate=0.01, seed=0)
    assert trainer.samples.input_shape == (9 * 51,)
    assert trainer.accuracy == 1.0
    _check_export(trainer, tmp_path / "pose")


def test_report_section_shows_counts_scores_bars_and_placement(trained, tmp_path):
    """The offline section carries the counts, the confusion matrix, bars and the export's placement."""
    if trained.exported is None:
        trained.export(tmp_path / "e")
    html = xai.Report("teachable").add(trained).to_html()
    assert "Confusion matrix" in html and "Samples per class" in html
    assert "held-out sample of" in html and "Edge TPU placement" in html
    for name in trained.class_counts.index:
        assert f">{name}<" in html.replace("\u2068", "").replace("\u2069", "")


def test_hostile_class_names_are_escaped(hostile):
    """Class names reach the section and the bars as text, never markup."""
    trainer = xai.teachable_trainer(_poses((hostile, "b"), n=4), kind="pose").train(epochs=2)
    html = xai.report.render_fragment(trainer)
    assert "<script>alert" not in html and "<img src=x" not in html
    from xai_teachable.render import render_bars

    assert "<img src=x" not in render_bars(trainer.predict_bars(0))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda f: xai.teachable_trainer(f, kind="video"), "Available: audio, image, pose"),
        (lambda f: xai.teachable_trainer(f, kind="pose"), "PoseNet feature vectors"),
        (lambda f: xai.teachable_trainer(f, image_size=16).predict_bars(0), "train"),
        (lambda f: xai.teachable_trainer(f, image_size=16).export(f), "train"),
        (
            lambda f: xai.teachable_trainer(
                (np.zeros((3, 4)), [0, 0, 1], ("a", "b")), "pose"
            ).train(),
            "at least 2 samples",
        ),
        (
            lambda f: xai.teachable_trainer((np.zeros((3, 4)), [0, 2, 1], ("a", "b")), "pose"),
            "class indices in 0..1",
        ),
    ],
    ids=[
        "unknown-kind",
        "pose-folder",
        "bars-untrained",
        "export-untrained",
        "one-sample",
        "bad-label",
    ],
)
def test_errors_name_the_problem(folder, call, match):
    """Bad kinds, a folder for poses, untrained use and too few samples are clear errors."""
    with pytest.raises(xai.XaiError, match=match):
        call(folder)


def test_app_trains_with_its_knobs_and_exports(folder, tmp_path):
    """The page's knobs and buttons train as train() does, then show the scores, the bars and the placement."""
    pytest.importorskip("ipywidgets")
    trainer = xai.teachable_trainer(folder, kind="image", image_size=16)
    app = trainer.app(export_folder=str(tmp_path / "app-export"))
    assert app.preview is None and app.export_button.disabled
    assert "Samples per class" in app.state.value and "Confusion matrix" not in app.state.value
    app.epochs.value, app.batch_size.value, app.learning_rate.value = 6, 32, 0.003
    app.train_button.click()
    assert trainer.settings == {"epochs": 6, "batch_size": 32, "learning_rate": 0.003, "seed": 0}
    again = xai.teachable_trainer(folder, kind="image", image_size=16)
    again.train(epochs=6, batch_size=32, learning_rate=0.003, seed=0)
    np.testing.assert_array_equal(trainer.confusion_matrix, again.confusion_matrix)
    assert "Confusion matrix" in app.state.value and not app.export_button.disabled
    app.preview.picker.value = 1
    np.testing.assert_array_equal(app.preview.bars, trainer.predict_bars(1))
    app.export_button.click()
    assert (tmp_path / "app-export" / "model_int8.tflite").is_file()
    assert "Edge TPU placement" in app.state.value
