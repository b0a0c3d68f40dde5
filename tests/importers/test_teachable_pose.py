"""from_teachable_machine on pose projects: a dense classifier over PoseNet's heatmaps and offsets."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import xai_core as xai
from xai_core.importers.teachable_pose import prepare_poses
from xai_core.pose import CONNECTED_PARTS, PART_NAMES, keypoint_totals

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from make_teachable_exports import write_pose_export  # noqa: E402

LABELS = ("Standing", "Squat", "Wave")
RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    return write_pose_export(tmp_path_factory.mktemp("tm") / "pose", LABELS, dense_units=16)


def posenet_outputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0, 1, (n, 17, 17, 17)), rng.normal(0, 6, (n, 17, 17, 34))


def torch_oracle(w, X):
    """teachable-posenet's Sequential in torch: Dense relu, (dropout), Dense softmax without bias."""
    x = torch.from_numpy(X).double()
    h = torch.relu(
        x @ torch.from_numpy(w["dense_Dense1/kernel"].copy()).double()
        + torch.from_numpy(w["dense_Dense1/bias"].copy()).double()
    )
    return torch.softmax(h @ torch.from_numpy(w["dense_Dense2/kernel"].copy()).double(), -1).numpy()


def test_pose_export_loads_with_posenet_inputs_named_per_keypoint(export):
    """17 x 17 x 51 inputs (PoseNet at 257 px, stride 16), each named by keypoint, channel, cell."""
    folder, _ = export
    m = xai.from_teachable_machine(folder)
    assert m.output_names == LABELS and m.input_shape == (14739,)
    assert m.preprocessing["grid"] == (17, 17) and "image_size" not in m.preprocessing
    names = m.feature_names
    assert names[0] == "nose score (0, 0)" and names[17] == "nose dy (0, 0)"
    assert names[34] == "nose dx (0, 0)" and names[51] == "nose score (0, 1)"
    assert names[-1] == "rightAnkle dx (16, 16)"


def test_predictions_equal_a_torch_oracle(export):
    """The imported classifier computes what the tfjs Sequential computes."""
    folder, w = export
    m = xai.from_teachable_machine(folder)
    X = prepare_poses(m, posenet_outputs(4))
    np.testing.assert_allclose(m.predict(X), torch_oracle(w, X), atol=1e-5)


def test_rows_from_a_table_an_array_or_an_estimator_agree(export):
    """A DataFrame (columns by name, any order), an array, and an estimator give the same rows."""
    folder, _ = export
    m = xai.from_teachable_machine(folder)
    s, o = posenet_outputs(2, seed=3)
    X = prepare_poses(m, (s, o))
    table = pd.DataFrame(X, columns=m.feature_names).iloc[:, ::-1]
    np.testing.assert_array_equal(prepare_poses(m, table), X)
    np.testing.assert_array_equal(prepare_poses(m, X), X)
    images = [0, 1]
    got = prepare_poses(m, images=images, estimator=lambda i: (s[i], o[i]))
    np.testing.assert_array_equal(got, X)
    with pytest.raises(xai.errors.ValidationError, match="missing"):
        prepare_poses(m, table.iloc[:, 1:])
    with pytest.raises(xai.errors.ShapeError, match="14739"):
        prepare_poses(m, np.zeros((1, 51)))
    with pytest.raises(xai.errors.ValidationError, match=r"\[0, 1\]"):
        prepare_poses(m, (s * 3, o))


def test_the_grid_follows_modelsettings_and_a_mismatch_is_refused(export, tmp_path):
    """inputResolution 353 at stride 32 is a 12 x 12 grid; a 17 x 17 model then fails clearly."""
    folder, _ = export
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in folder.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    meta = json.loads((folder / "metadata.json").read_text())
    meta["modelSettings"]["posenet"].update(inputResolution=353, outputStride=32)
    (bad / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(xai.errors.ModelFormatError, match=r"12 x 12 grid .* takes \(14739,\)"):
        xai.from_teachable_machine(bad)


@pytest.mark.slow
def test_ig_attributions_per_keypoint_and_the_skeleton_plot(export):
    """Per-keypoint totals add up to IG's total; the skeleton draws every joint and PoseNet's pairs."""
    import matplotlib

    matplotlib.use("Agg")
    folder, _ = export
    m = xai.from_teachable_machine(folder)
    X = prepare_poses(m, posenet_outputs(2, seed=5))
    e = xai.explain(m, X, method="ig", n_steps=32, target=0)
    totals = keypoint_totals(e.values, (17, 17))
    assert totals.shape == (2, 17)
    np.testing.assert_allclose(totals.sum(axis=1), e.values.sum(axis=1), rtol=1e-6, atol=1e-9)
    gap = m.predict(X)[:, 0] - m.predict(np.zeros_like(X))[:, 0]
    np.testing.assert_allclose(totals.sum(axis=1), gap, atol=0.02 * np.abs(gap).max() + 1e-5)
    ax = e.plot.skeleton(1)
    assert len(ax.lines) == len(CONNECTED_PARTS)
    labels = [t.get_text() for t in ax.texts]
    assert [t.split()[0] for t in labels] == list(PART_NAMES)
    assert labels[3].endswith(f"{totals[1, 3]:+.2g}")
    table = pd.DataFrame(
        {"part": PART_NAMES[::-1], "x": np.arange(17.0)[::-1], "y": np.zeros(17), "score": 1.0}
    )
    ax = e.plot.skeleton(0, keypoints=table)
    np.testing.assert_allclose(ax.collections[0].get_offsets()[:, 0], np.arange(17.0))
    with pytest.raises(xai.errors.ShapeError, match="17 finite"):
        e.plot.skeleton(0, keypoints=np.zeros((5, 2)))
