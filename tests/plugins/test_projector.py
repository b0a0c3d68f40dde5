"""The projector plugin: projections against closed forms and scikit-learn, neighbours against
brute force, search, TensorBoard export round trips, MNIST embeddings, escaping, validation."""

from __future__ import annotations

import csv
import json
import re
import sys
import warnings
from html import unescape

import numpy as np
import pytest
from scipy.spatial.distance import cdist

import xai_core as xai
from xai_projector import Neighbors, Projection, Selection, exact_neighbors, load_tensorboard

HOSTILE = (
    "</script><img src=x onerror=alert(1)>",
    "<script>alert('x')</script>",
    '" onmouseover="alert(1)',
    "{{ 7*7 }} ${7*7}",
    "ünïcødé ✓ 数字 \u202e\u2028",
)


@pytest.fixture(scope="module")
def blobs():
    """Three well-separated Gaussian clusters in 12-D with string labels and metadata."""
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=8.0, size=(3, 12))
    y = np.repeat(np.arange(3), 40)
    X = centres[y] + rng.normal(size=(120, 12))
    names = np.array(["cat", "dog", "Bird"])[y]
    meta = {"id": [f"item-{i:03d}" for i in range(120)], "colour": ["red", "blue"] * 60}
    return X, y, names, meta


def _brute(X, metric):
    D = cdist(X, X, "cosine" if metric == "cosine" else "euclidean")
    np.fill_diagonal(D, np.inf)
    order = np.argsort(D, axis=1, kind="stable")
    return order, np.take_along_axis(D, order, axis=1)


# -- projections -------------------------------------------------------------------------------
def test_tool_is_registered():
    """xai.project is the plugin's function and the Projection has a report section."""
    assert xai.tool("project").function.__module__ == "xai_projector.projection"
    p = xai.project(np.random.default_rng(1).normal(size=(10, 4)))
    assert xai.report.find_section(p).name == "projection"


@pytest.mark.parametrize("n_components", [2, 3], ids=["2d", "3d"])
def test_pca_matches_svd_and_sklearn(blobs, n_components):
    """PCA coordinates equal the SVD's U*S (up to sign) and scikit-learn's; variance ratios too."""
    from sklearn.decomposition import PCA

    X = blobs[0]
    p = xai.project(X, method="pca", n_components=n_components)
    Xc = X - X.mean(axis=0)
    U, S, _ = np.linalg.svd(Xc, full_matrices=False)
    expected = U[:, :n_components] * S[:n_components]
    signs = np.sign(np.sum(expected * p.coordinates, axis=0))
    np.testing.assert_allclose(p.coordinates, expected * signs, atol=1e-9)
    np.testing.assert_allclose(
        p.explained_variance_ratio, (S**2 / np.sum(S**2))[:n_components], rtol=1e-10
    )
    ref = PCA(n_components=n_components).fit(X)
    np.testing.assert_allclose(p.coordinates, ref.transform(X), atol=1e-9)


