"""xai_core.pose: PoseNet's output grid, the classifier's feature layout, single-pose decoding."""

from __future__ import annotations

import numpy as np
import pytest

import xai_core as xai
from xai_core.pose import (
    CHANNELS,
    PART_NAMES,
    decode_single_pose,
    grid_size,
    keypoint_totals,
    posenet_feature_names,
    posenet_features,
)


@pytest.mark.parametrize(
    ("resolution", "stride", "grid"),
    [(257, 16, (17, 17)), (353, 32, (12, 12)), (513, 8, (65, 65)), (300, 16, (19, 19))],
    ids=["tm-default", "353-stride-32", "513-stride-8", "300-rounded-to-289"],
)
def test_grid_follows_posenets_resolution_arithmetic(resolution, stride, grid):
    """toValidInputResolution, then (resolution - 1) / stride + 1 cells a side."""
    assert grid_size(resolution, stride) == grid


def test_grid_of_a_width_height_resolution_and_bad_settings():
    """{width, height} resolutions are per axis; a stride PoseNet lacks is refused."""
    assert grid_size({"width": 257, "height": 200}, 16) == (13, 17)
    with pytest.raises(xai.errors.ValidationError, match="8, 16 or 32"):
        grid_size(257, 12)
    with pytest.raises(xai.errors.ValidationError, match="height"):
        grid_size({"width": 257}, 16)


def test_features_are_poseoutputstoaray_order():
    """Per cell (row-major): 17 scores, 17 y offsets, 17 x offsets; names say which is which."""
    s = np.random.default_rng(0).uniform(0, 1, (2, 3, 4, 17))
    o = np.random.default_rng(1).normal(0, 4, (2, 3, 4, 34))
    X = posenet_features(s, o)
    assert X.shape == (2, 3 * 4 * CHANNELS)
    np.testing.assert_allclose(X[1, (2 * 4 + 1) * 51 + 5], s[1, 2, 1, 5], rtol=1e-6)
    np.testing.assert_allclose(X[1, (2 * 4 + 1) * 51 + 17 + 5], o[1, 2, 1, 5], rtol=1e-6)
    names = posenet_feature_names((3, 4))
    assert names[(2 * 4 + 1) * 51 + 34 + 5] == f"{PART_NAMES[5]} dx (2, 1)"
    np.testing.assert_allclose(posenet_features(s[0], o[0]), X[:1])


@pytest.mark.parametrize(
    ("scores", "offsets", "error", "match"),
    [
        ((1, 3, 3, 16), (1, 3, 3, 34), xai.errors.ShapeError, "17"),
        ((1, 3, 3, 17), (1, 3, 4, 34), xai.errors.ShapeError, "offsets"),
    ],
    ids=["16-heatmaps", "offsets-on-another-grid"],
)
def test_posenet_outputs_of_the_wrong_shape_are_refused(scores, offsets, error, match):
    """Shapes are named in the message."""
    with pytest.raises(error, match=match):
        posenet_features(np.zeros(scores), np.zeros(offsets))


def test_raw_heatmap_logits_are_refused():
    """Scores outside [0, 1] are heatmaps before the sigmoid: refused, with the reason."""
    with pytest.raises(xai.errors.ValidationError, match="sigmoid"):
        posenet_features(np.full((1, 2, 2, 17), 3.0), np.zeros((1, 2, 2, 34)))


def test_single_pose_decoding_follows_posenet():
    """A keypoint at its best cell (r, c): (r * stride + dy, c * stride + dx, score)."""
    s = np.zeros((1, 17, 17, 17))
    o = np.zeros((1, 17, 17, 34))
    for k in range(17):
        r, c = k, 16 - k
        s[0, r, c, k] = 0.9
        o[0, r, c, k], o[0, r, c, 17 + k] = 1.5 * k, -2.0
    kp = decode_single_pose(posenet_features(s, o), (17, 17), 16)[0]
    for k in range(17):
        np.testing.assert_allclose(kp[k], [k * 16 + 1.5 * k, (16 - k) * 16 - 2.0, 0.9], rtol=1e-6)


def test_keypoint_totals_sum_each_parts_three_channels():
    """A part's total is its score, dy and dx attributions over every cell."""
    v = np.zeros((1, 2, 2, 51))
    v[0, 0, 1, 3] = 1.0  # leftEar score
    v[0, 1, 0, 17 + 3] = 2.0  # leftEar dy
    v[0, 1, 1, 34 + 3] = -0.5  # leftEar dx
    v[0, 0, 0, 0] = 4.0  # nose score
    totals = keypoint_totals(v.reshape(1, -1), (2, 2))
    np.testing.assert_allclose(totals[0, [0, 3]], [4.0, 2.5])
    assert np.count_nonzero(totals) == 2
    with pytest.raises(xai.errors.ShapeError, match="204"):
        keypoint_totals(np.zeros((1, 10)), (2, 2))
