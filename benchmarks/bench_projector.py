"""Projector timings: t-SNE of 10,000 x 64, neighbours of 70,000 points, the 70,000-point view.

Run from the repository root::

    python benchmarks/bench_projector.py [--repeats 3] [--tsne-points 10000] [--no-tsne]
                                         [--tsne-anchor] [--tsne-70k] [--anchor-points 10000] [--approximate]
                                         [--browser]

1. Data: Fashion-MNIST's 70,000 images (train and test) from ``../shared/data`` reduced
   with PCA to 64 components (skipped with a message if the files are absent). Its first
   ``--tsne-points`` rows are the t-SNE input; all 70,000 rows with the first 50
   components are the neighbour and view input.
2. t-SNE of the first ``--tsne-points`` rows (PCA-64): ``xai.project(method="tsne")`` with
   ``tsne_backend="sklearn"`` (scikit-learn's Barnes-Hut ``TSNE``) and, if openTSNE is
   installed, ``tsne_backend="opentsne"`` (its FFT-accelerated t-SNE), one run each with the
   same perplexity (30), iterations (1,000, 250 of them early exaggeration) and seed; the
   ratio, and each layout's leave-one-out 5-NN accuracy on the ten classes (a quality check).
   With ``--tsne-anchor`` also ``TSNE`` called directly with the same settings, and the
   ratio, which is the projector's overhead. With ``--tsne-70k``: openTSNE on all 70,000
   rows (PCA-50, the neighbour input), one run; scikit-learn is not run at that size.
3. Neighbours: the exact 10 nearest (cosine) of all 70,000 points, one run; and on the
   first ``--anchor-points`` rows, median of ``--repeats``, against scikit-learn's
   brute-force ``NearestNeighbors`` (same metric, same rows), with how many lists agree.
   With ``--approximate`` and pynndescent installed: its index on all 70,000 points (one
   run, numba compilation included) and its recall against the exact lists.
4. PCA of 10,000 x 128 (the first rows, PCA-128 of the images): ``xai.project(method="pca")``
   against scikit-learn's ``PCA(3)`` with its default solver on the same rows, interleaved
   medians of ``--repeats`` at 1 and 2 threads; the floor is the product the covariance
   solver cannot avoid, ``Xc.T @ Xc`` (float32, centred rows).
5. The HTML view of 70,000 points (PCA-2 layout, 8 neighbours each, taken from the exact
   search above): render time (median of ``--repeats``) and size in bytes, for the report
   section and the notebook output. With ``--browser`` (Playwright and /usr/bin/chromium):
   the standalone page's load time to an interactive view, and the median time of a
   search over all points and of a click-select (each redraws all 70,000 points).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from _pinning import THREADS, headline_header, headline_row, interleaved, pinned

import xai_core as xai

DATA = (Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "fashion-mnist").resolve()


def _timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def _median(fn: Callable[[], object], repeats: int) -> tuple[float, object]:
    runs = [_timed(fn) for _ in range(repeats)]
    return statistics.median(t for t, _ in runs), runs[-1][1]


def _has_opentsne() -> bool:
    try:
        import openTSNE  # noqa: F401
    except ImportError:
        return False
    return True


def _knn(p: object, y: np.ndarray) -> float:
    """Leave-one-out 5-NN accuracy of a projection's coordinates against the classes ``y``."""
    from sklearn.neighbors import NearestNeighbors

    _, idx = NearestNeighbors(n_neighbors=6).fit(p.coordinates).kneighbors(p.coordinates)
    counts = np.zeros((len(y), int(y.max()) + 1), dtype=np.int64)
    np.add.at(counts, (np.arange(len(y))[:, None], y[idx[:, 1:]]), 1)
    votes = counts.argmax(axis=1)
    return float(np.mean(votes == y))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tsne-points", type=int, default=10_000)
    parser.add_argument("--no-tsne", action="store_true", help="skip t-SNE")
    parser.add_argument("--tsne-anchor", action="store_true", help="also time sklearn's TSNE")
    parser.add_argument(
        "--tsne-70k", action="store_true", help="also openTSNE on all 70,000 points (minutes)"
    )
    parser.add_argument("--anchor-points", type=int, default=10_000)
    parser.add_argument(
        "--approximate", action="store_true", help="also time pynndescent (if installed) on 70,000"
    )
    parser.add_argument(
        "--browser", action="store_true", help="also time the page in headless Chromium"
    )
    args = parser.parse_args(argv)
    if not (DATA / "train-images-idx3-ubyte.gz").is_file():
        print(f"skipped: Fashion-MNIST not found in {DATA}")
        return 0
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE
    from sklearn.neighbors import NearestNeighbors

    from xai_datasets import load_fashion_mnist
    from xai_projector import exact_neighbors
    from xai_projector.neighbors import recall

    seconds, (train, test) = _timed(
        lambda: (load_fashion_mnist("train", path=DATA), load_fashion_mnist("test", path=DATA))
    )
    X = np.concatenate([train.X, test.X]).reshape(-1, 784)
    y = np.concatenate([train.y, test.y])
    names = np.asarray(train.class_names)[y]
    pca_s, E = _timed(
        lambda: PCA(64, svd_solver="randomized", random_state=0).fit_transform(X).astype(np.float32)
    )
    print(f"data: Fashion-MNIST {X.shape} loaded in {seconds:.1f} s, PCA-64 in {pca_s:.1f} s")

    opentsne = _has_opentsne()
    if not args.no_tsne:
        T = E[: args.tsne_points]
        ys = y[: args.tsne_points]
        kw = {"method": "tsne", "perplexity": 30.0, "max_iter": 1000, "seed": 0, "progress": False}
        sk_s, sk = _timed(lambda: xai.project(T, tsne_backend="sklearn", **kw))
        line = f"t-SNE {T.shape}, single runs: sklearn {sk_s:.1f} s (5-NN {_knn(sk, ys):.3f})"
        if opentsne:
            ot_s, ot = _timed(lambda: xai.project(T, tsne_backend="opentsne", **kw))
            line += (
                f", openTSNE {ot_s:.1f} s (5-NN {_knn(ot, ys):.3f}); "
                f"sklearn/openTSNE {sk_s / ot_s:.2f}"
            )
        else:
            line += "; openTSNE: skipped, not installed (pip install openTSNE)"
        if args.tsne_anchor:
            theirs, _ = _timed(
                lambda: TSNE(2, perplexity=30.0, learning_rate="auto", max_iter=1000,
                             init="pca", random_state=0).fit_transform(T)
            )  # fmt: skip
            line += f"; sklearn TSNE direct {theirs:.1f} s, project/direct {sk_s / theirs:.2f}"
        print(line)
    if args.tsne_70k:
        if opentsne:
            F = np.ascontiguousarray(E[:, :50])
            big_s, big = _timed(
                lambda: xai.project(
                    F, method="tsne", tsne_backend="opentsne", seed=0, progress=False
                )
            )
            print(
                f"t-SNE {F.shape} (PCA-50), openTSNE, single run: {big_s:.1f} s "
                f"(5-NN {_knn(big, y):.3f}); sklearn not run at this size"
            )
        else:
            print("t-SNE of 70,000: skipped, openTSNE is not installed (pip install openTSNE)")

    _pca_headline(X[:10_000], args.repeats)

    V = np.ascontiguousarray(E[:, :50])
    p = xai.project(V, labels=names, metadata={"index": np.arange(len(V))}, progress=False)
    full_s, full = _timed(lambda: p.neighbors(10, "cosine"))
    print(f"neighbours {V.shape} k=10 cosine, exact: {full_s:.1f} s")
    if args.approximate:
        try:
            from pynndescent import NNDescent  # noqa: F401
        except ImportError:
            print("approximate: skipped, pynndescent is not installed")
        else:
            approx_s, approx = _timed(lambda: p.neighbors(10, "cosine", approximate=True))
            print(
                f"approximate (pynndescent) {V.shape}: {approx_s:.1f} s "
                f"(exact/approximate {full_s / approx_s:.2f}); recall "
                f"{approx.recall:.4f} on {approx.meta['recall_queries']} sampled rows, "
                f"{recall(approx.indices, full.indices):.4f} on all rows"
            )

    A = V[: args.anchor_points]
    ours_s, nb = _median(lambda: exact_neighbors(A, 10, "cosine"), args.repeats)
    sk_s, (_, sk_i) = _median(
        lambda: (
            NearestNeighbors(n_neighbors=11, algorithm="brute", metric="cosine")
            .fit(A)
            .kneighbors(A)
        ),
        args.repeats,
    )
    # Drop each row itself from sklearn's 11 (or the 11th, if a tie pushed it out).
    own = sk_i == np.arange(len(A))[:, None]
    sk_rows = np.take_along_axis(sk_i, np.argsort(own, axis=1, kind="stable")[:, :10], axis=1)
    agree = float(np.mean(np.all(np.sort(sk_rows, axis=1) == np.sort(nb.indices, axis=1), axis=1)))
    print(
        f"neighbours {A.shape} k=10 cosine: exact {ours_s:.2f} s, sklearn brute {sk_s:.2f} s "
        f"(medians of {args.repeats}), ratio {ours_s / sk_s:.2f}; identical lists {100 * agree:.2f}%"
    )

    from xai_projector import render_projection

    section_s, html = _median(lambda: render_projection(p), args.repeats)
    notebook_s, nb_html = _median(p._repr_html_, args.repeats)
    print(
        f"view of {len(p):,} points: section {section_s:.2f} s (median of {args.repeats}), "
        f"{len(html.encode()):,} bytes; notebook output {notebook_s:.2f} s, "
        f"{len(nb_html.encode()):,} bytes"
    )
    if args.browser:
        _browser_timings(p, args.repeats)
    return 0


