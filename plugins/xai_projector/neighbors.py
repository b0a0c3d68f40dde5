"""Nearest neighbours in the original space: exact (blocked) and approximate (pynndescent)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xai_core import CapabilityError
from xai_core.progress import LONG_WORK_UNITS, progress_bar
from xai_core.validation import check_int

__all__ = ["METRICS", "Neighbors", "approximate_neighbors", "check_k", "exact_neighbors", "recall"]

#: The ``metric=`` names accepted.
METRICS = ("cosine", "euclidean")
#: Distances held at once while searching: a block of rows times all rows.
_BLOCK_ENTRIES = 1 << 22


@dataclass(frozen=True)
class Neighbors:
    """The k nearest neighbours of some rows, nearest first, the row itself excluded.

    Attributes
    ----------
    queries : ndarray of shape (n_queries,)
        Row indices whose neighbours these are.
    indices : ndarray of shape (n_queries, k)
        Row indices of the neighbours, nearest first.
    distances : ndarray of shape (n_queries, k)
        Cosine distance (``1 - cos``) or Euclidean distance, float64.
    metric : str
        ``"cosine"`` or ``"euclidean"``.
    approximate : bool
        Whether an approximate index found them.
    recall : float or None
        For approximate neighbours: the fraction of the exact neighbours found, measured
        on ``meta["recall_queries"]`` sampled rows.
    meta : dict
        ``seconds`` and, for approximate ones, ``recall_queries`` and ``seed``.
    """

    queries: np.ndarray
    indices: np.ndarray
    distances: np.ndarray
    metric: str
    approximate: bool = False
    recall: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def k(self) -> int:
        """Neighbours per query."""
        return int(self.indices.shape[1])

    def __len__(self) -> int:
        return int(self.indices.shape[0])

    def to_records(self) -> list[dict[str, Any]]:
        """One ``{"index", "neighbors", "distances"}`` dict per query (JSON-ready)."""
        return [
            {"index": int(q), "neighbors": row.tolist(), "distances": dist.tolist()}
            for q, row, dist in zip(self.queries, self.indices, self.distances)
        ]


def _prepared(X: np.ndarray, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Rows ready for dot products (unit rows for cosine) and their squared norms."""
    dtype = np.result_type(X.dtype, np.float32)
    Z = np.asarray(X, dtype=dtype)
    if metric == "cosine":
        norms = np.linalg.norm(Z, axis=1, keepdims=True)
        Z = np.divide(Z, norms, out=np.zeros_like(Z), where=norms > 0)
    return Z, np.einsum("ij,ij->i", Z, Z)


