"""Write the example notebooks of ``docs/notebooks`` from the cells below, without outputs.

Run ``python docs/notebooks/build_notebooks.py`` after editing a cell here; the notebooks are
generated, so edit this file rather than the ``.ipynb`` files (a test checks they agree).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
REPO_URL = "https://github.com/xai-core/xai-core"
COLAB = "https://colab.research.google.com/github/xai-core/xai-core/blob/main/docs/notebooks"
BADGE = "https://colab.research.google.com/assets/colab-badge.svg"

INSTALL = f"""\
import sys

if "google.colab" in sys.modules:  # only in Colab: install xai-core from GitHub
    %pip install -q "xai-core @ git+{REPO_URL}"
"""


def header(name: str, title: str, intro: str) -> str:
    """The first markdown cell: title, Colab badge and an introduction."""
    return f"# {title}\n\n[![Open In Colab]({BADGE})]({COLAB}/{name}.ipynb)\n\n{intro.strip()}\n"


QUICKSTART = [
    (
        "md",
        """\
## A small CNN on MNIST

`xai_datasets.load_mnist()` returns a sample of MNIST bundled with the package: 2,000
training and 500 test images, as flat rows of 784 pixels in [0, 1]. The network reshapes
them to `(1, 28, 28)` images; every matrix product of its forward and backward passes
runs on a simulated backend (fp32 on the CPU by default).""",
    ),
    (
        "code",
        """\
import numpy as np

import xai_core as xai
from xai_core import nn
from xai_datasets import load_mnist

train, test = load_mnist("train"), load_mnist("test")
net = nn.cnn(hidden=32)
net.output_names = train.class_names
net.fit(
    train.X, train.y, optimizer="adam", learning_rate=3e-3, batch_size=32, epochs=1, progress=False
)
print(net.summary())
print(f"test accuracy: {net.score(test.X, test.y):.3f}")""",
    ),
    (
        "md",
        """\
## Three methods

Integrated gradients uses the network's own backward pass. SHAP and LIME need only
predictions: SHAP groups the pixels into 4 x 4 patches (49 players) and estimates their
Shapley values with the vectorised Kernel SHAP; LIME fits a local linear surrogate on
superpixels. The budgets are small so this runs in seconds; raise `steps`, `max_evals`
and `n_samples` for sharper results.""",
    ),
    (
        "code",
        """\
X = test.X[:2]
ig_options = {"steps": 16, "progress": False}
shap_options = {
    "algorithm": "kernel",
    "max_evals": 300,
    "image_shape": (28, 28),
    "patch_size": 4,
    "background": np.zeros((1, 784), np.float32),
    "progress": False,
}
lime_options = {"n_samples": 300, "image_shape": (28, 28), "stability_seeds": 0, "progress": False}

ig = xai.explain(net, X, method="ig", **ig_options)
shap_e = xai.explain(net, X, method="shap", **shap_options)
lime_e = xai.explain(net, X, method="lime", **lime_options)
print("IG completeness error per row:", ig.meta["convergence_delta"])
ig  # an Explanation renders as heatmaps in a notebook""",
    ),
    (
        "md",
        """\
## Three backends

The same explanation on the simulated GPU (fp32 in tile order) and TPU (bf16 matrix
operands, fp32 sums), compared with the CPU: cosine similarity, top-k overlap, whether
a prediction flipped, and each backend's cycle counts. The verdict says in words which
backend changes the explanation beyond the rounding of its number format
([how it is decided](../hardware_findings.md#how-the-verdict-is-decided)).""",
    ),
    (
        "code",
        """\
backends = xai.compare_backends(net, X, method="ig", backends=("cpu", "gpu", "tpu"), **ig_options)
print(backends.verdict)
backends.summary[
    ["mean_cosine", "mean_top_k_overlap", "max_abs_diff", "flipped", "explanation_cycles"]
]""",
    ),
    (
        "md",
        """\
The Edge TPU runs int8 networks for inference only, so it cannot compute gradients, but
it can run SHAP, which needs only predictions. `xai.quantize` calibrates the int8
network on a few training images; `compare_backends` runs the quantised network there.""",
    ),
    (
        "code",
        """\
qnet = xai.quantize(net, train.X[:200], progress=False)
edge = xai.ModelRunner(qnet, "edgetpu")
accuracy = (edge.predict(test.X).argmax(axis=1) == test.y).mean()
print(f"int8 test accuracy on the Edge TPU: {accuracy:.3f}, cycles: {edge.counters['cycles']:,.0f}")

shap_backends = xai.compare_backends(
    net, X, method="shap", backends=("cpu", "edgetpu"), calibration=train.X[:200], **shap_options
)
shap_backends.summary[["mean_cosine", "mean_top_k_overlap", "flipped"]]""",
    ),
    (
        "md",
        """\
## Do the methods agree, and are they faithful?

`compare_methods` runs the methods on the same rows and outputs and compares them
pairwise. `faithfulness` deletes pixels in the order of an explanation and measures how
fast the explained output falls, against random orders: a faithful explanation's
deletion curve falls faster than chance (a smaller area).""",
    ),
    (
        "code",
        """\
methods = xai.compare_methods(
    net,
    X,
    methods=("ig", "shap", "lime"),
    method_options={"ig": ig_options, "shap": shap_options, "lime": lime_options},
)
faith = xai.faithfulness(net, ig, steps=10, n_random=2)
display(methods.matrices["cosine"].round(3))
faith.summary""",
    ),
    (
        "md",
        """\
## One offline report

Everything added to a `Report` goes into one self-contained HTML file: no network
requests, readable with JavaScript off. It is written to the working directory.""",
    ),
    (
        "code",
        """\
report = xai.Report("xai-core quickstart", seed=0)
report.add(ig, "Integrated gradients")
report.add(backends, "IG on cpu, gpu and tpu")
report.add(shap_backends, "SHAP on the int8 Edge TPU")
report.add(methods, "IG, SHAP and LIME")
report.add(faith, "Faithfulness of IG")
path = report.save("quickstart.html")
print(path)""",
    ),
]


