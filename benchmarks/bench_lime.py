"""The lime plugin against calling the lime library directly, on the same work.

Tabular: 20 breast-cancer rows, 5,000 samples each, a fitted scikit-learn pipeline
(standard scaler + logistic regression), the explained output being class 1, lime's
defaults otherwise (quartile discretisation, 10 features). Images: 28x28 MNIST digits,
1,000 samples each, the plugin's SLIC superpixels given to lime as its segmentation
function, a logistic regression on the pixels, the predicted class explained.

Both sides run with BLAS limited to one thread (the surrogate fits and the model use it;
a shared machine makes multi-threaded timings erratic) and lime's progress bars off. Each
side is timed ``--repeats`` times, alternating; the medians and their ratio are printed.

Agreement: for each row, the correlation and top-5 Jaccard overlap of the weight vectors
(features, or superpixels). "plugin vs lime" compares the plugin (seed 0) with lime
(seed 0); "lime vs lime" compares lime under two seeds, the spread LIME has by itself.

``[headline]``: the tabular case at lime's defaults, at 1 and at 2 threads, with the floor:
for the default shared neighbourhood the model on its samples, its random numbers and one
weighted Gram product per row; for ``neighbourhood="per_row"`` (each row its own, as lime)
the model on every perturbed row and the random numbers lime's distribution needs.

Run: ``python benchmarks/bench_lime.py [--repeats 5] [--rows 20] [--images 10] [--skip headline details]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TQDM_DISABLE", "1")  # lime_image shows a bar per image

import numpy as np  # noqa: E402
from _pinning import THREADS, headline_header, headline_row, interleaved, pinned  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402


def weight_vector(pairs, n):
    """Dense weights from lime's list of (feature, weight) pairs."""
    w = np.zeros(n)
    for j, v in pairs:
        w[j] = v
    return w


def agreement(a: np.ndarray, b: np.ndarray, k: int = 5) -> tuple[float, float]:
    """Mean per-row correlation and top-k Jaccard overlap of two weight matrices."""
    corr = [np.corrcoef(x, y)[0, 1] for x, y in zip(a, b)]
    jac = []
    for x, y in zip(a, b):
        tx = set(np.argsort(-np.abs(x), kind="stable")[:k])
        ty = set(np.argsort(-np.abs(y), kind="stable")[:k])
        jac.append(len(tx & ty) / len(tx | ty))
    return float(np.mean(corr)), float(np.mean(jac))


def timed(fn, repeats: int) -> tuple[list[float], object]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return times, out


def race(ours, theirs, repeats: int):
    """Alternate the two sides ``repeats`` times; return both time lists and last results."""
    t_ours, t_theirs, r_ours, r_theirs = [], [], None, None
    for _ in range(repeats):
        t, r_theirs = timed(theirs, 1)
        t_theirs += t
        t, r_ours = timed(ours, 1)
        t_ours += t
    return t_ours, t_theirs, r_ours, r_theirs


def report(title, t_ours, t_lime, agree_ours, agree_lime, extra=""):
    mo, ml = statistics.median(t_ours), statistics.median(t_lime)
    print(f"\n{title}")
    print(f"  lime directly   median {ml:8.3f} s   (runs: {', '.join(f'{t:.3f}' for t in t_lime)})")
    print(f"  xai lime plugin median {mo:8.3f} s   (runs: {', '.join(f'{t:.3f}' for t in t_ours)})")
    print(f"  ratio lime / plugin: {ml / mo:.1f}x")
    print(
        f"  agreement plugin vs lime: corr {agree_ours[0]:.3f}, top-5 Jaccard {agree_ours[1]:.3f}"
    )
    print(
        f"  agreement lime vs lime:   corr {agree_lime[0]:.3f}, top-5 Jaccard {agree_lime[1]:.3f}"
    )
    if extra:
        print(extra)


