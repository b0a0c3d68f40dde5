"""``xai demo``, ``xai explain`` and ``xai report``: the commands that work from data files.

The one first-party package that imports :mod:`xai_datasets`; the core never does.
"""

from __future__ import annotations

import argparse
import json

from xai_core import CliCommand, hookimpl
from xai_core.errors import ValidationError


def _demo(args: argparse.Namespace) -> int:
    from xai_demo.demo import run_demo

    return run_demo(
        output=args.out, dataset=args.dataset, quick=args.quick, progress=not args.no_progress
    )


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--out", default="report.html", help="where to write the report (report.html)"
    )
    parser.add_argument(
        "--dataset", default="mnist", choices=["mnist", "fashion-mnist"], help="image data"
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller sizes, for a first look (about a minute)"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")


def _explain(args: argparse.Namespace) -> int:
    import numpy as np

    from xai_core.attribution.explainer import explain
    from xai_core.nn import load_model
    from xai_demo.build import load_data

    net = load_model(args.model)
    X, _, names = load_data(args.data, args.target)
    options = {}
    for item in args.option or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValidationError(f"--option must look like name=value; got {item!r}.")
        try:
            options[key] = json.loads(value)  # numbers, true/false/null, lists, objects
        except json.JSONDecodeError:
            options[key] = value  # a plain string such as riemann_middle
    e = explain(
        net,
        X[: args.rows],
        method=args.method,
        backend=args.backend,
        feature_names=names,
        **options,
    )
    path = e.save(args.out)
    total = np.abs(e.values).reshape(len(e), -1).sum(axis=1)
    print(
        f"{e.method} on {e.backend}: {len(e)} row(s), values {e.values.shape}, "
        f"mean sum |attribution| {total.mean():.4g}; saved to {path}"
    )
    return 0


def _explain_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="a network saved with net.save (.npz)")
    parser.add_argument(
        "--data", required=True, help="rows: .npz with X (y, feature_names) or .csv"
    )
    parser.add_argument("--target", help="the target column of a CSV data file")
    parser.add_argument(
        "--method", default="auto", help="explainer (auto: ig with gradients, shap otherwise)"
    )
    parser.add_argument("--backend", default="cpu", help="backend the model runs on (cpu)")
    parser.add_argument("--rows", type=int, default=5, help="rows of the data to explain (5)")
    parser.add_argument(
        "--option", action="append", help="method option name=value (JSON values; repeatable)"
    )
    parser.add_argument(
        "-o", "--out", default="explanation.json", help="where to save the explanation"
    )


def _report(args: argparse.Namespace) -> int:
    from xai_demo.build import build_report

    report = build_report(
        model=args.model,
        data=args.data,
        results=args.results,
        methods=args.method,
        backend=args.backend,
        rows=args.rows,
        target=args.target,
        title=args.title,
    )
    path = report.save(args.out)
    print(f"Report with {len(report)} section(s): {path}")
    return 0


def _report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "results", nargs="*", help="explanations saved with Explanation.save (JSON)"
    )
    parser.add_argument("--model", help="a network saved with net.save (.npz)")
    parser.add_argument("--data", help="rows to explain: .npz with X (y, feature_names) or .csv")
    parser.add_argument("--target", help="the target column of a CSV data file")
    parser.add_argument(
        "--method", action="append", help="method to run on the model (repeatable; default ig)"
    )
    parser.add_argument("--backend", default="cpu", help="backend the model runs on (cpu)")
    parser.add_argument("--rows", type=int, default=5, help="rows of the data to explain (5)")
    parser.add_argument("--title", help="report title")
    parser.add_argument(
        "-o", "--out", default="report.html", help="where to write the report (report.html)"
    )


@hookimpl
def xai_register_cli_commands():
    """``xai demo``, ``xai explain`` and ``xai report``."""
    return [
        CliCommand(
            "demo",
            "train a small MNIST network and explain it on every backend",
            _demo,
            _demo_arguments,
        ),
        CliCommand(
            "explain",
            "explain a saved model on rows of a data file; save the explanation as JSON",
            _explain,
            _explain_arguments,
        ),
        CliCommand(
            "report",
            "build a report from saved explanations, or from a saved model and a data file",
            _report,
            _report_arguments,
        ),
    ]