PLUGIN = [
    (
        "md",
        """\
## The explainer

An explainer is a subclass of `xai_core.Explainer` with

- `name`: the `method=` string of `xai.explain`;
- `requires`: the capabilities it needs, from `{"predict", "gradient", "activations"}`,
  checked before any work;
- options as keyword arguments of `__init__`, each stored under the same name and
  nothing else done there;
- `explain(runner, X, target)`: `X` arrives validated, shape `(n_samples, *input_shape)`,
  and `target` as an int64 array of shape `(n_samples,)`; call `runner.predict` on large
  batches and return an `Explanation`.

This one ablates features: each feature (or each square patch of an image) is set to a
baseline value, and its attribution is the drop of the explained output. All ablated
copies of all rows go through the model in one call.""",
    ),
    (
        "code",
        """\
import numpy as np

import xai_core as xai
from xai_core.errors import ValidationError


class PatchAblation(xai.Explainer):
    \"\"\"Set each feature, or each patch of an image, to ``baseline``; attribute the output's drop.\"\"\"

    name = "patch_ablation"
    requires = frozenset({"predict"})

    def __init__(self, *, baseline=0.0, image_shape=None, patch_size=4):
        self.baseline = baseline
        self.image_shape = image_shape
        self.patch_size = patch_size

    def _groups(self, n_features):
        \"\"\"Group label of every feature, shape (n_features,).\"\"\"
        if self.image_shape is None:
            return np.arange(n_features)
        height, width = self.image_shape
        if height * width != n_features:
            raise ValidationError(
                f"image_shape must multiply to the {n_features} features; got {self.image_shape}."
            )
        if not isinstance(self.patch_size, int) or self.patch_size < 1:
            raise ValidationError(f"patch_size must be a positive int; got {self.patch_size!r}.")
        rows, cols = np.divmod(np.arange(n_features), width)
        per_row = -(-width // self.patch_size)
        return (rows // self.patch_size) * per_row + cols // self.patch_size

    def explain(self, runner, X, target):
        n = len(X)
        flat = X.reshape(n, -1)
        groups = self._groups(flat.shape[1])
        masks = groups[None, :] == np.unique(groups)[:, None]  # (n_groups, n_features)
        # Every ablated copy of every row at once: (n, n_groups, n_features), one model call.
        ablated = np.where(masks[None], np.asarray(self.baseline, flat.dtype), flat[:, None, :])
        full = runner.predict(X)[np.arange(n), target]
        out = runner.predict(ablated.reshape(-1, *X.shape[1:])).reshape(n, len(masks), -1)
        drop = full[:, None] - out[np.arange(n), :, target]  # (n, n_groups)
        # Spread each group's drop evenly over its features.
        values = (drop @ (masks / masks.sum(axis=1, keepdims=True))).reshape(X.shape)
        return xai.Explanation(
            values=values,
            base_values=full - values.reshape(n, -1).sum(axis=1),
            target=target,
            meta={"n_groups": len(masks)},
        )""",
    ),
    (
        "md",
        """\
## Register it for this session

A plugin is a module (or any object) with functions decorated `@xai.hookimpl`, named
after the hooks. `register_plugin` adds it to the default registry, so `xai.explain`,
`compare_methods` and reports see the method at once; `reset_registry()` forgets it.""",
    ),
    (
        "code",
        """\
import types

from xai_core.plugin.manager import register_plugin

plugin = types.ModuleType("patch_ablation_plugin")
plugin.xai_register_explainers = xai.hookimpl(lambda: [PatchAblation])
registry = register_plugin(plugin)
print(xai.list_explainers())
print([r for r in registry.plugins() if r["name"] == "patch_ablation_plugin"])""",
    ),
    (
        "md",
        """\
## Check the contract

`xai_core.testing.check_explainer` runs the checks every first-party explainer passes:
class data, keyword options stored as attributes, shapes and targets on a linear model,
a single row, determinism, and a wrong-shaped `X` rejected. It raises with a message
naming what failed, and returns nothing when all is well.""",
    ),
    (
        "code",
        """\
from xai_core.testing import check_explainer

check_explainer(PatchAblation)
print("PatchAblation keeps the explainer contract")""",
    ),
    (
        "md",
        """\
The contract says nothing about whether the numbers are right; check them against a
closed form. On a linear model `f(x) = x @ W` with baseline 0, removing feature `j`
drops output `k` by exactly `x_j * W[j, k]`, and with patches each pixel gets its
patch's share of the drop. `xai_core.testing.LinearModel` is such a model.""",
    ),
    (
        "code",
        """\
from xai_core.testing import LinearModel

rng = np.random.default_rng(0)
W = rng.normal(size=(16, 3))
X_lin = rng.normal(size=(5, 16))
e_lin = xai.explain(LinearModel(W), X_lin, method="patch_ablation", target=2)
np.testing.assert_allclose(e_lin.values, X_lin * W[:, 2], atol=1e-5)

# 4 x 4 images in 2 x 2 patches: each pixel holds a quarter of its patch's drop.
e_img = xai.explain(
    LinearModel(W), X_lin, method="patch_ablation", target=2, image_shape=(4, 4), patch_size=2
)
patch_drop = (X_lin * W[:, 2]).reshape(5, 2, 2, 2, 2).sum(axis=(2, 4))  # (rows, 2, 2) patches
expected = np.repeat(np.repeat(patch_drop / 4, 2, axis=1), 2, axis=2).reshape(5, 16)
np.testing.assert_allclose(e_img.values, expected, atol=1e-5)
print("matches the closed form")""",
    ),
    (
        "md",
        """\
## Use it

The method needs only predictions, so it runs where gradients are not available: on a
black box, or on the int8 Edge TPU, which runs quantised networks for inference only.
Here a small MLP trained on the bundled MNIST sample is explained on the CPU and, once
quantised, on the Edge TPU.""",
    ),
    (
        "code",
        """\
from xai_core import nn
from xai_datasets import load_mnist

train, test = load_mnist("train"), load_mnist("test")
net = nn.mlp(784, hidden=(32,), n_outputs=10, activation="relu", seed=0)
net.fit(
    train.X, train.y, optimizer="adam", learning_rate=2e-3, batch_size=64, epochs=2, progress=False
)
print(f"test accuracy: {net.score(test.X, test.y):.3f}")

X = test.X[:3]
e = xai.explain(net, X, method="patch_ablation", image_shape=(28, 28), patch_size=4)
print(e.values.shape, e.meta["n_groups"], "patches")
e""",
    ),
    (
        "code",
        """\
qnet = xai.quantize(net, train.X[:200], progress=False)
e_edge = xai.explain(qnet, X, method="patch_ablation", backend="edgetpu", image_shape=(28, 28))
cosine = (
    (e.values * e_edge.values).sum(1)
    / np.linalg.norm(e.values, axis=1)
    / np.linalg.norm(e_edge.values, axis=1)
)
print("cosine similarity, int8 Edge TPU vs fp32 CPU, per row:", cosine.round(4))
try:
    xai.explain(qnet, X, method="ig", backend="edgetpu")
except xai.CapabilityError as err:
    print("CapabilityError:", err)""",
    ),
    (
        "md",
        """\
A registered method takes part in everything else, for example the comparison of
methods on the same rows:""",
    ),
    (
        "code",
        """\
comparison = xai.compare_methods(
    net,
    X,
    methods=("patch_ablation", "shap", "ig"),
    method_options={
        "patch_ablation": {"image_shape": (28, 28)},
        "shap": {
            "algorithm": "kernel",
            "max_evals": 300,
            "image_shape": (28, 28),
            "background": np.zeros((1, 784), np.float32),
            "progress": False,
        },
        "ig": {"steps": 16},
    },
)
comparison.matrices["cosine"].round(3)""",
    ),
    (
        "md",
        """\
Bad options fail before any model call, with a message that names the option:""",
    ),
    (
        "code",
        """\
try:
    xai.explain(net, X, method="patch_ablation", image_shape=(20, 20))
except xai.ValidationError as err:
    print("ValidationError:", err)
try:
    xai.explain(net, X, method="patch_ablation", patch=4)
except xai.UnknownNameError as err:
    print("UnknownNameError:", err)""",
    ),
    (
        "md",
        f"""\
## Ship it as a package

Put the class and the hook in a module of your distribution and name the module in the
`xai_core` entry-point group of its `pyproject.toml`. Once installed (`pip install .`),
it is loaded with the first-party plugins in every session, and `xai plugins` lists it
(or shows its error, without breaking the others):

```toml
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "xai-patch-ablation"
version = "0.1.0"
dependencies = ["xai-core"]

[project.entry-points.xai_core]
patch_ablation = "xai_patch_ablation.plugin"
```

```python
# xai_patch_ablation/plugin.py
from xai_core import Explainer, Explanation, hookimpl

class PatchAblation(Explainer):
    ...

@hookimpl
def xai_register_explainers():
    return [PatchAblation]
```

[`tests/fixtures/leave_one_out_plugin`]({REPO_URL}/tree/main/tests/fixtures/leave_one_out_plugin)
in the repository is a complete example that the test suite installs with pip, and
[`docs/plugin_hooks.md`]({REPO_URL}/blob/main/docs/plugin_hooks.md) lists every hook:
backends, report sections, CLI commands and tools are added the same way.""",
    ),
]


