"""Explanation as shap sees it, as a DataFrame, indexed by feature, as text, and as matplotlib figures."""

from __future__ import annotations

import io

import matplotlib
import numpy as np
import pytest

import xai_core as xai
from xai_core.errors import UnknownNameError, ValidationError

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

shap = pytest.importorskip("shap")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def cancer():
    """Kernel SHAP of a logistic regression on 12 breast-cancer rows, by feature name."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    d = load_breast_cancer()
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)).fit(d.data, d.target)
    names = list(d.feature_names)
    return xai.explain(
        model, d.data[:12], method="shap", background=d.data[:30], feature_names=names, seed=0
    )


def _image_explanation(n=3):
    rng = np.random.default_rng(0)
    return xai.Explanation(
        values=rng.normal(size=(n, 8, 8)) * np.arange(1, n + 1)[:, None, None],
        base_values=np.zeros(n),
        target=np.arange(n),
        data=rng.random((n, 8, 8)),
        method="ig",
        backend="cpu",
    )


def test_to_shap_carries_everything_and_every_plot_draws(cancer):
    """A real shap.Explanation: values, base values, data, names; shap's plots take it."""
    s = cancer.to_shap()
    assert isinstance(s, shap.Explanation)
    np.testing.assert_array_equal(s.values, cancer.values)
    np.testing.assert_array_equal(s.base_values, cancer.base_values)
    np.testing.assert_array_equal(s.data, cancer.data)
    assert list(s.feature_names) == list(cancer.feature_names)
    shap.plots.bar(s, show=False)
    shap.plots.beeswarm(s, show=False)
    shap.plots.heatmap(s, show=False)
    shap.plots.waterfall(s[3], show=False)
    shap.plots.scatter(s[:, "mean radius"], show=False)
    assert float(s[3].base_values) == pytest.approx(cancer.base_values[3])


_KEYS = [
    0,
    -1,
    np.int64(3),
    slice(2, 5),
    [0],
    [4, 1],
    np.arange(12) % 3 == 0,
    (slice(None), "mean radius"),
    (slice(None), 1),
    (0, "worst area"),
    (slice(2, 5), ["worst area", "mean radius"]),
    (slice(None), slice(0, 3)),
    (Ellipsis, "mean texture"),
]


def _shap_of(e):
    """shap's own Explanation of the same arrays (the oracle: shap's indexing)."""
    return shap.Explanation(
        values=np.asarray(e.values),
        base_values=np.asarray(e.base_values),
        data=np.asarray(e.data),
        feature_names=list(e.feature_names),
    )


@pytest.mark.parametrize("key", _KEYS, ids=repr)
def test_indexing_matches_shap(cancer, key):
    """e[key] has the shapes, values and names shap's Explanation[key] has."""
    ours, theirs = cancer[key], _shap_of(cancer)[key]
    for attr in ("values", "base_values", "data"):
        got, want = getattr(ours, attr), getattr(theirs, attr)
        assert np.shape(got) == np.shape(want), attr
        np.testing.assert_array_equal(got, want)
    want_names = theirs.feature_names
    assert ours.feature_names == (want_names if isinstance(want_names, str) else tuple(want_names))


def test_chained_indexing_and_batches_back(cancer):
    """e[0][name] is e[0, name], as in shap; as_batch() and e[[0]] give a one-row batch."""
    theirs = _shap_of(cancer)
    assert cancer[0]["mean radius"].values == theirs[0]["mean radius"].values
    assert cancer[0].values.shape == (30,) and cancer[0].shape == (30,)
    assert float(cancer[0].base_values) == pytest.approx(cancer.base_values[0])
    for batch in (cancer[0].as_batch(), cancer[[0]]):
        assert batch.is_batch and batch.values.shape == (1, 30) and len(batch) == 1
        np.testing.assert_array_equal(batch.values[0], cancer.values[0])
        assert batch.meta["additivity_error"].shape == (1,)
    column = cancer[:, "mean radius"].as_batch()
    assert column.values.shape == (12, 1) and column.feature_names == ("mean radius",)
    assert cancer[2:5][1].target == cancer.target[3]
    # every view of a row reads it as its one-row batch
    assert cancer[0].to_frame().shape == (1, 30)
    assert cancer[0].top_features(k=3) == cancer.top_features(0, k=3)
    assert "axes=('features',)" in repr(cancer[0])
    html = cancer[0]._repr_html_()
    assert '-row0"' in html and '-row1"' not in html
    np.testing.assert_array_equal(cancer[0].to_shap().values, theirs[0].values)
    round_trip = xai.Explanation.from_dict(cancer[3, "mean radius"].to_dict())
    assert round_trip.axes == () and round_trip.feature_names == "mean radius"
    shap.plots.waterfall(cancer[3].to_shap(), show=False)


