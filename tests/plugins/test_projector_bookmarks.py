"""Projector pictures and bookmarks from Python: label by a column, thumbnails, view states
saved and restored, their JSON, and TensorBoard's bookmarks.json written and read back."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

import xai_core as xai
from xai_projector import load_tensorboard
from xai_projector.export import STATE_KEY
from xai_projector.state import ViewState

_DATA = re.compile(
    r'<script type="application/json" class="xai-projector-data">(.*?)</script>', re.S
)


def _data(html: str) -> dict:
    return json.loads(_DATA.search(html).group(1))


@pytest.fixture(scope="module")
def proj():
    """40 points with labels, a categorical and a numeric column, and an image each."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 5))
    meta = {"kind": np.array(["a", "b", "c"])[np.arange(40) % 3], "score": np.round(X[:, 0], 3)}
    images = rng.random((40, 4, 4))
    return xai.project(X, labels=[f"L{i % 4}" for i in range(40)], metadata=meta, images=images)


def test_label_by_and_thumbnails_reach_the_page(proj):
    """The chosen label column and the thumbnails switch are the page's starting state."""
    view = proj.show(color_by="kind", label_by="score", thumbnails=True)
    d = _data(view.to_html())
    names = [c["name"] for c in d["colorings"]]
    assert d["state"]["label"] == names.index("score")
    assert d["state"]["color"] == names.index("kind")
    assert d["state"]["thumbs"] is True and len(d["thumbs"]) == len(proj)
    by = {c["name"]: c for c in d["colorings"]}
    # a numeric column carries its text for the labels; categories their classes and codes
    assert by["score"]["text"] == [str(v) for v in proj.metadata["score"].tolist()]
    assert "text" not in by["kind"]
    assert d["max_labels"] == 200
    option = f'<option value="{names.index("score")}" selected>\u2068score\u2069</option>'
    assert option in view.to_html()
    assert 'class="xai-projector-thumbs" checked' in view.to_html()
    assert _data(proj.to_html())["state"]["label"] == -1  # no labels by default


def test_label_by_and_thumbnails_are_checked():
    """An unknown column names the columns; thumbnails need images."""
    p = xai.project(np.random.default_rng(0).normal(size=(10, 3)), labels=list("abcdeabcde"))
    with pytest.raises(xai.UnknownNameError, match="label_by column.*label"):
        p.show(label_by="nope")
    with pytest.raises(xai.ValidationError, match="thumbnails=True needs images"):
        p.show(thumbnails=True)
    assert 'class="xai-projector-thumbs"' not in p.to_html()  # no toggle without images


def test_bookmark_saves_and_load_restores_the_state(proj):
    """A bookmark keeps every field; loading it brings the view back after changes."""
    view = proj.show()
    view.set_state(zoom=2.5, pan_x=-30, pan_y=12.5, selected=7, search="L1", color_by="kind",
                   label_by="label", thumbnails=True)  # fmt: skip
    saved = view.bookmark("close look")
    assert saved.name == "close look" and saved.zoom == 2.5 and saved.selected == 7
    view.set_state(zoom=1, pan_x=0, selected=None, search="", color_by="none")
    assert view.state != saved.renamed(view.state.name)
    restored = view.load_bookmark("close look")
    assert restored == saved and view.color_by == "kind" and view.label_by == "label"
    again = ViewState.from_dict(json.loads(json.dumps(saved.to_dict())))
    assert again == saved
    with pytest.raises(xai.UnknownNameError, match="bookmark"):
        view.load_bookmark("missing")


def test_view_states_are_checked(proj):
    """Out-of-range fields, unknown keys and states of another projection are errors."""
    view = proj.show()
    with pytest.raises(xai.ValidationError, match="zoom"):
        view.set_state(zoom=0)
    with pytest.raises(xai.ValidationError, match="selected"):
        view.set_state(selected=len(proj))
    with pytest.raises(xai.ValidationError, match="finite"):
        view.set_state(pan_x=math.nan)
    with pytest.raises(xai.ValidationError, match="regex must be True or False"):
        view.set_state(regex="yes")
    with pytest.raises(xai.UnknownNameError, match="search_by column"):
        view.set_state(search_by="nope")
    with pytest.raises(xai.ValidationError, match="unknown view-state keys"):
        ViewState.from_dict({"zoom": 2, "camera": 1})
    with pytest.raises(xai.ValidationError, match="'tsne' projection"):
        view.set_state(ViewState(method="tsne"))
    with pytest.raises(xai.ValidationError, match="dims=3 needs"):
        view.set_state(dims=3)


