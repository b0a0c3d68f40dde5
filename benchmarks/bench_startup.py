"""Start-up time: ``import xai_core`` and ``xai --help`` against ``python -c "import numpy"``.

Run from the repository root::

    python benchmarks/bench_startup.py [--repeats 21]

Each command runs in a fresh interpreter, ``--repeats`` times, the commands interleaved
(one of each per round, in a rotating order) so that a machine that slows down or speeds
up during the run affects them alike. Printed: the median wall time of each command, and
its ratio to the anchor ``python -c "import numpy"`` measured in the same run (goal:
``import xai_core`` and ``xai --help`` within 3x of it), plus the bare interpreter
(``python -c pass``) as the floor every command pays.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

GOAL = 3.0


def commands() -> dict[str, list[str]]:
    """Label -> argv of every command timed; the ``xai`` script beside this interpreter if any."""
    script = Path(sys.executable).with_name("xai")
    xai_help = (
        [str(script), "--help"] if script.exists() else [sys.executable, "-m", "xai_core", "--help"]
    )
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import numpy": [sys.executable, "-c", "import numpy"],
        "import xai_core": [sys.executable, "-c", "import xai_core"],
        "xai --help": xai_help,
        "import xai_core; xai.explain (first use)": [
            sys.executable,
            "-c",
            "import xai_core as xai; xai.explain",
        ],
    }


def _seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def measure(repeats: int) -> dict[str, float]:
    """Median seconds of each command over ``repeats`` interleaved rounds, after one warm-up."""
    cmds = commands()
    for argv in cmds.values():
        _seconds(argv)  # warm-up: bytecode compiled, files in the page cache
    times: dict[str, list[float]] = {label: [] for label in cmds}
    labels = list(cmds)
    for r in range(repeats):
        shift = r % len(labels)
        for label in labels[shift:] + labels[:shift]:
            times[label].append(_seconds(cmds[label]))
    return {label: statistics.median(t) for label, t in times.items()}


def main(argv: list[str] | None = None) -> int:
    """Print the medians and ratios; exit status 0 (benchmarks report, they do not fail)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args(argv)
    medians = measure(args.repeats)
    anchor = medians["import numpy"]
    print(f"start-up, median of {args.repeats} interleaved runs each, fresh interpreters")
    print(f"{'command':<42} {'seconds':>8} {'x numpy':>8}")
    for label, seconds in medians.items():
        print(f"{label:<42} {seconds:8.3f} {seconds / anchor:8.2f}")
    for label in ("import xai_core", "xai --help"):
        ratio = medians[label] / anchor
        verdict = "within" if ratio <= GOAL else "OVER"
        print(f"{label}: {ratio:.2f}x import numpy ({verdict} the {GOAL:g}x goal)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