def exact_neighbors(
    X: np.ndarray,
    k: int,
    metric: str = "cosine",
    *,
    queries: np.ndarray | None = None,
    block_entries: int = _BLOCK_ENTRIES,
    progress: bool | None = None,
) -> Neighbors:
    """Exact k nearest neighbours of ``queries`` (default: every row) among the rows of ``X``.

    Distances are computed a block of query rows at a time against all rows
    (``block_entries`` distances at once, never an n x n matrix for large n) and the k
    smallest of each row are picked with ``np.argpartition``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    k : int
        Neighbours per query, 1 <= k <= n_samples - 1.
    metric : {"cosine", "euclidean"}
    queries : ndarray of shape (n_queries,), optional
        Row indices; each row's own index is excluded from its neighbours.
    block_entries : int
        Distances held at once.
    progress : bool or None
        Show a progress bar over the query rows (``None``: from 10 blocks on).

    Returns
    -------
    Neighbors
    """
    start_time = time.perf_counter()
    n = X.shape[0]
    q = np.arange(n) if queries is None else np.asarray(queries, dtype=np.int64)
    Z, sq = _prepared(X, metric)
    rows = max(1, min(len(q), block_entries // max(n, 1)))
    # A fixed spread of columns whose k-th smallest distance bounds each row's k-th from above.
    probe = np.unique(np.linspace(0, n - 1, min(n, max(1024, 8 * k))).astype(np.int64))
    starts = range(0, len(q), rows)
    long = len(starts) >= LONG_WORK_UNITS
    bar = progress_bar(len(q), progress=progress, desc="neighbours", unit="row", long=long)
    out_i = np.empty((len(q), k), dtype=np.int64)
    out_d = np.empty((len(q), k), dtype=np.float64)
    with bar:
        for s in starts:
            qi = q[s : s + rows]
            # Ranking keys: -x.y for cosine, |y|^2 - 2 x.y for Euclidean (the |x|^2 term is
            # constant along a row and added back to the k chosen).
            D = Z[qi] @ Z.T
            D *= -2.0 if metric == "euclidean" else -1.0
            if metric == "euclidean":
                D += sq
            D[np.arange(len(qi)), qi] = np.inf
            idx, key = _smallest(D, k, probe)
            out_i[s : s + len(qi)] = idx
            out_d[s : s + len(qi)] = key + (sq[qi, None] if metric == "euclidean" else 1.0)
            bar.update(len(qi))
    if metric == "euclidean":
        np.sqrt(np.maximum(out_d, 0.0), out=out_d)
    else:
        np.maximum(out_d, 0.0, out=out_d)
    return Neighbors(q, out_i, out_d, metric, meta={"seconds": time.perf_counter() - start_time})


def _smallest(D: np.ndarray, k: int, probe: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column indices and values of the k smallest entries of each row of ``D`` (b, n), sorted
    by value then index.

    The k-th smallest value over the ``probe`` columns is an upper bound on each row's k-th
    smallest overall, so only the few entries below it are sorted; ``argpartition`` over
    whole rows would touch every entry several times.
    """
    b = D.shape[0]
    bound = np.partition(D[:, probe], k - 1, axis=1)[:, k - 1]
    r, c = np.nonzero(D <= bound[:, None])  # row-major: columns ascend within a row
    counts = np.bincount(r, minlength=b)
    slot = np.arange(r.size) - np.repeat(np.cumsum(counts) - counts, counts)
    cand_c = np.zeros((b, int(counts.max())), dtype=np.int64)
    cand_v = np.full(cand_c.shape, np.inf, dtype=D.dtype)
    cand_c[r, slot] = c
    cand_v[r, slot] = D[r, c]
    order = np.argsort(cand_v, axis=1, kind="stable")[:, :k]  # ties: lower column first
    return (
        np.take_along_axis(cand_c, order, axis=1),
        np.take_along_axis(cand_v, order, axis=1).astype(np.float64),
    )


def recall(approx: np.ndarray, exact: np.ndarray) -> float:
    """Mean fraction of each row of ``exact`` (n, k) found in the same row of ``approx`` (n, k)."""
    hits = (approx[:, :, None] == exact[:, None, :]).any(axis=1).sum()
    return float(hits) / exact.size if exact.size else 1.0


def approximate_neighbors(
    X: np.ndarray,
    k: int,
    metric: str = "cosine",
    *,
    seed: int = 0,
    recall_queries: int = 1000,
    progress: bool | None = None,
) -> Neighbors:
    """k nearest neighbours of every row from a pynndescent index, with measured recall.

    The recall is measured against :func:`exact_neighbors` on ``recall_queries`` rows drawn
    with ``seed``. Raises :class:`~xai_core.CapabilityError` if pynndescent is not installed.
    """
    try:
        from pynndescent import NNDescent
    except ImportError as exc:
        raise CapabilityError(
            "approximate=True needs the pynndescent package: pip install pynndescent "
            "(or use the exact search, approximate=False)."
        ) from exc

    start_time = time.perf_counter()
    n = X.shape[0]
    m = min(n, int(recall_queries))
    # one bar over the rows: the index gives all of them at once, the recall check a few
    with progress_bar(n, progress=progress, desc="neighbours", unit="row", long=False) as bar:
        with bar.part(n - m):
            index = NNDescent(
                np.asarray(X, dtype=np.float32),
                metric=metric,
                n_neighbors=k + 1,
                random_state=seed,
                verbose=False,
                n_jobs=1,
            )
        graph_i, graph_d = index.neighbor_graph
        seconds = time.perf_counter() - start_time
        sample = np.sort(np.random.default_rng(seed).choice(n, size=m, replace=False))
        with bar.part(m):  # the exact search on the sampled rows drives the bar
            exact = exact_neighbors(X, k, metric, queries=sample, progress=progress)
    rows = np.arange(n)[:, None]
    # Drop each row itself (wherever it landed) and keep the first k others.
    keep = graph_i != rows
    order = np.argsort(~keep, axis=1, kind="stable")[:, :k]
    idx = np.take_along_axis(graph_i, order, axis=1).astype(np.int64)
    dist = np.take_along_axis(graph_d, order, axis=1).astype(np.float64)
    return Neighbors(
        np.arange(n),
        idx,
        dist,
        metric,
        approximate=True,
        recall=recall(idx[sample], exact.indices),
        meta={"seconds": seconds, "recall_queries": m, "seed": seed},
    )


def check_k(k: Any, n: int) -> int:
    """``k`` as an int in [1, n - 1] (n_samples - 1), or a ValidationError."""
    return check_int(k, "k", 1, maximum=n - 1)
