"""The plugin manager: built-ins, entry points, broken plugins, duplicates, unknown names."""

import json
import sys
import types

import numpy as np
import pytest

import xai_core as xai
import xai_core.testing
from xai_core.plugin.manager import (
    BUILTIN_PLUGINS,
    Registry,
    _load,
    get_plugin_manager,
    register_plugin,
)


def _module(name, **hooks):
    mod = types.ModuleType(name)
    for hook_name, fn in hooks.items():
        setattr(mod, hook_name, xai.hookimpl(fn))
    return mod


class Dummy(xai.Explainer):
    """A do-nothing explainer for registration tests."""

    name = "dummy"


def test_builtins_are_registered():
    """The built-in plugin modules are registered and the cpu backend is known."""
    pm = get_plugin_manager(autoload=False)
    for name in BUILTIN_PLUGINS:
        assert pm.has_plugin(name)
    assert "cpu" in Registry.from_plugin_manager(pm).backends


def test_first_party_plugins_load_through_entry_points():
    """shap, lime and ig come in through the xai_core entry-point group, like a third party's."""
    pm = get_plugin_manager()
    for name in ("shap", "lime", "ig"):
        assert pm.has_plugin(name)
    assert not pm.xai_broken
    owners = Registry.from_plugin_manager(pm).owners
    expected = {
        ("explainer", "shap"): "shap",
        ("explainer", "lime"): "lime",
        ("explainer", "ig"): "ig",
        ("tool", "what_if"): "whatif",
        ("tool", "project"): "projector",
        ("tool", "permutation_importance"): "global",
        ("command", "demo"): "demo",
        ("backend", "tpu"): "xai_core.backends.tpu",
    }
    assert {key: owners.get(key) for key in expected} == expected


def test_plugin_without_hooks_is_reported():
    """A plugin whose hooks pluggy cannot see (say, hidden by a module __dir__) is reported."""
    pm = get_plugin_manager(autoload=False)
    _load(pm, "empty", None, lambda: _module("empty"))
    assert not pm.has_plugin("empty")
    assert "implements no hook" in pm.xai_broken[0].error


def test_autoload_can_be_disabled(monkeypatch):
    """XAI_DISABLE_PLUGIN_AUTOLOAD=1 skips entry points but keeps built-ins."""
    monkeypatch.setenv("XAI_DISABLE_PLUGIN_AUTOLOAD", "1")
    pm = get_plugin_manager()
    assert not pm.has_plugin("shap")
    assert pm.has_plugin("xai_core.backends.cpu")


def test_misspelled_hook_is_reported_and_left_out():
    """A hook that matches no spec is named, with the closest hook; the plugin is not registered."""
    pm = get_plugin_manager(autoload=False)
    _load(pm, "typo", None, lambda: _module("typo", xai_register_explainer=lambda: [Dummy]))
    assert not pm.has_plugin("typo")
    (broken,) = pm.xai_broken
    assert (broken.name, broken.stage) == ("typo", "register")
    assert "unknown hook 'xai_register_explainer'" in broken.error
    assert "did you mean 'xai_register_explainers'?" in broken.error
    pm.check_pending()  # nothing unknown is left behind
    assert "dummy" not in Registry.from_plugin_manager(pm).explainers


def test_duplicate_name_is_rejected_with_both_plugins_named():
    """The second plugin to register a name is reported broken, naming both; the first keeps it."""
    pm = get_plugin_manager(autoload=False)
    pm.register(_module("one", xai_register_explainers=lambda: [Dummy]), name="one")
    pm.register(_module("two", xai_register_explainers=lambda: [Dummy]), name="two")
    reg = Registry.from_plugin_manager(pm)
    assert reg.explainers["dummy"] is Dummy and reg.owners[("explainer", "dummy")] == "one"
    (broken,) = reg.broken
    assert broken.name == "two" and "'one'" in broken.error and "'two'" in broken.error