def test_indexing_refusals(cancer):
    """Unknown names list close ones; out-of-range rows and features and extra indices are refused."""
    with pytest.raises(UnknownNameError, match=r"'mean radious'.*mean radius"):
        cancer[:, "mean radious"]
    with pytest.raises(ValidationError, match="out of range"):
        cancer[:, 30]
    with pytest.raises(ValidationError, match="out of range"):
        cancer[12]
    with pytest.raises(ValidationError, match="e\\[rows, features\\]"):
        cancer[0, 1, 2]
    with pytest.raises(ValidationError, match="e\\[rows, features\\]"):
        cancer[0][1, 2]
    with pytest.raises(ValidationError, match="a feature"):
        cancer["mean radius"]
    for bad in (True, None):
        with pytest.raises(ValidationError, match="rows are chosen"):
            cancer[bad]


def test_image_pixels_are_named_by_position():
    """Without feature names, image pixels are pixel_<row>_<col>, in indexing, frames and shap."""
    e = _image_explanation()
    assert e[:, "pixel_2_3"].values.tolist() == e.values[:, 2, 3].tolist()
    assert e[1].values.shape == (8, 8)  # a row keeps its image shape, as in shap
    frame = e.to_frame()
    assert frame.shape == (3, 64) and frame.columns[11] == "pixel_1_3"
    np.testing.assert_array_equal(frame["pixel_1_3"], e.values[:, 1, 3])
    s = e.to_shap()  # channels-last images with one output axis, as shap.plots.image wants
    assert s.values.shape == (3, 8, 8, 1, 1) and s.data.shape == (3, 8, 8, 1)
    assert list(s.output_names) == ["0", "1", "2"]


def test_to_frame_and_text_repr(cancer):
    """One column per feature; the text repr shows the numbers."""
    frame = cancer.to_frame()
    assert frame.shape == (12, 30) and frame.index.name == "row"
    np.testing.assert_array_equal(frame.to_numpy(), cancer.values)
    assert frame.attrs["base_values"] == cancer.base_values.tolist()
    text = repr(cancer)
    assert "12 row(s) × 30 features" in text
    (name, value), *_ = cancer.top_features(0, 3)
    assert f"{name} {value:.3g}" in text.splitlines()[1]
    assert f"base {cancer.base_values[0]:.4g}" in text


def _bar_widths(ax):
    return sorted((p.get_width() for p in ax.patches), key=abs, reverse=True)


def test_bar_matches_shap_and_waterfall_ends_at_the_output(cancer):
    """Mean |attribution| bars equal the ones shap draws; the waterfall ends at base + sum."""
    ours = _bar_widths(cancer.plot.bar(max_display=5))
    plt.figure()
    shap.plots.bar(cancer.to_shap(), max_display=6, show=False)  # shap: 5 + "sum of others"
    theirs = _bar_widths(plt.gca())
    np.testing.assert_allclose(sorted(ours), sorted(theirs), rtol=1e-9)
    expected = np.sort(np.abs(cancer.values).mean(axis=0))[::-1]
    drawn = [p.get_width() for p in plt.figure(1).axes[0].patches]  # in order: top 5, then the rest
    np.testing.assert_allclose(drawn[:5], expected[:5])
    assert drawn[5] == pytest.approx(expected[5:].sum())
    ax = cancer.plot.waterfall(3, max_display=4)
    lines = [ln.get_xdata()[0] for ln in ax.lines]
    assert lines[0] == pytest.approx(cancer.base_values[3])
    assert lines[1] == pytest.approx(cancer.base_values[3] + cancer.values[3].sum())
    assert len(ax.patches) == 5  # 4 features and the rest
    ax = cancer.plot.beeswarm(max_display=6)
    assert len(ax.collections) == 6 and all(len(c.get_offsets()) == 12 for c in ax.collections)


