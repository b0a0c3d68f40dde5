"""The plugin manager: hook specs, built-in plugins, then third-party entry points.

One broken plugin never blocks the rest: a plugin that fails to import, or whose hook
raises, is recorded in :attr:`Registry.broken` with its name, distribution and error, and
``xai plugins`` shows it.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import traceback
from dataclasses import dataclass, field
from typing import Any

import pluggy

from xai_core.errors import DuplicateNameError, UnknownNameError, ValidationError
from xai_core.plugin import hookspecs

__all__ = [
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "BrokenPlugin",
    "Registry",
    "get_plugin_manager",
    "get_registry",
    "register_plugin",
    "reset_registry",
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


@dataclass(frozen=True)
class BrokenPlugin:
    """A plugin that failed to load or whose hook raised."""

    name: str
    distribution: str | None
    error: str
    stage: str  # "import" or the hook's name
    details: str = ""


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
        failed to import, and ``xai_distributions``: plugin name -> "dist version".
    """
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    pm.xai_broken = []
    pm.xai_distributions = {}
    for module_name in BUILTIN_PLUGINS:
        pm.register(importlib.import_module(module_name), name=module_name)
        pm.xai_distributions[module_name] = f"xai-core {_version()}"
    if autoload is None:
        autoload = not os.environ.get(AUTOLOAD_ENV)
    if autoload:
        _load_entry_points(pm)
    pm.check_pending()
    return pm


def _version() -> str:
    from xai_core import __version__

    return __version__


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    seen: set[str] = set()
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in seen or pm.has_plugin(ep.name):
            continue  # the same distribution visible twice on sys.path
        seen.add(ep.name)
        dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist is not None else None
        try:
            plugin = ep.load()
            pm.register(plugin, name=ep.name)
        except Exception as exc:  # noqa: BLE001 - any failure of a plugin is reported, not raised
            pm.xai_broken.append(
                BrokenPlugin(
                    ep.name, dist, f"{type(exc).__name__}: {exc}", "import", traceback.format_exc()
                )
            )
            continue
        pm.xai_distributions[ep.name] = dist


@dataclass
class Registry:
    """What the plugins registered, by name, with the plugin that registered each.

    Attributes
    ----------
    explainers, backends : dict
        name -> class.
    report_sections : list
        Report sections in registration order.
    cli_commands, tools : dict
        name -> command, name -> tool.
    owners : dict
        (kind, name) -> plugin name.
    broken : list of BrokenPlugin
    """

    plugin_manager: pluggy.PluginManager
    explainers: dict[str, type] = field(default_factory=dict)
    backends: dict[str, type] = field(default_factory=dict)
    report_sections: list[Any] = field(default_factory=list)
    cli_commands: dict[str, Any] = field(default_factory=dict)
    tools: dict[str, Any] = field(default_factory=dict)
    owners: dict[tuple[str, str], str] = field(default_factory=dict)
    broken: list[BrokenPlugin] = field(default_factory=list)

    @classmethod
    def from_plugin_manager(cls, pm: pluggy.PluginManager) -> Registry:
        """Call every registering hook of every plugin, one plugin at a time."""
        reg = cls(pm, broken=list(getattr(pm, "xai_broken", [])))
        reg._collect("xai_register_backends", "backend", reg.backends)
        reg._collect("xai_register_explainers", "explainer", reg.explainers)
        reg._collect("xai_register_cli_commands", "command", reg.cli_commands)
        reg._collect("xai_register_tools", "tool", reg.tools)
        sections: dict[str, Any] = {}
        reg._collect("xai_register_report_sections", "report section", sections)
        reg.report_sections = list(sections.values())
        return reg

    def _collect(self, hook_name: str, kind: str, into: dict[str, Any]) -> None:
        hook = getattr(self.plugin_manager.hook, hook_name)
        # get_hookimpls() is in registration order (pluggy *calls* them last-first).
        for impl in hook.get_hookimpls():
            plugin_name = impl.plugin_name
            try:
                items = impl.function()
                items = list(items or [])
                for item in items:
                    name = getattr(item, "name", None)
                    if not isinstance(name, str) or not name:
                        raise TypeError(
                            f"{hook_name} returned {item!r}, which has no 'name' string"
                        )
            except Exception as exc:  # noqa: BLE001 - a misbehaving hook is reported, not raised
                dist = getattr(self.plugin_manager, "xai_distributions", {}).get(plugin_name)
                self.broken.append(
                    BrokenPlugin(
                        plugin_name,
                        dist,
                        f"{type(exc).__name__}: {exc}",
                        hook_name,
                        traceback.format_exc(),
                    )
                )
                continue
            for item in items:
                owner = self.owners.get((kind, item.name))
                if owner is not None:  # the first one wins; the second is reported with both names
                    dup = DuplicateNameError(kind, item.name, owner, plugin_name)
                    dist = getattr(self.plugin_manager, "xai_distributions", {}).get(plugin_name)
                    self.broken.append(BrokenPlugin(plugin_name, dist, str(dup), hook_name))
                    continue
                self.owners[(kind, item.name)] = plugin_name
                into[item.name] = item

    def explainer(self, name: str) -> type:
        """The explainer class registered as ``name``; an unknown name lists the known ones."""
        try:
            return self.explainers[name]
        except (KeyError, TypeError):
            raise UnknownNameError("explainer", name, list(self.explainers)) from None

    def backend(self, name: str) -> type:
        """The backend class registered as ``name``; an unknown name lists the known ones."""
        try:
            return self.backends[name]
        except (KeyError, TypeError):
            raise UnknownNameError("backend", name, list(self.backends)) from None

    def tool(self, name: str) -> Any:
        """The tool registered as ``name``; an unknown name lists the known ones."""
        try:
            return self.tools[name]
        except (KeyError, TypeError):
            raise UnknownNameError("tool", name, list(self.tools)) from None

    def plugins(self) -> list[dict[str, Any]]:
        """One record per plugin: name, distribution, hooks implemented, what it registered."""
        pm = self.plugin_manager
        dists = getattr(pm, "xai_distributions", {})
        records = []
        for name, plugin in pm.list_name_plugin():
            if plugin is None:
                continue
            hooks = sorted(h.name for h in pm.get_hookcallers(plugin) or [])
            registers = {
                kind: sorted(
                    n for (k, n), owner in self.owners.items() if k == kind and owner == name
                )
                for kind in ("explainer", "backend", "tool", "report section", "command")
            }
            records.append(
                {
                    "name": name,
                    "distribution": dists.get(name),
                    "hooks": hooks,
                    "registers": {k: v for k, v in registers.items() if v},
                    "status": "ok",
                }
            )
        for b in self.broken:
            records.append(
                {
                    "name": b.name,
                    "distribution": b.distribution,
                    "hooks": [],
                    "registers": {},
                    "status": "broken",
                    "stage": b.stage,
                    "error": b.error,
                }
            )
        return records


_DEFAULT: Registry | None = None


def get_registry() -> Registry:
    """The registry of the default plugin manager, built on first use and then kept."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Registry.from_plugin_manager(get_plugin_manager())
    return _DEFAULT


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
        The rebuilt default registry; a name that collides with another plugin's is
        reported in its ``broken`` list, as for installed plugins.

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
    try:
        pm.check_pending()
    except Exception:
        pm.unregister(name=registered_name)
        raise
    _DEFAULT = Registry.from_plugin_manager(pm)
    return _DEFAULT
