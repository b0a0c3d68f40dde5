"""The plugin system: hook specifications, the records hooks return, the manager and the registry.

:mod:`~xai_core.plugin.hookspecs` is the reference of every hook;
:mod:`~xai_core.plugin.records` holds what hooks return besides classes (``CliCommand``,
``ReportSection``, ``Tool``); :mod:`~xai_core.plugin.manager` loads built-ins and entry points
and builds the :class:`~xai_core.plugin.manager.Registry`, the one place names are resolved.
"""
