"""The offline what-if editor's HTML: values in each column's own format, the data's range, the layout, the PD."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

import xai_core as xai
from xai_whatif._data import Table, column_decimals
from xai_whatif.offline import offline_html, pd_curves, pd_grid


@pytest.fixture(scope="module")
def session():
    """Integers, a column in steps of 0.1, a float32 measurement and a z-scored column."""
    rng = np.random.default_rng(0)
    n = 120
    frame = pd.DataFrame(
        {
            "number of previous admissions to this hospital (count)": rng.integers(0, 9, n),
            "temperature": np.round(rng.normal(37.0, 0.6, n), 1).astype(np.float32),
            "dose": np.round(rng.uniform(0, 5, n), 3),
            "score": rng.normal(size=n),
        }
    )
    X = frame.to_numpy(np.float64)
    y = (X[:, 1] + 0.2 * X[:, 0] > 37.5).astype(int)
    net = xai.nn.mlp(4, hidden=(6,), n_outputs=2, activation="tanh", seed=0)
    net.fit((X - X.mean(0)) / X.std(0), y, learning_rate=0.05, epochs=5, progress=False)
    return frame, xai.what_if(net, frame, y, output_names=("no", "yes"))


def test_decimals_follow_the_data():
    """Integers keep no decimals, 0.1 steps one (float32's 0.10000000149 included), others round."""
    X = np.stack(
        [
            np.arange(10.0),
            (np.arange(10) / 10).astype(np.float32),
            np.arange(10) * 0.25,
            np.random.default_rng(0).normal(size=10),
        ],
        axis=1,
    )
    decimals, stepped = column_decimals(X)
    assert decimals[:3].tolist() == [0, 1, 2] and stepped[:3].all()
    assert not stepped[3] and decimals[3] == 3  # a range of a few units to four figures
    t = Table(X)
    assert t.text(1, X[3, 1]) == "0.3" and t.text(0, 7.0) == "7" and t.text(1, -0.01) == "0.0"


class _Inputs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.inputs, self.classes = [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "input" and "data-feature" in a:
            self.inputs.append(a)
        if "class" in a:
            self.classes.append(a["class"])


def test_values_and_ranges_in_the_columns_format(session):
    """Each box shows row 0 as its column does (no 16-digit floats); min, max and step are the data's."""
    frame, w = session
    html = str(offline_html(w))
    p = _Inputs()
    p.feed(html)
    t = w.table
    values = [a["value"] for a in p.inputs]
    assert values[0] == str(int(frame.iloc[0, 0]))
    assert values[1] == f"{frame.iloc[0, 1]:.1f}" and len(values[1].split(".")[1]) == 1
    assert values[2] == f"{frame.iloc[0, 2]:.3f}"
    assert all(len(v.replace("-", "").replace(".", "")) <= 8 for v in values)
    for j, a in enumerate(p.inputs):
        assert float(a["min"]) == pytest.approx(t.minimum[j], abs=10.0 ** -t.decimals[j])
        assert float(a["max"]) == pytest.approx(t.maximum[j], abs=10.0 ** -t.decimals[j])
    assert [a["step"] for a in p.inputs[:3]] == ["1", "0.1", "0.001"]
    assert p.inputs[3]["step"] == "any"  # a continuous column takes any value
    # the long name is printed whole, in a cell that wraps
    assert "number of previous admissions to this hospital (count)</label>" in re.sub(
        "[\u2068\u2069]", "", html
    )


def test_editor_beside_its_results(session):
    """One flex row that wraps: the editor's column first, then the outputs and the PD chart."""
    _, w = session
    html = str(offline_html(w))
    cols = html.index("xai-whatif-offline-cols")
    editor, results = (
        html.index("xai-whatif-offline-editor"),
        html.index("xai-whatif-offline-results"),
    )
    chart = html.index("xai-whatif-offline-pd-chart")
    assert cols < editor < html.index("data-feature") < results < html.index("data-output") < chart
    assert re.search(r'xai-whatif-offline-cols" style="display:flex;flex-wrap:wrap', html)


def test_static_pd_is_the_model_over_the_grid(session):
    """The chart Python draws (JavaScript off) is the mean over the page's rows and row 0's own curve."""
    _, w = session
    t = w.table
    rows = t.X[: min(50, t.n_samples)]
    grid = pd_grid(t, 0)
    assert grid.tolist() == list(range(int(t.minimum[0]), int(t.maximum[0]) + 1))
    curves = pd_curves(w, rows, t.X[0], 0, 1)
    oracle_mean, oracle_row = [], []
    for g in grid:
        z = rows.copy()
        z[:, 0] = g
        oracle_mean.append(w.runner.model.predict(z.astype(np.float32))[:, 1].mean())
        r = t.X[0].copy()
        r[0] = g
        oracle_row.append(w.runner.model.predict(r[None].astype(np.float32))[0, 1])
    np.testing.assert_allclose(curves["mean"], oracle_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(curves["row"], oracle_row, rtol=1e-5, atol=1e-6)
    assert len(pd_grid(t, 3)) == 21 and pd_grid(t, 3)[0] == t.minimum[3]