@pytest.mark.parametrize("mode", ["signed", "positive", "negative", "absolute"])
def test_image_overlay_scales(mode):
    """One symmetric scale per row or one shared; the colour bar shows it; modes keep one sign."""
    e = _image_explanation()
    v = e.values
    fig = e.plot.image([0, 1, 2], mode=mode, scale="row")
    maps = [im for ax in fig.axes for im in ax.images if im.get_cmap().name == f"xai-{mode}"]
    assert len(maps) == 3
    part = {
        "signed": v,
        "positive": np.clip(v, 0, None),
        "negative": np.clip(-v, 0, None),
        "absolute": np.abs(v),
    }[mode]
    for k, im in enumerate(maps):
        low, high = im.get_clim()
        assert high == pytest.approx(np.abs(part[k]).max())
        assert low == (pytest.approx(-high) if mode == "signed" else 0.0)
    shared = e.plot.image([0, 1, 2], mode=mode, scale="shared")
    lims = {
        im.get_clim()
        for ax in shared.axes
        for im in ax.images
        if im.get_cmap().name == f"xai-{mode}"
    }
    assert len(lims) == 1 and max(lims.pop()) == pytest.approx(np.abs(part).max())
    n_bars = sum(1 for ax in shared.axes if ax.get_label() == "<colorbar>")
    assert n_bars == 1
    with pytest.raises(ValidationError, match="mode"):
        e.plot.image(0, mode="both")


def test_mimebundle_has_a_picture_for_viewers_without_html():
    """text/plain with numbers, text/html, and a PNG that Pillow decodes."""
    from PIL import Image

    bundle = _image_explanation()._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html", "image/png"}
    with Image.open(io.BytesIO(bundle["image/png"])) as im:
        assert im.format == "PNG" and im.width >= 300
    assert not plt.get_fignums()  # drawn off pyplot: a notebook shows it once


def test_shap_image_plot_draws_the_readme_cnn():
    """shap.plots.image takes to_shap() of the README's MNIST CNN: images by image_shape, named outputs."""
    from xai_datasets import load_mnist

    test = load_mnist("test")
    net = xai.nn.Sequential(
        [xai.nn.Reshape((1, 28, 28)), xai.nn.Conv2D(2, 3, padding=1), xai.nn.ReLU(),
         xai.nn.MaxPool2D(2), xai.nn.Flatten(), xai.nn.Dense(10), xai.nn.Softmax()],
        input_shape=(784,),
        output_names=[f"digit {c}" for c in test.class_names],
        seed=0,
    )  # fmt: skip
    e = xai.explain(net, test.X[:3], method="ig", steps=8)
    s = e.to_shap()
    assert s.values.shape == (3, 28, 28, 1, 1) and s.data.shape == (3, 28, 28, 1)
    np.testing.assert_array_equal(s.values[1, :, :, 0, 0], e.values[1].reshape(28, 28))
    names = [f"digit {t}" for t in e.target]
    assert list(s.output_names) == names
    shap.plots.image(s, show=False)
    titles = [ax.get_title() for ax in plt.gcf().axes if ax.get_title()]
    assert titles == names  # one heading per row: the explained output's name
    plt.close("all")
    shap.plots.image(e[2].to_shap(), show=False)
    assert [ax.get_title() for ax in plt.gcf().axes if ax.get_title()] == names[2:]
