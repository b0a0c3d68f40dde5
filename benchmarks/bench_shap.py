"""SHAP: the plugin against the shap library, vectorised Kernel SHAP against KernelExplainer, rows/s per backend.

Run from the repository root::

    python benchmarks/bench_shap.py [--repeats 5] [--rows 20] [--reference-permutations 400]

Data: scikit-learn's breast-cancer set (569 rows, 30 features), standardised; the
background is a k-means summary of the training rows into 10 centres (scikit-learn's
KMeans, seed 0), the same array for every contestant, each centre weighted equally.

1. ``[plugin vs shap]``: ``xai.explain(..., method="shap", algorithm=A)`` against calling
   shap's explainer for ``A`` directly on the same model, rows, background and settings
   (exact on the first 10 features, permutation with shap's default budget, tree on a
   random forest, linear on a logistic regression), median of ``--repeats`` run in
   alternation, printed as plugin / shap (goal: at most 1.05x), with the largest
   difference between the two results; once with the plugin's defaults (the runner
   casts a black box's inputs to float32 and calls it in 4096-row chunks) and once with
   the direct call's arithmetic (a float64 CPU backend, 65536-row calls) and BLAS threads
   (``blas_threads=None``: explain's default pins BLAS to one thread, shap uses what is set).
2. ``[kernel]``: the plugin's vectorised Kernel SHAP against ``shap.KernelExplainer`` on
   ``--rows`` rows, at the same budget of coalitions per row (``nsamples``), with shap's
   unregularised estimator (``l1_reg=False``, the same estimator) and with its default
   (``l1_reg="num_features(10)"``). Time ratio, and error against exact Shapley values:
   for a quadratic model (a degree-2 polynomial ridge fitted to the labels, so its exact
   interventional Shapley values have a closed form, checked here against the exact
   algorithm on 8 features) the error is exact; for an MLP the reference is an
   antithetic permutation estimate with ``--reference-permutations`` permutations per
   row, whose own noise is printed (half the difference of two seeds). Also the time of
   the model alone on the rows both evaluate, which bounds the possible speed-up.
3. ``[backends]``: a native network with the MLP's weights (``xai.from_sklearn``) explained
   with Kernel SHAP on every registered backend (the Edge TPU on the int8-quantised
   network): rows per second of this simulation, model rows per second, and the largest
   difference from the CPU's attributions.

4. ``[partition]``: ``algorithm="partition"`` against ``shap.explainers.Partition`` on the
   same model function, masker and ``max_evals`` (500, shap's default), BLAS pinned to 1
   thread, medians of ``--repeats`` interleaved (shuffled order each round, after a
   warm-up that also compiles shap's numba kernels): 8 MNIST test images (28 x 28, a
   float64 numpy MLP of 784-64-10) with ``mask_value="blur(5,5)"``, and the breast-cancer
   MLP on ``--rows`` rows with the 10-centre background and shap's default correlation
   clustering. Both run in float64; the values are equal when shap's generator is seeded
   per row as the plugin seeds it (tests/plugins/test_shap_partition.py), so only the
   times are compared here.

5. ``[zoo]`` (``--zoo``, or ``--only-zoo`` alone; minutes): ``algorithm="partition"`` on
   torchvision's resnet18 (random weights, 1000 outputs) at 224 x 224, one image,
   ``mask_value="blur(16,16)"``, ``max_evals=200``, target 0, against
   ``shap.explainers.Partition`` with ``shap.maskers.Image("blur(16,16)")`` on the same torch
   function, at 1 and 2 threads, medians of ``--repeats`` interleaved.

``--threads N`` limits the BLAS threads (threadpoolctl) for the whole run; on a shared
machine ``--threads 1`` gives steadier figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from _pinning import THREADS, headline_header, headline_row, interleaved, pinned

import xai_core as xai


def median_seconds(*fns: Callable[[], Any], repeats: int) -> list[tuple[float, Any]]:
    """Median wall time of each function over ``repeats`` rounds (after one warm-up), and its last result.

    Each round calls the functions one after the other, so a change of machine load touches
    all of them alike. The median CPU time of this process per function is kept in
    :data:`LAST_CPU` (less sensitive to other processes on a shared machine).
    """
    results = [fn() for fn in fns]
    times: list[list[float]] = [[] for _ in fns]
    cpu: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            start, start_cpu = time.perf_counter(), time.process_time()
            results[i] = fn()
            times[i].append(time.perf_counter() - start)
            cpu[i].append(time.process_time() - start_cpu)
    LAST_CPU[:] = [statistics.median(c) for c in cpu]
    return [(statistics.median(t), r) for t, r in zip(times, results)]


#: Seeds each estimator's error is averaged over.
N_ERROR_SEEDS = 6
#: Median CPU seconds of the functions of the last :func:`median_seconds` call.
LAST_CPU: list[float] = []


# -- data and models ------------------------------------------------------------------------------------
def breast_cancer(seed: int = 0):
    """Standardised breast-cancer rows: train, test, labels, and a 10-centre k-means background."""
    from sklearn.cluster import KMeans
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=seed)
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    # float32-representable, so the plugin's float32 runner and shap see the same numbers
    X_train = X_train.astype(np.float32).astype(np.float64)
    X_test = X_test.astype(np.float32).astype(np.float64)
    centres = KMeans(10, n_init=10, random_state=seed).fit(X_train).cluster_centers_
    return X_train, X_test, y_train, y_test, centres.astype(np.float32).astype(np.float64)


class Quadratic:
    """``f(x) = c + w.x + x'Ax`` (A symmetric): a degree-2 polynomial ridge fitted to the labels.

    Its interventional Shapley values over a background ``B`` have a closed form
    (:meth:`shapley`), so estimators can be scored against the exact values on 30 features.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, alpha: float = 30.0) -> None:
        from sklearn.linear_model import Ridge
        from sklearn.preprocessing import PolynomialFeatures

        poly = PolynomialFeatures(2, include_bias=False).fit(X)
        ridge = Ridge(alpha=alpha).fit(poly.transform(X), y.astype(float))
        m = X.shape[1]
        self.c = float(ridge.intercept_)
        self.w = np.zeros(m)
        self.A = np.zeros((m, m))
        for coef, powers in zip(ridge.coef_, poly.powers_):
            idx = np.flatnonzero(powers)
            if powers.sum() == 1:
                self.w[idx[0]] = coef
            elif len(idx) == 1:  # x_j ** 2
                self.A[idx[0], idx[0]] = coef
            else:  # x_j x_k, split over A_jk and A_kj
                self.A[idx[0], idx[1]] = self.A[idx[1], idx[0]] = coef / 2

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        return self.c + X @ self.w + np.einsum("ij,ij->i", X @ self.A, X)

    def shapley(self, X: np.ndarray, background: np.ndarray) -> np.ndarray:
        """Exact interventional Shapley values, of shape (n_samples, n_features).

        Linear terms give ``w_j (x_j - m_j)``; ``A_jj x_j**2`` gives ``A_jj (x_j**2 - E b_j**2)``;
        each pair term ``2 A_jk x_j x_k`` is a two-player game whose Shapley value for ``j`` is
        ``A_jk (x_j m_k - E b_j b_k + x_j x_k - m_j x_k)``.
        """
        m = background.mean(axis=0)
        C = background.T @ background / len(background)
        off = self.A - np.diag(np.diag(self.A))
        linear = self.w * (X - m)
        square = np.diag(self.A) * (X**2 - np.diag(C))
        pairs = X * (X @ off) + X * (off @ m) - (X @ off) * m - (off * C).sum(axis=1)
        return linear + square + pairs


