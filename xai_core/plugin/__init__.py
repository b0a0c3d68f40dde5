"""The plugin system: hook specifications, the records hooks return, the manager and the registry.

:mod:`~xai_core.plugin.hookspecs` is the reference of every hook;
:mod:`~xai_core.plugin.records` holds what hooks return besides classes (``CliCommand``,
``ReportSection``, ``Tool``); :mod:`~xai_core.plugin.manager` loads built-ins and entry points
(a plugin that fails is recorded, never raised) and keeps the session's default registry;
:mod:`~xai_core.plugin.registry` holds the :class:`~xai_core.plugin.registry.Registry`, what
each plugin registered by name; :mod:`~xai_core.plugin.resolve` is where the calls that take
a name resolve it, once, so that the layers below get objects.
"""
