"""Old module paths: each still imports, as the module at its new path, with a DeprecationWarning."""

import importlib
import sys
import warnings

import pytest
from packaging.version import Version

import xai_core as xai
from xai_core import _moved


def _forget(old: str) -> None:
    sys.modules.pop(old, None)
    parent, _, name = old.rpartition(".")
    package = sys.modules.get(parent)
    if package is not None and name in vars(package):  # set by an earlier import of the old path
        delattr(package, name)


@pytest.fixture
def forget_old_paths():
    """Forget earlier imports of the old names before and after, so each import meets the finder."""
    for old in _moved.MOVED:
        _forget(old)
    yield
    for old in _moved.MOVED:
        _forget(old)


@pytest.mark.parametrize(("old", "new"), list(_moved.MOVED.items()), ids=list(_moved.MOVED))
def test_old_path_is_the_new_module_with_a_warning(forget_old_paths, old, new):
    """The old path gives the very module at the new one and warns naming both and the removal."""
    with pytest.warns(DeprecationWarning) as caught:
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__.name == new  # its own spec, kept
    messages = [str(w.message) for w in caught if w.category is DeprecationWarning]
    assert f"{old} moved to {new};" in messages[0]
    assert f"The old path goes in xai-core {_moved.REMOVAL_VERSION}." in messages[0]


def test_the_warning_points_at_the_import_statement(forget_old_paths):
    """The warning is reported at the user's import line, not inside importlib."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import xai_core.runner  # noqa: F401
        from xai_core import agreement  # noqa: F401
    moved = [w for w in caught if w.category is DeprecationWarning]
    assert [w.filename for w in moved] == [__file__, __file__]
    assert "xai_core.runner moved" in str(moved[0].message)
    assert "xai_core.agreement moved" in str(moved[1].message)


def test_an_old_path_warns_once_then_is_cached(forget_old_paths):
    """Once imported, the old name is in sys.modules as the new module, and warns no more."""
    with pytest.warns(DeprecationWarning):
        importlib.import_module("xai_core.metrics")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (
            importlib.import_module("xai_core.metrics") is sys.modules["xai_core.compare.metrics"]
        )


def test_removal_version_is_stated_and_still_ahead():
    """The docstring names the removal version, and this release comes before it."""
    assert f"until {_moved.REMOVAL_VERSION}" in _moved.__doc__
    assert Version(xai.__version__) < Version(_moved.REMOVAL_VERSION)


def test_unknown_old_paths_are_not_invented():
    """A name that never existed is still a ModuleNotFoundError."""
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("xai_core.no_such_module")