def fit_models(X_train: np.ndarray, y_train: np.ndarray) -> dict[str, Any]:
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlp = MLPClassifier((32,), max_iter=600, random_state=0).fit(X_train, y_train)
        mlp10 = MLPClassifier((32,), max_iter=600, random_state=0).fit(X_train[:, :10], y_train)
    return {
        "mlp": mlp,
        "mlp10": mlp10,
        "forest": RandomForestClassifier(100, max_depth=6, random_state=0).fit(X_train, y_train),
        "logit": LogisticRegression(max_iter=1000).fit(X_train, y_train),
        "quadratic": Quadratic(X_train, y_train),
    }


# -- 1. the plugin against shap ---------------------------------------------------------------------------------
def plugin_cases(models, X, X_many, bg) -> tuple[list[tuple[str, Any, Any]], Callable[[], dict]]:
    """(name, plugin call, direct shap call) per algorithm, and the options of the direct call's arithmetic."""
    import shap

    def masker(b):
        return shap.maskers.Independent(b, max_samples=len(b))

    mlp, mlp10, forest, logit = models["mlp"], models["mlp10"], models["forest"], models["logit"]
    target = mlp.predict_proba(X).argmax(1)
    rows = np.arange(len(X))
    many_target = forest.predict_proba(X_many).argmax(1)
    many_rows = np.arange(len(X_many))

    # the direct call's arithmetic: float64 inputs, one runner call per shap model call (the
    # defaults cast a black box's inputs to float32 and chunk them into 4096-row calls), and
    # the BLAS threads the direct call has (explain's default pins BLAS to one thread, so at
    # 2 threads the plugin would run on 1 while shap ran on 2)
    def same():
        return {
            "batch_size": 1 << 16,
            "backend": xai.get_backend("cpu", dtype="float64"),
            "blas_threads": None,
        }

    def plugin(model, rows_, bg_, algorithm, tgt, **kw):
        def run(**extra):
            return xai.explain(
                model, rows_, method="shap", algorithm=algorithm, background=bg_, target=tgt,
                **kw, **extra,
            ).values  # fmt: skip

        return run

    cases = [
        (
            "exact, 10 features, MLP",
            plugin(mlp10, X[:, :10], bg[:, :10], "exact", target, progress=False),
            lambda: shap.explainers.Exact(mlp10.predict_proba, masker(bg[:, :10]))(
                X[:, :10], silent=True
            ).values[rows, :, target],
        ),
        (
            "permutation, 30 features, MLP",
            plugin(mlp, X, bg, "permutation", target, seed=0, progress=False),
            lambda: permutation_per_row(mlp.predict_proba, X, bg, seed=0)[rows, :, target],
        ),
        (
            f"tree, random forest, {len(X_many)} rows",
            plugin(forest, X_many, bg, "tree", many_target),
            lambda: shap.TreeExplainer(
                forest, data=bg, feature_perturbation="interventional", model_output="probability"
            ).shap_values(X_many, check_additivity=False)[many_rows, :, many_target],
        ),
        (
            f"linear, logistic reg., {len(X_many)} rows",
            plugin(logit, X_many, bg, "linear", np.ones(len(X_many), np.int64)),
            lambda: shap.LinearExplainer(logit, masker(bg)).shap_values(X_many),
        ),
    ]
    return cases, same


