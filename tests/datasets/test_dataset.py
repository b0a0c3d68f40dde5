"""The Dataset result: validation, conversions, splits and notebook rendering."""

from __future__ import annotations

import base64
import dataclasses
import io
import re

import numpy as np
import pytest

from xai_core.errors import ShapeError, UnknownNameError, ValidationError
from xai_datasets import Dataset

HOSTILE = "<script>alert(1)</script>"


def _images(n: int = 30) -> Dataset:
    rng = np.random.default_rng(0)
    return Dataset(
        X=rng.random((n, 12)),
        y=np.arange(n) % 3,
        class_names=("a", "b", HOSTILE),
        image_shape=(3, 4),
        name=HOSTILE,
        description=f"about {HOSTILE}",
    )


def _table(n: int = 40) -> Dataset:
    X = np.column_stack([np.arange(n), np.arange(n) % 2, np.full(n, np.nan)])
    return Dataset(
        X=X,
        y=np.arange(n) % 2,
        feature_names=("id", HOSTILE, "empty"),
        class_names=("no", "yes"),
        categorical_features=(HOSTILE,),
        categories={HOSTILE: ("cat", "dog")},
    )


def _decode_png(data: bytes) -> np.ndarray:
    """Decode an 8-bit grey PNG with Pillow."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "PNG" and image.mode == "L"
        return np.asarray(image)


def test_coerces_dtypes_and_fills_defaults() -> None:
    """X becomes float32, y int64; feature and class names get defaults."""
    ds = Dataset(X=np.ones((4, 2), np.float64), y=[0, 1, 2, 1])
    assert ds.X.dtype == np.float32 and ds.y.dtype == np.int64
    assert ds.feature_names == ("feature_0", "feature_1")
    assert ds.class_names == ("0", "1", "2")
    assert len(ds) == 4 and ds.n_features == 2 and ds.n_classes == 3


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"X": np.ones(4), "y": np.zeros(4)}, ShapeError, r"X must have shape \(n_samples"),
        ({"X": np.ones((4, 2)), "y": np.zeros(3)}, ShapeError, r"y must have shape"),
        ({"X": np.ones((4, 2)), "y": np.zeros(4), "feature_names": ("a",)}, ShapeError, "2 names"),
        ({"X": np.ones((4, 2)), "y": np.zeros(4), "image_shape": (2, 2)}, ShapeError, "product"),
        ({"X": np.ones((2, 2)), "y": [0, 5], "class_names": ("a", "b")}, ValidationError, "[0, 2)"),
        ({"X": np.ones((2, 2)), "y": [0.5, 1]}, ValidationError, "integer class indices"),
        ({"X": np.ones((2, 2)), "y": [0, 1], "task": "ranking"}, UnknownNameError, "regression"),
    ],
    ids=["X-1d", "y-length", "names", "image-shape", "label-range", "float-labels", "task"],
)
def test_invalid_construction_names_the_argument(
    kwargs: dict, error: type[Exception], message: str
) -> None:
    """Bad arrays or metadata raise a typed error that names the argument and what came."""
    with pytest.raises(error, match=re.escape(message) if "[" in message else message):
        Dataset(**kwargs)


def test_is_frozen() -> None:
    """Fields cannot be reassigned."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        _table().name = "x"  # type: ignore[misc]


def test_regression_targets_are_float32_without_classes() -> None:
    """Regression keeps float targets and has no class names."""
    ds = Dataset(X=np.ones((3, 1)), y=[0.5, -1.0, 2.0], task="regression")
    assert ds.y.dtype == np.float32 and ds.class_names == () and ds.n_classes == 0


def test_to_frame_round_trips_categories_and_target() -> None:
    """to_frame gives features then target, with categories and class names restored."""
    ds = _table(6)
    frame = ds.to_frame()
    assert list(frame.columns) == ["id", HOSTILE, "empty", "target"]
    assert list(frame[HOSTILE].astype(str)) == ["cat", "dog"] * 3
    assert list(frame["target"].cat.codes) == list(ds.y)
    assert list(frame["target"].cat.categories) == ["no", "yes"]
    assert frame["empty"].isna().all()


