"""``python -m xai_core.importers.zoo``: the coverage table, model by stage, with times.

Usage: ``python -m xai_core.importers.zoo [--family F] [--stages import forward ...]
[--model NAME ...] [--fast] [--steps N]``. Each row is one model; each cell a stage's
status and seconds; the details (errors) follow the table, then one summary line.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence

from xai_core.importers.zoo import SOURCES, catalogue
from xai_core.importers.zoo.checks import STAGES, ZooResult, check_model

MARK = {"pass": "ok", "fail": "FAIL", "refused": "refused", "skipped": "-"}


def format_row(result: ZooResult, stages: Sequence[str]) -> str:
    """One markdown table row: the model, then each stage's mark and seconds."""
    cells = [result.entry.key]
    for st in stages:
        r = result.stages[st]
        cells.append(
            MARK[r.status] if r.status == "skipped" else f"{MARK[r.status]} {r.seconds:.1f}s"
        )
    return "| " + " | ".join(cells) + " |"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xai_core.importers.zoo", description=__doc__)
    parser.add_argument("--family", choices=sorted(SOURCES), help="only this family's models")
    parser.add_argument("--model", nargs="*", default=None, help="only these model names")
    parser.add_argument("--stages", nargs="*", choices=STAGES, default=list(STAGES))
    parser.add_argument("--fast", action="store_true", help="leave out the models marked slow")
    parser.add_argument("--steps", type=int, default=4, help="IG's steps (default 4)")
    args = parser.parse_args(argv)
    entries = catalogue(args.family, slow=not args.fast)
    if args.model:
        entries = [e for e in entries if e.name in args.model or e.key in args.model]
    stages = [st for st in STAGES if st in args.stages or st == "import"]
    print("| model | " + " | ".join(stages) + " |", flush=True)
    print("|---" * (len(stages) + 1) + "|", flush=True)
    results, notes = [], []
    for entry in entries:
        result = check_model(entry, stages=stages, steps=args.steps)
        results.append(result)
        print(format_row(result, stages), flush=True)
        for st in stages:
            r = result.stages[st]
            if r.status in ("fail", "refused"):
                notes.append(f"- {entry.key} {st}: {r.detail}")
                print(notes[-1], file=sys.stderr, flush=True)  # seen while the table runs
    if notes:
        print("\n" + "\n".join(notes))
    counts = Counter(r.stages[st].status for r in results for st in stages)
    full = sum(all(r.stages[st].status == "pass" for st in stages) for r in results)
    print(
        f"\n{full}/{len(results)} models pass every stage asked for; stage results: "
        + ", ".join(f"{counts[k]} {k}" for k in ("pass", "fail", "refused", "skipped"))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
