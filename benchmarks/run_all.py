"""Run every benchmark in this folder, one process each, and stop at the first failure.

    python benchmarks/run_all.py            # all of them
    python benchmarks/run_all.py cpu tpu    # bench_cpu.py and bench_tpu.py

Each benchmark prints medians and the ratios against its anchors, measured in one run.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    """Run the chosen benchmarks (all by default); return the first non-zero status."""
    names = list(sys.argv[1:] if argv is None else argv)
    scripts = sorted(HERE.glob("bench_*.py"))
    if names:
        known = {p.stem.removeprefix("bench_"): p for p in scripts}
        unknown = [n for n in names if n not in known]
        if unknown:
            print(
                f"unknown benchmark(s) {unknown}; available: {', '.join(sorted(known))}",
                file=sys.stderr,
            )
            return 2
        scripts = [known[n] for n in names]
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        start = time.perf_counter()
        status = subprocess.call([sys.executable, str(script)])
        print(
            f"=== {script.name}: exit {status}, {time.perf_counter() - start:.0f} s ===", flush=True
        )
        if status:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