def test_raising_hook_is_recorded_and_others_still_work():
    """A hook that raises is recorded with the plugin's name; other plugins' registrations stand."""

    def explode():
        raise RuntimeError("kaboom")

    pm = get_plugin_manager(autoload=False)
    pm.register(_module("bad", xai_register_explainers=explode), name="bad")
    pm.register(_module("good", xai_register_explainers=lambda: [Dummy]), name="good")
    reg = Registry.from_plugin_manager(pm)
    assert "dummy" in reg.explainers
    (broken,) = reg.broken
    assert (broken.name, broken.stage) == ("bad", "xai_register_explainers")
    assert "RuntimeError: kaboom" in broken.error
    records = {r["name"]: r for r in reg.plugins()}
    assert records["bad"]["status"] == "broken" and records["good"]["registers"] == {
        "explainer": ["dummy"]
    }


class NotAnExplainer:
    """A class with a name that is not an Explainer."""

    name = "impostor"


@pytest.mark.parametrize(
    ("hook", "returned", "message"),
    [
        ("xai_register_backends", [object()], "subclass of Backend, not an instance of object"),
        ("xai_register_explainers", [Dummy()], "subclass of Explainer, not an instance of Dummy"),
        ("xai_register_explainers", [NotAnExplainer], "NotAnExplainer is not one"),
        ("xai_register_explainers", Dummy, "must return a list; got <class"),
        ("xai_register_explainers", "dummy", "must return a list; got 'dummy'"),
        ("xai_register_explainers", 3, "must return a list; got 3"),
        ("xai_register_report_sections", [{"name": "s"}], "a ReportSection, not dict"),
        ("xai_register_cli_commands", [Dummy], "a CliCommand, not the class Dummy"),
        ("xai_register_tools", [lambda: 0], "a Tool, not function"),
    ],
    ids=[
        "instance-backend",
        "instance-explainer",
        "wrong-base-class",
        "class-not-list",
        "string",
        "int",
        "dict-section",
        "class-command",
        "function-tool",
    ],
)
def test_wrong_items_are_reported_and_others_still_work(hook, returned, message):
    """A hook returning the wrong type is reported with the plugin's name and hook; the rest stand."""
    pm = get_plugin_manager(autoload=False)
    pm.register(_module("wrong", **{hook: lambda: returned}), name="wrong")
    pm.register(_module("good", xai_register_explainers=lambda: [Dummy]), name="good")
    reg = Registry.from_plugin_manager(pm)
    assert reg.explainers["dummy"] is Dummy and "cpu" in reg.backends
    assert "plugins" in reg.cli_commands and reg.report_sections
    (broken,) = reg.broken
    assert (broken.name, broken.stage) == ("wrong", hook)
    assert broken.error.startswith("TypeError: ") and message in broken.error
    records = {r["name"]: r for r in reg.plugins()}
    assert records["wrong"]["status"] == "broken" and records["good"]["status"] == "ok"


def test_item_without_name_is_reported():
    """Registering an explainer class with no name string is a broken plugin, not a crash."""
    nameless = type("Nameless", (xai.Explainer,), {"name": None})
    pm = get_plugin_manager(autoload=False)
    pm.register(_module("nameless", xai_register_explainers=lambda: [nameless]), name="nameless")
    reg = Registry.from_plugin_manager(pm)
    assert reg.broken[0].name == "nameless" and "no 'name'" in reg.broken[0].error


def test_hook_that_exits_is_recorded():
    """A hook that calls sys.exit() is recorded like one that raises; the process goes on."""
    pm = get_plugin_manager(autoload=False)
    pm.register(_module("quitter", xai_register_tools=lambda: sys.exit(4)), name="quitter")
    reg = Registry.from_plugin_manager(pm)
    (broken,) = reg.broken
    assert (broken.name, broken.error) == ("quitter", "SystemExit: 4")


