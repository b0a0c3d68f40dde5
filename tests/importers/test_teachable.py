"""from_teachable_machine: Teachable Machine image-project exports, folders and zips."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import xai_core as xai

pytest.importorskip("tflite", reason="the tflite extra is not installed")
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the Keras test helpers

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tflite"
LABELS = ["zero", "one", "two", "three", "four"]


def tflite_export(folder: Path, quantized: bool = True) -> Path:
    """A Teachable Machine TensorFlow Lite export of the fixture CNN (five classes)."""
    folder.mkdir(parents=True, exist_ok=True)
    source = "cnn_int8_uint8_io" if quantized else "cnn_float"
    name = "model.tflite" if quantized else "model_unquant.tflite"
    (folder / name).write_bytes((FIXTURES / f"{source}.tflite").read_bytes())
    (folder / "labels.txt").write_text("".join(f"{i} {n}\n" for i, n in enumerate(LABELS)))
    return folder


def zipped(folder: Path) -> Path:
    """The folder as the zip Teachable Machine downloads."""
    path = folder.with_suffix(".zip")
    with zipfile.ZipFile(path, "w") as z:
        for f in folder.iterdir():
            z.write(f, f"converted_tflite/{f.name}")
    return path


@pytest.mark.parametrize("quantized", [True, False], ids=["model.tflite", "model_unquant.tflite"])
def test_tflite_export_loads_with_its_labels(tmp_path, quantized):
    """Labels become class names; the model predicts like the file it holds."""
    folder = tflite_export(tmp_path / "export", quantized)
    m = xai.from_teachable_machine(folder)
    assert m.output_names == tuple(LABELS)
    X = np.random.default_rng(0).uniform(-1, 1, (4, 12, 12, 1)).astype(np.float32)
    source = xai.from_tflite(
        FIXTURES / ("cnn_int8_uint8_io.tflite" if quantized else "cnn_float.tflite")
    )
    np.testing.assert_array_equal(m.predict(X), source.predict(X))
    assert m.preprocessing["image_size"] == (12, 12) and m.preprocessing["offset"] == -1.0


def test_the_downloaded_zip_loads_like_the_folder(tmp_path):
    """A zip with the files in a sub-folder gives the same model as the folder."""
    folder = tflite_export(tmp_path / "export")
    a, b = xai.from_teachable_machine(folder), xai.from_teachable_machine(zipped(folder))
    X = np.random.default_rng(1).uniform(-1, 1, (3, 12, 12, 1)).astype(np.float32)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert b.output_names == tuple(LABELS)


def test_image_files_are_prepared_as_the_export_expects(tmp_path):
    """An image file is centre-cropped, resized and scaled to [-1, 1], then explained."""
    from PIL import Image

    m = xai.from_teachable_machine(tflite_export(tmp_path / "export"))
    pixels = np.random.default_rng(2).integers(0, 256, (20, 30, 3)).astype(np.uint8)
    Image.fromarray(pixels).save(tmp_path / "photo.png")
    from xai_core.importers.teachable import prepare_images

    X = prepare_images(m, [tmp_path / "photo.png"])
    assert X.shape == (1, 12, 12, 1) and X.min() >= -1 and X.max() <= 1
    assert xai.explain(m, X, method="lime", seed=0, n_samples=200).values.shape == (1, 12, 12, 1)


def test_labels_from_metadata_json(tmp_path):
    """A TF.js-style metadata.json names the classes when labels.txt is absent."""
    folder = tflite_export(tmp_path / "export")
    (folder / "labels.txt").unlink()
    (folder / "metadata.json").write_text(json.dumps({"labels": LABELS, "imageSize": 12}))
    assert xai.from_teachable_machine(folder).output_names == tuple(LABELS)


def test_edge_tpu_export_says_which_file_to_use(tmp_path):
    """An export with only the compiled model explains that it cannot run here."""
    folder = tmp_path / "edgetpu"
    folder.mkdir()
    from dataclasses import replace

    from xai_core.importers.tflite import read_tflite
    from xai_core.importers.tflite.writer import graph_to_bytes

    graph = read_tflite(FIXTURES / "cnn_int8_uint8_io.tflite")  # a graph as the compiler leaves it
    custom = replace(
        graph.operators[1],
        op="CUSTOM",
        options={},
        options_type=None,
        custom_code="edgetpu-custom-op",
    )
    compiled = replace(graph, operators=(graph.operators[0], custom, *graph.operators[2:]))
    (folder / "labels.txt").write_text("".join(f"{i} {n}\n" for i, n in enumerate(LABELS)))
    (folder / "model_edgetpu.tflite").write_bytes(graph_to_bytes(compiled))
    with pytest.raises(xai.ModelFormatError, match="compiled for the Edge TPU"):
        xai.from_teachable_machine(folder)


@pytest.mark.parametrize(
    "labels, match",
    [("0 a\n2 b\n", "0 .. n-1"), ("0 a\n", "5 names")],
    ids=["gap", "too-few"],
)
def test_bad_labels_are_refused(tmp_path, labels, match):
    """Numbering gaps and a label count that does not match the outputs are errors."""
    folder = tflite_export(tmp_path / "export")
    (folder / "labels.txt").write_text(labels)
    with pytest.raises(xai.ModelFormatError, match=match):
        xai.from_teachable_machine(folder)


def test_a_folder_without_a_model_lists_what_it_found(tmp_path):
    """No model file: the error lists the files found."""
    (tmp_path / "labels.txt").write_text("0 a\n")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(xai.ModelFormatError, match="notes.txt"):
        xai.from_teachable_machine(tmp_path)


def test_a_zip_bomb_is_refused_before_inflating(tmp_path, monkeypatch):
    """A zip declaring more than the limit is refused from its directory alone."""
    import xai_core.importers.teachable as teachable

    monkeypatch.setattr(teachable, "MAX_EXPORT_BYTES", 1000)
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("model.tflite", b"\x00" * 100_000)
        z.writestr("labels.txt", "0 a\n")
    with pytest.raises(xai.ModelFormatError, match="declares"):
        xai.from_teachable_machine(path)


def test_keras_and_tfjs_exports_load_and_predict_like_the_source(tmp_path):
    """keras_model.h5 + labels.txt, and model.json + weights + metadata.json, as Teachable Machine writes them."""
    keras = pytest.importorskip("keras")
    from test_from_keras import keras_cnn, write_tfjs

    model = keras_cnn()
    X = np.random.default_rng(3).uniform(-1, 1, (4, *model.input_shape[1:])).astype(np.float32)
    want = keras.ops.convert_to_numpy(model(X))
    names = [f"class {k}" for k in range(want.shape[1])]
    h5 = tmp_path / "keras_export"
    h5.mkdir()
    model.save(h5 / "keras_model.h5")
    (h5 / "labels.txt").write_text("".join(f"{i} {n}\n" for i, n in enumerate(names)))
    tfjs = tmp_path / "tfjs_export"
    write_tfjs(model, tfjs, wrap=False)
    (tfjs / "metadata.json").write_text(json.dumps({"labels": names, "imageSize": X.shape[1]}))
    for folder in (h5, zipped(h5), tfjs):
        m = xai.from_teachable_machine(folder)
        assert m.output_names == tuple(names)
        assert m.preprocessing["offset"] == -1.0
        np.testing.assert_allclose(m.predict(X), want, atol=1e-5)
