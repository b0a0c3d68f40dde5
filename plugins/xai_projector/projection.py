"""``project()``: vectors (or a layer's activations) projected, with neighbours, search and export."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import xai_core as xai
from xai_core import ShapeError, UnknownNameError, ValidationError
from xai_core.attribution.seeds import resolve_seed
from xai_core.validation import check_bool, check_seed
from xai_projector import export as _export
from xai_projector import inputs as _inputs
from xai_projector import methods as _methods
from xai_projector.display import ProjectionView
from xai_projector.neighbors import (
    METRICS,
    Neighbors,
    approximate_neighbors,
    check_k,
    exact_neighbors,
)
from xai_projector.search import Selection, search_columns

__all__ = ["Projection", "project"]


class Projection:
    """Vectors, their low-dimensional projection, labels and metadata.

    Returned by :func:`project`; renders in notebooks and reports (an interactive scatter),
    finds neighbours in the original space, searches labels and metadata and exports.

    Attributes
    ----------
    vectors : ndarray of shape (n_samples, n_features)
        The original vectors (before spherizing).
    coordinates : ndarray of shape (n_samples, n_components)
        The projection, float64.
    method : str
        ``"pca"``, ``"tsne"``, ``"umap"``, ``"linear"`` or ``"custom"``.
    labels : ndarray of shape (n_samples,) of str, or None
    metadata : dict of str to ndarray of shape (n_samples,) of str
    explained_variance_ratio : ndarray of shape (n_components,) or None
        PCA only: the fraction of the variance each component explains.
    meta : dict
        Seed, options, spherize, timings and method-specific figures.
    images : ndarray of shape (n_samples, height, width) or None
        Grey images in [0, 1] shown as thumbnails and exported as a sprite.
    explanation : Explanation or None
        Attributions of the same rows; the view shows a point's heatmap on click.
    search_fields : tuple of str or None
        The columns :meth:`search` (and the view's search box) looks in by default: the
        labels (``("label",)``) when there are labels (a vocabulary's words included), as
        TensorBoard's projector searches by label; None (every column) without them.
    """

    def __init__(
        self,
        vectors: np.ndarray,
        coordinates: np.ndarray,
        method: str,
        labels: np.ndarray | None,
        metadata: dict[str, np.ndarray],
        meta: dict[str, Any],
        images: np.ndarray | None = None,
        explanation: Any = None,
        search_fields: Sequence[str] | None = None,
    ) -> None:
        self.vectors = vectors
        self.coordinates = coordinates
        self.method = method
        self.labels = labels
        self.metadata = metadata
        self.meta = meta
        self.images = images
        self.explanation = explanation
        self.search_fields = None if search_fields is None else tuple(search_fields)
        self.explained_variance_ratio = meta.get("explained_variance_ratio")
        self._neighbor_cache: dict[tuple[int, str], Neighbors] = {}

    # -- basic facts ---------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    @property
    def n_components(self) -> int:
        """Dimensions of the projection (2 or 3)."""
        return int(self.coordinates.shape[1])

    @property
    def snapshots(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(iterations, embeddings)`` kept by ``tsne_snapshots=``, or None.

        ``iterations`` (n_snapshots,) are the iterations done when each embedding
        (n_snapshots, n_samples, 2) was taken; the last is the result, :attr:`coordinates`.
        """
        if "snapshots" not in self.meta:
            return None
        return self.meta["snapshot_iterations"], self.meta["snapshots"]

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """Labels (as ``"label"``, first) and metadata columns: what search and export see."""
        return _columns(self.labels, self.metadata)

    def __repr__(self) -> str:
        return (
            f"Projection(method={self.method!r}, n_samples={len(self)}, "
            f"n_features={self.vectors.shape[1]}, n_components={self.n_components})"
        )

    # -- neighbours ----------------------------------------------------------------------
    def neighbors(
        self,
        k: int = 10,
        metric: str = "cosine",
        *,
        rows: Sequence[int] | Selection | None = None,
        approximate: bool = False,
        seed: int | None = None,
        progress: bool | None = None,
    ) -> Neighbors:
        """The k nearest neighbours in the original space (before spherizing).

        Parameters
        ----------
        k : int, default=10
            Neighbours per row, 1 <= k <= n_samples - 1.
        metric : {"cosine", "euclidean"}
        rows : sequence of int, Selection or str, optional
            Only these rows' neighbours (exact search only); by default every row's. A
            string is a label: the rows labelled exactly so (a word of a vocabulary).
        approximate : bool, default=False
            Use a pynndescent index (if installed); its recall against the exact search,
            measured on sampled rows, is in ``.recall``.
        seed : int, optional
            For the approximate index; by default the projection's seed.
        progress : bool or None, default=None
            A progress bar: ``None`` for long searches only.

        Returns
        -------
        Neighbors
            ``indices`` and ``distances`` of shape (n_queries, k), nearest first.
        """
        n = len(self)
        k = check_k(k, n)
        if metric not in METRICS:
            raise UnknownNameError("metric", metric, METRICS)
        seed = self.meta["seed"] if seed is None else check_seed(seed)
        if approximate:
            if rows is not None:
                raise ValidationError("rows= works with the exact search only (approximate=False).")
            if k > n - 2:
                raise ValidationError(
                    f"k must be at most n_samples - 2 = {n - 2} with approximate=True; got {k}."
                )
            return approximate_neighbors(self.vectors, k, metric, seed=seed, progress=progress)
        if rows is None:
            # Lists are sorted nearest first, so a cached search with a larger k answers too.
            larger = [c for (kk, m), c in self._neighbor_cache.items() if m == metric and kk >= k]
            if larger:
                c = min(larger, key=lambda c: c.k)
                if c.k == k:
                    return c
                return Neighbors(
                    c.queries, c.indices[:, :k], c.distances[:, :k], metric, meta=dict(c.meta)
                )
            found = exact_neighbors(self.vectors, k, metric, progress=progress)
            self._neighbor_cache[(k, metric)] = found
            return found
        if isinstance(rows, str):
            rows = self._labelled(rows)
        q = np.asarray(rows, dtype=np.int64).ravel()
        if q.size == 0 or q.min() < 0 or q.max() >= n:
            raise ValidationError(
                f"rows must be row indices in [0, {n - 1}]; got {q[:5].tolist()}"
                f"{'...' if q.size > 5 else ''} ({q.size} in all)."
            )
        return exact_neighbors(self.vectors, k, metric, queries=q, progress=progress)

    def _labelled(self, label: str) -> np.ndarray:
        """The rows labelled exactly ``label``; an error naming close labels when there are none."""
        if self.labels is None:
            raise ValidationError(f"rows={label!r} names a label, but this projection has none.")
        found = np.flatnonzero(self.labels == label)
        if found.size == 0:
            import difflib

            close = difflib.get_close_matches(label, self.labels.tolist(), n=10)
            raise UnknownNameError("label", label, close or ["(no close label)"])
        return found

    # -- search --------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        regex: bool = False,
        case_sensitive: bool = False,
        fields: str | Sequence[str] | None = None,
        name: str = "",
    ) -> Selection:
        """Rows whose label or metadata matches ``query`` (substring, or an RE2 regular expression if ``regex``).

        ``fields`` (a column name or names: ``"label"`` or a metadata column) says where
        to look; by default :attr:`search_fields`: the labels when there are labels (so
        ``"7"`` finds the points labelled 7, not every confidence with a 7 among its
        digits), else every column.

        Returns
        -------
        Selection
            Usable as row indices: ``X[p.search("cat").indices]``.
        """
        if fields is None and self.search_fields is not None:
            fields = list(self.search_fields)
        sel = search_columns(
            self.columns, query, regex=regex, case_sensitive=case_sensitive, fields=fields
        )
        return Selection(sel.indices, name=name or query, query=query)

    def select(self, rows: Sequence[int] | np.ndarray, name: str = "") -> Selection:
        """A hand-picked :class:`Selection` of row indices (or a boolean mask of shape (n_samples,))."""
        arr = np.asarray(rows)
        if arr.dtype == bool:
            if arr.shape != (len(self),):
                raise ShapeError(f"a mask must have shape ({len(self)},); got shape {arr.shape}.")
            arr = np.flatnonzero(arr)
        arr = arr.astype(np.int64).ravel()
        if arr.size and (arr.min() < 0 or arr.max() >= len(self)):
            raise ValidationError(f"rows must be row indices in [0, {len(self) - 1}].")
        return Selection(arr, name=name)

    # -- export --------------------------------------------------------------------------
    def export_tensorboard(
        self,
        directory: str | os.PathLike[str],
        *,
        tensor_name: str = "embedding",
        include_images: bool = True,
        bookmarks: Sequence[Any] | None = None,
    ) -> dict[str, Path]:
        """TensorBoard Projector files: ``tensors.tsv``, ``metadata.tsv``, ``sprite.png``
        (with images), ``bookmarks.json`` (with ``bookmarks``: ViewStates, as
        :meth:`ProjectionView.bookmark` saves them) and ``projector_config.pbtxt``. See
        :mod:`xai_projector.export`; :func:`~xai_projector.load_tensorboard` reads them back."""
        states = None
        if bookmarks is not None:
            from xai_projector.display import check_state
            from xai_projector.state import ViewState

            states = [
                check_state(self, b if isinstance(b, ViewState) else ViewState.from_dict(b))
                for b in bookmarks
            ]
        return _export.write_tensorboard(
            directory,
            self.vectors,
            self.columns,
            tensor_name=tensor_name,
            images=self.images if include_images else None,
            bookmarks=None if states is None else _export.tensorboard_bookmarks(self, states),
        )

    def to_csv(self, path: str | os.PathLike[str]) -> Path:
        """The projected coordinates with labels and metadata, one CSV row per point."""
        return _export.write_coordinates_csv(path, self.coordinates, self.columns)

    def save_neighbors(
        self, path: str | os.PathLike[str], k: int = 10, metric: str = "cosine"
    ) -> Path:
        """Every row's k nearest neighbours as JSON (``.json``) or CSV."""
        return _export.write_neighbors(path, self.neighbors(k, metric))

    def save_selections(
        self, path: str | os.PathLike[str], selections: Sequence[Selection]
    ) -> Path:
        """Selections (bookmarks) as JSON, with each selected row's label."""
        return _export.write_selections(path, selections, self.labels)

    # -- display -------------------------------------------------------------------------
    def show(
        self,
        color_by: str | None = None,
        dims: int | None = None,
        *,
        label_by: str | None = None,
        thumbnails: bool | None = None,
    ) -> ProjectionView:
        """The interactive view starting with these settings (renders in notebooks and reports).

        Parameters
        ----------
        color_by : str, optional
            A column of :attr:`columns` (``"label"`` or a metadata column) or ``"none"``;
            by default the labels. Categorical columns get a palette and a legend, numeric
            ones a continuous scale and a colour bar (see :mod:`xai_projector.colors`);
            the view's "Colour by" menu switches between all of them.
        dims : {2, 3}, optional
            The view shown first; by default :attr:`n_components` (a 3-D projection opens
            in 3-D and can switch to 2-D).
        label_by : str, optional
            A column whose values are drawn next to the points (the view's "Label by"
            menu); by default none. At most ``MAX_DRAWN_LABELS`` (200) are drawn: the
            selected point, its neighbours and the search matches first, then the points in
            sight, skipping labels that would overlap.
        thumbnails : bool, optional
            Draw each point's image (``images=``) as a thumbnail in place of the point
            (the view's "Thumbnails" toggle); up to ``MAX_THUMBNAILS`` (2,000) points.

        Returns
        -------
        ProjectionView
            Has ``to_html``, ``save_html`` and ``_repr_html_``; ``Report.add`` takes it.

        Raises
        ------
        UnknownNameError
            ``color_by`` is not a column; the message lists the columns.
        """
        return ProjectionView(self, color_by, dims, label_by=label_by, thumbnails=thumbnails)

    def to_html(
        self,
        title: str | None = None,
        *,
        color_by: str | None = None,
        dims: int | None = None,
        label_by: str | None = None,
        thumbnails: bool | None = None,
    ) -> str:
        """A standalone HTML page with the interactive view (its own Content-Security-Policy).

        The settings are those of :meth:`show`.
        """
        return self.show(color_by, dims, label_by=label_by, thumbnails=thumbnails).to_html(title)

    def save_html(
        self,
        path: str | os.PathLike[str],
        title: str | None = None,
        *,
        color_by: str | None = None,
        dims: int | None = None,
    ) -> Path:
        """Write :meth:`to_html` to ``path`` atomically (see :func:`xai_core.files.atomic_write`)."""
        return self.show(color_by, dims).save_html(path, title)

    def _repr_html_(self) -> str:
        from xai_projector.view import notebook_html

        return notebook_html(self)


def project(
    vectors: Any,
    X: Any = None,
    *,
    layer: int | str | None = None,
    method: str = "pca",
    n_components: int = 2,
    labels: Sequence[Any] | None = None,
    vocabulary: Any = None,
    metadata: Mapping[str, Sequence[Any]] | Any = None,
    images: Any = None,
    explanation: Any = None,
    spherize: bool = False,
    seed: int | None = 0,
    groups: Sequence[tuple[Any, Any]] | None = None,
    axes: Sequence[tuple[Any, Any]] | None = None,
    axes_regex: bool = False,
    axes_fields: str | Sequence[str] | None = None,
    perplexity: float = 30.0,
    learning_rate: float | str = "auto",
    max_iter: int = 1000,
    tsne_backend: str = "auto",
    tsne_snapshots: int | None = None,
    n_neighbors: int = 15,
    min_dist: float = 0.1,
    progress: bool | None = None,
) -> Projection:
    """Project vectors, or a model layer's activations, to 2-D or 3-D.

    ``project(vectors, method=..., labels=..., metadata=...)``,
    ``project(runner_or_model, X, layer=...)``, or a model's word embeddings:
    ``project(model, layer="embedding", vocabulary=tokenizer)`` (its embedding table, one
    row per token id, labelled with the words; see :mod:`xai_projector.tables`).

    Parameters
    ----------
    vectors : array-like of shape (n_samples, n_features), or a ModelRunner / native model
        The embeddings; or a runner (or model) whose ``activations(X, layer)`` give them.
        With ``X``, anything that is not array-like is a model, imported as
        :func:`xai_core.explain` imports it (a torch module traced on ``X``, a Keras model,
        a model file): its layers are the imported network's nodes.
    X : array-like of shape (n_samples, *input_shape), optional
        The inputs, when ``vectors`` is a runner or model.
    layer : int or str, optional
        The layer whose outputs are the embeddings (index or name), with a runner. Without
        ``X``: the embedding layer whose table is projected (its name, or its position among
        the model's embedding layers); by default the only one (a ``transformers`` model's
        input embeddings).
    method : {"pca", "tsne", "umap", "linear", "custom"}, default="pca"
    n_components : {2, 3}, default=2
    labels : sequence of length n_samples, optional
        Colours the points; what :meth:`Projection.search` looks in by default.
    vocabulary : sequence of str, mapping of str to int, or a tokenizer, optional
        The words of the rows, as labels (instead of ``labels``): a list (row i is word i),
        a dict word -> id, or a ``tokenizers`` / ``transformers`` tokenizer (its
        vocabulary); its size must be the number of rows. An embedding table's projection
        also gets an ``id`` column (the row's token id), and :meth:`Projection.search`
        looks in the words by default.
    metadata : mapping of str to sequence of length n_samples, or DataFrame, optional
        More columns, shown on hover and searched when named (``fields=``, or the view's
        "Search by"); floats are shown in their own precision (a float32 ``0.993``).
    images : array-like of shape (n_samples, height, width), optional
        Grey images in [0, 1]: hover thumbnails and the TensorBoard sprite.
    explanation : Explanation, optional
        Attributions of the same rows (``xai.explain(runner, X, ...)``); clicking a point in
        the view shows its heatmap (image inputs, up to 2,000 points).
    spherize : bool, default=False
        Centre the vectors and scale each to unit norm before projecting (neighbours are
        always computed on the original vectors).
    seed : int or None, default=0
        Seeds every stochastic step (randomized PCA, t-SNE, UMAP, the approximate index);
        ``None`` draws a seed, recorded in ``meta["seed"]``.
    groups : sequence of one or two (a, b) pairs
        ``method="linear"``: axis i runs from the mean of group a to the mean of group b;
        a group is a label, a Selection, row indices or a boolean mask.
    axes : two (a, b) pairs
        ``method="custom"`` (TensorBoard's custom projection, 2-D): x runs from the centroid
        of the points matching search ``a`` to that of search ``b`` of the first pair, y
        likewise for the second (unit directions, not made orthogonal: see
        :func:`~xai_projector.methods.custom_axes`). A search is a str, matched as
        :meth:`Projection.search` matches (substring, case-insensitive, in the labels when
        there are labels); an end may also be a Selection, row indices or a boolean mask.
    axes_regex, axes_fields
        The searches of ``axes`` as regular expressions, and the column(s) they look in.
    perplexity, learning_rate, max_iter
        t-SNE settings; ``max_iter`` (at least 250) counts the 250 early-exaggeration
        iterations too.
    tsne_backend : {"auto", "sklearn", "opentsne"}, default="auto"
        Which t-SNE runs: scikit-learn's Barnes-Hut ``TSNE``, or openTSNE's FFT-accelerated
        one (``pip install openTSNE``; 2-D only). ``"auto"`` takes openTSNE, when installed,
        for 2-D embeddings of more than ``OPENTSNE_MIN_SAMPLES`` (25,000) rows, where it is
        faster. The one that ran is in ``meta["implementation"]``.
    tsne_snapshots : int, optional
        Keep the t-SNE embedding every this many iterations, for the view's iteration
        animation (a slider and play / pause) and :attr:`Projection.snapshots`. Runs
        openTSNE (its callbacks; 2-D only; ``tsne_backend="sklearn"`` is an error).
    n_neighbors, min_dist
        UMAP settings.
    progress : bool or None, default=None
        Progress bars: ``None`` for long steps only (neighbours over large inputs).

    Returns
    -------
    Projection
    """
    V, source_info = _vectors(vectors, X, layer, vocabulary)
    n = V.shape[0]
    if method not in _methods.METHODS:
        raise UnknownNameError("projection method", method, _methods.METHODS)
    if isinstance(n_components, bool) or n_components not in (2, 3):
        raise ValidationError(f"n_components must be 2 or 3; got {n_components!r}.")
    seed = resolve_seed(seed)
    if vocabulary is not None and labels is not None:
        raise ValidationError("pass labels= or vocabulary= (the words as labels), not both.")
    if vocabulary is not None:
        from xai_projector.tables import vocabulary_words

        labels = vocabulary_words(vocabulary, n)
    label_arr = None if labels is None else _inputs.check_strings(labels, "labels", n)
    meta_cols = _inputs.check_metadata(metadata, n)
    table = "embedding_layer" in source_info
    if table and "id" not in meta_cols:
        meta_cols["id"] = np.arange(n).astype(str).astype(object)
    image_arr = _inputs.check_images(images, n)
    explanation = _inputs.check_explanation(explanation, n)
    pairs = _inputs.check_groups(groups, method, n_components, label_arr, n)
    if axes_fields is None and label_arr is not None:
        axes_fields = "label"
    axis_pairs, axis_queries = _inputs.check_axes(
        axes, method, n_components, _columns(label_arr, meta_cols), label_arr, n,
        regex=check_bool(axes_regex, "axes_regex"), fields=axes_fields,
    )  # fmt: skip
    if method == "custom":
        pairs = axis_pairs
    settings = {
        "perplexity": perplexity,
        "learning_rate": learning_rate,
        "max_iter": max_iter,
        "tsne_backend": tsne_backend,
        "tsne_snapshots": tsne_snapshots,
        "n_neighbors": n_neighbors,
        "min_dist": min_dist,
    }
    coords, meta = _projected(
        V, method, n_components, seed, pairs, settings, spherize, progress, source_info
    )
    if method == "custom":
        meta["options"] = {"axes": axis_queries, "axes_regex": bool(axes_regex),
                           "axes_fields": axes_fields}  # fmt: skip
    fields = ("label",) if label_arr is not None else None  # as TensorBoard: search by label
    return Projection(V, coords, method, label_arr, meta_cols, meta, image_arr, explanation, fields)


def _columns(labels: np.ndarray | None, metadata: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Labels (as ``"label"``, first) and metadata columns (renamed if one is called "label")."""
    out: dict[str, np.ndarray] = {}
    if labels is not None:
        out["label"] = labels
    for k, v in metadata.items():
        out[k if k not in out else f"{k} (metadata)"] = v
    return out


def _vectors(
    vectors: Any, X: Any, layer: Any, vocabulary: Any = None
) -> tuple[np.ndarray, dict[str, Any]]:
    """The vectors to project, checked, and where they came from (a layer's activations of
    ``X``, or a model's embedding table)."""
    from xai_projector.tables import is_embedding_model, table_of

    source_info: dict[str, Any] = {}
    not_array = not hasattr(vectors, "__array__") and not isinstance(vectors, (list, tuple))
    if X is None and not_array and (vocabulary is not None or is_embedding_model(vectors)):
        table, name = table_of(vectors, layer)
        return _inputs.check_vectors(table), {"embedding_layer": name}
    if (
        hasattr(vectors, "activations")
        or isinstance(vectors, xai.Model)
        or (X is not None and not_array)
    ):
        if X is None:
            raise ValidationError("X is required when projecting a model's activations.")
        vectors, source_info = _inputs.vectors_from(vectors, X, layer)
    elif X is not None or layer is not None:
        raise ValidationError(
            "X and layer apply only when the first argument is a ModelRunner or a model; "
            f"got {type(vectors).__name__}."
        )
    return _inputs.check_vectors(vectors), source_info


def _projected(
    V: np.ndarray,
    method: str,
    n_components: int,
    seed: int,
    pairs: Any,
    settings: dict[str, Any],
    spherize: bool,
    progress: bool | None,
    source_info: dict[str, Any],
) -> tuple[np.ndarray, dict[str, Any]]:
    """Run ``method`` on ``V`` (spherized first if asked): float64 coordinates and the meta."""
    data = _methods.spherize(V) if spherize else V
    start = time.perf_counter()
    coords, extra, options = _methods.run(
        method, data, n_components, seed=seed, groups=pairs, settings=settings
    )
    meta = {
        "seed": seed,
        "spherize": bool(spherize),
        "options": options,
        "seconds": time.perf_counter() - start,
        "progress": check_bool(progress, "progress", allow_none=True),
        **source_info,
        **extra,
    }
    return np.asarray(coords, dtype=np.float64), meta
