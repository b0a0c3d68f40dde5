"""t-SNE's iteration snapshots: kept by openTSNE's callbacks, the same run, in the view."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import xai_core as xai

pytest.importorskip("openTSNE")

_DATA = re.compile(
    r'<script type="application/json" class="xai-projector-data">(.*?)</script>', re.S
)


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(0).normal(size=(80, 5))


def test_snapshots_are_the_runs_own_states(X):
    """Snapshot at iteration t is what a run of t iterations ends with; the last is the result;
    keeping snapshots does not change the result."""
    p = xai.project(X, method="tsne", tsne_snapshots=50, max_iter=400, perplexity=10)
    iterations, frames = p.snapshots
    assert iterations.tolist() == [49, 99, 149, 199, 249, 299, 349, 399, 400]
    assert frames.shape == (9, 80, 2)
    np.testing.assert_array_equal(frames[-1], p.coordinates)
    plain = xai.project(X, method="tsne", tsne_backend="opentsne", max_iter=400, perplexity=10)
    np.testing.assert_array_equal(plain.coordinates, p.coordinates)
    short = xai.project(X, method="tsne", tsne_backend="opentsne", max_iter=349, perplexity=10)
    np.testing.assert_allclose(frames[iterations.tolist().index(349)], short.coordinates, atol=1e-9)
    assert p.meta["implementation"] == "opentsne" and xai.project(X).snapshots is None


def test_snapshots_are_checked(X):
    """scikit-learn has no callbacks; 3-D is not openTSNE's; the step is a positive int."""
    with pytest.raises(xai.ValidationError, match="scikit-learn's TSNE has none"):
        xai.project(X, method="tsne", tsne_snapshots=10, tsne_backend="sklearn", perplexity=10)
    with pytest.raises(xai.CapabilityError, match="2-D"):
        xai.project(X, method="tsne", tsne_snapshots=10, n_components=3, perplexity=10)
    with pytest.raises(xai.ValidationError, match="tsne_snapshots"):
        xai.project(X, method="tsne", tsne_snapshots=0, perplexity=10)


def test_the_view_carries_the_frames(X, monkeypatch):
    """Each frame scaled as the view scales the result; beyond the cap, evenly spaced frames."""
    from xai_projector import view

    p = xai.project(X, method="tsne", tsne_snapshots=25, max_iter=300, perplexity=10)
    html = p.to_html()
    d = json.loads(_DATA.search(html).group(1))
    iterations, frames = p.snapshots
    assert d["snapshots"]["iterations"] == iterations.tolist()
    assert d["snapshots"]["x"][-1] == d["x"] and d["snapshots"]["y"][-1] == d["y"]
    x0, y0 = view._scaled(frames[0])[:2]
    assert d["snapshots"]["x"][0] == x0.tolist() and d["snapshots"]["y"][0] == y0.tolist()
    assert 'class="xai-projector-frame" min="0" max="12"' in html
    monkeypatch.setattr(view, "MAX_SNAPSHOT_VALUES", 80 * 4)
    d = json.loads(_DATA.search(p.to_html()).group(1))
    assert d["snapshots"]["iterations"] == [24, 124, 224, 300]  # frames 0, 4, 8 and 12 of 13
    assert 'class="xai-projector-frame"' not in xai.project(X).to_html().split("<script>")[0]


def test_a_bookmark_keeps_the_snapshot_shown(X, tmp_path):
    """frame= picks a snapshot; the page opens on it; TensorBoard's record has its iteration."""
    p = xai.project(X, method="tsne", tsne_snapshots=50, max_iter=300, perplexity=10)
    view = p.show()
    view.set_state(frame=2)
    view.bookmark("early")
    d = json.loads(_DATA.search(view.to_html()).group(1))
    assert d["state"]["frame"] == 2 and d["bookmarks"][0]["frame"] == 2
    files = view.export_tensorboard(tmp_path)
    (record,) = json.loads(files["bookmarks"].read_text())
    assert record["tSNEIteration"] == 149
    with pytest.raises(xai.ValidationError, match="7 t-SNE snapshots"):
        view.set_state(frame=7)
    with pytest.raises(xai.ValidationError, match="0 t-SNE snapshots"):
        xai.project(X).show().set_state(frame=0)
