"""The one image-layout rule: (H, W), (H, W, C), (C, H, W) and flat rows with image_shape."""

import numpy as np
import pytest

import xai_core as xai
from xai_core.images import ImageLayout, image_layout, is_image_shape, sample_layout


@pytest.mark.parametrize(
    "shape, order, hwc",
    [
        ((28, 28), "hw", (28, 28, 1)),
        ((28, 28, 3), "hwc", (28, 28, 3)),
        ((8, 8, 1), "hwc", (8, 8, 1)),
        ((3, 28, 28), "chw", (28, 28, 3)),
        ((1, 28, 28), "chw", (28, 28, 1)),
        ((2, 9, 11), "chw", (9, 11, 2)),
        ((3, 4, 4), "hwc", (3, 4, 4)),  # both ends small: channels last
    ],
    ids=["hw", "hwc", "hw1", "chw", "1hw", "2hw", "ambiguous"],
)
def test_the_rule(shape, order, hwc):
    """Channels last when the last axis has at most 4 entries, else first when the first has."""
    layout = image_layout(shape)
    assert layout.order == order and layout.shape == shape
    assert (layout.height, layout.width, layout.channels) == hwc
    assert layout.size == int(np.prod(shape))
    assert layout.channel_axis == {"hw": None, "hwc": 2, "chw": 0}[order]


def test_conversions_match_numpy_transposes():
    """to_hwc / to_chw are numpy's transposes of the rows, flat or shaped; from_* invert them."""
    rng = np.random.default_rng(0)
    chw = rng.normal(size=(4, 3, 5, 6))
    layout = image_layout((3, 5, 6))
    for rows in (chw, chw.reshape(4, -1)):
        np.testing.assert_array_equal(layout.to_hwc(rows), chw.transpose(0, 2, 3, 1))
        np.testing.assert_array_equal(layout.to_chw(rows), chw)
    np.testing.assert_array_equal(layout.from_hwc(chw.transpose(0, 2, 3, 1)), chw)
    np.testing.assert_array_equal(layout.from_chw(chw, (90,)), chw.reshape(4, 90))
    hwc = image_layout((5, 6, 3))
    np.testing.assert_array_equal(hwc.to_chw(chw.transpose(0, 2, 3, 1)), chw)
    np.testing.assert_allclose(hwc.grey(chw.transpose(0, 2, 3, 1)), chw.mean(axis=1))
    hw = image_layout((5, 6))
    np.testing.assert_array_equal(hw.to_hwc(chw[:, 0]), chw[:, 0, :, :, None])


def test_sample_layout_of_flat_and_shaped_rows():
    """Flat rows need image_shape (or square=True); shaped rows carry their layout."""
    assert sample_layout((784,)) is None
    assert sample_layout((784,), square=True).shape == (28, 28)
    assert sample_layout((785,), square=True) is None
    assert sample_layout((192,), (8, 8, 3)).order == "hwc"
    assert sample_layout((8, 8, 3)).order == "hwc"
    assert sample_layout((5, 6, 7)) is None and not is_image_shape((5, 6, 7))
    assert sample_layout((10,), (3, 3), strict=False) is None
    with pytest.raises(xai.ShapeError, match=r"holding the 10 values"):
        sample_layout((10,), (3, 3))


@pytest.mark.parametrize(
    "shape, error, match",
    [
        ((5, 6, 7), xai.ShapeError, "at most 4 channels"),
        ((28,), xai.ShapeError, r"\(H, W\), \(H, W, C\) or \(C, H, W\)"),
        ((28, 0), xai.ValidationError, "positive ints"),
        ("28x28", xai.ValidationError, "tuple of ints"),
        ((2.5, 3), xai.ValidationError, "positive ints"),
    ],
    ids=["no-channel-axis", "one-axis", "zero", "text", "float"],
)
def test_bad_image_shapes_are_named(shape, error, match):
    """A shape that is no image is an error naming image_shape, the rule and what arrived."""
    with pytest.raises(error, match=match):
        image_layout(shape)


def test_explicit_order_and_wrong_rows():
    """order= settles an ambiguous shape; rows of the wrong size are rejected."""
    layout = image_layout((3, 4, 4), order="chw")
    assert (layout.height, layout.width, layout.channels) == (4, 4, 3)
    with pytest.raises(xai.ShapeError, match="order 'hw' has 2 axes"):
        ImageLayout((3, 4, 4), "hw")
    with pytest.raises(xai.ShapeError, match="hold the 48 values"):
        layout.to_hwc(np.zeros((2, 47)))