def _pca_headline(images: np.ndarray, repeats: int) -> None:
    """PCA of 10,000 x 128 against scikit-learn's own choice of solver, at 1 and 2 threads."""
    from sklearn.decomposition import PCA

    P = PCA(128, random_state=0).fit_transform(images.astype(np.float32)).astype(np.float32)
    centred = P - P.mean(axis=0)
    headline_header(f"Projector PCA, {P.shape[0]:,} x {P.shape[1]}, 3 components")
    for threads in THREADS:
        with pinned(threads):
            (theirs, _), (ours, _), (floor, _) = interleaved(
                lambda: PCA(3, random_state=0).fit_transform(P),
                lambda: xai.project(P, method="pca", n_components=3, seed=0, progress=False),
                lambda: centred.T @ centred,
                repeats=max(repeats, 5),
            )
        headline_row("PCA (anchor: sklearn PCA, svd_solver=auto)", threads, theirs, ours, floor)


def _browser_timings(p: object, repeats: int) -> None:
    import tempfile

    chromium = Path("/usr/bin/chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("browser: skipped, playwright is not installed")
        return
    if not chromium.is_file():
        print(f"browser: skipped, {chromium} not found")
        return
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        path = p.save_html(Path(tmp) / "view.html")
        b = pw.chromium.launch(executable_path=str(chromium), args=["--headless", "--no-sandbox"])
        page = b.new_page()
        start = time.perf_counter()
        page.goto(path.resolve().as_uri(), wait_until="load")
        page.wait_for_selector("div.xai-projector[data-xai-ready]", state="attached")
        load_s = time.perf_counter() - start
        timing = page.evaluate(
            """n => {
              const v = document.querySelector("div.xai-projector").xaiProjector;
              const box = document.querySelector("input.xai-projector-search");
              const med = a => a.sort((x, y) => x - y)[a.length >> 1];
              const s = [], c = [];
              for (let r = 0; r < n; r++) {
                box.value = r % 2 ? "shirt" : "bag";
                let t = performance.now(); v.search(); s.push(performance.now() - t);
                t = performance.now(); v.select(r * 997); c.push(performance.now() - t);
              }
              return {search: med(s), select: med(c)};
            }""",
            max(repeats, 5),
        )
        b.close()
    print(
        f"browser, {len(p):,} points: page interactive after {load_s:.2f} s; search "
        f"{timing['search']:.0f} ms, click-select {timing['select']:.0f} ms (medians, each redraws all)"
    )


if __name__ == "__main__":
    sys.exit(main())
