"""Each interactive view's offline report at 1280 x 800: a control and what it changes share one screen.

For every pair the test scrolls the higher of the two to the top of the viewport and then
measures both: from the higher one's top to the lower one's bottom must be at most 800 px and
both must lie within the 1280 px width, so no scrolling is needed between the control and the
element it changes.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import xai_core as xai
from xai_datasets import load_breast_cancer

pytestmark = pytest.mark.browser

W, H = 1280, 800
NO_EVENTS = {"console": [], "dialogs": [], "network": [], "page_errors": []}

#: The page boxes of two elements after scrolling the higher one's top to the viewport's top.
_MEASURE = """([a, b]) => {
  const page = e => { const r = e.getBoundingClientRect(); return r.top + window.scrollY; };
  (page(a) <= page(b) ? a : b).scrollIntoView({block: 'start', inline: 'nearest'});
  return [a, b].map(e => { const r = e.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; });
}"""


def _open(open_page, path, javascript=True):
    _, page, events = open_page(path.resolve().as_uri(), javascript=javascript)
    page.set_viewport_size({"width": W, "height": H})
    return page, events


def _assert_one_screen(page, control: str, target: str) -> float:
    """Both elements in the first viewport once the higher is scrolled in; returns their span (px)."""
    a, b = page.locator(control).first, page.locator(target).first
    assert a.is_visible() and b.is_visible(), (control, target)
    boxes = page.evaluate(_MEASURE, [a.element_handle(), b.element_handle()])
    span = max(r["bottom"] for r in boxes) - min(r["top"] for r in boxes)
    assert span <= H, f"{control} to {target}: {span:.0f} px tall, more than {H}"
    for r, name in zip(boxes, (control, target)):
        assert -1 <= r["top"] and r["bottom"] <= H + 1, (name, r)  # 1 px: scrolling rounds
        assert 0 <= r["left"] and r["right"] <= W, (name, r)
    return span


@pytest.fixture(scope="module")
def cancer():
    ds = load_breast_cancer()
    X = ((ds.X - ds.X.mean(0)) / ds.X.std(0)).astype(np.float32)
    return ds, X


@pytest.mark.parametrize("outputs", [2, 10])
def test_whatif_editor_inputs_and_their_outputs(open_page, cancer, tmp_path, outputs):
    """Every feature box of the offline editor shares a screen with the outputs and the PD chart,
    for two outputs and thirty features as for ten outputs and long feature names."""
    ds, X = cancer
    if outputs == 2:
        y, names = ds.y, list(ds.feature_names)
    else:
        X = X[:, :12]
        y = np.random.default_rng(0).integers(0, outputs, len(X))
        names = [f"a rather long feature name, number {j} (in its units)" for j in range(12)]
    net = xai.nn.mlp(X.shape[1], hidden=(8, 4), n_outputs=outputs, activation="relu")
    net.fit(X, y, learning_rate=0.05, epochs=2, progress=False)
    w = xai.what_if(net, X, y, feature_names=names)
    path = xai.Report("what-if", seed=0).add(w).save(tmp_path / "whatif.html")
    page, events = _open(open_page, path)
    root = ".xai-whatif-offline"
    n = page.locator(f"{root} input[data-feature]").count()
    assert n == X.shape[1]
    outputs_table = f"{root} table:has([data-output])"
    for j in range(n):
        box = f"{root} input[data-feature='{j}']"
        page.locator(box).scroll_into_view_if_needed()
        for target in (outputs_table, f"{root} .xai-whatif-offline-pd-chart"):
            _assert_one_screen(page, box, target)
    last = page.locator(f"{root} input[data-feature='{n - 1}']")
    last.fill("1000")  # out of range: the warning shows above the outputs
    last.dispatch_event("input")
    assert page.locator(f"{root} .xai-whatif-offline-warning").is_visible()
    _assert_one_screen(
        page, f"{root} input[data-feature='0']", f"{root} .xai-whatif-offline-pd-chart"
    )
    _assert_one_screen(page, f"{root} select.xai-whatif-offline-row", outputs_table)
    _assert_one_screen(
        page, f"{root} select.xai-whatif-offline-pd-feature", f"{root} .xai-whatif-offline-pd-chart"
    )
    assert events == NO_EVENTS


def test_whatif_threshold_slider_and_its_counts(open_page, cancer, tmp_path):
    """The slices section's threshold slider and the per-slice count table share a screen."""
    from sklearn.linear_model import LogisticRegression

    ds, X = cancer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = LogisticRegression(max_iter=300).fit(X, ds.y)
    w = xai.what_if(est, X, ds.y, feature_names=list(ds.feature_names), progress=False)
    path = (
        xai.Report("slices", seed=0).add(w.slices("mean radius", bins=4)).save(tmp_path / "s.html")
    )
    page, events = _open(open_page, path)
    root = ".xai-whatif-threshold"
    _assert_one_screen(page, f"{root} input.xai-whatif-threshold-input", f"{root} table")
    _assert_one_screen(
        page, f"{root} input.xai-whatif-threshold-input", f"{root} tr[data-slice]:last-child"
    )
    assert events == NO_EVENTS