def test_hook_with_a_foreign_signature_is_reported():
    """A hook asking for an argument its spec does not have is refused at registration."""
    pm = get_plugin_manager(autoload=False)
    _load(
        pm,
        "greedy",
        "greedy 1.0",
        lambda: _module("greedy", xai_register_backends=lambda config: []),
    )
    assert not pm.has_plugin("greedy")
    (broken,) = pm.xai_broken
    assert (broken.stage, broken.distribution) == ("register", "greedy 1.0")
    assert "PluginValidationError" in broken.error and "config" in broken.error


def test_registry_calls_each_hook_only_when_needed():
    """Looking up CLI commands calls no explainer or backend hook."""
    calls = []
    pm = get_plugin_manager(autoload=False)
    pm.register(
        _module("counted", xai_register_explainers=lambda: calls.append("explainers") or [Dummy]),
        name="counted",
    )
    reg = Registry.from_plugin_manager(pm)
    assert "plugins" in reg.cli_commands and calls == []
    assert reg.explainer("dummy") is Dummy and reg.explainers["dummy"] is Dummy
    assert calls == ["explainers"]  # collected once


def test_unknown_names_list_the_known_ones():
    """Unknown explainers and backends raise UnknownNameError listing what exists."""
    with pytest.raises(xai.UnknownNameError, match=r"Unknown explainer 'ig2'\. Available: "):
        xai.explain(lambda X: X.sum(1), [[1.0]], method="ig2")
    with pytest.raises(xai.UnknownNameError, match=r"Unknown backend 'tpu9'\. Available: .*cpu"):
        xai.get_backend("tpu9")


def test_report_section_and_cli_hooks_register(fresh_registry, monkeypatch, capsys):
    """Report sections and CLI commands from a plugin reach the registry and the CLI."""
    section = xai.ReportSection("dummy_section", Dummy, lambda r: "<p>dummy</p>")
    command = xai.CliCommand("hello", "say hello", lambda args: print("hello from a plugin") or 0)
    pm = get_plugin_manager(autoload=False)
    pm.register(
        _module(
            "ext",
            xai_register_report_sections=lambda: [section],
            xai_register_cli_commands=lambda: [command],
        ),
        name="ext",
    )
    reg = Registry.from_plugin_manager(pm)
    assert section in reg.report_sections and section.handles(Dummy())
    monkeypatch.setattr("xai_core.plugin.manager._DEFAULT", reg)
    from xai_core.cli.main import main

    assert main(["hello"]) == 0
    assert capsys.readouterr().out == "hello from a plugin\n"  # the plugin's command ran


def test_tools_reach_the_facade(fresh_registry, monkeypatch):
    """A tool registered by a plugin is what xai.what_if / xai.tool call; unknown tools list the known ones."""
    tool = xai.Tool("what_if", lambda model, X: ("what-if on", len(X)), "edit datapoints")
    pm = get_plugin_manager(autoload=False)
    pm.register(_module("tools", xai_register_tools=lambda: [tool]), name="tools")
    monkeypatch.setattr("xai_core.plugin.manager._DEFAULT", Registry.from_plugin_manager(pm))
    assert xai.what_if(None, [1, 2]) == ("what-if on", 2)
    assert xai.tool("what_if") is tool
    with pytest.raises(xai.UnknownNameError, match=r"Unknown tool 'project'\. Available: what_if"):
        xai.project([[0.0]])


FACADE_TOOLS = (
    "what_if",
    "project",
    "playground_view",
    "playground_app",
    "permutation_importance",
    "ale",
    "teachable_trainer",
)


