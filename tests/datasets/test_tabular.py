"""Tabular loaders: scikit-learn's bundled sets and Kaggle-style CSV files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xai_core.errors import DataError, UnknownNameError, ValidationError, XaiWarning
from xai_datasets import load_breast_cancer, load_csv, load_digits

TITANIC = """PassengerId,Survived,Pclass,Sex,Age,Fare,Embarked
1,0,3,male,22,7.25,S
2,1,1,female,38,71.28,C
3,1,3,female,,7.92,S
4,1,1,female,35,53.1,S
5,0,3,male,35,8.05,
6,0,3,male,,8.46,Q
7,0,1,male,54,51.86,S
8,0,3,male,2,21.07,S
"""


def _csv(tmp_path: Path, text: str, name: str = "train.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_digits_are_8x8_images_in_unit_range() -> None:
    """load_digits gives 1,797 8x8 images scaled to [0, 1] and ten digit classes."""
    ds = load_digits()
    assert ds.X.shape == (1797, 64) and ds.X.dtype == np.float32
    assert ds.X.min() == 0.0 and ds.X.max() == 1.0
    assert ds.image_shape == (8, 8) and ds.class_names == tuple("0123456789")
    assert ds.feature_names[9] == "pixel_1_1" and "CC BY 4.0" in ds.description


def test_breast_cancer_has_named_features_and_classes() -> None:
    """load_breast_cancer gives 569 x 30 raw features, malignant/benign."""
    ds = load_breast_cancer()
    assert ds.X.shape == (569, 30) and ds.image_shape is None
    assert ds.class_names == ("malignant", "benign")
    assert ds.feature_names[0] == "mean radius"
    assert np.bincount(ds.y).tolist() == [212, 357]


def test_csv_mixed_columns_missing_values_and_classes(tmp_path: Path) -> None:
    """Numbers stay, text becomes sorted ordinal codes, NaNs are kept and reported."""
    path = _csv(tmp_path, TITANIC)
    with pytest.warns(XaiWarning, match=r"kept as NaN in X: Age 2, Embarked 1"):
        ds = load_csv(path, target="Survived", drop=["PassengerId"])
    assert ds.feature_names == ("Pclass", "Sex", "Age", "Fare", "Embarked")
    assert ds.task == "classification" and ds.class_names == ("0", "1")
    assert ds.y.tolist() == [0, 1, 1, 1, 0, 0, 0, 0]
    assert ds.categorical_features == ("Sex", "Embarked")
    assert ds.categories == {"Sex": ("female", "male"), "Embarked": ("C", "Q", "S")}
    assert ds.X[:, 1].tolist() == [1, 0, 0, 0, 1, 1, 1, 1]
    assert np.isnan(ds.X[4, 4]) and np.isnan(ds.X[2, 2])
    assert dict(ds.missing) == {"Age": 2, "Embarked": 1}
    assert ds.name == "train" and "train.csv" in ds.description
    frame = ds.to_frame()
    assert frame["Embarked"].tolist()[:3] == ["S", "C", "S"]
    assert list(frame.columns)[-1] == "Survived"


def test_csv_numeric_column_can_be_declared_categorical(tmp_path: Path) -> None:
    """categorical= turns a numeric column into categories named by its sorted values."""
    with pytest.warns(XaiWarning):
        ds = load_csv(
            _csv(tmp_path, TITANIC), "Survived", categorical=["Pclass"], drop=["PassengerId"]
        )
    assert ds.categories["Pclass"] == ("1", "3")
    assert ds.X[:3, 0].tolist() == [1, 0, 1]


def test_csv_text_target_names_the_classes(tmp_path: Path) -> None:
    """A text target gives class names from its sorted values and codes in y."""
    path = _csv(tmp_path, "x,species\n1.0,setosa\n2.0,virginica\n3.0,setosa\n4,versicolor\n")
    ds = load_csv(path, "species")
    assert ds.class_names == ("setosa", "versicolor", "virginica")
    assert ds.y.tolist() == [0, 2, 0, 1]
    assert ds.missing == {}


def test_csv_integer_class_labels_sort_numerically(tmp_path: Path) -> None:
    """Integer labels 2, 10, 9 are classes '2', '9', '10' in numeric order."""
    ds = load_csv(_csv(tmp_path, "x,y\n1,10\n2,2\n3,9\n4,2\n"), "y")
    assert ds.class_names == ("2", "9", "10") and ds.y.tolist() == [2, 0, 1, 0]


def test_csv_float_target_is_regression(tmp_path: Path) -> None:
    """A non-integral numeric target is a regression target unless task says otherwise."""
    path = _csv(tmp_path, "a,b,price\n1,2,3.5\n2,3,4.25\n3,4,1.0\n")
    ds = load_csv(path, "price")
    assert ds.task == "regression" and ds.y.dtype == np.float32 and ds.class_names == ()
    np.testing.assert_allclose(ds.y, [3.5, 4.25, 1.0])
    with pytest.raises(ValidationError, match="must be numeric for regression"):
        load_csv(_csv(tmp_path, "a,label\n1,x\n2,y\n", "t.csv"), "label", task="regression")


def test_csv_rows_without_target_are_dropped_and_reported(tmp_path: Path) -> None:
    """Rows with a missing target cannot be used; they are dropped with a warning."""
    path = _csv(tmp_path, "a,t\n1,yes\n2,\n3,no\n")
    with pytest.warns(XaiWarning, match="1 rows without a target 't' dropped"):
        ds = load_csv(path, "t")
    assert len(ds) == 2 and ds.missing == {"t": 1}


def test_csv_identifier_like_columns_are_flagged(tmp_path: Path) -> None:
    """A text column with one category per row triggers a hint to drop it."""
    rows = "".join(f"name{i},{i % 2}\n" for i in range(30))
    with pytest.warns(XaiWarning, match="nearly one category per row in Name"):
        load_csv(_csv(tmp_path, "Name,t\n" + rows), "t")


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"target": "survived"},
            UnknownNameError,
            "Unknown column 'survived'. Available: .*Survived",
        ),
        ({"target": "Survived", "drop": ["Nope"]}, UnknownNameError, "Unknown column 'Nope'"),
        ({"target": "Survived", "task": "ranking"}, UnknownNameError, "Unknown task"),
        ({"target": "Survived", "drop": ["Survived"]}, ValidationError, "must not be listed"),
    ],
    ids=["target", "drop", "task", "drop-target"],
)
def test_csv_bad_column_names_list_the_known_ones(
    tmp_path: Path, kwargs: dict, error: type[Exception], message: str
) -> None:
    """Unknown columns or tasks raise errors that list what the file has."""
    with pytest.raises(error, match=message):
        load_csv(_csv(tmp_path, TITANIC), **kwargs)


def test_csv_file_problems_are_data_errors(tmp_path: Path) -> None:
    """A missing file, an empty file and a header without rows raise DataError."""
    with pytest.raises(DataError, match="no such file"):
        load_csv(tmp_path / "absent.csv", "t")
    with pytest.raises(DataError, match="cannot be read as CSV"):
        load_csv(_csv(tmp_path, "", "empty.csv"), "t")
    with pytest.raises(DataError, match="no data rows"):
        load_csv(_csv(tmp_path, "a,t\n", "header.csv"), "t")


def test_csv_hostile_column_names_are_escaped_in_html(tmp_path: Path) -> None:
    """Column names and categories from the file are escaped in the notebook view."""
    path = _csv(tmp_path, '"<script>x</script>",t\n"<b>a</b>",1\n"c",0\n')
    page = load_csv(path, "t")._repr_html_()
    assert "<script>x" not in page and "<b>" not in page
    assert "&lt;script&gt;x&lt;/script&gt;" in page and "&lt;b&gt;a&lt;/b&gt;" in page
