"""Projection methods: PCA, t-SNE, UMAP, and linear projections between groups of points.

Each function takes vectors of shape (n_samples, n_features) and returns the coordinates,
of shape (n_samples, n_components), and a dict of method-specific figures.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from xai_core import CapabilityError, UnknownNameError, ValidationError, XaiWarning
from xai_core.validation import check_int

__all__ = [
    "METHODS",
    "OPENTSNE_MIN_SAMPLES",
    "TSNE_BACKENDS",
    "custom_axes",
    "linear_axes",
    "pca",
    "SETTINGS",
    "run",
    "spherize",
    "tsne",
    "umap",
]

#: The ``method=`` names :func:`xai_projector.project` accepts.
METHODS = ("pca", "tsne", "umap", "linear", "custom")


def spherize(X: np.ndarray) -> np.ndarray:
    """Centre ``X`` of shape (n_samples, n_features) and scale each row to unit norm.

    Rows that are zero after centring stay zero. Returns a float64 array of the same shape.
    """
    Xc = np.asarray(X, dtype=np.float64) - np.mean(X, axis=0, dtype=np.float64)
    norms = np.linalg.norm(Xc, axis=1, keepdims=True)
    return np.divide(Xc, norms, out=np.zeros_like(Xc), where=norms > 0)


def pca(
    X: np.ndarray, n_components: int, *, seed: int, warn: bool = True
) -> tuple[np.ndarray, dict[str, Any]]:
    """Principal components with scikit-learn's ``PCA``, with the solver it chooses itself.

    scikit-learn's ``svd_solver="auto"`` takes the covariance eigendecomposition for tall
    data (at most 1,000 features and ten times as many rows), a randomized SVD (seeded by
    ``seed``) for large matrices and few components, and the full SVD otherwise; which one
    runs is scikit-learn's decision (``svd_solver`` is recorded as ``"auto"``).

    Returns the coordinates of shape (n_samples, n_components) and ``explained_variance_ratio``
    (n_components,) and ``components`` (n_components, n_features). Rows that are all the
    same point have no variance to explain: the coordinates are zero, every ratio is 0 (not
    scikit-learn's 0 / 0 = NaN) and, with ``warn``, an :class:`~xai_core.XaiWarning` says so.
    """
    from sklearn.decomposition import PCA

    n, d = X.shape
    if n_components > min(n, d):
        raise ValidationError(
            f"n_components={n_components} is more than PCA can give for vectors of shape {X.shape} "
            f"(at most min(n_samples, n_features) = {min(n, d)})."
        )
    model = PCA(n_components=n_components, svd_solver="auto", random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # 0 / 0 of a constant X, handled below
        coords = model.fit_transform(X)
    ratio = model.explained_variance_ratio_.astype(np.float64)
    # A constant X leaves only rounding noise as variance: only then is every row compared
    # (a pass over X that most calls do not need).
    scale = max(1.0, float(np.abs(model.mean_).max(initial=0.0))) ** 2
    degenerate = not np.isfinite(ratio).all() or model.explained_variance_[0] <= 1e-12 * scale
    constant = len(X) < 2 or (degenerate and not np.ptp(X, axis=0).any())
    if constant:
        coords, ratio = np.zeros_like(coords), np.zeros_like(ratio)
        if warn:
            warnings.warn(
                f"every one of the {len(X)} rows is the same point: PCA has no variance to "
                "explain, so all coordinates are 0 and every explained variance ratio is 0.",
                XaiWarning,
                stacklevel=3,
            )
    return coords, {
        "explained_variance_ratio": ratio,
        "components": model.components_.astype(np.float64),
        "svd_solver": "auto",
    }


#: The ``tsne_backend=`` values :func:`tsne` accepts.
TSNE_BACKENDS = ("auto", "sklearn", "opentsne")

#: With ``tsne_backend="auto"``, 2-D t-SNE of more rows than this runs on openTSNE (if
#: installed). Measured on two shared cores, 1,000 iterations, perplexity 30, one run each
#: (docs/projector.md): on Fashion-MNIST (PCA-64) scikit-learn takes 40.7 s at 10,000 rows
#: against openTSNE's 97.0 s, and 138.8 s at 30,000 against openTSNE's 122.1 s. openTSNE's
#: FFT gradient (numpy's FFT in its wheels) has a large cost that hardly grows with the
#: rows, so the two cross at about 25,000 rows.
OPENTSNE_MIN_SAMPLES = 25_000

#: Iterations of the early-exaggeration phase (exaggeration 12), as in scikit-learn's ``TSNE``.
EXAGGERATION_ITER = 250


def _opentsne_module() -> Any:
    try:
        import openTSNE
    except ImportError:
        return None
    return openTSNE


def _tsne_implementation(backend: str, n: int, n_components: int) -> tuple[str, str]:
    """Which library runs t-SNE, and why (for ``meta["tsne_choice"]``)."""
    if backend == "sklearn":
        return "sklearn", "asked for"
    if backend == "opentsne":
        if _opentsne_module() is None:
            raise CapabilityError(
                "tsne_backend='opentsne' needs the openTSNE package: pip install openTSNE "
                "(or use tsne_backend='sklearn' or 'auto')."
            )
        if n_components != 2:
            raise CapabilityError(
                f"tsne_backend='opentsne' gives 2-D embeddings only (its FFT gradient does not "
                f"support more); got n_components={n_components}. Use tsne_backend='sklearn' "
                "or 'auto' for 3-D."
            )
        return "opentsne", "asked for"
    if n_components != 2:
        return "sklearn", "auto: 3-D runs on scikit-learn (openTSNE's FFT t-SNE is 2-D only)"
    if n <= OPENTSNE_MIN_SAMPLES:
        return "sklearn", f"auto: n_samples <= {OPENTSNE_MIN_SAMPLES}"
    if _opentsne_module() is None:
        return "sklearn", "auto: openTSNE is not installed"
    return "opentsne", f"auto: n_samples > {OPENTSNE_MIN_SAMPLES}"


def tsne(
    X: np.ndarray,
    n_components: int,
    *,
    seed: int,
    perplexity: float = 30.0,
    learning_rate: float | str = "auto",
    max_iter: int = 1000,
    init: str = "pca",
    backend: str = "auto",
    snapshot_every: int | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """t-SNE with scikit-learn's Barnes-Hut ``TSNE`` or openTSNE's FFT-accelerated one.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    n_components : {2, 3}
    seed : int
        Seeds either library; the same seed gives the same coordinates.
    perplexity : float, default=30.0
        In (0, n_samples).
    learning_rate : float or "auto", default="auto"
        ``"auto"`` is each library's own rule (scikit-learn ``max(n / 48, 50)``,
        openTSNE ``n / 12`` during early exaggeration, ``n`` after).
    max_iter : int, default=1000
        At least 250. Iterations in all, early exaggeration included: scikit-learn runs
        250 of them with exaggeration 12; openTSNE is given the same split,
        ``early_exaggeration_iter=250`` (exaggeration 12) and ``n_iter=max_iter - 250``.
    init : {"pca", "random"}, default="pca"
    backend : {"auto", "sklearn", "opentsne"}, default="auto"
        ``"auto"`` runs openTSNE (if installed) for 2-D embeddings of more than
        :data:`OPENTSNE_MIN_SAMPLES` rows and scikit-learn otherwise. openTSNE runs with
        ``negative_gradient_method="fft"``, ``n_jobs=1`` and ``random_state=seed``.
    snapshot_every : int, optional
        Keep the embedding every this many iterations (openTSNE's callbacks; scikit-learn's
        ``TSNE`` has none, so this runs openTSNE, 2-D only): ``extra["snapshots"]`` of shape
        (n_snapshots, n_samples, 2) and ``extra["snapshot_iterations"]`` (n_snapshots,),
        the iterations done when each was taken, the last being ``max_iter`` (the result).

    Returns
    -------
    coords : ndarray of shape (n_samples, n_components)
    extra : dict
        ``kl_divergence``, ``n_iter`` (iterations run), ``implementation``
        (``"sklearn"`` or ``"opentsne"``) and ``tsne_choice`` (why that one).
    """
    n = X.shape[0]
    if backend not in TSNE_BACKENDS:
        raise UnknownNameError("tsne_backend", backend, TSNE_BACKENDS)
    if not 0 < perplexity < n:
        raise ValidationError(
            f"perplexity must be in (0, n_samples) = (0, {n}); got {perplexity!r}."
        )
    check_int(max_iter, "max_iter", 0)
    if max_iter < EXAGGERATION_ITER:
        raise ValidationError(
            f"max_iter must be at least {EXAGGERATION_ITER} (the early-exaggeration phase); "
            f"got {max_iter}."
        )
    implementation, why = _tsne_implementation(backend, n, n_components)
    snaps: list[np.ndarray] = []
    steps: list[int] = []
    if snapshot_every is not None:
        check_int(snapshot_every, "tsne_snapshots", 1)
        if backend == "sklearn":
            raise ValidationError(
                "tsne_snapshots needs openTSNE's callbacks; scikit-learn's TSNE has none "
                "(use tsne_backend='auto' or 'opentsne')."
            )
        implementation, why = _tsne_implementation("opentsne", n, n_components)
        why = "tsne_snapshots: openTSNE's callbacks"
    if implementation == "opentsne":
        phase = {"offset": 0, "last": 0}

        def keep(iteration: int, error: float, embedding: np.ndarray) -> bool:
            # openTSNE counts each phase from 1 and calls before that iteration's update.
            if iteration <= phase["last"]:
                phase["offset"] += EXAGGERATION_ITER
            phase["last"] = iteration
            steps.append(phase["offset"] + iteration - 1)
            snaps.append(np.array(embedding, dtype=np.float64))
            return False

        callbacks = {}
        if snapshot_every is not None:
            callbacks = {"callbacks": [keep], "callbacks_every_iters": int(snapshot_every)}
        model = _opentsne_module().TSNE(
            n_components=n_components,
            perplexity=perplexity,
            learning_rate=learning_rate,
            early_exaggeration_iter=EXAGGERATION_ITER,
            early_exaggeration=12.0,
            n_iter=int(max_iter) - EXAGGERATION_ITER,
            initialization=init,
            negative_gradient_method="fft",
            n_jobs=1,
            random_state=seed,
            verbose=False,
            **callbacks,
        )
        embedding = model.fit(np.asarray(X, dtype=np.float64))
        coords = np.asarray(embedding, dtype=np.float64)
        extra = {
            "kl_divergence": float(embedding.kl_divergence),
            "n_iter": int(max_iter),
            "implementation": "opentsne",
            "tsne_choice": why,
        }
        if snapshot_every is not None:
            steps.append(int(max_iter))
            snaps.append(coords)
            extra["snapshots"] = np.stack(snaps)
            extra["snapshot_iterations"] = np.asarray(steps, dtype=np.int64)
        return coords, extra

    from sklearn.manifold import TSNE

    model = TSNE(
        n_components=n_components,
        perplexity=perplexity,
        learning_rate=learning_rate,
        max_iter=max_iter,
        init=init,
        random_state=seed,
        method="barnes_hut" if n_components <= 3 else "exact",
    )
    coords = model.fit_transform(X)
    return coords, {
        "kl_divergence": float(model.kl_divergence_),
        "n_iter": int(model.n_iter_),
        "implementation": "sklearn",
        "tsne_choice": why,
    }


def umap(
    X: np.ndarray,
    n_components: int,
    *,
    seed: int,
    n_neighbors: int = 15,
    min_dist: float = 0.1,
    metric: str = "euclidean",
) -> tuple[np.ndarray, dict[str, Any]]:
    """UMAP with ``umap-learn`` (an optional extra); deterministic for a given ``seed``."""
    try:
        from umap import UMAP
    except ImportError as exc:
        raise CapabilityError(
            "method='umap' needs the umap-learn package: pip install umap-learn "
            "(or use method='pca' or method='tsne')."
        ) from exc

    n = X.shape[0]
    if not 2 <= n_neighbors < n:
        raise ValidationError(f"n_neighbors must be in [2, {n}); got {n_neighbors!r}.")
    settings = {"n_neighbors": n_neighbors, "min_dist": min_dist, "metric": metric}
    model = UMAP(n_components=n_components, random_state=seed, **settings)
    coords = model.fit_transform(X)
    return np.asarray(coords, dtype=np.float64), {"implementation": "umap-learn"}


def _unit(v: np.ndarray, what: str) -> np.ndarray:
    norm = float(np.linalg.norm(v))
    if norm == 0.0 or not np.isfinite(norm):
        raise ValidationError(f"{what} is zero: the two groups have the same mean.")
    return v / norm


def linear_axes(
    X: np.ndarray,
    groups: list[tuple[np.ndarray, np.ndarray]],
    n_components: int,
    *,
    seed: int,
) -> tuple[np.ndarray, dict[str, Any]]:
    """A linear projection whose axes run from one group's mean to another's.

    Axis 1 is ``mean(X[b]) - mean(X[a])`` for the first pair ``(a, b)`` of row-index arrays,
    scaled to unit length; axis 2 is the same for the second pair, if given, with its part
    along axis 1 removed (Gram-Schmidt). Remaining axes are the leading principal components
    of ``X`` with the chosen axes projected out. Returns the coordinates
    ``(X - mean(X)) @ axes.T`` of shape (n_samples, n_components) and ``axes``
    (n_components, n_features), orthonormal.
    """
    X = np.asarray(X, dtype=np.float64)
    axes: list[np.ndarray] = []
    for i, (a, b) in enumerate(groups):
        v = X[b].mean(axis=0) - X[a].mean(axis=0)
        for u in axes:
            v = v - (v @ u) * u
        axes.append(_unit(v, f"axis {i + 1} (mean of group B minus mean of group A)"))
    Xc = X - X.mean(axis=0)
    if len(axes) < n_components:
        U = np.array(axes)
        residual = Xc - (Xc @ U.T) @ U
        _, pieces = pca(residual, n_components - len(axes), seed=seed, warn=False)
        axes.extend(pieces["components"])
    A = np.array(axes[:n_components])
    return Xc @ A.T, {"axes": A}


def custom_axes(
    X: np.ndarray, groups: list[tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, dict[str, Any]]:
    """TensorBoard's custom projection: x and y each along a direction between two centroids.

    With ``groups = [(left, right), (down, up)]`` (row-index arrays), the x direction is
    ``mean(X[right]) - mean(X[left])`` and the y direction ``mean(X[up]) - mean(X[down])``,
    each scaled to unit length and, as in the Projector's "Custom" tab, not made orthogonal
    to each other. Returns the coordinates ``(X - mean(X)) @ axes.T`` of shape
    (n_samples, 2), ``axes`` (2, n_features) and ``axes_cosine``, the cosine between the two
    directions (0 when they are orthogonal; near 1 they show nearly the same thing).
    """
    X = np.asarray(X, dtype=np.float64)
    if len(groups) != 2:
        raise ValidationError(f"the custom projection needs two axes (x and y); got {len(groups)}.")
    names = ("x (mean of right minus mean of left)", "y (mean of up minus mean of down)")
    A = np.array(
        [
            _unit(X[b].mean(axis=0) - X[a].mean(axis=0), f"axis {name}")
            for (a, b), name in zip(groups, names, strict=True)
        ]
    )
    coords = (X - X.mean(axis=0)) @ A.T
    return coords, {"axes": A, "axes_cosine": float(A[0] @ A[1])}


#: The settings of :func:`xai_projector.project` each method takes (its ``meta["options"]``).
SETTINGS: dict[str, tuple[str, ...]] = {
    "pca": (),
    "tsne": ("perplexity", "learning_rate", "max_iter", "tsne_backend", "tsne_snapshots"),
    "umap": ("n_neighbors", "min_dist"),
    "linear": (),
    "custom": (),
}


def run(
    method: str,
    X: np.ndarray,
    n_components: int,
    *,
    seed: int,
    groups: list[tuple[np.ndarray, np.ndarray]],
    settings: dict[str, Any],
) -> tuple[np.ndarray, dict[str, Any], dict[str, Any]]:
    """Run one of :data:`METHODS` with the settings it takes (:data:`SETTINGS`; others are ignored).

    Returns
    -------
    coordinates : ndarray of shape (n_samples, n_components)
    extra : dict
        The method's figures.
    options : dict
        The settings that applied, as recorded in ``Projection.meta["options"]``.
    """
    if method not in SETTINGS:
        raise UnknownNameError("projection method", method, METHODS)
    options = {name: settings[name] for name in SETTINGS[method]}
    if method == "pca":
        coords, extra = pca(X, n_components, seed=seed)
    elif method == "tsne":
        own = {k: v for k, v in options.items() if k not in ("tsne_backend", "tsne_snapshots")}
        coords, extra = tsne(
            X,
            n_components,
            seed=seed,
            backend=options["tsne_backend"],
            snapshot_every=options["tsne_snapshots"],
            **own,
        )
        options["implementation"] = extra["implementation"]
    elif method == "umap":
        coords, extra = umap(X, n_components, seed=seed, **options)
    elif method == "custom":
        coords, extra = custom_axes(X, groups)
    else:
        coords, extra = linear_axes(X, groups, n_components, seed=seed)
        options = {"groups": len(groups)}
    return coords, extra, options