@pytest.mark.parametrize("name", FACADE_TOOLS)
def test_facade_tools_show_the_tools_signature_and_docstring(name):
    """inspect.signature, help() and ? see the registered tool's parameters and docstring."""
    import inspect
    import pydoc

    function = xai.tool(name).function
    facade = getattr(xai, name)
    assert inspect.signature(facade) == inspect.signature(function)
    assert "*args" not in str(inspect.signature(facade))
    assert facade.__doc__ == function.__doc__ and inspect.getdoc(facade) == inspect.getdoc(function)
    page = pydoc.render_doc(facade, renderer=pydoc.plaintext)
    assert f"{name}{inspect.signature(function)}" in page
    assert inspect.getdoc(function).splitlines()[0] in page


def test_facade_tool_parameters_by_name():
    """The parameters notebooks complete are the tools' own."""
    import inspect

    assert {"model", "X", "y", "feature_names"} <= set(inspect.signature(xai.what_if).parameters)
    assert {"vectors", "method", "n_components"} <= set(inspect.signature(xai.project).parameters)


def test_facade_tools_follow_the_registry(fresh_registry, monkeypatch):
    """The facade inspects whichever tool is registered now; with none, it shows its own line."""
    import inspect

    def edit(model, X, *, rows=3):
        """Edit some rows."""

    pm = get_plugin_manager(autoload=False)
    pm.register(_module("tools", xai_register_tools=lambda: [xai.Tool("what_if", edit)]))
    monkeypatch.setattr("xai_core.plugin.manager._DEFAULT", Registry.from_plugin_manager(pm))
    assert str(inspect.signature(xai.what_if)) == "(model, X, *, rows=3)"
    assert xai.what_if.__doc__ == "Edit some rows."
    empty = get_plugin_manager(autoload=False)
    monkeypatch.setattr("xai_core.plugin.manager._DEFAULT", Registry.from_plugin_manager(empty))
    assert list(inspect.signature(xai.what_if).parameters) == ["args", "kwargs"]
    assert "the ``what_if`` tool's entry point" in xai.what_if.__doc__
    with pytest.raises(xai.UnknownNameError, match="Unknown tool 'what_if'"):
        xai.what_if(None, [1])


