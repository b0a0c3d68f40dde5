"""The registry: what the plugins registered, by name (calls resolve names through :mod:`~xai_core.plugin.resolve`).

A :class:`Registry` wraps a plugin manager and calls each registering hook the first time
what it registers is asked for, one plugin at a time: ``xai --help`` calls only the CLI
hook, ``xai.explain`` only the explainer and backend hooks. Whatever a plugin's hook does
wrong (raises, exits, returns something that is not a list, returns an instance where a
class belongs, a class of the wrong kind, a name another plugin took) is recorded in
:attr:`Registry.broken` with the plugin's name, and every other plugin's registrations stand.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from xai_core.errors import DuplicateNameError, UnknownNameError

__all__ = ["KINDS", "BrokenPlugin", "Kind", "Registry"]


@dataclass(frozen=True)
class BrokenPlugin:
    """A plugin that failed to load, or whose hook raised or returned something unusable.

    Attributes
    ----------
    name : str
        The plugin's name (its entry point's name, or the name it was registered with).
    distribution : str or None
        ``"dist version"`` of the distribution that installed it, when known.
    error : str
        ``"ExceptionType: message"``, one line.
    stage : str
        ``"import"`` (loading the module), ``"register"`` (checking its hooks) or the
        name of the hook that misbehaved.
    details : str
        The traceback, when there is one.
    """

    name: str
    distribution: str | None
    error: str
    stage: str
    details: str = ""


def _class_of(base: Callable[[], type]) -> Callable[[Any], str | None]:
    def check(item: Any) -> str | None:
        expected = base()
        if not isinstance(item, type):
            return f"a subclass of {expected.__name__}, not an instance of {type(item).__name__}"
        if not issubclass(item, expected):
            return f"a subclass of {expected.__name__}; {item.__name__} is not one"
        return None

    return check


def _instance_of(cls: Callable[[], type]) -> Callable[[Any], str | None]:
    def check(item: Any) -> str | None:
        expected = cls()
        if isinstance(item, expected):
            return None
        got = f"the class {item.__name__}" if isinstance(item, type) else type(item).__name__
        return f"a {expected.__name__}, not {got}"

    return check


def _explainer() -> type:
    from xai_core.attribution.explainer import Explainer

    return Explainer


def _backend() -> type:
    from xai_core.backends.base import Backend

    return Backend


def _record(name: str) -> Callable[[], type]:
    def get() -> type:
        from xai_core.plugin import records

        return getattr(records, name)

    return get


@dataclass(frozen=True)
class Kind:
    """One kind of thing plugins register: its hook, its name in messages and its check."""

    attribute: str
    hook: str
    kind: str
    check: Callable[[Any], str | None]


#: Every registering hook, in the order :meth:`Registry.plugins` reports them.
KINDS: tuple[Kind, ...] = (
    Kind("backends", "xai_register_backends", "backend", _class_of(_backend)),
    Kind("explainers", "xai_register_explainers", "explainer", _class_of(_explainer)),
    Kind(
        "cli_commands", "xai_register_cli_commands", "command", _instance_of(_record("CliCommand"))
    ),
    Kind("tools", "xai_register_tools", "tool", _instance_of(_record("Tool"))),
    Kind(
        "report_sections",
        "xai_register_report_sections",
        "report section",
        _instance_of(_record("ReportSection")),
    ),
)
_BY_ATTRIBUTE = {k.attribute: k for k in KINDS}


def _items(returned: Any, kind: Kind) -> list[Any]:
    """The list a hook returned, each item checked; a TypeError says what is wrong."""
    if returned is None:
        return []
    if isinstance(returned, (str, bytes, Mapping, type)) or not isinstance(returned, Iterable):
        raise TypeError(f"{kind.hook} must return a list; got {returned!r}")
    items = list(returned)
    for item in items:
        problem = kind.check(item)
        if problem is not None:
            raise TypeError(f"{kind.hook} must return {problem}: got {item!r}")
        name = getattr(item, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"{kind.hook} returned {item!r}, which has no 'name' string")
    return items


class Registry:
    """What the plugins of one plugin manager registered, by name, with who registered each.

    Each kind is collected on first use, so building a registry costs nothing until a name
    is looked up.

    Parameters
    ----------
    plugin_manager : pluggy.PluginManager
        Built by :func:`xai_core.plugin.manager.get_plugin_manager` (its ``xai_broken``
        list, the plugins that failed to load, starts :attr:`broken`).

    Attributes
    ----------
    explainers, backends : dict
        name -> class.
    report_sections : list
        Report sections in registration order.
    cli_commands, tools : dict
        name -> command, name -> tool.
    owners : dict
        (kind, name) -> plugin name, for every kind.
    broken : list of BrokenPlugin
        Plugins that failed to load and hooks that misbehaved, for every kind.
    """

    def __init__(self, plugin_manager: Any) -> None:
        self.plugin_manager = plugin_manager
        self._lock = threading.RLock()
        self._collected: dict[str, dict[str, Any]] = {}
        self._owners: dict[tuple[str, str], str] = {}
        self._broken: list[BrokenPlugin] = list(getattr(plugin_manager, "xai_broken", []))

    @classmethod
    def from_plugin_manager(cls, pm: Any) -> Registry:
        """The registry of ``pm``'s plugins (hooks are called when first needed)."""
        return cls(pm)

    # -- collection -----------------------------------------------------------------------

    def _kind(self, attribute: str) -> dict[str, Any]:
        collected = self._collected.get(attribute)
        if collected is None:
            with self._lock:
                collected = self._collected.get(attribute)
                if collected is None:
                    collected = self._collect(_BY_ATTRIBUTE[attribute])
                    self._collected[attribute] = collected
        return collected

    def _collect_all(self) -> None:
        for kind in KINDS:
            self._kind(kind.attribute)

    def _distribution(self, plugin_name: str) -> str | None:
        return getattr(self.plugin_manager, "xai_distributions", {}).get(plugin_name)

    def _collect(self, kind: Kind) -> dict[str, Any]:
        into: dict[str, Any] = {}
        hook = getattr(self.plugin_manager.hook, kind.hook)
        # get_hookimpls() is in registration order (pluggy *calls* them last-first).
        for impl in hook.get_hookimpls():
            plugin_name = impl.plugin_name
            try:
                items = _items(impl.function(), kind)
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - reported, never raised
                self._broken.append(
                    BrokenPlugin(
                        plugin_name,
                        self._distribution(plugin_name),
                        f"{type(exc).__name__}: {exc}",
                        kind.hook,
                        traceback.format_exc(),
                    )
                )
                continue
            for item in items:
                owner = self._owners.get((kind.kind, item.name))
                if owner is not None:  # the first one wins; the second is reported with both names
                    dup = DuplicateNameError(kind.kind, item.name, owner, plugin_name)
                    self._broken.append(
                        BrokenPlugin(
                            plugin_name, self._distribution(plugin_name), str(dup), kind.hook
                        )
                    )
                    continue
                self._owners[(kind.kind, item.name)] = plugin_name
                into[item.name] = item
        return into

    # -- what was registered ----------------------------------------------------------------

    @property
    def explainers(self) -> dict[str, type]:
        """name -> explainer class."""
        return self._kind("explainers")

    @property
    def backends(self) -> dict[str, type]:
        """name -> backend class."""
        return self._kind("backends")

    @property
    def cli_commands(self) -> dict[str, Any]:
        """name -> :class:`~xai_core.CliCommand`."""
        return self._kind("cli_commands")

    @property
    def tools(self) -> dict[str, Any]:
        """name -> :class:`~xai_core.Tool`."""
        return self._kind("tools")

    @property
    def report_sections(self) -> list[Any]:
        """Every :class:`~xai_core.ReportSection`, in registration order."""
        return list(self._kind("report_sections").values())

    @property
    def owners(self) -> dict[tuple[str, str], str]:
        """(kind, name) -> the plugin that registered it, for every kind."""
        self._collect_all()
        return self._owners

    @property
    def broken(self) -> list[BrokenPlugin]:
        """Plugins that failed to load, and every hook that misbehaved."""
        self._collect_all()
        return self._broken

    # -- names resolved ---------------------------------------------------------------------

    def _lookup(self, attribute: str, kind: str, name: str) -> Any:
        table = self._kind(attribute)
        try:
            return table[name]
        except (KeyError, TypeError):
            raise UnknownNameError(kind, name, list(table)) from None

    def explainer(self, name: str) -> type:
        """The explainer class registered as ``name``; an unknown name lists the known ones."""
        return self._lookup("explainers", "explainer", name)

    def backend(self, name: str) -> type:
        """The backend class registered as ``name``; an unknown name lists the known ones."""
        return self._lookup("backends", "backend", name)

    def tool(self, name: str) -> Any:
        """The tool registered as ``name``; an unknown name lists the known ones."""
        return self._lookup("tools", "tool", name)

    def command(self, name: str) -> Any:
        """The CLI command registered as ``name``; an unknown name lists the known ones."""
        return self._lookup("cli_commands", "command", name)

    # -- the plugins themselves ---------------------------------------------------------------

    def plugins(self) -> list[dict[str, Any]]:
        """One record per plugin: name, distribution, hooks, what it registered, its status.

        A plugin whose hook misbehaved keeps what it did register and has status
        ``"broken"``, with the first problem's ``stage`` and ``error`` and every problem in
        ``problems``; a plugin that failed to load is a record of its own.
        """
        pm = self.plugin_manager
        owners, broken = self.owners, self.broken
        problems: dict[str, list[BrokenPlugin]] = {}
        for b in broken:
            problems.setdefault(b.name, []).append(b)
        records = []
        for name, plugin in pm.list_name_plugin():
            if plugin is None:
                continue
            registers = {
                kind.kind: sorted(n for (k, n), o in owners.items() if k == kind.kind and o == name)
                for kind in KINDS
            }
            record = {
                "name": name,
                "distribution": self._distribution(name),
                "hooks": sorted(h.name for h in pm.get_hookcallers(plugin) or []),
                "registers": {k: v for k, v in registers.items() if v},
                "status": "ok",
            }
            records.append(_with_problems(record, problems.pop(name, [])))
        for name, found in problems.items():  # plugins that never got registered
            record = {
                "name": name,
                "distribution": found[0].distribution,
                "hooks": [],
                "registers": {},
                "status": "ok",
            }
            records.append(_with_problems(record, found))
        return records


def _with_problems(record: dict[str, Any], problems: list[BrokenPlugin]) -> dict[str, Any]:
    if problems:
        record.update(
            status="broken",
            stage=problems[0].stage,
            error=problems[0].error,
            problems=[{"stage": p.stage, "error": p.error} for p in problems],
        )
    return record
