"""Colour bars drawn into the picture: enlarged heatmaps and labelled scales that need no style sheet."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import xai_core as xai
from xai_core.report import (
    NEGATIVE,
    POSITIVE,
    colorbar_rgb,
    enlarge,
    heatmap_with_scale,
    scale_bar,
)
from xai_core.report._scalebar import BAR_HEIGHT, LABEL_HEIGHT


def ink_runs(strip: np.ndarray, gap: int = 5) -> list[tuple[int, int]]:
    """(first, last) columns of the dark runs of ``strip``, runs closer than ``gap`` merged."""
    dark = np.flatnonzero((strip.astype(int).sum(axis=2) < 3 * 160).any(axis=0))
    runs: list[list[int]] = []
    for x in dark.tolist():
        if runs and x - runs[-1][1] <= gap:
            runs[-1][1] = x
        else:
            runs.append([x, x])
    return [tuple(r) for r in runs]


@pytest.mark.parametrize("factor", [1, 3, 7], ids=["x1", "x3", "x7"])
def test_enlarge_is_pillows_nearest_neighbour(factor):
    """Every pixel repeated factor x factor times, exactly as Pillow's NEAREST resize."""
    rgb = np.random.default_rng(0).integers(0, 256, size=(5, 4, 3), dtype=np.uint8)
    oracle = Image.fromarray(rgb).resize((4 * factor, 5 * factor), Image.Resampling.NEAREST)
    np.testing.assert_array_equal(enlarge(rgb, factor), np.asarray(oracle))


def test_enlarge_rejects_what_it_cannot_do():
    """A factor below 1 or a bool, and a 1-D array, are refused naming the argument."""
    with pytest.raises(xai.ValidationError, match="factor must be an int of at least 1"):
        enlarge(np.zeros((2, 2)), 0)
    with pytest.raises(xai.ValidationError, match="factor"):
        enlarge(np.zeros((2, 2)), True)
    with pytest.raises(xai.ShapeError, match=r"got \(4,\)"):
        enlarge(np.zeros(4), 2)


@pytest.mark.parametrize(
    ("low", "high", "width"),
    [(-0.0581, 0.0581, 196), (-1.5e-05, 1.5e-05, 140), (-123456789.0, 123456789.0, 32)],
    ids=["mnist", "tiny", "wide-labels"],
)
def test_scale_bar_is_a_band_with_three_separate_labels(low, high, width):
    """The band is the diverging ramp; -vmax, 0, +vmax sit apart at the left, middle and right."""
    bar = scale_bar(low, high, width)
    assert bar.dtype == np.uint8 and bar.shape[0] == BAR_HEIGHT + LABEL_HEIGHT
    w = bar.shape[1]
    assert w >= width
    band = bar[1 : BAR_HEIGHT - 1, 1 : w - 1]
    np.testing.assert_array_equal(band, colorbar_rgb(w - 2, BAR_HEIGHT - 2))
    assert tuple(band[0, 0]) == tuple(NEGATIVE) and tuple(band[0, -1]) == tuple(POSITIVE)
    runs = ink_runs(bar[BAR_HEIGHT:])
    assert len(runs) == 3, runs  # never run together ("-0.058100.0581")
    (a0, a1), (m0, m1), (b0, b1) = runs
    assert a0 <= 2 and b1 >= w - 3  # the ends at the ends
    assert abs((m0 + m1) / 2 - w / 2) <= 3  # 0 in the middle
    assert m0 - a1 > 5 and b0 - m1 > 5


def test_a_zero_scale_reads_zero_not_minus_zero():
    """An all-zero attribution's bar is labelled 0, 0, 0: three marks of one width each."""
    runs = ink_runs(scale_bar(-0.0, 0.0, 140)[BAR_HEIGHT:])
    widths = {b - a for a, b in runs}
    assert len(runs) == 3 and len(widths) == 1


def test_heatmap_with_scale_puts_the_enlarged_map_over_its_bar():
    """The top is the heatmap enlarged by whole pixels; the labelled bar is beneath, on white."""
    rgb = np.random.default_rng(1).integers(0, 256, size=(28, 28, 3), dtype=np.uint8)
    out = heatmap_with_scale(rgb, 7, -0.5, 0.5)
    assert out.shape[1] == 196 and out.shape[0] > 196 + BAR_HEIGHT + LABEL_HEIGHT
    np.testing.assert_array_equal(out[:196], enlarge(rgb, 7))
    np.testing.assert_array_equal(out[-(BAR_HEIGHT + LABEL_HEIGHT) :], scale_bar(-0.5, 0.5, 196))
    assert (out[196 : out.shape[0] - BAR_HEIGHT - LABEL_HEIGHT] == 255).all()
    with pytest.raises(xai.ShapeError, match=r"rgb must have shape \(height, width, 3\)"):
        heatmap_with_scale(rgb[:, :, 0], 7, -0.5, 0.5)