def test_train_test_split_is_stratified_disjoint_and_seeded() -> None:
    """The split keeps class proportions, covers every row once, and depends only on seed."""
    ds = _images(30)
    train, test = ds.train_test_split(test_size=0.2, seed=1)
    assert (len(train), len(test)) == (24, 6)
    assert np.bincount(test.y).tolist() == [2, 2, 2]
    rows = {tuple(r) for r in np.vstack([train.X, test.X]).tolist()}
    assert len(rows) == 30
    again, _ = ds.train_test_split(test_size=0.2, seed=1)
    other, _ = ds.train_test_split(test_size=0.2, seed=2)
    np.testing.assert_array_equal(again.X, train.X)
    assert not np.array_equal(other.X, train.X)
    assert train.class_names == ds.class_names and train.image_shape == (3, 4)


@pytest.mark.parametrize("test_size", [0.0, 1.0, 0, 30, "half", True], ids=str)
def test_train_test_split_rejects_bad_sizes(test_size: object) -> None:
    """test_size outside (0, 1) or [1, n-1] raises ValidationError naming test_size."""
    with pytest.raises(ValidationError, match="test_size"):
        _images(30).train_test_split(test_size=test_size)  # type: ignore[arg-type]


def test_stratified_split_of_a_singleton_class_explains_itself() -> None:
    """A class with one member cannot be stratified; the error suggests stratify=False."""
    ds = Dataset(X=np.ones((10, 1)), y=[0] * 9 + [1])
    with pytest.raises(ValidationError, match="stratify=False"):
        ds.train_test_split()
    train, test = ds.train_test_split(stratify=False)
    assert len(train) + len(test) == 10


def test_images_view_and_tabular_refusal() -> None:
    """images reshapes X to (n, *image_shape); a table has no images."""
    ds = _images(5)
    assert ds.images.shape == (5, 3, 4)
    np.testing.assert_array_equal(ds.images[2].ravel(), ds.X[2])
    with pytest.raises(ValidationError, match="tabular"):
        _ = _table().images


def test_repr_is_one_short_line() -> None:
    """repr names the dataset and its sizes on one line."""
    text = repr(_images(5))
    assert "\n" not in text and len(text) < 200 and "n_samples=5" in text


def test_html_thumbnails_are_escaped_self_contained_and_unique() -> None:
    """_repr_html_ escapes every name, embeds PNG data URIs only and uses fresh ids."""
    ds = _images(30)
    first, second = ds._repr_html_(), ds._repr_html_()
    assert HOSTILE not in first and "&lt;script&gt;" in first
    ids, again = re.findall(r'id="([^"]+)"', first), re.findall(r'id="([^"]+)"', second)
    assert ids and len(set(ids)) == len(ids) and not set(ids) & set(again)
    sources = re.findall(r'src="([^"]+)"', first)
    assert len(sources) == 24 and all(s.startswith("data:image/png;base64,") for s in sources)
    assert "http://" not in first and "https://" not in first
    pixels = _decode_png(base64.b64decode(sources[0].split(",", 1)[1]))
    expected = np.floor(ds.images[0] * 255 + 0.5).astype(np.uint8)
    np.testing.assert_array_equal(pixels, expected)


def test_html_table_for_tabular_data_escapes_names() -> None:
    """A table renders its first rows with escaped names and category labels."""
    page = _table()._repr_html_()
    assert "<table" in page and HOSTILE not in page
    assert "&lt;script&gt;" in page and ">dog<" in page and ">NaN<" in page


def test_pixel_names_follow_the_image_layout() -> None:
    """pixel_<row>_<col>[_<channel>] names each value of a flat row, channels first or last."""
    from xai_datasets._dataset import pixel_names

    chw = np.arange(30).reshape(3, 2, 5)
    names = pixel_names((3, 2, 5))
    c, h, w = np.unravel_index(17, chw.shape)
    assert names[17] == f"pixel_{h}_{w}_{c}" and len(set(names)) == 30
    assert pixel_names((2, 5, 3))[17] == "pixel_1_0_2"
    assert pixel_names((2, 3))[4] == "pixel_1_1"
