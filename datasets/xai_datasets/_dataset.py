"""The :class:`Dataset` every loader returns."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core.errors import ShapeError, UnknownNameError, ValidationError
from xai_core.images import image_layout

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Dataset", "pixel_names"]

_TASKS = ("classification", "regression")


def pixel_names(image_shape: Sequence[int]) -> tuple[str, ...]:
    """Feature names of flattened pixels: ``pixel_<row>_<col>`` (``_<channel>`` if 3-D).

    Parameters
    ----------
    image_shape : sequence of int
        ``(height, width)``, ``(height, width, channels)`` or ``(channels, height, width)``
        (the rule of :mod:`xai_core.images`); names are row, column, then channel.

    Returns
    -------
    tuple of str
        ``prod(image_shape)`` names in C (row-major) order of ``image_shape``.
    """
    layout = image_layout(image_shape)
    idx = np.indices(layout.shape).reshape(len(layout.shape), -1)
    axes = [*layout.spatial_axes] + ([] if layout.channel_axis is None else [layout.channel_axis])
    return tuple("pixel_" + "_".join(map(str, row)) for row in idx[axes].T.tolist())


@dataclass(frozen=True, eq=False, repr=False)
class Dataset:
    """A dataset ready to explain: features, targets and what they mean.

    Parameters
    ----------
    X : numpy.ndarray of float32, shape (n_samples, n_features)
        Features. Images are flattened in C order, pixels scaled to [0, 1]; reshape with
        :attr:`images`. Categorical columns of a table hold ordinal codes (see
        ``categories``), missing values are NaN.
    y : numpy.ndarray, shape (n_samples,)
        Targets: int64 class indices into ``class_names`` for classification, float32
        values for regression.
    feature_names : tuple of str, length n_features
        Column names, or ``pixel_<row>_<col>`` for images. Empty: ``feature_0``, ...
    class_names : tuple of str
        One name per class (empty for regression). Empty for classification: ``"0"``,
        ``"1"``, ... up to the largest label.
    task : {"classification", "regression"}
    image_shape : tuple of int or None
        ``(height, width)``, ``(height, width, channels)`` or ``(channels, height, width)``
        of each image (the rule of :mod:`xai_core.images`), or None for tabular data.
    name : str
        A short name, e.g. ``"fashion-mnist (sample, train)"``.
    description : str
        What the data is, where it comes from and under which license.
    source : str
        Where the data comes from (URL or package).
    license : str
        The data's license.
    target_name : str
        The target column's name in :meth:`to_frame`.
    categorical_features : tuple of str
        Features that hold ordinal codes of categories.
    categories : mapping of str to tuple of str
        For each categorical feature, the category names; code ``i`` means
        ``categories[name][i]``.
    missing : mapping of str to int
        Missing values per column as found in the source (features kept as NaN; rows with
        a missing target dropped).

    Notes
    -----
    Arrays are validated and coerced to the dtypes above when the dataset is created.
    """

    X: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...] = ()
    class_names: tuple[str, ...] = ()
    task: str = "classification"
    image_shape: tuple[int, ...] | None = None
    name: str = "dataset"
    description: str = ""
    source: str = ""
    license: str = ""
    target_name: str = "target"
    categorical_features: tuple[str, ...] = ()
    categories: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    missing: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        def put(attr: str, value: Any) -> None:
            object.__setattr__(self, attr, value)

        if self.task not in _TASKS:
            raise UnknownNameError("task", self.task, _TASKS)
        X = np.asarray(self.X)
        if X.ndim != 2:
            raise ShapeError(
                f"X must have shape (n_samples, n_features); got an array of shape {X.shape}"
            )
        if X.dtype != np.float32:
            X = X.astype(np.float32)
        n, d = X.shape
        y = np.asarray(self.y)
        if y.shape != (n,):
            raise ShapeError(f"y must have shape (n_samples,) = ({n},); got {y.shape}")
        if self.task == "classification":
            if y.dtype == np.bool_:
                y = y.astype(np.int64)
            if y.size and (not np.issubdtype(y.dtype, np.number) or not np.all(np.mod(y, 1) == 0)):
                raise ValidationError(
                    f"y must hold integer class indices for classification; got dtype {y.dtype}"
                )
            y = y.astype(np.int64, copy=False)
            names = tuple(str(c) for c in self.class_names)
            if not names:
                names = tuple(str(i) for i in range(int(y.max()) + 1 if y.size else 0))
            if y.size and (y.min() < 0 or y.max() >= len(names)):
                raise ValidationError(
                    f"y must hold class indices in [0, {len(names)}) for {len(names)} "
                    f"class_names; got values from {y.min()} to {y.max()}"
                )
            put("class_names", names)
        else:
            y = y.astype(np.float32, copy=False)
            if self.class_names:
                raise ValidationError(
                    f"class_names must be empty for regression; got {len(self.class_names)}"
                )
            put("class_names", ())
        features = tuple(str(f) for f in self.feature_names) or tuple(
            f"feature_{i}" for i in range(d)
        )
        if len(features) != d:
            raise ShapeError(f"feature_names must have n_features = {d} names; got {len(features)}")
        if self.image_shape is not None:
            shape = image_layout(self.image_shape).shape
            if math.prod(shape) != d:
                raise ShapeError(
                    f"image_shape must be (height, width[, channels]) or (channels, height, "
                    f"width) with product n_features = {d}; got {shape}"
                )
            put("image_shape", shape)
        unknown = [c for c in self.categorical_features if c not in features]
        if unknown:
            raise UnknownNameError("feature", unknown[0], features)
        put("X", X)
        put("y", y)
        put("feature_names", features)
        put("categorical_features", tuple(self.categorical_features))
        put("categories", MappingProxyType({k: tuple(v) for k, v in self.categories.items()}))
        put("missing", MappingProxyType({k: int(v) for k, v in self.missing.items()}))

    # -- sizes -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.X.shape[0]

    @property
    def n_samples(self) -> int:
        """Number of rows."""
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        """Number of columns of ``X``."""
        return self.X.shape[1]

    @property
    def n_classes(self) -> int:
        """Number of classes (0 for regression)."""
        return len(self.class_names)

    @property
    def images(self) -> np.ndarray:
        """``X`` as images: float32 of shape ``(n_samples, *image_shape)`` (a view)."""
        if self.image_shape is None:
            raise ValidationError(
                f"dataset {self.name!r} is tabular (image_shape is None); it has no images"
            )
        return self.X.reshape(self.n_samples, *self.image_shape)

    # -- conversions -----------------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """Return a pandas DataFrame: one column per feature, then the target.

        Returns
        -------
        pandas.DataFrame, shape (n_samples, n_features + 1)
            Numeric features as float32; categorical features as ``pandas.Categorical``
            with their category names; the target as a ``Categorical`` of class names for
            classification (``.cat.codes`` gives ``y``) or float32 for regression.
        """
        import pandas as pd

        columns: dict[str, Any] = {}
        for j, name in enumerate(self.feature_names):
            col = self.X[:, j]
            if name in self.categories:
                codes = np.where(np.isnan(col), -1, col).astype(np.int64)
                columns[name] = pd.Categorical.from_codes(codes, self.categories[name])
            else:
                columns[name] = col
        target = self.target_name
        while target in columns:
            target += "_"
        if self.task == "classification":
            columns[target] = pd.Categorical.from_codes(self.y, self.class_names)
        else:
            columns[target] = self.y
        return pd.DataFrame(columns, copy=False)

    def take(self, indices: Sequence[int] | np.ndarray, *, name: str | None = None) -> Dataset:
        """Return the rows at ``indices`` as a new Dataset with the same metadata.

        Parameters
        ----------
        indices : array_like of int, shape (k,)
            Row positions (or a boolean mask of shape ``(n_samples,)``).
        name : str, optional
            The new dataset's name; default: unchanged.
        """
        idx = np.asarray(indices)
        return dataclasses.replace(
            self, X=self.X[idx], y=self.y[idx], name=self.name if name is None else name
        )

    def train_test_split(
        self, test_size: float | int = 0.2, seed: int | None = 0, stratify: bool = True
    ) -> tuple[Dataset, Dataset]:
        """Split into a training and a test Dataset (scikit-learn's ``train_test_split``).

        Parameters
        ----------
        test_size : float or int
            Fraction of rows in (0, 1), or number of rows in [1, n_samples - 1], for test.
        seed : int or None
            Seed of the shuffle; the same seed gives the same split.
        stratify : bool
            Keep class proportions in both parts (classification only).

        Returns
        -------
        (Dataset, Dataset)
            ``(train, test)``, each with the same metadata as this one.
        """
        from sklearn.model_selection import train_test_split

        n = self.n_samples
        if isinstance(test_size, bool) or not isinstance(test_size, (int, float, np.number)):
            raise ValidationError(f"test_size must be a float or an int; got {test_size!r}")
        if isinstance(test_size, (int, np.integer)):
            if not 1 <= test_size <= n - 1:
                raise ValidationError(
                    f"test_size must be in [1, {n - 1}] rows for {n} samples; got {test_size}"
                )
        elif not 0.0 < float(test_size) < 1.0:
            raise ValidationError(f"test_size must be in (0, 1) as a fraction; got {test_size}")
        strat = self.y if stratify and self.task == "classification" else None
        try:
            train_idx, test_idx = train_test_split(
                np.arange(n), test_size=test_size, random_state=seed, stratify=strat
            )
        except ValueError as exc:
            raise ValidationError(
                f"cannot split {n} samples with test_size={test_size!r}, "
                f"stratify={stratify}: {exc}. Try stratify=False or another test_size"
            ) from exc
        return (
            self.take(train_idx, name=f"{self.name} [train split]"),
            self.take(test_idx, name=f"{self.name} [test split]"),
        )

    # -- display ---------------------------------------------------------------------------
    def _summary(self) -> str:
        parts = [f"n_samples={self.n_samples}", f"n_features={self.n_features}", self.task]
        if self.task == "classification":
            parts.append(f"n_classes={self.n_classes}")
        if self.image_shape is not None:
            parts.append(f"image_shape={self.image_shape}")
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"Dataset({self.name!r}, {self._summary()})"

    def _repr_html_(self) -> str:
        """The report's dataset section as a notebook fragment (names escaped, fresh ids)."""
        from xai_core.report import render_fragment

        return render_fragment(self)