def plugin_section(models, X, X_many, bg, repeats: int) -> None:
    cases, same = plugin_cases(models, X, X_many, bg)
    print(
        f"\n[plugin vs shap] {len(X)} rows (tree, linear: {len(X_many)}), same model, rows, background ({len(bg)} k-means centres) "
        f"and settings; median of {repeats}, in alternation; 'plugin' with the defaults, 'plugin "
        f"f64' with explain(..., backend=get_backend('cpu', dtype='float64'), batch_size=65536, "
        f"blas_threads=None): the direct call's arithmetic and BLAS threads"
    )
    print(
        f"  {'case':<34} {'plugin ms':>10} {'plugin f64 ms':>14} {'shap ms':>9} {'plugin/shap':>12} "
        f"{'f64/shap':>9} {'cpu f64/shap':>13} {'max |diff|':>11}"
    )
    for name, ours, theirs in cases:
        (t_ours, v_ours), (t_big, _), (t_shap, v_shap) = median_seconds(
            ours, lambda ours=ours: ours(**same()), theirs, repeats=repeats
        )
        diff = np.abs(v_ours - v_shap).max()
        print(
            f"  {name:<34} {t_ours * 1e3:10.1f} {t_big * 1e3:14.1f} {t_shap * 1e3:9.1f} "
            f"{t_ours / t_shap:11.3f}x {t_big / t_shap:8.3f}x {LAST_CPU[1] / LAST_CPU[2]:12.3f}x "
            f"{diff:11.2e}"
        )


