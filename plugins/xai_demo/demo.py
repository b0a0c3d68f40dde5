"""``xai demo``: the main job. Train, run on every backend, explain, compare, report.

On the bundled data (no network): a small CNN on MNIST (or Fashion-MNIST) and an MLP on
breast cancer run on cpu, gpu, tpu and the int8 edgetpu; a few images and rows are
explained with SHAP, LIME and integrated gradients; the explanations are compared across
backends and methods and checked for faithfulness; the what-if tool probes the tabular
model (its offline editor runs the MLP in the report's page) and the projector shows the
CNN's hidden layer. Everything goes into one offline
HTML report.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import xai_core as xai
from xai_core import nn

__all__ = ["run_demo", "DemoSettings"]

BACKENDS = ("cpu", "gpu", "tpu", "edgetpu")


@dataclass(frozen=True)
class DemoSettings:
    """Sizes of the demo; ``quick`` shrinks every one."""

    epochs: int
    train_rows: int
    explain_rows: int
    ig_steps: int
    shap_evals: int
    lime_samples: int
    projector_rows: int

    @classmethod
    def make(cls, quick: bool) -> DemoSettings:
        if quick:
            return cls(1, 1000, 2, 16, 200, 200, 200)
        return cls(3, 2000, 4, 32, 600, 600, 500)


def _backend_table(net, qnet, X: np.ndarray, y: np.ndarray) -> pd.DataFrame:
    """Accuracy and simulated cost of predicting ``X`` on every backend."""
    rows = []
    for name in BACKENDS:
        runner = xai.ModelRunner(qnet if name == "edgetpu" else net, name)
        accuracy = float((runner.predict(X).argmax(axis=1) == y).mean())
        c = runner.counters
        rows.append(
            {
                "backend": name,
                "numerics": runner.backend.describe()["numerics"],
                "accuracy": accuracy,
                "macs": c["macs"],
                "cycles": c["cycles"],
                "est_seconds": c["est_seconds"],
                "bytes_read": c["bytes_read"],
            }
        )
    return pd.DataFrame(rows).set_index("backend")


def run_demo(
    output: str = "report.html",
    dataset: str = "mnist",
    quick: bool = False,
    progress: bool | None = None,
) -> int:
    """Run the demo and write the report to ``output``; print a short summary. Returns 0.

    ``progress``: True draws one bar per job, False none; None (the default) one per job
    where they can be watched (a terminal or a notebook: :func:`xai_core.progress.interactive`)
    and none in a log.
    """
    from xai_core.progress import interactive
    from xai_datasets import load_fashion_mnist, load_mnist

    if progress is None:
        progress = interactive()

    loaders = {"mnist": load_mnist, "fashion-mnist": load_fashion_mnist}
    if dataset not in loaders:
        raise xai.UnknownNameError("dataset", dataset, list(loaders))
    s = DemoSettings.make(quick)
    start = time.perf_counter()
    images = _images(loaders[dataset], dataset, s, progress)
    tabular = _tabular(s, progress)
    print("Projecting the CNN's hidden layer...")
    Xp, yp = images.test.X[: s.projector_rows], images.test.y[: s.projector_rows]
    projection = xai.project(
        images.net,
        Xp,
        layer="embedding",
        method="pca",
        labels=[images.test.class_names[i] for i in yp],
        progress=progress,
    )
    path = _report(dataset, images, tabular, projection).save(output)
    _print_summary(dataset, images, tabular, path, start)
    return 0


# -- images ---------------------------------------------------------------------------------
@dataclass
class _Images:
    """The image half of the demo: the data, the CNN and what was found about it."""

    train: Any
    test: Any
    net: Any
    backends: pd.DataFrame
    ig: Any
    ig_backends: Any
    shap_backends: Any
    methods: Any
    faith: list


def _images(load: Any, dataset: str, s: DemoSettings, progress: bool) -> _Images:
    """Train the CNN, run it on every backend, explain a few test images and compare."""
    train, test = load("train"), load("test")
    train = train.take(np.arange(min(s.train_rows, len(train))))
    print(f"Training a CNN on {len(train)} {dataset} images ({s.epochs} epoch(s))...")
    net = nn.cnn(hidden=32)
    net.output_names = train.class_names
    net.fit(
        train.X,
        train.y,
        optimizer="adam",
        learning_rate=2e-3,
        batch_size=64,
        epochs=s.epochs,
        progress=progress,
    )
    qnet = xai.quantize(net, train.X[:500], progress=False)
    backends = _backend_table(net, qnet, test.X, test.y)
    X_img = test.X[: s.explain_rows]
    ig = xai.explain(net, X_img, method="ig", steps=s.ig_steps, y=test.y[: s.explain_rows])
    shap_options = {
        "algorithm": "permutation",
        "max_evals": s.shap_evals,
        "image_shape": (28, 28),
        "patch_size": 4,
        "background": np.zeros((1, 784), np.float32),
        "progress": progress,
    }
    lime_options = {
        "n_samples": s.lime_samples,
        "image_shape": (28, 28),
        "stability_seeds": 0,
        "progress": progress,
    }
    print("Explaining images on every backend...")
    ig_backends = xai.compare_backends(
        net, X_img, method="ig", calibration=train.X[:500], steps=s.ig_steps
    )
    shap_backends = xai.compare_backends(
        net, X_img, method="shap", calibration=train.X[:500], **shap_options
    )
    methods = xai.compare_methods(
        net,
        X_img,
        methods=("ig", "shap", "lime"),
        method_options={"ig": {"steps": s.ig_steps}, "shap": shap_options, "lime": lime_options},
    )
    faith = [
        xai.faithfulness(net, methods.explanations[m], steps=10, n_random=2) for m in ("ig", "shap")
    ]
    return _Images(train, test, net, backends, ig, ig_backends, shap_backends, methods, faith)


# -- tabular --------------------------------------------------------------------------------
@dataclass
class _Tabular:
    """The tabular half: the breast-cancer MLP, its explanations and the what-if probes."""

    test: Any
    accuracy: float
    methods: Any
    shap: Any
    whatif: Any
    counterfactual: Any
    dependence: Any


def _tabular(s: DemoSettings, progress: bool) -> _Tabular:
    """Train an MLP on standardised breast-cancer rows, explain a few and probe the model."""
    from xai_datasets import load_breast_cancer

    print("Training an MLP on breast cancer and probing it...")
    cancer_train, cancer_test = load_breast_cancer().train_test_split(test_size=0.3, seed=0)
    mean, std = cancer_train.X.mean(axis=0), cancer_train.X.std(axis=0)
    Xc_train, Xc_test = (cancer_train.X - mean) / std, (cancer_test.X - mean) / std
    mlp = nn.mlp(
        Xc_train.shape[1],
        hidden=(16, 8),
        n_outputs=2,
        activation="tanh",
        seed=0,
        output_names=cancer_train.class_names,
    )
    mlp.fit(
        Xc_train,
        cancer_train.y,
        optimizer="adam",
        learning_rate=1e-2,
        batch_size=32,
        epochs=30,
        progress=progress,
    )
    accuracy = float((mlp.predict(Xc_test).argmax(1) == cancer_test.y).mean())
    rows = Xc_test[: s.explain_rows]
    methods, shap = _explain_rows(mlp, rows, Xc_train, cancer_test, s, progress)
    w = xai.what_if(
        _on_raw_features(mlp, mean, std),
        cancer_test.X,
        cancer_test.y,
        feature_names=cancer_test.feature_names,
        output_names=cancer_test.class_names,
        progress=progress,
    )
    counterfactual = w.nearest_counterfactual(0)
    dependence = w.partial_dependence(cancer_test.feature_names[0], progress=progress)
    return _Tabular(cancer_test, accuracy, methods, shap, w, counterfactual, dependence)


def _on_raw_features(mlp: Any, mean: np.ndarray, std: np.ndarray) -> Any:
    """A copy of ``mlp`` that takes the features in their own units: the standardisation
    ``(x - mean) / std``, shapes (n_features,), folded into its first Dense layer.

    Still a network of Dense layers and activations, so the report's what-if section can
    run it in the page (its offline editor) on rows in millimetres, not z-scores.
    """
    import copy

    raw = copy.deepcopy(mlp)
    first, dense = raw.layers[0], mlp.layers[0]
    w = np.asarray(dense.weight, dtype=np.float64)
    first.weight = (w / std[:, None]).astype(dense.weight.dtype)
    first.bias = (np.asarray(dense.bias, dtype=np.float64) - (mean / std) @ w).astype(
        dense.bias.dtype
    )
    return raw


def _explain_rows(
    mlp: Any,
    rows: np.ndarray,
    Xc_train: np.ndarray,
    cancer_test: Any,
    s: DemoSettings,
    progress: bool,
) -> tuple[Any, Any]:
    """IG, SHAP and LIME on the standardised ``rows``; SHAP's also in the features' own units."""
    tab_methods = xai.compare_methods(
        mlp,
        rows,
        methods=("ig", "shap", "lime"),
        method_options={
            "ig": {"steps": s.ig_steps},
            "shap": {"background": Xc_train[:50], "progress": progress},
            "lime": {
                "background": Xc_train,
                "n_samples": s.lime_samples,
                "stability_seeds": 0,
                "progress": progress,
            },
        },
    )
    n_rows = len(rows)
    # the report shows features by name, in their original units (millimetres, not z-scores);
    # each attribution is per feature, so it reads the same against either
    shap_tab = dataclasses.replace(
        tab_methods.explanations["shap"],
        data=cancer_test.X[:n_rows],
        feature_names=tuple(cancer_test.feature_names),
    ).with_outcomes(cancer_test.y[:n_rows], mlp.predict(rows))
    return tab_methods, shap_tab


# -- the report and the summary ---------------------------------------------------------------
def _report(dataset: str, images: _Images, tabular: _Tabular, projection: Any) -> xai.Report:
    """Every result of the demo in one report, in the order of the story."""
    report = xai.Report(f"xai-core demo: {dataset}", seed=0)
    report.add(images.train, "The training sample")
    report.add(images.backends, "Accuracy and simulated cost per backend (test set)")
    report.add(images.ig, "Integrated gradients on cpu")
    report.add(images.ig_backends, "Integrated gradients across backends")
    report.add(images.shap_backends, "SHAP across backends (int8 Edge TPU included)")
    report.add(images.methods, "IG, SHAP and LIME on the same images")
    for f in images.faith:
        report.add(f, f"Faithfulness of {f.method}")
    report.add(tabular.shap, "SHAP on breast cancer")
    report.add(tabular.methods, "Methods on breast cancer")
    report.add(tabular.whatif, "What-if: edit a breast-cancer row in the page")
    report.add(tabular.counterfactual, "Nearest counterfactual of the first test row")
    report.add(tabular.dependence, f"Partial dependence of {tabular.test.feature_names[0]}")
    report.add(projection, "The CNN's hidden layer (PCA)")
    return report


def _print_summary(
    dataset: str, images: _Images, tabular: _Tabular, path: Any, start: float
) -> None:
    """Accuracy and cycles per backend, the comparisons' verdicts, where the report went.

    ``start`` is the :func:`time.perf_counter` reading at which the demo began.
    """
    print("")
    print(f"{dataset} CNN, test accuracy and cycles to predict {len(images.test)} images:")
    for name, row in images.backends.iterrows():
        print(
            f"  {name:<8} accuracy {row.accuracy:.3f}   cycles {row.cycles:>14,.0f}   {row.numerics}"
        )
    print("Does the explanation survive the hardware? (the report opens with these verdicts)")
    for comparison in (images.ig_backends, images.shap_backends, images.methods):
        print(comparison.verdict)
    print(f"breast-cancer MLP test accuracy {tabular.accuracy:.3f}")
    print(
        f"Report: {Path(path).resolve()} ({Path(path).stat().st_size / 1e6:.1f} MB, "
        f"{time.perf_counter() - start:.0f} s)"
    )
