"""The Teachable Machine section in Chromium: thumbnails decode, bars are drawn at their probabilities."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import xai_core as xai

pytestmark = pytest.mark.browser


def test_offline_section_draws_bars_and_thumbnails(open_page, tmp_path):
    """Without JavaScript, every thumbnail decodes and each bar's width is 180 px times its probability."""
    rng = np.random.default_rng(0)
    for name, colour in {"amber": (230, 160, 20), "navy": (20, 30, 120)}.items():
        (tmp_path / "photos" / name).mkdir(parents=True)
        for i in range(7):
            pixels = np.clip(np.array(colour) + rng.normal(0, 30, (16, 16, 3)), 0, 255)
            Image.fromarray(pixels.astype(np.uint8)).save(tmp_path / "photos" / name / f"{i}.png")
    trainer = xai.teachable_trainer(tmp_path / "photos", image_size=16).train(epochs=10, seed=0)
    trainer.export(tmp_path / "export")
    path = tmp_path / "teachable.html"
    xai.Report("teachable").add(trainer).save(path)
    _, page, events = open_page(path.resolve().as_uri(), javascript=False)
    assert events == {"console": [], "dialogs": [], "network": [], "page_errors": []}
    section = page.locator(".xai-teachable")
    assert section.is_visible()
    thumbs = section.locator("img")
    assert thumbs.count() == 2
    assert page.eval_on_selector_all(
        ".xai-teachable img", "els => els.every(i => i.naturalWidth == 16)"
    )
    tables = section.locator(".xai-teachable-bars")
    assert tables.count() == 2
    for k in range(len(trainer.class_names)):
        first = int(np.flatnonzero(trainer.samples.y[trainer.test_rows] == k)[0])
        probs = trainer.predict_bars(first).to_numpy()
        fills = tables.nth(k).locator("td > div > div")
        widths = [fills.nth(j).bounding_box()["width"] for j in range(fills.count())]
        np.testing.assert_allclose(widths, 180 * probs, atol=0.6)
    text = section.inner_text()
    assert "Confusion matrix" in text and "Edge TPU placement of model_int8.tflite" in text