# -- 2. vectorised Kernel SHAP against shap.KernelExplainer ---------------------------------------------------------------
def permutation_per_row(fn, X: np.ndarray, bg: np.ndarray, seed: int) -> np.ndarray:
    """shap's Permutation explainer seeded per row as the plugin seeds it (row r: [seed, r])."""
    import shap

    from xai_core.attribution.seeds import row_seeds

    masker = shap.maskers.Independent(bg, max_samples=len(bg))
    explainer = shap.explainers.Permutation(fn, masker, seed=seed)
    values = []
    for i, row_seed in enumerate(row_seeds(seed, np.arange(len(X)))):
        np.random.seed(int(row_seed))  # noqa: NPY002 - shap draws from the global generator
        values.append(explainer(X[i : i + 1], silent=True).values)
    return np.concatenate(values)


def permutation_reference(model, X, bg, target, n_perm: int, seed: int) -> np.ndarray:
    """Antithetic permutation estimate with ``n_perm`` permutations per row (shap's Permutation)."""
    m = X.shape[1]
    e = xai.explain(
        model, X, method="shap", algorithm="permutation", background=bg, target=target,
        max_evals=n_perm * (2 * m + 1), seed=seed, progress=False, batch_size=1 << 16,
    )  # fmt: skip
    return e.values


def masked_rows(X: np.ndarray, bg: np.ndarray, nsamples: int) -> np.ndarray:
    """``len(X) * nsamples * len(bg)`` masked rows (random coalitions), as both estimators evaluate."""
    rng = np.random.default_rng(0)
    n, d = X.shape
    rows = np.repeat(X, nsamples, axis=0)
    mask = rng.random((n * nsamples, d)) < 0.5
    return np.where(mask[:, None, :], rows[:, None, :], bg[None]).reshape(-1, d)


def evaluate_in_calls(
    fn: Callable[[np.ndarray], Any], rows: np.ndarray, size: int = 1 << 16
) -> None:
    """The model alone on ``rows``, in calls of ``size`` rows."""
    for start in range(0, len(rows), size):
        fn(rows[start : start + size])