def test_facade_tools_load_no_plugin_until_used():
    """Importing xai_core and reading a tool's name looks nothing up; inspecting it does."""
    import subprocess

    code = (
        "import sys, inspect\n"
        "import xai_core as xai\n"
        "assert xai.what_if.__name__ == 'what_if' and callable(xai.project)\n"
        "assert 'xai_core.plugin.manager' not in sys.modules, 'looked up at import'\n"
        "assert 'feature_names' in inspect.signature(xai.what_if).parameters\n"
        "assert 'xai_whatif' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


class Doubler(xai.Explainer):
    """Attributes twice each input: a registration test with a known answer."""

    name = "doubler_test"

    def explain(self, runner, X, target):
        return xai.Explanation(values=2.0 * X, base_values=np.zeros(len(X)), target=target)


def test_register_plugin_for_the_session(fresh_registry):
    """A plugin registered in the session is explainable at once and forgotten by reset_registry."""
    from xai_core.plugin.manager import register_plugin, reset_registry

    assert "doubler_test" not in xai.list_explainers()
    reg = register_plugin(_module("doubler", xai_register_explainers=lambda: [Doubler]))
    assert reg is xai.get_registry() and reg.owners[("explainer", "doubler_test")] == "doubler"
    assert "shap" in reg.explainers and "cpu" in reg.backends  # the rest is still there
    X = np.array([[1.0, -2.0], [0.5, 3.0]])
    e = xai.explain(lambda X: X, X, method="doubler_test", target=0)
    np.testing.assert_array_equal(e.values, 2.0 * X)
    reset_registry()
    assert "doubler_test" not in xai.list_explainers()


def test_register_plugin_refuses_twice_and_misspelled_hooks(fresh_registry):
    """The same name twice is a ValidationError; a misspelled hook fails and leaves no trace."""
    from pluggy import PluginValidationError

    from xai_core.plugin.manager import register_plugin

    mod = _module("once", xai_register_explainers=lambda: [Doubler])
    register_plugin(mod)
    with pytest.raises(xai.ValidationError, match="registered already; got 'once'"):
        register_plugin(_module("once", xai_register_explainers=lambda: []))
    with pytest.raises(PluginValidationError):
        register_plugin(_module("typo", xai_register_explainer=lambda: []))
    assert not xai.get_registry().plugin_manager.has_plugin("typo")


@pytest.fixture
def misbehaving_entry_points(tmp_path, monkeypatch, fresh_registry):
    """Two installed-looking plugins for one test: a misspelled hook, and sys.exit() at import."""
    import importlib.metadata as md

    (tmp_path / "xai_typo_fixture.py").write_text(
        "import xai_core\n\n\n@xai_core.hookimpl\ndef xai_register_backend():\n    return []\n"
    )
    (tmp_path / "xai_exit_fixture.py").write_text("import sys\n\nsys.exit('no licence found')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    real = md.entry_points
    fakes = [
        md.EntryPoint("typo_fixture", "xai_typo_fixture", "xai_core"),
        md.EntryPoint("exit_fixture", "xai_exit_fixture", "xai_core"),
    ]

    def entry_points(**params):
        found = real(**params)
        return md.EntryPoints([*found, *fakes]) if params.get("group") == "xai_core" else found

    monkeypatch.setattr(md, "entry_points", entry_points)
    yield


def test_misbehaving_entry_points_leave_everything_else_working(misbehaving_entry_points, capsys):
    """`xai plugins` names both broken plugins; `xai backends` and the built-in ig still work."""
    from xai_core.cli.main import main

    assert main(["plugins", "--json"]) == 0
    records = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    typo, exiting = records["typo_fixture"], records["exit_fixture"]
    assert (typo["status"], typo["stage"]) == ("broken", "register")
    assert "did you mean 'xai_register_backends'?" in typo["error"]
    assert (exiting["status"], exiting["stage"]) == ("broken", "import")
    assert exiting["error"] == "SystemExit: no licence found"
    assert all(records[n]["status"] == "ok" for n in ("shap", "lime", "ig", "whatif"))
    assert main(["backends"]) == 0 and "tpu" in capsys.readouterr().out
    assert {b.name for b in xai.get_registry().broken} == {"typo_fixture", "exit_fixture"}
    w = np.array([1.0, -2.0, 3.0])
    e = xai.explain(xai.testing.LinearModel(w[:, None]), np.ones((2, 3)), method="ig", target=0)
    np.testing.assert_allclose(e.values, [w, w], rtol=1e-5)


def test_help_calls_only_the_cli_hook(fresh_registry, capsys):
    """`xai --help` lists plugin commands without calling the explainer, backend or section hooks."""
    from xai_core.cli.main import main

    calls = []
    command = xai.CliCommand("hello", "say hello", lambda args: 0)
    register_plugin(
        _module(
            "lazy",
            xai_register_cli_commands=lambda: [command],
            xai_register_explainers=lambda: calls.append("explainers") or [],
            xai_register_report_sections=lambda: calls.append("sections") or [],
        )
    )
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "say hello" in capsys.readouterr().out and calls == []


def test_command_whose_arguments_fail_leaves_the_cli_working(fresh_registry, capsys):
    """A command whose add_arguments raises is reported when run; the other commands still work."""
    from xai_core.cli.main import main

    def explode(parser):
        raise RuntimeError("no parser for you")

    command = xai.CliCommand("fragile", "breaks on set-up", lambda args: 0, explode)
    register_plugin(_module("fragile_plugin", xai_register_cli_commands=lambda: [command]))
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "breaks on set-up" in capsys.readouterr().out
    assert main(["backends"]) == 0 and "cpu" in capsys.readouterr().out
    assert main(["fragile"]) == 2
    err = capsys.readouterr().err
    assert "plugin 'fragile_plugin' could not set up" in err and "RuntimeError: no parser" in err