@pytest.mark.parametrize("offset", [0.0, 1e6], ids=["at-zero", "far-from-zero"])
def test_pca_tells_constant_rows_from_tiny_spread(offset):
    """Identical rows give zero coordinates and a warning; rows with a spread far below their
    offset (but real) are projected like scikit-learn does, without the warning."""
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(3)
    same = np.full((50, 6), offset + 0.1)
    with pytest.warns(xai.XaiWarning, match="same point"):
        p = xai.project(same, method="pca")
    np.testing.assert_array_equal(p.coordinates, 0.0)
    tiny = offset + 0.1 + 1e-3 * rng.standard_normal((50, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("error", xai.XaiWarning)
        q = xai.project(tiny, method="pca")
    np.testing.assert_allclose(q.coordinates, PCA(2).fit_transform(tiny), atol=1e-9)


def test_spherize_centres_and_normalises(blobs):
    """spherize=True is PCA of the centred rows scaled to unit norm."""
    X = blobs[0]
    p = xai.project(X, spherize=True)
    Z = X - X.mean(axis=0)
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    q = xai.project(Z)
    np.testing.assert_allclose(p.coordinates, q.coordinates, atol=1e-12)
    assert p.meta["spherize"] is True
    np.testing.assert_array_equal(p.vectors, X)  # neighbours use the original vectors


def test_linear_projection_axes(blobs):
    """Axis 1 is mean(B) - mean(A) normalised; axis 2 is the second difference orthogonalised."""
    X, _, names, _ = blobs
    p = xai.project(X, method="linear", labels=names, groups=[("cat", "dog"), ("cat", "Bird")])
    a, b, c = (X[names == s].mean(axis=0) for s in ("cat", "dog", "Bird"))
    u = (b - a) / np.linalg.norm(b - a)
    v = (c - a) - ((c - a) @ u) * u
    v /= np.linalg.norm(v)
    Xc = X - X.mean(axis=0)
    np.testing.assert_allclose(p.coordinates, np.c_[Xc @ u, Xc @ v], atol=1e-10)
    A = p.meta["axes"]
    np.testing.assert_allclose(A @ A.T, np.eye(2), atol=1e-12)
    # The first group's mean lies on the negative side of axis 1, the second's on the positive.
    assert p.coordinates[names == "cat", 0].mean() < 0 < p.coordinates[names == "dog", 0].mean()


def test_linear_projection_fills_remaining_axes_with_residual_pca(blobs):
    """With one pair in 3-D, axes 2 and 3 are orthonormal principal directions of the residual."""
    X, y, _, _ = blobs
    sel = Selection(np.flatnonzero(y == 2))
    p = xai.project(X, method="linear", n_components=3, groups=[(y == 0, sel)])
    A = p.meta["axes"]
    np.testing.assert_allclose(A @ A.T, np.eye(3), atol=1e-10)
    Xc = X - X.mean(axis=0)
    R = Xc - np.outer(Xc @ A[0], A[0])
    _, _, Vt = np.linalg.svd(R, full_matrices=False)
    np.testing.assert_allclose(np.abs(A[1:] @ Vt[:2].T), np.eye(2), atol=1e-8)


def test_tsne_is_seeded_and_separates_clusters(blobs):
    """Same seed, same layout; the three clusters stay apart (leave-one-out 5-NN accuracy 1)."""
    X, y, _, _ = blobs
    p = xai.project(X, method="tsne", perplexity=15, max_iter=300, seed=3)
    q = xai.project(X, method="tsne", perplexity=15, max_iter=300, seed=3)
    np.testing.assert_array_equal(p.coordinates, q.coordinates)
    order, _ = _brute(p.coordinates, "euclidean")
    votes = np.array([np.bincount(y[row[:5]], minlength=3).argmax() for row in order])
    assert np.mean(votes == y) == 1.0
    assert np.isfinite(p.meta["kl_divergence"]) and p.meta["options"]["perplexity"] == 15


def test_umap_is_seeded(blobs):
    """UMAP (the umap extra, installed for the tests): the same seed gives the same layout."""
    X = blobs[0]
    p = xai.project(X, method="umap", n_neighbors=10, seed=1)
    q = xai.project(X, method="umap", n_neighbors=10, seed=1)
    np.testing.assert_allclose(p.coordinates, q.coordinates)


def test_umap_absent_is_a_capability_error(blobs, monkeypatch):
    """Without umap-learn, method='umap' says what to install."""
    monkeypatch.setitem(sys.modules, "umap", None)
    with pytest.raises(xai.CapabilityError, match="umap-learn"):
        xai.project(blobs[0], method="umap")


# -- neighbours --------------------------------------------------------------------------------
@pytest.mark.parametrize("metric", ["cosine", "euclidean"], ids=["cosine", "euclidean"])
@pytest.mark.parametrize("block", [1 << 22, 37], ids=["one-block", "many-blocks"])
def test_neighbors_equal_brute_force(metric, block):
    """Indices and distances equal a full cdist sort, in one block or in many small ones."""
    X = np.random.default_rng(5).normal(size=(150, 9))
    order, dist = _brute(X, metric)
    nb = exact_neighbors(X, 7, metric, block_entries=block)
    np.testing.assert_array_equal(nb.indices, order[:, :7])
    np.testing.assert_allclose(nb.distances, dist[:, :7], atol=1e-9)


def test_neighbors_of_some_rows_and_all_k(blobs):
    """rows= gives those rows' neighbours; k = n - 1 ranks every other row; smaller k reuses it."""
    X = blobs[0]
    p = xai.project(X)
    order, dist = _brute(X, "euclidean")
    nb = p.neighbors(5, "euclidean", rows=[3, 77])
    np.testing.assert_array_equal(nb.queries, [3, 77])
    np.testing.assert_array_equal(nb.indices, order[[3, 77], :5])
    full = p.neighbors(len(X) - 1, "euclidean")
    np.testing.assert_allclose(full.distances, dist[:, :-1], atol=1e-9)
    assert not (full.indices == np.arange(len(X))[:, None]).any()
    np.testing.assert_array_equal(p.neighbors(5, "euclidean").indices, order[:, :5])  # from cache


def test_neighbors_float32_close_to_float64():
    """float32 vectors give the float64 brute-force neighbours' distances to float32 precision."""
    X = np.random.default_rng(2).normal(size=(80, 16))
    _, dist = _brute(X, "cosine")
    nb = exact_neighbors(X.astype(np.float32), 4, "cosine")
    np.testing.assert_allclose(nb.distances, dist[:, :4], atol=1e-5)


@pytest.mark.slow
def test_approximate_neighbors_report_recall(blobs):
    """pynndescent's neighbours come with a recall equal to the overlap with the exact lists
    and the same distances where they agree (about a minute: pynndescent compiles with numba)."""
    X = np.random.default_rng(0).normal(size=(400, 8))
    p = xai.project(X)
    approx = p.neighbors(5, approximate=True, seed=0)
    exact = p.neighbors(5)
    found = np.mean([len(set(a) & set(e)) / 5 for a, e in zip(approx.indices, exact.indices)])
    assert approx.approximate and approx.recall == pytest.approx(found)
    assert approx.recall > 0.9
    same = approx.indices == exact.indices
    np.testing.assert_allclose(approx.distances[same], exact.distances[same], atol=1e-5)


def test_approximate_without_pynndescent_is_a_capability_error(blobs, monkeypatch):
    """Without pynndescent, approximate=True says what to install."""
    monkeypatch.setitem(sys.modules, "pynndescent", None)
    with pytest.raises(xai.CapabilityError, match="pynndescent"):
        xai.project(blobs[0]).neighbors(5, approximate=True)


# -- search and selections ---------------------------------------------------------------------
def test_search_substring_regex_and_fields(blobs):
    """By label by default (as TensorBoard); substring (case-insensitive), regex, any column by choice."""
    X, y, names, meta = blobs
    p = xai.project(X, labels=names, metadata=meta)
    np.testing.assert_array_equal(p.search("bird").indices, np.flatnonzero(y == 2))
    assert len(p.search("bird", case_sensitive=True)) == 0
    assert len(p.search(r"^item-00\d$", regex=True)) == 0  # by label unless told otherwise
    hits = p.search(r"^item-00\d$", regex=True, fields="id")
    np.testing.assert_array_equal(hits.indices, np.arange(10))
    # "d": dog and Bird among the labels, red among the colours (the even rows)
    np.testing.assert_array_equal(p.search("d").indices, np.flatnonzero(y > 0))
    everywhere = p.search("d", fields=list(p.columns))
    np.testing.assert_array_equal(
        everywhere.indices, np.flatnonzero((y > 0) | (np.arange(120) % 2 == 0))
    )
    np.testing.assert_array_equal(p.search("red", fields="colour").indices, np.arange(0, 120, 2))
    assert len(p.search("red", fields="label")) == 0
    with pytest.raises(xai.UnknownNameError, match="colour"):
        p.search("x", fields="color")
    with pytest.raises(xai.ValidationError, match="regular expression"):
        p.search("(", regex=True)


def test_selection_indexes_like_an_array(blobs):
    """A Selection indexes arrays, masks, iterates and round-trips to a dict."""
    X, y, names, meta = blobs
    p = xai.project(X, labels=names, metadata=meta)
    sel = p.search("dog", name="dogs")
    np.testing.assert_array_equal(X[np.asarray(sel)], X[y == 1])
    np.testing.assert_array_equal(sel.mask(len(X)), y == 1)
    assert list(sel) == np.flatnonzero(y == 1).tolist() and 40 in sel and 0 not in sel
    assert sel.to_dict()["name"] == "dogs" and len(p.select(y == 0)) == 40


# -- export ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_tensorboard_round_trip(tmp_path, blobs, dtype):
    """tensors.tsv, metadata.tsv (with header) and the config load back to the same values."""
    X, _, names, meta = blobs
    X = (X * np.pi).astype(dtype)
    p = xai.project(X, labels=names, metadata=meta)
    files = p.export_tensorboard(tmp_path, tensor_name='my "emb"')
    back = load_tensorboard(tmp_path)
    np.testing.assert_array_equal(back["vectors"].astype(dtype), X)
    assert back["tensor_name"] == 'my "emb"'
    assert back["metadata"] == {"label": names.tolist(), **meta}
    header = files["metadata"].read_text(encoding="utf-8").split("\n")[0]
    assert header == "label\tid\tcolour"
    config = files["config"].read_text(encoding="utf-8")
    assert 'tensor_path: "tensors.tsv"' in config and 'metadata_path: "metadata.tsv"' in config
    assert 'tensor_name: "my \\"emb\\""' in config and f"tensor_shape: {X.shape[1]}" in config


def test_tensorboard_single_column_has_no_header(tmp_path, blobs):
    """One metadata column is written without a header, as TensorBoard expects, and reads back."""
    X, _, names, _ = blobs
    files = xai.project(X, labels=names).export_tensorboard(tmp_path)
    lines = files["metadata"].read_text(encoding="utf-8").splitlines()
    assert lines == names.tolist()
    assert load_tensorboard(files["config"])["metadata"] == {"label": names.tolist()}


def test_tensorboard_cells_are_sanitised(tmp_path):
    """Tabs and line breaks become spaces; a blank row gets a row-index column so no line is dropped."""
    X = np.random.default_rng(0).normal(size=(4, 3))
    labels = ["a\tb", "c\nd", "", *HOSTILE[:1]]
    p = xai.project(X, labels=labels)
    p.export_tensorboard(tmp_path)
    back = load_tensorboard(tmp_path)["metadata"]
    assert back["label"] == ["a b", "c d", "", HOSTILE[0]]
    assert back["row"] == ["0", "1", "2", "3"]


def test_sprite_tiles_images(tmp_path):
    """With images, sprite.png holds each image in row-major grid order and the config names it."""
    rng = np.random.default_rng(0)
    images = rng.random((5, 4, 6))
    p = xai.project(rng.normal(size=(5, 3)), images=images)
    files = p.export_tensorboard(tmp_path)
    from xai_projector.export import _sprite

    grid = _sprite(images)
    assert grid.shape == (3 * 4, 3 * 6)
    np.testing.assert_array_equal(grid[4:8, 0:6], np.rint(images[3] * 255).astype(np.uint8))
    assert files["sprite"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    config = files["config"].read_text()
    assert "single_image_dim: 6\n    single_image_dim: 4" in config


def test_coordinates_neighbors_and_selections_export(tmp_path, blobs):
    """Projected coordinates as CSV, neighbour lists as JSON and CSV, selections as JSON read back."""
    X, _, names, meta = blobs
    p = xai.project(X, n_components=3, labels=names, metadata=meta)
    with p.to_csv(tmp_path / "coords.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["index", "x", "y", "z", "label", "id", "colour"]
    np.testing.assert_array_equal(np.array([r[1:4] for r in rows[1:]], float), p.coordinates)
    assert [r[4] for r in rows[1:]] == names.tolist()
    nb = p.neighbors(3)
    doc = json.loads(p.save_neighbors(tmp_path / "nb.json", k=3).read_text())
    assert doc["metric"] == "cosine" and doc["k"] == 3
    np.testing.assert_array_equal([r["neighbors"] for r in doc["neighbors"]], nb.indices)
    with p.save_neighbors(tmp_path / "nb.csv", k=3).open(newline="") as fh:
        flat = list(csv.DictReader(fh))
    assert len(flat) == 3 * len(X) and int(flat[4]["neighbor"]) == nb.indices[1, 1]
    sel = p.search("dog", name="dogs")
    saved = json.loads(p.save_selections(tmp_path / "sel.json", [sel]).read_text())
    assert saved["selections"][0]["indices"] == sel.indices.tolist()
    assert set(saved["selections"][0]["labels"]) == {"dog"}


# -- a real network's embeddings ---------------------------------------------------------------
@pytest.mark.slow
def test_mnist_hidden_layer_separates_classes():
    """Hidden-layer embeddings of a trained MLP: high 5-NN accuracy; silhouette above pixels and chance."""
    from sklearn.metrics import silhouette_score
    from sklearn.neural_network import MLPClassifier

    from xai_datasets import load_mnist

    train, test = load_mnist("train"), load_mnist("test")
    Xtr, ytr = train.X[:1500].reshape(1500, -1), train.y[:1500]
    Xte, yte = test.X[:500].reshape(500, -1), test.y[:500]
    mlp = MLPClassifier(hidden_layer_sizes=(32,), max_iter=25, random_state=0)
    with pytest.warns(Warning):  # not converged in 25 epochs; good enough for this check
        mlp.fit(Xtr, ytr)
    runner = xai.ModelRunner(xai.from_sklearn(mlp))
    p = xai.project(runner, Xte, layer=1, labels=yte, progress=False)
    np.testing.assert_allclose(p.vectors, runner.activations(Xte, 1).reshape(500, -1))
    assert p.meta["layer"] == 1

    def knn_accuracy(nb):
        votes = np.array([np.bincount(yte[row], minlength=10).argmax() for row in nb.indices])
        return float(np.mean(votes == yte))

    hidden = knn_accuracy(p.neighbors(5, "euclidean"))
    shuffled = np.random.default_rng(0).permutation(yte)
    baseline = float(np.mean(shuffled[p.neighbors(5, "euclidean").indices[:, 0]] == yte))
    assert hidden > 0.8 and baseline < 0.25
    sil_hidden = silhouette_score(p.vectors, yte)  # about 0.16 here
    sil_random = silhouette_score(p.vectors, shuffled)  # about -0.05
    sil_pixels = silhouette_score(Xte, yte)  # about 0.04
    assert sil_hidden > sil_random + 0.05 and sil_hidden > sil_pixels + 0.05


# -- HTML --------------------------------------------------------------------------------------
def _json_block(html: str) -> dict:
    m = re.search(
        r'<script type="application/json" class="xai-projector-data">(.*?)</script>', html, re.S
    )
    return json.loads(m.group(1))


@pytest.mark.parametrize(
    "render", ["section", "notebook", "page"], ids=["section", "notebook", "page"]
)
def test_hostile_labels_and_metadata_are_escaped(render):
    """Hostile labels and metadata never appear raw; the JSON block gives them back exactly."""
    rng = np.random.default_rng(0)
    labels = [HOSTILE[i % len(HOSTILE)] for i in range(25)]
    meta = {HOSTILE[1]: [HOSTILE[(i + 2) % len(HOSTILE)] for i in range(25)]}
    p = xai.project(rng.normal(size=(25, 4)), labels=labels, metadata=meta)
    html = {
        "section": lambda: xai.report.find_section(p).render(p),
        "notebook": p._repr_html_,
        "page": p.to_html,
    }[render]()
    for h in HOSTILE[:3]:
        assert h not in html
    # the only images are the data-URI pictures the view draws (the static scatter)
    assert not re.findall(
        r'<img(?! class="xai-projector-svg" src="data:image/svg\+xml;base64,)', html
    )
    assert 'onmouseover="' not in html
    n_scripts = len(re.findall(r"<script[\s>]", html))
    assert html.count("</script>") == n_scripts
    data = _json_block(html)
    assert sorted(data["classes"]) == sorted(set(labels))
    assert data["columns"][HOSTILE[1]] == [
        v[:59] + "…" if len(v) > 60 else v for v in meta[HOSTILE[1]]
    ]
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html  # escaped in the SVG titles


def test_view_data_matches_projection(blobs):
    """The view's JSON carries every point, its label code and its exact cosine neighbours."""
    X, _, names, _ = blobs
    p = xai.project(X, labels=names)
    data = _json_block(xai.report.find_section(p).render(p))
    assert data["n"] == len(X) and len(data["x"]) == len(X)
    np.testing.assert_array_equal(np.array(data["classes"])[data["label"]], names)
    nb = p.neighbors(data["k"], "cosine")
    np.testing.assert_array_equal(np.reshape(data["nbr"], (len(X), -1)), nb.indices)
    assert min(data["x"]) >= 0 and max(max(data["x"]), max(data["y"])) <= 10000


def _decode_png(uri: str) -> np.ndarray:
    import base64
    import io

    from PIL import Image

    with Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))) as image:
        assert image.format == "PNG"
        pixels = np.asarray(image)
    return pixels if pixels.ndim == 3 else pixels[:, :, None]


def test_attribution_heatmaps_in_view():
    """With an explanation, each point carries a heatmap in the report's diverging colours."""
    rng = np.random.default_rng(0)
    values = rng.normal(size=(12, 5, 5))
    values[:, 0, 0], values[:, 4, 4] = 10.0, -10.0
    e = xai.Explanation(values=values, base_values=np.zeros(12), target=np.zeros(12, int))
    p = xai.project(rng.normal(size=(12, 3)), explanation=e)
    maps = _json_block(xai.report.find_section(p).render(p))["heatmaps"]
    assert len(maps) == 12
    img = _decode_png(maps[3])
    assert img.shape == (5, 5, 3)
    np.testing.assert_array_equal(img[0, 0], xai.report.POSITIVE)
    np.testing.assert_array_equal(img[4, 4], xai.report.NEGATIVE)
    t = values[3, 1, 2] / 10.0  # white blended linearly towards the colour of t's sign
    colour = xai.report.POSITIVE if t >= 0 else xai.report.NEGATIVE
    np.testing.assert_array_equal(img[1, 2], np.rint(255 * (1 - abs(t)) + colour * abs(t)))
    with pytest.raises(xai.ShapeError, match="explanation"):
        xai.project(rng.normal(size=(10, 3)), explanation=e)


def test_report_section_carries_no_script_and_csp_holds(blobs):
    """In a report the view adds no executable script, so the report's CSP blocks nothing."""
    X, _, names, _ = blobs
    html = xai.Report("r", seed=0).add(xai.project(X, labels=names)).to_html()
    scripts = re.findall(  # data blocks (JSON, the live controls' HTML) are not scripts
        r"<script(?![^>]*(?:application/json|text/html))[^>]*>(.*?)</script>", html, re.S
    )
    csp = unescape(re.search(r'Content-Security-Policy" content="([^"]*)"', html).group(1))
    from xai_projector.view import script_hash

    assert scripts and all(script_hash(s) in csp for s in scripts)
    assert "xai-projector-static-note" in html


def test_standalone_page_csp_allows_its_script(blobs):
    """The standalone page's CSP allows exactly its one inline script."""
    from xai_projector.view import script, script_hash

    html = xai.project(blobs[0]).to_html()
    csp = unescape(re.search(r'Content-Security-Policy" content="([^"]*)"', html).group(1))
    assert f"script-src {script_hash(script())};" in csp and f"<script>{script()}</script>" in html


# -- validation --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"vectors": np.ones(5)}, xai.ShapeError, r"\(n_samples, n_features\)"),
        ({"vectors": [[np.nan, 1.0]] * 4}, xai.ValidationError, "finite"),
        ({"vectors": [["a", "b"]] * 4}, xai.ValidationError, "numeric"),
        ({"method": "isomap"}, xai.UnknownNameError, "pca, tsne, umap"),
        ({"n_components": 4}, xai.ValidationError, "2 or 3"),
        ({"labels": ["a"] * 3}, xai.ShapeError, r"labels must have shape \(20,\)"),
        ({"metadata": ["x"] * 20}, xai.ValidationError, "mapping"),
        ({"method": "linear"}, xai.ValidationError, "groups"),
        ({"method": "linear", "groups": [([0], [0])]}, xai.ValidationError, "same mean"),
        ({"seed": -1}, xai.ValidationError, "seed"),
        ({"method": "tsne", "perplexity": 50}, xai.ValidationError, "perplexity"),
        ({"layer": 1}, xai.ValidationError, "X and layer"),
        ({"images": np.zeros((3, 2, 2))}, xai.ShapeError, "images"),
    ],
    ids=["1d", "nan", "strings", "method", "components", "labels", "metadata", "no-groups",
         "same-groups", "seed", "perplexity", "layer-on-array", "images"],
)  # fmt: skip
def test_bad_input_is_rejected(kwargs, error, match):
    """Bad arguments raise the project's errors naming the argument before any work."""
    args = {"vectors": np.random.default_rng(0).normal(size=(20, 5)), **kwargs}
    with pytest.raises(error, match=match):
        xai.project(args.pop("vectors"), **args)