TABULAR = [
    (
        "md",
        """\
## An MLP on breast cancer

569 tumours, 30 numeric features, two classes. The network is trained on standardised
features; a small wrapper lets the what-if tool work in the original units below.""",
    ),
    (
        "code",
        """\
import numpy as np

import xai_core as xai
from xai_core import nn
from xai_datasets import load_breast_cancer

data = load_breast_cancer()
train, test = data.train_test_split(test_size=0.3, seed=0)
mean, std = train.X.mean(axis=0), train.X.std(axis=0)
Z_train, Z_test = (train.X - mean) / std, (test.X - mean) / std

mlp = nn.mlp(
    Z_train.shape[1],
    hidden=(16, 8),
    n_outputs=2,
    activation="tanh",
    seed=0,
    output_names=train.class_names,
)
mlp.fit(
    Z_train, train.y, optimizer="adam", learning_rate=1e-2, batch_size=32, epochs=30, progress=False
)
print(f"test accuracy: {mlp.score(Z_test, test.y):.3f}")""",
    ),
    (
        "md",
        """\
## SHAP and LIME on a few rows

Both explain the predicted class of each row. SHAP's Kernel estimator uses 50 training
rows as the background; LIME draws its perturbations from the training data's
statistics.""",
    ),
    (
        "code",
        """\
rows = Z_test[:3]
shap_e = xai.explain(
    mlp,
    rows,
    method="shap",
    algorithm="kernel",
    background=Z_train[:50],
    feature_names=data.feature_names,
    progress=False,
)
lime_e = xai.explain(
    mlp,
    rows,
    method="lime",
    background=Z_train,
    n_samples=1000,
    stability_seeds=0,
    feature_names=data.feature_names,
    progress=False,
)
print("SHAP additivity: sum(values) + base =", shap_e.values.sum(axis=1) + shap_e.base_values)
print("model output:                      ", mlp.predict(rows)[np.arange(3), shap_e.target])
shap_e""",
    ),
    (
        "md",
        """\
## Pictures: shap's plots and xai-core's own

`to_shap()` gives a real `shap.Explanation`, so every `shap.plots.*` function draws it;
`e.plot.bar()`, `.waterfall(i)`, `.beeswarm()` and `.image(i)` draw the same with
matplotlib. `with_outcomes` records the true labels and the model's probabilities, so the
report heads each row with them and marks a misclassified row. Indexing works as in shap:
`shap_e[0]` is one row (values of shape `(30,)`), `shap_e[:, "worst radius"]` one feature
(shape `(3,)`); `shap_e[[0]]` or `shap_e[0].as_batch()` is a one-row batch.""",
    ),
    (
        "code",
        """\
import matplotlib.pyplot as plt
import shap

shap_e = shap_e.with_outcomes(test.y[:3], mlp.predict(rows))
shap.plots.waterfall(shap_e[0].to_shap(), show=False)
plt.show()
shap_e.plot.bar()
plt.show()
shap_e[:, "worst radius"].to_frame()""",
    ),
    (
        "code",
        """\
import pandas as pd

top = np.argsort(-np.abs(shap_e.values[0]))[:8]
pd.DataFrame(
    {"shap": shap_e.values[0, top], "lime": lime_e.values[0, top]},
    index=[data.feature_names[i] for i in top],
).round(4)""",
    ),
    (
        "md",
        """\
## The what-if tool

A what-if session holds a model and a dataset. Here the model is the MLP behind the
standardisation, so edits, counterfactuals and partial dependence speak in the original
units (millimetres, not z-scores).""",
    ),
    (
        "code",
        """\
model = xai.BlackBoxModel(
    lambda X: mlp.predict((np.asarray(X) - mean) / std),
    input_shape=(30,),
    output_names=data.class_names,
)
w = xai.what_if(
    model,
    test.X,
    test.y,
    feature_names=data.feature_names,
    output_names=data.class_names,
    progress=False,
)
w""",
    ),
    (
        "md",
        """\
**Edit a datapoint**: change features of one row, re-run the model, see what moved.
We take the test row the model is least sure about, and make its largest cell radius
20 % larger. `revert()` undoes the edit exactly.""",
    ),
    (
        "code",
        """\
proba = model.predict(test.X)
row = int(np.argmin(np.abs(proba[:, 0] - 0.5)))
radius = test.X[row, data.feature_names.index("worst radius")]
r = w.edit(row, {"worst radius": radius * 1.2})
print(f"row {row}:", r.before.round(3), "->", r.after.round(3))
w.revert()
r""",
    ),
    (
        "md",
        """\
**Nearest counterfactual**: the closest other example (L1 over features scaled by their
standard deviation) in the data that the model predicts differently.

**Searched counterfactual**: the smallest edit that flips the prediction, here changing
at most three features and keeping the texture features fixed.""",
    ),
    (
        "code",
        """\
nearest = w.nearest_counterfactual(row, distance="l1")
texture = [f for f in data.feature_names if "texture" in f]
searched = w.counterfactual(row, immutable=texture, max_features=3, n=2, seed=0)
print(f"nearest example at distance {nearest.distances[0]:.2f}")
print(f"searched edits at distances {searched.distances.round(3)}, changing {searched.changed}")
searched""",
    ),
    (
        "md",
        """\
**Partial dependence**: the average prediction (and one ICE curve per row) as one
feature moves over a grid.""",
    ),
    (
        "code",
        """\
pd_radius = w.partial_dependence("worst radius", grid_resolution=15, rows=np.arange(60))
print(pd_radius.average.shape)  # (grid points, outputs)
pd_radius""",
    ),
    (
        "md",
        """\
**Slices and thresholds**: performance per slice of a feature, and per-slice decision
thresholds under a fairness constraint (here equal positive rates across the quartiles
of tumour size, with false positives counted twice).""",
    ),
    (
        "code",
        """\
slices = w.slices("mean radius", bins=4)
thresholds = w.thresholds("mean radius", "demographic_parity", cost_ratio=2.0)
display(slices)
thresholds""",
    ),
    (
        "code",
        """\
report = xai.Report("Breast cancer: SHAP, LIME and what-if", seed=0)
report.add(shap_e, "SHAP").add(lime_e, "LIME").add(nearest).add(searched)
report.add(pd_radius).add(slices).add(thresholds)
print(report.save("tabular_whatif.html"))""",
    ),
]


