"""Reports in headless Chromium: no console errors, dialogs or network; every section; a real picture."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import xai_core as xai

pytestmark = pytest.mark.browser

HOSTILE = (
    "</script><img src=x onerror=alert(1)>",
    "<script>alert('x')</script>",
    '" onmouseover="alert(1)',
    "' ; DROP TABLE x; --",
    "{{ 7*7 }} ${7*7}",
    "ünïcødé ✓ 数字 \u202e",
)


def _hostile_report(path: Path) -> Path:
    """A report whose feature, class, output and section names, titles and meta are hostile."""
    rng = np.random.default_rng(0)
    names = list(HOSTILE) + [f"{h} #2" for h in HOSTILE]
    img = xai.Explanation(
        values=rng.normal(size=(2, 28, 28)),
        base_values=[0.1, -0.2],
        target=[0, 1],
        data=rng.random((2, 28, 28)),
        output_names=HOSTILE[:2],
        method=HOSTILE[0],
        backend="cpu",
        meta={
            "seed": 1,
            "options": {HOSTILE[1]: HOSTILE[2]},
            "seconds": 0.5,
            HOSTILE[3]: HOSTILE[4],
        },
    )
    tab = xai.Explanation(
        values=rng.normal(size=(3, len(names))),
        base_values=np.zeros(3),
        target=[0, 1, 0],
        data=rng.normal(size=(3, len(names))),
        feature_names=names,
        output_names=HOSTILE[4:6],
        method="shap",
        backend=HOSTILE[2],
    )
    import types

    ds = types.SimpleNamespace(
        X=rng.random((5, 3)),
        y=np.array([0, 1, 0, 1, 1]),
        class_names=HOSTILE[:2],
        feature_names=HOSTILE[3:6],
        image_shape=None,
        name=HOSTILE[0],
        description=HOSTILE[1],
    )
    report = xai.Report(HOSTILE[0], seed=0)
    report.add(img, title=HOSTILE[1]).add(tab).add(ds)
    report.add(pd.DataFrame({h: [1.0, 2.0] for h in HOSTILE}))
    report.add({h: float(i) for i, h in enumerate(HOSTILE)})
    return report.save(path)


def _unfilter(raw: bytes, height: int, stride: int, bpp: int) -> np.ndarray:
    """Undo the PNG row filters (None, Sub, Up, Average, Paeth)."""
    rows = np.frombuffer(raw, np.uint8).reshape(height, stride + 1)
    out = np.zeros((height, stride), np.int64)
    prev = np.zeros(stride, np.int64)
    for y in range(height):
        ftype, line = rows[y, 0], rows[y, 1:].astype(np.int64)
        if ftype == 0:
            cur = line
        elif ftype == 2:
            cur = (line + prev) % 256
        elif ftype == 1:  # Sub: a running sum per channel
            cur = (np.cumsum(line.reshape(-1, bpp), axis=0) % 256).reshape(-1)
        else:
            cur = line.copy()
            for x in range(stride):
                a = cur[x - bpp] if x >= bpp else 0
                b = prev[x]
                if ftype == 3:
                    cur[x] = (cur[x] + (a + b) // 2) % 256
                else:
                    c = prev[x - bpp] if x >= bpp else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                    cur[x] = (cur[x] + pred) % 256
        out[y] = cur
        prev = cur
    return out.astype(np.uint8)


def _decode_screenshot(png: bytes) -> np.ndarray:
    """A Chromium screenshot (8-bit RGB or RGBA PNG) as (height, width, channels) uint8."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, ihdr = 8, b"", b""
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            ihdr = data
        elif kind == b"IDAT":
            idat += data
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", ihdr)
    assert depth == 8 and colour in (2, 6) and interlace == 0
    bpp = 3 if colour == 2 else 4
    pixels = _unfilter(zlib.decompress(idat), height, width * bpp, bpp)
    return pixels.reshape(height, width, bpp)


SECTIONS = ["explanation", "explanation", "dataset", "table", "counters", "provenance"]


def test_hostile_report_opens_cleanly(open_page, tmp_path):
    """No console error, dialog or request; every section shown; the script sorts; the picture is not blank."""
    path = _hostile_report(tmp_path / "hostile.html")
    _, page, events = open_page(path.resolve().as_uri())
    assert events == {"console": [], "dialogs": [], "network": [], "page_errors": []}
    kinds = page.eval_on_selector_all(
        "section[data-xai-section]", "els => els.map(e => e.dataset.xaiSection)"
    )
    assert kinds == SECTIONS
    assert page.title() == HOSTILE[0]
    assert page.locator("img.xai-heatmap").count() == 2
    assert page.locator("img.xai-colorbar").count() == 0  # drawn into each heatmap's picture
    assert page.locator("img.xai-bars").count() == 5  # one per row, drawn as SVG images
    assert page.eval_on_selector_all("img", "els => els.every(i => i.naturalWidth > 0)")
    assert page.locator(".xai-controls").first.is_visible()  # the script ran
    # sort the tabular explanation's rows by base + sum, ascending then descending
    table = page.locator("table.xai-rows").nth(1)
    table.locator("thead th").nth(3).locator("button").click()
    cells = table.locator("tbody tr td:nth-child(4)").evaluate_all(
        "tds => tds.map(t => parseFloat(t.dataset.sort))"
    )
    assert cells == sorted(cells)
    table.locator("thead th").nth(3).locator("button").click()
    cells = table.locator("tbody tr td:nth-child(4)").evaluate_all(
        "tds => tds.map(t => parseFloat(t.dataset.sort))"
    )
    assert cells == sorted(cells, reverse=True)
    shot = _decode_screenshot(page.screenshot())
    grey = shot[:, :, :3].astype(np.float64).mean(axis=2)
    assert (
        shot.shape[:2] == (page.viewport_size["height"], page.viewport_size["width"])
        and grey.std() > 10
    )
    assert (np.abs(shot[:, :, :3].astype(int) - [178, 24, 43]).sum(axis=2) < 30).any() or (
        np.abs(shot[:, :, :3].astype(int) - [33, 102, 172]).sum(axis=2) < 30
    ).any()  # the diverging colours made it to the screen
    page.emulate_media(media="print")
    assert not page.locator(".xai-controls").first.is_visible()
    assert events == {"console": [], "dialogs": [], "network": [], "page_errors": []}


def test_report_is_readable_without_javascript(open_page, tmp_path):
    """With JavaScript off every section, image and name is still there."""
    path = _hostile_report(tmp_path / "nojs.html")
    _, page, events = open_page(path.resolve().as_uri(), javascript=False)
    assert events == {"console": [], "dialogs": [], "network": [], "page_errors": []}
    kinds = page.eval_on_selector_all(
        "section[data-xai-section]", "els => els.map(e => e.dataset.xaiSection)"
    )
    assert kinds == SECTIONS
    assert page.eval_on_selector_all("img", "els => els.every(i => i.naturalWidth > 0)")
    text = page.inner_text("body")
    assert HOSTILE[0] in text and "DROP TABLE" in text
    assert not page.locator(".xai-controls").first.is_visible()  # enhancement only