def test_bookmarks_from_python_are_in_the_page(proj):
    """Saved bookmarks are the page's Bookmarks menu, in order, as the script's states."""
    view = proj.show(color_by="kind")
    view.set_state(zoom=3, selected=2)
    view.bookmark("first")
    view.set_state(zoom=1.5, search="b", search_by="kind")
    view.bookmark("\u202eevil</script>")
    html = view.to_html()
    d = _data(html)
    assert [b["name"] for b in d["bookmarks"]] == ["first", "\u202eevil</script>"]
    assert d["bookmarks"][0]["k"] == 3 and d["bookmarks"][0]["selected"] == 2
    assert d["bookmarks"][1]["search"] == "b" and d["bookmarks"][1]["search_by"] == 1  # label, kind
    assert '<option value="1">\u2068\u202eevil&lt;/script&gt;\u2069</option>' in html


def test_tensorboard_bookmarks_round_trip(proj, tmp_path):
    """bookmarks.json holds TensorBoard State records (coordinates, selection, camera, search
    matches); the config names it; load_tensorboard gives the states back exactly."""
    view = proj.show(color_by="kind")
    view.set_state(zoom=2, pan_x=10, selected=5, search="L2")
    view.bookmark("one")
    view.set_state(zoom=1, selected=None, search="", label_by="score")
    view.bookmark("two")
    files = view.export_tensorboard(tmp_path)
    config = files["config"].read_text()
    assert 'bookmarks_path: "bookmarks.json"' in config
    records = json.loads(files["bookmarks"].read_text())
    assert [r["label"] for r in records] == ["one", "two"]
    first = records[0]
    assert first["selectedProjection"] == "pca" and first["dataSetDimensions"] == [40, 5]
    xy = np.array([[r["pca-0"], r["pca-1"]] for r in first["projections"]])
    np.testing.assert_array_equal(xy, proj.coordinates)
    assert first["selectedPoints"] == [5]
    assert first["filteredPoints"] == proj.search("L2").indices.tolist()
    assert first["cameraDef"]["orthographic"] is True and first["cameraDef"]["zoom"] == 2
    assert (
        first["selectedColorOptionName"] == "kind" and records[1]["selectedLabelOption"] == "score"
    )
    loaded = load_tensorboard(tmp_path)
    assert loaded["bookmarks"] == [view.bookmarks["one"].to_dict(), view.bookmarks["two"].to_dict()]
    other = proj.show()
    other.add_bookmarks(loaded["bookmarks"])
    assert other.load_bookmark("one") == view.bookmarks["one"]


def test_tensorboards_own_bookmarks_are_read(proj, tmp_path):
    """A record TensorBoard wrote (no exact state) gives its name, projection, selection,
    colour and label options; a config without bookmarks gives none."""
    files = proj.export_tensorboard(tmp_path, bookmarks=[ViewState(name="x")])
    records = json.loads(files["bookmarks"].read_text())
    for r in records:
        del r[STATE_KEY]
    records[0].update(selectedPoints=[3], selectedColorOptionName="kind", selectedLabelOption="")
    files["bookmarks"].write_text(json.dumps(records))
    (state,) = load_tensorboard(tmp_path)["bookmarks"]
    assert state["name"] == "x" and state["method"] == "pca" and state["selected"] == 3
    assert state["color_by"] == "kind" and state["label_by"] == "none"
    view = proj.show()
    view.add_bookmarks([state])
    assert view.load_bookmark("x").selected == 3
    plain = tmp_path / "plain"
    proj.export_tensorboard(plain)
    assert load_tensorboard(plain)["bookmarks"] == []
    assert "bookmarks_path" not in (plain / "projector_config.pbtxt").read_text()


