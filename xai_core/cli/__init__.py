"""The ``xai`` command. Sub-commands come from the ``xai_register_cli_commands`` hook."""

from xai_core.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
