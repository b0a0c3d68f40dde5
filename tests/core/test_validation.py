"""Boundary checks name the argument, the expected shape and what arrived."""

import re

import numpy as np
import pandas as pd
import pytest

import xai_core as xai
from xai_core.validation import check_array, check_choice, check_positive_int, check_target


def test_check_array_accepts_lists_and_frames():
    """Nested lists and numeric DataFrames become float32 arrays."""
    assert check_array([[1, 2], [3, 4]]).dtype == np.float32
    frame = pd.DataFrame({"a": [1.0, 2.0], "b": [3, 4]})
    np.testing.assert_array_equal(check_array(frame), [[1, 3], [2, 4]])


@pytest.mark.parametrize(
    ("X", "kwargs", "error", "words"),
    [
        (
            np.zeros(784),
            {"feature_shape": (784,)},
            xai.ShapeError,
            "X must have shape (n_samples, 784); got an array of shape (784,)",
        ),
        (np.zeros((2, 5)), {"feature_shape": (4,)}, xai.ShapeError, "got an array of shape (2, 5)"),
        (np.zeros((0, 4)), {}, xai.ValidationError, "at least 1 sample"),
        (
            np.array([[1.0, np.nan]]),
            {},
            xai.ValidationError,
            "NaN or infinite value(s); the first is at index (0, 1)",
        ),
        (np.array([[np.inf, 1.0]]), {}, xai.ValidationError, "NaN or infinite"),
        (np.array([["a", "b"]]), {}, xai.ValidationError, "must be numeric"),
        (
            pd.DataFrame({"city": ["x", "y"], "n": [1, 2]}),
            {},
            xai.ValidationError,
            "['city'] are not numeric",
        ),
        (None, {}, xai.ValidationError, "got None"),
    ],
    ids=["1d", "features", "empty", "nan", "inf", "strings", "frame-category", "none"],
)
def test_check_array_rejects(X, kwargs, error, words):
    """Bad arrays raise with a message that says what was expected and what arrived."""
    with pytest.raises(error) as info:
        check_array(X, **kwargs)
    assert words in str(info.value)


def test_check_array_names_the_argument():
    """The argument's name leads the message."""
    with pytest.raises(xai.ShapeError, match="^background must have shape"):
        check_array(np.zeros(3), "background")


def test_check_target():
    """Targets broadcast from an int, keep per-row arrays and reject out-of-range values."""
    np.testing.assert_array_equal(check_target(2, 3, 5), [2, 2, 2])
    np.testing.assert_array_equal(check_target([0, 4, 1], 3, 5), [0, 4, 1])
    with pytest.raises(xai.ValidationError, match=r"must be in \[0, 5\).*got 5"):
        check_target(5, 3, 5)
    with pytest.raises(xai.ShapeError, match=r"shape \(3,\); got shape \(2,\)"):
        check_target([0, 1], 3, 5)
    with pytest.raises(xai.ValidationError, match="integer"):
        check_target("cat", 3, 5)


def test_check_choice_and_positive_int():
    """Choices list the valid ones; counts must be positive integers."""
    assert check_choice("ws", "dataflow", ["ws", "os", "is"]) == "ws"
    with pytest.raises(xai.UnknownNameError, match="Available: is, os, ws"):
        check_choice("xx", "dataflow", ["ws", "os", "is"])
    assert check_positive_int(3, "steps") == 3
    for bad in (0, -1, 2.5, True, "3"):
        with pytest.raises(xai.ValidationError, match="steps must be a positive integer"):
            check_positive_int(bad, "steps")