def kernel_section(models, X, bg, repeats: int, n_ref: int) -> None:
    import shap

    quad, mlp = models["quadratic"], models["mlp"]
    m = X.shape[1]
    budgets = [2 * m + 2048, 500]
    print(
        f"\n[kernel] {len(X)} rows, {m} features, background of {len(bg)} k-means centres; the "
        f"plugin's algorithm='kernel' (defaults but batch_size=65536) against shap.KernelExplainer at "
        f"the same nsamples; median of "
        f"{repeats}; error = mean |phi - phi_exact| over rows and features"
    )
    # the closed form, checked against the exact algorithm on 8 features
    sub = Quadratic.__new__(Quadratic)
    sub.c, sub.w, sub.A = quad.c, quad.w[:8], quad.A[:8, :8]
    exact8 = xai.explain(
        sub, X[:4, :8], method="shap", algorithm="exact", background=bg[:, :8],
        backend=xai.get_backend("cpu", dtype="float64"), progress=False,
    ).values  # fmt: skip
    print(
        "  quadratic model: closed-form Shapley values vs the exact algorithm on 8 features: "
        f"max |diff| = {np.abs(sub.shapley(X[:4, :8], bg[:, :8]) - exact8).max():.1e}"
    )
    mlp_target = mlp.predict_proba(X).argmax(1)
    ref_a = permutation_reference(mlp, X, bg, mlp_target, n_ref, seed=1)
    ref_b = permutation_reference(mlp, X, bg, mlp_target, n_ref, seed=2)
    mlp_ref = (ref_a + ref_b) / 2
    ref_noise = np.abs(ref_a - ref_b).mean() / 2
    contestants = [
        ("quadratic (exact reference)", quad, None, quad.shapley(X, bg), lambda A: quad(A)),
        (
            f"MLP (reference: permutation x{2 * n_ref}, noise ~{ref_noise:.1e})",
            mlp, mlp_target, mlp_ref, mlp.predict_proba,
        ),
    ]  # fmt: skip
    print(
        f"  {'model':<46} {'nsamples':>8} {'plugin ms':>10} {'shap ms':>10} {'shap/plugin':>12} "
        f"{'cpu ratio':>10} {'model ms':>9} {'w/o model':>11} {'err plugin':>11} {'err shap':>10} "
        f"{'err shap l1':>12}"
    )
    rows = np.arange(len(X))
    for label, model, target, reference, fn in contestants:
        for nsamples in budgets:

            def ours(model=model, target=target, nsamples=nsamples, seed=0):
                return xai.explain(
                    model, X, method="shap", algorithm="kernel", background=bg, target=target,
                    max_evals=nsamples, seed=seed, progress=False, batch_size=1 << 16,
                ).values  # fmt: skip

            def theirs(fn=fn, target=target, nsamples=nsamples, l1_reg=False, seed=0):
                np.random.seed(seed)  # noqa: NPY002 - shap samples from numpy's global generator
                explainer = shap.KernelExplainer(fn, bg)
                sv = np.asarray(
                    explainer.shap_values(X, nsamples=nsamples, l1_reg=l1_reg, silent=True)
                )
                return sv if sv.ndim == 2 else sv[rows, :, target]

            masked = masked_rows(X, bg, nsamples)

            def model_only(fn=fn, masked=masked):
                evaluate_in_calls(fn, masked)

            (t_ours, v_ours), (t_shap, v_shap), (t_model, _) = median_seconds(
                ours, theirs, model_only, repeats=repeats
            )
            cpu_ratio = LAST_CPU[1] / LAST_CPU[0]
            rest = (t_shap - t_model) / max(t_ours - t_model, 1e-9)
            # errors averaged over three seeds (the timed runs are seed 0)
            err = [
                np.mean([np.abs(run(seed=seed) - reference).mean() for seed in range(N_ERROR_SEEDS)])
                for run in (ours, theirs, lambda seed, theirs=theirs: theirs(l1_reg="num_features(10)", seed=seed))
            ]  # fmt: skip
            print(
                f"  {label:<46} {nsamples:8d} {t_ours * 1e3:10.1f} {t_shap * 1e3:10.1f} "
                f"{t_shap / t_ours:11.2f}x {cpu_ratio:9.2f}x {t_model * 1e3:9.1f} {rest:10.2f}x "
                f"{err[0]:11.2e} {err[1]:10.2e} {err[2]:12.2e}"
            )
    print(
        "  ('model ms': the model alone on the rows both evaluate, rows x nsamples x background, in "
        "65536-row calls; 'w/o model': the shap/plugin ratio of the time besides it. Errors: mean "
        f"over {N_ERROR_SEEDS} seeds; 'err shap l1' is shap's default l1_reg='num_features(10)', which keeps 10 "
        "of the 30 features)"
    )