def test_bad_neighbor_arguments_are_rejected(blobs):
    """k out of range, an unknown metric and rows outside the data are refused."""
    p = xai.project(blobs[0])
    with pytest.raises(xai.ValidationError, match="k must be an integer >= 1 and <= 119"):
        p.neighbors(120)
    with pytest.raises(xai.UnknownNameError, match="cosine, euclidean"):
        p.neighbors(3, "manhattan")
    with pytest.raises(xai.ValidationError, match="rows"):
        p.neighbors(3, rows=[500])
    assert isinstance(p, Projection) and isinstance(p.neighbors(2), Neighbors)


# -- t-SNE implementations ---------------------------------------------------------------------
def _knn_accuracy(coords, y):
    """Leave-one-out 5-NN accuracy of ``coords`` against the labels ``y``."""
    order, _ = _brute(coords, "euclidean")
    votes = np.array([np.bincount(y[row[:5]], minlength=3).argmax() for row in order])
    return float(np.mean(votes == y))


def test_opentsne_is_seeded_and_separates_clusters(blobs):
    """openTSNE: same seed, same layout; the clusters stay apart (5-NN accuracy >= 0.95)."""
    X, y, _, _ = blobs
    kw = {"method": "tsne", "perplexity": 15, "max_iter": 250, "tsne_backend": "opentsne"}
    p = xai.project(X, seed=3, **kw)
    q = xai.project(X, seed=3, **kw)
    np.testing.assert_array_equal(p.coordinates, q.coordinates)
    assert _knn_accuracy(p.coordinates, y) >= 0.95
    assert (
        p.meta["implementation"] == "opentsne" and p.meta["options"]["implementation"] == "opentsne"
    )
    assert np.isfinite(p.meta["kl_divergence"]) and p.meta["n_iter"] == 250