def test_scalar_option_checks():
    """Integers, floats, bools and seeds are checked with messages that name the option and the bound."""
    from xai_core.validation import check_bool, check_float, check_int, check_seed

    assert check_int(0, "n", minimum=0) == 0 and check_int(None, "n", allow_none=True) is None
    with pytest.raises(xai.ValidationError, match=r"n must be an integer >= 2 or None; got 1"):
        check_int(1, "n", minimum=2, allow_none=True)
    assert (
        check_float(0.5, "rate", high=1.0) == 0.5 and check_float(0, "rate", inclusive=True) == 0.0
    )
    for bad in (0.0, 2.0, float("nan"), True, "0.5"):
        with pytest.raises(xai.ValidationError, match=r"rate must be a finite number > 0 and <= 1"):
            check_float(bad, "rate", high=1.0)
    assert check_bool(False, "flag") is False and check_bool(None, "flag", allow_none=True) is None
    with pytest.raises(xai.ValidationError, match="flag must be True or False; got 1"):
        check_bool(1, "flag")
    assert check_seed(7) == 7 and check_seed(None, allow_none=True) is None
    with pytest.raises(xai.ValidationError, match="seed must be an integer >= 0"):
        check_seed(-1)


def test_check_array_accepts_flat_rows_with_a_sample_shape():
    """accept_flat reshapes rows of prod(feature_shape) values; flatten returns flat rows."""
    flat = np.arange(2 * 12, dtype=float).reshape(2, 12)
    images = check_array(flat, "background", feature_shape=(3, 4), accept_flat=True)
    assert images.shape == (2, 3, 4)
    np.testing.assert_array_equal(images.reshape(2, 12), flat)
    assert check_array(images, feature_shape=(3, 4), flatten=True).shape == (2, 12)
    assert check_array(flat, feature_shape=(3, 4), flatten=True).shape == (2, 12)
    with pytest.raises(xai.ShapeError, match=r"\(n_samples, 3, 4\) or flat rows \(n_samples, 12\)"):
        check_array(np.zeros((2, 11)), feature_shape=(3, 4), accept_flat=True)
    with pytest.raises(xai.ShapeError, match=r"^background must have shape \(n_rows, 12\)"):
        check_array(np.zeros((2, 3, 4)), "background", feature_shape=(12,), rows="n_rows")


def test_progress_rule():
    """progress=None shows bars for long work only; True always; False never."""
    from xai_core.progress import LONG_WORK_UNITS, progress_bar, show_progress

    assert show_progress(None, LONG_WORK_UNITS) and not show_progress(None, LONG_WORK_UNITS - 1)
    assert show_progress(True, 1) and not show_progress(False, 10**6)
    assert show_progress(None, 1, long=True) and not show_progress(None, 10**6, long=False)
    with pytest.raises(xai.ValidationError, match="progress must be True, False or None"):
        show_progress("yes", 1)
    with progress_bar(3, progress=None, desc="x") as bar:
        assert bar.disable


@pytest.mark.parametrize(
    ("value", "bounds", "words"),
    [
        ("0.1", {}, "lr must be a number; got '0.1'."),
        (True, {}, "lr must be a number; got True."),
        (float("inf"), {}, "lr must be finite; got inf."),
        (float("nan"), {}, "lr must be finite; got nan."),
        (0, {"low": 0, "high": 10, "open_low": True}, "lr must be in (0, 10]; got 0."),
        (11, {"low": 0, "high": 10, "open_low": True}, "lr must be in (0, 10]; got 11."),
        (float("nan"), {"low": 0, "high": 1}, "lr must be in [0, 1]; got nan."),
        (1.0, {"low": 0, "high": 1, "open_high": True}, "lr must be in [0, 1); got 1.0."),
        (-1, {"low": 0}, "lr must be in [0, inf); got -1."),
        (float("inf"), {"low": 0}, "lr must be in [0, inf); got inf."),
    ],
    ids=["text", "bool", "inf", "nan", "low", "high", "nan-in", "open-high", "below", "inf-in"],
)
def test_check_number_names_the_interval(value, bounds, words):
    """A number outside its interval, infinite or not a number at all is refused, the interval named."""
    from xai_core.validation import check_number

    with pytest.raises(xai.ValidationError, match=re.escape(words)):
        check_number(value, "lr", **bounds)


def test_check_number_returns_floats_inside_the_interval():
    """The bounds are included unless opened; numpy scalars and ints come back as float."""
    from xai_core.validation import check_number

    assert check_number(np.float32(0.5), "x") == 0.5 and type(check_number(3, "x")) is float
    assert check_number(0, "x", low=0, high=1) == 0.0 and check_number(1, "x", low=0, high=1) == 1.0
    assert check_number(-1e300, "x") == -1e300
