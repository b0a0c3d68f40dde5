"""Every hook a plugin can implement. These docstrings are the reference documentation.

A plugin is a module (or object) with functions decorated ``@xai_core.hookimpl`` whose
names match the specifications below, exposed through the ``xai_core`` entry-point group::

    # pyproject.toml of your plugin
    [project.entry-points.xai_core]
    my_plugin = "my_package.plugin"

Hooks that add things *return* them; the core collects the lists, rejects a name that
two plugins register (naming both) and records a plugin whose hook raises without letting
it stop the others.
"""

from __future__ import annotations

import pluggy

PROJECT_NAME = "xai_core"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def xai_register_explainers():
    """Register explainer classes.

    Returns
    -------
    list of type
        Subclasses of :class:`xai_core.Explainer`. Each class sets ``name`` (the
        ``method=`` string, unique across plugins), ``requires`` (capabilities such as
        ``{"predict"}`` or ``{"predict", "gradient"}``, checked before any work) and
        implements ``explain(runner, X, target) -> Explanation`` (``X`` is a read-only
        view). Its ``__init__`` keyword arguments are the options users pass to
        :func:`xai_core.explain`; class data ``constraints`` (option name to a constraint of
        :mod:`xai_core.attribution.options`) and ``aliases`` (other spellings, the anchors'
        and deprecated ones) are checked and resolved by the core before any model call.
        Random draws come from ``self.row_rngs(len(X))``, one stream per global row, so that
        chunks of any size give the values of one call (see docs/plugin_hooks.md).
        Optionally ``estimate_cost(runner, X) -> Cost | None`` states the model rows and
        peak memory before any work, checked against the session's limits (default
        ``None``: no check; see docs/limits.md); every model output the explainer receives
        is checked finite by the core. A class may declare itself the core's default in
        ``default_for`` (role to rank: ``"gradient"`` and ``"black_box"`` for
        ``method="auto"``, ``"compare"`` for :func:`xai_core.compare_methods`), so the
        core names no method of its own.

    Examples
    --------
    >>> @hookimpl
    ... def xai_register_explainers():
    ...     return [Occlusion]
    """


@hookspec
def xai_register_backends():
    """Register simulated-hardware backend classes.

    Returns
    -------
    list of type
        Subclasses of :class:`xai_core.Backend` with a unique ``name``. The class is
        called with the keyword arguments given to :func:`xai_core.get_backend`, so its
        constructor defines the backend's settings and presets. Every backend must pass
        :func:`xai_core.testing.check_backend`. :func:`xai_core.compare_backends` compares
        every registered backend that its constructor builds without arguments. A backend
        implements ``matmul`` and may override ``batched_matmul``, ``conv2d`` /
        ``conv2d_vjp`` (defaults: the im2col products through ``matmul``), ``elementwise``
        and ``reduce``; an override computes the same function and counts what the
        default would. Class data states what it can do, for the core to test instead of
        its name: ``supports_gradients``, ``requires_quantized`` and ``runs_black_boxes``
        (true only for a host CPU, where a black-box model's numbers mean something).
    """


@hookspec
def xai_register_tools():
    """Register interactive tools reached through the ``xai`` facade (``xai.what_if``, ``xai.project``).

    Returns
    -------
    list of xai_core.Tool
        Each tool has a ``name`` (unique; ``xai.tool(name)`` returns it and the facade
        functions ``xai.what_if`` and ``xai.project`` call the tools named ``"what_if"``
        and ``"project"``), a ``function`` called with the user's arguments, and a
        one-line ``help``.
    """


@hookspec
def xai_register_report_sections():
    """Register renderers for result types in HTML reports and notebooks.

    Returns
    -------
    list of xai_core.ReportSection
        Each section names the ``result_type`` it renders and a ``render(result) -> str``
        function returning an HTML fragment in which every user-supplied string is
        escaped. The report uses the first section whose type matches a result added
        with ``Report.add``.
    """


@hookspec
def xai_register_cli_commands():
    """Register sub-commands of the ``xai`` command line.

    Returns
    -------
    list of xai_core.CliCommand
        Each command has a ``name`` (unique), a one-line ``help``, an
        ``add_arguments(parser)`` callable that configures its ``argparse`` parser, and
        a ``run(args) -> int`` callable returning the exit status.
    """
