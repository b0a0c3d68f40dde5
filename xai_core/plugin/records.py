"""Small records that plugins return from the report-section and CLI hooks."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ReportSection", "CliCommand", "Tool"]


@dataclass(frozen=True)
class ReportSection:
    """Renders one result type as an HTML fragment.

    Parameters
    ----------
    name : str
        Unique section name.
    result_type : type or tuple of type
        The result objects this section renders.
    render : callable
        ``render(result) -> str``: an HTML fragment in which every user-supplied string is escaped.
    title : str, optional
        Heading shown in reports.
    script : str, optional
        JavaScript that makes the section interactive. A page or notebook fragment carries
        each distinct script once, after every section, and a report's
        Content-Security-Policy allows exactly these scripts (by hash). The script must read
        only the page (its ``<script type="application/json">`` data), handle every
        instance of the section it finds, and leave the section readable without it.
    verdict : callable, optional
        ``verdict(result)``: the result's verdict in plain language, which a report shows
        in its "Verdict" block at the top, before the table of contents; None (the
        default's answer) for results without one. It returns a ``str``, or an object with
        ``sentence`` (str) and ``lines`` (sequence of str), such as
        ``BackendComparison.verdict`` (:class:`xai_core.compare.verdict.Verdict`).
    """

    name: str
    result_type: type | tuple[type, ...]
    render: Callable[[Any], str]
    title: str = ""
    script: str = ""
    verdict: Callable[[Any], Any] = field(default=lambda result: None)

    def handles(self, result: Any) -> bool:
        """Whether this section renders ``result``."""
        return isinstance(result, self.result_type)


@dataclass(frozen=True)
class CliCommand:
    """A sub-command of the ``xai`` command line.

    Parameters
    ----------
    name : str
        The sub-command (``xai NAME``).
    help : str
        One line shown by ``xai --help``.
    run : callable
        ``run(args: argparse.Namespace) -> int``, the exit status.
    add_arguments : callable, optional
        ``add_arguments(parser: argparse.ArgumentParser) -> None``.
    """

    name: str
    help: str
    run: Callable[[argparse.Namespace], int]
    add_arguments: Callable[[argparse.ArgumentParser], None] = field(default=lambda parser: None)


@dataclass(frozen=True)
class Tool:
    """An interactive tool (what-if editing, embedding projection) provided by a plugin.

    Parameters
    ----------
    name : str
        Unique tool name; ``xai.tool(name)`` returns the tool.
    function : callable
        Called with the user's arguments; returns the tool's result object.
    help : str
        One line describing the tool.
    """

    name: str
    function: Callable[..., Any]
    help: str = ""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)