PROJECTOR = [
    (
        "md",
        """\
## A network with a named hidden layer

A small MLP on the bundled MNIST sample; its 32-unit layer `hidden` is the embedding.""",
    ),
    (
        "code",
        """\
import numpy as np

import xai_core as xai
from xai_core import nn
from xai_datasets import load_mnist

train, test = load_mnist("train"), load_mnist("test")
net = nn.Sequential(
    [nn.Dense(64), nn.ReLU(), nn.Dense(32, name="hidden"), nn.ReLU(), nn.Dense(10), nn.Softmax()],
    input_shape=(784,),
    seed=0,
)
net.fit(
    train.X, train.y, optimizer="adam", learning_rate=2e-3, batch_size=64, epochs=2, progress=False
)
print(f"test accuracy: {net.score(test.X, test.y):.3f}")""",
    ),
    (
        "md",
        """\
## Project the hidden layer

`xai.project(net, X, layer=...)` runs the network up to the layer and projects its
activations. PCA is deterministic and fast; t-SNE (seeded) separates the classes more
clearly. In a notebook the result is an interactive scatter: hover, search (by label,
or any column chosen under "Search by"; the other points stay visible, dimmed), click
for neighbours.""",
    ),
    (
        "code",
        """\
X, y = test.X[:300], test.y[:300]
labels = [test.class_names[i] for i in y]
images = X.reshape(-1, 28, 28)

pca = xai.project(
    net, X, layer="hidden", method="pca", labels=labels, images=images, progress=False
)
print("explained variance:", pca.explained_variance_ratio.round(3))
pca""",
    ),
    (
        "code",
        """\
tsne = xai.project(
    net,
    X,
    layer="hidden",
    method="tsne",
    labels=labels,
    images=images,
    perplexity=20,
    max_iter=400,
    seed=0,
    progress=False,
)
tsne""",
    ),
    (
        "md",
        """\
## Zoom, colour by a column, 3-D

Wheel or pinch to zoom, drag to pan, "Reset view" to go back; with the plot focused,
`+`, `-`, the arrow keys and `0` do the same. `show(color_by=...)` colours the points by
any metadata column: a palette and a legend for categories, a continuous scale and a
colour bar for numbers (the "Colour by" menu switches). With three components the view
is 3-D: drag to rotate, shift-drag to pan, untick "3-D view" for components 1 and 2.""",
    ),
    (
        "code",
        """\
confidence = net.predict(X).max(axis=1).round(3)
pca3 = xai.project(
    net,
    X,
    layer="hidden",
    method="pca",
    n_components=3,
    labels=labels,
    metadata={"confidence": confidence, "correct": net.predict(X).argmax(axis=1) == y},
    progress=False,
)
pca3.show(color_by="confidence")""",
    ),
    (
        "md",
        """\
## Neighbours and search

Neighbours are computed in the original 32-dimensional space, not in the projection.
How often do a point's nearest neighbours share its label?""",
    ),
    (
        "code",
        """\
nb = tsne.neighbors(k=5, metric="cosine")
same = (y[nb.indices] == y[:, None]).mean()
print(f"neighbours with the same label: {same:.2%}")

sevens = tsne.search("7")  # by label, the default; fields= names another column
print(len(sevens), "sevens; first rows:", sevens.indices[:10])
nb_sevens = tsne.neighbors(k=3, rows=sevens)
print("neighbours of the first seven:", nb_sevens.indices[0], nb_sevens.distances[0].round(3))""",
    ),
    (
        "md",
        """\
## Export for TensorBoard's projector

`export_tensorboard` writes `tensors.tsv`, `metadata.tsv`, a sprite of the images and
`projector_config.pbtxt`. Give each export its own folder (a second export into the same
one replaces the first), point `tensorboard --logdir` at it and open
`http://localhost:6006/#projector`, or load the two TSV files in the standalone Projector. The projected coordinates and the neighbour lists,
which the Projector cannot export, go to CSV / JSON. Here everything goes to a temporary
directory.""",
    ),
    (
        "code",
        """\
import tempfile
from pathlib import Path

from xai_projector import load_tensorboard

with tempfile.TemporaryDirectory() as tmp:
    files = tsne.export_tensorboard(Path(tmp) / "projector")
    print(sorted(p.name for p in files.values()))
    back = load_tensorboard(Path(tmp) / "projector")
    same = np.array_equal(back["vectors"].astype(tsne.vectors.dtype), tsne.vectors)
    print("vectors read back exactly:", same)
    tsne.to_csv(Path(tmp) / "coords.csv")
    tsne.save_neighbors(Path(tmp) / "neighbors.json", k=5)
    print((Path(tmp) / "coords.csv").read_text().splitlines()[:3])""",
    ),
]

EDITOR = [
    (
        "md",
        """\
## A network and a what-if session

A small native network on the breast-cancer data (standardised). The editor works for any
model the runner accepts; a native network is explained by integrated gradients and can
also run in the offline report's own script.""",
    ),
    (
        "code",
        """\
import numpy as np

import xai_core as xai
from xai_datasets import load_breast_cancer

ds = load_breast_cancer()
X = ((ds.X - ds.X.mean(0)) / ds.X.std(0)).astype(np.float32)
net = xai.nn.mlp(X.shape[1], hidden=(8,), n_outputs=2, activation="relu")
net.fit(X, ds.y, learning_rate=0.05, epochs=5, progress=False)
w = xai.what_if(net, X, ds.y, feature_names=ds.feature_names, output_names=ds.class_names)""",
    ),
    (
        "md",
        """\
## The editor

`w.editor(row)` is laid out as the What-If Tool's datapoint editor. On the left, the row
picker (index, search, or a click in the scatter below) and a slider per feature under its
whole name, in the column's own decimals; beside it, the panels that follow each change:
prediction, the partial dependence of the edited feature with its current value marked,
explanation and nearest counterfactual (differing features highlighted). On a narrow pane
the two columns stack. Its `state` drives it from Python, as here.""",
    ),
    (
        "code",
        """\
ed = w.editor(3)
ed""",
    ),
    (
        "code",
        """\
before = ed.state.outputs.copy()
ed.controls["worst radius"].value = 2.5  # what dragging the slider does
print("outputs before", before.round(3), "after", ed.state.outputs.round(3))
print("explanation, largest attributions:")
e = ed.state.explanation
for j in np.argsort(-np.abs(e.values[0]))[:3]:
    print(f"  {e.feature_names[j]}: {e.values[0, j]:+.3f}")
print(ed.state.counterfactual)
rows = ed.state.search("`mean radius` > 2.5")
print("rows with mean radius > 2.5:", rows[:5])""",
    ),
    (
        "md",
        """\
## Offline, in the report

The report's what-if section carries the network's weights; its script re-scores an
edited row in the page, without a kernel. The features (values in each column's decimals,
the data's range beside them) sit beside the outputs and the edited feature's partial
dependence; a value outside the data's range is marked.""",
    ),
    (
        "code",
        """\
xai.Report("what-if editor", seed=0).add(w).save("whatif_editor.html")""",
    ),
]