def tabular_setup(n_rows: int):
    """Breast-cancer data, the scaler + logistic-regression pipeline, and the rows explained."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    X = X.astype(np.float32).astype(np.float64)  # the values the plugin's model sees
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X, y)
    return X, model, X[:n_rows]


def headline(repeats: int, n_rows: int) -> None:
    """lime against the plugin at lime's defaults (5,000 samples, 10 features), and the floor, at 1 and 2 threads."""
    from importlib.metadata import version

    from lime.lime_tabular import LimeTabularExplainer

    import xai_core as xai

    X, model, rows = tabular_setup(n_rows)
    n_samples = 5000

    def lime_direct():
        ex = LimeTabularExplainer(X, random_state=0)
        for r in rows:
            ex.explain_instance(r, model.predict_proba, labels=(1,), num_samples=n_samples)

    def plugin(neighbourhood="shared"):
        return xai.explain(
            model, rows, method="lime", target=1, background=X, n_samples=n_samples,
            seed=0, progress=False, neighbourhood=neighbourhood,
        )  # fmt: skip

    def plugin_per_row():
        return plugin("per_row")

    rng = np.random.default_rng(0)
    samples = rng.normal(size=(n_rows * n_samples, X.shape[1])).astype(np.float32)
    shared = samples[: n_samples - 1 + n_rows]
    design = rng.random((n_samples, X.shape[1]))

    def floor():
        # the model on every perturbed sample, and the random numbers lime's distribution needs
        # (a uniform to choose each value's bin and a normal inside it)
        model.predict_proba(samples)
        rng.random(samples.shape, dtype=np.float32)
        rng.standard_normal(samples.shape, dtype=np.float32)

    def floor_shared():
        # one neighbourhood: the model on its samples and the rows, its random numbers, and
        # per row the weighted Gram matrix of the ridge fit (one product over the samples)
        model.predict_proba(shared)
        rng.random(shared.shape, dtype=np.float32)
        rng.standard_normal(shared.shape, dtype=np.float32)
        for _ in range(n_rows):
            design.T @ design

    headline_header(
        f"lime {version('lime')}; LIME tabular, {n_rows} breast-cancer rows, "
        f"{n_samples} samples, 10 features, defaults; medians of {repeats}, interleaved"
    )
    for threads in THREADS:
        with pinned(threads):
            (t_lime, _), (t_ours, _), (t_row, _), (t_floor, _), (t_shared, _) = interleaved(
                lime_direct, plugin, plugin_per_row, floor, floor_shared, repeats=repeats
            )
        work = f"LIME {n_rows} rows x {n_samples} samples"
        headline_row(f"{work} (default: shared)", threads, t_lime, t_ours, t_shared)
        headline_row(f"{work}, per_row", threads, t_lime, t_row, t_floor)
    print(
        "  (default: one neighbourhood shared by the rows, neighbourhood='shared'; its 'floor': "
        f"the model on its {n_samples - 1:,} samples and the {n_rows} rows, one uniform and one "
        "normal per perturbed value, and one weighted Gram product per row. per_row: each row "
        f"its own, as lime; its 'floor': the model on the {n_rows * n_samples:,} perturbed rows "
        "plus one uniform and one normal per perturbed value)"
    )


