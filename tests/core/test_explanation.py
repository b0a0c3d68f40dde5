"""Explanation is immutable, checks its shapes, slices by row and renders safely."""

import json
from dataclasses import replace

import numpy as np
import pytest

import xai_core as xai


def make(n=3, f=4, **kw):
    """An explanation of n rows over f features."""
    rng = np.random.default_rng(0)
    args = dict(
        values=rng.normal(size=(n, f)),
        base_values=np.zeros(n),
        target=np.arange(n) % 2,
        feature_names=[f"f{i}" for i in range(f)],
        output_names=["no", "yes"],
        method="m",
        backend="cpu",
        meta={"delta": np.arange(n, dtype=float), "seed": 0},
    )
    args.update(kw)
    return xai.Explanation(**args)


def test_immutable():
    """Fields cannot be reassigned, arrays cannot be written, meta cannot be changed."""
    e = make()
    with pytest.raises(AttributeError):
        e.method = "x"
    with pytest.raises(ValueError):
        e.values[0, 0] = 1.0
    with pytest.raises(TypeError):
        e.meta["seed"] = 1


def test_input_arrays_are_copied():
    """Changing the caller's array afterwards does not change the explanation."""
    values = np.ones((1, 2))
    e = xai.Explanation(values=values, base_values=[0.0], target=[0])
    values[0, 0] = 5
    assert e.values[0, 0] == 1


def test_a_read_only_input_is_copied_and_own_arrays_are_shared():
    """A caller's read-only array is copied (it can be made writable again); a result made
    from an explanation shares its arrays."""
    values = np.ones((2, 2))
    values.setflags(write=False)
    e = xai.Explanation(values=values, base_values=[0.0, 0.0], target=[0, 1])
    assert not np.shares_memory(e.values, values)
    values.setflags(write=True)
    values[0, 0] = 5
    assert e.values[0, 0] == 1
    remade = replace(e, method="other")
    assert remade.values is e.values and remade.base_values is e.base_values


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"values": np.zeros(3)}, "values must have shape (n_samples, *input_shape)"),
        ({"base_values": np.zeros(2)}, "base_values must have shape (3,)"),
        ({"target": np.zeros(4)}, "target must have shape (3,)"),
        ({"feature_names": ["a"]}, "feature_names must have 4 names"),
        ({"data": np.zeros((3, 5))}, "data must have the shape of values"),
    ],
    ids=["values", "base", "target", "names", "data"],
)
def test_shapes_are_checked(kw, words):
    """Inconsistent shapes raise ShapeError naming the field."""
    with pytest.raises(xai.ShapeError) as info:
        make(**kw)
    assert words in str(info.value)


def test_row_slicing_slices_per_row_meta():
    """e[1:] keeps rows 1.. of values and of per-row meta arrays."""
    e = make()
    sub = e[1:]
    assert len(sub) == 2 and sub.values.shape == (2, 4)
    np.testing.assert_array_equal(sub.meta["delta"], [1.0, 2.0])
    assert e[0].values.shape == (4,) and e[[0]].values.shape == (1, 4)
    np.testing.assert_array_equal(e[0].meta["delta"], [0.0])  # meta stays per row


def test_to_dict_is_json_ready():
    """to_dict() holds only plain types."""
    d = make().to_dict()
    assert json.loads(json.dumps(d))["feature_names"] == ["f0", "f1", "f2", "f3"]


def test_top_features_and_target_names():
    """Top features sort by absolute value; target names come from output names."""
    e = xai.Explanation(
        values=[[0.1, -3.0, 2.0]],
        base_values=[0],
        target=[1],
        output_names=["a", "b"],
        feature_names=["x", "y", "z"],
    )
    assert [n for n, _ in e.top_features(0, 2)] == ["y", "z"]
    assert e.target_names == ("b",)


def test_repr_html_escapes_user_strings(hostile):
    """Feature names, output names and method are escaped in the notebook view."""
    e = make(feature_names=[hostile] * 4, output_names=[hostile, hostile], method=hostile)
    html = e._repr_html_()
    assert html.count("<script") == 3  # the JSON data, the live controls' template, the script
    assert "<img src=x" not in html and 'onmouseover="' not in html


def test_to_html_is_a_full_offline_page(hostile):
    """to_html() gives a whole page with the explanation and no external resources."""
    page = make(feature_names=[hostile] * 4).to_html(title=hostile)
    assert page.lstrip().lower().startswith("<!doctype html>")
    assert "http://" not in page and "https://" not in page
    assert "<img src=x" not in page
