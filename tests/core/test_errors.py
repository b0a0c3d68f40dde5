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


def test_duplicate_name_names_both_plugins():
    """A duplicate registration names both plugins."""
    err = xai.DuplicateNameError("explainer", "ig", "first_plugin", "second_plugin")
    assert "first_plugin" in str(err) and "second_plugin" in str(err)
    assert isinstance(err, xai.PluginError) and err.plugin == "second_plugin"
