"""ONNX's backend test suite run on :mod:`xai_core.importers.onnx_backend`: a per-operator table.

The node cases are those of the ``onnx`` package installed: its data directory
(``onnx/backend/test/data/node/<case>/model.onnx`` with ``test_data_set_*/input_*.pb`` and
``output_*.pb``) when the wheel ships it, else the same cases from the generators it is
written from (``onnx.backend.test.case.node``, in memory; no network either way). Each case
is prepared and run through :class:`~xai_core.importers.onnx_backend.XaiBackend` and compared
with the suite's own check (``Runner.assert_similar_outputs``: shapes, dtypes, and values
within the case's rtol 1e-3 and atol 1e-7). A case is

- *passed*: every output matches;
- *refused*: importing or running it raised :class:`~xai_core.errors.CapabilityError`, a
  stated limit (an operator or attribute not supported, the batch axis touched, several
  inputs), with its message;
- *failed*: wrong values, shapes or dtypes, or any other error.

A ``_expanded`` case (the operator's function body, in other operators) counts for the
operator it expands.

Usage::

    python -m xai_core.importers.onnx_conformance            # the table, on stdout
    python -m xai_core.importers.onnx_conformance --op Relu  # one operator's cases, each
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.errors import CapabilityError
from xai_core.importers.onnx_import import SUPPORTED_ONNX_OPS
from xai_core.optional import require

__all__ = ["Case", "Result", "node_cases", "run_case", "run_cases", "summary", "markdown"]


@dataclass(frozen=True)
class Case:
    """One node case: its model, input and expected output arrays, tolerances."""

    name: str
    op: str
    model: Any
    data_sets: tuple[tuple[list[np.ndarray], list[np.ndarray]], ...]
    rtol: float = 1e-3
    atol: float = 1e-7


@dataclass(frozen=True)
class Result:
    """What a case gave: ``status`` in {"passed", "refused", "failed"} and why."""

    case: str
    op: str
    status: str
    detail: str = ""


def _suite_dir() -> Path:
    onnx = require("onnx", extra="import", need="ONNX's backend test suite")
    return Path(onnx.__file__).parent / "backend" / "test" / "data"


def _read_dir(case_dir: Path) -> tuple[Any, list]:
    """A case directory's model and data sets, read with onnx.numpy_helper."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(case_dir / "model.onnx"))
    sets = []
    for data in sorted(case_dir.glob("test_data_set_*")):
        arrays = {}
        for kind in ("input", "output"):
            files = sorted(data.glob(f"{kind}_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
            arrays[kind] = [numpy_helper.to_array(onnx.load_tensor(str(f))) for f in files]
        sets.append((arrays["input"], arrays["output"]))
    return model, sets


def _op_of(model: Any) -> str:
    nodes = model.graph.node
    return nodes[0].op_type if len(nodes) == 1 else ""


def _base_name(name: str) -> str:
    """``test_softmax_axis_0_expanded_ver18`` -> ``test_softmax_axis_0``."""
    i = name.find("_expanded")
    return name[:i] if i >= 0 else name


def node_cases() -> list[Case]:
    """Every node case of the installed onnx's backend test suite, sorted by name."""
    node_dir = _suite_dir() / "node"
    raw: list[tuple[str, Any, list, float, float]] = []
    if node_dir.is_dir():
        for d in sorted(p for p in node_dir.iterdir() if (p / "model.onnx").is_file()):
            model, sets = _read_dir(d)
            raw.append((d.name, model, sets, 1e-3, 1e-7))
    else:
        from onnx.backend.test.case import node

        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            for c in node.collect_testcases(None):
                raw.append((c.name, c.model, c.data_sets, c.rtol, c.atol))
    ops = {name: _op_of(model) for name, model, *_ in raw if "_expanded" not in name}
    cases = []
    for name, model, sets, rtol, atol in raw:
        op = ops.get(_base_name(name)) or _op_of(model) or "?"
        cases.append(Case(name, op, model, tuple((list(i), list(o)) for i, o in sets), rtol, atol))
    return sorted(cases, key=lambda c: c.name)


def run_case(case: Case) -> Result:
    """Prepare and run one case through the backend; compare as the suite does."""
    from onnx.backend.test.runner import Runner

    from xai_core.importers.onnx_backend import XaiBackend

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            rep = XaiBackend.prepare(case.model)
            for inputs, outputs in case.data_sets:
                got = rep.run([_array(a) for a in inputs])
                Runner.assert_similar_outputs(
                    [_array(a) for a in outputs], list(got), rtol=case.rtol, atol=case.atol
                )
    except CapabilityError as exc:
        return Result(case.name, case.op, "refused", _first_line(str(exc)))
    except AssertionError as exc:
        return Result(case.name, case.op, "failed", "wrong output: " + _first_line(str(exc)))
    except Exception as exc:  # every other error is a failure of the case, named
        return Result(
            case.name, case.op, "failed", f"{type(exc).__name__}: {_first_line(str(exc))}"
        )
    return Result(case.name, case.op, "passed")


def _array(value: Any) -> np.ndarray:
    """A case's tensor as an array (some cases hold TensorProtos, as the suite's runner reads)."""
    from onnx import TensorProto, numpy_helper

    return numpy_helper.to_array(value) if isinstance(value, TensorProto) else np.asarray(value)


def _first_line(text: str, limit: int = 300) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    line = " ".join(lines[:3]) if lines else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def run_cases(cases: Iterable[Case]) -> list[Result]:
    """:func:`run_case` over ``cases``."""
    return [run_case(c) for c in cases]


def summary(results: list[Result]) -> dict[str, dict[str, int]]:
    """Per operator: {"passed": n, "refused": n, "failed": n, "listed": 0 or 1}."""
    table: dict[str, dict[str, int]] = {}
    for r in results:
        row = table.setdefault(
            r.op,
            {"passed": 0, "refused": 0, "failed": 0, "listed": int(r.op in SUPPORTED_ONNX_OPS)},
        )
        row[r.status] += 1
    return dict(sorted(table.items()))


def totals(results: list[Result], *, listed_only: bool = False) -> dict[str, int]:
    """Cases passed, refused and failed (of listed operators only, if asked)."""
    out = {"passed": 0, "refused": 0, "failed": 0}
    for r in results:
        if not listed_only or r.op in SUPPORTED_ONNX_OPS:
            out[r.status] += 1
    return out


def markdown(results: list[Result]) -> str:
    """The conformance page: figures, then one row per operator of the suite."""
    import onnx

    rows = summary(results)
    listed = [op for op, row in rows.items() if row["listed"]]
    every, mine = totals(results), totals(results, listed_only=True)
    lines = [
        "# ONNX backend test suite",
        "",
        "<!-- generated by `python -m xai_core.importers.onnx_conformance --markdown`;"
        " tests/importers/test_onnx_conformance.py checks it is current -->",
        "",
        f"The node cases of onnx {onnx.__version__}'s backend test suite "
        "(`onnx.backend.test`), run through `xai_core.importers.onnx_backend.XaiBackend` "
        "and compared as the suite's runner compares (shapes, dtypes, values within rtol "
        "1e-3, atol 1e-7). *Refused*: the import raises `CapabilityError` naming the limit "
        "(docs/operators.md lists each converter's); *failed*: wrong values or any other "
        "error.",
        "",
        f"- Operators in the suite: {len(rows)}; supported by `from_onnx`: {len(listed)}.",
        f"- All {sum(every.values())} cases: {every['passed']} passed, {every['refused']} "
        f"refused, {every['failed']} failed.",
        f"- The {sum(mine.values())} cases of supported operators: {mine['passed']} passed, "
        f"{mine['refused']} refused, {mine['failed']} failed.",
        "",
        "| Operator | Supported | Cases | Passed | Refused | Failed |",
        "|---|---|---|---|---|---|",
    ]
    for op, row in rows.items():
        n = row["passed"] + row["refused"] + row["failed"]
        lines.append(
            f"| `{op}` | {'yes' if row['listed'] else 'no'} | {n} | {row['passed']} | "
            f"{row['refused']} | {row['failed']} |"
        )
    lines += [
        "",
        "## Cases of supported operators refused or failed, and why",
        "",
        "| Operator | Case | Status | Message (first 160 characters) |",
        "|---|---|---|---|",
    ]
    for r in sorted(results, key=lambda r: (r.op, r.case)):
        if r.status != "passed" and r.op in SUPPORTED_ONNX_OPS:
            why = _cell(r.detail.replace("the ONNX model: ", "")[:160])
            lines.append(f"| `{r.op}` | `{r.case}` | {r.status} | {why} |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """Text safe in a markdown table cell."""
    return text.replace("|", "\\|").replace("`", "'")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m xai_core.importers.onnx_conformance", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--op", action="append", help="only this operator's cases (repeatable)")
    parser.add_argument("--markdown", action="store_true", help="print the docs page")
    parser.add_argument("--failures", action="store_true", help="list failed cases")
    parser.add_argument("--refusals", action="store_true", help="list refused cases")
    args = parser.parse_args(argv)
    cases = node_cases()
    if args.op:
        cases = [c for c in cases if c.op in set(args.op)]
    results = run_cases(cases)
    if args.markdown:
        sys.stdout.write(markdown(results))
        return 0
    for r in results:
        if args.op or (args.failures and r.status == "failed"):
            print(f"{r.status:8} {r.op:24} {r.case}: {r.detail}")
        elif args.refusals and r.status == "refused":
            print(f"{r.status:8} {r.op:24} {r.case}: {r.detail}")
    rows = summary(results)
    print(f"{'operator':28} listed passed refused failed")
    for op, row in rows.items():
        print(f"{op:28} {row['listed']:6} {row['passed']:6} {row['refused']:7} {row['failed']:6}")
    print("all:", totals(results), "listed:", totals(results, listed_only=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