PLAYGROUND = [
    (
        "md",
        """\
## Train with the view as a callback

The Playground's XOR problem and its default network (two hidden layers of 4 and 2, tanh).
`xai.playground_view` is a `fit` callback: after each epoch it records the train and test
loss and redraws the decision surface, each neuron's surface and the links (live in a
notebook through `view.widget()`).""",
    ),
    (
        "code",
        """\
import xai_core as xai
from xai_datasets import playground

train, test = playground("xor", 200, seed=0), playground("xor", 200, seed=1)
net = xai.nn.mlp(2, hidden=(4, 2), n_outputs=2, activation="tanh")
view = xai.playground_view(net, train, test, resolution=30)
live = view.widget()
display(live)
net.fit(train.X, train.y, learning_rate=0.1, epochs=20, progress=False, callbacks=view)
print(view.losses[-1])""",
    ),
    (
        "md",
        """\
## Explain a point

A click in the decision surface explains that point; here the click is set from Python.
`view.regions()` tells which last-layer neuron pushes the output most at each grid point.""",
    ),
    (
        "code",
        """\
live.plot.point = [2.0, -2.0]
print(live.explanation.values, "neurons:", [a.round(2) for a in live.neurons_at_point])
print(view.regions()[::6, ::6])""",
    ),
    (
        "md",
        """\
## Play, pause, step, reset

`xai.playground_app` is the Playground: play trains in the background and the epoch counter,
surfaces and loss curves move; pause, step and reset do what they say. The learning rate and
regularisation act on the running network; layers, activation, features, noise and the
train/test split restart it at epoch 0. The noise knob regenerates the data through the
function given.""",
    ),
    (
        "code",
        """\
app = xai.playground_app(lambda noise: playground("circle", 200, noise=noise), epochs=60)
app.controls["feature x1^2"].value = True
app.controls["feature x2^2"].value = True
app.step(15)  # or press play; app.play() and app.pause() from Python
app.widget()""",
    ),
    (
        "code",
        """\
xai.Report("playground", seed=0).add(app.view).save("playground.html")""",
    ),
]


IMPORT_PYTORCH = [
    (
        "md",
        """\
## Train a small PyTorch CNN with batch norm

Two convolutions with batch normalisation, ReLU and max pooling, then a dense layer: a
few seconds of Adam on the 2,000 MNIST training images bundled with `xai_datasets`. The
images come as flat rows of 784 pixels in [0, 1]; PyTorch wants them as
`(n, 1, 28, 28)`.""",
    ),
    (
        "code",
        """\
import numpy as np
import torch
from torch import nn as tnn

import xai_core as xai
from xai_datasets import load_mnist

torch.manual_seed(0)
torch.set_num_threads(1)
train, test = load_mnist("train"), load_mnist("test")
X_train = torch.from_numpy(train.X.reshape(-1, 1, 28, 28))
y_train = torch.from_numpy(train.y.astype(np.int64))

features = tnn.Sequential(
    tnn.Conv2d(1, 8, 3, padding=1),
    tnn.BatchNorm2d(8),
    tnn.ReLU(),
    tnn.MaxPool2d(2),
    tnn.Conv2d(8, 16, 3, padding=1),
    tnn.BatchNorm2d(16),
    tnn.ReLU(),
    tnn.MaxPool2d(2),
    tnn.Flatten(),
    tnn.Linear(16 * 7 * 7, 10),
)
optimizer = torch.optim.Adam(features.parameters(), lr=3e-3)
for _epoch in range(3):
    for i in torch.randperm(len(X_train)).split(64):
        optimizer.zero_grad()
        tnn.functional.cross_entropy(features(X_train[i]), y_train[i]).backward()
        optimizer.step()
model = tnn.Sequential(features, tnn.Softmax(dim=1)).eval()  # explain probabilities
X_test = test.X.reshape(-1, 1, 28, 28)
with torch.no_grad():
    torch_accuracy = (model(torch.from_numpy(X_test)).argmax(1).numpy() == test.y).mean()
print(f"PyTorch test accuracy: {torch_accuracy:.3f}")""",
    ),
    (
        "md",
        """\
## Import it

`xai.from_torch` exports the module to ONNX in memory and builds a native graph network
from it: every matrix product, elementwise operation and reduction of its forward and
backward passes now runs on a simulated backend. The import checks itself: it runs both
networks on the example batch and refuses to return a network that differs. Node names
are the exporter's, so any of them can be read with `activations`.""",
    ),
    (
        "code",
        """\
net = xai.from_torch(model, torch.zeros(1, 1, 28, 28), output_names=train.class_names)
print(net.summary())
with torch.no_grad():
    want = model(torch.from_numpy(X_test)).numpy()
print("largest difference from PyTorch on the test set:", np.abs(net.predict(X_test) - want).max())
print(f"imported test accuracy: {(net.predict(X_test).argmax(1) == test.y).mean():.3f}")""",
    ),
    (
        "md",
        """\
## IG, SHAP and LIME on the cpu, gpu and tpu

Integrated gradients runs the imported network's own backward pass on each backend;
SHAP (4 x 4 patches, Kernel SHAP) and LIME (superpixels) need only its predictions. The
budgets are small so this runs in seconds.""",
    ),
    (
        "code",
        """\
X = X_test[:2]
options = {
    "ig": {"steps": 16, "progress": False},
    "shap": {
        "algorithm": "kernel",
        "max_evals": 300,
        "patch_size": 4,
        "background": np.zeros((1, 1, 28, 28), np.float32),
        "progress": False,
    },
    "lime": {"n_samples": 300, "stability_seeds": 0, "progress": False},
}
explanations = {
    (method, backend): xai.explain(net, X, method=method, backend=backend, **opts)
    for method, opts in options.items()
    for backend in ("cpu", "gpu", "tpu")
}
for (method, backend), e in explanations.items():
    print(f"{method:5s} on {backend}: {e.values.min():+.4f} .. {e.values.max():+.4f}")
explanations["ig", "tpu"]""",
    ),
    (
        "md",
        """\
## Where bf16 moves the attributions

The TPU multiplies in bf16 (8 bits of mantissa) and sums in fp32. `compare_backends`
explains the same rows and outputs on each backend and compares them with the fp32 CPU:
cosine similarity, top-k overlap, the largest differences, flipped predictions, and what
each backend counted. The GPU only changes the order of fp32 sums; the TPU's bf16
operands move the attributions more.""",
    ),
    (
        "code",
        """\
ig_backends = xai.compare_backends(
    net, X, method="ig", backends=("cpu", "gpu", "tpu"), **options["ig"]
)
ig_backends.summary[["mean_cosine", "mean_top_k_overlap", "max_abs_diff", "flipped"]]""",
    ),
    (
        "md",
        """\
Which pixels moved? The difference between the TPU's and the CPU's integrated gradients
of the first digit, relative to the largest CPU attribution, and the pixels where it is
largest: bf16 rounding moves the attributions most where the attributions themselves are
large, along the strokes of the digit.""",
    ),
    (
        "code",
        """\
cpu_values = ig_backends.explanations["cpu"].values[0, 0]
tpu_values = ig_backends.explanations["tpu"].values[0, 0]
moved = (tpu_values - cpu_values) / np.abs(cpu_values).max()
print(f"largest relative move: {np.abs(moved).max():.2%}")
for flat in np.argsort(-np.abs(moved), axis=None)[:5]:
    r, c = divmod(int(flat), 28)
    cpu_v, tpu_v, ink = cpu_values[r, c], tpu_values[r, c], X[0, 0, r, c]
    print(f"pixel ({r:2d}, {c:2d}): cpu {cpu_v:+.5f}  tpu {tpu_v:+.5f}  ink {ink:.2f}")
shap_backends = xai.compare_backends(
    net, X, method="shap", backends=("cpu", "tpu"), **options["shap"]
)
shap_backends.summary[["mean_cosine", "mean_top_k_overlap", "max_abs_diff"]]""",
    ),
    (
        "md",
        """\
## Inside the imported network, and a report

The projector reads the activations of any named node; here the output of the second
batch-normalised block, after its ReLU. Everything goes into one offline HTML report.""",
    ),
    (
        "code",
        """\
relu = [node.name for node in net.nodes if type(node.layer).__name__ == "ReLU"][1]
projection = xai.project(net, X_test[:200], layer=relu, labels=test.y[:200].astype(str))
report = xai.Report("An imported PyTorch CNN on simulated hardware", seed=0)
report.add(explanations["ig", "cpu"], "IG on cpu")
report.add(ig_backends, "IG on cpu, gpu and tpu")
report.add(shap_backends, "SHAP on cpu and tpu")
report.add(projection, f"activations of {relu}")
print(report.save("import_pytorch.html"))""",
    ),
]