def bench_tabular(repeats: int, n_rows: int) -> None:
    from lime.lime_tabular import LimeTabularExplainer

    import xai_core as xai

    X, model, rows = tabular_setup(n_rows)

    def lime_direct(seed=0):
        ex = LimeTabularExplainer(X, random_state=seed)
        return np.array(
            [
                weight_vector(
                    ex.explain_instance(
                        r, model.predict_proba, labels=(1,), num_samples=5000
                    ).local_exp[1],
                    X.shape[1],
                )
                for r in rows
            ]
        )

    def plugin(seed=0, stability_seeds=0):
        return xai.explain(
            model,
            rows,
            method="lime",
            target=1,
            background=X,
            n_samples=5000,
            seed=seed,
            stability_seeds=stability_seeds,
            progress=False,
        )

    plugin()  # imports and first-call set-up, outside the timings
    t_ours, t_lime, e, lime0 = race(plugin, lime_direct, repeats)
    lime1 = lime_direct(seed=1)
    timings = e.meta["timings"]
    t_stab, e_stab = timed(lambda: plugin(stability_seeds=3), 1)
    extra = (
        f"  plugin split (last run): sampling {timings['sampling']:.3f} s, model "
        f"{timings['model']:.3f} s, surrogate {timings['surrogate']:.3f} s\n"
        f"  plugin with stability_seeds=3 (opt-in, 4x the work): {t_stab[0]:.3f} s; "
        f"stability top-5 Jaccard {e_stab.meta['stability']['jaccard']:.3f}, "
        f"Spearman {e_stab.meta['stability']['spearman']:.3f}"
    )
    report(
        f"tabular: {n_rows} breast-cancer rows x 5,000 samples (scaler + logistic regression)",
        t_ours,
        t_lime,
        agreement(e.values, lime0),
        agreement(lime1, lime0),
        extra,
    )


def bench_images(repeats: int, n_images: int) -> None:
    from lime.lime_image import LimeImageExplainer
    from sklearn.linear_model import LogisticRegression

    import xai_core as xai
    from xai_datasets import load_mnist

    train, test = load_mnist("train"), load_mnist("test")
    clf = LogisticRegression(max_iter=200).fit(train.X, train.y)
    images = test.X[:n_images].reshape(-1, 28, 28)

    def predict(batch):
        return clf.predict_proba(np.asarray(batch).reshape(len(batch), -1))

    def plugin(seed=0):
        return xai.explain(
            predict,
            images,
            method="lime",
            n_samples=1000,
            seed=seed,
            stability_seeds=0,
            progress=False,
        )

    e = plugin()
    segments, n_segments, targets = e.meta["segments"], e.meta["n_segments"], e.target

    def lime_direct(seed=0):
        ex = LimeImageExplainer(random_state=seed)
        out = []
        for i in range(n_images):
            res = ex.explain_instance(
                images[i].astype(np.float64),
                lambda b: predict(np.asarray(b)[..., 0]),  # lime hands over RGB copies
                labels=(int(targets[i]),),
                top_labels=None,
                num_samples=1000,
                segmentation_fn=lambda img, i=i: segments[i],
            )
            out.append(weight_vector(res.local_exp[int(targets[i])], int(n_segments[i])))
        return out

    def per_segment(expl):
        return [
            np.array([expl.values[i][segments[i] == k][0] for k in range(n_segments[i])])
            for i in range(n_images)
        ]

    t_ours, t_lime, e, lime0 = race(plugin, lime_direct, repeats)
    lime1 = lime_direct(seed=1)
    ours = per_segment(e)
    agree_ours = np.mean([agreement(a[None], b[None]) for a, b in zip(ours, lime0)], axis=0)
    agree_lime = np.mean([agreement(a[None], b[None]) for a, b in zip(lime1, lime0)], axis=0)
    timings = e.meta["timings"]
    extra = (
        f"  superpixels per image: {int(n_segments.min())}-{int(n_segments.max())}; plugin split "
        f"(last run): segmentation {timings['segmentation']:.3f} s, sampling "
        f"{timings['sampling']:.3f} s, model {timings['model']:.3f} s, surrogate "
        f"{timings['surrogate']:.3f} s"
    )
    report(
        f"images: {n_images} MNIST digits (28x28) x 1,000 samples (logistic regression on pixels)",
        t_ours,
        t_lime,
        agree_ours,
        agree_lime,
        extra,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--images", type=int, default=10)
    parser.add_argument("--skip", nargs="*", default=[], choices=["headline", "details"])
    args = parser.parse_args()
    if "headline" not in args.skip:
        headline(args.repeats, args.rows)
    if "details" in args.skip:
        return
    with threadpool_limits(1):
        bench_tabular(args.repeats, args.rows)
        bench_images(args.repeats, args.images)


if __name__ == "__main__":
    main()