def test_tsne_auto_picks_by_size(blobs, monkeypatch):
    """ "auto" runs scikit-learn up to the threshold and openTSNE above it (2-D only)."""
    from xai_projector import methods

    X = blobs[0]
    kw = {"method": "tsne", "perplexity": 15, "max_iter": 250, "seed": 0}
    monkeypatch.setattr(methods, "OPENTSNE_MIN_SAMPLES", len(X))
    assert xai.project(X, **kw).meta["implementation"] == "sklearn"
    monkeypatch.setattr(methods, "OPENTSNE_MIN_SAMPLES", len(X) - 1)
    above = xai.project(X, **kw)
    assert above.meta["implementation"] == "opentsne"
    assert "auto: n_samples > 119" in above.meta["tsne_choice"]
    three = xai.project(X, n_components=3, **kw)
    assert three.meta["implementation"] == "sklearn" and three.coordinates.shape == (120, 3)
    forced = xai.project(X, tsne_backend="sklearn", **kw)
    assert forced.meta["implementation"] == "sklearn"


def test_tsne_backend_errors(blobs, monkeypatch):
    """openTSNE forced while absent or in 3-D, or an unknown backend, is a clear error."""
    from xai_projector import methods

    X = blobs[0]
    kw = {"method": "tsne", "perplexity": 15, "max_iter": 250}
    with pytest.raises(xai.UnknownNameError, match="auto, opentsne, sklearn"):
        xai.project(X, tsne_backend="fast", **kw)
    with pytest.raises(xai.ValidationError, match="max_iter must be at least 250"):
        xai.project(X, method="tsne", perplexity=15, max_iter=100)
    monkeypatch.setattr(methods, "OPENTSNE_MIN_SAMPLES", 10)
    monkeypatch.setitem(sys.modules, "openTSNE", None)
    with pytest.raises(xai.CapabilityError, match="pip install openTSNE"):
        xai.project(X, tsne_backend="opentsne", **kw)
    fallback = xai.project(X, **kw)
    assert fallback.meta["implementation"] == "sklearn"
    assert fallback.meta["tsne_choice"] == "auto: openTSNE is not installed"
    monkeypatch.delitem(sys.modules, "openTSNE")
    if methods._opentsne_module() is not None:
        with pytest.raises(xai.CapabilityError, match="2-D embeddings only"):
            xai.project(X, n_components=3, tsne_backend="opentsne", **kw)


def test_seed_none_is_drawn_recorded_and_repeatable():
    """project(seed=None) draws a seed, records it in meta, and passing it back repeats the run."""
    vectors = np.random.default_rng(0).normal(size=(60, 8))
    p = xai.project(vectors, method="pca", seed=None)
    seed = p.meta["seed"]
    assert isinstance(seed, int) and seed >= 0 and p.meta["progress"] is None
    again = xai.project(vectors, method="pca", seed=seed)
    np.testing.assert_array_equal(p.coordinates, again.coordinates)
    with pytest.raises(xai.ValidationError, match="seed must be an integer >= 0"):
        xai.project(vectors, seed=-1)