EDGE_TPU = [
    (
        "md",
        """\
## A network, and its two .tflite files

Train a small CNN on the bundled MNIST sample, then write it twice as TensorFlow Lite: a
float32 file, and a full-integer int8 file quantised in TensorFlow's converter scheme on
500 calibration digits, the kind of file the Edge TPU compiler takes. Reading them back
with `xai.from_tflite` runs TFLite's own kernels (bit-exact with LiteRT for int8); a
`.tflite` made by TensorFlow's converter or exported by Teachable Machine reads the same
way.""",
    ),
    (
        "code",
        """\
import numpy as np

import xai_core as xai
from xai_core import nn
from xai_datasets import load_mnist

train, test = load_mnist("train"), load_mnist("test")
net = nn.cnn(hidden=32)
net.fit(
    train.X, train.y, optimizer="adam", learning_rate=3e-3, batch_size=32, epochs=1, progress=False
)

xai.to_tflite(net, "mnist_float.tflite")
xai.to_tflite(net, "mnist_int8.tflite", calibration_X=train.X[:500])
f = xai.from_tflite("mnist_float.tflite", output_names=train.class_names)
q = xai.from_tflite("mnist_int8.tflite", output_names=train.class_names)
for model in (f, q):
    accuracy = np.mean(model.predict(test.X).argmax(1) == test.y)
    print(f"{model!r}: test accuracy {accuracy:.3f}")""",
    ),
    (
        "md",
        """\
## What the Edge TPU compiler would map

The Edge TPU runs only certain operators, on 8-bit tensors; the compiler maps the graph up
to the first operator it cannot run and leaves the rest to the host CPU. On `edgetpu` the
mapped part runs on the systolic array model and the rest on a CPU model, and the counters
show each share.""",
    ),
    (
        "code",
        """\
print(q.placement_table().to_string())
runner = xai.ModelRunner(q, backend="edgetpu")
runner.predict(test.X[:100])
c = runner.counters
print(
    f"Edge TPU: {c['macs']:,.0f} MACs, {c['cycles']:,.0f} cycles; host: {c['host_macs']:,.0f} MACs"
)""",
    ),
    (
        "md",
        """\
## Does the int8 file still look at the right pixels?

Explain the same digits with SHAP (4 x 4 pixel patches) and LIME (superpixels):
`compare_backends` runs the float file on the CPU (the reference), the GPU and the TPU, and
the int8 file on the Edge TPU (`quantized=q`), and measures how far each explanation is from
the reference: cosine similarity, top-k overlap and rank correlation per digit.
`compare_methods` asks whether the methods agree with each other on the deployed file.""",
    ),
    (
        "code",
        """\
X = test.X[:4]
shap_options = {
    "algorithm": "kernel",
    "max_evals": 300,
    "image_shape": (28, 28),
    "patch_size": 4,
    "background": np.zeros((1, 784), np.float32),
    "seed": 0,
}
c_shap = xai.compare_backends(
    f, X, method="shap", backends=["cpu", "gpu", "tpu", "edgetpu"], quantized=q, **shap_options
)
c_shap.summary[["mean_cosine", "mean_top_k_overlap", "mean_spearman", "flipped"]]""",
    ),
    (
        "code",
        """\
lime_options = {"num_samples": 300, "image_shape": (28, 28), "seed": 0}
c_lime = xai.compare_backends(
    f, X, method="lime", backends=["cpu", "edgetpu"], quantized=q, **lime_options
)
print(c_lime.summary[["mean_cosine", "mean_top_k_overlap"]])
methods = xai.compare_methods(
    q,
    X,
    methods=("shap", "lime"),
    backend="edgetpu",
    method_options={"shap": shap_options, "lime": lime_options},
)
methods.matrices["cosine"]""",
    ),
    (
        "md",
        """\
## Where int8 moved the attributions

The rows where the int8 explanation is furthest from the float one, and the report with
the heatmaps side by side.""",
    ),
    (
        "code",
        """\
rows = c_shap.rows[c_shap.rows.backend == "edgetpu"].sort_values("cosine")
print(rows[["row", "cosine", "top_k_overlap", "prediction", "reference_prediction"]].to_string())
xai.Report("MNIST on the Edge TPU", seed=0).add(c_shap).add(c_lime).add(methods).save(
    "edge_tpu.html"
)""",
    ),
]


