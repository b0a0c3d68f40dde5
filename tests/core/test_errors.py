"""Errors subclass both XaiError and the builtin a caller would catch."""

import pytest

import xai_core as xai
from xai_core import errors


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (errors.ValidationError, ValueError),
        (errors.ShapeError, ValueError),
        (errors.UnknownNameError, LookupError),
        (errors.CapabilityError, TypeError),
        (errors.PluginError, RuntimeError),
        (errors.ModelFormatError, ValueError),
        (errors.DataError, ValueError),
        (errors.ContractError, AssertionError),
    ],
    ids=lambda c: c.__name__,
)
def test_error_is_also_builtin(cls, builtin):
    """Each error class is catchable as XaiError and as its builtin."""
    assert issubclass(cls, xai.XaiError)
    assert issubclass(cls, builtin)


def test_unknown_name_lists_known_ones():
    """An unknown name's message lists the known names, sorted."""
    err = xai.UnknownNameError("explainer", "ig2", ["shap", "ig", "lime"])
    assert str(err) == "Unknown explainer 'ig2'. Available: ig, lime, shap."
    assert err.known == ["ig", "lime", "shap"]


def test_a_long_list_of_names_is_cut_to_the_closest():
    """Past LIST_ALL_NAMES known names, the message keeps the few closest (case ignored), not all."""
    from xai_core.errors import CLOSEST_NAMES, LIST_ALL_NAMES

    columns = [f"pixel_{i // 28}_{i % 28}" for i in range(784)] + ["label"]
    err = xai.UnknownNameError("column", "Label", columns)
    assert str(err) == "Unknown column 'Label'. Closest of the 785 known: label."
    assert err.closest == ["label"] and len(err.known) == 785
    near = xai.UnknownNameError("column", "pixel_3_277", columns)
    assert 1 < len(near.closest) <= CLOSEST_NAMES and "pixel_3_27" in near.closest
    assert str(near).count("pixel_") == 1 + len(near.closest) and len(str(near)) < 200
    far = xai.UnknownNameError("column", "zzz", columns)
    assert far.closest == [] and "None of the 785 known is close" in str(far)
    assert "pixel_0_0, pixel_0_1" in str(far) and len(str(far)) < 200
    few = [f"q{i}" for i in range(LIST_ALL_NAMES)]
    assert str(xai.UnknownNameError("k", "x", few)).count("q") == LIST_ALL_NAMES


def test_unknown_name_rebuilds_whole():
    """An UnknownNameError rebuilt from its __reduce__ (as one sent back from a process worker
    is) keeps its message and names."""
    import copy

    err = xai.UnknownNameError("column", "zzz", [f"c{i}" for i in range(40)])
    back = copy.deepcopy(err)  # goes through __reduce__, as pickling does
    assert str(back) == str(err) and back.known == err.known and back.kind == "column"


def test_duplicate_name_names_both_plugins():
    """A duplicate registration names both plugins."""
    err = xai.DuplicateNameError("explainer", "ig", "first_plugin", "second_plugin")
    assert "first_plugin" in str(err) and "second_plugin" in str(err)
    assert isinstance(err, xai.PluginError) and err.plugin == "second_plugin"
