"""The verdict on the first screen: a demo-style report at 1280x800 shows its verdict sentences unscrolled."""

from __future__ import annotations

import numpy as np
import pytest

import xai_core as xai

pytestmark = pytest.mark.browser


def _first_screen(browser, path, selector):
    """The texts of the visible ``selector`` elements lying wholly within the first 1280x800 screen."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.goto(path.as_uri(), wait_until="load")
        shown = []
        for element in page.locator(selector).all():
            box = element.bounding_box()
            if element.is_visible() and box and box["y"] >= 0 and box["y"] + box["height"] <= 800:
                shown.append(element.inner_text())
        return shown
    finally:
        context.close()


def test_the_verdict_is_on_the_first_screen(browser, tmp_path):
    """A report of a dataset, an explanation and comparisons shows every verdict without scrolling."""
    from xai_datasets import load_mnist

    train = load_mnist("train").take(np.arange(300))
    net = xai.nn.mlp(784, hidden=(16,), n_outputs=10, activation="relu", seed=0)
    net.fit(train.X, train.y, epochs=1, progress=False)
    X = train.X[:2]
    backends = xai.compare_backends(net, X, method="saliency", backends=("cpu", "gpu", "edgetpu"))
    methods = xai.compare_methods(net, X, methods=("saliency", "gradient_x_input"))
    report = xai.Report("Demo-style report", seed=0)
    report.add(train.take(np.arange(16)), "The training sample")
    report.add(methods.explanations["saliency"], "Saliency on cpu")
    report.add(backends, "Saliency across backends").add(methods, "Methods on the same images")
    path = report.save(tmp_path / "report.html")
    shown = _first_screen(browser, path, ".xai-verdicts .xai-verdict-sentence")
    assert shown == [backends.verdict.sentence, methods.verdict.sentence]


@pytest.mark.slow
def test_the_demo_report_opens_with_its_verdicts(browser, demo_report):
    """The report of ``xai demo --quick`` shows the verdict of its first backend comparison unscrolled."""
    shown = _first_screen(browser, demo_report, ".xai-verdicts .xai-verdict-sentence")
    assert shown and shown[0].startswith("ig: ")