TEXT = [
    (
        "md",
        """\
## A small sentiment classifier

Twenty short reviews, a WordPiece tokenizer built in memory with `tokenizers`, and a
PyTorch classifier that averages its token embeddings. It trains in a second; the point
is what it learnt, token by token.""",
    ),
    (
        "code",
        """\
import numpy as np
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors

import xai_core as xai

good = [
    "great film",
    "a wonderful story",
    "loved the acting",
    "brilliant and moving",
    "a great cast",
    "wonderful music",
    "moving and funny",
    "loved it",
    "brilliant plot",
    "funny and great",
]
bad = [
    "boring film",
    "a terrible story",
    "hated the acting",
    "dull and slow",
    "a terrible cast",
    "awful music",
    "slow and boring",
    "hated it",
    "dull plot",
    "awful and boring",
]
texts, labels = good + bad, [1] * len(good) + [0] * len(bad)
words = sorted({w for t in texts for w in t.split()})
vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *words])}
tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
tok.post_processor = processors.TemplateProcessing(
    single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
)


class MeanEmbedding(torch.nn.Module):
    def __init__(self, n_words, dim=8):
        super().__init__()
        self.embedding = torch.nn.Embedding(n_words, dim)
        self.head = torch.nn.Linear(dim, 2)

    def forward(self, ids):
        return self.head(torch.tanh(self.embedding(ids)).mean(dim=1))  # logits


torch.manual_seed(0)
model = MeanEmbedding(len(vocab))
ids = torch.tensor([tok.encode(t).ids + [0] * (6 - len(tok.encode(t).ids)) for t in texts])
optimiser = torch.optim.Adam(model.parameters(), lr=0.05)
for _ in range(200):
    optimiser.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(ids), torch.tensor(labels))
    loss.backward()
    optimiser.step()
model.eval()
print(f"training loss {loss.item():.3f}")""",
    ),
    (
        "md",
        """\
## One attribution per token

`xai.explain(model, texts, tokenizer=...)` imports the module (its `nn.Embedding` becomes
`xai.nn.Embedding`), pads the texts to one length and attributes the positive class's
logit at the embedding's output, as Captum's `LayerIntegratedGradients` does: one value
per token, red where it raises the explained class, blue where it lowers it.""",
    ),
    (
        "code",
        """\
reviews = ["a wonderful and funny story", "slow music and a dull cast"]
e = xai.explain(model, reviews, tokenizer=tok, method="ig", max_length=8, target=1, steps=32)
print(e.meta["tokens"][0])
print(np.round(e.values[0], 3))
e  # the highlighted texts, in the report's own section""",
    ),
    (
        "code",
        """\
fig = e.plot.text()  # the same as a matplotlib figure (for papers, or viewers without HTML)""",
    ),
    (
        "md",
        """\
## Does it survive the hardware?

The same explanation on the simulated TPU (bf16 products, fp32 sums) and GPU. The tokens
that matter stay the same; the values move by about bf16's resolution on the TPU.""",
    ),
    (
        "code",
        """\
for backend in ("gpu", "tpu"):
    other = xai.explain(
        model,
        reviews,
        tokenizer=tok,
        method="ig",
        max_length=8,
        target=1,
        steps=32,
        backend=backend,
    )
    diff = np.abs(other.values - e.values).max() / np.abs(e.values).max()
    same_top = [
        int(np.argmax(np.abs(a))) == int(np.argmax(np.abs(b)))
        for a, b in zip(other.values, e.values)
    ]
    print(
        f"{backend}: largest change {diff:.1e} of the largest attribution; "
        f"same top token in every text: {all(same_top)}"
    )""",
    ),
    (
        "md",
        """\
## Words, and shap's plots

`merge="words"` sums the pieces of each word; `to_shap()` hands the explanation to
`shap.plots.text`.""",
    ),
    (
        "code",
        """\
words = xai.explain(model, reviews, tokenizer=tok, max_length=8, target=1, merge="words")
print(words.meta["tokens"][1])
sv = words.to_shap()
print(type(sv).__name__, len(sv.values))""",
    ),
    (
        "md",
        """\
## The words in the Projector

The model's embedding table, one vector per word, with the vocabulary as labels: the
Projector's own example. The words the classifier learnt to read alike end up near each
other.""",
    ),
    (
        "code",
        """\
p = xai.project(model, vocabulary=tok)
nb = p.neighbors(3, rows="great")
print("nearest to 'great':", list(p.labels[nb.indices[0]]))
p  # the 3-D view: search a word, click a point for its neighbours""",
    ),
]


SOUND = [
    (
        "md",
        """\
## Sound clips in class folders

Teachable Machine's sound projects hear one-second clips through speech-commands'
browser front end: a log-magnitude spectrogram of 43 frames of 232 frequency bins.
`xai_datasets.load_audio_folder` applies that front end to WAV files laid out one folder
per class. Here the clips are made on the spot: low hums and high whistles in noise.""",
    ),
    (
        "code",
        """\
from pathlib import Path

import numpy as np
from scipy.io import wavfile

import xai_core as xai
from xai_datasets import load_audio_folder

rng = np.random.default_rng(0)
t = np.arange(44100) / 44100
for name, low, high in (("hum", 150, 400), ("whistle", 2500, 5000)):
    folder = Path("clips") / name
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(8):
        pitch = rng.uniform(low, high)
        start = rng.uniform(0.1, 0.5)
        tone = np.sin(2 * np.pi * pitch * t) * ((t > start) & (t < start + 0.4))
        clip = 0.5 * tone + 0.05 * rng.standard_normal(t.size)
        wavfile.write(folder / f"{i}.wav", 44100, (clip * 32767).astype(np.int16))

ds = load_audio_folder("clips")
print(ds.X.shape, ds.class_names)""",
    ),
    (
        "md",
        """\
## A classifier, explained on the spectrogram

A small network on the spectrograms (a Teachable Machine export imports the same way:
`xai.from_teachable_machine("tm-my-audio-model.zip")`, then
`xai_core.importers.teachable_sound.prepare_audio(model, wav_files)`). Integrated
gradients then show which time-frequency cells made the call, and the sum per frame shows
when in the second it happened.""",
    ),
    (
        "code",
        """\
from xai_core import nn

X = ds.X.reshape(len(ds.X), 43, 232, 1)
net = nn.Sequential(
    [nn.Flatten(), nn.Dense(16), nn.ReLU(), nn.Dense(2), nn.Softmax()],
    input_shape=(43, 232, 1),
    output_names=ds.class_names,
)
net.fit(X, ds.y, optimizer="adam", learning_rate=1e-3, epochs=30, batch_size=8, progress=False)
print(f"training accuracy {net.score(X, ds.y):.2f}")
e = xai.explain(net, X[[0, 8]], method="ig", steps=16)
fig = e.plot.spectrogram(0)""",
    ),
    (
        "code",
        """\
fig = e.plot.spectrogram(1)  # a whistle: the attribution sits in the high bins""",
    ),
]


