"""The core sub-commands of ``xai``: plugins and backends (``xai_demo`` adds demo, explain, report)."""

from __future__ import annotations

import argparse
import json

from xai_core.plugin.hookspecs import hookimpl
from xai_core.plugin.records import CliCommand
from xai_core.plugin.resolve import backend_classes, owner, plugin_records


def _plugins_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def _plugins(args: argparse.Namespace) -> int:
    records = plugin_records()
    if args.json:
        print(json.dumps(records, indent=2))
        return 0
    for r in records:
        dist = r["distribution"] or "-"
        registers = "; ".join(
            f"{kind}: {', '.join(names)}" for kind, names in r["registers"].items()
        )
        line = f"{r['name']}  [{dist}]  {registers or '(registers nothing)'}"
        if r["status"] == "broken":
            line = f"{r['name']}  [{dist}]  {registers + '; ' if registers else ''}"
            line += f"BROKEN during {r['stage']}: {r['error']}"
        print(line)
    return 0


def _backends(args: argparse.Namespace) -> int:
    rows = []
    for name, cls in sorted(backend_classes().items()):
        try:
            info = cls().describe()
        except Exception as exc:  # noqa: BLE001 - a backend that cannot start with defaults is shown as such
            info = {"numerics": f"(cannot build with defaults: {exc})"}
        info["plugin"] = owner("backend", name)
        rows.append({"name": name, **{k: v for k, v in info.items() if k != "name"}})
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    for row in rows:
        presets = ", ".join(row.get("presets") or []) or "-"
        grads = "gradients" if row.get("gradients") else "inference only"
        print(f"{row['name']:<10} {row['numerics']}; {grads}; presets: {presets}")
        if row.get("topology"):
            print(f"{'':<10} default topology: {row['topology']}")
    return 0


@hookimpl
def xai_register_cli_commands():
    """``xai plugins`` and ``xai backends``."""
    return [
        CliCommand(
            "plugins",
            "list every plugin, what it registers, and the broken ones",
            _plugins,
            _plugins_arguments,
        ),
        CliCommand(
            "backends",
            "list the simulated hardware backends and their numerics",
            _backends,
            _plugins_arguments,
        ),
    ]