def _click_point(page, i: int) -> None:
    """Click point ``i`` on the canvas, at the position the view's data gives it."""
    canvas = page.locator("canvas.xai-projector-canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    data = page.evaluate(
        "JSON.parse(document.querySelector('script.xai-projector-data').textContent)"
    )
    x = 12 + data["x"][i] / 10000 * 616
    y = 12 + (1 - data["y"][i] / 10000) * 456
    page.mouse.click(box["x"] + x * box["width"] / 640, box["y"] + y * box["height"] / 480)


def test_projector_search_click_and_the_scatter(open_page, tmp_path):
    """Search box and "Search by" share a screen with the canvas; so does what a click on it lists."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(10), 30)
    X = rng.normal(scale=5.0, size=(10, 8))[y] + rng.normal(size=(300, 8))
    meta = {f"column {c}": [f"value {i}" for i in range(300)] for c in range(4)}
    p = xai.project(
        X, labels=[f"label {k}" for k in y], metadata=meta, images=rng.random((300, 8, 8))
    )
    path = xai.Report("projector", seed=0).add(p).save(tmp_path / "p.html")
    page, events = _open(open_page, path)
    canvas = "canvas.xai-projector-canvas"
    for control in ("input.xai-projector-search", "select.xai-projector-search-by",
                    "select.xai-projector-color"):  # fmt: skip
        _assert_one_screen(page, control, canvas)
    _click_point(page, 5)
    assert page.locator(".xai-projector-neighbors button").count() == 8
    _assert_one_screen(page, canvas, ".xai-projector-detail")
    page.fill("input.xai-projector-search", "label 1")  # a long list of matches, then a click
    _assert_one_screen(page, "input.xai-projector-search", ".xai-projector-results")
    _click_point(page, 40)
    _assert_one_screen(page, canvas, ".xai-projector-detail")
    side, plot = (
        page.locator(".xai-projector-ui").bounding_box(),
        page.locator(canvas).bounding_box(),
    )
    assert side["x"] >= plot["x"] + plot["width"]  # beside the plot at 1280 px ...
    page.set_viewport_size({"width": 390, "height": 800})
    side, plot = (
        page.locator(".xai-projector-ui").bounding_box(),
        page.locator(canvas).bounding_box(),
    )
    assert side["y"] >= plot["y"] + plot["height"]  # ... under it on a phone, never sideways
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert events == NO_EVENTS


def test_projector_tsne_slider_and_the_scatter(open_page, tmp_path):
    """t-SNE's iteration slider and play button share a screen with the scatter canvas."""
    pytest.importorskip("openTSNE")
    X = np.random.default_rng(1).normal(size=(60, 5))
    p = xai.project(X, method="tsne", tsne_snapshots=5, max_iter=250, perplexity=10)
    path = xai.Report("t-SNE", seed=0).add(p).save(tmp_path / "t.html")
    page, events = _open(open_page, path)
    for control in ("input.xai-projector-frame", "button.xai-projector-play"):
        _assert_one_screen(page, control, "canvas.xai-projector-canvas")
    assert events == NO_EVENTS


def test_playground_surface_and_loss_curve(open_page, tmp_path):
    """The static Playground section: the decision surface and the loss curve fit in one screen."""
    from xai_datasets import playground

    train, test = playground("xor", 200, seed=0), playground("xor", 100, seed=1)
    net = xai.nn.mlp(2, hidden=(4, 2), n_outputs=2, dtype="float64")
    view = xai.playground_view(net, train, test, resolution=17)
    net.fit(train.X, train.y, learning_rate=0.1, epochs=5, progress=False, callbacks=view)
    path = xai.Report("playground", seed=0).add(view).save(tmp_path / "pg.html")
    page, events = _open(open_page, path, javascript=False)
    root = ".xai-playground"
    surface = f"{root} svg[aria-label^='decision surface']"
    curve = f"{root} svg[aria-label^='train and test loss']"
    _assert_one_screen(page, surface, curve)
    _assert_one_screen(page, f"{root} svg[aria-label^='network']", surface)
    assert events == NO_EVENTS


@pytest.mark.parametrize("k", [3, 10])
def test_teachable_confusion_matrix_and_bars(open_page, tmp_path, k):
    """Teachable Machine: the confusion matrix and the first held-out bars fit in one screen; with
    three classes every sample's bars do."""
    rng = np.random.default_rng(7)
    X = np.concatenate([rng.normal(c, 1, (20, 6)) for c in range(k)])
    names = tuple(f"class {c}" for c in range(k))
    trainer = xai.teachable_trainer((X, np.repeat(np.arange(k), 20), names), kind="pose")
    trainer.train(epochs=3, seed=0)
    path = xai.Report("teachable", seed=0).add(trainer).save(tmp_path / "tm.html")
    page, events = _open(open_page, path, javascript=False)
    matrix = ".xai-teachable table[aria-label^='confusion matrix']"
    bars = ".xai-teachable .xai-teachable-bars"
    assert page.locator(bars).count() == k
    _assert_one_screen(page, matrix, bars)
    if k == 3:
        _assert_one_screen(page, matrix, f"{bars} >> nth=-1")
    assert events == NO_EVENTS