# -- 0. the headline rows, at 1 and 2 threads ------------------------------------------------------------------------------
def kernel_floor(model, X: np.ndarray, bg: np.ndarray, nsamples: int) -> Callable[[], None]:
    """The model alone on the rows Kernel SHAP evaluates (float32, in the plugin's call size) and one
    weighted least-squares solve per row (``numpy.linalg.lstsq`` of the weighted coalitions)."""
    from xai_shap.kernel import MAX_CHUNK_ELEMENTS

    masked = masked_rows(X, bg, nsamples).astype(np.float32)
    call = max(1, MAX_CHUNK_ELEMENTS // (len(bg) * X.shape[1])) * len(bg)
    rng = np.random.default_rng(0)
    Z = (rng.random((len(X), nsamples, X.shape[1])) < 0.5).astype(np.float64)
    sw = np.sqrt(rng.random((len(X), nsamples)))
    y = rng.random((len(X), nsamples))

    def run() -> None:
        evaluate_in_calls(model.predict_proba, masked, call)
        for i in range(len(X)):
            np.linalg.lstsq(Z[i] * sw[i][:, None], y[i] * sw[i], rcond=None)

    return run


def headline_section(models, X, X_many, bg, repeats: int, n_ref: int) -> None:
    """Kernel SHAP against shap.KernelExplainer (with the floor and both errors), and the plugin's
    overhead over shap's exact, permutation and tree explainers, at 1 and at 2 threads."""
    import shap

    mlp = models["mlp"]
    m, nsamples = X.shape[1], 2 * X.shape[1] + 2048
    target = mlp.predict_proba(X).argmax(1)
    rows = np.arange(len(X))
    headline_header(
        f"shap {shap.__version__}; {len(X)} breast-cancer rows, k-means background of {len(bg)}, "
        f"scikit-learn MLP; medians of {repeats}, interleaved"
    )
    reference = (
        permutation_reference(mlp, X, bg, target, n_ref, seed=1)
        + permutation_reference(mlp, X, bg, target, n_ref, seed=2)
    ) / 2

    def ours():
        return xai.explain(
            mlp, X, method="shap", algorithm="kernel", background=bg, target=target,
            max_evals=nsamples, seed=0, progress=False, batch_size=1 << 16,
        ).values  # fmt: skip

    def theirs():
        np.random.seed(0)  # noqa: NPY002 - shap samples from numpy's global generator
        sv = shap.KernelExplainer(mlp.predict_proba, bg).shap_values(
            X, nsamples=nsamples, l1_reg=False, silent=True
        )
        return np.asarray(sv)[rows, :, target]

    floor = kernel_floor(mlp, X, bg, nsamples)
    errors = []
    for threads in THREADS:
        with pinned(threads):
            (t_ours, v_ours), (t_shap, v_shap), (t_floor, _) = interleaved(
                ours, theirs, floor, repeats=repeats
            )
        headline_row(
            f"Kernel SHAP, {nsamples} coalitions x {m} features", threads, t_shap, t_ours, t_floor
        )
        errors.append((np.abs(v_ours - reference).mean(), np.abs(v_shap - reference).mean()))
    print(
        f"  error (mean |phi - reference|, reference {2 * n_ref} antithetic permutations, seed 0): "
        f"plugin {errors[0][0]:.2e}, shap {errors[0][1]:.2e}; 'floor': the model alone on the "
        f"{len(X) * nsamples * len(bg):,} coalition rows plus one lstsq per row"
    )
    cases, same = plugin_cases(models, X, X_many, bg)
    print(
        "  (the overhead rows: the plugin with the direct call's arithmetic, a float64 cpu backend "
        "and 65536-row calls, and its BLAS threads: blas_threads=None, so both run on the pinned "
        "count; goal plugin/shap <= 1.05x)"
    )
    for name, plugin, direct in cases[:3]:
        for threads in THREADS:
            with pinned(threads):
                (t_ours, _), (t_shap, _) = interleaved(
                    lambda plugin=plugin: plugin(**same()), direct, repeats=repeats
                )
            headline_row(
                f"overhead: {name}",
                threads,
                t_shap,
                t_ours,
                note=f"plugin/shap {t_ours / t_shap:.3f}x",
            )


# -- 3. backends ---------------------------------------------------------------------------------------------------------------------
def backends_section(models, X, bg, X_train, repeats: int) -> None:
    mlp = models["mlp"]
    net = xai.from_sklearn(mlp)
    target = mlp.predict_proba(X).argmax(1)
    print(
        f"\n[backends] native network from the MLP (xai.from_sklearn), algorithm='kernel' "
        f"(2*M+2048 coalitions x {len(bg)} background rows per row), {len(X)} rows, median of "
        f"{repeats}; wall-clock rates of the simulation"
    )
    print(
        f"  {'backend':<10} {'rows/s':>8} {'model rows/s':>13} {'max |values - cpu|':>19} {'max additivity':>15}"
    )
    reference = None
    for name in xai.list_backends():
        model = net
        try:
            backend = xai.get_backend(name)
            if backend.requires_quantized:
                model = xai.quantize(net, X_train[:200].astype(np.float32))
            runner = xai.ModelRunner(model, backend=backend, batch_size=1 << 16)
        except Exception as exc:  # noqa: BLE001 - one backend's failure is reported, the rest still run
            print(f"  {name:<10} skipped: {type(exc).__name__}: {exc}")
            continue

        def run(runner=runner):
            return xai.explain(
                runner, X, method="shap", algorithm="kernel", background=bg, target=target,
                seed=0, progress=False,
            )  # fmt: skip

        [(seconds, e)] = median_seconds(run, repeats=repeats)
        if reference is None:
            reference = e.values
        print(
            f"  {name:<10} {len(X) / seconds:8.1f} {e.meta['n_evals'] / seconds:13.3g} "
            f"{np.abs(e.values - reference).max():19.2e} {e.meta['additivity_error'].max():15.2e}"
        )


def partition_section(models, X, bg, repeats: int) -> None:
    """The plugin's partition SHAP against shap's PartitionExplainer, 1 thread, interleaved medians."""
    import shap

    from xai_datasets import load_mnist

    f64 = xai.get_backend("cpu", dtype="float64")
    rng = np.random.default_rng(0)
    w1, w2 = rng.normal(size=(784, 64)) / 28, rng.normal(size=(64, 10)) / 8

    def mlp(A):
        return np.tanh(np.asarray(A, dtype=np.float64).reshape(len(A), -1) @ w1) @ w2

    images = load_mnist("test").X[:8].astype(np.float64).reshape(8, 28, 28)
    proba = models["mlp"].predict_proba
    cases = [
        (
            "images 8 x 28x28, blur(5,5)",
            lambda: xai.explain(
                mlp, images, method="shap", algorithm="partition", mask_value="blur(5,5)",
                max_evals=500, backend=f64, batch_size=65536, progress=False,
            ).values,
            lambda: shap.explainers.Partition(mlp, shap.maskers.Image("blur(5,5)", (28, 28, 1)))(
                images.reshape(8, 28, 28, 1), max_evals=500, silent=True
            ).values,
        ),
        (
            f"table {len(X)} x 30, correlation",
            lambda: xai.explain(
                proba, X, method="shap", algorithm="partition", background=bg, max_evals=500,
                backend=f64, batch_size=65536, progress=False,
            ).values,
            lambda: shap.explainers.Partition(
                proba, shap.maskers.Partition(bg, max_samples=len(bg))
            )(X, max_evals=500, silent=True).values,
        ),
    ]  # fmt: skip
    print(
        f"\n[partition] plugin vs shap.explainers.Partition, same model function, masker and "
        f"max_evals=500, float64, 1 thread, medians of {repeats} interleaved"
    )
    print(f"  {'case':<32} {'plugin ms':>10} {'shap ms':>9} {'shap/plugin':>12}")
    with pinned(1):
        for name, ours, theirs in cases:
            (t_ours, _), (t_shap, _) = interleaved(ours, theirs, repeats=repeats)
            print(f"  {name:<32} {t_ours * 1e3:10.1f} {t_shap * 1e3:9.1f} {t_shap / t_ours:11.2f}x")


def zoo_section(repeats: int) -> None:
    """Partition SHAP on torchvision's resnet18 (random weights, 1000 outputs) at 224 x 224,
    one image, blur(16,16), max_evals=200, target 0: the plugin against shap's
    PartitionExplainer on the same torch function, at 1 and 2 threads, interleaved medians."""
    import shap
    import torch
    import torchvision

    torch.manual_seed(0)
    net = torchvision.models.resnet18(weights=None).eval()

    def forward(A):  # (k, 224, 224, 3) -> (k, 1000), float32 inside, float64 out
        x = torch.from_numpy(np.ascontiguousarray(np.asarray(A, dtype=np.float32)))
        with torch.no_grad():
            return net(x.reshape(len(x), 224, 224, 3).permute(0, 3, 1, 2)).double().numpy()

    image = np.random.default_rng(0).random((1, 224, 224, 3))
    f64 = xai.get_backend("cpu", dtype="float64")

    def ours():
        return xai.explain(
            forward, image, method="shap", algorithm="partition", mask_value="blur(16,16)",
            max_evals=200, target=0, seed=0, backend=f64, batch_size=65536, progress=False,
        ).values[0]  # fmt: skip

    from xai_core.attribution.seeds import row_seeds

    def theirs():
        np.random.seed(int(row_seeds(0, [0])[0]))  # noqa: NPY002 - shap's ties, seeded as ours
        explainer = shap.explainers.Partition(
            forward, shap.maskers.Image("blur(16,16)", (224, 224, 3))
        )
        return explainer(image, max_evals=200, silent=True).values[0][..., 0]

    headline_header(
        f"resnet18 (random weights, 1000 outputs), 1 image 224x224, blur(16,16), "
        f"max_evals=200, target 0; shap {shap.__version__} PartitionExplainer as anchor, "
        f"medians of {repeats}, interleaved"
    )
    for threads in THREADS:
        with pinned(threads):
            (t_ours, v_ours), (t_shap, v_shap) = interleaved(ours, theirs, repeats=repeats)
        headline_row(
            "partition, resnet18 224px, 200 evals",
            threads,
            t_shap,
            t_ours,
            note=f"max |ours - shap| {np.abs(v_ours - v_shap).max():.1e}",
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--reference-permutations", type=int, default=400)
    parser.add_argument(
        "--skip",
        nargs="*",
        default=[],
        choices=["headline", "plugin", "kernel", "backends", "partition"],
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="limit BLAS threads (threadpoolctl); default: as is",
    )
    parser.add_argument(
        "--zoo",
        action="store_true",
        help="also time partition SHAP on torchvision's resnet18 (slow: minutes)",
    )
    parser.add_argument("--only-zoo", action="store_true", help="run only the [zoo] section")
    args = parser.parse_args(argv)
    if args.only_zoo:
        zoo_section(args.repeats)
        return 0
    if args.threads is not None:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads)
    import shap

    X_train, X_test, y_train, _, bg = breast_cancer()
    models = fit_models(X_train, y_train)
    X = X_test[: args.rows]
    print(
        f"breast cancer, standardised: {len(X_train)} training rows, {len(X)} rows explained, "
        f"30 features; shap {shap.__version__}, xai-core {xai.__version__}; load average at start "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPU(s); BLAS threads "
        f"{'as is' if args.threads is None else args.threads}"
    )
    if "headline" not in args.skip:
        headline_section(models, X, X_test, bg, args.repeats, args.reference_permutations)
    if "plugin" not in args.skip:
        plugin_section(models, X, X_test, bg, args.repeats)
    if "kernel" not in args.skip:
        kernel_section(models, X, bg, args.repeats, args.reference_permutations)
    if "backends" not in args.skip:
        backends_section(models, X, bg, X_train, args.repeats)
    if "partition" not in args.skip:
        partition_section(models, X, bg, args.repeats)
    if args.zoo:
        zoo_section(args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
