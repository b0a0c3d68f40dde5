"""The plugin manager: hook specs, built-in plugins, then third-party entry points.

One broken plugin never blocks the rest. A plugin that fails to import (raises, or calls
``sys.exit()``), that implements a hook no specification has (a misspelled name) or no hook
at all, or whose hook signature does not match is left out and recorded with its name, distribution and
error; :class:`~xai_core.plugin.registry.Registry` records the hooks that misbehave when
called. ``xai plugins`` shows both.

This module also keeps the session's default plugin manager and registry
(:func:`get_registry`, :func:`register_plugin`, :func:`reset_registry`).
"""

from __future__ import annotations

import difflib
import importlib
import os
import traceback
from collections.abc import Callable
from typing import Any

import pluggy

from xai_core.errors import ValidationError
from xai_core.plugin import hookspecs
from xai_core.plugin.registry import BrokenPlugin, Registry

__all__ = [
    "AUTOLOAD_ENV",
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "BrokenPlugin",
    "Registry",
    "get_plugin_manager",
    "get_registry",
    "register_plugin",
    "reset_registry",
    "unknown_hooks",
]

ENTRY_POINT_GROUP = "xai_core"
AUTOLOAD_ENV = "XAI_DISABLE_PLUGIN_AUTOLOAD"

#: Internal plugin modules, registered before any entry point.
BUILTIN_PLUGINS: tuple[str, ...] = (
    "xai_core.backends.cpu",
    "xai_core.backends.gpu",
    "xai_core.backends.tpu",
    "xai_core.backends.edgetpu",
    "xai_core.backends.pod",
    "xai_core.cli.commands",
    "xai_core.report.sections",
    "xai_core.compare.sections",
)


def get_plugin_manager(*, autoload: bool | None = None) -> pluggy.PluginManager:
    """Build a new plugin manager: specs, built-ins, then the ``xai_core`` entry points.

    Parameters
    ----------
    autoload : bool, optional
        Whether to load entry points. By default they are loaded unless the environment
        variable ``XAI_DISABLE_PLUGIN_AUTOLOAD`` is set to a non-empty value.

    Returns
    -------
    pluggy.PluginManager
        With an extra attribute ``xai_broken``: the list of :class:`BrokenPlugin` that
        failed to load, and ``xai_distributions``: plugin name -> "dist version".
    """
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    pm.xai_broken = []
    pm.xai_distributions = {}
    for module_name in BUILTIN_PLUGINS:
        _load(pm, module_name, f"xai-core {_version()}", _importer(module_name))
    if autoload is None:
        autoload = not os.environ.get(AUTOLOAD_ENV)
    if autoload:
        _load_entry_points(pm)
    return pm


def _version() -> str:
    from xai_core import __version__

    return __version__


def _importer(module_name: str) -> Callable[[], Any]:
    return lambda: importlib.import_module(module_name)


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    import importlib.metadata

    seen: set[str] = set()
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in seen or pm.has_plugin(ep.name):
            continue  # the same distribution visible twice on sys.path
        seen.add(ep.name)
        dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist is not None else None
        _load(pm, ep.name, dist, ep.load)


def _load(pm: pluggy.PluginManager, name: str, dist: str | None, load: Callable[[], Any]) -> None:
    """Import one plugin and register it, or record why not; never raises for the plugin."""

    def broken(stage: str, exc: BaseException | None, message: str = "") -> None:
        error = message or f"{type(exc).__name__}: {exc}"
        details = traceback.format_exc() if exc is not None else ""
        pm.xai_broken.append(BrokenPlugin(name, dist, error, stage, details))

    try:
        plugin = load()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - SystemExit too: sys.exit() at import
        broken("import", exc)
        return
    try:
        pm.register(plugin, name=name)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a signature that matches no spec
        broken("register", exc)
        return
    unknown = unknown_hooks(pm, plugin)
    if unknown or not pm.get_hookcallers(plugin):
        pm.unregister(name=name)
        problem = "; ".join(unknown) or (
            "implements no hook: no function decorated @xai_core.hookimpl is listed by "
            "dir() of the plugin"
        )
        broken("register", None, f"PluginValidationError: {problem}")
        return
    pm.xai_distributions[name] = dist


def unknown_hooks(pm: pluggy.PluginManager, plugin: Any) -> list[str]:
    """What is wrong with ``plugin``'s hooks that match no specification (misspelled names).

    Returns
    -------
    list of str
        One message per unknown hook, naming the closest known hooks; empty when every
        hook of the plugin has a specification (or is marked ``optionalhook``).
    """
    known = sorted(n for n, h in vars(pm.hook).items() if not n.startswith("_") and h.has_spec())
    messages = []
    for caller in pm.get_hookcallers(plugin) or []:
        if caller.has_spec():
            continue
        impls = [i for i in caller.get_hookimpls() if i.plugin is plugin]
        if all(i.optionalhook for i in impls):
            continue
        close = difflib.get_close_matches(caller.name, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else "."
        messages.append(f"unknown hook {caller.name!r}{hint} Known hooks: {', '.join(known)}.")
    return messages


_DEFAULT: Registry | None = None


def get_registry() -> Registry:
    """The registry of the default plugin manager, built on first use and then kept.

    Building it imports the plugins; their hooks are called when what they register is
    first asked for.
    """
    global _DEFAULT
    registry = _DEFAULT
    if registry is None:
        registry = _DEFAULT = Registry.from_plugin_manager(get_plugin_manager())
    return registry


def reset_registry() -> None:
    """Forget the default registry, so the next call rebuilds it (after installing a plugin)."""
    global _DEFAULT
    _DEFAULT = None


def register_plugin(plugin: Any, name: str | None = None) -> Registry:
    """Register ``plugin`` for this session, without installing a distribution.

    The plugin joins the default registry's plugin manager and the registry is rebuilt,
    so :func:`xai_core.explain`, :func:`xai_core.get_backend`, reports and tools see what
    it registers at once. :func:`reset_registry` forgets it again (entry points stay).

    Parameters
    ----------
    plugin : module or object
        Has functions decorated with :data:`xai_core.hookimpl`, named after the hooks.
    name : str, optional
        The plugin's name; by default pluggy's (a module's ``__name__``).

    Returns
    -------
    Registry
        The rebuilt default registry; a name that collides with another plugin's, or a
        hook that raises or returns the wrong type, is reported in its ``broken`` list,
        as for installed plugins.

    Raises
    ------
    ValidationError
        When the plugin, or a plugin of the same name, is already registered.
    pluggy.PluginValidationError
        When a hook implementation matches no hook (a misspelled name); nothing is registered.
    """
    global _DEFAULT
    pm = get_registry().plugin_manager
    name = name or pm.get_canonical_name(plugin)
    if pm.is_registered(plugin) or pm.has_plugin(name):
        raise ValidationError(
            f"plugin must not be registered already; got {name!r}, which is (pass another "
            "name=, or call xai_core.plugin.manager.reset_registry() to start again)."
        )
    registered_name = pm.register(plugin, name=name)
    unknown = unknown_hooks(pm, plugin)
    if unknown:
        pm.unregister(name=registered_name)
        raise pluggy.PluginValidationError(plugin, f"plugin {name!r}: {'; '.join(unknown)}")
    _DEFAULT = Registry.from_plugin_manager(pm)
    return _DEFAULT
