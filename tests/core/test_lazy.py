"""lazy_exports: a package's public names import their module on first use."""

import sys

import pytest

import xai_core as xai
from xai_core.plugin.manager import Registry, _load, get_plugin_manager


@pytest.fixture
def light_package(tmp_path, monkeypatch):
    """A plugin package whose explainer module records that it was imported."""
    pkg = tmp_path / "xai_light_fixture"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import xai_core\n"
        "from xai_core import hookimpl\n\n"
        "__getattr__, __dir__, __all__ = xai_core.lazy_exports(\n"
        "    __name__, {'heavy': ['Heavy']}, eager=['xai_register_explainers']\n"
        ")\n\n\n"
        "@hookimpl\n"
        "def xai_register_explainers():\n"
        "    from xai_light_fixture.heavy import Heavy\n\n"
        "    return [Heavy]\n"
    )
    (pkg / "heavy.py").write_text(
        "import xai_core\n\n\nclass Heavy(xai_core.Explainer):\n    name = 'heavy_fixture'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    for name in [m for m in sys.modules if m.startswith("xai_light_fixture")]:
        del sys.modules[name]


def test_names_load_on_first_use(light_package):
    """Importing the package leaves the submodule alone; the first use imports it, once."""
    import xai_light_fixture as pkg

    assert "xai_light_fixture.heavy" not in sys.modules
    assert pkg.__all__ == ["Heavy", "xai_register_explainers"]
    assert {"Heavy", "xai_register_explainers"} <= set(dir(pkg))
    heavy = pkg.Heavy
    assert "xai_light_fixture.heavy" in sys.modules and vars(pkg)["Heavy"] is heavy
    with pytest.raises(AttributeError, match="has no attribute 'Light'"):
        pkg.Light  # noqa: B018


def test_pluggy_finds_the_hooks_of_a_lazy_package(light_package):
    """The hook is registered without importing the submodule; calling it imports it."""
    import xai_light_fixture

    pm = get_plugin_manager(autoload=False)
    _load(pm, "light", None, lambda: xai_light_fixture)
    assert pm.has_plugin("light") and "xai_light_fixture.heavy" not in sys.modules
    assert Registry.from_plugin_manager(pm).explainer("heavy_fixture").__name__ == "Heavy"


def test_the_facade_is_lazy_too():
    """The core facade lists its lazy names and submodules."""
    assert {"explain", "Report", "nn", "testing", "lazy_exports"} <= set(dir(xai))
    with pytest.raises(AttributeError):
        xai.no_such_name  # noqa: B018
