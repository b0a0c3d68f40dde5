"""The ``xai`` command line. Sub-commands come from the ``xai_register_cli_commands`` hook."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from xai_core.errors import XaiError
from xai_core.plugin.resolve import cli_commands, owner

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered sub-command."""
    from xai_core import __version__

    parser = argparse.ArgumentParser(
        prog="xai", description="Explanations on simulated hardware, and whether they survive it."
    )
    parser.add_argument("--version", action="version", version=f"xai-core {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in sorted(cli_commands().items()):
        p = sub.add_parser(name, help=command.help, description=command.help)
        try:
            command.add_arguments(p)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - one plugin never breaks the rest
            p.set_defaults(_run=_broken(name, owner("command", name) or "?", exc))
            continue
        p.set_defaults(_run=command.run)
    return parser


def _broken(name: str, plugin: str, exc: BaseException):
    """The ``run`` of a command whose plugin failed to set up its arguments."""
    message = (
        f"xai {name}: error: plugin {plugin!r} could not set up this command's arguments: "
        f"{type(exc).__name__}: {exc}"
    )

    def run(args: argparse.Namespace) -> int:
        print(message, file=sys.stderr)
        return 2

    return run


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``xai`` command; return its exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_run", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except XaiError as exc:  # a user's mistake: say it plainly, no traceback
        print(f"xai {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `xai plugins | head`: the reader has gone, which is no error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that Python's exit flush does not fail too
        return 141  # 128 + SIGPIPE, as a shell reports it
    except KeyboardInterrupt:  # Ctrl-C: one line, and the status a shell gives SIGINT
        print(f"xai {args.command}: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # the machine's refusal (a full disk, no permission): one line
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"xai {args.command}: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except RecursionError:  # a document nested past what any reader bounds
        print(f"xai {args.command}: error: the input is nested too deeply to read", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