def test_custom_projection_follows_its_definition():
    """x is the centroid direction from search A to B, y from C to D, unit and not orthogonalised."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 6))
    labels = [["cat", "dog", "small cat", "big dog", "bird"][i % 5] for i in range(60)]
    size = np.array(["small", "big", "mid"])[np.arange(60) % 3]
    p = xai.project(X, method="custom", labels=labels, metadata={"size": size},
                    axes=[("cat", "dog"), ("small", "big")])  # fmt: skip
    lab = np.array(labels)  # the searches look in the labels by default, as Projection.search
    a, b = np.char.find(lab, "cat") >= 0, np.char.find(lab, "dog") >= 0
    c, d = np.char.find(lab, "small") >= 0, np.char.find(lab, "big") >= 0
    ux = X[b].mean(0) - X[a].mean(0)
    uy = X[d].mean(0) - X[c].mean(0)
    ux, uy = ux / np.linalg.norm(ux), uy / np.linalg.norm(uy)
    expected = (X - X.mean(0)) @ np.stack([ux, uy]).T
    np.testing.assert_allclose(p.coordinates, expected, atol=1e-12)
    assert p.meta["axes_cosine"] == pytest.approx(ux @ uy)
    assert p.meta["options"]["axes"] == [["cat", "dog"], ["small", "big"]]
    # a search by another column, as a regular expression
    q = xai.project(X, method="custom", labels=labels, metadata={"size": size},
                    axes=[("^small$", "^big$"), ("^mid$", "^big$")], axes_regex=True,
                    axes_fields="size")  # fmt: skip
    s, bg, m = size == "small", size == "big", size == "mid"
    vx = X[bg].mean(0) - X[s].mean(0)
    vy = X[bg].mean(0) - X[m].mean(0)
    np.testing.assert_allclose(q.coordinates[:, 0], (X - X.mean(0)) @ (vx / np.linalg.norm(vx)))
    np.testing.assert_allclose(q.coordinates[:, 1], (X - X.mean(0)) @ (vy / np.linalg.norm(vy)))


def test_custom_projection_errors_and_export(tmp_path):
    """No match, one axis, 3-D and axes for another method are errors; the export names it custom."""
    X = np.random.default_rng(6).normal(size=(20, 4))
    labels = [["a", "b", "c", "d"][i % 4] for i in range(20)]
    with pytest.raises(
        xai.ValidationError, match=r"axes\[1\]\[0\]: the search 'zzz' matches no row"
    ):
        xai.project(X, method="custom", labels=labels, axes=[("a", "b"), ("zzz", "d")])
    with pytest.raises(xai.ValidationError, match="two searches"):
        xai.project(X, method="custom", labels=labels, axes=[("a", "b")])
    with pytest.raises(xai.ValidationError, match="n_components=3"):
        xai.project(X, method="custom", n_components=3, labels=labels, axes=[("a", "b")] * 2)
    with pytest.raises(xai.ValidationError, match="axes applies only"):
        xai.project(X, labels=labels, axes=[("a", "b")] * 2)
    with pytest.raises(xai.ValidationError, match="same mean"):
        xai.project(X, method="custom", labels=labels, axes=[("a", "a"), ("c", "d")])
    p = xai.project(X, method="custom", labels=labels, axes=[("a", "b"), ([0, 1], "d")])
    files = p.show().export_tensorboard(tmp_path)
    (record,) = json.loads(files["bookmarks"].read_text())
    assert record["selectedProjection"] == "custom"
    assert list(record["projections"][0]) == ["linear-x", "linear-y"]
    assert (record["customXLeftText"], record["customXRightText"]) == ("a", "b")
    assert (record["customYDownText"], record["customYUpText"]) == ("", "d")
    assert record["customSelectedSearchByMetadataOption"] == "label"


def test_a_report_carries_the_views_state_and_bookmarks(proj):
    """An offline report of a view opens in its state with its bookmarks in the menu."""
    view = proj.show(label_by="kind", thumbnails=True)
    view.set_state(zoom=2)
    view.bookmark("saved view")
    html = xai.Report("embeddings").add(view).to_html()
    d = _data(html)
    assert d["state"]["k"] == 2 and d["state"]["thumbs"] is True
    assert [b["name"] for b in d["bookmarks"]] == ["saved view"]
    assert '<option value="0">\u2068saved view\u2069</option>' in html
