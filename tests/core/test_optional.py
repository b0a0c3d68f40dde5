"""xai_core.optional.require: optional dependencies imported on use, with the extra named."""

import pytest

import xai_core as xai
from xai_core.optional import require


def test_an_installed_module_is_returned():
    """An importable module comes back as itself."""
    import json

    assert require("json", extra="test", need="this test") is json


def test_a_missing_module_names_what_needs_it_and_the_extra():
    """A missing module is a CapabilityError with the pip command of its extra."""
    with pytest.raises(
        xai.CapabilityError,
        match=r"plots needs the 'no_such_mod' package: pip install 'xai-core\[plot\]'",
    ):
        require("no_such_mod.sub", extra="plot", need="plots")