TEACHABLE = [
    (
        "md",
        """\
## Class folders

Teachable Machine trains on samples grouped by class. Here the classes are three digits
of scikit-learn's 8x8 digits, written as PNG files one folder per class, as a Teachable
Machine image project would hold photos.""",
    ),
    (
        "code",
        """\
from pathlib import Path

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits

import xai_core as xai

digits = load_digits()
for digit, name in ((0, "zero"), (1, "one"), (7, "seven")):
    folder = Path("digits") / name
    folder.mkdir(parents=True, exist_ok=True)
    for i, image in enumerate(digits.images[digits.target == digit][:40]):
        pixels = (image / 16 * 255).astype(np.uint8)
        Image.fromarray(pixels).resize((32, 32), Image.NEAREST).save(folder / f"{i}.png")

trainer = xai.teachable_trainer("digits", kind="image", image_size=16, color=False)
trainer.class_counts""",
    ),
    (
        "md",
        """\
## Train, then score each class

Teachable Machine's knobs (epochs, batch size, learning rate) and its split: 15 % of each
class is held out. The accuracy per class and the confusion matrix are on those samples.""",
    ),
    (
        "code",
        """\
trainer.train(epochs=20, batch_size=16, learning_rate=0.005, seed=0)
print(trainer.class_counts)
print(trainer.accuracy_per_class)
trainer.confusion_matrix""",
    ),
    (
        "md",
        """\
## Preview: the prediction bars

A file, or a held-out sample by position; the widget shows the bars live for the picked
sample or an uploaded image.""",
    ),
    (
        "code",
        """\
print(trainer.predict_bars("digits/seven/3.png"))
preview = trainer.widget()
display(preview)""",
    ),
    (
        "md",
        """\
## Export: float and int8 TensorFlow Lite, labels, Edge TPU placement

`model.tflite` (float), `model_int8.tflite` (full-integer, calibrated on the training
samples) and `labels.txt`, with where the Edge TPU compiler would put each operator of the
int8 file. The report carries the counts, the scores, the bars and the placement offline.""",
    ),
    (
        "code",
        """\
exported = trainer.export("export")
print(sorted(p.name for p in exported.folder.iterdir()))
print(exported.placement)
xai.Report("teachable").add(trainer).save("teachable.html")""",
    ),
    (
        "md",
        """\
## The whole page

`trainer.app()` lays the loop out as Teachable Machine's page: the knobs, a Train button,
the scores, the preview and an Export button. Change a knob and press Train.""",
    ),
    (
        "code",
        """\
page = xai.teachable_trainer("digits", kind="image", image_size=16, color=False).app()
display(page)""",
    ),
]


NOTEBOOKS = {
    "quickstart": (
        "Quickstart: explain an MNIST CNN with three methods on three backends",
        """\
Train a small CNN on MNIST, explain a few digits with integrated gradients, SHAP and
LIME, run the same explanation on the simulated GPU, TPU and int8 Edge TPU, check how
far the methods agree and how faithful they are, and save everything in one offline
HTML report.""",
        QUICKSTART,
    ),
    "third_party_plugin": (
        "Writing a third-party plugin: a new explainer",
        """\
Every method of `xai.explain`, the first-party ones included, comes from a plugin. This
notebook writes a new attribution method, registers it for the session, checks it with
the contract tests that first-party explainers pass, uses it, and shows how to ship it
as a package.""",
        PLUGIN,
    ),
    "tabular_whatif": (
        "Tabular data: SHAP, LIME and the what-if tool on breast cancer",
        """\
Train an MLP on the breast-cancer data, explain a few rows with SHAP and LIME, then probe
the model with the what-if tool: edit a datapoint, find counterfactuals, plot partial
dependence and compare performance and thresholds across slices.""",
        TABULAR,
    ),
    "projector": (
        "The embedding projector: a network's hidden layer",
        """\
Look at what a network's hidden layer has learnt: project its activations with PCA and
t-SNE, find each point's nearest neighbours, search by label, and export the embedding
for TensorBoard's projector.""",
        PROJECTOR,
    ),
    "import_pytorch": (
        "Your own network: a PyTorch CNN imported and explained on simulated hardware",
        """\
Train a small PyTorch CNN with batch normalisation, import it with `xai.from_torch`,
explain it with integrated gradients, SHAP and LIME on the simulated CPU, GPU and TPU, and
see where the TPU's bf16 arithmetic moves the attributions.""",
        IMPORT_PYTORCH,
    ),
    "edge_tpu": (
        "The Edge TPU flow: a float and an int8 .tflite, explained and compared",
        """\
Write a trained network as a float and a full-integer int8 TensorFlow Lite file, read both
back, see which operators the Edge TPU compiler would map, and check with
`compare_backends` and `compare_methods` whether the int8 model's explanations still point
at the same pixels.""",
        EDGE_TPU,
    ),
    "whatif_editor": (
        "The what-if editor: edit a datapoint live",
        """\
The What-If Tool's datapoint editor in a notebook: pick a row, drag its features and watch
the prediction, the explanation, the nearest counterfactual and the partial dependence
follow; then the same editing offline, in the report.""",
        EDITOR,
    ),
    "playground": (
        "The Playground view: watch a small network learn",
        """\
The TensorFlow Playground's training view in a notebook: the decision surface with train
and test points, a surface per hidden neuron, links by weight and the loss curves, live
during training; the Playground's knobs as widgets; attributions of a clicked point.""",
        PLAYGROUND,
    ),
    "text": (
        "Text: a classifier explained token by token, across hardware",
        """\
Train a tiny PyTorch sentiment classifier, explain its reviews token by token with
integrated gradients (as Captum's `LayerIntegratedGradients` does), see the tokens
highlighted, check that the explanation survives the simulated GPU and TPU, merge word
pieces back into words, and look at the learnt word embeddings in the Projector.""",
        TEXT,
    ),
    "sound": (
        "Sound: spectrograms explained, Teachable Machine style",
        """\
Make sound clips in class folders, turn them into the spectrograms a Teachable Machine
sound model hears, train a small classifier and see, on the spectrogram, which times and
frequencies made each call.""",
        SOUND,
    ),
    "teachable": (
        "Teachable Machine's loop: class folders to an Edge TPU file",
        """\
Train on images in class folders with Teachable Machine's knobs, see the samples per class,
the accuracy per class and the confusion matrix on held-out samples, preview the
prediction bars live, and export float and int8 `.tflite` files with their labels and the
Edge TPU placement of the int8 file.""",
        TEACHABLE,
    ),
}

#: Extra packages a notebook installs in Colab, after xai-core.
EXTRA_INSTALL = {
    "import_pytorch": " onnx onnxruntime",
    "edge_tpu": " tflite ai-edge-litert",
    "text": " onnx onnxruntime tokenizers",
    "teachable": " tflite ai-edge-litert",
}


def build(name: str) -> nbformat.NotebookNode:
    """The notebook ``name``: header, guarded install, then its cells; no outputs."""
    title, intro, cells = NOTEBOOKS[name]
    nb = new_notebook(
        metadata={
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
            "colab": {"provenance": []},
        }
    )
    install = INSTALL.rstrip() + EXTRA_INSTALL.get(name, "")
    nb.cells = [new_markdown_cell(header(name, title, intro)), new_code_cell(install)]
    for kind, source in cells:
        nb.cells.append(new_markdown_cell(source) if kind == "md" else new_code_cell(source))
    for i, cell in enumerate(nb.cells):  # stable ids, so regenerating gives the same files
        cell["id"] = f"{name[:20]}-{i:02d}"
    return nb


def render(name: str) -> str:
    """The notebook ``name`` as the text stored in ``docs/notebooks/<name>.ipynb``."""
    return nbformat.writes(build(name), version=4) + "\n"


def main() -> int:
    """Write every notebook next to this file."""
    for name in NOTEBOOKS:
        nb = build(name)
        nbformat.validate(nb)
        (HERE / f"{name}.ipynb").write_text(render(name), encoding="utf-8")
        print(f"wrote {name}.ipynb ({len(nb.cells)} cells)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
