"""load_image_folder: one sub-folder per class, PNG and JPEG through Pillow."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import xai_core as xai
from xai_datasets import load_image_folder


@pytest.fixture
def folder(tmp_path):
    """Two classes of small images: red squares (PNG) and blue ones (JPEG)."""
    for name, colour, suffix in [("red", (255, 0, 0), ".png"), ("blue", (0, 0, 255), ".jpg")]:
        (tmp_path / name).mkdir()
        for k in range(3):
            Image.new("RGB", (20 + k, 16), colour).save(tmp_path / name / f"{k}{suffix}")
    return tmp_path


def test_images_become_labelled_rows(folder):
    """Sorted class folders, centre-cropped, resized, in [0, 1], channels last."""
    ds = load_image_folder(folder, image_size=8)
    assert ds.class_names == ("blue", "red") and ds.image_shape == (8, 8, 3)
    assert ds.X.shape == (6, 192) and ds.X.dtype == np.float32
    images = ds.X.reshape(6, 8, 8, 3)
    np.testing.assert_allclose(images[ds.y == 1][..., 0], 1.0, atol=0.02)  # red
    np.testing.assert_allclose(images[ds.y == 0][..., 2], 1.0, atol=0.05)  # blue (JPEG)


def test_grey_images_and_chosen_classes(folder):
    """color=False gives one channel; classes= picks and orders them."""
    ds = load_image_folder(folder, image_size=(4, 6), color=False, classes=["red"])
    assert ds.X.shape == (3, 24) and ds.image_shape == (4, 6) and ds.class_names == ("red",)


@pytest.mark.parametrize(
    "setup, match",
    [("missing", "not a folder"), ("empty", "holds no PNG"), ("broken", "not a readable image")],
    ids=["missing", "empty-class", "broken-file"],
)
def test_bad_folders_name_the_problem(tmp_path, folder, setup, match):
    """A missing folder, an empty class folder and a corrupt image are DataErrors naming them."""
    target = folder
    if setup == "missing":
        target = tmp_path / "nope"
    elif setup == "empty":
        (folder / "green").mkdir()
    else:
        (folder / "red" / "bad.png").write_bytes(b"not a png")
    with pytest.raises(xai.DataError, match=match):
        load_image_folder(target, image_size=8)


def test_train_and_export_in_teachable_machines_layout(folder, tmp_path):
    """The Teachable-Machine direction: images in, a network trained, model.tflite + labels.txt out."""
    pytest.importorskip("ai_edge_litert")
    ds = load_image_folder(folder, image_size=8)
    net = xai.nn.Sequential(
        [xai.nn.Dense(8), xai.nn.ReLU(), xai.nn.Dense(2), xai.nn.Softmax()], input_shape=(192,)
    )
    net.fit(ds.X, ds.y, epochs=30, learning_rate=0.05, progress=False)
    out = xai.to_teachable_machine(net, tmp_path / "export", ds.class_names, calibration_X=ds.X)
    model = xai.from_teachable_machine(out)
    assert model.output_names == ("blue", "red")
    assert (model.predict(ds.X).argmax(1) == ds.y).all()
